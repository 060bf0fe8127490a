/*
 * CPU operations against the Generic reference operations: every operation
 * and every gradient agrees within float32 tolerance, on several layouts;
 * plus the CPU-specific rules (dtypes, Int32 overflow, argument errors).
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"
#include "tap.h"

static const char *const layouts[] = {
    "(2,3):(1,2)",         /* compact */
    "(2,3):(3,1)",         /* transposed */
    "(2,3):(1,4)",         /* strided, with holes */
    "((2,2),3):((1,6),2)", /* hierarchical */
};

/* x[i] = a small deterministic value for logical index i. */
static double value_at(int64_t i) {
    return 0.37 * (double)((i * 7) % 11) - 1.6;
}

/* A tensor of `text` over a fresh carrier (CPU or Generic) at offset 1. */
static sw_tensor *make(const char *text, int cpu, double shift) {
    sw_layout *l = NULL;
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(text, &l))
        return NULL;
    int64_t n = sw_layout_cosize(l) + 1;
    if (cpu)
        sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c);
    else {
        double *zeros = calloc((size_t)n, sizeof *zeros);
        sw_generic_new_doubles(n, zeros, 1, &c);
        free(zeros);
    }
    sw_tensor_new(c, 1, l, &t);
    for (int64_t i = 0; i < sw_tensor_size(t); ++i) {
        sw_value v = sw_value_f64(value_at(i) + shift);
        sw_tensor_set(t, i, &v);
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static double get(const sw_tensor *t, int64_t i) {
    sw_value v;
    if (sw_tensor_get(t, i, &v))
        return NAN;
    double d = v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i;
    sw_value_clear(&v);
    return d;
}

/* Largest relative difference of the logical values of two tensors. */
static double diff(const sw_tensor *a, const sw_tensor *b) {
    double worst = 0;
    if (sw_tensor_size(a) != sw_tensor_size(b))
        return INFINITY;
    for (int64_t i = 0; i < sw_tensor_size(a); ++i) {
        double x = get(a, i), y = get(b, i);
        double d = fabs(x - y) / (1.0 + fabs(y));
        if (!(d <= worst))
            worst = d;
    }
    return worst;
}

typedef enum shape_kind { UNARY, BINARY, SCALAR, REDUCE, MATMUL } shape_kind;
typedef struct opcase {
    const char *name;
    shape_kind kind;
    double scalar;
} opcase;

static const opcase cases[] = {
    {"add", BINARY, 0},
    {"sub", BINARY, 0},
    {"elementwise_mul", BINARY, 0},
    {"div", BINARY, 0},
    {"mul", SCALAR, 2.5},
    {"pow", SCALAR, 3.0},
    {"exp", UNARY, 0},
    {"relu", UNARY, 0},
    {"sigmoid", UNARY, 0},
    {"tanh", UNARY, 0},
    {"gelu", UNARY, 0},
    {"silu", UNARY, 0},
    {"softplus", UNARY, 0},
    {"elu", UNARY, 0},
    {"leaky_relu", UNARY, 0},
    {"reduce", REDUCE, 0},
    {"matmul", MATMUL, 0},
};

/* Runs case c on x (and y) through dispatch; NULL on failure. */
static sw_tensor *run(const opcase *c, sw_tensor *x, sw_tensor *y) {
    sw_tensor *r = NULL;
    sw_status st;
    switch (c->kind) {
    case SCALAR:
        st = strcmp(c->name, "mul") == 0 ? sw_mul(x, sw_arg_f64(c->scalar), &r)
                                         : sw_pow(x, sw_arg_f64(c->scalar), &r);
        break;
    case UNARY:
        st = sw_unary(c->name, x, &r);
        break;
    case REDUCE:
        st = sw_reduce_sum(x, &r);
        break;
    case MATMUL:
        st = sw_matmul(x, y, &r);
        break;
    default:
        if (strcmp(c->name, "add") == 0)
            st = sw_add(x, y, &r);
        else if (strcmp(c->name, "sub") == 0)
            st = sw_sub(x, y, &r);
        else if (strcmp(c->name, "div") == 0)
            st = sw_div(x, y, &r);
        else
            st = sw_elementwise_mul(x, y, &r);
    }
    if (st)
        diag("%s failed: %s", c->name, sw_errmsg());
    return st ? NULL : r;
}

/* Gradient ones shaped like t, on t's carrier class. */
static sw_tensor *ones_like(const sw_tensor *t, int cpu) {
    sw_carrier *c = NULL;
    sw_tensor *g = NULL;
    sw_layout *l = sw_tensor_layout(t);
    int64_t n = sw_layout_cosize(l);
    if (cpu)
        sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c);
    else {
        double *v = calloc((size_t)n, sizeof *v);
        sw_generic_new_doubles(n, v, 1, &c);
        free(v);
    }
    sw_tensor_new(c, 0, l, &g);
    for (int64_t i = 0; i < sw_tensor_size(g); ++i) {
        sw_value one = sw_value_f64(1.0 + 0.1 * (double)i);
        sw_tensor_set(g, i, &one);
    }
    sw_carrier_unref(c);
    return g;
}

