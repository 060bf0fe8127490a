/*
 * Unit tests of the autograd engine: grad mode, the recording rules of a
 * forward, lowered execution and saved inputs, the rules of the reverse
 * pass (implicit gradients, layout checks, accumulation into .grad,
 * retain_grad, shared inputs and diamonds, one backward per operation and
 * pass, deep chains without recursion, version checks), finite-difference
 * checks of the gradient of every differentiable Generic operation and of
 * the layout operations, and the bookkeeping rules on non-differentiable
 * tensors.
 *
 * The contract is include/strideweave/op.h with the Python reference
 * (the Python API reference, section 4 and the operation rules
 * of sections 11 and 12). Gradients are checked against central
 * differences in double computed here; custom operation classes written
 * here count backward calls and misbehave on purpose. Every test releases
 * what it made and checks that the library's live allocation count is back
 * to its baseline; a fault-injection walk makes every allocation of a small
 * forward and backward pass fail in turn.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strideweave/base.h"
#include "strideweave/carrier.h"
#include "strideweave/layout.h"
#include "strideweave/op.h"
#include "strideweave/tensor.h"
#include "tap.h"

enum { LEAF = SW_TOK_LEAF, PUSH = SW_TOK_PUSH, POP = SW_TOK_POP };

/* ------------------------------------------------------------ helpers */

static max_align_t sentinel_storage[2];
#define SENT_TENSOR ((sw_tensor *)(void *)&sentinel_storage[0])
#define SENT_OP ((sw_op *)(void *)&sentinel_storage[1])

static const char *S(sw_status st) {
    return sw_status_name(st);
}

static void leak_check(int64_t base, const char *what) {
    is_int(sw_debug_live_allocs(), base, "%s: no library allocation leaked",
           what);
}

static void expect_fail(sw_status st, sw_status want, const char *msg,
                        const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    if (st != SW_OK && msg)
        is_str(sw_errmsg(), msg, "%s: message", name);
    sw_clear_error();
}

static bool expect_ok(sw_status st, const char *name) {
    if (!ok(st == SW_OK, "%s succeeds", name)) {
        diag("status %s: %s", S(st), sw_errmsg());
        return false;
    }
    return true;
}

#define FMT_CAP 512
static char fmt_bufs[8][FMT_CAP];
static int fmt_next;

static const char *L(const sw_layout *l) {
    fmt_next = (fmt_next + 1) % 8;
    char *buf = fmt_bufs[fmt_next];
    if (l == NULL)
        return "(null)";
    int64_t n = sw_layout_format(l, buf, FMT_CAP);
    if (n < 0 || n >= FMT_CAP)
        snprintf(buf, FMT_CAP, "(format returned %lld)", (long long)n);
    return buf;
}

static sw_layout *P(const char *text) {
    sw_layout *l = NULL;
    sw_status st = sw_layout_parse(text, &l);
    if (st != SW_OK) {
        ok(0, "parse '%s'", text);
        diag("status %s: %s", S(st), sw_errmsg());
        return NULL;
    }
    return l;
}

typedef enum ckind { GEN = 0, ANY = 1, CPU = 2, CPU_I32 = 3 } ckind;

/* A carrier of n slots, slot p holding vals[p] (zeros if vals is NULL). */
static sw_carrier *make_carrier(ckind kind, int64_t n, const double *vals) {
    sw_carrier *c = NULL;
    sw_status st = SW_OK;
    double *v = calloc((size_t)n + 1, sizeof *v);
    if (vals)
        memcpy(v, vals, (size_t)n * sizeof *v);
    if (kind == GEN) {
        st = sw_generic_new_doubles(n, v, 1, &c);
    } else if (kind == ANY) {
        const sw_host_ops *ops = sw_host_doubles();
        sw_value *sv = malloc((size_t)(n + 1) * sizeof *sv);
        for (int64_t p = 0; p < n; p++)
            sv[p] = sw_value_f64(v[p]);
        void *store = NULL;
        st = ops->make(ops, n, sv, &store);
        free(sv);
        if (st == SW_OK) {
            st = sw_generic_new(ops, store, SW_DTYPE_ANY, 1, &c);
            if (st != SW_OK)
                ops->drop(store);
        }
    } else {
        st = sw_cpu_new(n, kind == CPU ? SW_DTYPE_FLOAT32 : SW_DTYPE_INT32, 1,
                        0, &c);
        for (int64_t p = 0; st == SW_OK && p < n; p++) {
            sw_value x =
                kind == CPU ? sw_value_f64(v[p]) : sw_value_i64((int64_t)v[p]);
            st = sw_carrier_set(c, p, &x);
        }
    }
    free(v);
    if (st != SW_OK) {
        ok(0, "make a carrier of %lld slots", (long long)n);
        diag("status %s: %s", S(st), sw_errmsg());
        sw_carrier_unref(c);
        return NULL;
    }
    return c;
}

/*
 * A tensor of the given layout at offset in a fresh carrier of
 * offset + cosize + 1 slots; logical element i holds vals[i] (all zero if
 * vals is NULL; unused slots hold 0).
 */
static sw_tensor *make_tensor(ckind kind, const char *layout, int64_t offset,
                              const double *vals) {
    sw_layout *l = P(layout);
    if (!l)
        return NULL;
    int64_t n = offset + sw_layout_cosize(l) + 1;
    double *slots = calloc((size_t)n, sizeof *slots);
    for (int64_t i = 0; vals && i < sw_layout_size(l); i++) {
        int64_t p = 0;
        sw_layout_index(l, i, &p);
        slots[offset + p] = vals[i];
    }
    sw_carrier *c = make_carrier(kind, n, slots);
    free(slots);
    sw_tensor *t = NULL;
    if (c) {
        sw_status st = sw_tensor_new(c, offset, l, &t);
        if (st != SW_OK) {
            ok(0, "make a tensor %s at %lld", layout, (long long)offset);
            diag("status %s: %s", S(st), sw_errmsg());
            t = NULL;
        }
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

/* A Generic tensor holding one value, layout 1:1. */
static sw_tensor *scalar_tensor(double v) {
    return make_tensor(GEN, "1:1", 0, &v);
}

static double getd(const sw_tensor *t, int64_t i) {
    if (!t)
        return NAN;
    sw_value v;
    sw_status st = sw_tensor_get(t, i, &v);
    if (st != SW_OK)
        return NAN;
    double r = v.kind == SW_VALUE_F64   ? v.as.f
               : v.kind == SW_VALUE_I64 ? (double)v.as.i
                                        : NAN;
    sw_value_clear(&v);
    return r;
}

static void setd(sw_tensor *t, int64_t i, double x) {
    sw_value v = sw_value_f64(x);
    sw_status st = sw_tensor_set(t, i, &v);
    if (st != SW_OK) {
        ok(0, "write element %lld", (long long)i);
        diag("status %s: %s", S(st), sw_errmsg());
    }
}

static int64_t phys(const sw_tensor *t, int64_t i) {
    int64_t p = -1;
    if (sw_layout_index(sw_tensor_layout(t), i, &p) != SW_OK)
        return -1;
    return sw_tensor_offset(t) + p;
}

static bool close_to(double got, double want, double tol) {
    if (isnan(got) || isnan(want))
        return false;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* Checks every logical value of t against want[i] within tol. */
static void check_values(const sw_tensor *t, const double *want, double tol,
                         const char *name) {
    if (!ok(t != NULL, "%s: present", name))
        return;
    int64_t bad = -1;
    for (int64_t i = 0; i < sw_tensor_size(t) && bad < 0; i++)
        if (!close_to(getd(t, i), want[i], tol))
            bad = i;
    if (!ok(bad < 0, "%s: values", name))
        diag("logical %lld: got %.17g, expected %.17g", (long long)bad,
             getd(t, bad), want[bad]);
}

static sw_view_key KI(int64_t i) {
    sw_view_key k;
    memset(&k, 0, sizeof k);
    k.kind = SW_VIEW_INDEX;
    k.index = i;
    return k;
}

static sw_view_key KS(int hs, int64_t start, int he, int64_t stop) {
    sw_view_key k;
    memset(&k, 0, sizeof k);
    k.kind = SW_VIEW_SLICE;
    k.has_start = hs;
    k.start = start;
    k.has_stop = he;
    k.stop = stop;
    return k;
}

static sw_view_key KALL(void) {
    return KS(0, 0, 0, 0);
}

static sw_arg arg_bool(int b) {
    sw_arg a;
    memset(&a, 0, sizeof a);
    a.kind = SW_ARG_BOOL;
    a.as.i = b != 0;
    return a;
}

/* A fixed-seed generator (xorshift64*), so that runs are reproducible. */
static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static double uniform(double lo, double hi) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * UINT64_C(2685821657736338717);
    return lo + (hi - lo) * (double)(r >> 11) / 9007199254740992.0;
}

/* A value in [lo, hi] at least gap away from 0. */
static double draw(double lo, double hi, double gap) {
    for (;;) {
        double v = uniform(lo, hi);
        if (fabs(v) >= gap)
            return v;
    }
}

/* A Generic tensor of random values at offset (unused slots 0). */
static sw_tensor *rand_tensor(const char *layout, int64_t offset, double lo,
                              double hi, double gap) {
    sw_layout *l = P(layout);
    if (!l)
        return NULL;
    int64_t n = sw_layout_size(l);
    sw_layout_unref(l);
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = draw(lo, hi, gap);
    sw_tensor *t = make_tensor(GEN, layout, offset, v);
    free(v);
    return t;
}

/*
 * A fresh Generic tensor with x's layout at offset 0 holding scale times
 * x's logical values, of the given dtype (Floating or Any).
 */
static sw_status copy_values(const sw_tensor *x, sw_dtype dt, double scale,
                             sw_tensor **out) {
    sw_layout *l = sw_tensor_layout(x);
    int64_t n = sw_layout_cosize(l);
    double *slots = calloc((size_t)n + 1, sizeof *slots);
    for (int64_t i = 0; i < sw_layout_size(l); i++) {
        int64_t p = 0;
        sw_layout_index(l, i, &p);
        slots[p] = scale * getd(x, i);
    }
    sw_carrier *c = NULL;
    sw_status st;
    if (dt == SW_DTYPE_ANY) {
        const sw_host_ops *ops = sw_host_doubles();
        sw_value *sv = malloc((size_t)(n + 1) * sizeof *sv);
        for (int64_t p = 0; p < n; p++)
            sv[p] = sw_value_f64(slots[p]);
        void *store = NULL;
        st = ops->make(ops, n, sv, &store);
        free(sv);
        if (st == SW_OK) {
            st = sw_generic_new(ops, store, SW_DTYPE_ANY, 1, &c);
            if (st != SW_OK)
                ops->drop(store);
        }
    } else {
        st = sw_generic_new_doubles(n, slots, 1, &c);
    }
    free(slots);
    if (st == SW_OK)
        st = sw_tensor_new(c, 0, l, out);
    sw_carrier_unref(c);
    return st;
}

/* ------------------------------------------------ custom operations */

/* State of the test operations: a call counter (may be NULL). */
static sw_tensor *first_tensor(int32_t nargs, const sw_arg *args) {
    for (int32_t i = 0; i < nargs; i++)
        if (args[i].kind == SW_ARG_TENSOR)
            return args[i].as.tensor;
    return NULL;
}

static void bump(sw_op *op) {
    int *counter = sw_op_state(op);
    if (counter)
        (*counter)++;
}

/* count: y = copy of x; backward counts and passes g (a copy) through to
 * every saved input. */
static sw_status count_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                               sw_tensor **out) {
    (void)op;
    sw_tensor *x = first_tensor(nargs, args);
    if (!x)
        return SW_ETYPE;
    return copy_values(x, SW_DTYPE_FLOATING, 1.0, out);
}

static sw_status count_backward(sw_op *op, sw_tensor *g, int32_t n,
                                sw_tensor **grads) {
    bump(op);
    for (int32_t i = 0; i < n; i++) {
        sw_status st = copy_values(g, SW_DTYPE_FLOATING, 1.0, &grads[i]);
        if (st)
            return st;
    }
    return SW_OK;
}

static const sw_op_class count_class = {SW_OP_CLASS_VERSION, "count",
                                        count_forward, count_backward, NULL};

/* nograd: like count, but backward gives no gradient at all. */
static sw_status nograd_backward(sw_op *op, sw_tensor *g, int32_t n,
                                 sw_tensor **grads) {
    (void)g;
    (void)n;
    (void)grads;
    bump(op);
    return SW_OK;
}

static const sw_op_class nograd_class = {SW_OP_CLASS_VERSION, "nograd",
                                         count_forward, nograd_backward, NULL};

/* anyout: a Floating input gives an Any result. */
static sw_status anyout_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    (void)op;
    sw_tensor *x = first_tensor(nargs, args);
    if (!x)
        return SW_ETYPE;
    return copy_values(x, SW_DTYPE_ANY, 1.0, out);
}

static const sw_op_class anyout_class = {SW_OP_CLASS_VERSION, "anyout",
                                         anyout_forward, count_backward, NULL};

/* noresult: forward succeeds without a result. */
static sw_status noresult_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                  sw_tensor **out) {
    (void)op;
    (void)nargs;
    (void)args;
    (void)out;
    return SW_OK;
}

static const sw_op_class noresult_class = {
    SW_OP_CLASS_VERSION, "noresult", noresult_forward, count_backward, NULL};

static const sw_op_class empty_class = {SW_OP_CLASS_VERSION, "empty", NULL,
                                        NULL, NULL};

/* self: the result is the input itself. */
static sw_status self_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    (void)op;
    sw_tensor *x = first_tensor(nargs, args);
    if (!x)
        return SW_ETYPE;
    *out = sw_tensor_retain(x);
    return SW_OK;
}

static const sw_op_class self_class = {SW_OP_CLASS_VERSION, "self",
                                       self_forward, count_backward, NULL};

