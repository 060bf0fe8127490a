/*
 * A library built without MPI (meson -Dmpi=disabled, as the reference
 * kernels build is): the distributed calls exist, check their arguments
 * where that needs no MPI, and fail with SW_ENOTIMPL naming the missing
 * build option; nothing else changes.
 */
#include <string.h>

#include "strideweave/strideweave.h"
#include "check.h"

static const char *const ABSENT =
    "StrideWeave was built without MPI: install an MPI implementation (Open "
    "MPI or MPICH, with its development files) and rebuild to use "
    "strideweave.distributed";

int main(void) {
    int64_t base = sw_debug_live_allocs();
    ok(!sw_dist_available(), "built without MPI");
    expect_fail(sw_dist_init(), SW_ENOTIMPL, ABSENT, "init");
    ok(!sw_dist_initialized(), "not initialised");
    int r = -1;
    expect_fail(sw_dist_rank(&r), SW_ENOTIMPL, ABSENT, "rank");
    is_int(r, -1, "rank untouched");
    expect_fail(sw_dist_world_size(&r), SW_ENOTIMPL, ABSENT, "world size");
    expect_fail(sw_dist_barrier(NULL), SW_ENOTIMPL, ABSENT, "barrier");

    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    sw_tensor *out = NULL;
    sw_dist_work *w = NULL;
    if (sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &c) ||
        sw_layout_parse("4:1", &l) || sw_tensor_new(c, 0, l, &t))
        bail_out(sw_errmsg());
    /* Argument errors first, as with MPI. */
    expect_fail(sw_dist_all_reduce(t, (sw_dist_reduce)7, NULL), SW_EVALUE,
                "all_reduce: unknown reduction 7 (sum, mean, max, min)",
                "bad reduction");
    expect_fail(sw_dist_all_reduce(t, SW_DIST_SUM, &w), SW_ENOTIMPL, ABSENT,
                "all_reduce");
    ok(w == NULL, "no completion");
    expect_fail(sw_dist_broadcast(t, 0, NULL), SW_ENOTIMPL, ABSENT,
                "broadcast");
    expect_fail(sw_dist_all_gather(t, &out, NULL), SW_ENOTIMPL, ABSENT,
                "all_gather");
    expect_fail(sw_dist_reduce_scatter(t, SW_DIST_SUM, &out, NULL), SW_ENOTIMPL,
                ABSENT, "reduce_scatter");
    ok(out == NULL, "no result");
    sw_dist_ddp *d = NULL;
    expect_fail(sw_dist_ddp_new(&t, 1, 0, &d), SW_ENOTIMPL, ABSENT, "ddp");
    ok(d == NULL, "no ddp");
    is_int(sw_tensor_version(t), 0, "tensor untouched");
    expect_ok(sw_dist_finalize(), "finalize is a no-op");
    expect_ok(sw_dist_set_timeout(3), "the timeout is kept");
    ok(sw_dist_timeout() == 3, "timeout read back");
    sw_tensor_unref(t);
    sw_layout_unref(l);
    sw_carrier_unref(c);
    leak_check(base, "distributed absent");
    return done_testing();
}
