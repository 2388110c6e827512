// A whole dense network's forward and backward pass in one call (ck_mlp_forward /
// ck_mlp_backward, Kernels.c), compiled once per kernel path like KernelBody.h, which includes
// this file (no include guard on purpose). Narrow layers (both sides ≤ CK_NARROW) run here on the
// register tiles of KernelBody.h with their ReLU applied before the tile is stored, and the
// input gradient masked by the layer below's ReLU the same way; wider layers take the public
// products (blocking, threads). Every element is the same one chain as in the separate products,
// and the ReLU selections are those of ck_relu_forward / ck_relu_backward, so the bits are theirs.

#ifndef CK_NARROW
#define CK_NARROW 64  /* widths up to this run on the narrow kernels (wᵀ ≤ 16 kB on the stack) */
#endif

/// y[s, c] = act(b[c] + Σ_k x[s, k]·w[k, c]) for NC < 8 columns and rows [0, 8·⌊batch/8⌋): eight
/// rows per vector (x's 8 × 8 blocks transposed in registers), so the few columns do not leave
/// the vector lanes empty; each element is still one chain over k in order from its bias.
KINL void KFN(narrow_columns)(const int NC, const float *x, const float *w, const float *b, float *y,
                              long batch, long inputs, int ep) {
    for (long s0 = 0; s0 + 8 <= batch; s0 += 8) {
        v8 acc[8];
        for (int c = 0; c < NC; c++) acc[c] = (v8)(b[c]);
        const float *xs = x + s0 * inputs;
        long k = 0;
        for (; k + 8 <= inputs; k += 8) {
            v8 xk[8];
            KFN(transpose8)(xs + k, inputs, xk);
            for (int q = 0; q < 8; q++)
                for (int c = 0; c < NC; c++) acc[c] = MADDV(xk[q], (v8)(w[(k + q) * NC + c]), acc[c]);
        }
        for (; k < inputs; k++) {
            v8 xk;
            for (int r = 0; r < 8; r++) xk[r] = xs[r * inputs + k];
            for (int c = 0; c < NC; c++) acc[c] = MADDV(xk, (v8)(w[k * NC + c]), acc[c]);
        }
        for (int c = 0; c < NC; c++)
            for (int r = 0; r < 8; r++) {
                float v = acc[c][r];
                y[(s0 + r) * NC + c] = ep == CK_EP_RELU && v <= 0 ? 0.0f : v;  // ck_relu_forward's selection
            }
    }
}

/// y = b + x·w for a narrow layer, then ReLU when `relu`, as its tiles are stored.
KINL void KFN(narrow_forward)(const float *x, const float *w, const float *b, float *y,
                              long batch, long inputs, long outputs, int relu) {
    int ep = relu ? CK_EP_RELU : CK_EP_NONE;
    if (outputs == 1) { KFN(column_forward)(x, w, b, y, batch, inputs, ep); return; }  // ColumnBody.h
    long done = 0;
    if (outputs < 8 && batch >= 8) {
        switch (outputs) {
        case 2: KFN(narrow_columns)(2, x, w, b, y, batch, inputs, ep); break;
        case 3: KFN(narrow_columns)(3, x, w, b, y, batch, inputs, ep); break;
        case 4: KFN(narrow_columns)(4, x, w, b, y, batch, inputs, ep); break;
        case 5: KFN(narrow_columns)(5, x, w, b, y, batch, inputs, ep); break;
        case 6: KFN(narrow_columns)(6, x, w, b, y, batch, inputs, ep); break;
        default: KFN(narrow_columns)(7, x, w, b, y, batch, inputs, ep); break;
        }
        done = batch / 8 * 8;
        if (done == batch) return;
    }
    KFN(gemm_direct_ep)(batch - done, 0, outputs, inputs, x + done * inputs, inputs, 1, w, outputs,
                        y + done * outputs, outputs, b, ep, 0, 0, 0);
}

