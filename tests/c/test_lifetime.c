/*
 * Storage lifetime: pins, deferred release, and every path that reads
 * storage while another path releases it (element access, operations,
 * the reverse pass, moves, scatter, DLPack exports), on one thread and
 * across threads. The contract is sw_carrier_pin in
 * include/strideweave/carrier.h. Run under AddressSanitizer, a path that
 * freed storage under a reader fails here as a heap-use-after-free.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "strideweave/carrier.h"
#include "strideweave/dlpack.h"
#include "strideweave/interop.h"
#include "strideweave/layout.h"
#include "strideweave/op.h"
#include "strideweave/tensor.h"

static sw_layout *L(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK)
        bail_out(sw_errmsg());
    return l;
}

static sw_tensor *T(sw_carrier *c, int64_t offset, const char *layout) {
    sw_layout *l = L(layout);
    sw_tensor *t = NULL;
    sw_status st = sw_tensor_new(c, offset, l, &t);
    sw_layout_unref(l);
    if (st != SW_OK)
        bail_out(sw_errmsg());
    return t;
}

static sw_tensor *flat_cpu(int64_t n, float value) {
    sw_carrier *c = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 1, &c) != SW_OK)
        bail_out(sw_errmsg());
    float *d = sw_cpu_data(c);
    for (int64_t i = 0; i < n; ++i)
        d[i] = value;
    char lay[64];
    snprintf(lay, sizeof lay, "%lld:1", (long long)n);
    sw_tensor *t = T(c, 0, lay);
    sw_carrier_unref(c);
    return t;
}

/* ------------------------------------------- a backend that counts */

typedef struct counted {
    double *values;
    int64_t size;
    int releases; /* release slot calls */
} counted;

static int64_t counted_size(sw_carrier *c) {
    return ((counted *)sw_carrier_state(c))->size;
}

static sw_status counted_get(sw_carrier *c, int64_t i, sw_value *out) {
    *out = sw_value_f64(((counted *)sw_carrier_state(c))->values[i]);
    return SW_OK;
}

static void counted_release(sw_carrier *c) {
    counted *s = sw_carrier_state(c);
    s->releases++;
    free(s->values);
    s->values = NULL;
    s->size = 0;
}

static void counted_destroy(sw_carrier *c) {
    free(sw_carrier_state(c));
}

static const sw_carrier_class counted_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Counted",
    .size = counted_size,
    .get = counted_get,
    .release = counted_release,
    .destroy = counted_destroy,
};

static sw_carrier *counted_new(int64_t n, counted **state) {
    counted *s = calloc(1, sizeof *s);
    s->values = calloc((size_t)n, sizeof *s->values);
    s->size = n;
    for (int64_t i = 0; i < n; ++i)
        s->values[i] = (double)i;
    sw_carrier *c = NULL;
    if (sw_carrier_new(&counted_class, s, SW_DTYPE_FLOATING, &c) != SW_OK)
        bail_out(sw_errmsg());
    *state = s;
    return c;
}

static void test_pins(void) {
    counted *s = NULL;
    sw_carrier *c = counted_new(4, &s);
    ok(!sw_carrier_is_pinned(c), "a fresh carrier is not pinned");
    expect_ok(sw_carrier_pin(c), "pin");
    expect_ok(sw_carrier_pin(c), "a second, nested pin");
    ok(sw_carrier_is_pinned(c), "the carrier is pinned");
    expect_ok(sw_carrier_release_storage(c), "release while pinned");
    ok(sw_carrier_is_released(c), "the carrier reports released at once");
    is_int(sw_carrier_size(c), 0, "and its size is 0");
    is_int(s->releases, 0, "but the release slot has not run");
    ok(s->values != NULL, "and the storage is still there for the pins");
    sw_value v;
    sw_status st = sw_carrier_get(c, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "element access after the release");
    st = sw_carrier_pin(c);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "a new pin");
    expect_ok(sw_carrier_release_storage(c), "a second release");
    sw_carrier_unpin(c);
    is_int(s->releases, 0, "the inner unpin keeps the storage");
    sw_carrier_unpin(c);
    is_int(s->releases, 1, "the last unpin runs the release slot once");
    ok(!sw_carrier_is_pinned(c), "no pin is left");
    sw_carrier_unref(c);

    c = counted_new(2, &s);
    expect_ok(sw_carrier_release_storage(c), "release without pins");
    is_int(s->releases, 1, "runs the release slot at once");
    sw_carrier_unref(c);

    c = counted_new(2, &s);
    expect_ok(sw_carrier_pin(c), "pin");
    sw_carrier_unpin(c);
    is_int(s->releases, 0, "an unpin without release frees nothing");
    sw_carrier_unref(c);
}

