// Tiny layers (both sides ≤ 16, the batch a multiple of 16) on the AVX-512 path, included by
// NarrowBody.h where the path defines CK_WIDE_TILE (no include guard on purpose). The seed model
// (10 → 16 → 8 → 1) left most of a 16-float vector empty on the 8-float narrow tiles: 8 columns
// fill half a vector, 1 column one lane in eight. Here every product keeps its vectors full or
// nearly so by choosing which index runs along the lanes:
//   - 9 to 16 outputs: one row of the output per vector (the columns along the lanes);
//   - 2 to 8 outputs: two rows per vector, interleaved (lane 2c: row s, lane 2c + 1: row s + 1),
//     so the broadcast operand is the pair (x[s, k], x[s + 1, k]): one 64-bit broadcast when the
//     input is stored pair by pair (`tiny_pairs`), and the weights' row with each value doubled;
//   - the weight gradient of 2 to 8 outputs: rows i and i + 1 interleaved the same way, the
//     broadcast being (x[s, i], x[s, i + 1]), adjacent in x as it is;
//   - one output: the forward 16 rows per vector (≤ 8 inputs, x's columns transposed in
//     registers), the weight gradient with the inputs along the lanes (dw is then one column).
// TinyFused.h runs a one-output layer and the 2–8-output layer below it as one pass.
// Every element is still the one chain of KernelBody.h — the forward from its bias over k in
// order, the weight gradient from memory (from +0 under plain SGD, whose update is then applied in
// registers) over the batch in order, the input gradient from +0 over the outputs in order — and
// the selections of ck_relu_forward / ck_relu_backward, so the bits
// are the narrow tiles' (DenseChainTests compare whole networks with the layer-by-layer products
// on every path, KernelPathTests those products between paths).

#include <immintrin.h>

#define TINY_MAX 16

/// Lanes [0, n) set.
KINL __mmask16 KFN(tiny_mask)(long n) { return (__mmask16)((1u << n) - 1u); }

/// ReLU's selection of ck_relu_forward: v <= 0 (−0 included) gives +0, NaN and v > 0 stay.
KINL __m512 KFN(tiny_relu)(__m512 v) {
    return _mm512_maskz_mov_ps(~_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LE_OQ), v);
}

/// (lo, hi) as one 64-bit broadcast: lanes 2t = p[0], 2t + 1 = p[1].
KINL __m512 KFN(tiny_pair)(const float *p) {
    double d;
    __builtin_memcpy(&d, p, sizeof d);
    return _mm512_castpd_ps(_mm512_set1_pd(d));
}

/// v[0..<8] with each value doubled: [v0, v0, v1, v1, …, v7, v7].
KINL __m512 KFN(tiny_double)(__m512 v) {
    return _mm512_permutexvar_ps(_mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0), v);
}

/// Rows a (lanes 0..7) and b (lanes 0..7) interleaved: [a0, b0, a1, b1, …, a7, b7].
KINL __m512 KFN(tiny_zip)(__m512 a, __m512 b) {
    return _mm512_permutex2var_ps(a, _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0), b);
}

/// The inverse of tiny_zip: even lanes to 0..7, odd lanes to 8..15.
KINL __m512 KFN(tiny_unzip)(__m512 v) {
    return _mm512_permutexvar_ps(_mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0), v);
}

/// Stores lanes 0..m-1 of v to p and lanes 8..8+m-1 to q.
KINL void KFN(tiny_store_halves)(float *p, float *q, __m512 v, long m) {
    const __mmask16 k = KFN(tiny_mask)(m);
    _mm512_mask_storeu_ps(p, k, v);
    _mm512_mask_storeu_ps(q, k, _mm512_shuffle_f32x4(v, v, 0xEE));
}

/// Rows 2t and 2t + 1 of dw (N rows of m ≤ 8) interleaved as the pair kernels accumulate them
/// (tiny_zip); a missing row 2t + 1 (odd N) reads as zeros.
KINL __m512 KFN(tiny_load_pair_rows)(const float *dw, int t, int N, long m) {
    const __mmask16 km = KFN(tiny_mask)(m);
    const __m512 hi = 2 * t + 1 < N ? _mm512_maskz_loadu_ps(km, dw + (2 * t + 1) * m) : _mm512_setzero_ps();
    return KFN(tiny_zip)(_mm512_maskz_loadu_ps(km, dw + 2 * t * m), hi);
}