/* badgrad: backward gives a gradient of layout 6:1 whatever the input. */
static sw_status badgrad_backward(sw_op *op, sw_tensor *g, int32_t n,
                                  sw_tensor **grads) {
    (void)g;
    bump(op);
    double v[6] = {1, 1, 1, 1, 1, 1};
    sw_tensor *t = make_tensor(GEN, "6:1", 0, v);
    if (!t)
        return SW_ENOMEM;
    grads[0] = t;
    for (int32_t i = 1; i < n; i++)
        grads[i] = NULL;
    return SW_OK;
}

static const sw_op_class badgrad_class = {
    SW_OP_CLASS_VERSION, "badgrad", count_forward, badgrad_backward, NULL};

/* errgrad: backward writes gradients, then fails. */
static sw_status errgrad_backward(sw_op *op, sw_tensor *g, int32_t n,
                                  sw_tensor **grads) {
    sw_status st = count_backward(op, g, n, grads);
    return st ? st : SW_EOVERFLOW;
}

static const sw_op_class errgrad_class = {
    SW_OP_CLASS_VERSION, "errgrad", count_forward, errgrad_backward, NULL};

/* wrong: y = copy of x, but backward claims 2g (for the checker's own
 * test: finite differences must catch it). */
static sw_status wrong_backward(sw_op *op, sw_tensor *g, int32_t n,
                                sw_tensor **grads) {
    bump(op);
    for (int32_t i = 0; i < n; i++) {
        sw_status st = copy_values(g, SW_DTYPE_FLOATING, 2.0, &grads[i]);
        if (st)
            return st;
    }
    return SW_OK;
}

static const sw_op_class wrong_class = {SW_OP_CLASS_VERSION, "wrong",
                                        count_forward, wrong_backward, NULL};

/* chain: a one-element y = x + 1; backward passes g itself through. */
static sw_status chain_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                               sw_tensor **out) {
    (void)op;
    sw_tensor *x = first_tensor(nargs, args);
    if (!x)
        return SW_ETYPE;
    double v = getd(x, 0) + 1.0;
    sw_carrier *c = NULL;
    sw_status st = sw_generic_new_doubles(1, &v, 1, &c);
    if (st == SW_OK)
        st = sw_tensor_new(c, 0, sw_tensor_layout(x), out);
    sw_carrier_unref(c);
    return st;
}

static sw_status chain_backward(sw_op *op, sw_tensor *g, int32_t n,
                                sw_tensor **grads) {
    bump(op);
    grads[0] = sw_tensor_retain(g);
    for (int32_t i = 1; i < n; i++)
        grads[i] = NULL;
    return SW_OK;
}

static const sw_op_class chain_class = {SW_OP_CLASS_VERSION, "chain",
                                        chain_forward, chain_backward, NULL};

/* interrupting: like chain, but backward raises an interrupt request, as
 * a SIGINT handler would while the pass runs. */
static sw_status interrupting_backward(sw_op *op, sw_tensor *g, int32_t n,
                                       sw_tensor **grads) {
    sw_interrupt_request();
    return chain_backward(op, g, n, grads);
}

static const sw_op_class interrupting_class = {SW_OP_CLASS_VERSION,
                                               "interrupting", chain_forward,
                                               interrupting_backward, NULL};

/* Runs a fresh operation of cls on args; the result holds the operation. */
static sw_status run_op(const sw_op_class *cls, int *counter, int32_t nargs,
                        const sw_arg *args, sw_tensor **out) {
    sw_op *op = NULL;
    sw_status st = sw_op_new(cls, counter, &op);
    if (st)
        return st;
    st = sw_op_forward(op, nargs, args, out);
    sw_op_unref(op);
    return st;
}

static sw_status run1(const sw_op_class *cls, int *counter, sw_tensor *x,
                      sw_tensor **out) {
    sw_arg a = sw_arg_tensor(x);
    return run_op(cls, counter, 1, &a, out);
}

/* ------------------------------------------------------- grad mode */

typedef struct thread_report {
    int enabled_at_start;
    int enabled_after_disable;
} thread_report;

static void *grad_thread(void *arg) {
    thread_report *r = arg;
    r->enabled_at_start = sw_grad_enabled();
    sw_set_grad_enabled(0);
    r->enabled_after_disable = sw_grad_enabled();
    return NULL;
}

static void test_grad_mode(void) {
    int64_t base = sw_debug_live_allocs();
    is_int(sw_grad_enabled(), 1, "grad mode starts enabled");
    sw_set_grad_enabled(0);
    is_int(sw_grad_enabled(), 0, "sw_set_grad_enabled(0) disables");
    thread_report rep = {-1, -1};
    pthread_t th;
    if (ok(pthread_create(&th, NULL, grad_thread, &rep) == 0,
           "start a thread")) {
        pthread_join(th, NULL);
        is_int(rep.enabled_at_start, 1,
               "another thread starts enabled while this one is disabled");
        is_int(rep.enabled_after_disable, 0, "that thread can disable");
    }
    is_int(sw_grad_enabled(), 0, "this thread is still disabled");
    sw_set_grad_enabled(5);
    is_int(sw_grad_enabled(), 1, "any non-zero value enables");
    if (ok(pthread_create(&th, NULL, grad_thread, &rep) == 0,
           "start a second thread")) {
        pthread_join(th, NULL);
        is_int(sw_grad_enabled(), 1,
               "a thread disabling itself leaves this one enabled");
    }

    /* Disabled grad mode records nothing. */
    double v[3] = {0.5, -1.0, 2.0};
    sw_tensor *x = make_tensor(GEN, "3:1", 0, v);
    if (x) {
        sw_set_grad_enabled(0);
        sw_tensor *y = NULL;
        sw_status st = sw_unary("tanh", x, &y);
        sw_set_grad_enabled(1);
        if (expect_ok(st, "tanh without grad")) {
            ok(sw_tensor_autograd_ctx(y) == NULL,
               "a result made without grad has no context");
            sw_tensor_unref(y);
        }
        sw_op *op = NULL;
        st = sw_carrier_dispatch_op(sw_tensor_carrier(x), "exp", &op);
        if (expect_ok(st, "dispatch exp")) {
            sw_arg a = sw_arg_tensor(x);
            st = sw_op_forward(op, 1, &a, &y);
            if (expect_ok(st, "forward with grad")) {
                is_int(sw_op_ninputs(op), 1, "with grad: one saved input");
                sw_tensor_unref(y);
            }
            sw_set_grad_enabled(0);
            st = sw_op_forward(op, 1, &a, &y);
            sw_set_grad_enabled(1);
            if (expect_ok(st, "the same forward without grad")) {
                is_int(sw_op_ninputs(op), 0,
                       "without grad the saved inputs are cleared");
                ok(sw_tensor_autograd_ctx(y) == NULL,
                   "and the result has no context");
                sw_tensor_unref(y);
            }
            sw_op_unref(op);
        }
        sw_tensor_unref(x);
    }
    leak_check(base, "grad mode");
}

/* ------------------------------------------------------- recording */

static void test_recording(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
    sw_tensor *f = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_tensor *f2 = make_tensor(GEN, "(2,3):(1,2)", 1, v);
    sw_tensor *a = make_tensor(ANY, "(2,3):(1,2)", 0, v);
    sw_tensor *a2 = make_tensor(ANY, "(2,3):(1,2)", 2, v);
    if (!f || !f2 || !a || !a2)
        goto done;
    sw_tensor *y = NULL;
    sw_status st;

    /* Saved inputs and their versions. */
    setd(f, 0, 0.5);
    setd(f, 0, 0.5);
    int64_t vf = sw_tensor_version(f);
    is_int(vf, 2, "two writes make version 2");
    st = sw_unary("tanh", f, &y);
    if (expect_ok(st, "tanh(Floating)")) {
        sw_op *op = sw_tensor_autograd_ctx(y);
        if (ok(op != NULL, "a Floating result gets a context")) {
            is_int(sw_op_ninputs(op), 1, "one saved input");
            ok(sw_op_input(op, 0) == f, "the saved input is the argument");
            is_int(sw_op_input_version(op, 0), 2,
                   "its version at forward time is saved");
            ok(sw_op_input(op, 1) == NULL && sw_op_input(op, -1) == NULL,
               "no saved input out of range");
            is_int(sw_op_validate_input_versions(op), SW_OK,
                   "versions validate while nothing changed");
            is_int(sw_op_refcount(op), 1, "the result holds its context");
            is_int(sw_tensor_refcount(f), 2,
                   "the caller and the saved input hold the argument");
        }
        sw_tensor_unref(y);
        is_int(sw_tensor_refcount(f), 1,
               "the context went with the result, and its saved input");
    }
    st = sw_add(f, f2, &y);
    if (expect_ok(st, "add(Floating, Floating)")) {
        sw_op *op = sw_tensor_autograd_ctx(y);
        ok(op && sw_op_ninputs(op) == 2 && sw_op_input(op, 0) == f &&
               sw_op_input(op, 1) == f2 && sw_op_input_version(op, 0) == 2 &&
               sw_op_input_version(op, 1) == 0,
           "add saves both inputs in order with their versions");
        sw_tensor_unref(y);
    }

    /* Any and mixed inputs. */
    st = sw_add(a, f, &y);
    if (expect_ok(st, "add(Any, Floating)")) {
        sw_op *op = sw_tensor_autograd_ctx(y);
        ok(op != NULL, "a Floating result of Any + Floating gets a context");
        ok(op && sw_op_ninputs(op) == 2 && sw_op_input(op, 0) == a &&
               sw_op_input(op, 1) == f,
           "both inputs are saved, the Any one too");
        sw_tensor_unref(y);
    }
    st = sw_add(a, a2, &y);
    if (expect_ok(st, "add(Any, Any)")) {
        ok(sw_tensor_autograd_ctx(y) == NULL, "an Any result has no context");
        sw_tensor_unref(y);
    }
    st = sw_div(a, a2, &y);
    if (expect_ok(st, "div(Any, Any)")) {
        is_int(sw_tensor_dtype(y), SW_DTYPE_FLOATING,
               "div(Any, Any) is "
               "Floating");
        ok(sw_tensor_autograd_ctx(y) == NULL,
           "but no input is differentiable: no context");
        sw_tensor_unref(y);
    }
    st = sw_unary("exp", a, &y);
    if (expect_ok(st, "exp(Any)")) {
        ok(sw_tensor_autograd_ctx(y) == NULL,
           "exp(Any) is Floating without a context");
        sw_tensor_unref(y);
    }

    /* An Any result of a differentiable input: inputs are cleared. */
    sw_op *op = NULL;
    st = sw_op_new(&anyout_class, NULL, &op);
    if (expect_ok(st, "sw_op_new(anyout)")) {
        ok(sw_op_get_class(op) == &anyout_class && sw_op_state(op) == NULL,
           "the operation keeps its class and state");
        ok(sw_op_dispatch_name(op) == NULL && sw_op_dispatch_tag(op) == NULL,
           "an operation made directly has no dispatch metadata");
        sw_arg arg = sw_arg_tensor(f);
        st = sw_op_forward(op, 1, &arg, &y);
        if (expect_ok(st, "anyout(Floating)")) {
            is_int(sw_tensor_dtype(y), SW_DTYPE_ANY, "the result is Any");
            ok(sw_tensor_autograd_ctx(y) == NULL,
               "an Any result never gets a context");
            is_int(sw_op_ninputs(op), 0, "and the saved inputs are cleared");
            sw_tensor_unref(y);
        }
        sw_op_unref(op);
    }

    /* Only tensor arguments are saved, in order. */
    int calls = 0;
    sw_arg args3[4] = {sw_arg_f64(2.0), sw_arg_tensor(a), sw_arg_i64(3),
                       sw_arg_tensor(f)};
    st = sw_op_new(&count_class, &calls, &op);
    if (expect_ok(st, "sw_op_new(count)")) {
        st = sw_op_forward(op, 4, args3, &y);
        if (expect_ok(st, "count(2.0, Any, 3, Floating)")) {
            ok(sw_op_ninputs(op) == 2 && sw_op_input(op, 0) == a &&
                   sw_op_input(op, 1) == f,
               "scalars are skipped; the tensors are saved in order");
            ok(sw_tensor_autograd_ctx(y) == op, "the result's context is the "
                                                "operation");
            /* A second forward overwrites the saved state. */
            sw_tensor *y2 = NULL;
            sw_arg one = sw_arg_tensor(f2);
            st = sw_op_forward(op, 1, &one, &y2);
            if (expect_ok(st, "a second forward of one operation")) {
                ok(sw_op_ninputs(op) == 1 && sw_op_input(op, 0) == f2,
                   "the second forward replaces the saved inputs");
                sw_tensor_unref(y2);
            }
            sw_tensor_unref(y);
        }
        sw_op_unref(op);
    }

    /* A later forward without differentiable inputs clears them. */
    st = sw_op_new(&count_class, NULL, &op);
    if (expect_ok(st, "sw_op_new(count) again")) {
        sw_arg one = sw_arg_tensor(f);
        st = sw_op_forward(op, 1, &one, &y);
        if (expect_ok(st, "count(Floating)")) {
            is_int(sw_op_ninputs(op), 1, "one saved input");
            sw_tensor_unref(y);
        }
        one = sw_arg_tensor(a);
        st = sw_op_forward(op, 1, &one, &y);
        if (expect_ok(st, "count(Any)")) {
            is_int(sw_tensor_dtype(y), SW_DTYPE_FLOATING,
                   "count(Any) gives a Floating result");
            ok(sw_tensor_autograd_ctx(y) == NULL,
               "without a differentiable input it gets no context");
            is_int(sw_op_ninputs(op), 0, "and the saved inputs are cleared");
            sw_tensor_unref(y);
        }
        sw_op_unref(op);
    }

    /* Forward hooks that misbehave. */
    st = sw_op_new(&noresult_class, NULL, &op);
    if (expect_ok(st, "sw_op_new(noresult)")) {
        sw_arg arg = sw_arg_tensor(f);
        y = SENT_TENSOR;
        st = sw_op_forward(op, 1, &arg, &y);
        expect_fail(st, SW_ETYPE, "operation forward produced no tensor",
                    "a forward without a result");
        ok(y == SENT_TENSOR, "leaves its out-parameter alone");
        st = sw_op_execute_lowered(op, 1, &arg, &y);
        expect_fail(st, SW_ETYPE, "operation forward produced no tensor",
                    "a lowered execution without a result");
        ok(y == SENT_TENSOR, "leaves its out-parameter alone");
        sw_op_unref(op);
    }
    st = sw_op_new(&empty_class, NULL, &op);
    if (expect_ok(st, "sw_op_new(a class without hooks)")) {
        sw_arg arg = sw_arg_tensor(f);
        y = SENT_TENSOR;
        st = sw_op_forward(op, 1, &arg, &y);
        expect_fail(st, SW_ETYPE, "operation class has no forward hook",
                    "a forward without a hook");
        ok(y == SENT_TENSOR, "leaves its out-parameter alone");
        sw_tensor *grads[2] = {SENT_TENSOR, SENT_TENSOR};
        st = sw_op_backward(op, f, 2, grads);
        expect_fail(st, SW_ERUNTIME,
                    "Tried to call pure virtual function "
                    "\"Operation::backward\"",
                    "a backward without a hook");
        ok(grads[0] == NULL && grads[1] == NULL,
           "a failed backward leaves no gradients");
        sw_op_unref(op);
    }
    sw_op_class bad = count_class;
    bad.version = SW_OP_CLASS_VERSION + 1;
    op = SENT_OP;
    st = sw_op_new(&bad, NULL, &op);
    is_int(st, SW_EVALUE, "sw_op_new refuses another class version (got %s)",
           S(st));
    ok(op == SENT_OP, "and leaves its out-parameter alone");
    sw_clear_error();
    st = sw_op_new(NULL, NULL, &op);
    is_int(st, SW_EVALUE, "sw_op_new refuses a NULL class (got %s)", S(st));
    ok(op == SENT_OP, "and leaves its out-parameter alone");
    sw_clear_error();

    /* A result that is its own input stays a leaf (and nothing cycles). */
    int64_t live = sw_debug_live_allocs();
    st = run1(&self_class, NULL, f, &y);
    if (expect_ok(st, "an operation returning its input")) {
        ok(y == f, "the result is the input");
        ok(sw_tensor_autograd_ctx(f) == NULL, "which stays a leaf");
        sw_tensor_unref(y);
    }
    leak_check(live, "an operation returning its input");
done:
    sw_tensor_unref(f);
    sw_tensor_unref(f2);
    sw_tensor_unref(a);
    sw_tensor_unref(a2);
    leak_check(base, "recording");
}

