/*
 * Collectives and data-parallel gradients (distributed.h). Runs with any
 * number of processes: alone (a job of one, as `meson test` runs it) and
 * under mpirun with 2 and 3 (the tests named distributed-N). Every
 * process checks its own results; only rank 0 prints TAP, the others
 * report failures on stderr and through their exit status.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "strideweave/strideweave.h"
#include "check.h"

static int rank, world;

static sw_tensor *cpu_tensor(const char *layout, sw_dtype dt, int64_t size) {
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    if (sw_cpu_new(size, dt, 1, 0, &c) || sw_layout_parse(layout, &l) ||
        sw_tensor_new(c, 0, l, &t))
        bail_out(sw_errmsg());
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static float fget(const sw_tensor *t, int64_t i) {
    sw_value v;
    if (sw_tensor_get(t, i, &v))
        bail_out(sw_errmsg());
    return (float)v.as.f;
}

static void fset(sw_tensor *t, int64_t i, double x) {
    sw_value v = sw_value_f64(x);
    if (sw_tensor_set(t, i, &v))
        bail_out(sw_errmsg());
}

/* Sum over ranks r of (r + 1) * (i + 1): the all_reduce of x_r[i]. */
static double rank_sum(int64_t i) {
    return (double)(i + 1) * world * (world + 1) / 2.0;
}

static void test_lifecycle(void) {
    ok(sw_dist_available(), "built with MPI");
    ok(sw_dist_initialized(), "initialised");
    expect_ok(sw_dist_init(), "a second init is a no-op");
    int r = -1, n = -1;
    expect_ok(sw_dist_rank(&r), "rank");
    expect_ok(sw_dist_world_size(&n), "world size");
    ok(r >= 0 && r < n, "rank %d in [0, %d)", r, n);
    expect_fail(sw_dist_set_timeout(-1), SW_EVALUE, NULL, "negative timeout");
    expect_fail(sw_dist_set_timeout(INFINITY), SW_EVALUE, NULL,
                "infinite timeout");
    expect_ok(sw_dist_set_timeout(120), "timeout");
    ok(sw_dist_timeout() == 120, "timeout read back");
}

/* all_reduce over compact, transposed (staged) and offset layouts. */
static void test_all_reduce(void) {
    const char *layouts[] = {"(3,4):(1,3)", "(3,4):(4,1)",
                             "((2,2),3):((1,6),2)"};
    for (int k = 0; k < 3; ++k) {
        sw_tensor *t = cpu_tensor(layouts[k], SW_DTYPE_FLOAT32, 12);
        for (int64_t i = 0; i < 12; ++i)
            fset(t, i, (double)(rank + 1) * (double)(i + 1));
        int64_t v0 = sw_tensor_version(t);
        if (expect_ok(sw_dist_all_reduce(t, SW_DIST_SUM, NULL),
                      "all_reduce sum")) {
            int good = 1;
            for (int64_t i = 0; i < 12; ++i)
                good &= fget(t, i) == (float)rank_sum(i);
            ok(good, "all_reduce sum over %s: every logical element",
               layouts[k]);
            is_int(sw_tensor_version(t), v0 + 1, "version bumped once");
        }
        sw_tensor_unref(t);
    }
    /* mean, max, min on a view with an offset. */
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    sw_cpu_new(10, SW_DTYPE_FLOAT32, 1, 0, &c);
    sw_layout_parse("4:2", &l);
    sw_tensor_new(c, 1, l, &t);
    for (int64_t i = 0; i < 4; ++i)
        fset(t, i, rank * 10.0 + (double)i);
    expect_ok(sw_dist_all_reduce(t, SW_DIST_MEAN, NULL), "mean");
    ok(fget(t, 2) == (float)(((world - 1) * 10.0) / 2.0 + 2.0),
       "mean of a strided view");
    for (int64_t i = 0; i < 4; ++i)
        fset(t, i, rank * 10.0 + (double)i);
    expect_ok(sw_dist_all_reduce(t, SW_DIST_MAX, NULL), "max");
    ok(fget(t, 3) == (float)((world - 1) * 10 + 3), "max");
    expect_ok(sw_dist_all_reduce(t, SW_DIST_MIN, NULL), "min");
    ok(fget(t, 3) == (float)((world - 1) * 10 + 3), "min of equal values");
    sw_value z;
    sw_carrier_get(c, 0, &z);
    ok(z.as.f == 0, "elements outside the view untouched");
    sw_tensor_unref(t);
    sw_layout_unref(l);
    sw_carrier_unref(c);

    sw_tensor *it = cpu_tensor("5:1", SW_DTYPE_INT32, 5);
    for (int64_t i = 0; i < 5; ++i) {
        sw_value v = sw_value_i64(rank + i);
        sw_tensor_set(it, i, &v);
    }
    expect_ok(sw_dist_all_reduce(it, SW_DIST_SUM, NULL), "Int32 sum");
    sw_value v;
    sw_tensor_get(it, 4, &v);
    is_int(v.as.i, (int64_t)world * 4 + (int64_t)world * (world - 1) / 2,
           "Int32 sum value");
    expect_fail(sw_dist_all_reduce(it, SW_DIST_MEAN, NULL), SW_ETYPE,
                "all_reduce: mean needs a Float32 tensor", "Int32 mean");
    expect_fail(sw_dist_all_reduce(it, (sw_dist_reduce)9, NULL), SW_EVALUE,
                "all_reduce: unknown reduction 9 (sum, mean, max, min)",
                "unknown reduction");
    sw_tensor_unref(it);
}

