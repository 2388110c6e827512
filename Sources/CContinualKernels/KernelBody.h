// The dense-layer kernels, written once and compiled once per kernel path: Kernels.c defines
// KATTR (target attributes), KFN(name) (per-path names), KMR/KMR1 (rows per register tile with
// two / one 8-float vectors per row), MADDV(a, b, acc) and MADDS(a, b, acc) (vector and scalar
// multiply-add: fused on FMA paths, product and sum rounded separately on the generic path),
// then includes this file. No include guard on purpose.
//
// Invariant (see ContinualKernels.h): every output element is one chain
//     c ← MADD(a_p, b_p, c)  for p = 0, 1, ..., P-1
// starting from the value in memory. Vector lanes and the scalar tails use the same MADD, and a
// partial chain stored to memory and reloaded is exact, so tile shapes, cache blocks and
// thread partitions never change a result.

#define KINL static inline __attribute__((always_inline)) KATTR

// Unaligned 8-float load and store (macros: a function returning a 256-bit vector would change
// the ABI of the generic path, -Wpsabi).
#ifndef CK_LD
#define CK_LD(p) ({ v8 v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })
#define CK_ST(p, v) do { v8 w_ = (v); __builtin_memcpy((p), &w_, sizeof w_); } while (0)
/* Epilogues a tile applies to its values as it stores them (selections only, so the bits of a
   separate ck_relu_forward / ck_relu_backward pass): none; ReLU (v <= 0 ? +0 : v); the mask of
   the ReLU below (m > 0 ? v : +0, m read at the element's place in a matrix of row stride ldm).
   CK_EP_SGD (WideTile.h's ztile only): C holds parameters and the tile's values are their
   gradient g; C ← C − lr·(g + wd·C), ck_sgd_update's arithmetic, with em = {lr, wd}. */
#define CK_EP_NONE 0
#define CK_EP_RELU 1
#define CK_EP_MASK 2
#define CK_EP_SGD 3
#define CK_EPV(v, ep, mp) ((ep) == CK_EP_RELU ? (v8)((v8i)(v) & ~((v) <= 0)) \
    : (ep) == CK_EP_MASK ? (v8)((v8i)(v) & (CK_LD(mp) > 0)) : (v))
#define CK_EPS(v, ep, mp) ((ep) == CK_EP_RELU ? ((v) <= 0 ? 0.0f : (v)) \
    : (ep) == CK_EP_MASK ? (*(mp) > 0 ? (v) : 0.0f) : (v))
#endif

/// C[r, 0..<8·NV] chains over p with a(r, p) = A[r·ars + p·aps], b(p) = B[p·ldb ..].
/// `init` (when not null) replaces C's values as every row's start: the bias, or zeros.
/// `ep` (CK_EP_*) is applied as C is stored; `em`, `ldm`: the mask matrix of CK_EP_MASK, at C's place.
/// `sum` (when not null): sum[0..<8·NV] += Σ_p B[p, ·] as one chain of additions per element in
/// p order (the bias gradient, Σ_s dz[s], from the B rows the tile loads anyway).
KINL void KFN(tile)(const int MR, const int NV, long P, const float *A, long ars, long aps,
                    const float *B, long ldb, float *C, long ldc, const float *init,
                    int ep, const float *em, long ldm, float *sum) {
    v8 acc[8][2];
    v8 sv[2] = {0, 0};
    if (sum)
        for (int v = 0; v < NV; v++) sv[v] = CK_LD(sum + 8 * v);
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = init ? CK_LD(init + 8 * v) : CK_LD(C + r * ldc + 8 * v);
    for (long p = 0; p < P; p++) {
        const float *bp = B + p * ldb;
        const float *ap = A + p * aps;
        v8 b0 = CK_LD(bp);
        v8 b1 = NV > 1 ? CK_LD(bp + 8) : b0;
        for (int r = 0; r < MR; r++) {
            v8 a = (v8)(ap[r * ars]);
            acc[r][0] = MADDV(a, b0, acc[r][0]);
            if (NV > 1) acc[r][1] = MADDV(a, b1, acc[r][1]);
        }
        if (sum) {
            sv[0] = sv[0] + b0;
            if (NV > 1) sv[1] = sv[1] + b1;
        }
    }
    if (sum)
        for (int v = 0; v < NV; v++) CK_ST(sum + 8 * v, sv[v]);
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) CK_ST(C + r * ldc + 8 * v, CK_EPV(acc[r][v], ep, em + r * ldm + 8 * v));
}

