// The binary logistic loss (see ContinualLosses.h). Its log1p and exp are written once and
// compiled for the baseline CPU and as AVX2 and AVX-512 clones, chosen by the kernel path
// (ck_path): float64 operations, each either unfused or an explicit fma, give the same bits in
// any vector width, so the clones agree with each other and with the scalar tail. The whole loss
// is cloned too (its own loop had run on the baseline's 4-float vectors between the two clones).
#include "ContinualLosses.h"
#include "ContinualKernels.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#pragma clang fp contract(off)

/// log(1 + x), x in [0, 1], as 2·atanh(s) = 2s·(1 + s²/3 + s⁴/5 + … + s²⁰/21) with
///   s = x/(2 + x)                  for x ≤ √2 − 1, so log1p(x) = 2·atanh(s), |s| ≤ 0.1716;
///   s = (x − 1)/(x + 3), plus ln 2 for x > √2 − 1, from log1p(x) = ln 2 + log((1 + x)/2),
/// where x − 1, x + 2 and x + 3 are exact in float64 for a float32 x ≥ 2⁻²⁹ (and x/(2 + x) is
/// within an ulp of x/2 below). The series' first omitted term is below 7·10⁻¹⁹ relative; with
/// the rounding of a dozen multiplies and adds the float64 value is within a few ulp, so its
/// rounding to float32 is the correctly rounded one except where log1p(x) lies within ~10⁻¹⁵ of a
/// float32 halfway point (one float in [0, 1]).
/// The polynomial in t = s² runs its terms from t³ on in Estrin's order (pairs, then pairs of
/// pairs: three multiply-add levels deep instead of seven) and its last three in Horner's: the
/// float64 values differ from all-Horner's (numerics version 3 as first written) on 6 floats in
/// [0, 1], their float32 roundings on none (Experiments/tools/loss_exhaustive.c checks all
/// 1,065,353,217 on every path).
static inline double log1p_unit(double x) {
    const int upper = x > 0.41421356237309503;   // √2 − 1
    // One division: the branch's operands chosen first (the same quotient either way).
    const double s = (upper ? x - 1.0 : x) / (upper ? x + 3.0 : 2.0 + x);
    const double t = s * s, t2 = t * t, t4 = t2 * t2;
    const double q0 = 1.0 / 7 + (1.0 / 9) * t, q1 = 1.0 / 11 + (1.0 / 13) * t, q2 = 1.0 / 15 + (1.0 / 17) * t,
                 q3 = 1.0 / 19 + (1.0 / 21) * t;
    double p = (q0 + q1 * t2) + (q2 + q3 * t2) * t4;
    p = p * t + 1.0 / 5;
    p = p * t + 1.0 / 3;
    p = p * t + 1.0;
    return (upper ? 0.6931471805599453 : 0.0) + (2.0 * s) * p;   // 0.69…: ln 2 rounded to float64
}

#define LOG1P_BODY(SUFFIX, ATTR)                                                                   \
static ATTR void log1p_##SUFFIX(const float *x, float *out, long n) {                             \
    for (long i = 0; i < n; i++) out[i] = (float)log1p_unit((double)x[i]);                          \
}

LOG1P_BODY(base, )

/// NAME_dispatch(x, out, n): the clone of the calling thread's kernel path (ck_path:
/// CONTINUAL_KERNELS, ck_set_path, ck_set_thread_path), so a test that switches paths runs every
/// clone; the baseline clone on paths without AVX2.
#if defined(__x86_64__)
#define PATH_CLONES(NAME, BODY, AVX2, AVX512)                                                      \
BODY(avx2, __attribute__((target(AVX2))))                                                           \
BODY(avx512, __attribute__((target(AVX512))))                                                       \
static void NAME##_dispatch(const float *x, float *out, long n) {                                   \
    const int path = ck_path();                                                                     \
    if (path == CK_PATH_AVX512_FMA) NAME##_avx512(x, out, n);                                       \
    else if (path == CK_PATH_AVX2_FMA) NAME##_avx2(x, out, n);                                      \
    else NAME##_base(x, out, n);                                                                    \
}
#else
#define PATH_CLONES(NAME, BODY, AVX2, AVX512)                                                      \
static void NAME##_dispatch(const float *x, float *out, long n) { NAME##_base(x, out, n); }
#endif

PATH_CLONES(log1p, LOG1P_BODY, "avx2", "avx512f,avx512vl")

void ck_log1p_unit(const float *x, float *out, long n) { log1p_dispatch(x, out, n); }