static void test_refusals(void) {
    expect_fail(sw_dist_all_reduce(NULL, SW_DIST_SUM, NULL), SW_ETYPE,
                "all_reduce needs a tensor", "no tensor");
    sw_tensor *b = cpu_tensor("3:1", SW_DTYPE_BOOL, 3);
    expect_fail(sw_dist_all_reduce(b, SW_DIST_MAX, NULL), SW_ETYPE,
                "all_reduce needs a Float32 or Int32 tensor, not Bool",
                "Bool refused");
    sw_tensor_unref(b);

    double vals[3] = {1, 2, 3};
    sw_carrier *gc = NULL;
    sw_layout *l = NULL;
    sw_tensor *g = NULL;
    sw_generic_new_doubles(3, vals, 1, &gc);
    sw_layout_parse("3:1", &l);
    sw_tensor_new(gc, 0, l, &g);
    sw_status st = sw_dist_broadcast(g, 0, NULL);
    is_int(st, SW_ETYPE, "a Generic tensor is refused");
    ok(strstr(sw_errmsg(), "needs a CPU tensor") != NULL, "message: %s",
       sw_errmsg());
    sw_clear_error();
    sw_tensor_unref(g);
    sw_carrier_unref(gc);
    sw_layout_unref(l);

    sw_tensor *bc = cpu_tensor("(3,2):(1,0)", SW_DTYPE_FLOAT32, 3);
    expect_fail(sw_dist_all_reduce(bc, SW_DIST_SUM, NULL), SW_ERUNTIME,
                "all_reduce writes its tensor in place and needs a layout "
                "that reaches each element once",
                "a broadcast layout is refused in place");
    sw_tensor *gathered = NULL;
    expect_ok(sw_dist_all_gather(bc, &gathered, NULL),
              "all_gather reads a broadcast layout");
    sw_tensor_unref(gathered);
    sw_tensor_unref(bc);

    sw_carrier *ro = NULL;
    sw_tensor *rt = NULL;
    sw_cpu_new(3, SW_DTYPE_FLOAT32, 0, 0, &ro);
    sw_layout_parse("3:1", &l);
    sw_tensor_new(ro, 0, l, &rt);
    expect_fail(sw_dist_all_reduce(rt, SW_DIST_SUM, NULL), SW_ERUNTIME,
                "Carrier is not mutable", "an immutable tensor is refused");
    sw_tensor_unref(rt);
    sw_carrier_unref(ro);
    sw_layout_unref(l);

    sw_tensor *rel = cpu_tensor("3:1", SW_DTYPE_FLOAT32, 3);
    sw_carrier_release_storage(sw_tensor_carrier(rel));
    expect_fail(sw_dist_all_reduce(rel, SW_DIST_SUM, NULL), SW_ERUNTIME,
                "Carrier is released", "a released tensor is refused");
    sw_tensor_unref(rel);

    sw_tensor *t = cpu_tensor("3:1", SW_DTYPE_FLOAT32, 3);
    st = sw_dist_broadcast(t, world, NULL);
    is_int(st, SW_EVALUE, "root out of range");
    sw_clear_error();
    st = sw_dist_broadcast(t, -1, NULL);
    is_int(st, SW_EVALUE, "negative root");
    sw_clear_error();
    sw_tensor_unref(t);
}