/* ------------------------------------------ lowered, store_inputs */

static void test_lowered_and_store(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
    sw_tensor *x = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_tensor *y = make_tensor(GEN, "(2,3):(1,2)", 1, v);
    sw_op *op = NULL;
    if (!x || !y)
        goto done;
    sw_status st = sw_carrier_dispatch_op(sw_tensor_carrier(x), "add", &op);
    if (!expect_ok(st, "dispatch add"))
        goto done;
    sw_arg args[2] = {sw_arg_tensor(x), sw_arg_tensor(y)};
    sw_tensor *r = NULL;
    st = sw_op_execute_lowered(op, 2, args, &r);
    if (expect_ok(st, "lowered add")) {
        ok(sw_tensor_autograd_ctx(r) == NULL,
           "a lowered execution attaches no context");
        is_int(sw_op_ninputs(op), 0, "and saves nothing");
        ok(getd(r, 1) == -2.0, "and computes the result");
        sw_tensor_unref(r);
    }
    st = sw_op_forward(op, 2, args, &r);
    if (expect_ok(st, "recorded add")) {
        setd(x, 0, 0.5); /* version 1 */
        sw_arg args2[2] = {sw_arg_tensor(y), sw_arg_tensor(y)};
        sw_tensor *r2 = NULL;
        st = sw_op_execute_lowered(op, 2, args2, &r2);
        if (expect_ok(st, "lowered add after a recorded one")) {
            ok(sw_op_ninputs(op) == 2 && sw_op_input(op, 0) == x &&
                   sw_op_input(op, 1) == y && sw_op_input_version(op, 0) == 0,
               "the lowered execution left the saved inputs and versions");
            ok(sw_tensor_autograd_ctx(r2) == NULL, "and attached no context");
            sw_tensor_unref(r2);
        }
        /* store_inputs keeps the versions of the forward. */
        sw_tensor *in[2] = {x, y};
        st = sw_op_store_inputs(op, 2, in);
        if (expect_ok(st, "store_inputs(x, y)")) {
            is_int(sw_op_input_version(op, 0), 0,
                   "store_inputs keeps the saved version of x");
            st = sw_op_validate_input_versions(op);
            expect_fail(st, SW_ERUNTIME,
                        "A tensor needed for gradient computation was "
                        "modified in-place: expected version 0, got version 1",
                        "validate after x was written");
        }
        sw_tensor *in2[2] = {y, x};
        st = sw_op_store_inputs(op, 2, in2);
        if (expect_ok(st, "store_inputs(y, x)")) {
            ok(sw_op_input(op, 0) == y && sw_op_input(op, 1) == x,
               "store_inputs replaces the inputs");
            ok(sw_op_input_version(op, 0) == 0 &&
                   sw_op_input_version(op, 1) == 0,
               "and keeps the versions as they were");
            st = sw_op_validate_input_versions(op);
            expect_fail(st, SW_ERUNTIME,
                        "A tensor needed for gradient computation was "
                        "modified in-place: expected version 0, got version 1",
                        "validate compares each input with the kept version");
        }
        sw_tensor *in1[1] = {y};
        st = sw_op_store_inputs(op, 1, in1);
        if (expect_ok(st, "store_inputs(y)")) {
            ok(sw_op_ninputs(op) == 1 && sw_op_input(op, 0) == y &&
                   sw_op_input_version(op, 0) == 0,
               "one input, its version kept");
            is_int(sw_op_validate_input_versions(op), SW_OK, "which validates");
        }
        st = sw_op_store_inputs(op, 0, NULL);
        if (expect_ok(st, "store_inputs()"))
            is_int(sw_op_ninputs(op), 0, "no inputs");
        sw_tensor_unref(r);
    }
done:
    sw_op_unref(op);
    sw_tensor_unref(x);
    sw_tensor_unref(y);
    leak_check(base, "lowered execution and store_inputs");
}

/* ------------------------------------------------- backward entry */

static void test_backward_entry(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
    sw_status st;

    /* Non-differentiable tensors. */
    sw_tensor *a = make_tensor(ANY, "1:1", 0, v);
    sw_tensor *ai = make_tensor(CPU_I32, "2:1", 0, v);
    sw_tensor *g1 = scalar_tensor(1.0);
    if (a && ai && g1) {
        st = sw_tensor_backward(a, NULL);
        expect_fail(st, SW_ERUNTIME,
                    "backward is not available for non-differentiable tensors",
                    "backward of an Any tensor");
        st = sw_tensor_backward(a, g1);
        expect_fail(st, SW_ERUNTIME,
                    "backward is not available for non-differentiable tensors",
                    "backward of an Any tensor with a gradient");
        st = sw_tensor_backward(ai, NULL);
        expect_fail(st, SW_ERUNTIME,
                    "backward is not available for non-differentiable tensors",
                    "backward of an Int32 tensor");
    }
    sw_tensor_unref(a);
    sw_tensor_unref(ai);

    /* Exact scalars take an implicit gradient of 1. */
    const struct {
        const char *layout;
        int64_t offset;
        int scalar;
    } shapes[] = {
        {"1:1", 0, 1},         {"1:5", 2, 1},
        {"(1):(3)", 1, 1},     {"1:0", 0, 1},
        {"(1,1):(1,1)", 0, 0}, {"((1)):((1))", 0, 0},
        {"2:1", 0, 0},         {"():()", 0, 0},
        {"(1,2):(1,1)", 0, 0}, {"((1),1):((1),1)", 0, 0},
    };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        char name[96];
        snprintf(name, sizeof name, "implicit backward of %s",
                 shapes[k].layout);
        sw_tensor *x = make_tensor(GEN, shapes[k].layout, shapes[k].offset, v);
        if (!x)
            continue;
        st = sw_tensor_backward(x, NULL);
        if (shapes[k].scalar) {
            if (expect_ok(st, name)) {
                sw_tensor *g = sw_tensor_grad(x);
                ok(g && getd(g, 0) == 1.0, "%s: .grad is 1", name);
                ok(g && sw_layout_equal(sw_tensor_layout(g),
                                        sw_tensor_layout(x)),
                   "%s: .grad has the tensor's layout", name);
                ok(g && sw_tensor_offset(g) == 0 &&
                       sw_carrier_size(sw_tensor_carrier(g)) == 1,
                   "%s: .grad is fresh storage of cosize 1 at offset 0", name);
                ok(g && sw_carrier_is_generic(sw_tensor_carrier(g)) &&
                       sw_tensor_dtype(g) == SW_DTYPE_FLOATING,
                   "%s: .grad is Generic Floating", name);
            }
        } else {
            expect_fail(st, SW_EVALUE,
                        "Tensor.backward requires a gradient for non-scalar "
                        "tensors",
                        name);
            ok(sw_tensor_grad(x) == NULL, "%s: no .grad", name);
        }
        sw_tensor_unref(x);
    }

    /* A CPU exact scalar gets the CPU value 1.0. */
    sw_tensor *xc = make_tensor(CPU, "1:3", 1, v);
    if (xc) {
        st = sw_tensor_backward(xc, NULL);
        if (expect_ok(st, "implicit backward of a CPU scalar")) {
            sw_tensor *gr = sw_tensor_grad(xc);
            ok(gr && getd(gr, 0) == 1.0 &&
                   sw_carrier_is_cpu(sw_tensor_carrier(gr)) &&
                   sw_tensor_dtype(gr) == SW_DTYPE_FLOAT32,
               "the CPU scalar's .grad is CPU Float32 1.0");
        }
        sw_tensor_unref(xc);
    }

    /* Implicit gradient through a graph: the sum of a (1,3) row. */
    sw_tensor *x = make_tensor(GEN, "(1,3):(1,1)", 0, v);
    if (x) {
        sw_tensor *r = NULL;
        st = sw_reduce_sum(x, &r);
        if (expect_ok(st, "reduce of a (1,3) row")) {
            is_str(L(sw_tensor_layout(r)), "1:1", "the sum is an exact scalar");
            st = sw_tensor_backward(r, NULL);
            if (expect_ok(st, "implicit backward of the sum")) {
                double ones[3] = {1, 1, 1};
                check_values(sw_tensor_grad(x), ones, 0, "d sum / dx");
                ok(sw_tensor_grad(r) == NULL,
                   "the non-leaf root gets no .grad");
            }
            sw_tensor_unref(r);
        }
        sw_tensor_unref(x);
    }

    /* Gradient layouts must match. */
    x = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_tensor *gs = make_tensor(GEN, "(2,3):(1,3)", 0, v);
    sw_tensor *gt = make_tensor(GEN, "(3,2):(1,3)", 0, v);
    sw_tensor *gf = make_tensor(GEN, "6:1", 0, v);
    sw_tensor *go = make_tensor(GEN, "(2,3):(1,2)", 4, v);
    if (x && gs && gt && gf && go) {
        st = sw_tensor_backward(x, gs);
        expect_fail(st, SW_EVALUE,
                    "Tensor gradient layout must match tensor layout",
                    "backward with a gradient of other strides");
        st = sw_tensor_backward(x, gt);
        expect_fail(st, SW_EVALUE,
                    "Tensor gradient layout must match tensor layout",
                    "backward with a gradient of another shape");
        st = sw_tensor_backward(x, gf);
        expect_fail(st, SW_EVALUE,
                    "Tensor gradient layout must match tensor layout",
                    "backward with a flat gradient of the same size");
        ok(sw_tensor_grad(x) == NULL, "failed backward calls set no .grad");
        sw_tensor *y = NULL;
        st = sw_unary("tanh", x, &y);
        if (expect_ok(st, "tanh for a layout check")) {
            st = sw_tensor_backward(y, gs);
            expect_fail(st, SW_EVALUE,
                        "Tensor gradient layout must match tensor layout",
                        "backward of a non-leaf with a wrong gradient");
            ok(sw_tensor_grad(x) == NULL, "nothing reached the leaf");
            sw_tensor_unref(y);
        }
        st = sw_tensor_backward(x, go);
        if (expect_ok(st, "a gradient at another offset (offsets are free)"))
            check_values(sw_tensor_grad(x), v, 0, "the gradient's values");
    }
    sw_tensor_unref(x);
    sw_tensor_unref(gs);
    sw_tensor_unref(gt);
    sw_tensor_unref(gf);
    sw_tensor_unref(go);

    /* The gradient's carrier class and dtype are not checked. */
    x = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_tensor *gc = make_tensor(CPU, "(2,3):(1,2)", 0, v);
    if (x && gc) {
        sw_tensor *y = NULL;
        st = sw_mul(x, sw_arg_f64(2.0), &y);
        if (expect_ok(st, "mul for a CPU gradient")) {
            st = sw_tensor_backward(y, gc);
            if (expect_ok(st, "a Generic graph with a CPU gradient")) {
                double want[6];
                for (int i = 0; i < 6; i++)
                    want[i] = 2.0 * (double)(float)v[i];
                check_values(sw_tensor_grad(x), want, 1e-12,
                             "d(2x) with a CPU gradient");
                ok(sw_carrier_is_generic(sw_tensor_carrier(sw_tensor_grad(x))),
                   "the leaf's .grad is Generic, its own class");
            }
            sw_tensor_unref(y);
        }
    }
    sw_tensor_unref(x);
    sw_tensor_unref(gc);
    sw_tensor_unref(g1);
    leak_check(base, "backward entry rules");
}

