// Two adjacent tiny layers in one pass (avx512-fma path), where the second has one output and the
// first 2–8 (the seed model's 16 → 8 → 1): included by NarrowBody.h after TinyBody.h, whose
// kernels and layouts these combine (no include guard on purpose). Every element keeps its one
// chain and ReLU its selection, so the bits are those of the two layers' kernels one after the
// other (DenseChainTests).

/// 8 × 8 64-bit elements transposed in place: z[p]'s pair j ↔ z[j]'s pair p (three rounds of the
/// even and odd 64-bit lanes of a register pair). From tiny_forward_pairs' accumulators (pair p:
/// rows 2p and 2p + 1 of all 8 columns) it gives the columns over 16 rows.
KINL void KFN(tiny_columns_pairs)(__m512 z[8]) {
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    for (int s = 1; s < 8; s <<= 1)
        for (int p = 0; p < 8; p++)
            if (!(p & s)) {
                const __m512d a = _mm512_castps_pd(z[p]), b = _mm512_castps_pd(z[p | s]);
                z[p] = _mm512_castpd_ps(_mm512_permutex2var_pd(a, even, b));
                z[p | s] = _mm512_castpd_ps(_mm512_permutex2var_pd(a, odd, b));
            }
}

/// The next layer's forward (one output, m inputs ≤ 8) from tiny_forward_pairs' accumulators of
/// 16 rows (after their ReLU): y[r] = act(b + Σ_j h[r, j]·w[j]), one chain over j from the bias
/// as in tiny_forward_column, without storing and reloading h.
KINL void KFN(tiny_column_after_pairs)(const __m512 acc[8], const float *w, float b, float *y, long m, int relu) {
    __m512 z[8];
    for (int p = 0; p < 8; p++) z[p] = acc[p];
    KFN(tiny_columns_pairs)(z);
    KFN(tiny_column_output)(z, m, w, b, y, relu);
}

/// The top two layers' backward in one pass over the batch, where the top layer B has one output
/// and the layer below it A has 2–8 (the seed model's 8 → 1 over 16 → 8): per sample, B's weight
/// gradient (one column), its input gradient (A's delta, into dz, masked by A's ReLU when `relu`)
/// and A's weight gradient (rows in interleaved pairs) from that delta while it is in a register.
/// Apart, B's weight gradient was one chain of `batch` dependent multiply-adds with nothing to
/// overlap it; here A's chains run beside it. N = A's inputs; m = A's outputs = B's inputs.
KINL void KFN(tiny_top_two)(const int N, const float *xa, const float *xb, const float *wb, const float *delta,
                            float *dz, float *gwb, float *gbb, float *gwa, float *gba, long batch, long m, int relu) {
    const __mmask16 km = KFN(tiny_mask)(m);
    const int np = (N + 1) / 2;
    const __m512 w = _mm512_maskz_loadu_ps(km, wb);
    __m512 acc[(TINY_MAX + 1) / 2];
    _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++) acc[t] = KFN(tiny_load_pair_rows)(gwa, t, N, m);
    __m512 col = _mm512_maskz_loadu_ps(km, gwb), sum = _mm512_maskz_loadu_ps(km, gba);
    float bias = gbb[0];
    for (long s = 0; s < batch; s++) {
        const float e = delta[s];
        const __m512 es = _mm512_set1_ps(e), xs = _mm512_maskz_loadu_ps(km, xb + s * m);
        col = _mm512_fmadd_ps(xs, es, col);
        bias = bias + e;
        __m512 d = _mm512_fmadd_ps(es, w, _mm512_setzero_ps());  // from +0, one output
        if (relu) d = KFN(tiny_where_above_zero)(xs, d);
        _mm512_mask_storeu_ps(dz + s * m, km, d);
        sum = _mm512_add_ps(sum, d);
        const __m512 dd = KFN(tiny_double)(d);
        _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++)
            acc[t] = _mm512_fmadd_ps(KFN(tiny_row_pair)(xa + s * N, t, N), dd, acc[t]);
    }
    _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++) KFN(tiny_store_pair_rows)(gwa, t, N, m, acc[t]);
    _mm512_mask_storeu_ps(gwb, km, col);
    _mm512_mask_storeu_ps(gba, km, sum);
    gbb[0] = bias;
}

/// Whether layers a (below) and b (above it) take tiny_top_two.
KINL int KFN(tiny_top_fits)(const ck_layer *a, const ck_layer *b, long batch) {
    return b->outputs == 1 && a->outputs >= 2 && a->outputs <= 8 && a->inputs >= 1 && a->inputs <= TINY_MAX &&
           batch % 16 == 0;
}

static KATTR __attribute__((noinline)) void KFN(tiny_top_two_any)(const float *xa, const float *xb, const float *wb,
        const float *delta, float *dz, float *gwb, float *gbb, float *gwa, float *gba, long batch, long n, long m,
        int relu) {
#define TINY_TOP(N) KFN(tiny_top_two)((N), xa, xb, wb, delta, dz, gwb, gbb, gwa, gba, batch, m, relu)
    TINY_SWITCH(n, TINY_TOP)
#undef TINY_TOP
}