static void test_broadcast(void) {
    int root = world - 1;
    sw_tensor *t = cpu_tensor("(2,3):(3,1)", SW_DTYPE_FLOAT32, 6);
    for (int64_t i = 0; i < 6; ++i)
        fset(t, i, rank * 100.0 + (double)i);
    int64_t v0 = sw_tensor_version(t);
    expect_ok(sw_dist_broadcast(t, root, NULL), "broadcast");
    int good = 1;
    for (int64_t i = 0; i < 6; ++i)
        good &= fget(t, i) == (float)(root * 100.0 + (double)i);
    ok(good, "every process holds the root's values");
    is_int(sw_tensor_version(t), rank == root ? v0 : v0 + 1,
           "the root's version kept, the others' bumped once");
    sw_tensor_unref(t);
}

static void test_gather_scatter(void) {
    sw_tensor *t = cpu_tensor("(2,3):(3,1)", SW_DTYPE_FLOAT32, 6);
    for (int64_t i = 0; i < 6; ++i)
        fset(t, i, rank * 100.0 + (double)i);
    sw_tensor *out = NULL;
    if (expect_ok(sw_dist_all_gather(t, &out, NULL), "all_gather")) {
        sw_layout *ol = sw_tensor_layout(out);
        is_int(sw_layout_rank(ol), 3, "result has a leading process mode");
        is_int(sw_layout_size(ol), 6 * world, "result size");
        int good = 1;
        /* Logical index (r, i) of the result is r + world * i. */
        for (int r = 0; r < world; ++r)
            for (int64_t i = 0; i < 6; ++i)
                good &= fget(out, r + world * i) == (float)(r * 100.0 + i);
        ok(good, "rank r's elements at (r, ...)");
        sw_tensor_unref(out);
    }
    sw_tensor_unref(t);

    /* reduce_scatter: input (world, 3), rank r gets sum over p of in_p[r]. */
    char text[64];
    snprintf(text, sizeof text, "(%d,3):(3,1)", world);
    sw_tensor *in = cpu_tensor(text, SW_DTYPE_FLOAT32, 3 * world);
    for (int r = 0; r < world; ++r)
        for (int64_t j = 0; j < 3; ++j)
            fset(in, r + world * j, (double)(rank + 1) * (r * 10 + j));
    out = NULL;
    if (expect_ok(sw_dist_reduce_scatter(in, SW_DIST_SUM, &out, NULL),
                  "reduce_scatter")) {
        is_int(sw_layout_size(sw_tensor_layout(out)), 3, "result size");
        int good = 1;
        for (int64_t j = 0; j < 3; ++j)
            good &= fget(out, j) ==
                    (float)((rank * 10 + j) * world * (world + 1) / 2.0);
        ok(good, "reduced block of this rank");
        sw_tensor_unref(out);
    }
    sw_tensor_unref(in);
    snprintf(text, sizeof text, "(%d,3):(1,%d)", world + 1, world + 1);
    in = cpu_tensor(text, SW_DTYPE_FLOAT32, 3 * (world + 1));
    out = NULL;
    sw_status st = sw_dist_reduce_scatter(in, SW_DIST_SUM, &out, NULL);
    is_int(st, SW_EVALUE, "reduce_scatter needs the first mode = world");
    ok(out == NULL, "no result on failure");
    sw_clear_error();
    sw_tensor_unref(in);
}

static void test_async(void) {
    sw_tensor *t = cpu_tensor("1000:1", SW_DTYPE_FLOAT32, 1000);
    for (int64_t i = 0; i < 1000; ++i)
        fset(t, i, (double)(rank + 1) * (double)(i + 1));
    sw_dist_work *w = NULL;
    if (expect_ok(sw_dist_all_reduce(t, SW_DIST_SUM, &w), "queued")) {
        expect_ok(sw_dist_work_wait(w), "wait");
        ok(sw_dist_work_done(w), "done after wait");
        expect_ok(sw_dist_work_wait(w), "a second wait gives the outcome");
        ok(fget(t, 999) == (float)rank_sum(999), "value after wait");
        ok(sw_carrier_is_mutable(sw_tensor_carrier(t)),
           "writable again after completion");
        sw_dist_work_unref(w);
    }
    /* Several in flight, dropped before completion. */
    for (int k = 0; k < 4; ++k) {
        w = NULL;
        sw_dist_barrier(&w);
        sw_dist_work_unref(w);
    }
    expect_ok(sw_dist_barrier(NULL), "a barrier after dropped works");
    sw_tensor_unref(t);
}