/// dx = dz·wᵀ for a narrow layer (from zero, over the outputs in order), masked by `below > 0`
/// when `below` (the layer's input, a ReLU's output) is given. One output: dx[s] = dz[s]·w, one
/// multiply-add per element; more: wᵀ packed whole on the stack (8 × 8 blocks in registers).
KINL void KFN(narrow_input_gradient)(const float *dz, const float *w, float *dx, const float *below,
                                     long batch, long inputs, long outputs) {
    int ep = below ? CK_EP_MASK : CK_EP_NONE;
    if (outputs == 1) { KFN(column_input_gradient)(dz, w, dx, below, batch, inputs, 0, inputs); return; }
    static const float zeros[CK_NARROW] = {0};
    float wt[CK_NARROW * CK_NARROW];
    long k = 0;
    for (; k + 8 <= inputs; k += 8) {
        long j = 0;
        for (; j + 8 <= outputs; j += 8) {
            v8 t[8];
            KFN(transpose8)(w + k * outputs + j, outputs, t);
            for (int c = 0; c < 8; c++) CK_ST(wt + (j + c) * inputs + k, t[c]);
        }
        for (; j < outputs; j++)
            for (int r = 0; r < 8; r++) wt[j * inputs + k + r] = w[(k + r) * outputs + j];
    }
    for (; k < inputs; k++)
        for (long j = 0; j < outputs; j++) wt[j * inputs + k] = w[k * outputs + j];
    KFN(gemm_direct_ep)(batch, 0, inputs, outputs, dz, outputs, 1, wt, inputs, dx, inputs, zeros, ep, below, inputs, 0);
}

/// dw += xᵀ·dz and db += Σ_s dz[s] for a narrow layer (chains over the batch in order): the
/// bias gradient of whole 8-column strips summed by the tiles of the first rows, from the dz rows
/// they load anyway (a separate pass was a chain of `batch` dependent additions per strip).
KINL void KFN(narrow_weight_gradient)(const float *x, const float *dz, float *dw, float *db,
                                      long batch, long inputs, long outputs) {
    KFN(gemm_direct_ep)(inputs, 0, outputs, batch, x, 1, inputs, dz, outputs, dw, outputs, 0, CK_EP_NONE, 0, 0,
                        inputs > 0 ? db : 0);
    for (long j = inputs > 0 ? outputs / 8 * 8 : 0; j < outputs; j++) {
        float acc = db[j];
        for (long s = 0; s < batch; s++) acc = acc + dz[s * outputs + j];
        db[j] = acc;
    }
}

#ifdef CK_WIDE_TILE
#include "TinyBody.h"
#include "TinyFused.h"
#define KTINY(n, m, batch) KFN(tiny_fits)((n), (m), (batch))
#else
#define KTINY(n, m, batch) 0
#endif

static KATTR void KFN(mlp_forward)(const float *params, const ck_layer *layers, long count,
                                   float *const *acts, long batch) {
    for (long l = 0; l < count; l++) {
        const ck_layer *L = layers + l;
        const float *w = params + L->weights, *b = params + L->bias;
        if (KTINY(L->inputs, L->outputs, batch)) {
#ifdef CK_WIDE_TILE
            const ck_layer *N = l + 1 < count ? L + 1 : 0;  // a one-output layer next: computed with this one
            if (N && L->outputs >= 2 && L->outputs <= 8 && N->outputs == 1) {
                KFN(tiny_forward)(acts[l], w, b, acts[l + 1], batch, L->inputs, L->outputs, L->relu,
                                  params + N->weights, params + N->bias, acts[l + 2], N->relu);
                l++;
                continue;
            }
            KFN(tiny_forward)(acts[l], w, b, acts[l + 1], batch, L->inputs, L->outputs, L->relu, 0, 0, 0, 0);
#endif
        } else if (L->inputs <= CK_NARROW && L->outputs <= CK_NARROW) {
            KFN(narrow_forward)(acts[l], w, b, acts[l + 1], batch, L->inputs, L->outputs, L->relu);
        } else {
            ck_dense_forward(acts[l], w, b, acts[l + 1], batch, L->inputs, L->outputs);
            if (L->relu) ck_relu_forward(acts[l + 1], batch * L->outputs);
        }
    }
}

/// Plain SGD on layer L from its gradient in `grad` (lw = {lr, wd}).
KINL void KFN(layer_sgd)(float *params, const float *grad, const ck_layer *L, const float *lw) {
    KFN(sgd_span)(params + L->weights, grad + L->weights, L->inputs * L->outputs, lw);
    KFN(sgd_span)(params + L->bias, grad + L->bias, L->outputs, lw);
}