/// 2^(i/32) for i < 32 as float64 bits, less i·2⁴⁷ (the table of glibc's expf, whose index bits
/// are added back into the exponent below); recomputed from 2^(i/32) correctly rounded.
static const uint64_t EXP_TABLE[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540};

/// e^x for x in (−88, 0], the arithmetic of glibc's expf as its FMA build computes it (x·32/ln 2
/// = k + r, 2^(k/32) from the table, a cubic in r, every multiply-add fused as GCC contracts it):
/// equal to libm's expf on all 1,118,830,593 floats in [−88, −0] on glibc's FMA build (checked
/// exhaustively; with r = x·32/ln 2 − k unfused, one value differs). Inlined per clone, so
/// the loop runs four or eight lanes at a time where libm takes one call per row.
static inline __attribute__((always_inline)) float exp_glibc(float x) {
    const double inv_ln2_n = 0x1.71547652b82fep+0 * 32, shift = 0x1.8p+52;
    const double c0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32, c1 = 0x1.ebfce50fac4f3p-3 / 32 / 32,
                 c2 = 0x1.62e42ff0c52d6p-1 / 32;
    const double xd = x;
    double kd = __builtin_fma(inv_ln2_n, xd, shift);
    uint64_t ki;
    memcpy(&ki, &kd, sizeof ki);
    kd = kd - shift;
    const double r = __builtin_fma(inv_ln2_n, xd, -kd);
    const uint64_t t = EXP_TABLE[ki % 32] + (ki << 47);
    double s;
    memcpy(&s, &t, sizeof s);
    const double p = __builtin_fma(c0, r, c1), r2 = r * r;
    double y = __builtin_fma(c2, r, 1.0);
    y = __builtin_fma(p, r2, y);
    return (float)(y * s);
}

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX512_TARGET "avx512f,avx512vl,avx2,fma"  /* what Paths.c checks for the avx512-fma path */

/// exp_glibc on 8 lanes, the same operations in the same order; the table's entry read by two
/// two-source permutes (entries 0–15 and 16–31) and a blend on index bit 4 instead of a gather
/// (whose latency the loss's short rows waited on).
static inline __attribute__((always_inline, target(AVX512_TARGET))) __m256 exp8_glibc(__m256 x) {
    const __m512d inv_ln2_n = _mm512_set1_pd(0x1.71547652b82fep+0 * 32), shift = _mm512_set1_pd(0x1.8p+52);
    const __m512d c0 = _mm512_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32),
                  c1 = _mm512_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32), c2 = _mm512_set1_pd(0x1.62e42ff0c52d6p-1 / 32);
    const __m512i t0 = _mm512_loadu_si512(EXP_TABLE), t1 = _mm512_loadu_si512(EXP_TABLE + 8),
                  t2 = _mm512_loadu_si512(EXP_TABLE + 16), t3 = _mm512_loadu_si512(EXP_TABLE + 24);
    const __m512d xd = _mm512_cvtps_pd(x);
    __m512d kd = _mm512_fmadd_pd(inv_ln2_n, xd, shift);
    const __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    const __m512d r = _mm512_fmsub_pd(inv_ln2_n, xd, kd);
    const __m512i lo = _mm512_permutex2var_epi64(t0, ki, t1), hi = _mm512_permutex2var_epi64(t2, ki, t3);
    const __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    const __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(upper, lo, hi), _mm512_slli_epi64(ki, 47));
    const __m512d p = _mm512_fmadd_pd(c0, r, c1), r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(c2, r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(p, r2, y);
    return _mm512_cvtpd_ps(_mm512_mul_pd(y, _mm512_castsi512_pd(t)));
}
#endif

/// out[i] = exp_glibc(x[i]) for i < n (x ≤ 0); returns whether some x[i] is ≤ −88 or NaN, where
/// libm's expf must replace it (exp_fix). Eight lanes at a time on the AVX-512 clone.
#define EXP_ROWS_SCALAR(SUFFIX, ATTR)                                                              \
static inline ATTR int exp_rows_##SUFFIX(const float *x, float *out, long n) {                     \
    int rare = 0;                                                                                  \
    for (long i = 0; i < n; i++) {                                                                 \
        out[i] = exp_glibc(x[i]);                                                                  \
        rare |= !(x[i] > -88.0f);                                                                  \
    }                                                                                              \
    return rare;                                                                                   \
}

EXP_ROWS_SCALAR(base, )
#if defined(__x86_64__)
EXP_ROWS_SCALAR(avx2, __attribute__((target("avx2,fma"))))

