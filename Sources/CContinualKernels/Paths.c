// Which kernel path runs (see ContinualKernels.h): the CPU's checks, the process-wide choice and
// a per-thread override. The paths themselves are compiled in Kernels.c.
#include "ContinualKernels.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
/// XCR0: which register states the OS saves (bits 1, 2: SSE and AVX's YMM; 5, 6, 7: AVX-512's
/// opmask, ZMM0–15 upper halves and ZMM16–31). A path may only run if the OS saves its state.
static unsigned xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return lo;
}

static int cpu_has_fused(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    // FMA (ECX 12), OSXSAVE (27), AVX (28); the OS must save the YMM state.
    if (!((c >> 12) & 1) || !((c >> 27) & 1) || !((c >> 28) & 1)) return 0;
    if ((xcr0() & 6u) != 6u) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 5) & 1;  // AVX2
}

static int cpu_has_avx512(void) {
    unsigned a, b, c, d;
    if (!cpu_has_fused() || (xcr0() & 0xE6u) != 0xE6u) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return ((b >> 16) & 1) && ((b >> 31) & 1);  // AVX512F, AVX512VL
}
#define CK_FUSED CK_PATH_AVX2_FMA

/// Whether the core has two full-width 512-bit FMA units: Kernels.c lays out the AVX-512 path's
/// products by it (panels and 8-row tiles). Intel's AVX-512 server cores ("GenuineIntel"), and
/// AMD's from Zen 5 on ("AuthenticAMD", family 26 = 0xF + extended 0xB and later); Zen 4 (family
/// 25) runs a 512-bit FMA as two 256-bit halves and keeps the in-place tiles measured on it.
/// Vendor and family only: parts with one 512-bit unit (some Intel client and low-bin Xeon cores,
/// AMD's mobile Zen 5) are counted as two. That costs speed at most, never bits: both layouts keep
/// one chain per element (KernelPathTests).
int ck_cpu_two_fma512(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    if (b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu) return 1;
    if (!(b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u)) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    unsigned family = (a >> 8) & 0xFu;
    if (family == 0xFu) family += (a >> 20) & 0xFFu;
    return family >= 26;
}
#elif defined(__aarch64__)
static int cpu_has_fused(void) { return 1; }  // FMA is part of baseline AArch64 NEON
static int cpu_has_avx512(void) { return 0; }
#define CK_FUSED CK_PATH_NEON_FMA
int ck_cpu_two_fma512(void) { return 0; }
#else
int ck_cpu_two_fma512(void) { return 0; }
static int cpu_has_fused(void) { return 0; }
static int cpu_has_avx512(void) { return 0; }
#define CK_FUSED CK_PATH_GENERIC
#endif

int ck_path_supported(int path) {
    switch (path) {
    case CK_PATH_GENERIC: return 1;
    case CK_PATH_AVX512_FMA: return cpu_has_avx512();
    default: return path == CK_FUSED && cpu_has_fused();
    }
}

static int fastest(void) {
    if (cpu_has_avx512()) return CK_PATH_AVX512_FMA;
    if (cpu_has_fused()) return CK_FUSED;
    return CK_PATH_GENERIC;
}

int ck_fastest_path(void) { return fastest(); }

const char *ck_path_name(int path) {
    switch (path) {
    case CK_PATH_AVX2_FMA: return "avx2-fma";
    case CK_PATH_NEON_FMA: return "neon-fma";
    case CK_PATH_AVX512_FMA: return "avx512-fma";
    default: return "generic";
    }
}

int ck_path_named(const char *name) {
    for (int p = CK_PATH_GENERIC; p <= CK_PATH_AVX512_FMA; p++)
        if (name && strcmp(name, ck_path_name(p)) == 0) return p;
    return CK_PATH_AUTO;
}

static int current_path = -2;  // -2: not chosen yet
static _Thread_local int thread_path = CK_PATH_AUTO;
// Threads whose own path is set: while none is, ck_path (called per product) skips the
// thread-local read, which costs a __tls_get_addr call in position-independent code.
static int thread_paths_set = 0;

void ck_set_thread_path(int path) {
    int p = path >= 0 && ck_path_supported(path) ? path : CK_PATH_AUTO;
    if ((thread_path >= 0) != (p >= 0)) __atomic_add_fetch(&thread_paths_set, p >= 0 ? 1 : -1, __ATOMIC_SEQ_CST);
    thread_path = p;
}

int ck_path(void) {
    if (__atomic_load_n(&thread_paths_set, __ATOMIC_RELAXED) > 0 && thread_path >= 0) return thread_path;
    int p = __atomic_load_n(&current_path, __ATOMIC_ACQUIRE);
    if (p >= 0) return p;
    // CONTINUAL_KERNELS names a path ("generic", "avx2-fma", ...); one this CPU cannot run, or
    // none, gives the fastest.
    int named = ck_path_named(getenv("CONTINUAL_KERNELS"));
    p = named >= 0 && ck_path_supported(named) ? named : fastest();
    __atomic_store_n(&current_path, p, __ATOMIC_RELEASE);
    return p;
}

int ck_set_path(int path) {
    int p = path == CK_PATH_AUTO ? fastest() : path;
    if (p >= 0 && ck_path_supported(p)) __atomic_store_n(&current_path, p, __ATOMIC_RELEASE);
    return ck_path();
}