static void agree(const opcase *c, const char *text) {
    /* Division and pow stay away from 0 and negative bases. */
    double shift = (strcmp(c->name, "div") == 0 || c->kind == SCALAR) ? 2.5 : 0;
    sw_tensor *xs[2], *ys[2], *rs[2] = {NULL, NULL};
    for (int cpu = 0; cpu < 2; ++cpu) {
        xs[cpu] = make(text, cpu, shift);
        ys[cpu] =
            make(c->kind == MATMUL ? "(4,3):(1,4)" : text, cpu, shift + 0.25);
        rs[cpu] = run(c, xs[cpu], ys[cpu]);
    }
    if (!ok(rs[0] && rs[1], "%s on %s runs on both carriers", c->name, text))
        goto done;
    ok(sw_layout_equal(sw_tensor_layout(rs[0]), sw_tensor_layout(rs[1])),
       "%s on %s: same result layout", c->name, text);
    double d = diff(rs[1], rs[0]);
    ok(d < 2e-5, "%s on %s: CPU agrees with Generic (%.2g)", c->name, text, d);
    for (int cpu = 0; cpu < 2; ++cpu) {
        sw_tensor *g = ones_like(rs[cpu], cpu);
        sw_status st = sw_tensor_backward(rs[cpu], g);
        sw_tensor_unref(g);
        ok(st == SW_OK, "%s on %s: backward on %s", c->name, text,
           cpu ? "CPU" : "Generic");
    }
    d = diff(sw_tensor_grad(xs[1]), sw_tensor_grad(xs[0]));
    ok(d < 2e-4, "%s on %s: lhs gradients agree (%.2g)", c->name, text, d);
    if (c->kind == BINARY || c->kind == MATMUL) {
        d = diff(sw_tensor_grad(ys[1]), sw_tensor_grad(ys[0]));
        ok(d < 2e-4, "%s on %s: rhs gradients agree (%.2g)", c->name, text, d);
    }
done:
    for (int cpu = 0; cpu < 2; ++cpu) {
        sw_tensor_unref(rs[cpu]);
        sw_tensor_unref(xs[cpu]);
        sw_tensor_unref(ys[cpu]);
    }
}