/// The same chains for fewer than 8 columns (NC ≤ 4), scalar: MR·NC independent chains.
KINL void KFN(stile)(const int MR, const int NC, long P, const float *A, long ars, long aps,
                     const float *B, long ldb, float *C, long ldc, const float *init,
                     int ep, const float *em, long ldm) {
    float acc[8][4];
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NC; c++) acc[r][c] = init ? init[c] : C[r * ldc + c];
    for (long p = 0; p < P; p++) {
        const float *bp = B + p * ldb;
        const float *ap = A + p * aps;
        float b[4];
        for (int c = 0; c < NC; c++) b[c] = bp[c];
        for (int r = 0; r < MR; r++) {
            float a = ap[r * ars];
            for (int c = 0; c < NC; c++) acc[r][c] = MADDS(a, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < MR; r++)
        for (int c = 0; c < NC; c++) C[r * ldc + c] = CK_EPS(acc[r][c], ep, em + r * ldm + c);
}

/// Fewer than 8 columns when A's rows are adjacent in memory (ars = 1: the weight gradient, where
/// C's rows are inputs): 8 rows in one vector per column, the same chains as `stile`.
KINL void KFN(ttile)(const int NC, long P, const float *A, long aps, const float *B, long ldb,
                     float *C, long ldc, const float *init, int ep, const float *em, long ldm) {
    v8 acc[4];
    for (int c = 0; c < NC; c++) {
        if (init) {
            acc[c] = (v8)(init[c]);
        } else {
            for (int r = 0; r < 8; r++) acc[c][r] = C[r * ldc + c];
        }
    }
    for (long p = 0; p < P; p++) {
        v8 a = CK_LD(A + p * aps);
        const float *bp = B + p * ldb;
        for (int c = 0; c < NC; c++) acc[c] = MADDV(a, (v8)(bp[c]), acc[c]);
    }
    for (int c = 0; c < NC; c++)
        for (int r = 0; r < 8; r++) C[r * ldc + c] = CK_EPS(acc[c][r], ep, em + r * ldm + c);
}

/// Rows [0, M) of one column strip: full tiles of R rows, then one tile of the remaining rows.
#define KROWS(R, CALL) KROWS_FROM(0, R, CALL)
/// Rows [I0, M) of one column strip, the same way.
#define KROWS_FROM(I0, R, CALL)                                                            \
    do {                                                                                   \
        long i = (I0);                                                                     \
        for (; i + (R) <= M; i += (R)) CALL((R), i);                                       \
        switch (M - i) {                                                                   \
        case 7: if ((R) > 7) CALL(7 % (R), i); break;                                      \
        case 6: if ((R) > 6) CALL(6 % (R), i); break;                                      \
        case 5: if ((R) > 5) CALL(5 % (R), i); break;                                      \
        case 4: if ((R) > 4) CALL(4 % (R), i); break;                                      \
        case 3: if ((R) > 3) CALL(3 % (R), i); break;                                      \
        case 2: if ((R) > 2) CALL(2 % (R), i); break;                                      \
        case 1: CALL(1, i); break;                                                         \
        default: break;                                                                    \
        }                                                                                  \
    } while (0)

#ifdef CK_WIDE_TILE
#include "WideTile.h"
#endif

/// C[i, j] for i < M, j in [j0, j1): chains over p < P of A(i, p)·B[p, j], unpacked, stored
/// through the epilogue `ep` (mask matrix `em`, row stride `ldm`, indexed like C).
/// `colsum` (when not null): colsum[j] += Σ_p B[p, j] for the columns of whole 8-column strips
/// (j < j0 + 8·⌊(j1 − j0)/8⌋), one chain per column in p order, by the tiles of row 0.
static KATTR __attribute__((noinline)) void KFN(gemm_direct_ep)(long M, long j0, long j1, long P,
        const float *A, long ars, long aps, const float *B, long ldb, float *C, long ldc, const float *init,
        int ep, const float *em, long ldm, float *colsum) {
#define KEM(i, j) (em ? em + (i) * ldm + (j) : 0)
    long j = j0;
    // Rows in tiles of KMR, or of 4 where that leaves no tail and KMR would (32 rows: 8 × 4
    // instead of 5 × 6 + a 2-row tile whose 4 chains wait on the FMA latency; measured 1.4× on the
    // seed model's 32 × 10 → 16 forward).
    const int four = KMR > 4 && M % KMR != 0 && M % 4 == 0;  // (the rows after a column-sum tile too)
#ifdef CK_WIDE_TILE
    // On cores with two 512-bit FMA units (ck_panels_wanted), rows less than 4 kB apart run 8 to a tile (16 chains
    // in flight for two FMA units; 512 × 64 → 64, medians of 5 alternated: forward 142 → 162,
    // weight gradient 69 → 115 GFLOP/s) and the epilogues run on these tiles too; elsewhere 4
    // rows, as measured on the AMD kind (WideTile.h), without epilogues.
    const int rows8 = ars < 1024 && ck_panels_wanted();
#endif
    for (; j + 16 <= j1; j += 16) {
        long i0 = 0;
        if (colsum) {
            // The column sums ride on a tile of at most 4 rows: its 8 accumulators and 2 sums
            // fit the 16 vector registers (with 6 rows they spilled: 1.8× slower).
#define KSUM(R) KFN(tile)((R), 2, P, A, ars, aps, B + j, ldb, C + j, ldc, init ? init + j : 0, ep, KEM(0, j), ldm, colsum + j)
            const long sr = M < (KMR < 4 ? KMR : 4) ? M : (KMR < 4 ? KMR : 4);  // generic: KMR = 2
            switch (sr) { case 4: KSUM(4); break; case 3: KSUM(3); break; case 2: KSUM(2); break; case 1: KSUM(1); break; }
#undef KSUM
            i0 = sr;
        }
#define KCALL(R, i) KFN(tile)((R), 2, P, A + (i) * ars, ars, aps, B + j, ldb, C + (i) * ldc + j, ldc, init ? init + j : 0, ep, KEM(i, j), ldm, 0)
#ifdef CK_WIDE_TILE
        if (i0 == 0 && M >= KPR && (ep == CK_EP_NONE || rows8)) {  // 16-float tiles (WideTile.h): 32 columns, else 16
#define KZCALL(NV, R, i) KDTILE((R), (NV), P, A + (i) * ars, ars, aps, B + j, ldb, C + (i) * ldc + j, ldc, init ? init + j : 0, ep, KEM(i, j), ldm)
#define KZCALL2(R, i) KZCALL(2, R, i)
#define KZCALL1(R, i) KZCALL(1, R, i)
            if (rows8) {
                if (j + 32 <= j1) { KPROWS12(M, KZCALL2); j += 16; }
                else KPROWSN(8, M, KZCALL1);
            } else if (j + 32 <= j1) {
                KPROWS(M, KZCALL2);
                j += 16;  // and the loop's 16
            } else {
                KPROWS(M, KZCALL1);
            }
#undef KZCALL1
#undef KZCALL2
#undef KZCALL
            continue;
        }
#endif
        if (four) KROWS_FROM(i0, 4, KCALL);
        else KROWS_FROM(i0, KMR, KCALL);
#undef KCALL
    }
    if (j + 8 <= j1) {
#define KCALL(R, i) do { /* separate copies with and without the sum: no spill in the plain one */ \
        if ((i) == 0 && colsum) KFN(tile)((R), 1, P, A, ars, aps, B + j, ldb, C + j, ldc, init ? init + j : 0, ep, KEM(0, j), ldm, colsum + j); \
        else KFN(tile)((R), 1, P, A + (i) * ars, ars, aps, B + j, ldb, C + (i) * ldc + j, ldc, init ? init + j : 0, ep, KEM(i, j), ldm, 0); \
    } while (0)
        KROWS(KMR1, KCALL);
#undef KCALL
        j += 8;
    }
    if (ars == 1 && M >= 8) {
        while (j < j1) {
            long nc = j1 - j < 4 ? j1 - j : 4;
            long i = 0;
            for (; i + 8 <= M; i += 8) {
                const float *in = init ? init + j : 0;
                float *c = C + i * ldc + j;
                switch (nc) {
                case 4: KFN(ttile)(4, P, A + i, aps, B + j, ldb, c, ldc, in, ep, KEM(i, j), ldm); break;
                case 3: KFN(ttile)(3, P, A + i, aps, B + j, ldb, c, ldc, in, ep, KEM(i, j), ldm); break;
                case 2: KFN(ttile)(2, P, A + i, aps, B + j, ldb, c, ldc, in, ep, KEM(i, j), ldm); break;
                default: KFN(ttile)(1, P, A + i, aps, B + j, ldb, c, ldc, in, ep, KEM(i, j), ldm); break;
                }
            }
            for (; i < M; i++) {
                for (long c = 0; c < nc; c++) {
                    float acc = init ? init[j + c] : C[i * ldc + j + c];
                    for (long p = 0; p < P; p++) acc = MADDS(A[i + p * aps], B[p * ldb + j + c], acc);
                    C[i * ldc + j + c] = CK_EPS(acc, ep, KEM(i, j + c));
                }
            }
            j += nc;
        }
        return;
    }
    while (j < j1) {
        long nc = j1 - j;
        if (nc >= 4) {
#define KCALL(R, i) KFN(stile)((R), 4, P, A + (i) * ars, ars, aps, B + j, ldb, C + (i) * ldc + j, ldc, init ? init + j : 0, ep, KEM(i, j), ldm)
            KROWS(2, KCALL);
#undef KCALL
            j += 4;
        } else if (nc >= 2) {
#define KCALL(R, i) KFN(stile)((R), 2, P, A + (i) * ars, ars, aps, B + j, ldb, C + (i) * ldc + j, ldc, init ? init + j : 0, ep, KEM(i, j), ldm)
            KROWS(4, KCALL);
#undef KCALL
            j += 2;
        } else {
#define KCALL(R, i) KFN(stile)((R), 1, P, A + (i) * ars, ars, aps, B + j, ldb, C + (i) * ldc + j, ldc, init ? init + j : 0, ep, KEM(i, j), ldm)
            KROWS(8, KCALL);
#undef KCALL
            j += 1;
        }
    }
#undef KEM
}

