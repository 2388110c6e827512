// The AVX-512 path's panel products, included by PackedBody.h on that path only (no include
// guard on purpose): GotoBLAS-style packing for cores with two 512-bit FMA units (the Intel and Zen 5
// kinds, docs/benchmarks.md), where the in-place 4-row tiles of WideTile.h keep only 8 multiply-adds in
// flight — a quarter of what two units with a 4-cycle latency can take — and reached 83–97
// GFLOP/s against OpenBLAS's 144–153 on one core.
//
// For each block of CK_PKC steps of p, B's columns [j0, j1) are packed once into 32-column strips
// (CK_PKC × 32 floats each, read from L2); then A a panel of CK_PMR rows at a time (CK_PMR × CK_PKC
// floats, 12 kB: it stays in L1 while every strip of B streams past it), and a tile of CK_PMR rows
// × 32 columns (24 accumulators in the 32 vector registers) runs over each strip. Each C element is
// still the one chain c ← fma(a_p, b_p, c) over p in order, resumed from memory at each block of p
// (from `init` at the first), so the bits are gemm_direct's and every other path's.

#define CK_PMR 12   /* rows per panel: 12 × 2 accumulators + 2 of B + a broadcast ≤ 32 registers */
#define CK_PKC 256  /* steps of p per block: B's packed block is CK_PKC × (j1 − j0) floats (1 MB at
                       1024 columns, in a 2 MiB L2). Measured at 512 × 1024 × 1024, one thread:
                       128 or 256 steps with the A panel held in L1 beat 512 or 1024 with the B
                       strip held there instead (120–137 against 111–132 GFLOP/s) */

// CK_PANEL_ROWS and CK_PANEL_COLUMNS (Kernels.c): the fewest rows and columns (of this thread's
// range) of C that take the panels.

/// C[r, 0..<32] for r < MR: chains over p < P of a(r, p) = ap[p·aps + r] times bp[32·p ..]
/// (WideTile.h's tile, reading the panel and a packed strip).
#define KPANELTILE(R, P, ap, aps, bp, C, ldc, init, ep, em) KFN(ztile)((R), 2, (P), (ap), 1, (aps), (bp), 32, (C), (ldc), (init), (ep), (em), 0, 0)

/// A's rows [i, i + rn) × steps [pc, pc + pn) into one panel: a(i + r, pc + p) at panel[p·CK_PMR + r].
KINL void KFN(ppack_a)(float *panel, const float *A, long ars, long aps, long i, long rn, long pc, long pn) {
    const float *src = A + i * ars + pc * aps;
    if (aps == 1) {  // rows contiguous: read each row once
        for (long r = 0; r < rn; r++)
            for (long p = 0; p < pn; p++) panel[p * CK_PMR + r] = src[r * ars + p];
    } else {
        for (long p = 0; p < pn; p++)
            for (long r = 0; r < rn; r++) panel[p * CK_PMR + r] = src[r * ars + p * aps];
    }
}

/// One panel's rows (rn ≤ CK_PMR) over every packed strip: a full tile, or tiles of 8, 4, 2, 1 rows.
/// Strip s starts its chains at init + s·init_step (when init is not null).
KINL void KFN(panel_row)(const float *panel, long rn, long pn, const float *bpack, long strips, float *C,
                         long ldc, const float *init, long init_step, int ep, const float *em) {
    for (long s = 0; s < strips; s++) {
        const float *bp = bpack + s * 32 * pn;
        float *c = C + 32 * s;
        const float *st = init ? init + s * init_step : 0;
#define KCALL(R, r) KPANELTILE((R), pn, panel + (r), CK_PMR, bp, c + (r) * ldc, ldc, st, ep, em)
        if (rn == CK_PMR) KCALL(CK_PMR, 0);
        else KPROWSN(8, rn, KCALL);  // rn < 12: at most one tile of 8, then 4, 2, 1
#undef KCALL
    }
}

