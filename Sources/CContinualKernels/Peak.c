// Probes of the core's arithmetic peak, for `continual bench --peak` (see ContinualKernels.h).
// A benchmark's GFLOP/s per core can never exceed what these measure on the same core in the
// same run; a figure that does is a counting error (issue 45.5: CPU time of one thread only).
#include "ContinualKernels.h"

#if defined(__x86_64__)
// Twelve independent fused multiply-add chains in registers of kind R ("ymm": 8 lanes, "zmm":
// 16), in inline assembly so the compiler's optimisation level does not change what runs: enough
// chains to cover the FMA latency on every x86 core with two FMA pipes.
#define CK_FMA_ROUNDS(R, rounds)                                                                 \
    __asm__ volatile(                                                                            \
        "vxorps %%" R "0, %%" R "0, %%" R "0\n\t"                                                  \
        "vmovaps %%" R "0, %%" R "1\n\t vmovaps %%" R "0, %%" R "2\n\t vmovaps %%" R "0, %%" R "3\n\t"       \
        "vmovaps %%" R "0, %%" R "4\n\t vmovaps %%" R "0, %%" R "5\n\t vmovaps %%" R "0, %%" R "6\n\t"       \
        "vmovaps %%" R "0, %%" R "7\n\t vmovaps %%" R "0, %%" R "8\n\t vmovaps %%" R "0, %%" R "9\n\t"       \
        "vmovaps %%" R "0, %%" R "10\n\t vmovaps %%" R "0, %%" R "11\n\t"                            \
        "vmovaps %%" R "0, %%" R "12\n\t vmovaps %%" R "0, %%" R "13\n\t"                            \
        "1:\n\t"                                                                                  \
        "vfmadd231ps %%" R "12, %%" R "13, %%" R "0\n\t vfmadd231ps %%" R "12, %%" R "13, %%" R "1\n\t"    \
        "vfmadd231ps %%" R "12, %%" R "13, %%" R "2\n\t vfmadd231ps %%" R "12, %%" R "13, %%" R "3\n\t"    \
        "vfmadd231ps %%" R "12, %%" R "13, %%" R "4\n\t vfmadd231ps %%" R "12, %%" R "13, %%" R "5\n\t"    \
        "vfmadd231ps %%" R "12, %%" R "13, %%" R "6\n\t vfmadd231ps %%" R "12, %%" R "13, %%" R "7\n\t"    \
        "vfmadd231ps %%" R "12, %%" R "13, %%" R "8\n\t vfmadd231ps %%" R "12, %%" R "13, %%" R "9\n\t"    \
        "vfmadd231ps %%" R "12, %%" R "13, %%" R "10\n\t vfmadd231ps %%" R "12, %%" R "13, %%" R "11\n\t"  \
        "dec %0\n\t"                                                                              \
        "jnz 1b\n\t"                                                                              \
        "vzeroupper\n\t"                                                                          \
        : "+r"(rounds)                                                                           \
        :                                                                                        \
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",   \
          "xmm11", "xmm12", "xmm13", "cc")

/// 8 lanes: 192 floating-point operations per round.
__attribute__((target("avx2,fma"))) static void fma_rounds_avx2(long rounds) { CK_FMA_ROUNDS("ymm", rounds); }
/// 16 lanes, 384 per round: on cores with two 512-bit FMA pipes the avx512-fma path's tiles can
/// go past the 8-lane probe, so where that path runs the peak is measured with it.
__attribute__((target("avx512f"))) static void fma_rounds_avx512(long rounds) { CK_FMA_ROUNDS("zmm", rounds); }
#endif

typedef float pv8 __attribute__((ext_vector_type(8)));

// Any CPU: the same twelve chains in C (a multiply and an add; the compiler may fuse them
// where the target has FMA, e.g. arm64).
static double fma_rounds_portable(long rounds) {
    pv8 acc[12];
    for (int i = 0; i < 12; i++) acc[i] = (pv8)(0.0f);
    pv8 a = (pv8)(0.0f), b = (pv8)(0.0f);
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < 12; i++) acc[i] = acc[i] + a * b;
        __asm__ volatile("" : "+m"(acc));  // keeps every round
    }
    float s = 0;
    for (int i = 0; i < 12; i++) s += acc[i][0];
    return s;
}

long ck_fma_peak_rounds(long rounds) {
    if (rounds < 1) rounds = 1;
#if defined(__x86_64__)
    if (ck_path_supported(CK_PATH_AVX512_FMA)) { fma_rounds_avx512(rounds); return rounds * 384; }
    if (ck_path_supported(CK_PATH_AVX2_FMA)) { fma_rounds_avx2(rounds); return rounds * 192; }
#endif
    (void)fma_rounds_portable(rounds);
    return rounds * 192;
}
