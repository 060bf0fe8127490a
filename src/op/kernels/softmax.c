/*
 * Softmax, log-softmax and cross-entropy over rows of CPU Float32 tensors
 * (softmax.h). Each row is one pass for its maximum and one for the sum of
 * exp(x - max), in double; the results round once to float. No per-element
 * allocation: the operands are read through their strides and the result
 * is one fresh carrier.
 */
#include <math.h>
#include <string.h>

#include "strideweave/softmax.h"

#include "carrier/internal.h"
#include "layout/internal.h"
#include "tensor/internal.h"

/* A row tensor's geometry: rows x cols, element (i, j) at
 * base + i * rs + j * cs. */
typedef struct rows_view {
    int64_t rows, cols, rs, cs;
} rows_view;

static sw_status rows_of(const sw_tensor *t, const char *what, rows_view *v) {
    if (!t)
        return sw_fail(SW_ETYPE, "%s must be a tensor", what);
    if (!sw_carrier_is_cpu(t->carrier) ||
        sw_carrier_dtype(t->carrier) != SW_DTYPE_FLOAT32)
        return sw_fail(SW_ETYPE, "%s must be a CPU Float32 tensor", what);
    const sw_layout *l = t->layout;
    int32_t rank = sw_layout_rank(l);
    if (rank < 1 || rank > 2 || sw_layout_nleaf(l) != rank)
        return sw_fail(SW_EVALUE,
                       "softmax needs a tensor of one or two flat modes");
    const int64_t *e = sw_layout_leaf_extents(l),
                  *s = sw_layout_leaf_strides(l);
    if (rank == 1)
        *v = (rows_view){1, e[0], 0, s[0]};
    else
        *v = (rows_view){e[0], e[1], s[0], s[1]};
    return SW_OK;
}

/* A fresh zeroed CPU Float32 carrier and a tensor over it. */
static sw_status new_result(sw_layout *layout, sw_tensor **out) {
    sw_carrier *c = NULL;
    sw_status st =
        sw_cpu_new(sw_layout_cosize(layout), SW_DTYPE_FLOAT32, 1, 0, &c);
    if (st == SW_OK)
        st = sw_tensor_new(c, 0, layout, out);
    sw_carrier_unref(c);
    return st;
}

/* The compact row-major layout of a row view's shape (rank 1 or 2). */
static sw_status row_major(const sw_layout *like, sw_layout **out) {
    int32_t rank = sw_layout_rank(like);
    const int64_t *e = sw_layout_leaf_extents(like);
    int32_t tok[2] = {SW_TOK_LEAF, SW_TOK_LEAF};
    int64_t ext[2] = {e[0], rank == 2 ? e[1] : 1};
    int64_t str[2] = {rank == 2 ? e[1] : 1, 1};
    return sw_layout_from_recipe(rank, tok, ext, str, out);
}

/* Pins up to three carriers (NULLs skipped); on failure none stays pinned. */
static sw_status pin_all(sw_carrier *const *c, int n) {
    for (int k = 0; k < n; ++k) {
        if (!c[k])
            continue;
        if (sw_carrier_is_released(c[k])) {
            for (int j = 0; j < k; ++j)
                if (c[j])
                    sw_carrier_unpin(c[j]);
            return sw_carrier_fail_released();
        }
        sw_status st = sw_carrier_pin(c[k]);
        if (st) {
            for (int j = 0; j < k; ++j)
                if (c[j])
                    sw_carrier_unpin(c[j]);
            return st;
        }
    }
    return SW_OK;
}

static void unpin_all(sw_carrier *const *c, int n) {
    for (int k = 0; k < n; ++k)
        if (c[k])
            sw_carrier_unpin(c[k]);
}

