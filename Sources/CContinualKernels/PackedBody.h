// The packed products of KernelBody.h (which includes this file once per kernel path; no include
// guard on purpose): operands copied into contiguous panels a cache block at a time, then the
// register tiles run over them. A path may bring its own tile for one packed 16-column strip
// (the AVX-512 path: one 16-float vector per row, WideTile.h) by defining
//   KPR                    rows of its full tile (and of a packed A panel; CK_MC is a multiple),
//   KPTILE(R, pn, A, ars, aps, pack, C, ldc, start)   the tile of R ≤ KPR rows,
//   KPROWS(M, CALL)        the row loop calling CALL(R, i) for tiles covering rows [0, M);
// otherwise KernelBody.h's `tile` (two 8-float vectors per row, KMR rows) runs. Every element is
// the same one chain either way.

#ifndef KPTILE
#define KPR KMR
#define KPTILE(R, pn, A, ars, aps, pack, C, ldc, start) \
    KFN(tile)((R), 2, (pn), (A), (ars), (aps), (pack), 16, (C), (ldc), (start), CK_EP_NONE, 0, 0, 0)
#define KPROWS(M, CALL) KROWS(KPR, CALL)
#endif

/// A's rows [ic, ic + mn) × steps [pc, pc + pn) in panels of KPR rows: a(ic + q·KPR + r, pc + p)
/// at apack[q·KPR·pn + p·KPR + r], so a tile reads its rows' values at one address per step.
KINL void KFN(pack_a)(float *apack, const float *A, long ars, long aps, long ic, long mn, long pc, long pn) {
    for (long q = 0; q * KPR < mn; q++) {
        long rn = mn - q * KPR < KPR ? mn - q * KPR : KPR;
        float *dst = apack + q * KPR * pn;
        const float *src = A + (ic + q * KPR) * ars + pc * aps;
        for (long p = 0; p < pn; p++)
            for (long r = 0; r < rn; r++) dst[p * KPR + r] = src[r * ars + p * aps];
    }
}

/// B's rows [pc, pc + pn) × columns [j, j + NW) (NW a multiple of 8), contiguous NW floats per row.
KINL void KFN(pack_b)(const int NW, float *pack, const float *B, long ldb, long pc, long pn, long j) {
    for (long p = 0; p < pn; p++) {
        const float *src = B + (pc + p) * ldb + j;
        for (int v = 0; v < NW; v += 8) CK_ST(pack + p * NW + v, CK_LD(src + v));
    }
}

/// C[0..<mn, 0..<16] += the packed A block × a packed 16-column B strip (pn steps), tile by
/// tile; `start` (when not null) replaces C's values as the chains' start.
KINL void KFN(packed_block)(const float *apack, const float *pack, long M, long pn, float *C, long ldc,
                            const float *start) {
#define KCALL(R, i) KPTILE((R), pn, apack + ((i) / KPR) * KPR * pn + (i) % KPR, 1, KPR, pack, C + (i) * ldc, ldc, start)
    KPROWS(M, KCALL);
#undef KCALL
}

#ifdef KPTILE32
#include "PanelBody.h"
#endif

#ifndef CK_PB
#define CK_PB 256   /* steps of p per block */
#define CK_MC 120   /* rows of A per packed block (a multiple of every KPR) */
/* A is packed when the core's L2 is under 1 MiB and its rows are 4 kB apart or more (they then
   fall into the same L1 sets) or a block of it (CK_PACK_A_ROWS × CK_PB floats, 1 MB) would not
   stay in L2 while every strip of B reads it; otherwise packing measured up to 3 % slower (512
   rows at 512 or 256 wide) there. With 1 MiB of L2 or more, never: reading A in place measured
   5–15 % faster at 1024 and 2048 wide (ck_pack_a_wanted, Kernels.c). */
#endif