static KATTR void KFN(gemm_direct)(long M, long j0, long j1, long P, const float *A, long ars, long aps,
                                   const float *B, long ldb, float *C, long ldc, const float *init) {
    KFN(gemm_direct_ep)(M, j0, j1, P, A, ars, aps, B, ldb, C, ldc, init, CK_EP_NONE, 0, 0, 0);
}

#include "Transpose8.h"

/// pack[p·ld + c] = w[c·ldw + p] for c < kn, p < pn: a block of w transposed, 8 × 8 in
/// registers where whole blocks fit (a scalar copy measured 6 % of a 1024-wide step).
KINL void KFN(pack_wt)(float *pack, long ld, const float *w, long ldw, long kn, long pn) {
    long c8 = kn / 8 * 8, p8 = pn / 8 * 8;
    for (long c = 0; c < c8; c += 8)
        for (long p = 0; p < p8; p += 8) {
            v8 col[8];
            KFN(transpose8)(w + c * ldw + p, ldw, col);
            for (int q = 0; q < 8; q++) CK_ST(pack + (p + q) * ld + c, col[q]);
        }
    for (long c = 0; c < kn; c++)
        for (long p = c < c8 ? p8 : 0; p < pn; p++) pack[p * ld + c] = w[c * ldw + p];
}