/* ------------------------------ an operation releasing its own input */

static sw_status releasing_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                   sw_tensor **out) {
    (void)op;
    (void)nargs;
    sw_carrier *c = sw_tensor_carrier(args[0].as.tensor);
    counted *s = sw_carrier_state(c);
    sw_status st = sw_carrier_release_storage(c);
    if (st)
        return st;
    /* Still readable here: the execution pins its arguments. */
    if (s->releases != 0 || !s->values)
        return sw_set_error(SW_ERUNTIME, "storage freed under the forward");
    double x = s->values[1];
    sw_carrier *r = NULL;
    if ((st = sw_generic_new_doubles(1, &x, 1, &r)))
        return st;
    st = sw_tensor_new(r, 0, sw_tensor_layout(args[0].as.tensor), out);
    sw_carrier_unref(r);
    return st;
}

static const sw_op_class releasing_class = {
    SW_OP_CLASS_VERSION, "ReleasingOperation", releasing_forward, NULL, NULL};

static void test_forward_pins_its_arguments(void) {
    int64_t base = sw_debug_live_allocs();
    counted *s = NULL;
    sw_carrier *c = counted_new(3, &s);
    sw_tensor *t = T(c, 0, "1:0");
    sw_op *op = NULL;
    expect_ok(sw_op_new(&releasing_class, NULL, &op), "a custom operation");
    sw_arg a = sw_arg_tensor(t);
    sw_tensor *r = NULL;
    sw_status st = sw_op_execute_lowered(op, 1, &a, &r);
    if (expect_ok(st, "a forward that releases its own input")) {
        is_int(s->releases, 1, "the storage went when the forward ended");
        sw_value v;
        if (expect_ok(sw_tensor_get(r, 0, &v), "the result"))
            ok(v.as.f == 1.0, "read the old storage (%g)", v.as.f);
        sw_tensor_unref(r);
    }
    sw_op_unref(op);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    leak_check(base, "forward pins");
}

/* ---------------------------------------- the reverse pass, released */

static void test_backward_after_release(void) {
    int64_t base = sw_debug_live_allocs();
    const char *acts[] = {"sigmoid", "tanh", "relu", "exp"};
    for (int k = 0; k < 4; ++k) {
        sw_tensor *x = flat_cpu(3, 0.5f), *y = NULL, *g = flat_cpu(3, 1.0f);
        if (!expect_ok(sw_unary(acts[k], x, &y), acts[k]))
            continue;
        expect_ok(sw_carrier_release_storage(sw_tensor_carrier(x)),
                  "releasing the saved input");
        sw_status st = sw_tensor_backward(y, g);
        expect_fail(st, SW_ERUNTIME, "tensor carrier is released",
                    "backward of a released saved input");
        sw_tensor_unref(y);
        sw_tensor_unref(g);
        sw_tensor_unref(x);
    }
    /* Gradients of add need only the layouts: the pass goes on. */
    sw_tensor *a = flat_cpu(3, 1.0f), *b = flat_cpu(3, 2.0f), *y = NULL;
    sw_tensor *g = flat_cpu(3, 1.0f);
    if (expect_ok(sw_add(a, b, &y), "add")) {
        expect_ok(sw_carrier_release_storage(sw_tensor_carrier(b)),
                  "releasing rhs");
        expect_ok(sw_tensor_backward(y, g), "backward of add");
        ok(sw_tensor_grad(a) != NULL, "lhs got its gradient");
    }
    sw_tensor_unref(y);
    /* mul reads both inputs. */
    sw_tensor *m = NULL;
    sw_tensor *c = flat_cpu(3, 1.0f), *d = flat_cpu(3, 2.0f);
    if (expect_ok(sw_elementwise_mul(c, d, &m), "elementwise_mul")) {
        expect_ok(sw_carrier_release_storage(sw_tensor_carrier(d)),
                  "releasing rhs");
        sw_status st = sw_tensor_backward(m, g);
        expect_fail(st, SW_ERUNTIME, "rhs carrier is released",
                    "backward of mul with a released rhs");
    }
    sw_tensor_unref(m);
    sw_tensor_unref(c);
    sw_tensor_unref(d);
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_tensor_unref(g);
    leak_check(base, "backward after release");
}