/* max and log(sum(exp(x - max))) of one row. */
static void row_stats(const float *x, int64_t n, int64_t cs, double *max_out,
                      double *lse_out) {
    double m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
        double v = (double)x[j * cs];
        if (v > m || isnan(v))
            m = v;
        if (isnan(v))
            break;
    }
    double sum = 0.0;
    if (isfinite(m))
        for (int64_t j = 0; j < n; ++j)
            sum += exp((double)x[j * cs] - m);
    *max_out = m;
    *lse_out = isfinite(m) ? log(sum) : NAN;
}

/* ----------------------------------------------------------------- softmax */

sw_status sw_softmax(const sw_tensor *x, int log_, sw_tensor **out) {
    rows_view v;
    sw_status st = rows_of(x, "softmax input", &v);
    if (st)
        return st;
    int injective = 0;
    if ((st = sw_layout_is_injective(x->layout, &injective)))
        return st;
    sw_layout *layout = NULL;
    if (injective)
        layout = sw_layout_retain(x->layout);
    else if ((st = row_major(x->layout, &layout)))
        return st;
    rows_view o = v;
    if (!injective) {
        o.rs = sw_layout_rank(x->layout) == 2 ? v.cols : 0;
        o.cs = 1;
    }
    sw_tensor *r = NULL;
    st = new_result(layout, &r);
    sw_layout_unref(layout);
    if (st)
        return st;
    sw_carrier *pins[1] = {x->carrier};
    if ((st = pin_all(pins, 1))) {
        sw_tensor_unref(r);
        return st;
    }
    const float *xs = (const float *)sw_cpu_storage(x->carrier) + x->offset;
    float *ys = sw_cpu_data(r->carrier);
    for (int64_t i = 0; i < v.rows; ++i) {
        const float *xi = xs + i * v.rs;
        float *yi = ys + i * o.rs;
        double m, lse;
        row_stats(xi, v.cols, v.cs, &m, &lse);
        for (int64_t j = 0; j < v.cols; ++j) {
            double z = (double)xi[j * v.cs] - m - lse;
            yi[j * o.cs] = (float)(log_ ? z : exp(z));
        }
    }
    unpin_all(pins, 1);
    *out = r;
    return SW_OK;
}

/* Checks that g is a row tensor of x's shape. */
static sw_status same_rows(const rows_view *a, const rows_view *b,
                           const char *msg) {
    if (a->rows != b->rows || a->cols != b->cols)
        return sw_fail(SW_EVALUE, "%s", msg);
    return SW_OK;
}

sw_status sw_softmax_backward(const sw_tensor *x, const sw_tensor *g, int log_,
                              sw_tensor **out) {
    rows_view v, gv;
    sw_status st = rows_of(x, "softmax input", &v);
    if (st == SW_OK)
        st = rows_of(g, "softmax gradient", &gv);
    if (st == SW_OK && sw_layout_rank(x->layout) != sw_layout_rank(g->layout))
        st = sw_fail(SW_EVALUE, "softmax gradient must have the input's shape");
    if (st == SW_OK)
        st = same_rows(&v, &gv, "softmax gradient must have the input's shape");
    if (st)
        return st;
    sw_tensor *r = NULL;
    if ((st = new_result(x->layout, &r)))
        return st;
    sw_carrier *pins[2] = {x->carrier, g->carrier};
    if ((st = pin_all(pins, 2))) {
        sw_tensor_unref(r);
        return st;
    }
    const float *xs = (const float *)sw_cpu_storage(x->carrier) + x->offset;
    const float *gs = (const float *)sw_cpu_storage(g->carrier) + g->offset;
    float *ds = sw_cpu_data(r->carrier);
    for (int64_t i = 0; i < v.rows; ++i) {
        const float *xi = xs + i * v.rs, *gi = gs + i * gv.rs;
        float *di = ds + i * v.rs;
        double m, lse, dot = 0.0;
        row_stats(xi, v.cols, v.cs, &m, &lse);
        /* log_softmax: dx = g - p * sum(g); softmax: dx = p * (g - sum(g p)).
         */
        for (int64_t j = 0; j < v.cols; ++j) {
            double gj = (double)gi[j * gv.cs];
            dot += log_ ? gj : gj * exp((double)xi[j * v.cs] - m - lse);
        }
        for (int64_t j = 0; j < v.cols; ++j) {
            double p = exp((double)xi[j * v.cs] - m - lse);
            double gj = (double)gi[j * gv.cs];
            double d = log_ ? gj - p * dot : p * (gj - dot);
            di[j * v.cs] = (float)((double)di[j * v.cs] + d);
        }
    }
    unpin_all(pins, 2);
    *out = r;
    return SW_OK;
}

