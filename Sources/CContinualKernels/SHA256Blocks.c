// SHA-256's compression function (FIPS 180-4) for ContinualCore.SHA256, which keeps the partial
// block, padding and length: portable C, and on x86 the SHA extensions (SHA-NI) where the CPU has
// them — the per-run digests of results files (RunDigest) and checkpoints hash 4–8 MB per run of a
// 1024-wide model, which the portable code took 25 ms for. The digest is SHA-256's by definition,
// whichever code computes it: SHA256Tests checks both against the FIPS 180-4 vectors, hashlib,
// and each other on random lengths.
#include "ContinualKernels.h"
#include <stdint.h>

static const unsigned ck_sha_k[64] __attribute__((aligned(16))) = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, int n) { return x >> n | x << (32 - n); }

/// The portable compression: the message schedule, then 64 rounds, block by block.
static void blocks_portable(unsigned *state, const unsigned char *data, long blocks) {
    for (; blocks > 0; blocks--, data += 64) {
        uint32_t w[64];
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)data[4 * i] << 24 | (uint32_t)data[4 * i + 1] << 16 | (uint32_t)data[4 * i + 2] << 8 | data[4 * i + 3];
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6], h = state[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + ck_sha_k[i] + w[i];
            uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        state[0] += a; state[1] += b; state[2] += c; state[3] += d; state[4] += e; state[5] += f; state[6] += g; state[7] += h;
    }
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/// SHA (CPUID.7.0:EBX bit 29) with SSSE3 and SSE4.1 (CPUID.1:ECX bits 9 and 19), read once.
static int cpu_has_sha(void) {
    static int known = -1;
    int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (v >= 0) return v;
    unsigned a, b, c, d;
    v = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) && ((c >> 9) & 1) && ((c >> 19) & 1)
        && __get_cpuid_count(7, 0, &a, &b, &c, &d)) v = (b >> 29) & 1;
    __atomic_store_n(&known, v, __ATOMIC_RELAXED);
    return v;
}


/// The blocks through sha256rnds2 (two rounds each), four rounds per group g with the message
/// words x[g % 4] = (W[4g], …, W[4g + 3]); from g = 4 on, x_g = msg2(msg1(x_{g−4}, x_{g−3}) +
/// (W[4g − 7 ..< 4g − 3]), x_{g−1}), FIPS 180-4's schedule. The state is held as ABEF and CDGH.
__attribute__((target("sha,sse4.1,ssse3")))
static void blocks_sha(unsigned *state, const unsigned char *data, long blocks) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);  // bytes of each word reversed
    __m128i dcba = _mm_loadu_si128((const __m128i *)state), hgfe = _mm_loadu_si128((const __m128i *)(state + 4));
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1), efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8), cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; blocks > 0; blocks--, data += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh, x[4];
        for (int g = 0; g < 16; g++) {
            __m128i w;
            if (g < 4) {
                w = x[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * g)), swap);
            } else {
                __m128i s = _mm_sha256msg1_epu32(x[g & 3], x[(g + 1) & 3]);
                s = _mm_add_epi32(s, _mm_alignr_epi8(x[(g + 3) & 3], x[(g + 2) & 3], 4));
                w = x[g & 3] = _mm_sha256msg2_epu32(s, x[(g + 3) & 3]);
            }
            __m128i m = _mm_add_epi32(w, _mm_load_si128((const __m128i *)(ck_sha_k + 4 * g)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B), dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)state, _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

int ck_sha256_blocks(unsigned *state, const unsigned char *data, long blocks, int hardware) {
    if (hardware && cpu_has_sha()) { blocks_sha(state, data, blocks); return 1; }
    blocks_portable(state, data, blocks);
    return 0;
}
#else
int ck_sha256_blocks(unsigned *state, const unsigned char *data, long blocks, int hardware) {
    (void)hardware;
    blocks_portable(state, data, blocks);
    return 0;
}
#endif