#include "PackedBody.h"
#include "ColumnBody.h"

static KATTR void KFN(forward)(const float *x, const float *w, const float *b, float *y,
                               long batch, long inputs, long outputs, long j0, long j1) {
    if (outputs == 1) { KFN(column_forward)(x, w, b, y, batch, inputs, CK_EP_NONE); return; }
    KFN(gemm)(batch, j0, j1, inputs, x, inputs, 1, w, outputs, y, outputs, b);
}

#include "GradientBody.h"

/// dx = dz·wᵀ for batch ≤ 4 (EWC's per-sample Fisher, one-sample training): eight rows of w are
/// loaded at a time and transposed in registers 8 × 8, so each dx[s, k..k+7] is one vector of the
/// same chains (from 0, over the outputs in order); packing wᵀ cost more than the products here.
KINL void KFN(input_gradient_small)(const float *dz, const float *w, float *dx,
                                    long batch, long inputs, long outputs, long k0, long k1) {
    long k = k0;
    for (; k + 8 <= k1; k += 8) {
        v8 acc[4] = {0, 0, 0, 0};
        const float *wk = w + k * outputs;
        long j = 0;
        for (; j + 8 <= outputs; j += 8) {
            // column c of the block: w[k + 0..7, j + c]
            v8 c[8];
            KFN(transpose8)(wk + j, outputs, c);
            for (long s = 0; s < batch; s++) {
                const float *d = dz + s * outputs + j;
                v8 a = acc[s];
                for (int q = 0; q < 8; q++) a = MADDV((v8)(d[q]), c[q], a);
                acc[s] = a;
            }
        }
        for (; j < outputs; j++) {
            v8 col;
            for (int r = 0; r < 8; r++) col[r] = wk[r * outputs + j];
            for (long s = 0; s < batch; s++) acc[s] = MADDV((v8)(dz[s * outputs + j]), col, acc[s]);
        }
        for (long s = 0; s < batch; s++) CK_ST(dx + s * inputs + k, acc[s]);
    }
    for (; k < k1; k++) {
        for (long s = 0; s < batch; s++) {
            float a = 0;
            for (long j = 0; j < outputs; j++) a = MADDS(dz[s * outputs + j], w[k * outputs + j], a);
            dx[s * inputs + k] = a;
        }
    }
}