/* ------------------------------------------------------------ cross-entropy */

typedef struct ce_args {
    rows_view x, t;  /* logits; the probabilities when !indices */
    int indices;     /* target holds class indices */
    int64_t t_count; /* N, for indices */
} ce_args;

static sw_status ce_check(const sw_tensor *logits, const sw_tensor *target,
                          sw_reduction reduction, ce_args *a) {
    sw_status st = rows_of(logits, "cross_entropy logits", &a->x);
    if (st)
        return st;
    if (sw_layout_rank(logits->layout) != 2)
        return sw_fail(SW_EVALUE, "cross_entropy logits must have two modes "
                                  "(rows and classes)");
    if (reduction != SW_REDUCE_MEAN && reduction != SW_REDUCE_SUM)
        return sw_fail(SW_EVALUE, "unknown cross_entropy reduction %d",
                       (int)reduction);
    if (!target)
        return sw_fail(SW_ETYPE, "cross_entropy target must be a tensor");
    if (!sw_carrier_is_cpu(target->carrier) ||
        (sw_carrier_dtype(target->carrier) != SW_DTYPE_FLOAT32 &&
         sw_carrier_dtype(target->carrier) != SW_DTYPE_INT32))
        return sw_fail(SW_ETYPE, "cross_entropy target must be a CPU Float32 "
                                 "or Int32 tensor");
    int64_t n = sw_layout_size(target->layout);
    a->indices = n == a->x.rows;
    a->t_count = n;
    if (!a->indices) {
        int same = sw_tree_equal(target->layout->shape, logits->layout->shape);
        if (!same || sw_carrier_dtype(target->carrier) != SW_DTYPE_FLOAT32)
            return sw_fail(SW_EVALUE,
                           "cross_entropy target must hold one class index "
                           "per row or match the logits' shape");
        return rows_of(target, "cross_entropy target", &a->t);
    }
    return SW_OK;
}

/* Class index of row i of an index target; SW_EVALUE/SW_EINDEX if bad. */
static sw_status ce_index(const sw_tensor *target, const void *base, int64_t i,
                          int64_t classes, int64_t *out) {
    int64_t at = 0;
    sw_status st = sw_layout_index(target->layout, i, &at);
    if (st)
        return st;
    at += target->offset;
    double k;
    if (sw_carrier_dtype(target->carrier) == SW_DTYPE_INT32)
        k = (double)((const int32_t *)base)[at];
    else
        k = (double)((const float *)base)[at];
    if (!(k == floor(k)))
        return sw_fail(SW_EVALUE,
                       "cross_entropy target %g is not a class index", k);
    if (k < 0 || k >= (double)classes)
        return sw_fail(SW_EINDEX,
                       "cross_entropy target %.0f is outside [0, %lld)", k,
                       (long long)classes);
    *out = (int64_t)k;
    return SW_OK;
}

/* The row weights' sum of a probability target's row (1 for indices). */
static double ce_row_total(const ce_args *a, const float *ti) {
    double total = 0.0;
    for (int64_t j = 0; j < a->t.cols; ++j)
        total += (double)ti[j * a->t.cs];
    return total;
}

