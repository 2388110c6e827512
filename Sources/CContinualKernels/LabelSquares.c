// EWC's exact Fisher without forming each label's gradient (see ContinualUpdates.h): the weighted
// squares of outer products a·δ_y, each element's labels in order, written once and compiled for
// the baseline CPU and as AVX2 and AVX-512 clones, one per kernel path. No FMA: every element gets
// the float product and the float64 operations of ck_accumulate_squares, rounded as written there.
#include "ContinualUpdates.h"
#include "ContinualKernels.h"

#pragma clang fp contract(off)

typedef float lf4 __attribute__((ext_vector_type(4)));
typedef double ld4 __attribute__((ext_vector_type(4)));
typedef float lf8 __attribute__((ext_vector_type(8)));
typedef double ld8 __attribute__((ext_vector_type(8)));

#define LLD(T, p) ({ T v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })
#define LST(p, v) do { __typeof__(v) w_ = (v); __builtin_memcpy((p), &w_, sizeof w_); } while (0)

/// Whether every one of the n values is finite (a zero row times ±inf or NaN is NaN, not 0).
static int all_finite(const float *v, long n) {
    for (long i = 0; i < n; i++)
        if (!__builtin_isfinite(v[i])) return 0;
    return 1;
}

// Row r of f ([n × m]) gets, for y < labels in order, f = f + (w[y]·g)·g with g = a[r]·δ[y, ·]
// (float). A row whose a[r] is ±0 adds +0 to every element (w > 0, finite δ), which leaves f as
// it is unless f is −0 (the caller's contract: a Fisher starts at +0 and adds terms ≥ 0): it is
// skipped when every δ is finite. That scan runs once, at the first zero row, so a layer whose
// inputs have no zero (the bias's a = 1, a dense first layer) never pays for it.
#define LABEL_SQUARES_BODY(SUFFIX, ATTR, FV, DV, W)                                                \
static ATTR void label_squares_##SUFFIX(double *f, const float *a, long n, const float *delta,      \
                                        long labels, long m, const double *w) {                    \
    int skip_zero_rows = -1; /* unknown until the first zero row */                                \
    for (long r = 0; r < n; r++) {                                                                 \
        const float ar = a[r];                                                                     \
        if (ar == 0) {                                                                             \
            if (skip_zero_rows < 0) skip_zero_rows = all_finite(delta, labels * m);                \
            if (skip_zero_rows) continue;                                                          \
        }                                                                                          \
        double *fr = f + r * m;                                                                    \
        const FV av = (FV)(ar);                                                                    \
        for (long y = 0; y < labels; y++) {                                                        \
            const float *dy = delta + y * m;                                                       \
            const double wy = w[y];                                                                \
            long c = 0;                                                                            \
            for (; c + W <= m; c += W) {                                                           \
                DV g = __builtin_convertvector(av * LLD(FV, dy + c), DV);                          \
                LST(fr + c, LLD(DV, fr + c) + (wy * g) * g);                                       \
            }                                                                                      \
            for (; c < m; c++) {                                                                   \
                float gf = ar * dy[c];                                                             \
                double g = gf;                                                                     \
                fr[c] = fr[c] + (wy * g) * g;                                                      \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
}

LABEL_SQUARES_BODY(base, , lf4, ld4, 4)

#if defined(__x86_64__)
LABEL_SQUARES_BODY(avx2, __attribute__((target("avx2"))), lf4, ld4, 4)
LABEL_SQUARES_BODY(avx512, __attribute__((target("avx512f"))), lf8, ld8, 8)
#endif

void ck_accumulate_label_squares(double *f, const float *a, long n, const float *delta, long labels,
                                 long m, const double *w) {
    if (n <= 0 || m <= 0 || labels <= 0) return;
#if defined(__x86_64__)
    switch (ck_path()) {
    case CK_PATH_AVX512_FMA: label_squares_avx512(f, a, n, delta, labels, m, w); return;
    case CK_PATH_AVX2_FMA: label_squares_avx2(f, a, n, delta, labels, m, w); return;
    default: break;
    }
#endif
    label_squares_base(f, a, n, delta, labels, m, w);
}