/* ---------------------------------------------------- accumulation */

static void test_accumulation(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
    double w[6] = {1.0, 2.0, -3.0, 0.5, 4.0, -1.5};
    sw_status st;

    /* A leaf root: the first gradient is a detached copy. */
    sw_tensor *x = make_tensor(GEN, "(2,3):(1,3)", 2, v);
    sw_tensor *g = make_tensor(GEN, "(2,3):(1,3)", 1, w);
    if (x && g) {
        st = sw_tensor_backward(x, g);
        if (expect_ok(st, "backward of a leaf")) {
            sw_tensor *gr = sw_tensor_grad(x);
            check_values(gr, w, 0, "leaf .grad");
            ok(gr && gr != g && sw_tensor_carrier(gr) != sw_tensor_carrier(g),
               ".grad is a copy, not the passed gradient");
            ok(gr &&
                   sw_layout_equal(sw_tensor_layout(gr), sw_tensor_layout(x)) &&
                   sw_tensor_offset(gr) == 0,
               ".grad has the tensor's layout at offset 0");
            ok(gr && sw_carrier_size(sw_tensor_carrier(gr)) ==
                         sw_layout_cosize(sw_tensor_layout(x)),
               ".grad storage holds cosize elements");
            ok(gr && sw_tensor_autograd_ctx(gr) == NULL,
               ".grad is detached (no context)");
            setd(g, 0, 100.0);
            check_values(gr, w, 0,
                         ".grad after a change to the passed gradient");
            st = sw_tensor_backward(x, g);
            if (expect_ok(st, "a second backward")) {
                double want[6];
                for (int i = 0; i < 6; i++)
                    want[i] = 2 * w[i];
                want[0] = w[0] + 100.0;
                ok(sw_tensor_grad(x) == gr,
                   "later gradients accumulate into the same .grad");
                check_values(sw_tensor_grad(x), want, 0,
                             ".grad accumulates the second gradient");
            }
        }
        /* set_grad replaces and clears. */
        sw_tensor *other = make_tensor(GEN, "4:1", 0, v);
        st = sw_tensor_set_grad(x, other);
        if (expect_ok(st, "set_grad with any tensor (no validation)"))
            ok(sw_tensor_grad(x) == other, "set_grad stores it");
        st = sw_tensor_set_grad(x, NULL);
        if (expect_ok(st, "set_grad(NULL)"))
            ok(sw_tensor_grad(x) == NULL, "set_grad(NULL) clears");
        sw_tensor_unref(other);
    }
    sw_tensor_unref(g);

    /* Through an operation, repeated. */
    g = make_tensor(GEN, "(2,3):(1,3)", 0, w);
    if (x && g) {
        sw_tensor *y = NULL;
        st = sw_mul(x, sw_arg_f64(3.0), &y);
        if (expect_ok(st, "mul(x, 3)")) {
            double want[6];
            for (int i = 0; i < 6; i++)
                want[i] = 3 * w[i];
            st = sw_tensor_backward(y, g);
            if (expect_ok(st, "backward through mul"))
                check_values(sw_tensor_grad(x), want, 1e-15, "d(3x)");
            for (int i = 0; i < 6; i++)
                want[i] = 6 * w[i];
            st = sw_tensor_backward(y, g);
            if (expect_ok(st, "backward through mul again"))
                check_values(sw_tensor_grad(x), want, 1e-15,
                             "repeated backward accumulates d(3x)");
            ok(sw_tensor_grad(y) == NULL,
               "the non-leaf root does not retain its gradient");
            sw_tensor_unref(y);
        }
    }
    sw_tensor_unref(x);
    sw_tensor_unref(g);

    /* A CPU leaf gets a CPU .grad from a Generic gradient. */
    double ints[6] = {1, 2, 3, 4, 5, 6};
    x = make_tensor(CPU, "(2,3):(1,2)", 1, ints);
    g = make_tensor(GEN, "(2,3):(1,2)", 0, w);
    if (x && g) {
        st = sw_tensor_backward(x, g);
        if (expect_ok(st, "backward of a CPU leaf with a Generic gradient")) {
            sw_tensor *gr = sw_tensor_grad(x);
            ok(gr && sw_carrier_is_cpu(sw_tensor_carrier(gr)) &&
                   sw_tensor_dtype(gr) == SW_DTYPE_FLOAT32,
               "the CPU leaf's .grad is CPU Float32");
            check_values(gr, w, 0, "the CPU .grad's values");
        }
    }
    sw_tensor_unref(x);
    sw_tensor_unref(g);
    leak_check(base, "accumulation");
}

/* ---------------------------------------------------- retain_grad */

/* Allocations a backward of r = x * 3.0 (r a fresh CPU result, gradient
 * g) makes, counted by the smallest injection point at which it
 * succeeds; x.grad is cleared before each try. -1 if none up to 200. */
static int64_t backward_allocations(sw_tensor *x, sw_tensor *r, sw_tensor *g) {
    for (int64_t n = 0; n < 200; ++n) {
        sw_tensor_set_grad(x, NULL);
        sw_clear_error();
        sw_debug_fail_alloc_after(n);
        sw_status st = sw_tensor_backward(r, g);
        sw_debug_fail_alloc_after(-1);
        if (st == SW_OK)
            return n;
    }
    return -1;
}

/*
 * A leaf's first gradient that nothing else can see (here the fresh
 * result of x * 3.0's backward) becomes its .grad without a copy; one
 * that could be seen elsewhere, or whose carrier has elements the layout
 * does not reach, is still copied. A later pass sums into the same
 * storage in place (a plain CPU copy through the copy kernel).
 */
static void test_gradient_adoption(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
    double w[6] = {1.0, 2.0, -3.0, 0.5, 4.0, -1.5};
    /* Compact: layout (2,3):(1,2) over exactly 6 elements. */
    sw_layout *lc = P("(2,3):(1,2)");
    sw_carrier *cc = NULL;
    sw_tensor *xc = NULL, *rc = NULL, *gc = NULL;
    if (sw_cpu_new(6, SW_DTYPE_FLOAT32, 1, 0, &cc) == SW_OK)
        sw_tensor_new(cc, 0, lc, &xc);
    sw_carrier_unref(cc);
    for (int i = 0; xc && i < 6; ++i)
        setd(xc, i, v[i]);
    /* With holes: (2,3):(1,3) reaches 6 of its 8 elements. */
    sw_tensor *xh = make_tensor(CPU, "(2,3):(1,3)", 0, v), *rh = NULL;
    sw_tensor *gh = make_tensor(CPU, "(2,3):(1,3)", 0, w);
    gc = make_tensor(CPU, "(2,3):(1,2)", 0, w);
    sw_arg three = sw_arg_f64(3.0);
    if (!xc || !xh || !gc || !gh ||
        !expect_ok(sw_mul(xc, three, &rc), "x * 3.0 (compact)") ||
        !expect_ok(sw_mul(xh, three, &rh), "x * 3.0 (with holes)"))
        goto done;
    int64_t nc = backward_allocations(xc, rc, gc);
    int64_t nh = backward_allocations(xh, rh, gh);
    diag("backward allocations: %lld compact, %lld with holes", (long long)nc,
         (long long)nh);
    ok(nc >= 0 && nh >= 0 && nc < nh,
       "a fresh gradient becomes the leaf's .grad without a copy");
    double want[6];
    for (int i = 0; i < 6; ++i)
        want[i] = 3.0 * w[i];
    sw_tensor_set_grad(xc, NULL);
    if (expect_ok(sw_tensor_backward(rc, gc), "backward (compact)")) {
        sw_tensor *gr = sw_tensor_grad(xc);
        check_values(gr, want, 0, "adopted .grad");
        ok(gr && gr != gc && sw_tensor_autograd_ctx(gr) == NULL &&
               sw_tensor_offset(gr) == 0 &&
               sw_layout_equal(sw_tensor_layout(gr), lc) &&
               sw_carrier_size(sw_tensor_carrier(gr)) == 6,
           "adopted .grad: detached, the leaf's layout at offset 0");
        sw_carrier *first = gr ? sw_tensor_carrier(gr) : NULL;
        if (expect_ok(sw_tensor_backward(rc, gc), "second backward")) {
            for (int i = 0; i < 6; ++i)
                want[i] *= 2.0;
            check_values(sw_tensor_grad(xc), want, 0, "summed .grad");
            ok(sw_tensor_grad(xc) &&
                   sw_tensor_carrier(sw_tensor_grad(xc)) == first,
               "the sum is written into the same storage");
        }
    }
    /* The gradient of a leaf root is the caller's tensor: still copied. */
    sw_tensor_set_grad(xc, NULL);
    sw_tensor *own = make_tensor(CPU, "(2,3):(1,2)", 0, w);
    sw_tensor *leaf = NULL;
    if (own && sw_tensor_new(sw_tensor_carrier(own), 0, lc, &leaf) == SW_OK &&
        expect_ok(sw_tensor_backward(leaf, gc), "backward of a leaf root")) {
        sw_tensor *gr = sw_tensor_grad(leaf);
        ok(gr && gr != gc && sw_tensor_carrier(gr) != sw_tensor_carrier(gc),
           "a gradient the caller holds is copied");
        sw_tensor_set_grad(leaf, NULL);
    }
    sw_tensor_unref(leaf);
    sw_tensor_unref(own);
done:
    if (xc)
        sw_tensor_set_grad(xc, NULL);
    if (xh)
        sw_tensor_set_grad(xh, NULL);
    sw_tensor_unref(rc);
    sw_tensor_unref(rh);
    sw_tensor_unref(gc);
    sw_tensor_unref(gh);
    sw_tensor_unref(xc);
    sw_tensor_unref(xh);
    sw_layout_unref(lc);
    leak_check(base, "gradient adoption");
}

/*
 * Constants (sw_tensor_set_requires_grad(t, 0)): no gradient for them, a
 * matmul's backward still right for the other operand, results computed
 * from constants alone are constants while grad mode is on (not under
 * no_grad, where results are leaves as the reference defines), and the
 * refusals.
 */
static void test_requires_grad(void) {
    int64_t base = sw_debug_live_allocs();
    double xv[6] = {1, 2, 3, 4, 5, 6}, wv[6] = {1, 0, -1, 2, 0.5, 1};
    double gv[4] = {1, 1, 1, 1};
    sw_tensor *x = make_tensor(CPU, "(2,3):(1,2)", 0, xv);
    sw_tensor *w = make_tensor(CPU, "(2,3):(1,2)", 0, wv);
    sw_tensor *g = make_tensor(CPU, "(2,2):(1,2)", 0, gv);
    sw_tensor *y = NULL, *r = NULL, *free_r = NULL;
    if (!x || !w || !g)
        goto done;
    is_int(sw_tensor_is_differentiable(x), 1, "Float32 starts differentiable");
    expect_ok(sw_tensor_set_requires_grad(x, 0), "make x a constant");
    is_int(sw_tensor_is_differentiable(x), 0, "a constant is not");
    if (expect_ok(sw_matmul(x, w, &y), "y = x w^T")) {
        ok(sw_tensor_autograd_ctx(y) != NULL, "w still records a node");
        if (expect_ok(sw_tensor_backward(y, g), "backward")) {
            ok(sw_tensor_grad(x) == NULL, "no gradient for the constant");
            sw_tensor *gw = sw_tensor_grad(w);
            /* dW = G^T X with G all ones: dW[j,k] = X[0,k] + X[1,k]. */
            int right = gw != NULL;
            for (int j = 0; right && j < 2; ++j)
                for (int k = 0; k < 3; ++k)
                    right = right &&
                            getd(gw, j + 2 * k) == xv[2 * k] + xv[2 * k + 1];
            ok(right, "w's gradient is G^T X");
        }
        expect_fail(sw_tensor_set_requires_grad(y, 0), SW_ERUNTIME,
                    "requires_grad can only be changed on a leaf tensor (one "
                    "that no recorded operation made); detach() gives a leaf "
                    "over the same storage",
                    "a computed tensor");
    }
    if (expect_ok(sw_unary("relu", x, &r), "relu of a constant")) {
        ok(sw_tensor_autograd_ctx(r) == NULL, "records nothing");
        is_int(sw_tensor_is_differentiable(r), 0, "and is a constant");
    }
    int mode = sw_grad_enabled();
    sw_set_grad_enabled(0);
    if (expect_ok(sw_unary("relu", x, &free_r), "under no_grad"))
        is_int(sw_tensor_is_differentiable(free_r), 1,
               "a result under no_grad is a differentiable leaf");
    sw_set_grad_enabled(mode);
    expect_ok(sw_tensor_set_requires_grad(x, 1), "x takes part again");
    is_int(sw_tensor_is_differentiable(x), 1, "differentiable again");
    sw_tensor *i32 = make_tensor(CPU_I32, "2:1", 0, NULL);
    if (i32) {
        expect_fail(sw_tensor_set_requires_grad(i32, 1), SW_ERUNTIME,
                    "only tensors of a differentiable dtype (Float32, "
                    "Floating) can require gradients",
                    "an Int32 tensor");
        expect_ok(sw_tensor_set_requires_grad(i32, 0),
                  "False on Int32 changes nothing");
        is_int(sw_tensor_is_differentiable(i32), 0, "still not");
    }
    sw_tensor_unref(i32);
    expect_fail(sw_tensor_set_requires_grad(NULL, 0), SW_ETYPE,
                "tensor must be a Tensor", "NULL");
done:
    sw_tensor_unref(free_r);
    sw_tensor_unref(r);
    sw_tensor_unref(y);
    sw_tensor_unref(g);
    sw_tensor_unref(w);
    sw_tensor_unref(x);
    is_int(sw_debug_live_allocs(), base, "requires_grad: nothing leaked");
}

