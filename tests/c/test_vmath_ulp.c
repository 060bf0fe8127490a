/*
 * The exhaustive accuracy check of the vmath functions: every one of the
 * 2**32 float32 bit patterns through every function (and the gradients
 * of gelu and tanh) on every path this CPU has (scalar, AVX2, AVX-512),
 * against the function in double (vmath_ulp.h). Passes when every path
 * keeps the bound vmath.h states and all paths give the same bits. Prints
 * one TAP line per function and path with the largest error found and
 * where. Run by `make test-ulp` (minutes: see docs/VMATH.md), not by
 * `meson test`, which runs the sample of test_vmath.c instead.
 *
 * An optional argument limits the run to every k-th bit pattern, for a
 * quicker look (test_vmath_ulp 97); a second one to some functions
 * (test_vmath_ulp 1 sigmoid,silu; gelu_grad and tanh_grad name the
 * gradients).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "vmath_ulp.h"

static uint32_t every_kth(uint64_t i, void *ctx) {
    return (uint32_t)(i * *(const uint64_t *)ctx);
}

int main(int argc, char **argv) {
    uint64_t k = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    if (k == 0)
        k = 1;
    struct timespec t0, t1;
    timespec_get(&t0, TIME_UTC);
    static vu_run run;
    if (argc > 2)
        for (int f = 0; f < VU_COUNT; ++f) {
            const char *name = vu_name(f);
            const char *at = strstr(argv[2], name);
            size_t len = strlen(name);
            /* A whole name of the comma-separated list. */
            while (at && ((at != argv[2] && at[-1] != ',') ||
                          (at[len] && at[len] != ',')))
                at = strstr(at + 1, name);
            if (at)
                run.only |= 1u << f;
        }
    vu_measure(&run, every_kth, &k, ((uint64_t)1 << 32) / k);
    timespec_get(&t1, TIME_UTC);
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    for (int f = 0; f < VU_COUNT; ++f)
        for (int p = 0; p < SW_VMATH_ISA_COUNT; ++p) {
            if (!run.impl[p] || (run.only && !(run.only & (1u << f))))
                continue;
            const vu_stat *s = &run.stat[f][p];
            ok(s->max_err <= vu_bound[f],
               "%s %s: max %.4f ULP (bound %.2f) at x = %a (y = %a)",
               vu_name(f), run.impl[p]->name, s->max_err, vu_bound[f],
               (double)s->worst_x, (double)s->worst_y);
            ok(s->max_sub <= vu_bound_sub[f],
               "%s %s: subnormal results max %.4f ULP (bound %.2f) at x = %a",
               vu_name(f), run.impl[p]->name, s->max_sub, vu_bound_sub[f],
               (double)s->worst_sub_x);
            if (p > 0)
                ok(s->mismatches == 0,
                   "%s %s: same bits as scalar (%llu differ, first x = %a)",
                   vu_name(f), run.impl[p]->name,
                   (unsigned long long)s->mismatches, (double)s->mismatch_x);
        }
    diag("%llu inputs per function on %d threads in %.1f s",
         (unsigned long long)run.count, VU_THREADS, secs);
    return done_testing();
}
