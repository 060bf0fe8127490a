/*
 * Softmax, log-softmax and cross-entropy kernels (softmax.h): values
 * against double-precision formulas, stability for large logits, the
 * vector-Jacobian products against central differences, layouts with
 * strides and holes, and every rejection with its message.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "strideweave/strideweave.h"
#include "check.h"

/* A CPU Float32 tensor over n values, with a layout given by extents and
 * strides of one or two flat modes and an offset. */
static sw_tensor *make(const float *vals, int64_t n, int32_t rank,
                       const int64_t *ext, const int64_t *str, int64_t off) {
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    int32_t tok[2] = {SW_TOK_LEAF, SW_TOK_LEAF};
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c) ||
        sw_layout_from_recipe(rank, tok, ext, str, &l) ||
        sw_tensor_new(c, off, l, &t)) {
        diag("make: %s", sw_errmsg());
        sw_clear_error();
    }
    if (c && vals)
        memcpy(sw_cpu_data(c), vals, (size_t)n * sizeof(float));
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static double at(const sw_tensor *t, int64_t i) {
    sw_value v;
    if (sw_tensor_get(t, i, &v)) {
        sw_clear_error();
        return NAN;
    }
    return v.as.f;
}

static void put(sw_tensor *t, int64_t i, double x) {
    sw_value v = sw_value_f64(x);
    if (sw_tensor_set(t, i, &v))
        sw_clear_error();
}

static void test_values(void) {
    /* Two rows of three, stored column-major: rows (1,2,3) and (1000,0,-1000).
     */
    static const float v[] = {1, 1000, 2, 0, 3, -1000};
    int64_t e[2] = {2, 3}, s[2] = {1, 2};
    sw_tensor *x = make(v, 6, 2, e, s, 0), *y = NULL, *z = NULL;
    if (!expect_ok(sw_softmax(x, 0, &y), "softmax") ||
        !expect_ok(sw_softmax(x, 1, &z), "log_softmax"))
        return;
    ok(sw_layout_equal(sw_tensor_layout(y), sw_tensor_layout(x)),
       "an injective layout is kept");
    double d = exp(1) + exp(2) + exp(3);
    int ok_vals = 1;
    for (int j = 0; j < 3; ++j) {
        double p = exp(1.0 + j) / d;
        ok_vals &= fabs(at(y, 2 * j) - p) < 1e-6;
        ok_vals &= fabs(at(z, 2 * j) - log(p)) < 1e-5;
    }
    ok(ok_vals, "row (1,2,3): softmax and log_softmax");
    ok(at(y, 1) == 1.0 && at(y, 3) == 0.0 && at(z, 1) == 0.0 &&
           at(z, 3) == -1000.0 && isfinite(at(z, 5)),
       "large logits are stable (%g %g %g)", at(z, 1), at(z, 3), at(z, 5));
    sw_tensor_unref(y);
    sw_tensor_unref(z);
    sw_tensor_unref(x);

    /* A broadcast row (stride 0 along rows): a compact row-major result. */
    static const float w[] = {0, 1};
    int64_t be[2] = {3, 2}, bs[2] = {0, 1};
    x = make(w, 2, 2, be, bs, 0);
    if (expect_ok(sw_softmax(x, 0, &y), "softmax of a broadcast row")) {
        char buf[64];
        sw_layout_format(sw_tensor_layout(y), buf, sizeof buf);
        is_str(buf, "(3,2):(2,1)", "a non-injective layout gives row-major");
        ok(fabs(at(y, 5) - 1.0 / (1.0 + exp(-1.0))) < 1e-6, "its values");
        sw_tensor_unref(y);
    }
    sw_tensor_unref(x);

    /* One mode is one row; NaN and -inf rows. */
    static const float u[] = {9, 0, NAN, 0};
    int64_t ue[1] = {2}, us[1] = {2};
    x = make(u, 4, 1, ue, us, 0); /* elements 9 and NaN */
    if (expect_ok(sw_softmax(x, 0, &y), "softmax with NaN"))
        ok(isnan(at(y, 0)) && isnan(at(y, 1)), "a NaN row gives NaN");
    sw_tensor_unref(y);
    sw_tensor_unref(x);
}