static void test_retain_grad(void) {
    int64_t base = sw_debug_live_allocs();
    double v[3] = {0.5, -1.0, 2.0};
    double w[3] = {1.0, -2.0, 0.5};
    sw_tensor *x = make_tensor(GEN, "3:1", 0, v);
    sw_tensor *g = make_tensor(GEN, "3:1", 0, w);
    sw_tensor *a = NULL, *b = NULL, *c = NULL;
    sw_status st;
    if (!x || !g)
        goto done;
    st = sw_unary("tanh", x, &a);
    if (!expect_ok(st, "a = tanh(x)"))
        goto done;
    st = sw_mul(a, sw_arg_f64(2.0), &b);
    if (!expect_ok(st, "b = 2a"))
        goto done;
    double dx[3], da[3], acc[3];
    for (int i = 0; i < 3; i++) {
        double t = tanh(v[i]);
        da[i] = 2 * w[i];
        dx[i] = da[i] * (1 - t * t);
    }
    is_int(sw_tensor_retains_grad(a), 0, "retain_grad starts off");
    st = sw_tensor_backward(b, g);
    if (expect_ok(st, "backward of b")) {
        ok(sw_tensor_grad(a) == NULL, "a non-leaf gets no .grad by default");
        check_values(sw_tensor_grad(x), dx, 1e-12, "the leaf's .grad");
    }
    st = sw_tensor_retain_grad(a, 1);
    if (expect_ok(st, "retain_grad(a)"))
        is_int(sw_tensor_retains_grad(a), 1, "a retains its gradient");
    st = sw_tensor_backward(b, g);
    if (expect_ok(st, "backward of b with a retained")) {
        check_values(sw_tensor_grad(a), da, 1e-15, "a's retained .grad");
        for (int i = 0; i < 3; i++)
            acc[i] = 2 * dx[i];
        check_values(sw_tensor_grad(x), acc, 1e-12,
                     "the leaf's .grad accumulated");
    }
    st = sw_tensor_retain_grad(a, 0);
    if (expect_ok(st, "retain_grad(a, 0)"))
        is_int(sw_tensor_retains_grad(a), 0, "retention is off again");
    st = sw_tensor_backward(b, g);
    if (expect_ok(st, "backward of b with retention off"))
        check_values(sw_tensor_grad(a), da, 1e-15,
                     "a's .grad no longer accumulates");
    st = sw_tensor_retain_grad(b, 1);
    if (expect_ok(st, "retain_grad on the root")) {
        st = sw_tensor_backward(b, g);
        if (expect_ok(st, "backward of a retaining root"))
            check_values(sw_tensor_grad(b), w, 0, "the root's .grad");
    }

    /* A result made without grad is a leaf. */
    sw_set_grad_enabled(0);
    st = sw_unary("tanh", x, &c);
    sw_set_grad_enabled(1);
    if (expect_ok(st, "tanh without grad")) {
        sw_tensor *before = sw_tensor_grad(x);
        double keep[3];
        for (int i = 0; i < 3; i++)
            keep[i] = getd(before, i);
        st = sw_tensor_backward(c, g);
        if (expect_ok(st, "backward of a no-grad result")) {
            check_values(sw_tensor_grad(c), w, 0, "the no-grad leaf's .grad");
            check_values(sw_tensor_grad(x), keep, 0,
                         "nothing flowed past the no-grad result");
        }
    }
done:
    sw_tensor_unref(c);
    sw_tensor_unref(b);
    sw_tensor_unref(a);
    sw_tensor_unref(x);
    sw_tensor_unref(g);
    leak_check(base, "retain_grad");
}

/* ------------------------------------------------- graph shapes */

static void test_graph_shapes(void) {
    int64_t base = sw_debug_live_allocs();
    double v[4] = {0.5, -1.0, 2.0, 1.25};
    double w[4] = {1.0, -2.0, 0.5, 3.0};
    sw_tensor *g = make_tensor(GEN, "(2,2):(1,2)", 0, w);
    sw_tensor *x = make_tensor(GEN, "(2,2):(1,2)", 0, v);
    sw_status st;
    if (!g || !x)
        goto done;
    double want[4];

    /* One tensor in both slots of one operation. */
    sw_tensor *y = NULL;
    st = sw_add(x, x, &y);
    if (expect_ok(st, "add(x, x)")) {
        st = sw_tensor_backward(y, g);
        for (int i = 0; i < 4; i++)
            want[i] = 2 * w[i];
        if (expect_ok(st, "backward of add(x, x)"))
            check_values(sw_tensor_grad(x), want, 0, "d add(x, x) = 2g");
        sw_tensor_unref(y);
    }
    sw_tensor_set_grad(x, NULL);
    st = sw_sub(x, x, &y);
    if (expect_ok(st, "sub(x, x)")) {
        st = sw_tensor_backward(y, g);
        for (int i = 0; i < 4; i++)
            want[i] = 0;
        if (expect_ok(st, "backward of sub(x, x)"))
            check_values(sw_tensor_grad(x), want, 0, "d sub(x, x) = 0");
        sw_tensor_unref(y);
    }
    sw_tensor_set_grad(x, NULL);
    st = sw_elementwise_mul(x, x, &y);
    if (expect_ok(st, "elementwise_mul(x, x)")) {
        st = sw_tensor_backward(y, g);
        for (int i = 0; i < 4; i++)
            want[i] = 2 * v[i] * w[i];
        if (expect_ok(st, "backward of x * x"))
            check_values(sw_tensor_grad(x), want, 1e-15, "d x*x = 2xg");
        sw_tensor_unref(y);
    }
    sw_tensor_set_grad(x, NULL);

    /* A diamond: tanh(x) + exp(x), doubled. */
    sw_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    st = sw_unary("tanh", x, &a);
    if (st == SW_OK)
        st = sw_unary("exp", x, &b);
    if (st == SW_OK)
        st = sw_add(a, b, &c);
    if (st == SW_OK)
        st = sw_mul(c, sw_arg_i64(2), &d);
    if (expect_ok(st, "the diamond 2(tanh x + exp x)")) {
        st = sw_tensor_backward(d, g);
        for (int i = 0; i < 4; i++) {
            double t = tanh(v[i]);
            want[i] = 2 * w[i] * (1 - t * t + exp(v[i]));
        }
        if (expect_ok(st, "backward of the diamond"))
            check_values(sw_tensor_grad(x), want, 1e-12, "the diamond's .grad");
    }
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_tensor_unref(c);
    sw_tensor_unref(d);
    sw_tensor_set_grad(x, NULL);

    /* Each operation's backward runs once per pass, with the sum. */
    int calls = 0;
    a = b = c = d = NULL;
    st = run1(&count_class, &calls, x, &a);
    if (st == SW_OK)
        st = sw_add(a, a, &b);
    if (st == SW_OK)
        st = sw_mul(a, sw_arg_f64(3.0), &c);
    if (st == SW_OK)
        st = sw_add(b, c, &d);
    if (expect_ok(st, "a = count(x); d = (a + a) + 3a")) {
        st = sw_tensor_backward(d, g);
        for (int i = 0; i < 4; i++)
            want[i] = 5 * w[i];
        if (expect_ok(st, "backward of d")) {
            is_int(calls, 1, "count's backward ran once");
            check_values(sw_tensor_grad(x), want, 1e-15, "with the sum 5g");
        }
        st = sw_tensor_backward(d, g);
        for (int i = 0; i < 4; i++)
            want[i] = 10 * w[i];
        if (expect_ok(st, "backward of d again")) {
            is_int(calls, 2, "once more per pass");
            check_values(sw_tensor_grad(x), want, 1e-15, "accumulated 10g");
        }
    }
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_tensor_unref(c);
    sw_tensor_unref(d);
    sw_tensor_set_grad(x, NULL);

    /* Operations that receive no gradient are visited, not run. */
    int above = 0, below = 0;
    a = b = c = NULL;
    st = run1(&count_class, &below, x, &a);
    if (st == SW_OK)
        st = run1(&nograd_class, &above, a, &b);
    if (expect_ok(st, "a = count(x); b = nograd(a)")) {
        st = sw_tensor_backward(b, g);
        if (expect_ok(st, "backward of b")) {
            is_int(above, 1, "nograd's backward ran");
            is_int(below, 0, "count got no gradient and did not run");
            ok(sw_tensor_grad(x) == NULL, "no gradient reached the leaf");
        }
        st = sw_add(b, a, &c);
        if (expect_ok(st, "c = b + a")) {
            st = sw_tensor_backward(c, g);
            if (expect_ok(st, "backward of c")) {
                is_int(above, 2, "nograd ran again");
                is_int(below, 1, "count ran once, with the one gradient");
                check_values(sw_tensor_grad(x), w, 0, "the leaf got g once");
            }
        }
    }
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_tensor_unref(c);
    sw_tensor_set_grad(x, NULL);

    /* A 60-level doubling chain: 2^60 paths, 60 backward calls. */
    sw_tensor *s = scalar_tensor(1.0);
    if (s) {
        int twice = 0;
        sw_tensor *cur = sw_tensor_retain(s);
        st = SW_OK;
        for (int k = 0; k < 60 && st == SW_OK; k++) {
            sw_tensor *sum = NULL, *next = NULL;
            st = sw_add(cur, cur, &sum);
            if (st == SW_OK)
                st = run1(&count_class, &twice, sum, &next);
            sw_tensor_unref(sum);
            sw_tensor_unref(cur);
            cur = st == SW_OK ? next : NULL;
        }
        if (expect_ok(st, "a 60-level doubling chain")) {
            ok(getd(cur, 0) == ldexp(1.0, 60), "its value is 2^60");
            st = sw_tensor_backward(cur, NULL);
            if (expect_ok(st, "backward of the doubling chain")) {
                is_int(twice, 60, "each level's backward ran once");
                double want60 = ldexp(1.0, 60);
                check_values(sw_tensor_grad(s), &want60, 0,
                             "d chain / dx = 2^60");
            }
        }
        sw_tensor_unref(cur);
        sw_tensor_unref(s);
    }
done:
    sw_tensor_unref(x);
    sw_tensor_unref(g);
    leak_check(base, "graph shapes");
}

/* ------------------------------------------------------ deep chain */

typedef struct chain_report {
    sw_status built, first, second;
    int64_t value;
    int calls_first, calls_second;
    double grad_first, grad_second;
    int64_t live_before, live_after;
} chain_report;

/*
 * Builds, backpropagates and frees a chain of 100,000 operations. Runs on
 * a thread with a 1 MiB stack: a recursive pass or a recursive release
 * (100,000 nested frames) would overflow it.
 */
static void *long_chain_thread(void *arg) {
    enum { DEPTH = 100000 };
    chain_report *r = arg;
    r->live_before = sw_debug_live_allocs();
    sw_tensor *x = NULL;
    double zero = 0.0;
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    r->built = sw_generic_new_doubles(1, &zero, 1, &c);
    if (r->built == SW_OK)
        r->built = sw_layout_leaf(1, 1, &l);
    if (r->built == SW_OK)
        r->built = sw_tensor_new(c, 0, l, &x);
    sw_carrier_unref(c);
    sw_layout_unref(l);
    int calls = 0;
    sw_tensor *cur = sw_tensor_retain(x);
    for (int k = 0; k < DEPTH && r->built == SW_OK; k++) {
        sw_tensor *next = NULL;
        r->built = run1(&chain_class, &calls, cur, &next);
        sw_tensor_unref(cur);
        cur = r->built == SW_OK ? next : NULL;
    }
    if (r->built == SW_OK) {
        r->value = (int64_t)getd(cur, 0);
        r->first = sw_tensor_backward(cur, NULL);
        r->calls_first = calls;
        r->grad_first = getd(sw_tensor_grad(x), 0);
        r->second = sw_tensor_backward(cur, NULL);
        r->calls_second = calls;
        r->grad_second = getd(sw_tensor_grad(x), 0);
    }
    /* Releasing the last tensor frees the whole chain, iteratively. */
    sw_tensor_unref(cur);
    sw_tensor_unref(x);
    r->live_after = sw_debug_live_allocs();
    return NULL;
}

static void test_long_chain(void) {
    chain_report r;
    memset(&r, 0, sizeof r);
    r.built = r.first = r.second = SW_EVALUE;
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)1 << 20);
    int started = pthread_create(&th, &attr, long_chain_thread, &r) == 0;
    pthread_attr_destroy(&attr);
    if (!ok(started, "start a thread with a 1 MiB stack"))
        return;
    pthread_join(th, NULL);
    if (!ok(r.built == SW_OK, "a chain of 100,000 operations is built"))
        return;
    is_int(r.value, 100000, "the chain's value");
    is_int(r.first, SW_OK, "backward of the chain succeeds");
    is_int(r.calls_first, 100000, "every operation's backward ran once");
    ok(r.grad_first == 1.0, "the leaf's .grad is 1");
    is_int(r.second, SW_OK, "backward of the chain again succeeds");
    is_int(r.calls_second, 200000, "and once more per pass");
    ok(r.grad_second == 2.0, "the leaf's .grad is 2");
    is_int(r.live_after, r.live_before,
           "a chain of 100,000 operations: freed without a leak");
}

/* -------------------------------------------------------- versions */