/// tiny_load_pair_rows' inverse: rows 2t and, when N has it, 2t + 1 stored back.
KINL void KFN(tiny_store_pair_rows)(float *dw, int t, int N, long m, __m512 acc) {
    const __m512 v = KFN(tiny_unzip)(acc);
    const __mmask16 km = KFN(tiny_mask)(m);
    _mm512_mask_storeu_ps(dw + 2 * t * m, km, v);
    if (2 * t + 1 < N) _mm512_mask_storeu_ps(dw + (2 * t + 1) * m, km, _mm512_shuffle_f32x4(v, v, 0xEE));
}

/// The broadcast of pair t of a row x (N values): (x[2t], x[2t + 1]); an odd N's last pair
/// broadcasts x[N − 1] alone (its odd lanes are never stored, and x[N] may lie past the buffer).
KINL __m512 KFN(tiny_row_pair)(const float *x, int t, int N) {
    return 2 * t + 1 < N ? KFN(tiny_pair)(x + 2 * t) : _mm512_set1_ps(x[2 * t]);
}

/// v where below > 0, else +0: ck_relu_backward's selection (NaN below gives +0).
KINL __m512 KFN(tiny_where_above_zero)(__m512 below, __m512 v) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(below, _mm512_setzero_ps(), _CMP_GT_OQ), v);
}

/// One output over 16 rows from the inputs' columns z[0..<N]: act(b + Σ_k z[k]·w[k]), one chain
/// per lane over k from the bias, stored to y[0..<16].
KINL void KFN(tiny_column_output)(const __m512 *z, long N, const float *w, float b, float *y, int relu) {
    __m512 acc = _mm512_set1_ps(b);
    for (int k = 0; k < N; k++) acc = _mm512_fmadd_ps(z[k], _mm512_set1_ps(w[k]), acc);
    _mm512_storeu_ps(y, relu ? KFN(tiny_relu)(acc) : acc);
}

/// Rows r and r + 1 of a matrix of w ≤ 8 columns (row stride w) as one vector: [row r, zeros to
/// lane 8 | row r + 1, zeros]; rows at or past `rows` read as zeros.
KINL __m512 KFN(tiny_two_rows)(const float *a, long r, long rows, long w) {
    const __mmask8 k = (__mmask8)((1u << w) - 1u);
    const __m256 lo = r < rows ? _mm256_maskz_loadu_ps(k, a + r * w) : _mm256_setzero_ps();
    const __m256 hi = r + 1 < rows ? _mm256_maskz_loadu_ps(k, a + (r + 1) * w) : _mm256_setzero_ps();
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

/// 16 rows × 8 columns, z[p] = rows 2p and 2p + 1 (tiny_two_rows), transposed in place: z[c]
/// becomes column c over the 16 rows. Three rounds of the same two permutes (even lanes of a
/// register pair to the first, odd lanes to the second), each swapping one bit of the register
/// index with one of the lane index: 24 permutes.
KINL void KFN(tiny_columns8)(__m512 z[8]) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (int s = 1; s < 8; s <<= 1)
        for (int p = 0; p < 8; p++)
            if (!(p & s)) {
                const __m512 a = z[p], b = z[p | s];
                z[p] = _mm512_permutex2var_ps(a, even, b);
                z[p | s] = _mm512_permutex2var_ps(a, odd, b);
            }
}

/// y = act(b + x·w) for one output and N ≤ 8 inputs: 16 rows per vector (x's columns by
/// tiny_columns8), one chain per lane over k from the bias.
KINL void KFN(tiny_forward_column)(const int N, const float *x, const float *w, const float *b, float *y,
                                   long batch, int relu) {
    for (long s0 = 0; s0 < batch; s0 += 16) {
        __m512 z[8];
        for (int p = 0; p < 8; p++) z[p] = KFN(tiny_two_rows)(x + s0 * N, 2 * p, 16, N);
        KFN(tiny_columns8)(z);
        KFN(tiny_column_output)(z, N, w, b[0], y + s0, relu);
    }
}