static inline __attribute__((target(AVX512_TARGET))) int exp_rows_avx512(const float *x, float *out, long n) {
    int rare = 0;
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(out + i, exp8_glibc(v));
        rare |= _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-88.0f), _CMP_NGT_UQ));   // !(v > −88)
    }
    for (; i < n; i++) {
        out[i] = exp_glibc(x[i]);
        rare |= !(x[i] > -88.0f);
    }
    return rare;
}
#endif

/// glibc's own special cases, where exp_rows flagged some: libm's expf where x ≤ −88 (underflow,
/// −∞) or is NaN.
static void exp_fix(const float *x, float *out, long n) {
    for (long i = 0; i < n; i++)
        if (!(x[i] > -88.0f)) out[i] = expf(x[i]);
}

/// out[i] = e^x[i] for x[i] ≤ 0 (NaN gives NaN). `out` must not overlap `x`.
#define EXP_BODY(SUFFIX, ATTR)                                                                     \
static ATTR void exp_##SUFFIX(const float *x, float *out, long n) {                               \
    if (exp_rows_##SUFFIX(x, out, n)) exp_fix(x, out, n);                                          \
}

EXP_BODY(base, )
PATH_CLONES(exp, EXP_BODY, "avx2,fma", AVX512_TARGET)

void ck_exp_nonpositive(const float *x, float *out, long n) { exp_dispatch(x, out, n); }

enum { CHUNK = 64 };

/// total + Σ (double)terms[i] in increasing i: one sequential chain. Not inlined: inside the
/// loss's loop, which may call expf, the chain was kept on the stack, a store and a load per row.
static __attribute__((noinline)) double add_terms(double total, const float *terms, long m) {
    for (long i = 0; i < m; i++) total = total + (double)terms[i];
    return total;
}

/// The loss in chunks of 64 rows, one clone per path: the exponentials (exp_rows), the rest of
/// each row, the log1p, the sum.
#define LOSS_BODY(SUFFIX, ATTR)                                                                    \
static ATTR double loss_##SUFFIX(float *logits, const int *labels, long n, float scale) {          \
    double total = 0.0;                                                                            \
    float e[CHUNK], a[CHUNK], l[CHUNK];                                                            \
    for (long start = 0; start < n; start += CHUNK) {                                              \
        const long m = n - start < CHUNK ? n - start : CHUNK;                                      \
        float *z = logits + start;                                                                 \
        const int *y = labels + start;                                                             \
        /* One exponential per row serves the loss and the sigmoid (l: scratch until the log1p). */ \
        for (long i = 0; i < m; i++) l[i] = -fabsf(z[i]);                                          \
        if (exp_rows_##SUFFIX(l, e, m)) exp_fix(l, e, m);                                          \
        for (long i = 0; i < m; i++) {                                                             \
            const float zi = z[i], ei = y[i] < 0 ? 0.0f : e[i], yi = y[i] == 0 ? 0.0f : 1.0f;      \
            /* 1/(1 + e) for z ≥ 0, e/(1 + e) otherwise: one division. */                          \
            const float sigma = (zi >= 0 ? 1.0f : ei) / (1 + ei);                                  \
            e[i] = ei;                                                                             \
            a[i] = (0 >= zi ? 0.0f : zi) - yi * zi;                                                \
            z[i] = y[i] < 0 ? 0.0f : (sigma - yi) * scale;                                         \
        }                                                                                          \
        for (long i = 0; i < m; i++) l[i] = (float)log1p_unit((double)e[i]);                       \
        /* A row with y < 0 adds +0.0, which leaves the sum's bits as they are: total starts at */ \
        /* +0 and its terms are ≥ +0 or NaN, so it is never −0. */                                 \
        for (long i = 0; i < m; i++) l[i] = y[i] < 0 ? 0.0f : a[i] + l[i];                         \
        total = add_terms(total, l, m);                                                            \
    }                                                                                              \
    return total;                                                                                  \
}

LOSS_BODY(base, )
#if defined(__x86_64__)
LOSS_BODY(avx2, __attribute__((target("avx2,fma"))))
LOSS_BODY(avx512, __attribute__((target(AVX512_TARGET))))
#endif

double ck_binary_logistic_loss(float *logits, const int *labels, long n, float scale) {
    double total;
#if defined(__x86_64__)
    const int path = ck_path();
    if (path == CK_PATH_AVX512_FMA) total = loss_avx512(logits, labels, n, scale);
    else if (path == CK_PATH_AVX2_FMA) total = loss_avx2(logits, labels, n, scale);
    else
#endif
    total = loss_base(logits, labels, n, scale);
    // A NaN's sign and payload follow whichever NaN operand an add kept, which the compiler may
    // order differently per clone: one NaN for all (ContinualLosses.h).
    return total == total ? total : (double)NAN;
}
