// Probes of the core's arithmetic peak, for `continual bench --peak` (see ContinualKernels.h).
// A benchmark's GFLOP/s per core can never exceed what these measure on the same core in the
// same run; a figure that does is a counting error (issue 45.5: CPU time of one thread only).
#include "ContinualKernels.h"

#if defined(__x86_64__)
// Twelve independent 8-lane fused multiply-add chains in registers (inline assembly, so the
// compiler's optimisation level does not change what runs): enough chains to cover the FMA
// latency on every x86 core with two FMA pipes. 192 floating-point operations per round.
__attribute__((target("avx2,fma"))) static double fma_rounds_avx2(long rounds) {
    __asm__ volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
        "vmovaps %%ymm0, %%ymm1\n\t vmovaps %%ymm0, %%ymm2\n\t vmovaps %%ymm0, %%ymm3\n\t"
        "vmovaps %%ymm0, %%ymm4\n\t vmovaps %%ymm0, %%ymm5\n\t vmovaps %%ymm0, %%ymm6\n\t"
        "vmovaps %%ymm0, %%ymm7\n\t vmovaps %%ymm0, %%ymm8\n\t vmovaps %%ymm0, %%ymm9\n\t"
        "vmovaps %%ymm0, %%ymm10\n\t vmovaps %%ymm0, %%ymm11\n\t"
        "vmovaps %%ymm0, %%ymm12\n\t vmovaps %%ymm0, %%ymm13\n\t"
        "1:\n\t"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm0\n\t vfmadd231ps %%ymm12, %%ymm13, %%ymm1\n\t"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm2\n\t vfmadd231ps %%ymm12, %%ymm13, %%ymm3\n\t"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm4\n\t vfmadd231ps %%ymm12, %%ymm13, %%ymm5\n\t"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm6\n\t vfmadd231ps %%ymm12, %%ymm13, %%ymm7\n\t"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm8\n\t vfmadd231ps %%ymm12, %%ymm13, %%ymm9\n\t"
        "vfmadd231ps %%ymm12, %%ymm13, %%ymm10\n\t vfmadd231ps %%ymm12, %%ymm13, %%ymm11\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : "+r"(rounds)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "cc");
    return 0;
}
#endif

#if defined(__x86_64__)
// The same twelve chains on 16-float vectors: on cores with two 512-bit FMA pipes the avx512-fma
// path's tiles can go past the 8-lane probe, so where the path runs the peak is measured with it.
// 384 floating-point operations per round.
__attribute__((target("avx512f"))) static double fma_rounds_avx512(long rounds) {
    __asm__ volatile(
        "vxorps %%zmm0, %%zmm0, %%zmm0\n\t"
        "vmovaps %%zmm0, %%zmm1\n\t vmovaps %%zmm0, %%zmm2\n\t vmovaps %%zmm0, %%zmm3\n\t"
        "vmovaps %%zmm0, %%zmm4\n\t vmovaps %%zmm0, %%zmm5\n\t vmovaps %%zmm0, %%zmm6\n\t"
        "vmovaps %%zmm0, %%zmm7\n\t vmovaps %%zmm0, %%zmm8\n\t vmovaps %%zmm0, %%zmm9\n\t"
        "vmovaps %%zmm0, %%zmm10\n\t vmovaps %%zmm0, %%zmm11\n\t"
        "vmovaps %%zmm0, %%zmm12\n\t vmovaps %%zmm0, %%zmm13\n\t"
        "1:\n\t"
        "vfmadd231ps %%zmm12, %%zmm13, %%zmm0\n\t vfmadd231ps %%zmm12, %%zmm13, %%zmm1\n\t"
        "vfmadd231ps %%zmm12, %%zmm13, %%zmm2\n\t vfmadd231ps %%zmm12, %%zmm13, %%zmm3\n\t"
        "vfmadd231ps %%zmm12, %%zmm13, %%zmm4\n\t vfmadd231ps %%zmm12, %%zmm13, %%zmm5\n\t"
        "vfmadd231ps %%zmm12, %%zmm13, %%zmm6\n\t vfmadd231ps %%zmm12, %%zmm13, %%zmm7\n\t"
        "vfmadd231ps %%zmm12, %%zmm13, %%zmm8\n\t vfmadd231ps %%zmm12, %%zmm13, %%zmm9\n\t"
        "vfmadd231ps %%zmm12, %%zmm13, %%zmm10\n\t vfmadd231ps %%zmm12, %%zmm13, %%zmm11\n\t"
        "dec %0\n\t"
        "jnz 1b\n\t"
        "vzeroupper\n\t"
        : "+r"(rounds)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "cc");
    return 0;
}
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