/// y = act(b + x·w) for 9 to 16 outputs (N inputs): 16 rows at a time, one vector per row, each
/// lane one chain over k from the bias.
KINL void KFN(tiny_forward_rows)(const int N, const float *x, const float *w, const float *b, float *y,
                                 long batch, long m, int relu) {
    const __mmask16 km = KFN(tiny_mask)(m);
    __m512 wk[TINY_MAX];
    for (int k = 0; k < N; k++) wk[k] = _mm512_maskz_loadu_ps(km, w + k * m);
    const __m512 bias = _mm512_maskz_loadu_ps(km, b);
    for (long s0 = 0; s0 < batch; s0 += 16) {
        __m512 acc[16];
        _Pragma("clang loop unroll(full)") for (int r = 0; r < 16; r++) acc[r] = bias;
        const float *xs = x + s0 * N;
        for (int k = 0; k < N; k++)
            _Pragma("clang loop unroll(full)") for (int r = 0; r < 16; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(xs[r * N + k]), wk[k], acc[r]);
        _Pragma("clang loop unroll(full)") for (int r = 0; r < 16; r++)
            _mm512_mask_storeu_ps(y + (s0 + r) * m, km, relu ? KFN(tiny_relu)(acc[r]) : acc[r]);
    }
}

/// x's rows s and s + 1 stored pair by pair for a 64-bit broadcast: (x[s, k], x[s + 1, k]) at
/// pair q(k) of `out` (unpacklo/unpackhi's order: k = 0, 1, 4, 5, 8, 9, 12, 13, then 2, 3, 6, …).
KINL void KFN(tiny_pairs)(const float *x, long n, float *out) {
    const __mmask16 kn = KFN(tiny_mask)(n);
    const __m512 a = _mm512_maskz_loadu_ps(kn, x), b = _mm512_maskz_loadu_ps(kn, x + n);
    _mm512_storeu_ps(out, _mm512_unpacklo_ps(a, b));
    _mm512_storeu_ps(out + 16, _mm512_unpackhi_ps(a, b));
}
#define TINY_PAIR_AT(k) ((((k) & 1) | (((k) >> 2) << 1) | ((((k) >> 1) & 1) << 3)) * 2)

KINL void KFN(tiny_column_after_pairs)(const __m512 acc[8], const float *w, float b, float *y, long m, int relu);

/// y = act(b + x·w) for 1 to 8 outputs (N inputs): two rows per vector, interleaved; 2G rows
/// (G vectors, G chains in flight) at a time. With `w2`: the layer after this one, of one output
/// (TinyFused.h), computed from the accumulators in registers into `y2`.
KINL void KFN(tiny_forward_pairs)(const int N, const int G, const float *x, const float *w, const float *b,
                                  float *y, long batch, long m, int relu, const float *w2, const float *b2,
                                  float *y2, int relu2) {
    const __mmask16 km = KFN(tiny_mask)(m);
    __m512 wk[TINY_MAX];
    for (int k = 0; k < N; k++) wk[k] = KFN(tiny_double)(_mm512_maskz_loadu_ps(km, w + k * m));
    const __m512 bias = KFN(tiny_double)(_mm512_maskz_loadu_ps(km, b));
    float pairs[16][32];
    for (long s0 = 0; s0 < batch; s0 += 2 * G) {
        _Pragma("clang loop unroll(full)") for (int p = 0; p < G; p++) KFN(tiny_pairs)(x + (s0 + 2 * p) * N, N, pairs[p]);
        __m512 acc[16];
        _Pragma("clang loop unroll(full)") for (int p = 0; p < G; p++) acc[p] = bias;
        for (int k = 0; k < N; k++)
            _Pragma("clang loop unroll(full)") for (int p = 0; p < G; p++)
                acc[p] = _mm512_fmadd_ps(KFN(tiny_pair)(pairs[p] + TINY_PAIR_AT(k)), wk[k], acc[p]);
        _Pragma("clang loop unroll(full)") for (int p = 0; p < G; p++) {
            if (relu) acc[p] = KFN(tiny_relu)(acc[p]);
            const __m512 v = KFN(tiny_unzip)(acc[p]);
            float *row = y + (s0 + 2 * p) * m;
            if (m == 8) _mm512_storeu_ps(row, v);
            else KFN(tiny_store_halves)(row, row + m, v, m);
        }
        if (w2)
            for (int q = 0; q < G; q += 8) KFN(tiny_column_after_pairs)(acc + q, w2, b2[0], y2 + s0 + 2 * q, m, relu2);
    }
}