static void test_versions(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
    sw_tensor *x = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_tensor *g = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_layout *l2 = P("2:1");
    sw_tensor *alias = NULL, *y = NULL;
    sw_status st;
    if (!x || !g || !l2)
        goto done;
    st = sw_tensor_new(sw_tensor_carrier(x), 3, l2, &alias);
    if (!expect_ok(st, "another tensor over x's carrier"))
        goto done;
    setd(x, 0, 0.5); /* version 1 */
    st = sw_elementwise_mul(x, x, &y);
    if (!expect_ok(st, "y = x * x at version 1"))
        goto done;
    setd(alias, 0, 7.0);
    setd(alias, 1, 8.0);
    is_int(sw_tensor_version(x), 3, "two writes through the alias: version 3");
    st = sw_tensor_backward(y, g);
    expect_fail(st, SW_ERUNTIME,
                "A tensor needed for gradient computation was modified "
                "in-place: expected version 1, got version 3",
                "backward after writes through another tensor");
    ok(sw_tensor_grad(x) == NULL, "the failed backward set no .grad");
    st = sw_op_validate_input_versions(sw_tensor_autograd_ctx(y));
    expect_fail(st, SW_ERUNTIME,
                "A tensor needed for gradient computation was modified "
                "in-place: expected version 1, got version 3",
                "validate_input_versions directly");
    sw_tensor_unref(y);
    y = NULL;

    /* A view input: writing the source invalidates. */
    sw_view_key keys[2] = {KALL(), KS(1, 1, 0, 0)};
    sw_tensor *vw = NULL, *t = NULL;
    st = sw_view(x, 2, keys, &vw);
    if (st == SW_OK)
        st = sw_unary("exp", vw, &t);
    if (expect_ok(st, "t = exp(view of x)")) {
        int64_t before = sw_tensor_version(x);
        setd(x, 5, 1.0);
        sw_tensor *gt = make_tensor(GEN, L(sw_tensor_layout(t)), 0, v);
        if (gt) {
            st = sw_tensor_backward(t, gt);
            char msg[160];
            snprintf(msg, sizeof msg,
                     "A tensor needed for gradient computation was modified "
                     "in-place: expected version %lld, got version %lld",
                     (long long)before, (long long)before + 1);
            expect_fail(st, SW_ERUNTIME, msg,
                        "backward after a write to the viewed source");
        }
        sw_tensor_unref(gt);
    }
    sw_tensor_unref(t);
    sw_tensor_unref(vw);

    /* Non-differentiable saved inputs are checked too. */
    sw_tensor *an = make_tensor(ANY, "(2,3):(1,2)", 0, v);
    if (an) {
        st = sw_add(an, x, &y);
        if (expect_ok(st, "y = add(Any, x)")) {
            int64_t before = sw_tensor_version(an);
            setd(an, 2, 4.0);
            st = sw_tensor_backward(y, g);
            char msg[160];
            snprintf(msg, sizeof msg,
                     "A tensor needed for gradient computation was modified "
                     "in-place: expected version %lld, got version %lld",
                     (long long)before, (long long)before + 1);
            expect_fail(st, SW_ERUNTIME, msg,
                        "backward after a write to the saved Any input");
            sw_tensor_unref(y);
            y = NULL;
        }
        sw_tensor_unref(an);
    }

    /* An operation that receives no gradient is not validated. */
    sw_tensor *ca = NULL, *nb = NULL;
    int below = 0, above = 0;
    st = run1(&count_class, &below, x, &ca);
    if (st == SW_OK)
        st = run1(&nograd_class, &above, ca, &nb);
    if (expect_ok(st, "a = count(x); b = nograd(a)")) {
        setd(x, 4, 2.0);
        st = sw_tensor_backward(nb, g);
        if (expect_ok(st, "backward of b after a write to x")) {
            ok(above == 1 && below == 0,
               "only the operation with a gradient ran (and was validated)");
            ok(sw_tensor_grad(x) == NULL, "x got no gradient");
        }
    }
    sw_tensor_unref(nb);
    sw_tensor_unref(ca);

    /* Writes elsewhere do not matter. */
    sw_tensor *other = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    if (other) {
        st = sw_unary("sigmoid", x, &y);
        if (expect_ok(st, "y = sigmoid(x)")) {
            setd(other, 0, 9.0);
            setd(g, 1, 9.0);
            st = sw_tensor_backward(y, g);
            ok(st == SW_OK,
               "writes to unrelated tensors (and the gradient) "
               "do not invalidate (got %s)",
               S(st));
            sw_clear_error();
        }
        sw_tensor_unref(other);
    }
done:
    sw_tensor_unref(y);
    sw_tensor_unref(alias);
    sw_layout_unref(l2);
    sw_tensor_unref(x);
    sw_tensor_unref(g);
    leak_check(base, "version checks");
}

/* ------------------------------------------------- bad backward */

static void test_bad_backward(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};
    sw_tensor *x = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_tensor *g = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_status st;
    if (!x || !g)
        goto done;
    int calls = 0;
    sw_tensor *y = NULL, *z = NULL;
    st = run1(&badgrad_class, &calls, x, &y);
    if (expect_ok(st, "y = badgrad(x)")) {
        st = sw_tensor_backward(y, g);
        expect_fail(st, SW_EVALUE,
                    "Tensor gradient layout must match tensor layout",
                    "a backward hook returning a 6:1 gradient for (2,3)");
        is_int(calls, 1, "the hook ran");
        ok(sw_tensor_grad(x) == NULL, "no .grad was set");
        /* Deeper in a graph, with more work pending. */
        st = sw_unary("tanh", y, &z);
        if (expect_ok(st, "z = tanh(y)")) {
            st = sw_tensor_backward(z, g);
            expect_fail(st, SW_EVALUE,
                        "Tensor gradient layout must match tensor layout",
                        "the same below another operation");
            sw_tensor_unref(z);
        }
        sw_tensor_unref(y);
    }
    calls = 0;
    st = run1(&errgrad_class, &calls, x, &y);
    if (expect_ok(st, "y = errgrad(x)")) {
        st = sw_tensor_backward(y, g);
        is_int(st, SW_EOVERFLOW,
               "a failing backward hook's status comes out (got %s)", S(st));
        sw_clear_error();
        ok(sw_tensor_grad(x) == NULL, "no .grad was set");
        sw_tensor_unref(y);
    }
    /* An input released after the forward. */
    sw_tensor *xr = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    if (xr) {
        st = sw_unary("tanh", xr, &y);
        if (expect_ok(st, "y = tanh(xr)")) {
            int64_t ver = sw_tensor_version(xr);
            sw_carrier_release_storage(sw_tensor_carrier(xr));
            is_int(sw_tensor_version(xr), ver, "release keeps the version");
            st = sw_tensor_backward(y, g);
            expect_fail(st, SW_ERUNTIME, "tensor carrier is released",
                        "backward reading a released input");
            ok(sw_tensor_grad(xr) == NULL, "no .grad was set");
            sw_tensor_unref(y);
        }
        sw_tensor_unref(xr);
    }

    /* A gradient for a non-differentiable input is dropped. */
    sw_tensor *a = make_tensor(ANY, "(2,3):(1,2)", 0, v);
    if (a) {
        sw_arg args[2] = {sw_arg_tensor(a), sw_arg_tensor(x)};
        calls = 0;
        st = run_op(&count_class, &calls, 2, args, &y);
        if (expect_ok(st, "y = count(Any, x)")) {
            ok(sw_tensor_autograd_ctx(y) != NULL, "y has a context");
            st = sw_tensor_backward(y, g);
            if (expect_ok(st, "backward with a gradient for the Any input")) {
                is_int(calls, 1, "the hook ran");
                check_values(sw_tensor_grad(x), v, 0,
                             "the differentiable input got its gradient");
                ok(sw_tensor_grad(a) == NULL, "the Any input got nothing");
            }
            sw_tensor_unref(y);
        }
        sw_tensor_unref(a);
    }
done:
    sw_tensor_unref(x);
    sw_tensor_unref(g);
    leak_check(base, "failing backward hooks");
}

/* --------------------------------------- non-differentiable tensors */

static void test_nondifferentiable(void) {
    int64_t base = sw_debug_live_allocs();
    double v[2] = {1, 2};
    sw_tensor *a = make_tensor(ANY, "2:1", 0, v);
    sw_tensor *ai = make_tensor(CPU_I32, "2:1", 0, v);
    sw_tensor *f = make_tensor(GEN, "2:1", 0, v);
    sw_op *op = NULL;
    sw_status st = sw_op_new(&count_class, NULL, &op);
    if (!a || !ai || !f || st != SW_OK)
        goto done;
    sw_tensor *ts[2] = {a, ai};
    for (int k = 0; k < 2; k++) {
        const char *kn = k == 0 ? "Any" : "Int32";
        char name[96];
        sw_tensor *t = ts[k];
        snprintf(name, sizeof name, "set_autograd_ctx on an %s tensor", kn);
        st = sw_tensor_set_autograd_ctx(t, op);
        expect_fail(st, SW_ERUNTIME,
                    "autograd_ctx is not available for non-differentiable "
                    "tensors",
                    name);
        ok(sw_tensor_autograd_ctx(t) == NULL, "%s: no context was set", name);
        st = sw_tensor_set_autograd_ctx(t, NULL);
        is_int(st, SW_OK, "clearing the context of an %s tensor is allowed",
               kn);
        snprintf(name, sizeof name, "set_grad on an %s tensor", kn);
        st = sw_tensor_set_grad(t, f);
        expect_fail(st, SW_ERUNTIME,
                    "grad is not available for non-differentiable tensors",
                    name);
        ok(sw_tensor_grad(t) == NULL, "%s: no .grad was set", name);
        st = sw_tensor_set_grad(t, NULL);
        is_int(st, SW_OK, "clearing the .grad of an %s tensor is allowed", kn);
        snprintf(name, sizeof name, "retain_grad on an %s tensor", kn);
        st = sw_tensor_retain_grad(t, 1);
        expect_fail(st, SW_ERUNTIME,
                    "retain_grad is not available for non-differentiable "
                    "tensors",
                    name);
        snprintf(name, sizeof name, "retain_grad(0) on an %s tensor", kn);
        st = sw_tensor_retain_grad(t, 0);
        expect_fail(st, SW_ERUNTIME,
                    "retain_grad is not available for non-differentiable "
                    "tensors",
                    name);
        is_int(sw_tensor_retains_grad(t), 0, "%s: retention stays off", kn);
    }
    /* On a differentiable tensor all three are allowed. */
    st = sw_tensor_set_autograd_ctx(f, op);
    if (expect_ok(st, "set_autograd_ctx on a Floating tensor")) {
        ok(sw_tensor_autograd_ctx(f) == op, "the context is set");
        st = sw_tensor_set_autograd_ctx(f, NULL);
        ok(st == SW_OK && sw_tensor_autograd_ctx(f) == NULL,
           "and can be cleared");
    }
    st = sw_tensor_set_grad(f, a);
    if (expect_ok(st, "set_grad stores any tensor without validation")) {
        ok(sw_tensor_grad(f) == a, "the .grad is set");
        sw_tensor_set_grad(f, NULL);
    }
done:
    sw_op_unref(op);
    sw_tensor_unref(a);
    sw_tensor_unref(ai);
    sw_tensor_unref(f);
    leak_check(base, "non-differentiable tensors");
}

/* ---------------------------------------------- finite differences */

typedef enum fdk {
    FD_ADD,
    FD_SUB,
    FD_EMUL,
    FD_DIV,
    FD_MULT, /* sw_mul with a tensor */
    FD_MUL,  /* sw_mul with the scalar arg */
    FD_NEG,
    FD_POW,
    FD_UNARY,
    FD_REDUCE,
    FD_MATMUL,
    FD_VIEW,
    FD_PERMUTE,
    FD_REARRANGE,
    FD_TANH_ADD_REDUCE, /* reduce(tanh(add(x, x))) */
    FD_MATMUL_SELF,     /* reduce(matmul(permute(x), permute(x))) */
    FD_WRONG            /* an operation with a wrong backward */
} fdk;

typedef struct fd_case {
    const char *name;
    fdk k;
    const char *uname;
    sw_arg arg;
    int nin;
    double lo[2], hi[2], gap[2];
    /* FD_VIEW */
    int nkeys;
    sw_view_key keys[2];
    /* FD_PERMUTE, FD_REARRANGE */
    int nord;
    int32_t ord[8];
    int nsel;
    int32_t sel[4];
} fd_case;

static sw_status fd_apply(const fd_case *c, sw_tensor *const *in,
                          sw_tensor **out) {
    sw_tensor *t1 = NULL, *t2 = NULL;
    sw_status st;
    int32_t tr[2] = {1, 0};
    switch (c->k) {
    case FD_ADD:
        return sw_add(in[0], in[1], out);
    case FD_SUB:
        return sw_sub(in[0], in[1], out);
    case FD_EMUL:
        return sw_elementwise_mul(in[0], in[1], out);
    case FD_DIV:
        return sw_div(in[0], in[1], out);
    case FD_MULT:
        return sw_mul(in[0], sw_arg_tensor(in[1]), out);
    case FD_MUL:
        return sw_mul(in[0], c->arg, out);
    case FD_NEG:
        return sw_neg(in[0], out);
    case FD_POW:
        return sw_pow(in[0], c->arg, out);
    case FD_UNARY:
        return sw_unary(c->uname, in[0], out);
    case FD_REDUCE:
        return sw_reduce_sum(in[0], out);
    case FD_MATMUL:
        return sw_matmul(in[0], in[1], out);
    case FD_VIEW:
        return sw_view(in[0], c->nkeys, c->keys, out);
    case FD_PERMUTE:
        return sw_permute(in[0], c->nord, c->ord, out);
    case FD_REARRANGE:
        return sw_rearrange(in[0], c->nord, c->ord, c->nsel, c->sel, out);
    case FD_TANH_ADD_REDUCE:
        st = sw_add(in[0], in[0], &t1);
        if (st == SW_OK)
            st = sw_unary("tanh", t1, &t2);
        if (st == SW_OK)
            st = sw_reduce_sum(t2, out);
        break;
    case FD_WRONG:
        return run1(&wrong_class, NULL, in[0], out);
    case FD_MATMUL_SELF:
        st = sw_permute(in[0], 2, tr, &t1);
        if (st == SW_OK)
            st = sw_matmul(t1, t1, &t2);
        if (st == SW_OK)
            st = sw_reduce_sum(t2, out);
        break;
    default:
        st = SW_EVALUE;
    }
    sw_tensor_unref(t1);
    sw_tensor_unref(t2);
    return st;
}