/* With few panels of A per block of B (CK_PANEL_COPY_ROWS rows or fewer) and B read in place,
   the first panel's tiles read each strip of B in place and store the packed copy (ztile's
   `copy`): the packing's loads (W's rows, 4 kB apart, from L3) then wait beside that panel's
   multiply-adds instead of in a pass of their own with the FMA units idle. W = 1024, 1024 × 1024
   forward, Zen 5 kind, one thread, medians of 21 alternated in one process, three runs: batch
   128 1,208–1,256 → 1,151–1,217 µs, 256 2,328–2,352 → 2,270–2,326, but 512 4,633–4,742 →
   4,666–4,853 (so not there). Not for wᵀ, which pack_wt transposes: transposing it 8 steps at a
   time inside the first tile, or on 16-float vectors, measured no faster. Prefetching the next
   strip's source from the first panel's tiles instead gained 1–3.5 % on these products alone
   (the forward at 512, the input gradient) but nothing in a training step (`continual bench`,
   10-1024-1024-2, medians of 7: batch 128 3,539 → 3,528 µs, 512 14,348 → 14,441). */
#define CK_PANEL_COPY_ROWS 256

/// C[i, j] for i < M and j in [j0, jend), jend = j0 + 32·⌊(j1 − j0)/32⌋: gemm's chains through
/// panels; returns jend (the caller does the columns past the last whole strip). B(p, j) is
/// B[p·ldb + j], or B[j·ldb + p] when `bt` (wᵀ, for the input gradient: packed by pack_wt).
/// The chains start at init + j (`init_step` 32) or at init[0 ..< 32] for every strip (0: zeros).
/// `bpack` holds CK_PKC × 32·⌊(j1 − j0)/32⌋ floats. `ep`, `em`: the epilogue (CK_EP_NONE, or
/// CK_EP_SGD with P ≤ CK_PKC, where every chain completes in one block of p).
static KATTR __attribute__((noinline)) long KFN(gemm_panels)(long M, long j0, long j1, long P,
        const float *A, long ars, long aps, const float *B, long ldb, int bt, float *C, long ldc,
        const float *init, long init_step, float *bpack, int ep, const float *em) {
    if (ep == CK_EP_SGD && P > CK_PKC) __builtin_trap();  // an update after a partial chain
    float panel[CK_PMR * CK_PKC] __attribute__((aligned(64)));
    long strips = (j1 - j0) / 32;
    for (long pc = 0; pc < P; pc += CK_PKC) {
        long pn = P - pc < CK_PKC ? P - pc : CK_PKC;
        const float *st = (pc == 0 && init) ? init + (init_step ? j0 : 0) : 0;
        long i = 0;
        if (!bt && M >= CK_PMR && M <= CK_PANEL_COPY_ROWS) {  // the first panel, packing B as it reads it
            KFN(ppack_a)(panel, A, ars, aps, 0, CK_PMR, pc, pn);
            for (long s = 0; s < strips; s++)
                KFN(ztile)(CK_PMR, 2, pn, panel, 1, CK_PMR, B + pc * ldb + j0 + 32 * s, ldb, C + j0 + 32 * s, ldc,
                           st ? st + s * init_step : 0, ep, em, 0, bpack + s * 32 * pn);
            i = CK_PMR;
        } else {
            for (long s = 0; s < strips; s++) {
                if (bt) KFN(pack_wt)(bpack + s * 32 * pn, 32, B + (j0 + 32 * s) * ldb + pc, ldb, 32, pn);
                else KFN(pack_b)(32, bpack + s * 32 * pn, B, ldb, pc, pn, j0 + 32 * s);
            }
        }
        for (; i < M; i += CK_PMR) {
            long rn = M - i < CK_PMR ? M - i : CK_PMR;
            KFN(ppack_a)(panel, A, ars, aps, i, rn, pc, pn);
            KFN(panel_row)(panel, rn, pn, bpack, strips, C + i * ldc + j0, ldc, st, init_step, ep, em);
        }
    }
    return j0 + 32 * strips;
}