/// A gradient accumulator's start: the gradient's value at g (the kernels add into it), or, under
/// plain SGD (lw = {lr, wd}; g then points at the parameters), +0 — the gradient the update reads
/// is made from zeros, as ck_mlp_backward_sgd defines it.
KINL __m512 KFN(tiny_start)(const float *g, __mmask16 k, const float *lw) {
    return lw ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k, g);
}

/// The accumulated gradient stored to g, or, under SGD, the parameters at g updated with it
/// (CK_SGD_RULE: ck_sgd_update's rounding, nothing contracted), so the gradient is never stored.
KINL void KFN(tiny_finish)(float *g, __mmask16 k, __m512 acc, const float *lw) {
    if (lw) acc = CK_SGD_RULE(_mm512_maskz_loadu_ps(k, g), acc, _mm512_set1_ps(lw[0]), _mm512_set1_ps(lw[1]));
    _mm512_mask_storeu_ps(g, k, acc);
}

/// tiny_start and tiny_finish for one scalar (a one-output layer's bias).
KINL float KFN(tiny_start_scalar)(const float *g, const float *lw) { return lw ? 0.0f : g[0]; }
KINL void KFN(tiny_finish_scalar)(float *g, float acc, const float *lw) {
    g[0] = lw ? CK_SGD_RULE(g[0], acc, lw[0], lw[1]) : acc;
}

/// tiny_start for rows 2t and 2t + 1 in tiny_zip's layout.
KINL __m512 KFN(tiny_start_pairs)(const float *g, int t, int N, long m, const float *lw) {
    return lw ? _mm512_setzero_ps() : KFN(tiny_load_pair_rows)(g, t, N, m);
}

/// tiny_finish for the np row pairs of tiny_zip's layout (rows 2t and 2t + 1 in acc[t]). Under
/// SGD every pair of parameters is loaded before any is stored: a masked store spans the next
/// rows, and a load overlapping a masked store in flight waits until the store is written.
KINL void KFN(tiny_finish_pairs)(float *g, int np, int N, long m, __m512 *acc, const float *lw) {
    if (lw) {
        __m512 p[(TINY_MAX + 1) / 2];
        const __m512 lr = _mm512_set1_ps(lw[0]), wd = _mm512_set1_ps(lw[1]);
        _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++) p[t] = KFN(tiny_load_pair_rows)(g, t, N, m);
        _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++) acc[t] = CK_SGD_RULE(p[t], acc[t], lr, wd);
    }
    _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++) KFN(tiny_store_pair_rows)(g, t, N, m, acc[t]);
}

/// dw += xᵀ·dz and db += Σ_s dz[s] for 9 to 16 outputs (N inputs): row i of dw in one vector,
/// one chain per lane over the batch in order. Under SGD (lw) dw and db are the parameters,
/// updated with the gradient made from zeros (tiny_start, tiny_finish); so in the kernels below.
KINL void KFN(tiny_weight_gradient_rows)(const int N, const float *x, const float *dz, float *dw, float *db,
                                         long batch, long m, const float *lw) {
    const __mmask16 km = KFN(tiny_mask)(m);
    __m512 acc[TINY_MAX];
    _Pragma("clang loop unroll(full)") for (int i = 0; i < N; i++) acc[i] = KFN(tiny_start)(dw + i * m, km, lw);
    __m512 sum = KFN(tiny_start)(db, km, lw);
    for (long s = 0; s < batch; s++) {
        const __m512 d = _mm512_maskz_loadu_ps(km, dz + s * m);
        _Pragma("clang loop unroll(full)") for (int i = 0; i < N; i++) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(x[s * N + i]), d, acc[i]);
        sum = _mm512_add_ps(sum, d);
    }
    _Pragma("clang loop unroll(full)") for (int i = 0; i < N; i++) KFN(tiny_finish)(dw + i * m, km, acc[i], lw);
    KFN(tiny_finish)(db, km, sum, lw);
}