/* sum over i of w[i] * f(in)[i], computed without grad. */
static double fd_loss(const fd_case *c, sw_tensor *const *in, const double *w,
                      int64_t n) {
    sw_tensor *y = NULL;
    sw_set_grad_enabled(0);
    sw_status st = fd_apply(c, in, &y);
    sw_set_grad_enabled(1);
    if (st != SW_OK)
        return NAN;
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += w[i] * getd(y, i);
    sw_tensor_unref(y);
    return s;
}

static int fd_checks_run;

/*
 * Backward with a random gradient w, then central differences of
 * sum(w * f) with respect to every logical element of every input.
 */
static void fd_check(const fd_case *c, sw_tensor *const *in,
                     const char *where) {
    char name[256];
    snprintf(name, sizeof name, "gradient of %s on %s", c->name, where);
    for (int k = 0; k < c->nin; k++)
        sw_tensor_set_grad(in[k], NULL);
    sw_tensor *y = NULL;
    sw_status st = fd_apply(c, in, &y);
    if (!expect_ok(st, name))
        return;
    sw_layout *ly = sw_tensor_layout(y);
    int64_t ny = sw_layout_size(ly);
    double *w = malloc((size_t)ny * sizeof *w);
    for (int64_t i = 0; i < ny; i++)
        w[i] = uniform(-1, 1);
    sw_tensor *wt = make_tensor(GEN, L(ly), 0, w);
    st = wt ? sw_tensor_backward(y, wt) : SW_ENOMEM;
    sw_tensor_unref(wt);
    sw_tensor_unref(y);
    if (!expect_ok(st, name)) {
        free(w);
        return;
    }
    const double h = 1e-5;
    for (int k = 0; k < c->nin; k++) {
        sw_tensor *gk = sw_tensor_grad(in[k]);
        if (!ok(gk != NULL, "%s: input %d has a .grad", name, k))
            continue;
        ok(sw_layout_equal(sw_tensor_layout(gk), sw_tensor_layout(in[k])),
           "%s: input %d's .grad has its layout", name, k);
        sw_carrier *ck = sw_tensor_carrier(in[k]);
        int64_t n = sw_tensor_size(in[k]), bad = -1;
        double bad_num = 0, bad_ana = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t p = phys(in[k], i);
            double orig = getd(in[k], i);
            sw_value vp = sw_value_f64(orig + h), vm = sw_value_f64(orig - h),
                     vo = sw_value_f64(orig);
            sw_carrier_set(ck, p, &vp);
            double lp = fd_loss(c, in, w, ny);
            sw_carrier_set(ck, p, &vm);
            double lm = fd_loss(c, in, w, ny);
            sw_carrier_set(ck, p, &vo);
            double num = (lp - lm) / (2 * h);
            double ana = getd(gk, i);
            if (bad < 0 && !(fabs(num - ana) <= 1e-6 * fmax(1.0, fabs(ana)))) {
                bad = i;
                bad_num = num;
                bad_ana = ana;
            }
        }
        if (c->k == FD_WRONG) {
            ok(bad >= 0, "%s: central differences catch the wrong gradient",
               name);
            continue;
        }
        if (!ok(bad < 0, "%s: input %d matches central differences", name, k))
            diag("logical %lld: backward %.12g, finite differences %.12g",
                 (long long)bad, bad_ana, bad_num);
        fd_checks_run++;
    }
    free(w);
}

static void run_fd_case(const fd_case *c, const char *const *layouts,
                        const int64_t *offsets, int draws) {
    for (int d = 0; d < draws; d++) {
        sw_tensor *in[2] = {NULL, NULL};
        bool good = true;
        for (int k = 0; k < c->nin; k++) {
            in[k] = rand_tensor(layouts[k], offsets[k], c->lo[k], c->hi[k],
                                c->gap[k]);
            good = good && in[k];
        }
        char where[200];
        if (c->nin == 2)
            snprintf(where, sizeof where, "%s@%lld, %s@%lld (draw %d)",
                     layouts[0], (long long)offsets[0], layouts[1],
                     (long long)offsets[1], d);
        else
            snprintf(where, sizeof where, "%s@%lld (draw %d)", layouts[0],
                     (long long)offsets[0], d);
        if (good)
            fd_check(c, in, where);
        for (int k = 0; k < c->nin; k++)
            sw_tensor_unref(in[k]);
    }
}

/* Case constructors: one input in [lo, hi] at least gap from 0, or two
 * inputs in [-2, 2] (the rhs at least gap from 0). */
static fd_case fd1(const char *name, fdk k, const char *uname, sw_arg arg,
                   double lo, double hi, double gap) {
    fd_case c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.k = k;
    c.uname = uname;
    c.arg = arg;
    c.nin = 1;
    c.lo[0] = lo;
    c.hi[0] = hi;
    c.gap[0] = gap;
    return c;
}

static fd_case fd2(const char *name, fdk k, double rhs_gap) {
    fd_case c = fd1(name, k, NULL, sw_arg_i64(0), -2, 2, 0);
    c.nin = 2;
    c.lo[1] = -2;
    c.hi[1] = 2;
    c.gap[1] = rhs_gap;
    return c;
}

static fd_case fd_view(const char *name, sw_view_key k0, sw_view_key k1) {
    fd_case c = fd1(name, FD_VIEW, NULL, sw_arg_i64(0), -2, 2, 0);
    c.nkeys = 2;
    c.keys[0] = k0;
    c.keys[1] = k1;
    return c;
}

/* permute (nsel unused) or rearrange (nsel < 0: no selection). */
static fd_case fd_order(const char *name, fdk k, int nord, const int32_t *ord,
                        int nsel, const int32_t *sel) {
    fd_case c = fd1(name, k, NULL, sw_arg_i64(0), -2, 2, 0);
    c.nord = nord;
    memcpy(c.ord, ord, (size_t)nord * sizeof *ord);
    c.nsel = nsel;
    if (nsel > 0)
        memcpy(c.sel, sel, (size_t)nsel * sizeof *sel);
    return c;
}

static void test_finite_differences(void) {
    int64_t base = sw_debug_live_allocs();
    sw_arg none = sw_arg_i64(0);
    const fd_case ew[] = {
        fd2("add", FD_ADD, 0),
        fd2("sub", FD_SUB, 0),
        fd2("elementwise_mul", FD_EMUL, 0),
        fd2("div", FD_DIV, 0.5),
        fd2("mul(tensor)", FD_MULT, 0),
        fd1("mul(F64 2.5)", FD_MUL, NULL, sw_arg_f64(2.5), -2, 2, 0),
        fd1("mul(I64 -3)", FD_MUL, NULL, sw_arg_i64(-3), -2, 2, 0),
        fd1("mul(BOOL true)", FD_MUL, NULL, arg_bool(1), -2, 2, 0),
        fd1("neg", FD_NEG, NULL, none, -2, 2, 0),
        fd1("pow(I64 3)", FD_POW, NULL, sw_arg_i64(3), -2, 2, 0),
        fd1("pow(I64 -2)", FD_POW, NULL, sw_arg_i64(-2), -2, 2, 0.5),
        fd1("pow(F64 2.5)", FD_POW, NULL, sw_arg_f64(2.5), 0.5, 2, 0),
        fd1("pow(F64 0.5)", FD_POW, NULL, sw_arg_f64(0.5), 0.5, 2, 0),
        fd1("exp", FD_UNARY, "exp", none, -2, 2, 0),
        fd1("relu", FD_UNARY, "relu", none, -2, 2, 0.2),
        fd1("sigmoid", FD_UNARY, "sigmoid", none, -3, 3, 0),
        fd1("tanh", FD_UNARY, "tanh", none, -2, 2, 0),
        fd1("gelu", FD_UNARY, "gelu", none, -3, 3, 0),
        fd1("silu", FD_UNARY, "silu", none, -3, 3, 0),
        fd1("softplus", FD_UNARY, "softplus", none, -3, 3, 0),
        fd1("elu", FD_UNARY, "elu", none, -2, 2, 0.2),
        fd1("leaky_relu", FD_UNARY, "leaky_relu", none, -2, 2, 0.2),
    };
    /* Compact, strided with holes, hierarchical strided, offset. */
    const char *ew_layouts[][2] = {
        {"(2,3):(1,2)", "(2,3):(1,2)"},
        {"(2,3):(3,7)", "(2,3):(3,7)"},
        {"((2,2),3):((1,3),7)", "((2,2),3):((1,3),7)"},
        {"5:2", "5:2"},
    };
    const int64_t ew_offsets[][2] = {{0, 0}, {1, 3}, {2, 0}, {3, 1}};
    for (size_t i = 0; i < sizeof ew / sizeof ew[0]; i++)
        for (size_t j = 0; j < sizeof ew_layouts / sizeof ew_layouts[0]; j++)
            run_fd_case(&ew[i], ew_layouts[j], ew_offsets[j], 2);

    /* reduce */
    fd_case red = fd1("reduce", FD_REDUCE, NULL, none, -2, 2, 0);
    const char *red_layouts[][1] = {{"(3,4):(1,3)"},
                                    {"((2,2),3):((1,3),7)"},
                                    {"(3,(2,2)):(5,(1,2))"},
                                    {"(((2,3),2),2):(((1,2),6),12)"}};
    const int64_t red_offsets[][1] = {{0}, {1}, {2}, {0}};
    for (size_t j = 0; j < 4; j++)
        run_fd_case(&red, red_layouts[j], red_offsets[j], 2);

    /* matmul */
    fd_case mm = fd2("matmul", FD_MATMUL, 0);
    const char *mm_layouts[][2] = {
        {"(2,3):(1,2)", "(4,3):(1,4)"},
        {"((2,2),3):((1,2),4)", "((2,1),3):((1,2),2)"},
        {"(2,3):(3,7)", "(3,3):(5,1)"},
        {"(2,(2,3)):(1,(2,4))", "(3,(3,2)):(6,(1,3))"},
    };
    const int64_t mm_offsets[][2] = {{0, 0}, {0, 1}, {1, 2}, {2, 0}};
    for (size_t j = 0; j < 4; j++)
        run_fd_case(&mm, mm_layouts[j], mm_offsets[j], 2);

    /* Layout operations. */
    const fd_case views[] = {
        fd_view("view [1:4, 2]", KS(1, 1, 1, 4), KI(2)),
        fd_view("view [:, 1:]", KALL(), KS(1, 1, 0, 0)),
        fd_view("view [3, 2]", KI(3), KI(2)),
    };
    const char *view_layouts[][1] = {{"(5,4):(1,5)"}, {"(5,4):(4,1)"}};
    const int64_t view_offsets[][1] = {{1}, {0}};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 2; j++)
            run_fd_case(&views[i], view_layouts[j], view_offsets[j], 1);
    const fd_case hviews[] = {
        fd_view("view [2:5, 4]", KS(1, 2, 1, 5), KI(4)),
        fd_view("view [3, :]", KI(3), KALL()),
    };
    const char *hview_layouts[1] = {"(6,(2,3)):(1,(6,12))"};
    const int64_t hview_offsets[1] = {2};
    for (size_t i = 0; i < 2; i++)
        run_fd_case(&hviews[i], hview_layouts, hview_offsets, 1);

    const int32_t o201[3] = {2, 0, 1};
    fd_case perm = fd_order("permute (2, 0, 1)", FD_PERMUTE, 3, o201, 0, NULL);
    const char *perm_layouts[][1] = {{"(2,(3,2),2):(1,(2,6),12)"},
                                     {"(2,(3,2),2):(13,(1,3),6)"}};
    const int64_t perm_offsets[][1] = {{0}, {2}};
    for (size_t j = 0; j < 2; j++)
        run_fd_case(&perm, perm_layouts[j], perm_offsets[j], 1);

    const int32_t nest[5] = {0, PUSH, 1, 2, POP};
    const int32_t ins[3] = {1, LEAF, 0}, swap[2] = {1, 0};
    const int32_t sel2[2] = {LEAF, LEAF};
    const fd_case rea[] = {
        fd_order("rearrange (2, 0, 1)", FD_REARRANGE, 3, o201, -1, NULL),
        fd_order("rearrange (0, (1, 2))", FD_REARRANGE, 5, nest, -1, NULL),
    };
    const char *rl1[1] = {"(2,3,4):(1,2,6)"};
    const int64_t ro1[1] = {1};
    for (size_t i = 0; i < 2; i++)
        run_fd_case(&rea[i], rl1, ro1, 1);
    fd_case rea2 =
        fd_order("rearrange (1, Leaf, 0)", FD_REARRANGE, 3, ins, -1, NULL);
    const char *rl2[1] = {"(2,3):(3,1)"};
    const int64_t ro2[1] = {0};
    run_fd_case(&rea2, rl2, ro2, 1);
    fd_case rea3 = fd_order("rearrange (1, 0) with selection (Leaf, Leaf)",
                            FD_REARRANGE, 2, swap, 2, sel2);
    const char *rl3[1] = {"(2,(2,3)):(6,(1,2))"};
    const int64_t ro3[1] = {2};
    run_fd_case(&rea3, rl3, ro3, 1);

    /* Compositions: shared inputs inside a graph. */
    const fd_case comp[] = {
        fd1("reduce(tanh(x + x))", FD_TANH_ADD_REDUCE, NULL, none, -1, 1, 0),
        fd1("reduce(matmul(x^T, x^T))", FD_MATMUL_SELF, NULL, none, -2, 2, 0),
    };
    const char *cl[1] = {"(2,3):(1,2)"};
    const int64_t co[1] = {1};
    for (size_t i = 0; i < 2; i++)
        run_fd_case(&comp[i], cl, co, 2);

    /* The checker itself: a wrong backward must not pass. */
    fd_case wrong =
        fd1("an op whose backward doubles g", FD_WRONG, NULL, none, -2, 2, 0);
    run_fd_case(&wrong, cl, co, 1);

    diag("finite differences: %d input gradients checked", fd_checks_run);
    leak_check(base, "finite differences");
}

