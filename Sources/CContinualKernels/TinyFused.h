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
/// gradient (one column), its input gradient (A's delta, masked by A's ReLU when `relu`)
/// and A's weight gradient (rows in interleaved pairs) from that delta while it is in a register.
/// Apart, B's weight gradient was one chain of `batch` dependent multiply-adds with nothing to
/// overlap it; here A's chains run beside it. Where dxa is given, A's input gradient follows
/// each 16 rows (tiny_input_gradient_block), from those rows of A's delta kept on the stack —
/// not in a caller's buffer: dxa is one, and `delta` another that is read until the last rows.
/// So A is done here too: under SGD (lw; g* are then the parameters) both layers are updated at
/// the end, after every read of their weights, and their gradients are never stored.
/// N = A's inputs; m = A's outputs = B's inputs.
KINL void KFN(tiny_top_two)(const int N, const float *xa, const float *xb, const float *wa, const float *wb,
                            const float *delta, float *dxa, const float *below, float *gwb, float *gbb,
                            float *gwa, float *gba, long batch, long m, int relu, const float *lw) {
    const __mmask16 km = KFN(tiny_mask)(m);
    const int np = (N + 1) / 2;
    const __m512 w = _mm512_maskz_loadu_ps(km, wb);
    __m512 acc[(TINY_MAX + 1) / 2];
    _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++) acc[t] = KFN(tiny_start_pairs)(gwa, t, N, m, lw);
    __m512 col = KFN(tiny_start)(gwb, km, lw), sum = KFN(tiny_start)(gba, km, lw);
    float bias = KFN(tiny_start_scalar)(gbb, lw);
    const __mmask16 pass = relu ? 0 : 0xFFFF;  // lanes kept whatever A's output (no ReLU)
    __m512 wj[8];
    if (dxa) KFN(tiny_columns_of)(wa, N, m, wj);
    float dz[16 * 8] __attribute__((aligned(64)));  // A's delta for the current 16 rows
    for (long s0 = 0; s0 < batch; s0 += 16) {
      for (long s = s0; s < s0 + 16; s++) {
        const float e = delta[s];
        const __m512 es = _mm512_set1_ps(e), xs = _mm512_maskz_loadu_ps(km, xb + s * m);
        col = _mm512_fmadd_ps(xs, es, col);
        bias = bias + e;
        __m512 d = _mm512_fmadd_ps(es, w, _mm512_setzero_ps());  // from +0, one output
        d = _mm512_maskz_mov_ps(_kor_mask16(_mm512_cmp_ps_mask(xs, _mm512_setzero_ps(), _CMP_GT_OQ), pass), d);  // ReLU's
        float *row = dz + (s - s0) * m;
        if (m == 8) _mm256_store_ps(row, _mm512_castps512_ps256(d));  // unmasked: forwards to dx's loads
        else _mm512_mask_storeu_ps(row, km, d);
        sum = _mm512_add_ps(sum, d);
        const __m512 dd = KFN(tiny_double)(d);
        _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++)
            acc[t] = _mm512_fmadd_ps(KFN(tiny_row_pair)(xa + s * N, t, N), dd, acc[t]);
      }
      // A's input gradient for these 16 rows, overlapping the next rows' chains
      if (dxa) KFN(tiny_input_gradient_block)(m, wj, dz, dxa, below, s0, N);
    }
    KFN(tiny_finish_pairs)(gwa, np, N, m, acc, lw);
    KFN(tiny_finish)(gwb, km, col, lw);
    KFN(tiny_finish)(gba, km, sum, lw);
    KFN(tiny_finish_scalar)(gbb, bias, lw);
}

/// Whether layers a (below) and b (above it) take tiny_top_two.
KINL int KFN(tiny_top_fits)(const ck_layer *a, const ck_layer *b, long batch) {
    return b->outputs == 1 && a->outputs >= 2 && a->outputs <= 8 && a->inputs >= 1 && a->inputs <= TINY_MAX &&
           batch % 16 == 0;
}

/// tiny_top_two for A's inputs n; A's input gradient made where dxa is given.
static KATTR __attribute__((noinline)) void KFN(tiny_top_two_any)(const float *xa, const float *xb, const float *wa,
        const float *wb, const float *delta, float *dxa, const float *below, float *gwb, float *gbb,
        float *gwa, float *gba, long batch, long n, long m, int relu, const float *lw) {
#define TINY_TOP(N) KFN(tiny_top_two)((N), xa, xb, wa, wb, delta, dxa, below, gwb, gbb, gwa, gba, batch, m, relu, lw)
    TINY_SWITCH(n, TINY_TOP)
#undef TINY_TOP
}
