// Element-wise updates of the training loop (optimizer steps, EWC's Fisher and penalty), in C so
// that they run eight lanes at a time: Swift cannot vectorise them (its pointers may alias) and
// Swift on Linux x86-64 has no AVX. Each element gets exactly the operations, in the order, of
// the Swift expression named in its comment, each rounded as written (no fused multiply-add,
// correctly rounded division and square root), so results are bit-identical to the scalar Swift
// loops they replace on every CPU and kernel path.
#ifndef CONTINUAL_UPDATES_H
#define CONTINUAL_UPDATES_H

#ifdef __cplusplus
extern "C" {
#endif

/// SGD, for i < n: d = g + wd·p; without momentum buffer (m null) p = p − lr·d; with one,
/// buf = momentum·m + d, m = buf, and p = p − lr·buf, or p = p − lr·(d + momentum·buf) when
/// `nesterov` is nonzero.
void ck_sgd_update(float *p, const float *g, float *m, long n, float lr, float momentum, float wd, int nesterov);

/// Adam (Kingma & Ba 2015) with L2 weight decay, for i < n:
///     d = g + wd·p;  m = b1·m + (1 − b1)·d;  v = b2·v + (1 − b2)·d·d;
///     p = p − lr·(m / c1) / (√(v / c2) + eps)
/// (c1, c2: the bias corrections 1 − b1^t, 1 − b2^t).
void ck_adam_update(float *p, const float *g, float *m, float *v, long n,
                    float lr, float b1, float b2, float eps, float wd, float c1, float c2);

/// AdamW (Loshchilov & Hutter 2019), for i < n: p = p·decay, then Adam's update with d = g.
void ck_adamw_update(float *p, const float *g, float *m, float *v, long n,
                     float lr, float b1, float b2, float eps, float decay, float c1, float c2);

/// f[i] = f[i] + (w·g[i])·g[i] in float64 for i < n (a weighted squared gradient: EWC's Fisher).
void ck_accumulate_squares(double *f, const float *g, double w, long n);

/// EWC's exact Fisher for one dense layer and one sample, without forming the gradients: for each
/// row r < n and column c < m of f ([n × m], the layer's weights' slots) and each y < labels in
/// order, f[r, c] = f[r, c] + (w[y]·g)·g in float64 with g = a[r]·delta[y, c] in float32 — the
/// bits of ck_accumulate_squares over the count-1 weight gradient a ⊗ delta[y] (which is that
/// product), label after label. Rows whose a[r] is ±0 add +0 and are skipped unless delta has a
/// non-finite value, so f must hold no −0 (+0 added to −0 is +0); w[y] > 0. A bias is the case
/// n = 1, a = {1}.
void ck_accumulate_label_squares(double *f, const float *a, long n, const float *delta, long labels,
                                 long m, const double *w);

/// EWC's penalty over one term, for i < n: d = p − a (float32);
/// grad[i] = grad[i] + (scale·f[i])·d; returns Σ_i (f[i]·d)·d summed in float64 in increasing i
/// from 0 (one sequential chain, as the Swift loop it replaces).
double ck_ewc_penalty(const float *p, const float *a, const float *f, float *grad, float scale, long n);

#ifdef __cplusplus
}
#endif
#endif