static sw_status ce_run(const sw_tensor *logits, const sw_tensor *target,
                        sw_reduction reduction, double scale, float *grad,
                        double *loss) {
    ce_args a;
    sw_status st = ce_check(logits, target, reduction, &a);
    if (st)
        return st;
    sw_carrier *pins[2] = {logits->carrier, target->carrier};
    if ((st = pin_all(pins, 2)))
        return st;
    const float *xs =
        (const float *)sw_cpu_storage(logits->carrier) + logits->offset;
    const void *tbase = sw_cpu_storage(target->carrier);
    const float *ts = a.indices ? NULL : (const float *)tbase + target->offset;
    double total = 0.0;
    double per_row = reduction == SW_REDUCE_MEAN && a.x.rows > 0
                         ? 1.0 / (double)a.x.rows
                         : 1.0;
    for (int64_t i = 0; st == SW_OK && i < a.x.rows; ++i) {
        const float *xi = xs + i * a.x.rs;
        double m, lse;
        row_stats(xi, a.x.cols, a.x.cs, &m, &lse);
        int64_t k = -1;
        const float *ti = ts ? ts + i * a.t.rs : NULL;
        if (a.indices && (st = ce_index(target, tbase, i, a.x.cols, &k)))
            break;
        if (grad == NULL) {
            if (a.indices) {
                total += m + lse - (double)xi[k * a.x.cs];
            } else {
                for (int64_t j = 0; j < a.x.cols; ++j)
                    total += (double)ti[j * a.t.cs] *
                             (m + lse - (double)xi[j * a.x.cs]);
            }
            continue;
        }
        double weight = a.indices ? 1.0 : ce_row_total(&a, ti);
        float *gi = grad + i * a.x.rs;
        for (int64_t j = 0; j < a.x.cols; ++j) {
            double p = exp((double)xi[j * a.x.cs] - m - lse);
            double tj =
                a.indices ? (j == k ? 1.0 : 0.0) : (double)ti[j * a.t.cs];
            double d = scale * per_row * (p * weight - tj);
            gi[j * a.x.cs] = (float)((double)gi[j * a.x.cs] + d);
        }
    }
    unpin_all(pins, 2);
    if (loss)
        *loss = total * per_row;
    return st;
}

static sw_status scalar_result(double value, sw_tensor **out) {
    sw_layout *one = NULL;
    sw_status st = sw_layout_leaf(1, 1, &one);
    sw_tensor *r = NULL;
    if (st == SW_OK)
        st = new_result(one, &r);
    sw_layout_unref(one);
    if (st)
        return st;
    ((float *)sw_cpu_data(r->carrier))[0] = (float)value;
    *out = r;
    return SW_OK;
}

sw_status sw_cross_entropy(const sw_tensor *logits, const sw_tensor *target,
                           sw_reduction reduction, sw_tensor **out) {
    double loss = 0.0;
    sw_status st = ce_run(logits, target, reduction, 1.0, NULL, &loss);
    return st ? st : scalar_result(loss, out);
}

sw_status sw_cross_entropy_backward(const sw_tensor *logits,
                                    const sw_tensor *target,
                                    sw_reduction reduction, const sw_tensor *g,
                                    sw_tensor **out) {
    ce_args a;
    sw_status st = ce_check(logits, target, reduction, &a);
    if (st)
        return st;
    if (!g || !sw_carrier_is_cpu(g->carrier) ||
        sw_carrier_dtype(g->carrier) != SW_DTYPE_FLOAT32 ||
        sw_layout_size(g->layout) != 1)
        return sw_fail(SW_ETYPE, "cross_entropy gradient must be a "
                                 "one-element CPU Float32 tensor");
    sw_value gv;
    if ((st = sw_tensor_get(g, 0, &gv)))
        return st;
    double scale = gv.kind == SW_VALUE_I64 ? (double)gv.as.i : gv.as.f;
    sw_value_clear(&gv);
    sw_tensor *r = NULL;
    if ((st = new_result(logits->layout, &r)))
        return st;
    st =
        ce_run(logits, target, reduction, scale, sw_cpu_data(r->carrier), NULL);
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}