/* --------------------------------------------------- across threads */

typedef struct reader {
    sw_tensor *t;
    atomic_int *stop;
    /* Watched by the main thread while the reader runs (the others are
     * read after the join). */
    atomic_int rounds;
    int failures, other;
} reader;

/* Runs relu over t until told to stop; counts refusals. */
static void *relu_reader(void *arg) {
    reader *r = arg;
    while (!atomic_load(r->stop) || atomic_load(&r->rounds) == 0) {
        sw_tensor *y = NULL;
        sw_status st = sw_unary("relu", r->t, &y);
        if (st == SW_OK) {
            sw_tensor_unref(y);
        } else if (st == SW_ERUNTIME) {
            r->failures++;
            sw_clear_error();
        } else {
            r->other++;
            sw_clear_error();
        }
        atomic_fetch_add(&r->rounds, 1);
        if (r->failures > 0)
            break; /* released: every later round fails the same way */
    }
    return NULL;
}

static void run_against_reader(const char *what, int kind) {
    int64_t n = (int64_t)1 << 22;
    for (int round = 0; round < 8; ++round) {
        sw_tensor *t = flat_cpu(n, -1.0f);
        atomic_int stop = 0;
        reader r = {t, &stop, 0, 0, 0};
        pthread_t th;
        if (pthread_create(&th, NULL, relu_reader, &r) != 0)
            bail_out("pthread_create");
        /* Let the reader get going, then free the storage under it. */
        while (atomic_load(&stop) == 0 && atomic_load(&r.rounds) == 0)
            sched_yield();
        sw_status st = SW_OK;
        sw_tensor *moved = NULL;
        sw_carrier *f = NULL;
        if (kind == 0) {
            st = sw_carrier_release_storage(sw_tensor_carrier(t));
        } else {
            sw_set_grad_enabled(0);
            st = sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &f);
            if (!st)
                st = sw_move(t, f, &moved);
            sw_set_grad_enabled(1);
        }
        atomic_store(&stop, 1);
        pthread_join(th, NULL);
        if (!ok(st == SW_OK, "%s under a reader (round %d)", what, round))
            diag("%s", sw_errmsg());
        sw_clear_error();
        ok(r.other == 0, "%s: the reader saw only releases (round %d)", what,
           round);
        sw_tensor_unref(moved);
        sw_carrier_unref(f);
        sw_tensor_unref(t);
    }
}

static void test_release_under_readers(void) {
    int64_t base = sw_debug_live_allocs();
    run_against_reader("a release", 0);
    run_against_reader("a move", 1);
    leak_check(base, "release under readers");
}

/* --------------------------------------------------------- DLPack */

