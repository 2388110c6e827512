// Every float in [−88, −0] through ck_exp_nonpositive on every kernel path this CPU runs, against
// the C library's expf: the check behind Losses.c's claim that the binary loss's exponential is
// glibc's (its FMA build) bit for bit. Not run by CI (about 45 s a path); rerun it when Losses.c's
// exponential or the C library changes.
//
//   cc -O2 -ISources/CContinualKernels/include Experiments/tools/expf_exhaustive.c \
//      Sources/CContinualKernels/Losses.c Sources/CContinualKernels/Paths.c -lm -o /tmp/expf_exhaustive
//   /tmp/expf_exhaustive
//
// Prints, per path, how many of the 1,118,830,593 values differ and the first; exit status 1 if any.
#include "ContinualKernels.h"
#include "ContinualLosses.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { BLOCK = 4096 };

int main(void) {
    const int paths[] = {CK_PATH_GENERIC, CK_PATH_AVX2_FMA, CK_PATH_NEON_FMA, CK_PATH_AVX512_FMA};
    int failed = 0;
    for (unsigned k = 0; k < sizeof paths / sizeof paths[0]; k++) {
        if (!ck_path_supported(paths[k])) continue;
        ck_set_path(paths[k]);
        static float x[BLOCK], mine[BLOCK];
        long differ = 0, total = 0;
        uint32_t first = 0;
        for (uint64_t b = 0x80000000u; b <= 0xC2B00000u;) {  // −0 … −88
            long n = 0;
            for (; n < BLOCK && b <= 0xC2B00000u; n++, b++) {
                uint32_t bits = (uint32_t)b;
                memcpy(&x[n], &bits, sizeof bits);
            }
            ck_exp_nonpositive(x, mine, n);
            for (long i = 0; i < n; i++) {
                float ref = expf(x[i]);
                if (memcmp(&ref, &mine[i], sizeof ref) != 0) {
                    if (!differ) memcpy(&first, &x[i], sizeof first);
                    differ++;
                }
            }
            total += n;
        }
        printf("%s: %ld of %ld differ%s", ck_path_name(paths[k]), differ, total, differ ? "" : "\n");
        if (differ) printf(", first 0x%08x\n", first);
        failed |= differ != 0;
    }
    return failed;
}
