/*
 * Unit tests of the operations: the Generic carrier's reference operations
 * through the functional forms, their result layouts and dtypes, every
 * documented error, the dispatch policy of carriers, and the layout
 * operations (view, permute, rearrange) on Generic and CPU tensors.
 *
 * The contract is include/strideweave/op.h with the Python reference
 * (the Python API reference, sections 11 and 12), whose rules
 * and messages the C API keeps. Expected values are computed here, by hand
 * or by brute force over logical indices, never with the library's own
 * arithmetic. Every rejected call is checked for its exact status and
 * message, for leaving its out-parameter alone and for leaking nothing; a
 * fault-injection walk makes every allocation of each operation fail in
 * turn. CPU operations other than the layout operations are not tested
 * here (their kernels are not written yet).
 */
#include <math.h>
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

/*
 * Addresses no library call can produce, to prove that a failing call left
 * its out-parameters alone.
 */
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

/*
 * Checks a rejected call: its status and its exact message. Callers make
 * the call in a statement of its own and pass the status.
 */
static void expect_fail(sw_status st, sw_status want, const char *msg,
                        const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    if (st != SW_OK)
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

/* The kinds of carriers a test tensor can live on. */
typedef enum ckind { GEN = 0, ANY = 1, CPU = 2 } ckind;

static const char *kind_name(ckind k) {
    return k == GEN ? "Generic" : k == ANY ? "Generic(Any)" : "CPU";
}

/* Slot fills: values at every physical position of a carrier. */
static double fill_a(int64_t p) { /* mixed signs, never 0 */
    return -2.5 + 0.37 * (double)((p * 5) % 17);
}
static double fill_b(int64_t p) { /* positive, away from 0 */
    return 0.75 + 0.29 * (double)((p * 3) % 11);
}
static double fill_idx(int64_t p) { /* the slot's own index */
    return (double)p;
}

/* A carrier of n slots of the given kind holding fill(p) at slot p. */
static sw_carrier *make_carrier(ckind kind, int64_t n,
                                double (*fill)(int64_t)) {
    sw_carrier *c = NULL;
    sw_status st = SW_OK;
    if (kind == GEN) {
        double *v = malloc((size_t)(n + 1) * sizeof *v);
        for (int64_t p = 0; p < n; p++)
            v[p] = fill(p);
        st = sw_generic_new_doubles(n, v, 1, &c);
        free(v);
    } else if (kind == ANY) {
        const sw_host_ops *ops = sw_host_doubles();
        sw_value *v = malloc((size_t)(n + 1) * sizeof *v);
        for (int64_t p = 0; p < n; p++)
            v[p] = sw_value_f64(fill(p));
        void *store = NULL;
        st = ops->make(ops, n, v, &store);
        free(v);
        if (st == SW_OK) {
            st = sw_generic_new(ops, store, SW_DTYPE_ANY, 1, &c);
            if (st != SW_OK)
                ops->drop(store);
        }
    } else {
        st = sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c);
        for (int64_t p = 0; st == SW_OK && p < n; p++) {
            sw_value v = sw_value_f64(fill(p));
            st = sw_carrier_set(c, p, &v);
        }
    }
    if (st != SW_OK) {
        ok(0, "make a %s carrier of %lld slots", kind_name(kind), (long long)n);
        diag("status %s: %s", S(st), sw_errmsg());
        sw_carrier_unref(c);
        return NULL;
    }
    return c;
}

/*
 * A tensor of the given layout at offset in a fresh carrier of
 * offset + cosize + extra slots, slot p holding fill(p).
 */