/// dx = dz·wᵀ: wᵀ is packed a block at a time (KC columns of dx × PC outputs, 16 kB on the
/// stack), then the same chains as the other products run over it.
static KATTR void KFN(input_gradient)(const float *dz, const float *w, float *dx,
                                      long batch, long inputs, long outputs, long k0, long k1) {
    enum { KC = 32, PC = 128 };
    float pack[PC * KC];
    static const float zeros[KC] = {0};
    if (outputs <= 0) {
        for (long s = 0; s < batch; s++) __builtin_memset(dx + s * inputs + k0, 0, (size_t)(k1 - k0) * sizeof(float));
        return;
    }
    if (outputs == 1) { KFN(column_input_gradient)(dz, w, dx, 0, batch, inputs, k0, k1); return; }
    if (batch <= 4) { KFN(input_gradient_small)(dz, w, dx, batch, inputs, outputs, k0, k1); return; }
#ifdef CK_WIDE_TILE
    if (batch >= CK_PANEL_ROWS && outputs >= CK_PKC && k1 - k0 >= 32 && ck_panels_wanted()) {
        // dz's rows a panel at a time, wᵀ packed CK_PKC outputs at a time into 32-column strips.
        float *bpack = (float *)malloc(sizeof(float) * CK_PKC * (size_t)(k1 - k0));
        if (bpack) {
            k0 = KFN(gemm_panels)(batch, k0, k1, outputs, dz, outputs, 1, w, outputs, 1, dx, inputs, zeros, 0, bpack,
                                  CK_EP_NONE, 0);
            free(bpack);
            if (k0 == k1) return;
        }
    }
#endif
    for (long kc = k0; kc < k1; kc += KC) {
        long kn = k1 - kc < KC ? k1 - kc : KC;
        for (long pc = 0; pc < outputs; pc += PC) {
            long pn = outputs - pc < PC ? outputs - pc : PC;
            KFN(pack_wt)(pack, KC, w + kc * outputs + pc, outputs, kn, pn);
            KFN(gemm)(batch, 0, kn, pn, dz + pc, outputs, 1, pack, KC, dx + kc, inputs, pc == 0 ? zeros : 0);
        }
    }
}

#include "NarrowBody.h"

#undef KINL