static void test_int32_rules(void) {
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    sw_tensor *x = NULL, *r = NULL;
    sw_cpu_new(3, SW_DTYPE_INT32, 1, 0, &c);
    sw_layout_parse("3:1", &l);
    sw_tensor_new(c, 0, l, &x);
    int64_t vals[3] = {2147483647, -3, 3};
    for (int i = 0; i < 3; ++i) {
        sw_value v = sw_value_i64(vals[i]);
        sw_tensor_set(x, i, &v);
    }
    sw_status st = sw_unary("relu", x, &r);
    ok(st == SW_OK && sw_tensor_dtype(r) == SW_DTYPE_INT32 &&
           get(r, 0) == 2147483647.0 && get(r, 1) == 0,
       "Int32 relu is exact and keeps Int32");
    sw_tensor_unref(r);
    r = NULL;
    st = sw_mul(x, sw_arg_i64(2), &r);
    ok(st == SW_EOVERFLOW &&
           strcmp(sw_errmsg(),
                  "CPU Int32 operation result is out of int32 range") == 0,
       "Int32 overflow is reported");
    st = sw_mul(x, sw_arg_f64(0.5), &r);
    ok(st == SW_OK && sw_tensor_dtype(r) == SW_DTYPE_FLOAT32,
       "Int32 times a float gives Float32");
    sw_tensor_unref(r);
    r = NULL;
    st = sw_pow(x, sw_arg_i64(40), &r);
    ok(st == SW_EOVERFLOW, "3**40 overflows Int32");
    st = sw_add(x, x, &r);
    ok(st == SW_EOVERFLOW, "Int32 add overflow");
    st = sw_unary("exp", x, &r);
    ok(st == SW_OK && sw_tensor_dtype(r) == SW_DTYPE_FLOAT32,
       "exp of Int32 gives Float32");
    ok(sw_tensor_autograd_ctx(r) == NULL,
       "results of Int32 inputs are not recorded");
    sw_tensor_unref(r);
    sw_tensor_unref(x);
    sw_layout_unref(l);
    sw_carrier_unref(c);
}

static void test_errors(void) {
    sw_tensor *a = make("(2,3):(1,2)", 1, 0), *b = make("(3,2):(1,3)", 1, 0);
    sw_tensor *g = make("(2,3):(1,2)", 0, 0), *r = NULL;
    sw_status st = sw_add(a, b, &r);
    ok(st == SW_EVALUE && strcmp(sw_errmsg(), "Tensor layouts must match") == 0,
       "layouts must match");
    st = sw_add(a, g, &r);
    ok(st == SW_ETYPE &&
           strcmp(sw_errmsg(), "Tensor backing carriers must match") == 0,
       "carriers must match");
    st = sw_matmul(a, b, &r);
    ok(st == SW_EVALUE &&
           strcmp(sw_errmsg(), "Matmul inner dimensions must match") == 0,
       "matmul inner dimensions");
    sw_op *op = NULL;
    st = sw_carrier_dispatch_op(sw_tensor_carrier(a), "nope", &op);
    ok(st == SW_ENOTIMPL &&
           strcmp(sw_errmsg(),
                  "CPU carrier does not support operation 'nope'") == 0,
       "unknown CPU operation");
    st = sw_carrier_dispatch_op(sw_tensor_carrier(a), "add", &op);
    if (!st) {
        sw_arg one = sw_arg_tensor(a);
        st = sw_op_forward(op, 1, &one, &r);
        ok(st == SW_ETYPE &&
               strcmp(sw_errmsg(), "CPU add requires lhs and rhs tensors") == 0,
           "arity of CPU add");
        sw_op_unref(op);
    }
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_tensor_unref(g);
}

/* A CPU Float32 tensor of `text` whose carrier holds vals (one value per
 * element of the carrier: a broadcast layout has few of them). */
static sw_tensor *make_phys(const char *text, const double *vals) {
    sw_layout *l = NULL;
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(text, &l))
        return NULL;
    int64_t n = sw_layout_cosize(l);
    sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c);
    for (int64_t p = 0; c && p < n; ++p) {
        sw_value v = sw_value_f64(vals[p]);
        sw_carrier_set(c, p, &v);
    }
    sw_tensor_new(c, 0, l, &t);
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static double phys(const sw_tensor *t, int64_t p) {
    sw_value v;
    if (sw_carrier_get(sw_tensor_carrier(t), p, &v))
        return NAN;
    double d = v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i;
    sw_value_clear(&v);
    return d;
}

/*
 * Operations and gradients over broadcast layouts of up to 2**62 logical
 * elements finish at once (each used to visit every logical element) or
 * fail at once; an interrupt request stops an operation with no result.
 */
