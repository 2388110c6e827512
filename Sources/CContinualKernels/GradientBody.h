// A dense layer's weight and bias gradient over a range of columns, and the same followed by plain
// SGD on those columns (the fused update of ck_dense_weight_gradient_sgd), included by
// KernelBody.h once per kernel path (no include guard on purpose).

/// dw[·, j0..<j1] += xᵀ·dz, each element one chain over the batch in order from the value in
/// memory. `xt`, when not null, is x transposed ([inputs × batch], made once per product by
/// ck_dense_weight_gradient): with wide inputs the rows of x are far apart in memory, so A(k, s)
/// is read from the copy; otherwise in place.
KINL void KFN(weight_product)(const float *x, const float *xt, const float *dz, float *dw, long batch,
                              long inputs, long outputs, long j0, long j1) {
    if (outputs == 1) {
        KFN(column_weight_gradient)(x, dz, dw, batch, inputs);
    } else if (xt) {
        KFN(gemm)(inputs, j0, j1, batch, xt, batch, 1, dz, outputs, dw, outputs, 0);
    } else {
        KFN(gemm)(inputs, j0, j1, batch, x, 1, inputs, dz, outputs, dw, outputs, 0);
    }
}

/// db[j0..<j1] += Σ_s dz[s, ·]: each column one chain over the rows in order; eight 8-column
/// vectors at a time, so eight chains are in flight instead of one waiting on the add latency
/// (Zen 5 kind, a 10-1024-1024-2 step at batch 128: 4,110 → 4,063 µs, medians of 5 alternated).
KINL void KFN(bias_gradient)(const float *dz, float *db, long batch, long outputs, long j0, long j1) {
    long j = j0;
    for (; j + 64 <= j1; j += 64) {
        v8 acc[8];
        for (int q = 0; q < 8; q++) acc[q] = CK_LD(db + j + 8 * q);
        for (long s = 0; s < batch; s++) {
            const float *d = dz + s * outputs + j;
            for (int q = 0; q < 8; q++) acc[q] = acc[q] + CK_LD(d + 8 * q);
        }
        for (int q = 0; q < 8; q++) CK_ST(db + j + 8 * q, acc[q]);
    }
    for (; j + 8 <= j1; j += 8) {
        v8 acc = CK_LD(db + j);
        for (long s = 0; s < batch; s++) acc = acc + CK_LD(dz + s * outputs + j);
        CK_ST(db + j, acc);
    }
    for (; j < j1; j++) {
        float acc = db[j];
        for (long s = 0; s < batch; s++) acc = acc + dz[s * outputs + j];
        db[j] = acc;
    }
}

/// Columns [j0, j1) of ck_dense_weight_gradient: dw += xᵀ·dz and db += Σ_s dz[s, ·].
static KATTR void KFN(weight_gradient)(const float *x, const float *xt, const float *dz, float *dw, float *db,
                                       long batch, long inputs, long outputs, long j0, long j1) {
    KFN(weight_product)(x, xt, dz, dw, batch, inputs, outputs, j0, j1);
    KFN(bias_gradient)(dz, db, batch, outputs, j0, j1);
}

/// p[i] ← p[i] − lr·(g[i] + wd·p[i]) for i < n, lw = {lr, wd}: ck_sgd_update's arithmetic
/// without momentum (nothing contracted), so the same bits in any vector width.
KINL void KFN(sgd_span)(float *p, const float *g, long n, const float *lw) {
    const float lr = lw[0], wd = lw[1];
    for (long i = 0; i < n; i++) p[i] = CK_SGD_RULE(p[i], g[i], lr, wd);
}

/// Columns [j0, j1) of a layer's weights w [inputs × outputs] and bias b updated by plain SGD with
/// the gradient ck_dense_weight_gradient would add into zeros: the same bits as that product
/// followed by ck_sgd_update (lw = {lr, wd}). On the two-unit layouts, with at most CK_PKC rows
/// in the batch, the panels' tiles start every chain from +0 and apply the update as they store
/// (CK_EP_SGD): the gradient is never written, read back, or zeroed. Other columns (and other
/// paths) compute it into gw, gb ([inputs × outputs], [outputs]: scratch, their columns
/// [j0, j1) overwritten) and update from there.
static KATTR void KFN(weight_gradient_sgd)(const float *x, const float *xt, const float *dz, float *w, float *b,
                                           float *gw, float *gb, long batch, long inputs, long outputs,
                                           long j0, long j1, const float *lw) {
    long j = j0;
#ifdef CK_WIDE_TILE
    static const float zeros[32] = {0};
    float *bpack;
    if (!xt && outputs > 1 && batch <= CK_PKC && inputs >= CK_PANEL_ROWS && j1 - j0 >= CK_PANEL_COLUMNS &&
        ck_panels_wanted() && (bpack = (float *)malloc(sizeof(float) * CK_PKC * (size_t)(j1 - j0)))) {
        j = KFN(gemm_panels)(inputs, j0, j1, batch, x, 1, inputs, dz, outputs, 0, w, outputs, zeros, 0, bpack,
                             CK_EP_SGD, lw);
        free(bpack);
    }
#endif
    if (j < j1) {
        const long n = j1 - j;
        if (n == outputs) {  // whole rows: one span
            __builtin_memset(gw, 0, (size_t)(inputs * outputs) * sizeof(float));
            KFN(weight_product)(x, xt, dz, gw, batch, inputs, outputs, j, j1);
            KFN(sgd_span)(w, gw, inputs * outputs, lw);
        } else {
            for (long i = 0; i < inputs; i++) __builtin_memset(gw + i * outputs + j, 0, (size_t)n * sizeof(float));
            KFN(weight_product)(x, xt, dz, gw, batch, inputs, outputs, j, j1);
            for (long i = 0; i < inputs; i++) KFN(sgd_span)(w + i * outputs + j, gw + i * outputs + j, n, lw);
        }
    }
    __builtin_memset(gb + j0, 0, (size_t)(j1 - j0) * sizeof(float));
    KFN(bias_gradient)(dz, gb, batch, outputs, j0, j1);
    KFN(sgd_span)(b + j0, gb + j0, j1 - j0, lw);
}