static void test_dlpack_outlives_release(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *t = flat_cpu(1 << 16, 3.0f);
    void *m = NULL;
    sw_status st = sw_tensor_to_dlpack(t, 1, &m);
    if (!expect_ok(st, "export"))
        return;
    DLManagedTensorVersioned *mt = m;
    expect_ok(sw_carrier_release_storage(sw_tensor_carrier(t)),
              "release while exported");
    ok(sw_carrier_is_released(sw_tensor_carrier(t)) &&
           sw_carrier_size(sw_tensor_carrier(t)) == 0 &&
           sw_cpu_data(sw_tensor_carrier(t)) == NULL,
       "the carrier gives up the storage at once");
    const float *d = mt->dl_tensor.data;
    float sum = 0;
    for (int i = 0; i < (1 << 16); ++i)
        sum += d[i];
    ok(sum == 3.0f * (1 << 16), "the consumer still reads its memory");
    sw_tensor_unref(t);
    /* A consumer's bug: it calls the deleter it saved twice; the second
     * call does nothing. */
    void (*del)(DLManagedTensorVersioned *) = mt->deleter;
    del(mt);
    del(mt);
    leak_check(base, "DLPack after release");

    /* Many live exports at once (the live set grows and shrinks). */
    sw_tensor *u = flat_cpu(4, 1.0f);
    DLManagedTensor *ms[300];
    for (int i = 0; i < 300; ++i)
        if (sw_tensor_to_dlpack(u, 0, (void **)&ms[i]) != SW_OK)
            bail_out(sw_errmsg());
    void (*legacy_del)(DLManagedTensor *) = ms[0]->deleter;
    for (int i = 0; i < 300; i += 2)
        legacy_del(ms[i]);
    for (int i = 0; i < 300; ++i)
        legacy_del(ms[i]);
    ok(!sw_carrier_is_pinned(sw_tensor_carrier(u)),
       "every export dropped its pin exactly once");
    sw_tensor_unref(u);
    leak_check(base, "300 exports, deleted twice");
}

/* ------------------------------- concurrent passes into one leaf */

typedef struct pass_job {
    sw_tensor *w, *g;
    int rounds;
    int failures;
} pass_job;

static void *backward_rounds(void *arg) {
    pass_job *j = arg;
    for (int i = 0; i < j->rounds; ++i) {
        sw_tensor *y = NULL;
        if (sw_mul(j->w, sw_arg_f64(2.0), &y) != SW_OK ||
            sw_tensor_backward(y, j->g) != SW_OK)
            j->failures++;
        sw_tensor_unref(y);
    }
    return NULL;
}

static void test_concurrent_backward(void) {
    int64_t base = sw_debug_live_allocs();
    enum { THREADS = 4, ROUNDS = 200, N = 4096 };
    sw_tensor *w = flat_cpu(N, 1.0f), *g = flat_cpu(N, 1.0f);
    pass_job jobs[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; ++i) {
        jobs[i] = (pass_job){w, g, ROUNDS, 0};
        if (pthread_create(&th[i], NULL, backward_rounds, &jobs[i]) != 0)
            bail_out("pthread_create");
    }
    int failures = 0;
    for (int i = 0; i < THREADS; ++i) {
        pthread_join(th[i], NULL);
        failures += jobs[i].failures;
    }
    is_int(failures, 0, "every pass succeeded");
    sw_tensor *grad = sw_tensor_grad(w);
    int exact = grad != NULL;
    for (int64_t i = 0; exact && i < N; ++i) {
        sw_value v;
        exact = sw_tensor_get(grad, i, &v) == SW_OK &&
                v.as.f == 2.0 * THREADS * ROUNDS;
    }
    ok(exact, "the shared gradient is the exact sum of every pass (%d)",
       2 * THREADS * ROUNDS);
    sw_tensor_unref(w);
    sw_tensor_unref(g);
    leak_check(base, "concurrent passes");
}

int main(void) {
    test_pins();
    test_forward_pins_its_arguments();
    test_backward_after_release();
    test_release_under_readers();
    test_dlpack_outlives_release();
    test_concurrent_backward();
    return done_testing();
}