/* sum(g * f(x)) for the finite differences. */
static double weighted(sw_tensor *x, const sw_tensor *g, int log_) {
    sw_tensor *y = NULL;
    if (sw_softmax(x, log_, &y)) {
        sw_clear_error();
        return NAN;
    }
    double s = 0;
    for (int64_t i = 0; i < sw_tensor_size(x); ++i)
        s += at(g, i) * at(y, i);
    sw_tensor_unref(y);
    return s;
}

static void test_backward(void) {
    static const float v[] = {0.5f, -1.0f, 2.0f, 0.25f, 0.0f, 1.5f, 9.0f};
    static const float gw[] = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.0f};
    int64_t e[2] = {2, 3}, s[2] = {3, 1}, gs[2] = {1, 2};
    for (int log_ = 0; log_ < 2; ++log_) {
        sw_tensor *x = make(v, 7, 2, e, s, 1); /* an offset and a tail */
        sw_tensor *g = make(gw, 6, 2, e, gs, 0);
        sw_tensor *dx = NULL;
        if (!expect_ok(sw_softmax_backward(x, g, log_, &dx),
                       "softmax_backward"))
            continue;
        ok(sw_layout_equal(sw_tensor_layout(dx), sw_tensor_layout(x)),
           "the gradient has the input's layout");
        double worst = 0;
        for (int64_t i = 0; i < 6; ++i) {
            double x0 = at(x, i), h = 1e-2;
            put(x, i, x0 + h);
            double up = weighted(x, g, log_);
            put(x, i, x0 - h);
            double down = weighted(x, g, log_);
            put(x, i, x0);
            double fd = (up - down) / (2 * h);
            worst = fmax(worst, fabs(fd - at(dx, i)));
        }
        ok(worst < 2e-3, "%s VJP matches central differences (%g)",
           log_ ? "log_softmax" : "softmax", worst);
        sw_tensor_unref(dx);
        sw_tensor_unref(g);
        sw_tensor_unref(x);
    }
}

