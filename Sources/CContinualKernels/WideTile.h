// The AVX-512 path's register tiles, included by KernelBody.h when the path defines CK_WIDE_TILE
// (no include guard on purpose): for the packed products (PackedBody.h) and gemm_direct's plain
// strips. A row of 16 columns is one 16-float vector, of 32 columns two, so a tile of KPR rows
// × 32 columns takes per step two loads of B and one broadcast of A per row for two fused
// multiply-adds (the 8-float paths: two loads and one broadcast per row for 16 columns). Each
// element is the same chain c ← fma(a_p, b_p, c) over p in order from the value in memory (or
// `init`), so the bits are the avx2-fma path's.

#define CK_WIDE_ROWS_MAX 12  /* the most rows a tile takes: PanelBody.h's panels */
typedef float v16 __attribute__((ext_vector_type(16)));
#define CK_LD16(p) ({ v16 v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })
#define CK_ST16(p, v) do { v16 w_ = (v); __builtin_memcpy((p), &w_, sizeof w_); } while (0)

#ifndef CK_WIDE_ROWS
#define CK_WIDE_ROWS 4  /* rows per full tile (A read in place with 4 kB row strides: more rows than
                            L1 ways evict each other). Measured at 1024 wide: one vector per row
                            with 4–24 rows (6 fastest), then two per row with 4, 6 and 8 (4 fastest:
                            forward 98 → 101, weight gradient 80 → 86–92 GFLOP/s at batch 32) */
#endif

typedef int v16i __attribute__((ext_vector_type(16)));
/// The epilogue (CK_EP_*, KernelBody.h) on a 16-float vector: the same selections as CK_EPV.
#define CK_EPV16(v, ep, mp) ((ep) == CK_EP_RELU ? (v16)((v16i)(v) & ~((v) <= 0)) \
    : (ep) == CK_EP_MASK ? (v16)((v16i)(v) & (CK_LD16(mp) > 0)) : (v))

/// Plain SGD on 16 parameters p with gradient g, lw = {lr, wd}: p − lr·(g + wd·p), rounded as
/// ck_sgd_update rounds it (Kernels.c contracts nothing).
KINL v16 KFN(sgd16)(v16 p, v16 g, const float *lw) { return CK_SGD_RULE(p, g, lw[0], lw[1]); }

/// C[r, 0..<16·NV] for r < MR (NV = 1 or 2 vectors per row): chains over p < P of
/// a(r, p) = A[r·ars + p·aps] times B[p·ldb ..]; with two vectors each broadcast value of A
/// feeds two multiply-adds. `ep` (CK_EP_*) is applied as C is stored (mask `em`, row stride `ldm`;
/// for CK_EP_SGD, em = {lr, wd} and the chains start from `init`, C holding the parameters).
/// `copy` (when not null): each row of B read is also stored there, 16·NV floats per step (the
/// panels' first tile packs its strip of B as it reads it in place).
KINL void KFN(ztile)(const int MR, const int NV, long P, const float *A, long ars, long aps,
                     const float *B, long ldb, float *C, long ldc, const float *init,
                     int ep, const float *em, long ldm, float *copy) {
    v16 acc[CK_WIDE_ROWS_MAX][2];
    _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = init ? CK_LD16(init + 16 * v) : CK_LD16(C + r * ldc + 16 * v);
    for (long p = 0; p < P; p++) {
        v16 b0 = CK_LD16(B + p * ldb), b1 = NV > 1 ? CK_LD16(B + p * ldb + 16) : b0;
        if (copy) {
            CK_ST16(copy + 16 * NV * p, b0);
            if (NV > 1) CK_ST16(copy + 16 * NV * p + 16, b1);
        }
        const float *ap = A + p * aps;
        _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++) {
            v16 a = (v16)(ap[r * ars]);
            acc[r][0] = MADDV(a, b0, acc[r][0]);
            if (NV > 1) acc[r][1] = MADDV(a, b1, acc[r][1]);
        }
    }
    _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) {
            float *c = C + r * ldc + 16 * v;
            if (ep == CK_EP_SGD) CK_ST16(c, KFN(sgd16)(CK_LD16(c), acc[r][v], em));
            else CK_ST16(c, CK_EPV16(acc[r][v], ep, em ? em + r * ldm + 16 * v : 0));
        }
}

#define KPR CK_WIDE_ROWS
/// Rows [0, M) in full tiles of N rows (N ≤ 8), then tiles of 4, 2 and 1 rows.
#define KPROWSN(N, M, CALL)                                                                 \
    do {                                                                                    \
        long i = 0;                                                                         \
        for (; i + (N) <= (M); i += (N)) CALL((N), i);                                      \
        if (4 < (N) && (M) - i >= 4) { CALL((4 < (N) ? 4 : 1), i); i += 4; }                \
        if (2 < (N) && (M) - i >= 2) { CALL((2 < (N) ? 2 : 1), i); i += 2; }                \
        if ((M) - i >= 1) { CALL(1, i); i += 1; }                                           \
    } while (0)
/// 9–12 rows as one tile (a first layer's weight gradient, 10 inputs: a tile of 8 rows and one of
/// 2, whose 4 chains wait on the multiply-add latency, took as long as two of 8); otherwise KPROWSN(8).
#define KPROWS12(M, CALL)                                                                   \
    do {                                                                                    \
        switch (M) {                                                                        \
        case 9: CALL(9, 0); break;                                                          \
        case 10: CALL(10, 0); break;                                                        \
        case 11: CALL(11, 0); break;                                                        \
        case 12: CALL(12, 0); break;                                                        \
        default: KPROWSN(8, M, CALL); break;                                                \
        }                                                                                   \
    } while (0)
/// Tiles of R rows × 16·NV columns over a packed strip (rows 16·NV floats apart), and over B in
/// place (row stride ldb) for gemm_direct's plain strips.
#define KPTILE(R, pn, A, ars, aps, pack, C, ldc, start) KFN(ztile)((R), 1, (pn), (A), (ars), (aps), (pack), 16, (C), (ldc), (start), CK_EP_NONE, 0, 0, 0)
#define KPTILE32(R, pn, A, ars, aps, pack, C, ldc, start) KFN(ztile)((R), 2, (pn), (A), (ars), (aps), (pack), 32, (C), (ldc), (start), CK_EP_NONE, 0, 0, 0)
#define KDTILE(R, NV, pn, A, ars, aps, B, ldb, C, ldc, start, ep, em, ldm) KFN(ztile)((R), (NV), (pn), (A), (ars), (aps), (B), (ldb), (C), (ldc), (start), (ep), (em), (ldm), 0)
/// Full tiles of KPR rows, then the rest in tiles of 16, 8, 4, 2 and 1 rows (each smaller than
/// KPR, so within the last packed panel, which starts at a multiple of KPR).
#define KPROWS(M, CALL)                                                                     \
    do {                                                                                    \
        long i = 0;                                                                         \
        for (; i + KPR <= (M); i += KPR) CALL(KPR, i);                                      \
        if (16 < KPR && (M) - i >= 16) { CALL((16 < KPR ? 16 : 1), i); i += 16; }           \
        if (8 < KPR && (M) - i >= 8) { CALL((8 < KPR ? 8 : 1), i); i += 8; }                \
        if (4 < KPR && (M) - i >= 4) { CALL((4 < KPR ? 4 : 1), i); i += 4; }                \
        if (2 < KPR && (M) - i >= 2) { CALL((2 < KPR ? 2 : 1), i); i += 2; }                \
        if ((M) - i >= 1) { CALL(1, i); i += 1; }                                           \
    } while (0)
