// Element-wise updates (see ContinualUpdates.h): written once, compiled for the baseline CPU and
// as an AVX2 clone, chosen by the kernel path (ck_path). Neither uses FMA, and division and
// square root are correctly rounded in every lane, so both clones give the bits of the scalar
// Swift loops.
#include "ContinualUpdates.h"
#include "ContinualKernels.h"
#include "SGDRule.h"

#pragma clang fp contract(off)

typedef float uf8 __attribute__((ext_vector_type(8)));
typedef double ud4 __attribute__((ext_vector_type(4)));

#define ULD(T, p) ({ T v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })
#define UST(p, v) do { __typeof__(v) w_ = (v); __builtin_memcpy((p), &w_, sizeof w_); } while (0)

#define UPDATE_BODIES(SUFFIX, ATTR)                                                                \
static ATTR void adam_##SUFFIX(float *p, const float *g, float *m, float *v, long n, float lr,     \
        float b1, float b2, float eps, float wd, float decay, int decoupled, float c1, float c2) { \
    const float a1 = 1 - b1, a2 = 1 - b2;                                                          \
    long i = 0;                                                                                    \
    for (; i + 8 <= n; i += 8) {                                                                   \
        uf8 pv = ULD(uf8, p + i), gv = ULD(uf8, g + i);                                            \
        uf8 d;                                                                                     \
        if (decoupled) { pv = pv * decay; d = gv; } else { d = gv + wd * pv; }                     \
        uf8 mv = b1 * ULD(uf8, m + i) + a1 * d;                                                    \
        uf8 vv = b2 * ULD(uf8, v + i) + a2 * d * d;                                                \
        UST(m + i, mv);                                                                            \
        UST(v + i, vv);                                                                            \
        pv = pv - lr * (mv / c1) / (__builtin_elementwise_sqrt(vv / c2) + eps);                    \
        UST(p + i, pv);                                                                            \
    }                                                                                              \
    for (; i < n; i++) {                                                                           \
        float pi = p[i], d;                                                                        \
        if (decoupled) { pi = pi * decay; d = g[i]; } else { d = g[i] + wd * pi; }                 \
        float mi = b1 * m[i] + a1 * d;                                                             \
        float vi = b2 * v[i] + a2 * d * d;                                                         \
        m[i] = mi;                                                                                 \
        v[i] = vi;                                                                                 \
        p[i] = pi - lr * (mi / c1) / (__builtin_sqrtf(vi / c2) + eps);                             \
    }                                                                                              \
}                                                                                                  \
static ATTR void sgd_##SUFFIX(float *p, const float *g, float *m, long n, float lr, float mu,      \
                              float wd, int nesterov) {                                           \
    long i = 0;                                                                                    \
    if (!m) {                                                                                      \
        for (; i + 8 <= n; i += 8) {                                                               \
            uf8 pv = ULD(uf8, p + i);                                                              \
            UST(p + i, CK_SGD_RULE(pv, ULD(uf8, g + i), lr, wd));                                  \
        }                                                                                          \
        for (; i < n; i++) p[i] = CK_SGD_RULE(p[i], g[i], lr, wd);                                 \
        return;                                                                                    \
    }                                                                                              \
    for (; i + 8 <= n; i += 8) {                                                                   \
        uf8 pv = ULD(uf8, p + i);                                                                  \
        uf8 d = ULD(uf8, g + i) + wd * pv;                                                         \
        uf8 buf = mu * ULD(uf8, m + i) + d;                                                        \
        UST(m + i, buf);                                                                           \
        UST(p + i, nesterov ? pv - lr * (d + mu * buf) : pv - lr * buf);                           \
    }                                                                                              \
    for (; i < n; i++) {                                                                           \
        float d = g[i] + wd * p[i];                                                                \
        float buf = mu * m[i] + d;                                                                 \
        m[i] = buf;                                                                                \
        p[i] = nesterov ? p[i] - lr * (d + mu * buf) : p[i] - lr * buf;                            \
    }                                                                                              \
}                                                                                                  \
static ATTR void squares_##SUFFIX(double *f, const float *g, double w, long n) {                   \
    long i = 0;                                                                                    \
    for (; i + 4 <= n; i += 4) {                                                                   \
        ud4 gv = __builtin_convertvector(ULD(__attribute__((ext_vector_type(4))) float, g + i), ud4); \
        UST(f + i, ULD(ud4, f + i) + (w * gv) * gv);                                              \
    }                                                                                              \
    for (; i < n; i++) { double gi = g[i]; f[i] = f[i] + (w * gi) * gi; }                          \
}                                                                                                  \
static ATTR double penalty_##SUFFIX(const float *p, const float *a, const float *f, float *grad,  \
                                    float scale, long n) {                                         \
    double sum = 0.0;                                                                              \
    long i = 0;                                                                                    \
    for (; i + 8 <= n; i += 8) {                                                                   \
        uf8 fv = ULD(uf8, f + i);                                                                  \
        uf8 d = ULD(uf8, p + i) - ULD(uf8, a + i);                                                 \
        UST(grad + i, ULD(uf8, grad + i) + (scale * fv) * d);                                      \
        ud4 f0 = __builtin_convertvector(fv.lo, ud4), f1 = __builtin_convertvector(fv.hi, ud4);    \
        ud4 d0 = __builtin_convertvector(d.lo, ud4), d1 = __builtin_convertvector(d.hi, ud4);      \
        ud4 t0 = (f0 * d0) * d0, t1 = (f1 * d1) * d1;                                              \
        sum = sum + t0[0]; sum = sum + t0[1]; sum = sum + t0[2]; sum = sum + t0[3];                \
        sum = sum + t1[0]; sum = sum + t1[1]; sum = sum + t1[2]; sum = sum + t1[3];                \
    }                                                                                              \
    for (; i < n; i++) {                                                                           \
        float d = p[i] - a[i];                                                                     \
        sum = sum + ((double)f[i] * (double)d) * (double)d;                                        \
        grad[i] = grad[i] + (scale * f[i]) * d;                                                    \
    }                                                                                              \
    return sum;                                                                                    \
}