static void test_cross_entropy(void) {
    static const float v[] = {1, 2, 3, 0, 0, 0};
    int64_t e[2] = {2, 3}, s[2] = {3, 1};
    sw_tensor *x = make(v, 6, 2, e, s, 0);
    static const float tv[] = {2, 1};
    int64_t te[1] = {2}, ts[1] = {1};
    sw_tensor *t = make(tv, 2, 1, te, ts, 0), *loss = NULL, *dx = NULL;
    double l0 = log(exp(1) + exp(2) + exp(3)) - 3, l1 = log(3.0);
    if (expect_ok(sw_cross_entropy(x, t, SW_REDUCE_MEAN, &loss),
                  "cross_entropy")) {
        ok(fabs(at(loss, 0) - (l0 + l1) / 2) < 1e-6, "mean loss %g",
           at(loss, 0));
        char buf[16];
        sw_layout_format(sw_tensor_layout(loss), buf, sizeof buf);
        is_str(buf, "1:1", "the loss is 1:1");
        sw_tensor_unref(loss);
    }
    if (expect_ok(sw_cross_entropy(x, t, SW_REDUCE_SUM, &loss), "sum"))
        ok(fabs(at(loss, 0) - (l0 + l1)) < 1e-5, "summed loss");
    sw_tensor *g = NULL;
    static const float two[] = {2};
    int64_t oe[1] = {1}, os[1] = {1};
    g = make(two, 1, 1, oe, os, 0);
    if (expect_ok(sw_cross_entropy_backward(x, t, SW_REDUCE_MEAN, g, &dx),
                  "cross_entropy_backward")) {
        /* Row 1 is uniform, target 1: (1/3, 1/3 - 1, 1/3) * 2 / 2. */
        ok(fabs(at(dx, 1) - 1.0 / 3) < 1e-6 && fabs(at(dx, 3) + 2.0 / 3) < 1e-6,
           "gradient (softmax - onehot) * g / N");
        sw_tensor_unref(dx);
    }
    /* Probabilities equal to the one-hot give the same loss. */
    static const float pv[] = {0, 0, 1, 0, 1, 0};
    sw_tensor *p = make(pv, 6, 2, e, s, 0), *lp = NULL;
    if (expect_ok(sw_cross_entropy(x, p, SW_REDUCE_MEAN, &lp),
                  "soft targets")) {
        ok(fabs(at(lp, 0) - at(loss, 0) / 2) < 1e-6, "one-hot probabilities");
        sw_tensor_unref(lp);
    }
    if (expect_ok(sw_cross_entropy_backward(x, p, SW_REDUCE_MEAN, g, &dx),
                  "soft backward")) {
        ok(fabs(at(dx, 1) - 1.0 / 3) < 1e-6, "soft gradient");
        sw_tensor_unref(dx);
    }
    sw_tensor_unref(loss);

    /* Rejections. */
    static const float bad[] = {3, 0.5f};
    sw_tensor *b = make(bad, 2, 1, te, ts, 0);
    sw_status st = sw_cross_entropy(x, b, SW_REDUCE_MEAN, &loss);
    expect_fail(st, SW_EINDEX, "cross_entropy target 3 is outside [0, 3)",
                "an index past the classes");
    put(b, 0, 0);
    st = sw_cross_entropy(x, b, SW_REDUCE_MEAN, &loss);
    expect_fail(st, SW_EVALUE, "cross_entropy target 0.5 is not a class index",
                "a fractional index");
    st = sw_cross_entropy(x, g, SW_REDUCE_MEAN, &loss);
    expect_fail(st, SW_EVALUE,
                "cross_entropy target must hold one class index per row or "
                "match the logits' shape",
                "a target of another size");
    st = sw_cross_entropy(x, t, (sw_reduction)7, &loss);
    expect_fail(st, SW_EVALUE, "unknown cross_entropy reduction 7",
                "an unknown reduction");
    st = sw_cross_entropy(t, t, SW_REDUCE_MEAN, &loss);
    expect_fail(st, SW_EVALUE,
                "cross_entropy logits must have two modes (rows and classes)",
                "one-mode logits");
    st = sw_cross_entropy_backward(x, t, SW_REDUCE_MEAN, x, &dx);
    expect_fail(
        st, SW_ETYPE,
        "cross_entropy gradient must be a one-element CPU Float32 tensor",
        "a gradient of many elements");
    sw_layout *h = NULL;
    sw_tensor *ht = NULL;
    if (sw_layout_parse("(2,(1,3)):(3,(1,1))", &h) == SW_OK &&
        sw_tensor_new(sw_tensor_carrier(x), 0, h, &ht) == SW_OK) {
        st = sw_softmax(ht, 0, &loss);
        expect_fail(st, SW_EVALUE,
                    "softmax needs a tensor of one or two flat modes",
                    "a hierarchical mode");
    } else {
        sw_clear_error();
    }
    sw_tensor_unref(ht);
    sw_layout_unref(h);
    sw_carrier *gc = NULL;
    sw_tensor *gt = NULL;
    if (sw_cpu_new(2, SW_DTYPE_INT32, 1, 0, &gc) == SW_OK &&
        sw_tensor_new(gc, 0, sw_tensor_layout(t), &gt) == SW_OK) {
        st = sw_softmax(gt, 0, &loss);
        expect_fail(st, SW_ETYPE, "softmax input must be a CPU Float32 tensor",
                    "an Int32 input");
        st = sw_cross_entropy(x, gt, SW_REDUCE_MEAN, &loss);
        if (expect_ok(st, "Int32 class indices")) {
            ok(fabs(at(loss, 0) -
                    (log(exp(1) + exp(2) + exp(3)) - 1 + l1) / 2) < 1e-6,
               "Int32 indices read as classes");
            sw_tensor_unref(loss);
        }
    } else {
        sw_clear_error();
    }
    sw_tensor_unref(gt);
    sw_carrier_unref(gc);
    if (sw_carrier_release_storage(sw_tensor_carrier(x)))
        sw_clear_error();
    st = sw_softmax(x, 0, &loss);
    expect_fail(st, SW_ERUNTIME, NULL, "a released carrier");
    sw_tensor_unref(b);
    sw_tensor_unref(p);
    sw_tensor_unref(g);
    sw_tensor_unref(t);
    sw_tensor_unref(x);
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_values();
    test_backward();
    test_cross_entropy();
    leak_check(base, "softmax");
    return done_testing();
}