/// The same for 2 to 8 outputs: rows i and i + 1 of dw interleaved in one vector, so the
/// broadcast is the adjacent pair (x[s, i], x[s, i + 1]) and dz's row is doubled once per sample.
KINL void KFN(tiny_weight_gradient_pairs)(const int N, const float *x, const float *dz, float *dw, float *db,
                                          long batch, long m, const float *lw) {
    const __mmask16 km = KFN(tiny_mask)(m);
    enum { P = (TINY_MAX + 1) / 2 };
    const int np = (N + 1) / 2;
    __m512 acc[P];
    _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++) acc[t] = KFN(tiny_start_pairs)(dw, t, N, m, lw);
    __m512 sum = KFN(tiny_start)(db, km, lw);
    for (long s = 0; s < batch; s++) {
        const __m512 raw = _mm512_maskz_loadu_ps(km, dz + s * m), d = KFN(tiny_double)(raw);
        const float *xs = x + s * N;
        _Pragma("clang loop unroll(full)") for (int t = 0; t < np; t++)
            acc[t] = _mm512_fmadd_ps(KFN(tiny_row_pair)(xs, t, N), d, acc[t]);
        sum = _mm512_add_ps(sum, raw);
    }
    KFN(tiny_finish_pairs)(dw, np, N, m, acc, lw);
    KFN(tiny_finish)(db, km, sum, lw);
}

/// The same for one output: dw (one column) along the lanes, one chain per lane over the batch;
/// db one scalar chain.
KINL void KFN(tiny_weight_gradient_column)(const float *x, const float *dz, float *dw, float *db,
                                           long batch, long n, const float *lw) {
    const __mmask16 kn = KFN(tiny_mask)(n);
    __m512 acc = KFN(tiny_start)(dw, kn, lw);
    float sum = KFN(tiny_start_scalar)(db, lw);
    for (long s = 0; s < batch; s++) {
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(kn, x + s * n), _mm512_set1_ps(dz[s]), acc);
        sum = sum + dz[s];
    }
    KFN(tiny_finish)(dw, kn, acc, lw);
    KFN(tiny_finish_scalar)(db, sum, lw);
}

/// w's columns (M ≤ 8 of them, over n ≤ 16 rows, zeros past n) as vectors, for dx = dz·wᵀ.
KINL void KFN(tiny_columns_of)(const float *w, long n, long M, __m512 wj[8]) {
    for (int p = 0; p < 8; p++) wj[p] = KFN(tiny_two_rows)(w, 2 * p, n, M);
    KFN(tiny_columns8)(wj);
}

/// Rows [s0, s0 + 16) of dx = dz·wᵀ from those rows of dz (`ds`, 16 rows of M) and the columns
/// wj[0..<M] of w (M outputs, n inputs): one row per vector, each lane one chain from +0 over the
/// outputs in order, masked by `below` > 0 when given (ck_relu_backward's selection).
KINL void KFN(tiny_input_gradient_block)(long M, const __m512 *wj, const float *ds, float *dx, const float *below,
                                         long s0, long n) {
    const __mmask16 kn = KFN(tiny_mask)(n);
    __m512 acc[16];
    _Pragma("clang loop unroll(full)") for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
    for (long j = 0; j < M; j++)
        _Pragma("clang loop unroll(full)") for (int r = 0; r < 16; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(ds[r * M + j]), wj[j], acc[r]);
    _Pragma("clang loop unroll(full)") for (int r = 0; r < 16; r++) {
        __m512 v = acc[r];
        if (below) v = KFN(tiny_where_above_zero)(_mm512_maskz_loadu_ps(kn, below + (s0 + r) * n), v);
        _mm512_mask_storeu_ps(dx + (s0 + r) * n, kn, v);
    }
}

/// dx = dz·wᵀ (from +0, over the M outputs in order), masked by `below > 0` when given: a row of
/// dx per vector (the inputs along the lanes), the columns of w packed as vectors once.
KINL void KFN(tiny_input_gradient)(const int M, const float *dz, const float *w, float *dx, const float *below,
                                   long batch, long n) {
    __m512 wj[TINY_MAX];
    if (M <= 8) {  // w's 16 rows (zeros past n) × M columns transposed in registers
        KFN(tiny_columns_of)(w, n, M, wj);
    } else {
        const __mmask16 kn = KFN(tiny_mask)(n);
        float wt[TINY_MAX][TINY_MAX];
        for (int j = 0; j < M; j++)
            for (long i = 0; i < n; i++) wt[j][i] = w[i * M + j];
        for (int j = 0; j < M; j++) wj[j] = _mm512_maskz_loadu_ps(kn, wt[j]);
    }
    for (long s0 = 0; s0 < batch; s0 += 16) KFN(tiny_input_gradient_block)(M, wj, dz + s0 * M, dx, below, s0, n);
}