static void test_broadcast_and_interrupts(void) {
    int64_t base = sw_debug_live_allocs();
    static const double v4[4] = {1, -2, 3, 4}, ones[4] = {1, 1, 1, 1};
    sw_tensor *x = make_phys("4611686018427387904:0", v4 + 1);
    sw_tensor *r = NULL, *s = NULL;
    sw_status st = sw_unary("relu", x, &r);
    ok(st == SW_OK && sw_carrier_size(sw_tensor_carrier(r)) == 1 &&
           phys(r, 0) == 0.0 &&
           sw_layout_equal(sw_tensor_layout(r), sw_tensor_layout(x)),
       "relu of 2**62:0 has the input's layout, one element, value 0");
    sw_tensor_unref(r);
    r = NULL;
    st = sw_add(x, x, &r);
    ok(st == SW_OK && phys(r, 0) == -4.0, "x + x over 2**62:0");
    sw_tensor_unref(r);
    r = NULL;
    sw_tensor_unref(x);

    /* relu, sum over the broadcast mode, and back. */
    sw_tensor *xs = make_phys("(4,1152921504606846976):(1,0)", v4);
    sw_tensor *g = make_phys("4:1", ones);
    st = sw_unary("relu", xs, &r);
    if (st == SW_OK)
        st = sw_reduce_sum(r, &s);
    if (expect_ok(st, "sum(relu(x)) over (4,2**60):(1,0)")) {
        ok(phys(s, 0) == 0x1p60 && phys(s, 1) == 0.0 && phys(s, 3) == 0x1p62,
           "the sums are 2**60 * relu(x)");
        st = sw_tensor_backward(s, g);
        sw_tensor *dx = sw_tensor_grad(xs);
        if (expect_ok(st, "its backward pass") && dx)
            ok(phys(dx, 0) == 1.0 && phys(dx, 1) == 0.0 && phys(dx, 2) == 1.0,
               "x.grad is relu'(x) in x's layout");
    }
    sw_tensor_unref(r);
    sw_tensor_unref(s);
    r = s = NULL;

    /* matmul contracting a broadcast mode, and its backward. */
    sw_tensor *a = make_phys("(4,1099511627776):(1,0)", v4);
    sw_tensor *b = make_phys("(3,1099511627776):(1,0)", ones);
    st = sw_matmul(a, b, &r);
    if (expect_ok(st, "matmul over K = 2**40 broadcast")) {
        ok(phys(r, 0) == 0x1p40 && phys(r, 5) == -0x1p41,
           "the product is 2**40 * a[i] * b[j]");
        sw_tensor *gr =
            make_phys("(4,3):(1,4)",
                      (const double[12]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
        st = sw_tensor_backward(r, gr);
        if (expect_ok(st, "its backward pass"))
            ok(phys(sw_tensor_grad(a), 0) == 3.0 &&
                   phys(sw_tensor_grad(b), 0) == 6.0,
               "dA = 3 (three columns of ones), dB = sum(a) = 6");
        sw_tensor_unref(gr);
    }
    sw_tensor_unref(r);
    r = NULL;
    /* A product of 2**60 x 4 elements cannot be allocated. */
    sw_tensor *ab = make_phys("(1152921504606846976,3):(0,1)", v4);
    sw_tensor *bb =
        make_phys("(4,3):(1,4)",
                  (const double[12]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    r = (sw_tensor *)&base; /* a sentinel the call must not overwrite */
    st = sw_matmul(ab, bb, &r);
    expect_fail(st, SW_ENOMEM,
                "cannot allocate a result of 4611686018427387904 elements",
                "matmul with a 2**60 x 4 result");
    ok(r == (sw_tensor *)&base, "  and returns nothing");
    r = NULL;

    /* An interrupt request on a watching thread: no result. */
    sw_interrupt_watch(1);
    sw_interrupt_request();
    r = (sw_tensor *)&base;
    st = sw_unary("tanh", g, &r);
    expect_fail(st, SW_EINTERRUPTED, "operation interrupted",
                "tanh with a raised interrupt request");
    ok(r == (sw_tensor *)&base, "  and returns nothing");
    st = sw_matmul(bb, bb, &r);
    expect_fail(st, SW_EINTERRUPTED, "operation interrupted",
                "matmul with a raised interrupt request");
    ok(r == (sw_tensor *)&base, "  and returns nothing");
    sw_interrupt_clear();
    sw_interrupt_watch(0);
    r = NULL;
    st = sw_unary("tanh", g, &r);
    ok(st == SW_OK && fabs(phys(r, 0) - tanh(1.0)) < 1e-6,
       "tanh runs once the request is cleared");
    sw_tensor_unref(r);

    sw_tensor_unref(ab);
    sw_tensor_unref(bb);
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_tensor_unref(xs);
    sw_tensor_unref(g);
    is_int(sw_debug_live_allocs(), base, "broadcasts and interrupts: no leak");
}

/*
 * Results whose size does not fit int64_t: two (2^32, 1):(0, 0) operands
 * over one element make a 2^32 x 2^32 product. Refused by name, for the
 * CPU and Generic carriers, batched or not, and in einsum's layouts.
 */
static sw_tensor *broadcast(const char *text, int cpu) {
    sw_layout *l = NULL;
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    double zero = 0.0;
    if (sw_layout_parse(text, &l))
        return NULL;
    if (cpu)
        sw_cpu_new(1, SW_DTYPE_FLOAT32, 1, 0, &c);
    else
        sw_generic_new_doubles(1, &zero, 1, &c);
    if (c)
        sw_tensor_new(c, 0, l, &t);
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static void test_result_overflow(void) {
    int64_t base = sw_debug_live_allocs();
    static const char *const want =
        "matmul result size overflows 64-bit integers (the extents are "
        "4294967296,4294967296)";
    for (int cpu = 1; cpu >= 0; --cpu) {
        const char *kind = cpu ? "CPU" : "Generic";
        sw_tensor *a = broadcast("(4294967296,1):(0,0)", cpu), *r = NULL;
        if (!ok(a != NULL, "%s: a broadcast (2^32,1):(0,0) operand", kind))
            continue;
        sw_status st = sw_matmul(a, a, &r);
        is_int(st, SW_EVALUE, "%s: a 2^32 x 2^32 matmul fails (got %d)", kind,
               (int)st);
        is_str(sw_errmsg(), want, "%s: the message names the result", kind);
        ok(r == NULL, "%s: no result", kind);
        sw_clear_error();
        sw_tensor *b = broadcast("(4294967296,1,1):(0,0,0)", cpu);
        if (b != NULL) {
            st = sw_batched_matmul(b, b, &r);
            is_int(st, SW_EVALUE, "%s: the batched one fails too (got %d)",
                   kind, (int)st);
            ok(strncmp(sw_errmsg(), "batched matmul result size overflows",
                       36) == 0,
               "%s: and says so ('%s')", kind, sw_errmsg());
            sw_clear_error();
        }
        sw_tensor_unref(b);
        sw_tensor_unref(a);
    }
    sw_einops_spec *spec = NULL;
    sw_layout *l = NULL, *r = NULL;
    if (sw_einops_parse_einsum("a b, c b -> a c", &spec) == SW_OK &&
        sw_layout_parse("(4294967296,1):(0,0)", &l) == SW_OK) {
        sw_status st = sw_einops_einsum_layouts(spec, l, l, NULL, NULL, &r);
        is_int(st, SW_EVALUE, "einsum layouts of a 2^32 x 2^32 result fail");
        is_str(sw_errmsg(),
               "einsum result size overflows 64-bit integers (the extents are "
               "4294967296,4294967296)",
               "and name the einsum result");
        ok(r == NULL, "and leave the result alone");
        sw_clear_error();
    }
    sw_layout_unref(l);
    sw_einops_spec_unref(spec);
    sw_einops_cache_clear();
    is_int(sw_debug_live_allocs(), base, "result overflow: nothing leaked");
}

/* The allocations one call makes: the smallest countdown under which it
 * succeeds (each library allocation spends one). */
static int64_t allocations_of(sw_tensor *a, sw_tensor *b, sw_tensor **out) {
    for (int64_t n = 0; n < 64; ++n) {
        sw_debug_fail_alloc_after(n);
        sw_status st = sw_add(a, b, out);
        sw_debug_fail_alloc_after(-1);
        if (st == SW_OK)
            return n;
        sw_clear_error();
    }
    return -1;
}

/* A CPU tensor of n Float32 elements over a compact layout, x[i] = i + 1. */
static sw_tensor *counting(int64_t n) {
    char text[64];
    snprintf(text, sizeof text, "(%lld):(1)", (long long)n);
    sw_layout *l = NULL;
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(text, &l) == SW_OK &&
        sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c) == SW_OK)
        sw_tensor_new(c, 0, l, &t);
    for (int64_t i = 0; t != NULL && i < n; ++i) {
        sw_value v = sw_value_f64((double)(i + 1));
        sw_tensor_set(t, i, &v);
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

/*
 * A small result is two allocations, recorded or not: the operation
 * (whose two saved inputs need none) and one block for the carrier with
 * its elements and the result's tensor. Larger results keep separate
 * storage (the tensor, the carrier, its state and its elements: with the
 * operation, five); both read, release and free alike, and a tensor over
 * the result's carrier outlives the result.
 */
static void test_small_results(void) {
    int64_t base = sw_debug_live_allocs();
    static const int64_t sizes[] = {4, 256, 257};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        int64_t n = sizes[k];
        sw_tensor *a = counting(n), *b = counting(n);
        if (!ok(a != NULL && b != NULL, "n=%lld: operands", (long long)n))
            continue;
        /* The first call computes facts of the layout that it keeps. */
        sw_tensor *warm = NULL;
        if (sw_add(a, b, &warm) == SW_OK)
            sw_tensor_unref(warm);
        sw_clear_error();
        for (int grad = 0; grad <= 1; ++grad) {
            sw_set_grad_enabled(grad);
            sw_tensor *r = NULL;
            int64_t allocs = allocations_of(a, b, &r);
            int64_t want = n * 4 <= 1024 ? 2 : 5;
            is_int(allocs, want, "n=%lld, grad %s: add makes %lld allocations",
                   (long long)n, grad ? "on" : "off", (long long)want);
            if (r == NULL)
                continue;
            ok((sw_tensor_autograd_ctx(r) != NULL) == grad,
               "n=%lld, grad %s: the context is recorded as the mode says",
               (long long)n, grad ? "on" : "off");
            int same = 1;
            for (int64_t i = 0; i < n; ++i)
                same &= get(r, i) == (double)(2 * (i + 1));
            ok(same, "n=%lld: the sums", (long long)n);
            sw_carrier *c = sw_tensor_carrier(r);
            ok(((uintptr_t)sw_cpu_data(c) & 63) == 0,
               "n=%lld: the elements are 64-byte aligned", (long long)n);
            /* Another tensor over the carrier, the result gone first. */
            sw_layout *l2 = NULL;
            sw_tensor *other = NULL;
            if (sw_layout_parse("(2):(1)", &l2) == SW_OK &&
                !expect_ok(sw_tensor_new(c, 1, l2, &other), "a second tensor"))
                other = NULL;
            sw_layout_unref(l2);
            expect_ok(sw_carrier_release_storage(c), "releasing the result");
            ok(sw_cpu_data(c) == NULL && sw_carrier_is_released(c),
               "n=%lld: a released result has no data", (long long)n);
            sw_value v;
            expect_fail(sw_tensor_get(r, 0, &v), SW_ERUNTIME,
                        "Carrier is released", "reading a released result");
            sw_tensor_unref(r);
            if (other != NULL) {
                expect_fail(sw_tensor_get(other, 0, &v), SW_ERUNTIME,
                            "Carrier is released",
                            "the second tensor, after the result went");
                ok(sw_tensor_carrier(other) == c && sw_tensor_size(other) == 2,
                   "n=%lld: the second tensor keeps the carrier", (long long)n);
                sw_tensor_unref(other);
            }
        }
        sw_set_grad_enabled(1);
        sw_tensor_unref(a);
        sw_tensor_unref(b);
    }
    leak_check(base, "small results");
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; ++l)
            agree(&cases[c], layouts[l]);
    test_int32_rules();
    test_errors();
    test_broadcast_and_interrupts();
    test_result_overflow();
    test_small_results();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    return done_testing();
}