/// One layer's weight gradient added into `grad` and its input gradient written to dx (when not
/// null), masked by the ReLU below (`below_relu`) where its kernel fuses that (*masked is then
/// set). Under SGD (lw = {lr, wd}; tiny and narrow layers only) the layer's parameters are
/// updated with its gradient made from zeros, after dx, which reads its weights: a tiny layer's
/// kernel applies the update as it finishes (the gradient is not stored); a narrow one's gradient
/// is zeroed, made in `grad` and applied from there.
KINL void KFN(layer_gradients)(float *params, const ck_layer *L, const float *x, const float *delta, float *dx,
                               float *grad, long batch, int below_relu, int tiny, int narrow, int *masked,
                               const float *lw) {
    const long n = L->inputs, m = L->outputs;
    const float *w = params + L->weights;
    if (dx) {
        const float *below = below_relu ? x : 0;
        if (tiny) {
#ifdef CK_WIDE_TILE
            KFN(tiny_input_gradient_any)(delta, w, dx, below, batch, n, m);
#endif
            *masked = below != 0;
        } else if (narrow && batch > 4) {
            KFN(narrow_input_gradient)(delta, w, dx, below, batch, n, m);
            *masked = below != 0;
        } else {
            ck_dense_input_gradient(delta, w, dx, batch, n, m);
        }
    }
#ifdef CK_WIDE_TILE
    if (tiny) {
        float *t = lw ? params : grad;
        KFN(tiny_weight_gradient)(x, delta, t + L->weights, t + L->bias, batch, n, m, lw);
        return;
    }
#endif
    if (lw) {
        __builtin_memset(grad + L->weights, 0, (size_t)(n * m) * sizeof(float));
        __builtin_memset(grad + L->bias, 0, (size_t)m * sizeof(float));
    }
    if (narrow) KFN(narrow_weight_gradient)(x, delta, grad + L->weights, grad + L->bias, batch, n, m);
    else ck_dense_weight_gradient(x, delta, grad + L->weights, grad + L->bias, batch, n, m);
    if (lw) KFN(layer_sgd)(params, grad, L, lw);
}

/// The backward pass of MLP.backward for dense ReLU/identity layers: `delta` (the logits'
/// gradient, scratch) through every layer, the parameters' gradient added into `grad`, the
/// input's gradient written to `input_grad` when given; bufA/bufB hold the hidden deltas.
/// With `lw` = {lr, wd} (ck_mlp_backward_sgd; `params` is then written, `grad` is scratch and
/// `input_grad` null): each layer's gradient from zeros, and plain SGD on the layer once its own
/// input gradient, which reads its weights, is made — wide layers in their weight gradient's
/// epilogue (ck_dense_weight_gradient_sgd), tiny ones as their kernels finish.
static KATTR void KFN(mlp_backward)(float *params, const ck_layer *layers, long count, float *const *acts,
                                    float *delta, float *bufA, float *bufB, float *grad, float *input_grad,
                                    long batch, const float *lw) {
    int masked = 0;  // delta already carries this layer's ReLU derivative (fused in the layer above)
    for (long l = count - 1; l >= 0; l--) {
        const ck_layer *L = layers + l;
        long n = L->inputs, m = L->outputs;
        if (L->relu && !masked) ck_relu_backward(acts[l + 1], delta, batch * m);
        const float *x = acts[l];
        int narrow = n <= CK_NARROW && m <= CK_NARROW;
        int pair = 0;  // this layer and the one below it (A) made together by tiny_top_two
#ifdef CK_WIDE_TILE
        pair = l > 0 && KFN(tiny_top_fits)(L - 1, L, batch);
        if (pair) {
            const ck_layer *A = L - 1;
            float *t = lw ? params : grad;
            // A's input gradient goes to bufA, as a layer's own would: delta is the logits' gradient
            // or bufB, which the kernel reads until its last rows while it writes bufA's first.
            float *dxa = l > 1 ? bufA : input_grad;
            const float *below = l > 1 && layers[l - 2].relu ? acts[l - 1] : 0;  // A's input, a ReLU's output
            KFN(tiny_top_two_any)(acts[l - 1], x, params + A->weights, params + L->weights, delta, dxa, below,
                                  t + L->weights, t + L->bias, t + A->weights, t + A->bias, batch, A->inputs, n,
                                  A->relu, lw);
            masked = below != 0;
            l--;  // A is done too; its input gradient (bufA) is the next layer's delta
        }
#endif
        if (!pair) {
            float *dx = l > 0 ? bufA : input_grad;
            masked = 0;
            if (lw && !narrow) {
                if (dx) ck_dense_input_gradient(delta, params + L->weights, dx, batch, n, m);
                ck_dense_weight_gradient_sgd(x, delta, params + L->weights, params + L->bias, grad + L->weights,
                                             grad + L->bias, batch, n, m, lw[0], lw[1]);
            } else {
                KFN(layer_gradients)(params, L, x, delta, dx, grad, batch, l > 0 && layers[l - 1].relu,
                                     KTINY(n, m, batch), narrow, &masked, lw);
            }
        }
        if (l > 0) {
            delta = bufA;
            float *s = bufA; bufA = bufB; bufB = s;
        }
    }
}
#undef KTINY