/// Whether a layer runs here: both sides ≤ 16 and whole groups of 16 rows.
KINL int KFN(tiny_fits)(long n, long m, long batch) {
    return n >= 1 && n <= TINY_MAX && m >= 1 && m <= TINY_MAX && batch % 16 == 0;
}

/// CALL(N) with N the literal value of `n` (1 … 16), so the kernels' register arrays have
/// compile-time sizes.
#define TINY_SWITCH(n, CALL)                                                                       \
    switch (n) {                                                                                   \
    case 1: CALL(1); break; case 2: CALL(2); break; case 3: CALL(3); break; case 4: CALL(4); break; \
    case 5: CALL(5); break; case 6: CALL(6); break; case 7: CALL(7); break; case 8: CALL(8); break; \
    case 9: CALL(9); break; case 10: CALL(10); break; case 11: CALL(11); break;                    \
    case 12: CALL(12); break; case 13: CALL(13); break; case 14: CALL(14); break;                  \
    case 15: CALL(15); break; default: CALL(16); break;                                            \
    }

/// One tiny layer's forward; with `w2` (a next layer of one output after 2–8 outputs here), that
/// layer's too, from this one's registers (TinyFused.h).
static KATTR __attribute__((noinline)) void KFN(tiny_forward)(const float *x, const float *w, const float *b,
                                                              float *y, long batch, long n, long m, int relu,
                                                              const float *w2, const float *b2, float *y2, int relu2) {
#define TINY_ROWS(N) KFN(tiny_forward_rows)((N), x, w, b, y, batch, m, relu)
#define TINY_PAIRS(N) do { /* 16 pairs (16 chains) at a time where the batch allows */ \
        if (batch % 32 == 0) KFN(tiny_forward_pairs)((N), 16, x, w, b, y, batch, m, relu, w2, b2, y2, relu2); \
        else KFN(tiny_forward_pairs)((N), 8, x, w, b, y, batch, m, relu, w2, b2, y2, relu2); } while (0)
#define TINY_COLUMN(N) KFN(tiny_forward_column)((N) < 8 ? (N) : 8, x, w, b, y, batch, relu)
    if (m > 8) TINY_SWITCH(n, TINY_ROWS)
    else if (m == 1 && n <= 8) TINY_SWITCH(n, TINY_COLUMN)
    else TINY_SWITCH(n, TINY_PAIRS)
#undef TINY_ROWS
#undef TINY_PAIRS
#undef TINY_COLUMN
}

/// One tiny layer's weight and bias gradient added into dw, db; under SGD (lw) dw and db are the
/// layer's parameters, updated by plain SGD with the gradient made from zeros.
static KATTR __attribute__((noinline)) void KFN(tiny_weight_gradient)(const float *x, const float *dz, float *dw,
                                                                      float *db, long batch, long n, long m,
                                                                      const float *lw) {
#define TINY_ROWS(N) KFN(tiny_weight_gradient_rows)((N), x, dz, dw, db, batch, m, lw)
#define TINY_PAIRS(N) KFN(tiny_weight_gradient_pairs)((N), x, dz, dw, db, batch, m, lw)
    if (m == 1) KFN(tiny_weight_gradient_column)(x, dz, dw, db, batch, n, lw);
    else if (m > 8) TINY_SWITCH(n, TINY_ROWS)
    else TINY_SWITCH(n, TINY_PAIRS)
#undef TINY_ROWS
#undef TINY_PAIRS
}

static KATTR __attribute__((noinline)) void KFN(tiny_input_gradient_any)(const float *dz, const float *w, float *dx,
                                                                         const float *below, long batch, long n, long m) {
#define TINY_DX(M) KFN(tiny_input_gradient)((M), dz, w, dx, below, batch, n)
    TINY_SWITCH(m, TINY_DX)
#undef TINY_DX
}