/* Processes that disagree all fail with the same description. */
static void test_agreement(void) {
    if (world < 2) {
        ok(1, "agreement needs two processes (skipped)");
        return;
    }
    sw_tensor *t = cpu_tensor(rank == 0 ? "3:1" : "4:1", SW_DTYPE_FLOAT32, 4);
    sw_status st = sw_dist_all_reduce(t, SW_DIST_SUM, NULL);
    is_int(st, SW_EVALUE, "different shapes fail everywhere");
    ok(strstr(sw_errmsg(),
              "all_reduce: the processes disagree: rank 0: "
              "all_reduce(Float32 3, sum); rank 1: all_reduce(Float32 4, "
              "sum)") != NULL,
       "message names every call: %s", sw_errmsg());
    sw_clear_error();
    ok(fget(t, 0) == 0, "nothing written");
    sw_tensor_unref(t);
}

/* Several threads submitting at once (a job of one, where the order of
 * the calls cannot differ between processes): the queue, the completions
 * and the carriers' ownership under ThreadSanitizer. */
typedef struct submitter {
    sw_tensor *t;
    int failures;
} submitter;

static void *submit_many(void *arg) {
    submitter *s = arg;
    for (int k = 0; k < 50; ++k) {
        sw_dist_work *w = NULL;
        if (sw_dist_all_reduce(s->t, SW_DIST_MAX, &w) || sw_dist_work_wait(w)) {
            s->failures++;
            sw_clear_error();
        }
        sw_dist_work_unref(w);
        /* Between collectives the tensor is ours to write. */
        sw_value v = sw_value_f64(k);
        if (sw_tensor_set(s->t, 0, &v)) {
            s->failures++;
            sw_clear_error();
        }
    }
    return NULL;
}

static void test_threads(void) {
    if (world != 1) {
        ok(1, "threads submit concurrently only in a job of one (skipped)");
        return;
    }
    pthread_t th[3];
    submitter s[3];
    for (int i = 0; i < 3; ++i) {
        s[i].t = cpu_tensor("64:1", SW_DTYPE_FLOAT32, 64);
        s[i].failures = 0;
        pthread_create(&th[i], NULL, submit_many, &s[i]);
    }
    /* Meanwhile, a write to a tensor some collective may own is either
     * refused with the ownership message or done between collectives. */
    for (int k = 0; k < 200; ++k) {
        sw_value v = sw_value_f64(1);
        sw_status st = sw_tensor_set(s[0].t, 1, &v);
        if (st) {
            ok(strstr(sw_errmsg(), "owned by a pending move") != NULL,
               "a refused write names the owner: %s", sw_errmsg());
            sw_clear_error();
            break;
        }
    }
    int failures = 0;
    for (int i = 0; i < 3; ++i) {
        pthread_join(th[i], NULL);
        failures += s[i].failures;
        sw_tensor_unref(s[i].t);
    }
    is_int(failures, 0, "150 collectives from three threads");
}