static sw_tensor *make_tensor(ckind kind, const char *layout, int64_t offset,
                              int64_t extra, double (*fill)(int64_t)) {
    sw_layout *l = P(layout);
    if (!l)
        return NULL;
    sw_carrier *c =
        make_carrier(kind, offset + sw_layout_cosize(l) + extra, fill);
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

/* Logical element i as a double; NAN if it cannot be read. */
static double getd(const sw_tensor *t, int64_t i) {
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

/* Physical slot p of a carrier as a double. */
static double slotd(sw_carrier *c, int64_t p) {
    sw_value v;
    sw_status st = sw_carrier_get(c, p, &v);
    if (st != SW_OK)
        return NAN;
    double r = v.kind == SW_VALUE_F64   ? v.as.f
               : v.kind == SW_VALUE_I64 ? (double)v.as.i
                                        : NAN;
    sw_value_clear(&v);
    return r;
}

static bool close_to(double got, double want, double tol) {
    if (isnan(got) || isnan(want))
        return false;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* The physical position of logical element i (offset included). */
static int64_t phys(const sw_tensor *t, int64_t i) {
    int64_t p = -1;
    if (sw_layout_index(sw_tensor_layout(t), i, &p) != SW_OK)
        return -1;
    return sw_tensor_offset(t) + p;
}

static sw_arg arg_bool(int b) {
    sw_arg a;
    memset(&a, 0, sizeof a);
    a.kind = SW_ARG_BOOL;
    a.as.i = b != 0;
    return a;
}

static sw_arg arg_host(void *p) {
    sw_arg a;
    memset(&a, 0, sizeof a);
    a.kind = SW_ARG_HOST;
    a.as.host = p;
    return a;
}

static sw_arg arg_none(void) {
    sw_arg a;
    memset(&a, 0, sizeof a);
    a.kind = SW_ARG_NONE;
    return a;
}

/* View keys. */
static sw_view_key KI(int64_t i) {
    sw_view_key k;
    memset(&k, 0, sizeof k);
    k.kind = SW_VIEW_INDEX;
    k.index = i;
    return k;
}

/* A slice: hs/he say whether start/stop are present. */
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

static sw_view_key KSTEP(int hs, int64_t start, int he, int64_t stop,
                         int64_t step) {
    sw_view_key k = KS(hs, start, he, stop);
    k.has_step = 1;
    k.step = step;
    return k;
}

static sw_view_key KALL(void) {
    return KS(0, 0, 0, 0);
}

/* ------------------------------------------- element-wise operations */

typedef enum opk {
    OP_ADD,
    OP_SUB,
    OP_EMUL,
    OP_DIV,
    OP_MUL,
    OP_MULT, /* sw_mul with a tensor argument */
    OP_NEG,
    OP_POW,
    OP_UNARY
} opk;

typedef struct ecase {
    const char *label;
    opk k;
    const char *uname; /* OP_UNARY */
    sw_arg arg;        /* OP_MUL, OP_POW */
    double b;          /* the scalar's value for the reference */
    double (*ref)(double a, double b);
    int positive; /* the input must be positive */
    const char *ctxname;
} ecase;

static double r_add(double a, double b) {
    return a + b;
}
static double r_sub(double a, double b) {
    return a - b;
}
static double r_mul(double a, double b) {
    return a * b;
}
static double r_div(double a, double b) {
    return a / b;
}
static double r_pow(double a, double b) {
    return pow(a, b);
}
static double r_neg(double a, double b) {
    (void)b;
    return -a;
}
static double r_exp(double a, double b) {
    (void)b;
    return exp(a);
}
static double r_relu(double a, double b) {
    (void)b;
    return a > 0 ? a : 0.0;
}
static double r_sigmoid(double a, double b) {
    (void)b;
    return 1.0 / (1.0 + exp(-a));
}
static double r_tanh(double a, double b) {
    (void)b;
    return (exp(a) - exp(-a)) / (exp(a) + exp(-a));
}
static double r_gelu(double a, double b) {
    (void)b;
    return 0.5 * a * (1.0 + erf(a / sqrt(2.0)));
}
static double r_silu(double a, double b) {
    (void)b;
    return a / (1.0 + exp(-a));
}
static double r_softplus(double a, double b) {
    (void)b;
    return log(1.0 + exp(a));
}
static double r_elu(double a, double b) {
    (void)b;
    return a > 0 ? a : exp(a) - 1.0;
}
static double r_leaky(double a, double b) {
    (void)b;
    return a >= 0 ? a : 0.01 * a;
}

static sw_status run_ecase(const ecase *c, sw_tensor *x, sw_tensor *y,
                           sw_tensor **out) {
    switch (c->k) {
    case OP_ADD:
        return sw_add(x, y, out);
    case OP_SUB:
        return sw_sub(x, y, out);
    case OP_EMUL:
        return sw_elementwise_mul(x, y, out);
    case OP_DIV:
        return sw_div(x, y, out);
    case OP_MUL:
        return sw_mul(x, c->arg, out);
    case OP_MULT:
        return sw_mul(x, sw_arg_tensor(y), out);
    case OP_NEG:
        return sw_neg(x, out);
    case OP_POW:
        return sw_pow(x, c->arg, out);
    case OP_UNARY:
        return sw_unary(c->uname, x, out);
    }
    return SW_EVALUE;
}

static bool is_binary(opk k) {
    return k == OP_ADD || k == OP_SUB || k == OP_EMUL || k == OP_DIV ||
           k == OP_MULT;
}

static void check_ecase(const ecase *c, const char *layout, int64_t offset) {
    char name[256];
    snprintf(name, sizeof name, "%s on %s at %lld", c->label, layout,
             (long long)offset);
    sw_tensor *x =
        make_tensor(GEN, layout, offset, 3, c->positive ? fill_b : fill_a);
    sw_tensor *y = make_tensor(GEN, layout, offset + 2, 1, fill_b);
    if (!x || !y) {
        sw_tensor_unref(x);
        sw_tensor_unref(y);
        return;
    }
    int64_t vx = sw_tensor_version(x), vy = sw_tensor_version(y);
    sw_tensor *r = SENT_TENSOR;
    sw_status st = run_ecase(c, x, y, &r);
    if (!expect_ok(st, name)) {
        sw_tensor_unref(x);
        sw_tensor_unref(y);
        return;
    }
    sw_layout *lx = sw_tensor_layout(x), *lr = sw_tensor_layout(r);
    ok(sw_layout_equal(lr, lx), "%s: result layout %s is the lhs layout", name,
       L(lr));
    is_int(sw_tensor_offset(r), 0, "%s: result offset 0", name);
    sw_carrier *rc = sw_tensor_carrier(r);
    is_int(sw_carrier_size(rc), sw_layout_cosize(lx),
           "%s: result storage holds cosize elements", name);
    ok(rc != sw_tensor_carrier(x) && rc != sw_tensor_carrier(y),
       "%s: result storage is fresh", name);
    ok(sw_carrier_is_generic(rc), "%s: result is Generic", name);
    ok(sw_tensor_is_mutable(r), "%s: result is mutable", name);
    is_str(sw_dtype_name(sw_tensor_dtype(r)), "Floating", "%s: result dtype",
           name);
    /* Values per logical index. */
    int64_t n = sw_tensor_size(x), bad = -1;
    double got = 0, want = 0;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        double a = getd(x, i);
        double b = is_binary(c->k) ? getd(y, i) : c->b;
        want = c->ref(a, b);
        got = getd(r, i);
        if (!close_to(got, want, 1e-12))
            bad = i;
    }
    if (!ok(bad < 0, "%s: every value is right", name))
        diag("logical %lld: got %.17g, expected %.17g", (long long)bad, got,
             want);
    /* Holes of the layout are empty slots, written as 0. */
    int64_t cos = sw_layout_cosize(lx), badh = -1;
    char *hit = calloc((size_t)cos + 1, 1);
    if (hit == NULL)
        bail_out("out of memory");
    for (int64_t i = 0; i < n; i++) {
        int64_t p = phys(r, i);
        if (p >= 0 && p <= cos)
            hit[p] = 1;
    }
    for (int64_t p = 0; p < cos && badh < 0; p++)
        if (!hit[p] && slotd(rc, p) != 0.0)
            badh = p;
    free(hit);
    if (!ok(badh < 0, "%s: layout holes hold 0", name))
        diag("slot %lld holds %g", (long long)badh, slotd(rc, badh));
    is_int(sw_tensor_version(x), vx, "%s: lhs not written", name);
    is_int(sw_tensor_version(y), vy, "%s: rhs not written", name);
    /* A recorded forward: the dispatched operation is the context. */
    sw_op *op = sw_tensor_autograd_ctx(r);
    if (ok(op != NULL, "%s: result has an autograd context", name)) {
        is_str(sw_op_dispatch_name(op), c->ctxname, "%s: dispatched name",
               name);
        ok(sw_op_dispatch_tag(op) ==
               (const void *)sw_carrier_get_class(sw_tensor_carrier(x)),
           "%s: dispatch tag is the Generic class", name);
        int binary = is_binary(c->k);
        is_int(sw_op_ninputs(op), binary ? 2 : 1, "%s: saved inputs", name);
        ok(sw_op_input(op, 0) == x && (!binary || sw_op_input(op, 1) == y),
           "%s: saved inputs are the arguments", name);
    }
    sw_tensor_unref(r);
    sw_tensor_unref(x);
    sw_tensor_unref(y);
}

static void test_elementwise(void) {
    int64_t base = sw_debug_live_allocs();
    const ecase cases[] = {
        {"add", OP_ADD, NULL, arg_none(), 0, r_add, 0, "add"},
        {"sub", OP_SUB, NULL, arg_none(), 0, r_sub, 0, "sub"},
        {"elementwise_mul", OP_EMUL, NULL, arg_none(), 0, r_mul, 0,
         "elementwise_mul"},
        {"div", OP_DIV, NULL, arg_none(), 0, r_div, 0, "div"},
        {"mul(tensor)", OP_MULT, NULL, arg_none(), 0, r_mul, 0,
         "elementwise_mul"},
        {"mul(F64 2.5)", OP_MUL, NULL, sw_arg_f64(2.5), 2.5, r_mul, 0, "mul"},
        {"mul(I64 -3)", OP_MUL, NULL, sw_arg_i64(-3), -3.0, r_mul, 0, "mul"},
        {"mul(BOOL true)", OP_MUL, NULL, arg_bool(1), 1.0, r_mul, 0, "mul"},
        {"mul(BOOL false)", OP_MUL, NULL, arg_bool(0), 0.0, r_mul, 0, "mul"},
        {"neg", OP_NEG, NULL, arg_none(), 0, r_neg, 0, "mul"},
        {"pow(I64 3)", OP_POW, NULL, sw_arg_i64(3), 3.0, r_pow, 0, "pow"},
        {"pow(I64 -2)", OP_POW, NULL, sw_arg_i64(-2), -2.0, r_pow, 0, "pow"},
        {"pow(I64 0)", OP_POW, NULL, sw_arg_i64(0), 0.0, r_pow, 0, "pow"},
        {"pow(F64 0.5)", OP_POW, NULL, sw_arg_f64(0.5), 0.5, r_pow, 1, "pow"},
        {"pow(F64 -1.5)", OP_POW, NULL, sw_arg_f64(-1.5), -1.5, r_pow, 1,
         "pow"},
        {"pow(BOOL true)", OP_POW, NULL, arg_bool(1), 1.0, r_pow, 0, "pow"},
        {"exp", OP_UNARY, "exp", arg_none(), 0, r_exp, 0, "exp"},
        {"relu", OP_UNARY, "relu", arg_none(), 0, r_relu, 0, "relu"},
        {"sigmoid", OP_UNARY, "sigmoid", arg_none(), 0, r_sigmoid, 0,
         "sigmoid"},
        {"tanh", OP_UNARY, "tanh", arg_none(), 0, r_tanh, 0, "tanh"},
        {"gelu", OP_UNARY, "gelu", arg_none(), 0, r_gelu, 0, "gelu"},
        {"silu", OP_UNARY, "silu", arg_none(), 0, r_silu, 0, "silu"},
        {"softplus", OP_UNARY, "softplus", arg_none(), 0, r_softplus, 0,
         "softplus"},
        {"elu", OP_UNARY, "elu", arg_none(), 0, r_elu, 0, "elu"},
        {"leaky_relu", OP_UNARY, "leaky_relu", arg_none(), 0, r_leaky, 0,
         "leaky_relu"},
    };
    /* Compact, strided with holes, hierarchical, hierarchical strided,
     * offset, broadcast (stride 0) and a one-mode layout. */
    const struct {
        const char *layout;
        int64_t offset;
    } layouts[] = {
        {"(2,3):(1,2)", 0},         {"(2,3):(3,7)", 0},
        {"((2,2),3):((1,2),4)", 0}, {"((2,3),(2,2)):((13,1),(3,6))", 0},
        {"(2,3):(1,2)", 5},         {"(3,2):(1,0)", 0},
        {"((2,2),3):((0,1),2)", 3}, {"4:3", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t j = 0; j < sizeof layouts / sizeof layouts[0]; j++)
            check_ecase(&cases[i], layouts[j].layout, layouts[j].offset);

    /* A few values worked by hand. */
    double xv[4] = {-1.0, 0.0, 2.0, -0.5};
    sw_carrier *c = NULL;
    sw_layout *l = P("4:1");
    sw_tensor *x = NULL, *r = NULL;
    sw_status st = sw_generic_new_doubles(4, xv, 0, &c);
    if (st == SW_OK)
        st = sw_tensor_new(c, 0, l, &x);
    sw_carrier_unref(c);
    sw_layout_unref(l);
    if (expect_ok(st, "hand-worked input [-1, 0, 2, -0.5]")) {
        st = sw_unary("relu", x, &r);
        if (expect_ok(st, "relu by hand")) {
            ok(getd(r, 0) == 0.0 && getd(r, 1) == 0.0 && getd(r, 2) == 2.0 &&
                   getd(r, 3) == 0.0,
               "relu([-1, 0, 2, -0.5]) == [0, 0, 2, 0]");
            sw_tensor_unref(r);
        }
        st = sw_unary("sigmoid", x, &r);
        if (expect_ok(st, "sigmoid by hand")) {
            ok(getd(r, 1) == 0.5, "sigmoid(0) == 0.5");
            sw_tensor_unref(r);
        }
        st = sw_unary("leaky_relu", x, &r);
        if (expect_ok(st, "leaky_relu by hand")) {
            ok(getd(r, 0) == -0.01 && getd(r, 1) == 0.0 && getd(r, 2) == 2.0 &&
                   getd(r, 3) == -0.005,
               "leaky_relu([-1, 0, 2, -0.5]) == [-0.01, 0, 2, -0.005]");
            sw_tensor_unref(r);
        }
        st = sw_unary("elu", x, &r);
        if (expect_ok(st, "elu by hand")) {
            ok(getd(r, 1) == 0.0 && getd(r, 2) == 2.0 &&
                   close_to(getd(r, 0), exp(-1.0) - 1.0, 1e-15),
               "elu([-1, 0, 2]) == [e^-1 - 1, 0, 2]");
            sw_tensor_unref(r);
        }
        st = sw_unary("softplus", x, &r);
        if (expect_ok(st, "softplus by hand")) {
            ok(close_to(getd(r, 1), log(2.0), 1e-15), "softplus(0) == ln 2");
            sw_tensor_unref(r);
        }
        st = sw_unary("gelu", x, &r);
        if (expect_ok(st, "gelu by hand")) {
            ok(getd(r, 1) == 0.0 &&
                   close_to(getd(r, 2), 2.0 * 0.5 * (1 + erf(sqrt(2.0))),
                            1e-15),
               "gelu(0) == 0, gelu(2) == 2*Phi(2)");
            sw_tensor_unref(r);
        }
        st = sw_pow(x, sw_arg_i64(2), &r);
        if (expect_ok(st, "pow by hand")) {
            ok(getd(r, 0) == 1.0 && getd(r, 1) == 0.0 && getd(r, 2) == 4.0 &&
                   getd(r, 3) == 0.25,
               "[-1, 0, 2, -0.5] ** 2 == [1, 0, 4, 0.25]");
            sw_tensor_unref(r);
        }
        /* The result of an op on an immutable input is still mutable. */
        st = sw_mul(x, sw_arg_f64(2.0), &r);
        if (expect_ok(st, "mul of an immutable input")) {
            ok(!sw_tensor_is_mutable(x) && sw_tensor_is_mutable(r),
               "the input is immutable, the result mutable");
            sw_tensor_unref(r);
        }
    }
    sw_tensor_unref(x);
    leak_check(base, "element-wise operations");
}

/* ----------------------------------------------------------- dtypes */

static void check_dtype(sw_status st, sw_tensor *r, sw_dtype want,
                        const char *name) {
    if (!expect_ok(st, name))
        return;
    is_str(sw_dtype_name(sw_tensor_dtype(r)), sw_dtype_name(want),
           "%s: result dtype", name);
    sw_tensor_unref(r);
}

static void test_dtypes(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *a = make_tensor(ANY, "(2,3):(1,2)", 0, 0, fill_a);
    sw_tensor *a2 = make_tensor(ANY, "(2,3):(1,2)", 1, 0, fill_b);
    sw_tensor *f = make_tensor(GEN, "(2,3):(1,2)", 0, 0, fill_b);
    if (!a || !a2 || !f) {
        sw_tensor_unref(a);
        sw_tensor_unref(a2);
        sw_tensor_unref(f);
        return;
    }
    ok(!sw_tensor_is_differentiable(a) && sw_tensor_is_differentiable(f),
       "Any tensors are not differentiable, Floating ones are");
    sw_tensor *r = SENT_TENSOR;
    sw_status st;
    const sw_dtype A = SW_DTYPE_ANY, F = SW_DTYPE_FLOATING;

    st = sw_add(a, a2, &r);
    check_dtype(st, r, A, "add(Any, Any)");
    st = sw_add(a, f, &r);
    check_dtype(st, r, F, "add(Any, Floating)");
    st = sw_add(f, a, &r);
    check_dtype(st, r, F, "add(Floating, Any)");
    st = sw_sub(a, a2, &r);
    check_dtype(st, r, A, "sub(Any, Any)");
    st = sw_sub(f, a, &r);
    check_dtype(st, r, F, "sub(Floating, Any)");
    st = sw_elementwise_mul(a, a2, &r);
    check_dtype(st, r, A, "elementwise_mul(Any, Any)");
    st = sw_elementwise_mul(a, f, &r);
    check_dtype(st, r, F, "elementwise_mul(Any, Floating)");
    st = sw_div(a, a2, &r);
    check_dtype(st, r, F, "div(Any, Any)");
    st = sw_div(f, f, &r);
    check_dtype(st, r, F, "div(Floating, Floating)");

    st = sw_mul(a, sw_arg_i64(3), &r);
    check_dtype(st, r, A, "mul(Any, I64)");
    st = sw_mul(a, sw_arg_f64(3.0), &r);
    check_dtype(st, r, F, "mul(Any, F64)");
    st = sw_mul(a, arg_bool(1), &r);
    check_dtype(st, r, F, "mul(Any, BOOL) (bool is not integral)");
    st = sw_mul(f, sw_arg_i64(3), &r);
    check_dtype(st, r, F, "mul(Floating, I64)");
    st = sw_neg(a, &r);
    check_dtype(st, r, A, "neg(Any) (mul by the integer -1)");
    st = sw_neg(f, &r);
    check_dtype(st, r, F, "neg(Floating)");

    st = sw_pow(a, sw_arg_i64(2), &r);
    check_dtype(st, r, A, "pow(Any, I64 2)");
    st = sw_pow(a, sw_arg_i64(0), &r);
    check_dtype(st, r, A, "pow(Any, I64 0)");
    st = sw_pow(a, sw_arg_i64(-1), &r);
    check_dtype(st, r, F, "pow(Any, I64 -1)");
    st = sw_pow(a, arg_bool(1), &r);
    check_dtype(st, r, F, "pow(Any, BOOL)");
    st = sw_pow(a, sw_arg_f64(2.0), &r);
    check_dtype(st, r, F, "pow(Any, F64 2.0)");
    st = sw_pow(f, sw_arg_i64(2), &r);
    check_dtype(st, r, F, "pow(Floating, I64 2)");

    const char *floating_unary[] = {"exp",  "sigmoid",  "tanh", "gelu",
                                    "silu", "softplus", "elu",  "leaky_relu"};
    char name[64];
    for (size_t i = 0; i < sizeof floating_unary / sizeof floating_unary[0];
         i++) {
        snprintf(name, sizeof name, "%s(Any)", floating_unary[i]);
        st = sw_unary(floating_unary[i], a, &r);
        check_dtype(st, r, F, name);
    }
    st = sw_unary("relu", a, &r);
    check_dtype(st, r, A, "relu(Any)");
    st = sw_unary("relu", f, &r);
    check_dtype(st, r, F, "relu(Floating)");
    st = sw_reduce_sum(a, &r);
    check_dtype(st, r, A, "reduce(Any)");
    st = sw_reduce_sum(f, &r);
    check_dtype(st, r, F, "reduce(Floating)");

    sw_tensor *ma = make_tensor(ANY, "(4,3):(1,4)", 0, 0, fill_a);
    sw_tensor *mf = make_tensor(GEN, "(4,3):(1,4)", 0, 0, fill_a);
    if (ma && mf) {
        st = sw_matmul(a, ma, &r);
        check_dtype(st, r, A, "matmul(Any, Any)");
        st = sw_matmul(a, mf, &r);
        check_dtype(st, r, F, "matmul(Any, Floating)");
        st = sw_matmul(f, ma, &r);
        check_dtype(st, r, F, "matmul(Floating, Any)");
    }
    sw_tensor_unref(ma);
    sw_tensor_unref(mf);

    /* Values of Any results follow the same arithmetic. */
    st = sw_pow(a, sw_arg_i64(2), &r);
    if (expect_ok(st, "pow(Any, 2) values")) {
        bool good = true;
        for (int64_t i = 0; i < 6; i++)
            good = good && close_to(getd(r, i), pow(getd(a, i), 2), 1e-15);
        ok(good, "pow(Any, 2) squares every element");
        ok(sw_tensor_autograd_ctx(r) == NULL, "an Any result has no context");
        sw_tensor_unref(r);
    }
    st = sw_add(a, a2, &r);
    if (expect_ok(st, "add(Any, Any) values")) {
        bool good = true;
        for (int64_t i = 0; i < 6; i++)
            good = good && close_to(getd(r, i), getd(a, i) + getd(a2, i), 0);
        ok(good, "add(Any, Any) adds every element");
        sw_tensor_unref(r);
    }
    sw_tensor_unref(a);
    sw_tensor_unref(a2);
    sw_tensor_unref(f);
    leak_check(base, "dtype rules");
}

/* ----------------------------------------------------------- reduce */

static void test_reduce(void) {
    int64_t base = sw_debug_live_allocs();
    const struct {
        const char *layout;
        int64_t offset;
        const char *want;
    } cases[] = {
        {"(3,4):(1,3)", 0, "3:1"},
        {"(3,4):(5,1)", 2, "3:1"},
        {"((2,2),3):((1,2),4)", 0, "(2,2):(1,2)"},
        {"(((2,3),2),2):(((1,2),6),12)", 1, "((2,3),2):((1,2),6)"},
        {"(3,(2,2)):(1,(3,6))", 0, "3:1"},
        {"((2,(1,3)),2):((1,(5,2)),7)", 0, "(2,(1,3)):(1,(2,2))"},
        {"((3,2),(2,2)):((8,1),(2,4))", 4, "(3,2):(1,3)"},
        {"(3,4):(1,0)", 0, "3:1"},
        {"(3,4):(0,1)", 0, "3:1"},
        {"(1,4):(1,1)", 0, "1:1"},
        {"(4,1):(1,1)", 0, "4:1"},
        {"((3),4):((1),3)", 0, "3:1"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char name[160];
        snprintf(name, sizeof name, "reduce %s at %lld", cases[c].layout,
                 (long long)cases[c].offset);
        sw_tensor *x =
            make_tensor(GEN, cases[c].layout, cases[c].offset, 2, fill_a);
        if (!x)
            continue;
        sw_tensor *r = SENT_TENSOR;
        sw_status st = sw_reduce_sum(x, &r);
        if (!expect_ok(st, name)) {
            sw_tensor_unref(x);
            continue;
        }
        sw_layout *lr = sw_tensor_layout(r);
        is_str(L(lr), cases[c].want, "%s: output layout", name);
        is_int(sw_tensor_offset(r), 0, "%s: output offset 0", name);
        is_int(sw_carrier_size(sw_tensor_carrier(r)), sw_layout_cosize(lr),
               "%s: output storage holds cosize elements", name);
        is_str(sw_dtype_name(sw_tensor_dtype(r)), "Floating",
               "%s: output dtype", name);
        sw_layout *lx = sw_tensor_layout(x);
        sw_layout *m0 = NULL, *m1 = NULL;
        sw_layout_mode(lx, 0, &m0);
        sw_layout_mode(lx, 1, &m1);
        int64_t m = sw_layout_size(m0), k = sw_layout_size(m1);
        sw_layout_unref(m0);
        sw_layout_unref(m1);
        is_int(sw_tensor_size(r), m, "%s: one output per mode-0 index", name);
        int64_t bad = -1;
        double got = 0, want = 0;
        for (int64_t i = 0; i < m && bad < 0; i++) {
            want = 0;
            for (int64_t j = 0; j < k; j++)
                want += getd(x, i + m * j);
            got = getd(r, i);
            if (!close_to(got, want, 1e-12))
                bad = i;
        }
        if (!ok(bad < 0, "%s: out[i] = sum over j of x[i, j]", name))
            diag("out[%lld]: got %.17g, expected %.17g", (long long)bad, got,
                 want);
        sw_op *op = sw_tensor_autograd_ctx(r);
        ok(op && sw_op_dispatch_name(op) &&
               strcmp(sw_op_dispatch_name(op), "reduce") == 0,
           "%s: context is the dispatched 'reduce'", name);
        sw_tensor_unref(r);
        sw_tensor_unref(x);
    }
    leak_check(base, "reduce");
}

/* ----------------------------------------------------------- matmul */

static void test_matmul(void) {
    int64_t base = sw_debug_live_allocs();
    const struct {
        const char *lhs;
        int64_t loff;
        const char *rhs;
        int64_t roff;
        const char *want;
    } cases[] = {
        {"(2,3):(1,2)", 0, "(4,3):(1,4)", 0, "(2,4):(1,2)"},
        {"((2,2),3):((1,2),4)", 0, "((2,1),3):((1,2),2)", 0,
         "((2,2),(2,1)):((1,2),(4,8))"},
        {"(2,3):(3,7)", 4, "(3,3):(5,1)", 2, "(2,3):(1,2)"},
        {"(2,(2,3)):(1,(2,4))", 0, "(3,(3,2)):(6,(1,3))", 1, "(2,3):(1,2)"},
        {"(2,3):(0,1)", 0, "(2,3):(1,0)", 1, "(2,2):(1,2)"},
        {"(3,2):(2,1)", 0, "((2,2),2):((1,2),4)", 0, "(3,(2,2)):(1,(3,6))"},
        {"(1,1):(1,1)", 0, "(1,1):(1,1)", 3, "(1,1):(1,1)"},
        {"(3,1):(1,1)", 0, "(2,1):(1,1)", 0, "(3,2):(1,3)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char name[200];
        snprintf(name, sizeof name, "matmul %s@%lld x %s@%lld", cases[c].lhs,
                 (long long)cases[c].loff, cases[c].rhs,
                 (long long)cases[c].roff);
        sw_tensor *a = make_tensor(GEN, cases[c].lhs, cases[c].loff, 1, fill_a);
        sw_tensor *b = make_tensor(GEN, cases[c].rhs, cases[c].roff, 2, fill_b);
        if (!a || !b) {
            sw_tensor_unref(a);
            sw_tensor_unref(b);
            continue;
        }
        sw_tensor *r = SENT_TENSOR;
        sw_status st = sw_matmul(a, b, &r);
        if (!expect_ok(st, name)) {
            sw_tensor_unref(a);
            sw_tensor_unref(b);
            continue;
        }
        sw_layout *lr = sw_tensor_layout(r);
        is_str(L(lr), cases[c].want, "%s: output layout", name);
        is_int(sw_tensor_offset(r), 0, "%s: output offset 0", name);
        is_int(sw_carrier_size(sw_tensor_carrier(r)), sw_layout_cosize(lr),
               "%s: output storage holds cosize elements", name);
        is_str(sw_dtype_name(sw_tensor_dtype(r)), "Floating",
               "%s: output dtype", name);
        sw_layout *m0 = NULL, *m1 = NULL, *n0 = NULL;
        sw_layout_mode(sw_tensor_layout(a), 0, &m0);
        sw_layout_mode(sw_tensor_layout(a), 1, &m1);
        sw_layout_mode(sw_tensor_layout(b), 0, &n0);
        int64_t m = sw_layout_size(m0), k = sw_layout_size(m1);
        int64_t n = sw_layout_size(n0);
        sw_layout_unref(m0);
        sw_layout_unref(m1);
        sw_layout_unref(n0);
        is_int(sw_tensor_size(r), m * n, "%s: output size", name);
        int64_t bad = -1;
        double got = 0, want = 0;
        for (int64_t j = 0; j < n && bad < 0; j++)
            for (int64_t i = 0; i < m && bad < 0; i++) {
                want = 0;
                for (int64_t q = 0; q < k; q++)
                    want += getd(a, i + m * q) * getd(b, j + n * q);
                got = getd(r, i + m * j);
                if (!close_to(got, want, 1e-12))
                    bad = i + m * j;
            }
        if (!ok(bad < 0, "%s: out[i, j] = sum over k of lhs[i, k] rhs[j, k]",
                name))
            diag("out[%lld]: got %.17g, expected %.17g", (long long)bad, got,
                 want);
        sw_op *op = sw_tensor_autograd_ctx(r);
        ok(op && sw_op_dispatch_name(op) &&
               strcmp(sw_op_dispatch_name(op), "matmul") == 0 &&
               sw_op_ninputs(op) == 2 && sw_op_input(op, 0) == a &&
               sw_op_input(op, 1) == b,
           "%s: context is the dispatched 'matmul' with both inputs", name);
        sw_tensor_unref(r);
        sw_tensor_unref(a);
        sw_tensor_unref(b);
    }
    /* A worked example: [[1,2,3],[4,5,6]] @ [[1,0,1],[0,1,0]]^T. */
    double av[6] = {1, 4, 2, 5, 3, 6}, bv[6] = {1, 0, 0, 1, 1, 0};
    sw_carrier *ca = NULL, *cb = NULL;
    sw_layout *l = P("(2,3):(1,2)");
    sw_tensor *a = NULL, *b = NULL, *r = NULL;
    sw_status st = sw_generic_new_doubles(6, av, 1, &ca);
    if (st == SW_OK)
        st = sw_generic_new_doubles(6, bv, 1, &cb);
    if (st == SW_OK)
        st = sw_tensor_new(ca, 0, l, &a);
    if (st == SW_OK)
        st = sw_tensor_new(cb, 0, l, &b);
    if (st == SW_OK)
        st = sw_matmul(a, b, &r);
    if (expect_ok(st, "matmul worked by hand")) {
        ok(getd(r, 0) == 4 && getd(r, 1) == 10 && getd(r, 2) == 2 &&
               getd(r, 3) == 5,
           "[[1,2,3],[4,5,6]] x [[1,0,1],[0,1,0]] contracted on mode 1 == "
           "[[4,2],[10,5]]");
        sw_tensor_unref(r);
    }
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_carrier_unref(ca);
    sw_carrier_unref(cb);
    sw_layout_unref(l);
    leak_check(base, "matmul");
}

/* ----------------------------------------------------------- errors */

static void expect_rejected(sw_status st, sw_tensor *out, sw_status want,
                            const char *msg, const char *name) {
    expect_fail(st, want, msg, name);
    ok(out == SENT_TENSOR, "%s leaves its out-parameter alone", name);
}

/* Binary elementwise operations on two layouts of one shape, on every
 * backend: values per logical index; the result takes the first layout
 * when it is compact, else the compact column-major one. */
static void test_mixed_layouts(void) {
    for (int k = 0; k < 3; ++k) {
        ckind c = (ckind)k;
        int64_t base = sw_debug_live_allocs();
        sw_tensor *col = make_tensor(c, "(2,3):(1,2)", 0, 0, fill_a);
        sw_tensor *row = make_tensor(c, "(2,3):(3,1)", 1, 0, fill_b);
        sw_tensor *holes = make_tensor(c, "(2,3):(1,3)", 0, 0, fill_b);
        sw_tensor *hier = make_tensor(c, "((1,2),3):((1,1),2)", 0, 0, fill_b);
        sw_tensor *r = NULL;
        sw_status st = sw_add(col, row, &r);
        int good = st == SW_OK &&
                   sw_layout_equal(sw_tensor_layout(r), sw_tensor_layout(col));
        for (int64_t i = 0; good && i < 6; ++i)
            good = fabs(getd(r, i) - (getd(col, i) + getd(row, i))) < 1e-5;
        ok(good, "%s: column-major + row-major by logical index (got %s)",
           kind_name(c), S(st));
        sw_tensor_unref(r);
        r = NULL;
        st = sw_div(holes, hier, &r);
        char text[64] = "";
        if (st == SW_OK)
            sw_layout_format(sw_tensor_layout(r), text, sizeof text);
        good = st == SW_OK && strcmp(text, "(2,3):(1,2)") == 0;
        for (int64_t i = 0; good && i < 6; ++i)
            good = fabs(getd(r, i) - getd(holes, i) / getd(hier, i)) < 1e-5;
        ok(good, "%s: a strided lhs gives a column-major result (got %s, %s)",
           kind_name(c), S(st), text);
        sw_tensor_unref(r);
        sw_tensor_unref(col);
        sw_tensor_unref(row);
        sw_tensor_unref(holes);
        sw_tensor_unref(hier);
        is_int(sw_debug_live_allocs(), base, "%s: mixed layouts free all",
               kind_name(c));
    }
}

static void test_op_errors(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *x = make_tensor(GEN, "(2,3):(1,2)", 0, 0, fill_a);
    sw_tensor *y = make_tensor(GEN, "(2,3):(1,2)", 1, 0, fill_b);
    sw_tensor *ys = make_tensor(GEN, "(2,3):(1,3)", 0, 0, fill_b);
    sw_tensor *yt = make_tensor(GEN, "(3,2):(1,3)", 0, 0, fill_b);
    sw_tensor *yf = make_tensor(GEN, "6:1", 0, 0, fill_b);
    sw_tensor *x3 = make_tensor(GEN, "(2,3,1):(1,2,6)", 0, 0, fill_a);
    sw_tensor *m43 = make_tensor(GEN, "(4,3):(1,4)", 0, 0, fill_a);
    sw_tensor *m42 = make_tensor(GEN, "(4,2):(1,4)", 0, 0, fill_a);
    sw_tensor *xc = make_tensor(CPU, "(2,3):(1,2)", 0, 0, fill_idx);
    if (!x || !y || !ys || !yt || !yf || !x3 || !m43 || !m42 || !xc)
        goto done;
    sw_tensor *r = SENT_TENSOR;
    sw_status st;

    /* Missing tensors. */
    st = sw_add(NULL, y, &r);
    expect_rejected(st, r, SW_ETYPE, "lhs must be a Tensor", "add(NULL, y)");
    st = sw_add(x, NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "rhs must be a Tensor", "add(x, NULL)");
    st = sw_sub(NULL, y, &r);
    expect_rejected(st, r, SW_ETYPE, "lhs must be a Tensor", "sub(NULL, y)");
    st = sw_sub(x, NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "rhs must be a Tensor", "sub(x, NULL)");
    st = sw_elementwise_mul(NULL, NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "lhs must be a Tensor",
                    "elementwise_mul(NULL, NULL)");
    st = sw_elementwise_mul(x, NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "rhs must be a Tensor",
                    "elementwise_mul(x, NULL)");
    st = sw_div(NULL, y, &r);
    expect_rejected(st, r, SW_ETYPE, "lhs must be a Tensor", "div(NULL, y)");
    st = sw_div(x, NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "rhs must be a Tensor", "div(x, NULL)");
    st = sw_matmul(NULL, m43, &r);
    expect_rejected(st, r, SW_ETYPE, "lhs must be a Tensor", "matmul(NULL, m)");
    st = sw_matmul(x, NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "rhs must be a Tensor", "matmul(x, NULL)");
    st = sw_mul(NULL, sw_arg_f64(2.0), &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor",
                    "mul(NULL, 2.0)");
    st = sw_mul(x, sw_arg_tensor(NULL), &r);
    expect_rejected(st, r, SW_ETYPE, "rhs must be a Tensor",
                    "mul(x, tensor NULL) (elementwise_mul)");
    st = sw_neg(NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor", "neg(NULL)");
    st = sw_pow(NULL, sw_arg_i64(2), &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor", "pow(NULL, 2)");
    st = sw_unary("exp", NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor", "exp(NULL)");
    st = sw_unary("relu", NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor", "relu(NULL)");
    st = sw_reduce_sum(NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor", "reduce(NULL)");
    sw_view_key k2[2] = {KALL(), KALL()};
    st = sw_view(NULL, 2, k2, &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor", "view(NULL)");
    int32_t ord[2] = {1, 0};
    st = sw_permute(NULL, 2, ord, &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor",
                    "permute(NULL)");
    int32_t rout[2] = {1, 0};
    st = sw_rearrange(NULL, 2, rout, -1, NULL, &r);
    expect_rejected(st, r, SW_ETYPE, "tensor must be a Tensor",
                    "rearrange(NULL)");
    st = sw_unary("nope", x, &r);
    is_int(st, SW_EVALUE, "sw_unary with an unknown name fails (got %s)",
           S(st));
    ok(r == SENT_TENSOR, "sw_unary with an unknown name leaves out alone");
    sw_clear_error();
    st = sw_unary("add", x, &r);
    ok(st != SW_OK && r == SENT_TENSOR,
       "sw_unary refuses a binary name ('add') (got %s)", S(st));
    sw_clear_error();

    /* Layouts: one shape with other strides combines (test_mixed_layouts);
     * another shape does not. */
    st = sw_sub(x, yt, &r);
    expect_rejected(st, r, SW_EVALUE, "Tensor layouts must match",
                    "sub with a different shape");
    st = sw_elementwise_mul(x, yf, &r);
    expect_rejected(st, r, SW_EVALUE, "Tensor layouts must match",
                    "elementwise_mul of (2,3) and 6");
    st = sw_mul(x, sw_arg_tensor(yt), &r);
    expect_rejected(st, r, SW_EVALUE, "Tensor layouts must match",
                    "mul by a tensor of another layout");
    st = sw_reduce_sum(yf, &r);
    expect_rejected(st, r, SW_EVALUE, "tensor must have a two-mode layout",
                    "reduce of a one-mode tensor");
    st = sw_reduce_sum(x3, &r);
    expect_rejected(st, r, SW_EVALUE, "tensor must have a two-mode layout",
                    "reduce of a three-mode tensor");
    st = sw_matmul(yf, m43, &r);
    expect_rejected(st, r, SW_EVALUE, "lhs must have a two-mode layout",
                    "matmul with a one-mode lhs");
    st = sw_matmul(x3, yf, &r);
    expect_rejected(st, r, SW_EVALUE, "lhs must have a two-mode layout",
                    "matmul with both sides wrong (lhs checked first)");
    st = sw_matmul(x, x3, &r);
    expect_rejected(st, r, SW_EVALUE, "rhs must have a two-mode layout",
                    "matmul with a three-mode rhs");
    st = sw_matmul(x, m42, &r);
    expect_rejected(st, r, SW_EVALUE, "Matmul inner dimensions must match",
                    "matmul of (2,3) and (4,2)");

    /* Scalars. */
    int host_obj = 7;
    st = sw_mul(x, arg_host(&host_obj), &r);
    expect_rejected(st, r, SW_ETYPE, "scalar must be a numerical scalar",
                    "mul by a host object");
    st = sw_mul(x, arg_none(), &r);
    expect_rejected(st, r, SW_ETYPE, "scalar must be a numerical scalar",
                    "mul by no argument");
    st = sw_pow(x, sw_arg_tensor(y), &r);
    expect_rejected(st, r, SW_ETYPE, "exponent must be a numerical scalar",
                    "pow with a tensor exponent");
    st = sw_pow(x, arg_host(&host_obj), &r);
    expect_rejected(st, r, SW_ETYPE, "exponent must be a numerical scalar",
                    "pow with a host exponent");

    /* Carriers of different classes. */
    st = sw_add(x, xc, &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "add(Generic, CPU)");
    st = sw_add(xc, x, &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "add(CPU, Generic)");
    st = sw_sub(x, xc, &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "sub(Generic, CPU)");
    st = sw_elementwise_mul(x, xc, &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "elementwise_mul(Generic, CPU)");
    st = sw_div(xc, x, &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "div(CPU, Generic)");
    st = sw_matmul(x, xc, &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "matmul(Generic, CPU)");
    st = sw_mul(x, sw_arg_tensor(xc), &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "mul(Generic, CPU tensor)");
    st = sw_add(yt, xc, &r);
    expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                    "add(Generic, CPU) of other layouts (carriers first)");

    /* Released carriers. */
    sw_tensor *xr = make_tensor(GEN, "(2,3):(1,2)", 0, 0, fill_a);
    sw_tensor *yr = make_tensor(GEN, "(2,3):(1,2)", 0, 0, fill_a);
    sw_tensor *mr = make_tensor(GEN, "(4,3):(1,4)", 0, 0, fill_a);
    if (xr && yr && mr) {
        sw_carrier_release_storage(sw_tensor_carrier(xr));
        sw_carrier_release_storage(sw_tensor_carrier(yr));
        sw_carrier_release_storage(sw_tensor_carrier(mr));
        st = sw_add(xr, y, &r);
        expect_rejected(st, r, SW_ERUNTIME, "lhs carrier is released",
                        "add with a released lhs");
        st = sw_add(x, yr, &r);
        expect_rejected(st, r, SW_ERUNTIME, "rhs carrier is released",
                        "add with a released rhs");
        st = sw_div(xr, yr, &r);
        expect_rejected(st, r, SW_ERUNTIME, "lhs carrier is released",
                        "div with both released (lhs first)");
        st = sw_sub(x, yr, &r);
        expect_rejected(st, r, SW_ERUNTIME, "rhs carrier is released",
                        "sub with a released rhs");
        st = sw_elementwise_mul(xr, y, &r);
        expect_rejected(st, r, SW_ERUNTIME, "lhs carrier is released",
                        "elementwise_mul with a released lhs");
        st = sw_mul(xr, sw_arg_f64(2.0), &r);
        expect_rejected(st, r, SW_ERUNTIME, "tensor carrier is released",
                        "mul of a released tensor");
        st = sw_pow(xr, sw_arg_i64(2), &r);
        expect_rejected(st, r, SW_ERUNTIME, "tensor carrier is released",
                        "pow of a released tensor");
        st = sw_unary("tanh", xr, &r);
        expect_rejected(st, r, SW_ERUNTIME, "tensor carrier is released",
                        "tanh of a released tensor");
        st = sw_reduce_sum(xr, &r);
        expect_rejected(st, r, SW_ERUNTIME, "tensor carrier is released",
                        "reduce of a released tensor");
        st = sw_matmul(xr, m43, &r);
        expect_rejected(st, r, SW_ERUNTIME, "lhs carrier is released",
                        "matmul with a released lhs");
        st = sw_matmul(x, mr, &r);
        expect_rejected(st, r, SW_ERUNTIME, "rhs carrier is released",
                        "matmul with a released rhs");
    }
    sw_tensor_unref(xr);
    sw_tensor_unref(yr);
    sw_tensor_unref(mr);
done:
    sw_tensor_unref(x);
    sw_tensor_unref(y);
    sw_tensor_unref(ys);
    sw_tensor_unref(yt);
    sw_tensor_unref(yf);
    sw_tensor_unref(x3);
    sw_tensor_unref(m43);
    sw_tensor_unref(m42);
    sw_tensor_unref(xc);
    leak_check(base, "operation errors");
}

/* --------------------------------------------------------- dispatch */

/* A custom carrier over a few doubles whose dispatch misbehaves on
 * purpose: mode 0 returns one cached operation every time, mode 1 returns
 * no operation at all. */
typedef struct cust_state {
    int64_t n;
    double v[8];
    sw_op *cached;
    int mode;
} cust_state;

static int64_t cust_size(sw_carrier *c) {
    return ((cust_state *)sw_carrier_state(c))->n;
}

static sw_status cust_get(sw_carrier *c, int64_t i, sw_value *out) {
    *out = sw_value_f64(((cust_state *)sw_carrier_state(c))->v[i]);
    return SW_OK;
}

static sw_status cust_dispatch(sw_carrier *c, const char *name, sw_op **out) {
    cust_state *s = sw_carrier_state(c);
    if (s->mode == 1) {
        *out = NULL;
        return SW_OK;
    }
    if (!s->cached) {
        sw_status st = sw_shared_op_new("view", &s->cached);
        if (st)
            return st;
    }
    *out = sw_op_retain(s->cached);
    return SW_OK;
}

static void cust_destroy(sw_carrier *c) {
    cust_state *s = sw_carrier_state(c);
    sw_op_unref(s->cached);
    free(s);
}

static const sw_carrier_class cust_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Custom",
    .size = cust_size,
    .get = cust_get,
    .destroy = cust_destroy,
    .dispatch_op = cust_dispatch,
};

static const sw_carrier_class bare_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Bare",
    .size = cust_size,
    .get = cust_get,
    .destroy = cust_destroy,
};

static sw_carrier *make_custom(const sw_carrier_class *cls, int mode) {
    cust_state *s = calloc(1, sizeof *s);
    s->n = 6;
    for (int i = 0; i < 6; i++)
        s->v[i] = i;
    s->mode = mode;
    sw_carrier *c = NULL;
    sw_status st = sw_carrier_new(cls, s, SW_DTYPE_FLOATING, &c);
    if (st != SW_OK) {
        ok(0, "make a custom carrier");
        diag("status %s: %s", S(st), sw_errmsg());
        free(s);
        return NULL;
    }
    return c;
}

/* An operation whose forward returns its first argument itself. */
static sw_status pass_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    (void)op;
    if (nargs < 1 || args[0].kind != SW_ARG_TENSOR)
        return SW_ETYPE;
    *out = sw_tensor_retain(args[0].as.tensor);
    return SW_OK;
}

static const sw_op_class pass_class = {SW_OP_CLASS_VERSION, "pass",
                                       pass_forward, NULL, NULL};

/* A routed dispatch (sw_carrier_set_dispatch): records its calls and
 * answers layout ops with the shared ones, anything else with "pass". */
typedef struct route_log {
    int calls;
    sw_carrier *carrier;
    char name[32];
} route_log;

static sw_status route_fn(sw_carrier *c, const char *name, void *ctx,
                          sw_op **out) {
    route_log *log = ctx;
    log->calls++;
    log->carrier = c;
    snprintf(log->name, sizeof log->name, "%s", name);
    if (strcmp(name, "view") == 0 || strcmp(name, "permute") == 0 ||
        strcmp(name, "rearrange") == 0)
        return sw_shared_op_new(name, out);
    return sw_op_new(&pass_class, NULL, out);
}

static const int route_tag_a = 1, route_tag_b = 2;

static void test_dispatch(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *x = make_tensor(GEN, "(2,3):(1,2)", 0, 0, fill_a);
    if (!x)
        return;
    sw_carrier *gc = sw_tensor_carrier(x);
    sw_op *op = SENT_OP;
    sw_status st;

    st = sw_carrier_dispatch_op(gc, "nope", &op);
    expect_fail(st, SW_ENOTIMPL,
                "Generic carrier does not support operation 'nope'",
                "Generic dispatch of 'nope'");
    ok(op == SENT_OP, "a failed dispatch leaves its out-parameter alone");

    const char *names[] = {
        "add",      "div",     "elu",        "elementwise_mul",
        "exp",      "gelu",    "leaky_relu", "matmul",
        "mul",      "permute", "pow",        "rearrange",
        "reduce",   "relu",    "sigmoid",    "silu",
        "softplus", "sub",     "tanh",       "view"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        sw_op *a = NULL, *b = NULL;
        st = sw_carrier_dispatch_op(gc, names[i], &a);
        if (!expect_ok(st, names[i]))
            continue;
        st = sw_carrier_dispatch_op(gc, names[i], &b);
        if (expect_ok(st, names[i])) {
            ok(a != b, "Generic '%s': every dispatch is a fresh operation",
               names[i]);
            is_str(sw_op_dispatch_name(a), names[i],
                   "Generic '%s': dispatch name", names[i]);
            ok(sw_op_dispatch_tag(a) == (const void *)sw_carrier_get_class(gc),
               "Generic '%s': dispatch tag is the Generic class", names[i]);
            is_int(sw_op_ninputs(a), 0,
                   "Generic '%s': a fresh operation saved nothing", names[i]);
            sw_op_unref(b);
        }
        sw_op_unref(a);
    }

    /* An operation made directly carries no metadata. */
    sw_op *direct = NULL;
    st = sw_shared_op_new("view", &direct);
    if (expect_ok(st, "sw_shared_op_new(view)")) {
        ok(sw_op_dispatch_name(direct) == NULL &&
               sw_op_dispatch_tag(direct) == NULL,
           "a directly made operation has no dispatch metadata");
        sw_op_unref(direct);
    }
    st = sw_shared_op_new("add", &op);
    ok(st != SW_OK && op == SENT_OP,
       "sw_shared_op_new refuses a name that is not a layout op (got %s)",
       S(st));
    sw_clear_error();

    /* FileBacked supports no operation. */
    sw_carrier *fc = NULL;
    st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &fc);
    if (expect_ok(st, "a FileBacked carrier") &&
        expect_ok(sw_file_resize(fc, 6), "resize the file")) {
        sw_layout *l = P("(2,3):(1,2)");
        sw_tensor *ft = NULL, *r = SENT_TENSOR;
        st = sw_tensor_new(fc, 0, l, &ft);
        sw_layout_unref(l);
        if (expect_ok(st, "a FileBacked tensor")) {
            ok(sw_tensor_is_differentiable(ft),
               "a FileBacked(Floating) tensor is differentiable");
            st = sw_carrier_dispatch_op(fc, "add", &op);
            expect_fail(st, SW_ENOTIMPL,
                        "Carrier class does not support operation 'add'",
                        "FileBacked dispatch of 'add'");
            ok(op == SENT_OP, "FileBacked dispatch leaves out alone");
            st = sw_add(ft, ft, &r);
            expect_rejected(st, r, SW_ENOTIMPL,
                            "Carrier class does not support operation 'add'",
                            "add of FileBacked tensors");
            st = sw_unary("relu", ft, &r);
            expect_rejected(st, r, SW_ENOTIMPL,
                            "Carrier class does not support operation 'relu'",
                            "relu of a FileBacked tensor");
            sw_view_key keys[2] = {KALL(), KALL()};
            st = sw_view(ft, 2, keys, &r);
            expect_rejected(st, r, SW_ENOTIMPL,
                            "Carrier class does not support operation 'view'",
                            "view of a FileBacked tensor");
            st = sw_reduce_sum(ft, &r);
            expect_rejected(st, r, SW_ENOTIMPL,
                            "Carrier class does not support operation "
                            "'reduce'",
                            "reduce of a FileBacked tensor");
            sw_tensor_unref(ft);
        }
    }
    sw_carrier_unref(fc);

    /* A backend without dispatch_op. */
    sw_carrier *bare = make_custom(&bare_class, 0);
    if (bare) {
        st = sw_carrier_dispatch_op(bare, "relu", &op);
        expect_fail(st, SW_ENOTIMPL,
                    "Carrier class does not support operation 'relu'",
                    "dispatch on a backend without dispatch_op");
        ok(op == SENT_OP, "and leaves out alone");
        sw_carrier_unref(bare);
    }

    /* The fresh-operation rule. */
    sw_carrier *cc = make_custom(&cust_class, 0);
    if (cc) {
        sw_op *first = NULL, *second = SENT_OP;
        st = sw_carrier_dispatch_op(cc, "relu", &first);
        if (expect_ok(st, "first dispatch of a cached operation")) {
            st = sw_carrier_dispatch_op(cc, "sigmoid", &second);
            expect_fail(st, SW_ETYPE,
                        "carrier dispatch returned an operation that was "
                        "dispatched before",
                        "second dispatch returning the same operation");
            ok(second == SENT_OP, "the refused dispatch leaves out alone");
            is_str(sw_op_dispatch_name(first), "relu",
                   "the first operation keeps its name");
            ok(sw_op_dispatch_tag(first) == (const void *)&cust_class,
               "the first operation keeps its tag (the custom class)");
            sw_op_unref(first);
        }
        sw_carrier_unref(cc);
    }
    sw_carrier *cn = make_custom(&cust_class, 1);
    if (cn) {
        st = sw_carrier_dispatch_op(cn, "relu", &op);
        expect_fail(st, SW_ETYPE, "carrier dispatch produced no operation",
                    "dispatch returning no operation");
        ok(op == SENT_OP, "and leaves out alone");
        sw_carrier_unref(cn);
    }

    /* Routing through sw_carrier_set_dispatch. */
    route_log log;
    memset(&log, 0, sizeof log);
    sw_tensor *ta = make_tensor(GEN, "(2,3):(1,2)", 0, 0, fill_a);
    sw_tensor *tb = make_tensor(GEN, "(2,3):(1,2)", 0, 0, fill_b);
    if (ta && tb) {
        sw_carrier *ca = sw_tensor_carrier(ta);
        sw_carrier_set_dispatch(ca, route_fn, &log, &route_tag_a);
        st = sw_carrier_dispatch_op(ca, "permute", &op);
        if (expect_ok(st, "a routed dispatch")) {
            is_int(log.calls, 1, "the route ran once");
            ok(log.carrier == ca, "the route got the carrier");
            is_str(log.name, "permute", "the route got the name");
            is_str(sw_op_dispatch_name(op), "permute",
                   "a routed operation is named");
            ok(sw_op_dispatch_tag(op) == (const void *)&route_tag_a,
               "a routed operation carries the route's tag");
            sw_op_unref(op);
        }
        sw_view_key keys[2] = {KS(1, 1, 0, 0), KI(2)};
        sw_tensor *v = SENT_TENSOR;
        st = sw_view(ta, 2, keys, &v);
        if (expect_ok(st, "view through a routed carrier")) {
            is_int(log.calls, 2,
                   "the functional form dispatched through the "
                   "route");
            is_str(L(sw_tensor_layout(v)), "1:1", "the routed view's layout");
            sw_op *ctx = sw_tensor_autograd_ctx(v);
            ok(ctx && sw_op_dispatch_tag(ctx) == (const void *)&route_tag_a,
               "the routed view's context carries the route's tag");
            sw_tensor_unref(v);
        }
        /* Binary forms need the exact same class: a routed carrier with a
         * tag is a different class from a plain Generic. */
        sw_tensor *r = SENT_TENSOR;
        st = sw_add(ta, tb, &r);
        expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                        "add(routed Generic, plain Generic)");
        st = sw_add(tb, ta, &r);
        expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                        "add(plain Generic, routed Generic)");
        sw_carrier_set_dispatch(sw_tensor_carrier(tb), route_fn, &log,
                                &route_tag_b);
        st = sw_add(ta, tb, &r);
        expect_rejected(st, r, SW_ETYPE, "Tensor backing carriers must match",
                        "add of carriers routed with different tags");
        sw_carrier_set_dispatch(sw_tensor_carrier(tb), route_fn, &log,
                                &route_tag_a);
        int calls = log.calls;
        st = sw_add(ta, tb, &r);
        if (expect_ok(st, "add of carriers routed with one tag")) {
            ok(log.calls == calls + 1 && strcmp(log.name, "add") == 0,
               "add dispatched through the lhs route");
            ok(r == ta, "the routed 'add' ran (it returns its lhs)");
            ok(sw_tensor_autograd_ctx(ta) == NULL,
               "a result that is its own input stays a leaf");
            sw_tensor_unref(r);
        }
        /* A route without a tag records the backend class. */
        sw_carrier_set_dispatch(ca, route_fn, &log, NULL);
        st = sw_carrier_dispatch_op(ca, "view", &op);
        if (expect_ok(st, "a routed dispatch without a tag")) {
            ok(sw_op_dispatch_tag(op) == (const void *)sw_carrier_get_class(ca),
               "without a tag the dispatch tag is the backend class");
            sw_op_unref(op);
        }
    }
    sw_tensor_unref(ta);
    sw_tensor_unref(tb);

    /* The context of a functional result carries the metadata. */
    sw_tensor *r = NULL;
    st = sw_neg(x, &r);
    if (expect_ok(st, "neg")) {
        sw_op *ctx = sw_tensor_autograd_ctx(r);
        ok(ctx && strcmp(sw_op_dispatch_name(ctx), "mul") == 0,
           "neg records the dispatched scalar 'mul'");
        ok(ctx && sw_op_dispatch_tag(ctx) ==
                      (const void *)sw_carrier_get_class(gc),
           "with the Generic class as its tag");
        sw_tensor_unref(r);
    }
    sw_tensor_unref(x);
    leak_check(base, "dispatch");
}

/* ------------------------------------------------------ layout views */

typedef struct vcase {
    const char *layout;
    int nkeys;
    sw_view_key keys[3];
    const char *want; /* the view's layout, or NULL for an error */
    int64_t delta;    /* offset increase */
    sw_status status; /* for errors */
    const char *msg;  /* for errors */
} vcase;

/* Checks that t is a view of src: same carrier, and the logical values
 * are the slots at offset + layout(i). */
static void check_is_view(const sw_tensor *t, const sw_tensor *src,
                          const char *name) {
    ok(sw_tensor_carrier(t) == sw_tensor_carrier(src),
       "%s: the result shares the input's carrier", name);
    is_str(sw_dtype_name(sw_tensor_dtype(t)),
           sw_dtype_name(sw_tensor_dtype(src)), "%s: same dtype", name);
    int64_t bad = -1;
    for (int64_t i = 0; i < sw_tensor_size(t) && bad < 0; i++)
        if (getd(t, i) != (double)phys(t, i))
            bad = i;
    /* Slot p holds the value p, so element i must read its own slot. */
    ok(bad < 0, "%s: every element reads its slot", name);
}

static void run_view_cases(ckind kind, const vcase *cases, size_t n,
                           int64_t offset) {
    for (size_t c = 0; c < n; c++) {
        const vcase *v = &cases[c];
        char name[200];
        snprintf(name, sizeof name, "%s view #%zu of %s at %lld",
                 kind_name(kind), c, v->layout, (long long)offset);
        sw_tensor *x = make_tensor(kind, v->layout, offset, 2, fill_idx);
        if (!x)
            continue;
        sw_tensor *r = SENT_TENSOR;
        int64_t live = sw_debug_live_allocs();
        sw_status st = sw_view(x, v->nkeys, v->keys, &r);
        if (v->want == NULL) {
            expect_rejected(st, r, v->status, v->msg, name);
            leak_check(live, name);
        } else if (expect_ok(st, name)) {
            is_str(L(sw_tensor_layout(r)), v->want, "%s: layout", name);
            is_int(sw_tensor_offset(r), offset + v->delta, "%s: offset", name);
            check_is_view(r, x, name);
            sw_tensor_unref(r);
        }
        sw_tensor_unref(x);
    }
}

static void test_view(ckind kind) {
    int64_t base = sw_debug_live_allocs();
    const char *a = "(5,10):(1,5)";
    const char *h = "(10,(2,3)):(1,(10,20))";
    const char *one = "((5),3):((2),10)";
    const vcase cases[] = {
        /* The reference's examples. */
        {a, 2, {KI(2), KS(1, 2, 1, 5)}, "3:5", 12, 0, NULL},
        {h, 2, {KI(0), KALL()}, "((2,3)):((10,20))", 0, 0, NULL},
        /* Slices on leaf modes. */
        {a, 2, {KALL(), KALL()}, "(5,10):(1,5)", 0, 0, NULL},
        {a, 2, {KS(1, 1, 1, 4), KI(3)}, "3:1", 16, 0, NULL},
        {a, 2, {KS(1, -3, 1, -1), KS(1, -2, 0, 0)}, "(2,2):(1,5)", 42, 0, NULL},
        {a, 2, {KS(1, -100, 1, 100), KI(0)}, "5:1", 0, 0, NULL},
        {a, 2, {KS(0, 0, 1, 2), KS(1, 9, 0, 0)}, "(2,1):(1,5)", 45, 0, NULL},
        {a, 2, {KSTEP(1, 0, 1, 5, 1), KI(0)}, "5:1", 0, 0, NULL},
        {a,
         2,
         {KSTEP(0, 0, 0, 0, 1), KS(0, 0, 1, -7)},
         "(5,3):(1,5)",
         0,
         0,
         NULL},
        {a, 2, {KI(4), KI(9)}, "():()", 49, 0, NULL},
        /* Integer keys on nested modes: the logical index in the mode. */
        {h, 2, {KI(3), KALL()}, "((2,3)):((10,20))", 3, 0, NULL},
        {h, 2, {KALL(), KI(4)}, "10:1", 40, 0, NULL},
        {h, 2, {KS(1, 2, 1, 4), KI(5)}, "2:1", 52, 0, NULL},
        {h, 2, {KALL(), KALL()}, "(10,(2,3)):(1,(10,20))", 0, 0, NULL},
        {h,
         2,
         {KS(1, 7, 0, 0), KSTEP(0, 0, 0, 0, 1)},
         "(3,(2,3)):(1,(10,20))",
         7,
         0,
         NULL},
        /* A nested mode holding one integer counts as a leaf. */
        {one, 2, {KS(1, 1, 1, 3), KALL()}, "(2,3):(2,10)", 2, 0, NULL},
        {one, 2, {KI(4), KI(1)}, "():()", 18, 0, NULL},
        /* Errors. */
        {a,
         1,
         {KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View keys must include exactly one key per top-level mode"},
        {a,
         3,
         {KALL(), KALL(), KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View keys must include exactly one key per top-level mode"},
        {a,
         0,
         {KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View keys must include exactly one key per top-level mode"},
        {a,
         2,
         {KSTEP(0, 0, 0, 0, 2), KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View slices do not support steps"},
        {a,
         2,
         {KALL(), KSTEP(1, 1, 1, 4, -1)},
         NULL,
         0,
         SW_EVALUE,
         "View slices do not support steps"},
        {a,
         2,
         {KSTEP(1, 0, 1, 2, 0), KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View slices do not support steps"},
        {a,
         2,
         {KS(1, 3, 1, 3), KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View slices must be non-empty"},
        {a,
         2,
         {KS(1, 4, 1, 2), KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View slices must be non-empty"},
        {a,
         2,
         {KS(1, -1, 1, -3), KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View slices must be non-empty"},
        {a,
         2,
         {KS(1, 5, 0, 0), KALL()},
         NULL,
         0,
         SW_EVALUE,
         "View slices must be non-empty"},
        {a,
         2,
         {KALL(), KS(0, 0, 1, 0)},
         NULL,
         0,
         SW_EVALUE,
         "View slices must be non-empty"},
        {a,
         2,
         {KALL(), KS(0, 0, 1, -10)},
         NULL,
         0,
         SW_EVALUE,
         "View slices must be non-empty"},
        {a,
         2,
         {KI(5), KI(0)},
         NULL,
         0,
         SW_EVALUE,
         "View integer key is out of domain"},
        {a,
         2,
         {KI(-1), KI(0)},
         NULL,
         0,
         SW_EVALUE,
         "View integer key is out of domain"},
        {a,
         2,
         {KI(0), KI(10)},
         NULL,
         0,
         SW_EVALUE,
         "View integer key is out of domain"},
        {h,
         2,
         {KALL(), KI(6)},
         NULL,
         0,
         SW_EVALUE,
         "View integer key is out of domain"},
        {h,
         2,
         {KALL(), KI(-1)},
         NULL,
         0,
         SW_EVALUE,
         "View integer key is out of domain"},
        {h,
         2,
         {KALL(), KS(1, 1, 0, 0)},
         NULL,
         0,
         SW_EVALUE,
         "Only whole slices are supported for non-leaf modes"},
        {h,
         2,
         {KALL(), KS(0, 0, 1, 2)},
         NULL,
         0,
         SW_EVALUE,
         "Only whole slices are supported for non-leaf modes"},
        {h,
         2,
         {KALL(), KS(1, 0, 1, 6)},
         NULL,
         0,
         SW_EVALUE,
         "Only whole slices are supported for non-leaf modes"},
        /* A non-leaf mode accepts only [:] or [::1]; the reference names
         * the non-leaf rule for any other slice, a step included. */
        {h,
         2,
         {KALL(), KSTEP(0, 0, 0, 0, 2)},
         NULL,
         0,
         SW_EVALUE,
         "Only whole slices are supported for non-leaf modes"},
    };
    size_t n = sizeof cases / sizeof cases[0];
    run_view_cases(kind, cases, n, 0);
    run_view_cases(kind, cases, n, 3);

    /* Writes through a view land in the source. */
    sw_tensor *x = make_tensor(kind, a, 2, 0, fill_idx);
    if (x) {
        sw_view_key keys[2] = {KI(2), KS(1, 2, 1, 5)};
        sw_tensor *v = NULL;
        sw_status st = sw_view(x, 2, keys, &v);
        if (expect_ok(st, "view for a write")) {
            int64_t ver = sw_tensor_version(x);
            sw_value val = sw_value_f64(-7.0);
            st = sw_tensor_set(v, 1, &val);
            if (expect_ok(st, "write through the view")) {
                /* v[1] is x[2, 3], logical index 2 + 5*3 = 17. */
                ok(getd(x, 17) == -7.0, "%s: the write shows in the source",
                   kind_name(kind));
                is_int(sw_tensor_version(x), ver + 1,
                       "%s: source and view share one version",
                       kind_name(kind));
            }
            ok(sw_tensor_autograd_ctx(v) != NULL,
               "%s: a view of a differentiable tensor records its op",
               kind_name(kind));
            sw_tensor_unref(v);
        }
        sw_tensor_unref(x);
    }
    /* A released carrier: the reference has no released check in view
     * itself; the result tensor cannot be made. It must fail cleanly. */
    x = make_tensor(kind, a, 0, 0, fill_idx);
    if (x) {
        sw_carrier_release_storage(sw_tensor_carrier(x));
        sw_view_key keys[2] = {KALL(), KALL()};
        sw_tensor *v = SENT_TENSOR;
        int64_t live = sw_debug_live_allocs();
        sw_status st = sw_view(x, 2, keys, &v);
        ok(st != SW_OK && v == SENT_TENSOR,
           "%s: a view of a released tensor fails (%s: %s)", kind_name(kind),
           S(st), sw_errmsg());
        sw_clear_error();
        leak_check(live, "view of a released tensor");
        sw_tensor_unref(x);
    }
    leak_check(base, kind == CPU ? "CPU views" : "Generic views");
}

/* ------------------------------------------------ permute, rearrange */

static void test_permute(ckind kind) {
    int64_t base = sw_debug_live_allocs();
    const char *src = "(2,(3,4),5):(1,(2,6),24)";
    const struct {
        int n;
        int32_t order[4];
        const char *want;
        const char *msg;
    } cases[] = {
        {3, {2, 0, 1}, "(5,2,(3,4)):(24,1,(2,6))", NULL},
        {3, {0, 1, 2}, "(2,(3,4),5):(1,(2,6),24)", NULL},
        {3, {1, 2, 0}, "((3,4),5,2):((2,6),24,1)", NULL},
        {2,
         {0, 1},
         NULL,
         "Permutation dimensions must reorder every layout "
         "mode"},
        {4,
         {0, 1, 2, 3},
         NULL,
         "Permutation dimensions must reorder every layout mode"},
        {3,
         {0, 0, 1},
         NULL,
         "Permutation dimensions must reorder every layout mode"},
        {3,
         {0, 1, 3},
         NULL,
         "Permutation dimensions must reorder every layout mode"},
        {3,
         {-1, 0, 1},
         NULL,
         "Permutation dimensions must reorder every layout mode"},
        {0,
         {0},
         NULL,
         "Permutation dimensions must reorder every layout "
         "mode"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char name[160];
        snprintf(name, sizeof name, "%s permute #%zu of %s", kind_name(kind), c,
                 src);
        sw_tensor *x = make_tensor(kind, src, 4, 1, fill_idx);
        if (!x)
            continue;
        sw_tensor *r = SENT_TENSOR;
        sw_status st = sw_permute(x, cases[c].n, cases[c].order, &r);
        if (cases[c].want == NULL) {
            expect_rejected(st, r, SW_EVALUE, cases[c].msg, name);
        } else if (expect_ok(st, name)) {
            is_str(L(sw_tensor_layout(r)), cases[c].want, "%s: layout", name);
            is_int(sw_tensor_offset(r), 4, "%s: same offset", name);
            check_is_view(r, x, name);
            sw_tensor_unref(r);
        }
        sw_tensor_unref(x);
    }
    /* Through the operation: the order must be integers. */
    sw_tensor *x = make_tensor(kind, "(2,3):(1,2)", 0, 0, fill_idx);
    if (x) {
        sw_op *op = NULL;
        sw_status st =
            sw_carrier_dispatch_op(sw_tensor_carrier(x), "permute", &op);
        if (expect_ok(st, "dispatch permute")) {
            sw_arg args[3] = {sw_arg_tensor(x), sw_arg_f64(1.0), sw_arg_i64(0)};
            sw_tensor *r = SENT_TENSOR;
            st = sw_op_forward(op, 3, args, &r);
            expect_rejected(st, r, SW_ETYPE,
                            "Permutation dimensions must be integers",
                            "permute with a float dimension");
            args[1] = arg_bool(1);
            st = sw_op_forward(op, 3, args, &r);
            expect_rejected(st, r, SW_ETYPE,
                            "Permutation dimensions must be integers",
                            "permute with a bool dimension");
            args[1] = sw_arg_i64(1);
            st = sw_op_forward(op, 3, args, &r);
            if (expect_ok(st, "permute through the operation")) {
                is_str(L(sw_tensor_layout(r)), "(3,2):(2,1)",
                       "permute(1, 0) through the operation");
                sw_tensor_unref(r);
            }
            sw_op_unref(op);
        }
        sw_tensor_unref(x);
    }
    leak_check(base, kind == CPU ? "CPU permute" : "Generic permute");
}

static void test_rearrange(ckind kind) {
    int64_t base = sw_debug_live_allocs();
    const struct {
        const char *layout;
        int nout;
        int32_t out[12];
        int nsel;
        int32_t sel[8];
        const char *want;
        const char *msg;
    } cases[] = {
        {"(2,3,4):(1,2,6)", 3, {2, 0, 1}, -1, {0}, "(4,2,3):(6,1,2)", NULL},
        {"(1,(2,3)):(5,(7,14))",
         2,
         {1, 0},
         2,
         {LEAF, LEAF},
         "((2,3),1):((7,14),5)",
         NULL},
        {"(2,3):(1,2)", 3, {1, LEAF, 0}, -1, {0}, "(3,1,2):(2,0,1)", NULL},
        {"(2,3,4):(1,2,6)",
         5,
         {0, PUSH, 1, 2, POP},
         -1,
         {0},
         "(2,(3,4)):(1,(2,6))",
         NULL},
        {"(2,(3,4)):(1,(2,6))", 3, {2, 1, 0}, -1, {0}, "(4,3,2):(6,2,1)", NULL},
        {"(2,1,3):(1,2,2)", 2, {0, 2}, -1, {0}, "(2,3):(1,2)", NULL},
        {"(2,3,4):(1,2,6)",
         3,
         {0, 0, 1},
         -1,
         {0},
         NULL,
         "Layout rearrange ids must not be duplicated"},
        {"(2,3,4):(1,2,6)",
         2,
         {0, 1},
         -1,
         {0},
         NULL,
         "Layout rearrange ids must include every extracted layout"},
        {"(2,3,4):(1,2,6)",
         3,
         {0, 1, 3},
         -1,
         {0},
         NULL,
         "Layout rearrange id is out of range"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char name[160];
        snprintf(name, sizeof name, "%s rearrange #%zu of %s", kind_name(kind),
                 c, cases[c].layout);
        sw_tensor *x = make_tensor(kind, cases[c].layout, 2, 1, fill_idx);
        if (!x)
            continue;
        sw_tensor *r = SENT_TENSOR;
        sw_status st = sw_rearrange(x, cases[c].nout, cases[c].out,
                                    cases[c].nsel, cases[c].sel, &r);
        if (cases[c].want == NULL) {
            expect_rejected(st, r, SW_EVALUE, cases[c].msg, name);
        } else if (expect_ok(st, name)) {
            is_str(L(sw_tensor_layout(r)), cases[c].want, "%s: layout", name);
            is_int(sw_tensor_offset(r), 2, "%s: same offset", name);
            check_is_view(r, x, name);
            /* The same as the layout operation. */
            sw_layout *want = NULL;
            st = sw_layout_rearrange(sw_tensor_layout(x), cases[c].nout,
                                     cases[c].out, cases[c].nsel, cases[c].sel,
                                     &want);
            ok(st == SW_OK && sw_layout_equal(want, sw_tensor_layout(r)),
               "%s: equals sw_layout_rearrange", name);
            sw_layout_unref(want);
            sw_tensor_unref(r);
        }
        sw_tensor_unref(x);
    }
    leak_check(base, kind == CPU ? "CPU rearrange" : "Generic rearrange");
}

/* --------------------------------------------------- fault injection */

static sw_tensor *fi_x, *fi_y, *fi_m;

static sw_status fi_run(int which, sw_tensor **out) {
    sw_view_key keys[2] = {KI(1), KS(1, 1, 0, 0)};
    int32_t order[2] = {1, 0};
    int32_t rout[2] = {1, 0}, rsel[2] = {LEAF, LEAF};
    switch (which) {
    case 0:
        return sw_add(fi_x, fi_y, out);
    case 1:
        return sw_div(fi_x, fi_y, out);
    case 2:
        return sw_mul(fi_x, sw_arg_f64(1.5), out);
    case 3:
        return sw_neg(fi_x, out);
    case 4:
        return sw_pow(fi_x, sw_arg_i64(3), out);
    case 5:
        return sw_unary("tanh", fi_x, out);
    case 6:
        return sw_unary("relu", fi_x, out);
    case 7:
        return sw_reduce_sum(fi_x, out);
    case 8:
        return sw_matmul(fi_x, fi_m, out);
    case 9:
        return sw_view(fi_x, 2, keys, out);
    case 10:
        return sw_permute(fi_x, 2, order, out);
    case 11:
        return sw_rearrange(fi_x, 2, rout, 2, rsel, out);
    default:
        return sw_elementwise_mul(fi_x, fi_y, out);
    }
}

static const char *const fi_names[] = {
    "add",     "div",       "mul(1.5)",       "neg",    "pow(3)",
    "tanh",    "relu",      "reduce",         "matmul", "view",
    "permute", "rearrange", "elementwise_mul"};

static void test_fault_injection(void) {
    fi_x = make_tensor(GEN, "((2,2),3):((1,2),5)", 1, 0, fill_a);
    fi_y = make_tensor(GEN, "((2,2),3):((1,2),5)", 0, 0, fill_b);
    fi_m = make_tensor(GEN, "(2,3):(3,1)", 0, 0, fill_b);
    if (!fi_x || !fi_y || !fi_m)
        goto done;
    for (int w = 0; w < (int)(sizeof fi_names / sizeof fi_names[0]); w++) {
        int64_t base = sw_debug_live_allocs();
        sw_tensor *want = NULL;
        sw_status st = fi_run(w, &want);
        if (!expect_ok(st, fi_names[w]))
            continue;
        /* want stays alive during the walk: the baseline includes it. */
        int64_t walk_base = sw_debug_live_allocs();
        int bad = 0;
        int64_t n;
        for (n = 0; n < 1000; n++) {
            sw_tensor *r = SENT_TENSOR;
            sw_clear_error();
            sw_debug_fail_alloc_after(n);
            st = fi_run(w, &r);
            sw_debug_fail_alloc_after(-1);
            if (st == SW_OK) {
                bool same = sw_layout_equal(sw_tensor_layout(r),
                                            sw_tensor_layout(want)) &&
                            sw_tensor_offset(r) == sw_tensor_offset(want);
                for (int64_t i = 0; same && i < sw_tensor_size(r); i++)
                    same = getd(r, i) == getd(want, i);
                if (!same) {
                    diag("%s, n=%lld: the result differs", fi_names[w],
                         (long long)n);
                    bad++;
                }
                sw_tensor_unref(r);
                break;
            }
            if (st != SW_ENOMEM || sw_errcode() != SW_ENOMEM) {
                diag("%s, n=%lld: status %s (%s)", fi_names[w], (long long)n,
                     S(st), sw_errmsg());
                bad++;
                break;
            }
            if (r != SENT_TENSOR) {
                diag("%s, n=%lld: out-parameter written on failure",
                     fi_names[w], (long long)n);
                bad++;
            }
            if (sw_debug_live_allocs() != walk_base) {
                diag("%s, n=%lld: %lld allocations live, baseline %lld",
                     fi_names[w], (long long)n,
                     (long long)sw_debug_live_allocs(), (long long)walk_base);
                bad++;
            }
            if (bad >= 3)
                break;
        }
        ok(bad == 0 && n > 0 && n < 1000,
           "fault injection: %s fails cleanly at each of %lld allocation "
           "sites",
           fi_names[w], (long long)n);
        sw_tensor_unref(want);
        leak_check(base, fi_names[w]);
    }
done:
    sw_tensor_unref(fi_x);
    sw_tensor_unref(fi_y);
    sw_tensor_unref(fi_m);
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_elementwise();
    test_dtypes();
    test_reduce();
    test_matmul();
    test_op_errors();
    test_mixed_layouts();
    test_dispatch();
    test_view(GEN);
    test_view(CPU);
    test_permute(GEN);
    test_permute(CPU);
    test_rearrange(GEN);
    test_rearrange(CPU);
    test_fault_injection();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    return done_testing();
}
