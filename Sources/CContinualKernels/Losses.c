// The binary logistic loss (see ContinualLosses.h). Its log1p is written once and compiled for the
// baseline CPU and as AVX2 and AVX-512 clones, chosen by the kernel path (ck_path): float64
// operations without FMA give the same bits in any vector width, so the clones agree with each
// other and with the scalar tail.
#include "ContinualLosses.h"
#include "ContinualKernels.h"
#include <math.h>

#pragma clang fp contract(off)

/// log(1 + x), x in [0, 1], as 2·atanh(s) = 2s·(1 + s²/3 + s⁴/5 + … + s²⁰/21) with
///   s = x/(2 + x)                  for x ≤ √2 − 1, so log1p(x) = 2·atanh(s), |s| ≤ 0.1716;
///   s = (x − 1)/(x + 3), plus ln 2 for x > √2 − 1, from log1p(x) = ln 2 + log((1 + x)/2),
/// where x − 1, x + 2 and x + 3 are exact in float64 for a float32 x ≥ 2⁻²⁹ (and x/(2 + x) is
/// within an ulp of x/2 below). The series' first omitted term is below 7·10⁻¹⁹ relative; with
/// the rounding of eleven multiply-adds the float64 value is within a few ulp, so its rounding
/// to float32 is the correctly rounded one except where log1p(x) lies within ~10⁻¹⁵ of a float32
/// halfway point (one float in [0, 1]).
static inline double log1p_unit(double x) {
    const int upper = x > 0.41421356237309503;   // √2 − 1
    const double s = upper ? (x - 1.0) / (x + 3.0) : x / (2.0 + x);
    const double t = s * s;
    double p = 1.0 / 21;
    p = p * t + 1.0 / 19;
    p = p * t + 1.0 / 17;
    p = p * t + 1.0 / 15;
    p = p * t + 1.0 / 13;
    p = p * t + 1.0 / 11;
    p = p * t + 1.0 / 9;
    p = p * t + 1.0 / 7;
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

#if defined(__x86_64__)
LOG1P_BODY(avx2, __attribute__((target("avx2"))))
LOG1P_BODY(avx512, __attribute__((target("avx512f,avx512vl"))))
static void log1p_dispatch(const float *x, float *out, long n) {
    // The clone of the calling thread's kernel path (ck_path: CONTINUAL_KERNELS, ck_set_path,
    // ck_set_thread_path), so a test that switches paths runs every clone.
    const int path = ck_path();
    if (path == CK_PATH_AVX512_FMA) log1p_avx512(x, out, n);
    else if (path == CK_PATH_AVX2_FMA) log1p_avx2(x, out, n);
    else log1p_base(x, out, n);
}
#else
static void log1p_dispatch(const float *x, float *out, long n) { log1p_base(x, out, n); }
#endif

void ck_log1p_unit(const float *x, float *out, long n) { log1p_dispatch(x, out, n); }

enum { CHUNK = 64 };

/// Σ (double)(a[i] + l[i]) over the rows with y[i] ≥ 0, added to `total` in increasing i: one
/// sequential chain, kept in a register (a loop that also calls expf would spill it every row).
static double add_terms(double total, const float *a, const float *l, const int *y, long m) {
    for (long i = 0; i < m; i++)
        if (y[i] >= 0) total = total + (double)(a[i] + l[i]);
    return total;
}

double ck_binary_logistic_loss(float *logits, const int *labels, long n, float scale) {
    double total = 0.0;
    float e[CHUNK], a[CHUNK], l[CHUNK];
    for (long start = 0; start < n; start += CHUNK) {
        const long m = n - start < CHUNK ? n - start : CHUNK;
        float *z = logits + start;
        const int *y = labels + start;
        // libm's expf one row at a time (its bits are the gradient's), nothing else live across
        // the calls; then the rest of each row without calls, so it runs several lanes at a time.
        for (long i = 0; i < m; i++) e[i] = expf(-fabsf(z[i]));   // one exponential: loss and sigmoid
        for (long i = 0; i < m; i++) {
            const float zi = z[i], ei = y[i] < 0 ? 0.0f : e[i], yi = y[i] == 0 ? 0.0f : 1.0f;
            const float sigma = zi >= 0 ? 1 / (1 + ei) : ei / (1 + ei);
            e[i] = ei;
            a[i] = (0 >= zi ? 0.0f : zi) - yi * zi;
            z[i] = y[i] < 0 ? 0.0f : (sigma - yi) * scale;
        }
        log1p_dispatch(e, l, m);
        total = add_terms(total, a, l, y, m);
    }
    return total;
}