/* The view gradient is exactly g inside the viewed region and 0 outside. */
static void test_view_gradient_exact(ckind kind) {
    int64_t base = sw_debug_live_allocs();
    const char *kn = kind == CPU ? "CPU" : "Generic";
    double v[20];
    for (int i = 0; i < 20; i++)
        v[i] = i + 1;
    sw_tensor *x = make_tensor(kind, "(5,4):(1,5)", 2, v);
    sw_tensor *y = NULL, *g = NULL;
    if (!x)
        return;
    sw_view_key keys[2] = {KS(1, 1, 1, 4), KS(1, 2, 0, 0)};
    sw_status st = sw_view(x, 2, keys, &y);
    if (!expect_ok(st, kn))
        goto done;
    is_str(L(sw_tensor_layout(y)), "(3,2):(1,5)", "%s: the view's layout", kn);
    double gv[6] = {1, 2, 3, 4, 5, 6};
    g = make_tensor(kind, "(3,2):(1,5)", 0, gv);
    if (!g)
        goto done;
    st = sw_tensor_backward(y, g);
    if (expect_ok(st, "backward of a view")) {
        sw_tensor *gr = sw_tensor_grad(x);
        double want[20] = {0};
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < 3; i++)
                want[(i + 1) + 5 * (j + 2)] = gv[i + 3 * j];
        check_values(gr, want, 0,
                     kind == CPU ? "CPU view gradient"
                                 : "Generic view gradient");
        ok(gr && sw_layout_equal(sw_tensor_layout(gr), sw_tensor_layout(x)) &&
               sw_tensor_offset(gr) == 0,
           "%s: the view gradient has the input's layout at offset 0", kn);
        ok(gr && (kind == CPU ? sw_carrier_is_cpu(sw_tensor_carrier(gr))
                              : sw_carrier_is_generic(sw_tensor_carrier(gr))),
           "%s: the gradient lives on the input's carrier class", kn);
        if (kind == CPU)
            is_int(gr ? sw_tensor_dtype(gr) : SW_DTYPE_ANY, SW_DTYPE_FLOAT32,
                   "CPU: the gradient is Float32");
    }
    sw_tensor_unref(y);
    y = NULL;
    sw_tensor_set_grad(x, NULL);

    /* permute and rearrange copy the gradient back into place. */
    int32_t order[2] = {1, 0};
    st = sw_permute(x, 2, order, &y);
    if (expect_ok(st, "permute for a gradient")) {
        double gp[20];
        for (int i = 0; i < 20; i++)
            gp[i] = 100 + i;
        sw_tensor *gpt = make_tensor(kind, "(4,5):(5,1)", 0, gp);
        st = gpt ? sw_tensor_backward(y, gpt) : SW_ENOMEM;
        if (expect_ok(st, "backward of a permute")) {
            double want[20];
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 4; j++)
                    want[i + 5 * j] = gp[j + 4 * i];
            check_values(sw_tensor_grad(x), want, 0,
                         kind == CPU ? "CPU permute gradient"
                                     : "Generic permute gradient");
        }
        sw_tensor_unref(gpt);
        sw_tensor_unref(y);
        y = NULL;
    }
    sw_tensor_set_grad(x, NULL);
    int32_t rout[3] = {1, LEAF, 0};
    st = sw_rearrange(x, 3, rout, -1, NULL, &y);
    if (expect_ok(st, "rearrange for a gradient")) {
        is_str(L(sw_tensor_layout(y)), "(4,1,5):(5,0,1)",
               "%s: rearranged layout", kn);
        double gp[20];
        for (int i = 0; i < 20; i++)
            gp[i] = 200 + i;
        sw_tensor *gpt = make_tensor(kind, "(4,1,5):(5,0,1)", 0, gp);
        st = gpt ? sw_tensor_backward(y, gpt) : SW_ENOMEM;
        if (expect_ok(st, "backward of a rearrange")) {
            double want[20];
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 4; j++)
                    want[i + 5 * j] = gp[j + 4 * i];
            check_values(sw_tensor_grad(x), want, 0,
                         kind == CPU ? "CPU rearrange gradient"
                                     : "Generic rearrange gradient");
        }
        sw_tensor_unref(gpt);
    }
done:
    sw_tensor_unref(g);
    sw_tensor_unref(y);
    sw_tensor_unref(x);
    leak_check(base, kind == CPU ? "CPU layout-op gradients"
                                 : "Generic layout-op gradients");
}

/* --------------------------------------------------- fault injection */

/*
 * Walks n = 0, 1, 2, ...: with n allocations allowed, run() must either
 * succeed or fail with SW_ENOMEM, leave nothing allocated and leave x.grad
 * as it was; a retry without injection must then give the right gradient.
 */
typedef struct fi_graph {
    const char *name;
    sw_tensor *x, *g;
    int kind;   /* 0: reduce(tanh(x + x)); 1: reduce(matmul(x^T, x^T)) */
    int preset; /* x.grad holds `pre` before each run */
    const double *want; /* the gradient (plus pre when preset) */
    const double *pre;
} fi_graph;

static sw_status fi_run(const fi_graph *f) {
    sw_tensor *a = NULL, *b = NULL, *r = NULL;
    int32_t tr[2] = {1, 0};
    sw_status st;
    if (f->kind == 0) {
        st = sw_add(f->x, f->x, &a);
        if (st == SW_OK)
            st = sw_unary("tanh", a, &b);
    } else {
        st = sw_permute(f->x, 2, tr, &a);
        if (st == SW_OK)
            st = sw_matmul(a, a, &b);
    }
    if (st == SW_OK)
        st = sw_reduce_sum(b, &r);
    if (st == SW_OK)
        st = sw_tensor_backward(r, f->g);
    sw_tensor_unref(r);
    sw_tensor_unref(b);
    sw_tensor_unref(a);
    return st;
}

static bool fi_grad_is(const fi_graph *f, const double *want) {
    sw_tensor *gr = sw_tensor_grad(f->x);
    if (!want)
        return gr == NULL;
    if (!gr)
        return false;
    for (int64_t i = 0; i < sw_tensor_size(f->x); i++)
        if (!close_to(getd(gr, i), want[i], 1e-12))
            return false;
    return true;
}

/* Gives x its starting .grad: none, or a fresh copy of pre. */
static void fi_reset(const fi_graph *f) {
    sw_tensor_set_grad(f->x, NULL);
    if (f->preset) {
        sw_tensor *p = make_tensor(GEN, L(sw_tensor_layout(f->x)), 0, f->pre);
        sw_tensor_set_grad(f->x, p);
        sw_tensor_unref(p);
    }
}

static void fi_walk(const fi_graph *f) {
    fi_reset(f);
    int64_t base = sw_debug_live_allocs();
    sw_status st = fi_run(f);
    if (!expect_ok(st, f->name))
        return;
    ok(fi_grad_is(f, f->want), "%s: the gradient without injection", f->name);
    fi_reset(f);
    if (sw_debug_live_allocs() != base) {
        ok(0, "%s: leaks without injection", f->name);
        return;
    }
    int bad = 0;
    int64_t n;
    for (n = 0; n < 5000 && bad < 3; n++) {
        sw_clear_error();
        sw_debug_fail_alloc_after(n);
        st = fi_run(f);
        sw_debug_fail_alloc_after(-1);
        if (st == SW_OK) {
            if (!fi_grad_is(f, f->want)) {
                diag("%s, n=%lld: wrong gradient", f->name, (long long)n);
                bad++;
            }
            fi_reset(f);
            if (sw_debug_live_allocs() != base) {
                diag("%s, n=%lld: leak after success", f->name, (long long)n);
                bad++;
            }
            break;
        }
        if (st != SW_ENOMEM || sw_errcode() != SW_ENOMEM) {
            diag("%s, n=%lld: status %s (%s); only SW_OK or SW_ENOMEM may "
                 "come out",
                 f->name, (long long)n, S(st), sw_errmsg());
            bad++;
            break;
        }
        if (!fi_grad_is(f, f->preset ? f->pre : NULL)) {
            diag("%s, n=%lld: a failed pass changed x.grad", f->name,
                 (long long)n);
            bad++;
        }
        if (sw_debug_live_allocs() != base) {
            diag("%s, n=%lld: %lld allocations live, baseline %lld", f->name,
                 (long long)n, (long long)sw_debug_live_allocs(),
                 (long long)base);
            bad++;
        }
        /* A retry without injection gives the right gradient. */
        fi_reset(f);
        st = fi_run(f);
        if (st != SW_OK || !fi_grad_is(f, f->want)) {
            diag("%s, n=%lld: the retry gave %s or a wrong gradient", f->name,
                 (long long)n, S(st));
            bad++;
        }
        fi_reset(f);
        if (sw_debug_live_allocs() != base) {
            diag("%s, n=%lld: leak after the retry", f->name, (long long)n);
            bad++;
        }
    }
    ok(bad == 0 && n > 0 && n < 5000,
       "fault injection: %s fails cleanly at each of %lld allocation sites",
       f->name, (long long)n);
}

static void test_fault_injection(void) {
    int64_t base = sw_debug_live_allocs();
    double v[6] = {0.3, -0.7, 0.1, 0.9, -0.2, 0.5};
    double gv[3] = {1.0, -2.0, 0.5};
    double pre[6] = {10, 20, 30, 40, 50, 60};
    sw_tensor *x = make_tensor(GEN, "(2,3):(1,2)", 0, v);
    sw_tensor *g2 = make_tensor(GEN, "2:1", 0, gv);
    sw_tensor *g3 = make_tensor(GEN, "3:1", 0, gv);
    if (x && g2 && g3) {
        /* d/dx[i,j] of sum_i g[i] sum_j tanh(2 x[i,j]). */
        double want[6], want_acc[6];
        for (int i = 0; i < 6; i++) {
            double t = tanh(2 * v[i]);
            want[i] = gv[i % 2] * 2 * (1 - t * t);
            want_acc[i] = pre[i] + want[i];
        }
        fi_graph a = {"reduce(tanh(x + x)) backward", x, g2, 0, 0, want, NULL};
        fi_walk(&a);
        fi_graph b = {"reduce(tanh(x + x)) backward into an existing .grad",
                      x,
                      g2,
                      0,
                      1,
                      want_acc,
                      pre};
        fi_walk(&b);
        /* out[j,k] = sum_i x[i,j] x[i,k]; r[j] = sum_k out[j,k];
         * dr/dx[i,j] = sum over j' of g[j] x[i,k] + g[k] x[i,j]. */
        double wantm[6];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                double s = 0;
                for (int k = 0; k < 3; k++)
                    s += gv[j] * v[i + 2 * k] + gv[k] * v[i + 2 * k];
                wantm[i + 2 * j] = s;
            }
        fi_graph c = {
            "reduce(matmul(x^T, x^T)) backward", x, g3, 1, 0, wantm, NULL};
        fi_walk(&c);
        sw_tensor_set_grad(x, NULL);
    }
    sw_tensor_unref(x);
    sw_tensor_unref(g2);
    sw_tensor_unref(g3);
    leak_check(base, "fault injection");
}

/* ------------------------------------------------------- interrupts */

static void test_interrupted_pass(void) {
    int64_t base = sw_debug_live_allocs();
    double one = 1.0;
    sw_tensor *x = make_tensor(GEN, "1:1", 0, &one);
    sw_tensor *g = make_tensor(GEN, "1:1", 0, &one);
    int c1 = 0, c2 = 0;
    sw_tensor *y = NULL, *z = NULL;
    sw_status st = run1(&chain_class, &c1, x, &y);
    if (st == SW_OK)
        st = run1(&interrupting_class, &c2, y, &z);
    if (expect_ok(st, "z = interrupting(chain(x))")) {
        sw_interrupt_watch(1);
        st = sw_tensor_backward(z, g);
        expect_fail(st, SW_EINTERRUPTED, "operation interrupted",
                    "a pass whose node raises an interrupt request");
        ok(c2 == 1 && c1 == 0, "the pass stopped before the next node");
        ok(sw_tensor_grad(x) == NULL, "no .grad was set");
        ok(sw_interrupt_requested(), "the request stays raised");
        /* Raised before the pass: it stops before the first node. */
        c1 = c2 = 0;
        st = sw_tensor_backward(z, g);
        expect_fail(st, SW_EINTERRUPTED, "operation interrupted",
                    "a pass started with a raised request");
        ok(c2 == 0 && c1 == 0, "no node ran");
        /* A thread that does not watch ignores requests. */
        sw_interrupt_watch(0);
        st = sw_tensor_backward(z, g);
        if (expect_ok(st, "the pass on a thread that does not watch")) {
            ok(c1 == 1 && c2 == 1, "every node ran");
            check_values(sw_tensor_grad(x), &one, 0, "x got its gradient");
        }
        sw_interrupt_clear();
    }
    sw_tensor_unref(z);
    sw_tensor_unref(y);
    sw_tensor_unref(x);
    sw_tensor_unref(g);
    leak_check(base, "interrupted passes");
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_grad_mode();
    test_recording();
    test_lowered_and_store();
    test_backward_entry();
    test_accumulation();
    test_gradient_adoption();
    test_retain_grad();
    test_requires_grad();
    test_graph_shapes();
    test_long_chain();
    test_versions();
    test_bad_backward();
    test_nondifferentiable();
    test_finite_differences();
    test_view_gradient_exact(GEN);
    test_view_gradient_exact(CPU);
    test_fault_injection();
    test_interrupted_pass();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    return done_testing();
}