UPDATE_BODIES(base, )

#if defined(__x86_64__)
UPDATE_BODIES(avx2, __attribute__((target("avx2"))))
/// The AVX2 clone on the avx2-fma and avx512-fma kernel paths of the calling thread (ck_path),
/// the baseline one on the generic path. (Before, the choice was "the fastest path is avx2-fma",
/// so AVX-512 machines ran the baseline clone.)
static int use_avx2(void) {
    const int path = ck_path();
    return path == CK_PATH_AVX2_FMA || path == CK_PATH_AVX512_FMA;
}
#define UDISPATCH(name, ...) (use_avx2() ? name##_avx2(__VA_ARGS__) : name##_base(__VA_ARGS__))
#else
#define UDISPATCH(name, ...) name##_base(__VA_ARGS__)
#endif

void ck_sgd_update(float *p, const float *g, float *m, long n, float lr, float momentum, float wd, int nesterov) {
    UDISPATCH(sgd, p, g, m, n, lr, momentum, wd, nesterov);
}

void ck_adam_update(float *p, const float *g, float *m, float *v, long n,
                    float lr, float b1, float b2, float eps, float wd, float c1, float c2) {
    UDISPATCH(adam, p, g, m, v, n, lr, b1, b2, eps, wd, 1, 0, c1, c2);
}

void ck_adamw_update(float *p, const float *g, float *m, float *v, long n,
                     float lr, float b1, float b2, float eps, float decay, float c1, float c2) {
    UDISPATCH(adam, p, g, m, v, n, lr, b1, b2, eps, 0, decay, 1, c1, c2);
}

void ck_accumulate_squares(double *f, const float *g, double w, long n) {
    UDISPATCH(squares, f, g, w, n);
}

double ck_ewc_penalty(const float *p, const float *a, const float *f, float *grad, float scale, long n) {
    return UDISPATCH(penalty, p, a, f, grad, scale, n);
}