/// The same chains with the operands packed. B a 16-column × CK_PB-row block at a time (16 kB,
/// contiguous: wide row strides would map a strip's rows onto a few cache sets). Where
/// ck_pack_a_wanted says so (the comment above CK_PB), A too: for
/// each block of CK_PB steps of p, up to CK_MC rows at a time (`pack_a`, ≤ 120 kB: below
/// glibc's mmap threshold, so malloc reuses it), reused by every 16-column strip of B, whose
/// pack is reused by every panel (W = 1024, batch 512, one thread: forward 39.8 → 41.3, weight
/// gradient 35.3 → 40.1 GFLOP/s; docs/benchmarks.md). Each C element is still one chain over p
/// in order, resumed from memory at each block of p, so the result is `gemm_direct`'s bit for
/// bit. Narrow B or few rows: `gemm_direct` (B in place).
static KATTR __attribute__((noinline)) void KFN(gemm)(long M, long j0, long j1, long P,
        const float *A, long ars, long aps, const float *B, long ldb, float *C, long ldc, const float *init) {
#ifdef KPTILE32
    // 9–12 rows less than 4 kB apart on the two-unit layouts: gemm_direct's one tile per strip
    // (KPROWS12) reads B in place, since a packed copy would be read once too (a first layer's
    // 10 × 128 → 1024 weight gradient, Zen 5 kind: 25 → 16 µs).
    const int one_tile = M <= CK_WIDE_ROWS_MAX && ars < 1024 && ck_panels_wanted();
#else
    const int one_tile = 0;
#endif
    if (ldb <= 64 || M < 8 || P == 0 || one_tile) { KFN(gemm_direct)(M, j0, j1, P, A, ars, aps, B, ldb, C, ldc, init); return; }
#ifdef KPTILE32
    // The panel products (PanelBody.h) where ck_panels_wanted says so, for products of at least
    // CK_PANEL_ROWS rows and CK_PANEL_COLUMNS columns: each packed panel of A serves every strip
    // of B, so with few strips packing A does not pay (512 × 128 → 128: the 8-row tiles below
    // ran the forward at 166 GFLOP/s, the panels at 83–129).
    float *bpack;
    if (M >= CK_PANEL_ROWS && j1 - j0 >= CK_PANEL_COLUMNS && ck_panels_wanted() && (bpack = (float *)malloc(sizeof(float) * CK_PKC * (size_t)(j1 - j0)))) {
        long done = KFN(gemm_panels)(M, j0, j1, P, A, ars, aps, B, ldb, 0, C, ldc, init, 32, bpack, CK_EP_NONE, 0);
        free(bpack);
        if (done < j1) KFN(gemm_direct)(M, done, j1, P, A, ars, aps, B, ldb, C, ldc, init);
        return;
    }
#endif
    float pack[CK_PB * 16] __attribute__((aligned(64)));
    float *apack = 0;
    if (j1 - j0 < 16 || !ck_pack_a_wanted(ars, M) || !(apack = (float *)malloc(sizeof(float) * CK_MC * CK_PB))) {
        // B only, A read in place.
        long j = j0;
#ifdef KPTILE32
        for (; j + 32 <= j1; j += 32) {  // 32-column strips, CK_PB / 2 steps at a time (16 kB)
            for (long pc = 0; pc < P; pc += CK_PB / 2) {
                long pn = P - pc < CK_PB / 2 ? P - pc : CK_PB / 2;
                KFN(pack_b)(32, pack, B, ldb, pc, pn, j);
                const float *Ap = A + pc * aps;
#define KCALL(R, i) KPTILE32((R), pn, Ap + (i) * ars, ars, aps, pack, C + (i) * ldc + j, ldc, (pc == 0 && init) ? init + j : 0)
                if (ars < 1024 && ck_panels_wanted()) KPROWSN(8, M, KCALL);  // as gemm_direct's rows8
                else KPROWS(M, KCALL);
#undef KCALL
            }
        }
#endif
        for (; j + 16 <= j1; j += 16) {
            for (long pc = 0; pc < P; pc += CK_PB) {
                long pn = P - pc < CK_PB ? P - pc : CK_PB;
                KFN(pack_b)(16, pack, B, ldb, pc, pn, j);
                const float *Ap = A + pc * aps;
#define KCALL(R, i) KPTILE((R), pn, Ap + (i) * ars, ars, aps, pack, C + (i) * ldc + j, ldc, (pc == 0 && init) ? init + j : 0)
                KPROWS(M, KCALL);
#undef KCALL
            }
        }
        if (j < j1) KFN(gemm_direct)(M, j, j1, P, A, ars, aps, B, ldb, C, ldc, init);
        return;
    }
    long jend = j0 + (j1 - j0) / 16 * 16;
    for (long pc = 0; pc < P; pc += CK_PB) {
        long pn = P - pc < CK_PB ? P - pc : CK_PB;
        for (long ic = 0; ic < M; ic += CK_MC) {
            long mn = M - ic < CK_MC ? M - ic : CK_MC;
            KFN(pack_a)(apack, A, ars, aps, ic, mn, pc, pn);
            for (long j = j0; j < jend; j += 16) {
                KFN(pack_b)(16, pack, B, ldb, pc, pn, j);
                KFN(packed_block)(apack, pack, mn, pn, C + ic * ldc + j, ldc, (pc == 0 && init) ? init + j : 0);
            }
        }
    }
    free(apack);
    if (jend < j1) KFN(gemm_direct)(M, jend, j1, P, A, ars, aps, B, ldb, C, ldc, init);
}

#undef KPR
#undef KPTILE
#undef KPROWS
#undef KPTILE32
#undef KDTILE