static void test_ddp(void) {
    /* Two parameters; rank r starts from r (the broadcast fixes that). */
    sw_tensor *w = cpu_tensor("(3,2):(1,3)", SW_DTYPE_FLOAT32, 6);
    sw_tensor *b = cpu_tensor("3:1", SW_DTYPE_FLOAT32, 3);
    for (int64_t i = 0; i < 6; ++i)
        fset(w, i, rank + (double)i);
    for (int64_t i = 0; i < 3; ++i)
        fset(b, i, rank);
    sw_tensor *params[2] = {w, b};
    sw_dist_ddp *d = NULL;
    /* 16 bytes: one bucket per parameter. */
    if (!expect_ok(sw_dist_ddp_new(params, 2, 16, &d), "ddp")) {
        sw_tensor_unref(w);
        sw_tensor_unref(b);
        return;
    }
    is_int(sw_dist_ddp_buckets(d), 2, "two buckets");
    ok(fget(w, 5) == 5 && fget(b, 0) == 0, "parameters from rank 0");
    for (int pass = 0; pass < 2; ++pass) {
        /* loss = sum((rank + 1) * w) + sum((rank + 1) * b): grads rank + 1. */
        sw_tensor *sw = NULL, *sb = NULL;
        sw_mul(w, sw_arg_f64(rank + 1), &sw);
        sw_mul(b, sw_arg_f64(rank + 1), &sb);
        sw_tensor *ones_w = cpu_tensor("(3,2):(1,3)", SW_DTYPE_FLOAT32, 6);
        sw_tensor *ones_b = cpu_tensor("3:1", SW_DTYPE_FLOAT32, 3);
        for (int64_t i = 0; i < 6; ++i)
            fset(ones_w, i, 1);
        for (int64_t i = 0; i < 3; ++i)
            fset(ones_b, i, 1);
        sw_tensor_set_grad(w, NULL);
        sw_tensor_set_grad(b, NULL);
        expect_ok(sw_tensor_backward(sw, ones_w), "backward w");
        is_int(sw_dist_ddp_pending(d), 1, "b still pending");
        ok(sw_dist_ddp_reported(d, 0) && !sw_dist_ddp_reported(d, 1),
           "w reported, b not");
        expect_ok(sw_tensor_backward(sb, ones_b), "backward b");
        is_int(sw_dist_ddp_pending(d), 0, "pass complete");
        float mean = (float)((world + 1) / 2.0);
        ok(fget(sw_tensor_grad(w), 4) == mean &&
               fget(sw_tensor_grad(b), 2) == mean,
           "pass %d: gradients are the mean over processes", pass);
        sw_tensor_unref(sw);
        sw_tensor_unref(sb);
        sw_tensor_unref(ones_w);
        sw_tensor_unref(ones_b);
    }
    /* A pass that misses b, then another: the second w reports again. */
    sw_tensor *sw = NULL,
              *ones = cpu_tensor("(3,2):(1,3)", SW_DTYPE_FLOAT32, 6);
    sw_mul(w, sw_arg_f64(1), &sw);
    expect_ok(sw_tensor_backward(sw, ones), "pass without b");
    sw_status st = sw_tensor_backward(sw, ones);
    is_int(st, SW_ERUNTIME, "a parameter reporting twice fails the pass");
    ok(strstr(sw_errmsg(), "got no gradient") != NULL, "message: %s",
       sw_errmsg());
    sw_clear_error();
    sw_dist_ddp_reset(d);
    is_int(sw_dist_ddp_pending(d), 0, "reset");
    sw_dist_ddp_set_sync(d, 0);
    sw_tensor_set_grad(w, NULL);
    expect_ok(sw_tensor_backward(sw, ones), "no sync: plain accumulation");
    ok(fget(sw_tensor_grad(w), 0) == 0, "local gradient kept");
    sw_tensor_unref(sw);
    sw_tensor_unref(ones);
    sw_dist_ddp_unref(d);

    sw_tensor *bad[2] = {w, w};
    d = NULL;
    expect_fail(sw_dist_ddp_new(bad, 2, 0, &d), SW_EVALUE,
                "DistributedDataParallel: parameter 1 is given twice",
                "a parameter twice");
    sw_tensor_unref(w);
    sw_tensor_unref(b);
}

int main(void) {
    if (sw_dist_init()) {
        printf("not ok 1 - init: %s\n1..1\n", sw_errmsg());
        return 1;
    }
    sw_dist_rank(&rank);
    sw_dist_world_size(&world);
    /* Only rank 0 speaks TAP on stdout; the others' checks go to stderr. */
    if (rank != 0 && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        return 1;
    int64_t base = sw_debug_live_allocs();
    test_lifecycle();
    test_all_reduce();
    test_refusals();
    test_broadcast();
    test_gather_scatter();
    test_async();
    test_agreement();
    test_threads();
    test_ddp();
    leak_check(base, "distributed");
    expect_ok(sw_dist_finalize(), "finalize");
    expect_ok(sw_dist_finalize(), "finalize twice");
    expect_fail(sw_dist_init(), SW_ERUNTIME,
                "distributed was finalised; MPI cannot be initialised again "
                "in this process",
                "init after finalize");
    int failed = done_testing();
    if (failed)
        fprintf(stderr, "rank %d: %d check(s) failed\n", rank, failed);
    return failed;
}
