// The binary loss's two functions (Losses.c) on every float of their domains, on every kernel
// path this CPU runs:
//   exp: every float in [−88, −0] through ck_exp_nonpositive against the C library's expf — the
//        check behind the claim that the loss's exponential is glibc's (its FMA build) bit for bit;
//   log1p: every float in [0, 1] through ck_log1p_unit against (a) numerics version 3's log1p as
//        first written (the same series in Horner's order, copied below) — the check behind the
//        claim that its reordered polynomial keeps the bits — and (b) float64 log1p rounded to
//        float32 — "correctly rounded but on one float".
// Not run by CI (about 15 s a path, both functions, on the Zen 5 kind); rerun it when Losses.c or the C
// library changes. Build it with clang, as SwiftPM builds the package (gcc would fuse a·b + c into
// an fma in the AVX2 and AVX-512 clones, which clang's `fp contract(off)` forbids):
//
//   clang -O2 -ISources/CContinualKernels/include Experiments/tools/loss_exhaustive.c \
//      Sources/CContinualKernels/Losses.c Sources/CContinualKernels/Paths.c -lm -o /tmp/loss_exhaustive
//   /tmp/loss_exhaustive
//
// Prints, per path and function, how many values differ and the first; exit status 1 if any
// exponential differs, any log1p differs from (a), or more than one from (b).
#include "ContinualKernels.h"
#include "ContinualLosses.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#pragma clang fp contract(off)

/// Version 3's log1p as first written: Horner's order throughout, two divisions.
static double version3(double x) {
    const int upper = x > 0.41421356237309503;
    const double s = upper ? (x - 1.0) / (x + 3.0) : x / (2.0 + x);
    const double t = s * s;
    double p = 1.0 / 21;
    for (int d = 19; d >= 1; d -= 2) p = p * t + 1.0 / d;
    return (upper ? 0.6931471805599453 : 0.0) + (2.0 * s) * p;
}

enum { BLOCK = 4096 };

/// Counts of differences over the floats with bit patterns [lo, hi], in blocks through `f`.
typedef struct { long total, first_check, second_check; uint32_t first, second; } tally;

static void count(tally *t, uint32_t bits, int first_differs, int second_differs) {
    if (first_differs && !t->first_check++) t->first = bits;
    if (second_differs && !t->second_check++) t->second = bits;
    t->total++;
}

static tally sweep(uint32_t lo, uint32_t hi, int is_exp) {
    static float x[BLOCK], mine[BLOCK];
    tally t = {0, 0, 0, 0, 0};
    for (uint64_t b = lo; b <= hi;) {
        long n = 0;
        for (; n < BLOCK && b <= hi; n++, b++) {
            uint32_t bits = (uint32_t)b;
            memcpy(&x[n], &bits, sizeof bits);
        }
        if (is_exp) ck_exp_nonpositive(x, mine, n);
        else ck_log1p_unit(x, mine, n);
        for (long i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &x[i], sizeof bits);
            const float a = is_exp ? expf(x[i]) : (float)version3(x[i]), r = (float)log1p((double)x[i]);
            count(&t, bits, memcmp(&a, &mine[i], sizeof a) != 0, !is_exp && memcmp(&r, &mine[i], sizeof r) != 0);
        }
    }
    return t;
}

int main(void) {
    const int paths[] = {CK_PATH_GENERIC, CK_PATH_AVX2_FMA, CK_PATH_NEON_FMA, CK_PATH_AVX512_FMA};
    int failed = 0;
    for (unsigned k = 0; k < sizeof paths / sizeof paths[0]; k++) {
        if (!ck_path_supported(paths[k])) continue;
        ck_set_path(paths[k]);
        const tally e = sweep(0x80000000u, 0xC2B00000u, 1);   // −0 … −88
        printf("%s exp: %ld of %ld differ from expf (first 0x%08x)\n", ck_path_name(paths[k]), e.first_check,
               e.total, e.first);
        const tally l = sweep(0, 0x3F800000u, 0);              // +0 … 1
        printf("%s log1p: %ld of %ld differ from version 3's formula (first 0x%08x), %ld from float64 log1p "
               "(first 0x%08x)\n", ck_path_name(paths[k]), l.first_check, l.total, l.first, l.second_check, l.second);
        failed |= e.first_check != 0 || l.first_check != 0 || l.second_check > 1;
    }
    return failed;
}
