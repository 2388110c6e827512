// One-output dense layers (a binary head: 1024 → 1 on a wide network, the narrow chain's 8 → 1
// too), compiled once per kernel path: KernelBody.h includes this file where KATTR, KFN, KINL, MADDV/MADDS and
// transpose8 are defined (no include guard on purpose). Through the general products these ran
// one column wide: the forward and the weight gradient as eight scalar chains at a time, waiting
// on the multiply-add latency; the input gradient 32 columns at a time over every row, 4 kB
// apart, so each store missed L1 (W = 1024, batch 128, Zen 5 kind: 18, 28 and 35 µs for 131,072
// multiply-adds each; here 15, 6 and 5.5 µs — the forward's transposes take the shuffle unit).
// Each element is still the one chain of the other layouts — the forward
// from the bias over k in order, the weight gradient from dw over the rows in order, the input
// gradient one multiply-add from zero — so the bits are theirs.

/// y[s] = act(b[0] + Σ_k x[s, k]·w[k]) for G groups of 8 rows from row s0: each group's 8 × 8
/// blocks of x transposed in registers, so one vector holds 8 rows' chains; G chains in flight.
/// `ep` (CK_EP_NONE or CK_EP_RELU) is applied as y is stored.
KINL void KFN(column_rows)(const int G, const float *x, const float *w, const float *b, float *y,
                           long s0, long inputs, int ep) {
    v8 acc[4];
    for (int g = 0; g < G; g++) acc[g] = (v8)(b[0]);
    long k = 0;
    for (; k + 8 <= inputs; k += 8)
        for (int g = 0; g < G; g++) {
            v8 t[8];
            KFN(transpose8)(x + (s0 + 8 * g) * inputs + k, inputs, t);
            for (int q = 0; q < 8; q++) acc[g] = MADDV(t[q], (v8)(w[k + q]), acc[g]);
        }
    for (; k < inputs; k++)
        for (int g = 0; g < G; g++) {
            v8 xk;
            for (int r = 0; r < 8; r++) xk[r] = x[(s0 + 8 * g + r) * inputs + k];
            acc[g] = MADDV(xk, (v8)(w[k]), acc[g]);
        }
    for (int g = 0; g < G; g++) CK_ST(y + s0 + 8 * g, CK_EPV(acc[g], ep, 0));
}

/// The forward of a one-output layer (any width: the narrow chain's too), ReLU when `ep` says so:
/// rows 32 at a time (four groups of 8), then 8, then one by one.
KINL void KFN(column_forward)(const float *x, const float *w, const float *b, float *y,
                              long batch, long inputs, int ep) {
    long s = 0;
    for (; s + 32 <= batch; s += 32) KFN(column_rows)(4, x, w, b, y, s, inputs, ep);
    for (; s + 8 <= batch; s += 8) KFN(column_rows)(1, x, w, b, y, s, inputs, ep);
    for (; s < batch; s++) {
        float a = b[0];
        for (long k = 0; k < inputs; k++) a = MADDS(x[s * inputs + k], w[k], a);
        y[s] = ep == CK_EP_RELU && a <= 0 ? 0.0f : a;  // ck_relu_forward's selection
    }
}

/// dw[k] += Σ_s x[s, k]·dz[s] for a one-output layer, k in 64-wide blocks (eight chains in
/// flight, each reading a row's contiguous block), the chains over s in order from dw.
KINL void KFN(column_weight_gradient)(const float *x, const float *dz, float *dw, long batch, long inputs) {
    long k = 0;
    for (; k + 64 <= inputs; k += 64) {
        v8 acc[8];
        for (int q = 0; q < 8; q++) acc[q] = CK_LD(dw + k + 8 * q);
        for (long s = 0; s < batch; s++) {
            const float *xs = x + s * inputs + k;
            v8 d = (v8)(dz[s]);
            for (int q = 0; q < 8; q++) acc[q] = MADDV(CK_LD(xs + 8 * q), d, acc[q]);
        }
        for (int q = 0; q < 8; q++) CK_ST(dw + k + 8 * q, acc[q]);
    }
    for (; k + 8 <= inputs; k += 8) {
        v8 acc = CK_LD(dw + k);
        for (long s = 0; s < batch; s++) acc = MADDV(CK_LD(x + s * inputs + k), (v8)(dz[s]), acc);
        CK_ST(dw + k, acc);
    }
    for (; k < inputs; k++) {
        float a = dw[k];
        for (long s = 0; s < batch; s++) a = MADDS(x[s * inputs + k], dz[s], a);
        dw[k] = a;
    }
}

/// dx[s, k] = dz[s]·w[k] (one multiply-add from zero) for k in [k0, k1), row by row, masked by
/// `below > 0` when `below` (the layer's input, a ReLU's output, laid out like dx) is given.
KINL void KFN(column_input_gradient)(const float *dz, const float *w, float *dx, const float *below,
                                     long batch, long inputs, long k0, long k1) {
    int ep = below ? CK_EP_MASK : CK_EP_NONE;
    for (long s = 0; s < batch; s++) {
        v8 d = (v8)(dz[s]);
        float *row = dx + s * inputs;
        const float *m = below ? below + s * inputs : 0;
        long k = k0;
        for (; k + 8 <= k1; k += 8) CK_ST(row + k, CK_EPV(MADDV(d, CK_LD(w + k), (v8)(0.0f)), ep, m + k));
        for (; k < k1; k++) row[k] = CK_EPS(MADDS(dz[s], w[k], 0.0f), ep, m + k);
    }
}
