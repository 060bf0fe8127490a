/*
 * The Generic carrier's operations: the reference implementations, written
 * once over host values. Forward passes combine values through the store's
 * sw_host_ops (so a binding keeps its language's arithmetic); backward
 * passes compute in doubles, since gradients are always Floating.
 *
 * Memory: a result is built as one value per physical slot of its layout
 * (cosize values) and handed to new_like; Generic is the reference carrier,
 * not a fast one.
 */
#include <math.h>
#include <string.h>

#include "carrier/defined.h"
#include "carrier/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "strideweave/definition.h"
#include "strideweave/extension.h"
#include "strideweave/opencl.h"
#include "strideweave/tiled.h"
#include "tensor/internal.h"

/* --------------------------------------------------------------- numbers */

static double sigmoid(double x) {
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

double sw_vop_apply(sw_vop op, double a, double b) {
    switch (op) {
    case SW_VOP_ADD:
        return a + b;
    case SW_VOP_SUB:
        return a - b;
    case SW_VOP_MUL:
        return a * b;
    case SW_VOP_DIV:
        return a / b;
    case SW_VOP_POW:
        return pow(a, b);
    case SW_VOP_EXP:
        return exp(a);
    case SW_VOP_RELU:
        return a > 0 ? a : 0.0;
    case SW_VOP_SIGMOID:
        return sigmoid(a);
    case SW_VOP_TANH:
        return tanh(a);
    case SW_VOP_GELU:
        return 0.5 * a * (1.0 + erf(a / sqrt(2.0)));
    case SW_VOP_SILU:
        return a * sigmoid(a);
    case SW_VOP_SOFTPLUS:
        return log1p(exp(-fabs(a))) + (a > 0 ? a : 0.0);
    case SW_VOP_ELU:
        return a > 0 ? a : expm1(a);
    case SW_VOP_LEAKY_RELU:
        return a >= 0 ? a : 0.01 * a;
    }
    return NAN;
}

/* d op / d a (which == 0) or d op / d b (which == 1) at (a, b). */
static double vop_partial(sw_vop op, int which, double a, double b) {
    const double pi = 3.14159265358979323846;
    double s;
    switch (op) {
    case SW_VOP_ADD:
        return 1.0;
    case SW_VOP_SUB:
        return which ? -1.0 : 1.0;
    case SW_VOP_MUL:
        return which ? a : b;
    case SW_VOP_DIV:
        return which ? -a / (b * b) : 1.0 / b;
    case SW_VOP_POW:
        return b * pow(a, b - 1.0);
    case SW_VOP_EXP:
        return exp(a);
    case SW_VOP_RELU:
        return a > 0 ? 1.0 : 0.0;
    case SW_VOP_SIGMOID:
        s = sigmoid(a);
        return s * (1.0 - s);
    case SW_VOP_TANH:
        s = tanh(a);
        return 1.0 - s * s;
    case SW_VOP_GELU:
        return 0.5 * (1.0 + erf(a / sqrt(2.0))) +
               a * exp(-a * a / 2.0) / sqrt(2.0 * pi);
    case SW_VOP_SILU:
        s = sigmoid(a);
        return s + a * s * (1.0 - s);
    case SW_VOP_SOFTPLUS:
        return sigmoid(a);
    case SW_VOP_ELU:
        return a > 0 ? 1.0 : exp(a);
    case SW_VOP_LEAKY_RELU:
        return a >= 0 ? 1.0 : 0.01;
    }
    return NAN;
}

/* A value as a double: numbers directly, host values through the store. */
static sw_status number_of(const sw_value *v, double *out) {
    sw_value n;
    switch (v->kind) {
    case SW_VALUE_F64:
        *out = v->as.f;
        return SW_OK;
    case SW_VALUE_I64:
        *out = (double)v->as.i;
        return SW_OK;
    case SW_VALUE_HOST:
        if (!v->ops || !v->ops->to_number)
            break;
        {
            sw_status st = v->ops->to_number(v, &n);
            if (st)
                return st;
        }
        return number_of(&n, out);
    default:
        break;
    }
    return sw_fail(SW_ETYPE, "value is not a number");
}

/* op on values, through the host ops when the values are host values. */
static sw_status apply_values(const sw_host_ops *ops, sw_vop op,
                              const sw_value *a, const sw_value *b,
                              sw_value *out) {
    if (ops && ops->apply)
        return ops->apply(op, a, b, out);
    double x, y = 0.0;
    sw_status st = number_of(a, &x);
    if (!st && b)
        st = number_of(b, &y);
    if (st)
        return st;
    *out = sw_value_f64(sw_vop_apply(op, x, y));
    return SW_OK;
}

/* ------------------------------------------------------------- the state */

typedef enum gen_kind {
    GEN_BINARY, /* lhs, rhs */
    GEN_SCALAR, /* tensor, scalar: mul and pow */
    GEN_UNARY,  /* tensor */
    GEN_REDUCE, /* tensor with two modes */
    GEN_MATMUL, /* lhs, rhs with two modes each */
    GEN_BMATMUL /* lhs, rhs with three modes each (the third is the batch) */
} gen_kind;

typedef struct gen_state {
    gen_kind kind;
    sw_vop vop;
    const char *name; /* the canonical operation name (static) */
    int32_t id;       /* its sw_op_id (definition-backed kernels) */
    sw_arg scalar; /* GEN_SCALAR: borrowed host objects stay with the caller */
} gen_state;

static gen_state *gstate(sw_op *op) {
    return sw_op_state(op);
}

static const sw_host_ops *host_ops_of(sw_carrier *c) {
    return sw_generic_ops(c);
}

/* Checks a tensor argument by the name the messages use. */
static sw_status check_tensor(const sw_arg *a, const char *name) {
    if (a->kind != SW_ARG_TENSOR)
        return sw_fail(SW_ETYPE, "%s must be a Tensor", name);
    if (sw_carrier_is_released(a->as.tensor->carrier))
        return sw_fail(SW_ERUNTIME, "%s carrier is released", name);
    return SW_OK;
}

static sw_value scalar_value(const sw_arg *a) {
    sw_value v;
    memset(&v, 0, sizeof v);
    if (a->kind == SW_ARG_F64)
        v = sw_value_f64(a->as.f);
    else if (a->kind == SW_ARG_I64 || a->kind == SW_ARG_BOOL)
        v = sw_value_i64(a->as.i);
    return v;
}

/* Makes a tensor of `layout` whose slot layout(i) holds vals[i] (owned,
 * cleared here), on a fresh carrier like c. */
static sw_status tensor_of_values(sw_carrier *c, sw_layout *layout,
                                  sw_value *slots, sw_dtype dtype,
                                  sw_tensor **out) {
    sw_carrier *r = NULL;
    int64_t n = layout->cosize;
    sw_status st = sw_carrier_new_like(c, n, slots, 1, dtype, &r);
    for (int64_t i = 0; i < n; ++i)
        sw_value_clear(&slots[i]);
    if (!st)
        st = sw_tensor_new(r, 0, layout, out);
    sw_carrier_unref(r);
    return st;
}

/* Puts v into slot p, releasing what a broadcast layout put there before. */
static void put_slot(sw_value *slots, int64_t p, sw_value v) {
    sw_value_clear(&slots[p]);
    slots[p] = v;
}

static sw_dtype join_dtype(sw_dtype a, sw_dtype b) {
    return a == SW_DTYPE_FLOATING || b == SW_DTYPE_FLOATING ? SW_DTYPE_FLOATING
                                                            : SW_DTYPE_ANY;
}

/*
 * The distinct physical positions of a layout's elements, walked once
 * each by an odometer over its leaves without those of stride 0: the
 * coordinates that differ only along such a leaf land on one position.
 * Every operand of an elementwise operation has the same layout (offsets
 * apart) and the result does too, so those coordinates read the same
 * values and write the same slot: one visit gives the same result, and a
 * broadcast of 2**62 elements over one value costs one. Leaves of extent
 * 1 are dropped as well.
 */
typedef struct distinct_walk {
    int32_t n;
    int64_t *ext, *str, *ctr;
    int64_t total; /* the positions to visit */
} distinct_walk;

static sw_status walk_init(const sw_layout *l, distinct_walk *w) {
    int32_t nleaf = sw_layout_nleaf(l);
    const int64_t *ext = sw_layout_leaf_extents(l);
    const int64_t *str = sw_layout_leaf_strides(l);
    w->ext = sw_calloc((size_t)nleaf * 3 + 1, sizeof *w->ext);
    if (!w->ext)
        return sw_oom();
    w->str = w->ext + nleaf;
    w->ctr = w->str + nleaf;
    w->n = 0;
    w->total = l->size == 0 ? 0 : 1;
    for (int32_t j = 0; j < nleaf; ++j) {
        if (ext[j] <= 1 || str[j] == 0)
            continue;
        w->ext[w->n] = ext[j];
        w->str[w->n] = str[j];
        w->n++;
        w->total *= ext[j]; /* at most the layout's size, which fits */
    }
    return SW_OK;
}

/* The position after p (the walk's state advances). */
static int64_t walk_next(distinct_walk *w, int64_t p) {
    for (int32_t j = 0; j < w->n; ++j) {
        if (++w->ctr[j] < w->ext[j])
            return p + w->str[j];
        p -= (w->ext[j] - 1) * w->str[j];
        w->ctr[j] = 0;
    }
    return p;
}

static void walk_free(distinct_walk *w) {
    sw_free(w->ext);
}

/* ------------------------------------------------------------- forward */

/*
 * A binary operation on layouts that differ: the distinct walk above
 * assumes one layout, so this one visits every logical index and maps it
 * through each operand's layout and the result's (sw_elementwise_layout).
 */
static sw_status mixed_forward(gen_state *s, sw_tensor *x, sw_tensor *y,
                               sw_tensor **out) {
    sw_layout *rl = NULL;
    sw_status st = sw_elementwise_layout(x->layout, y->layout, &rl);
    if (st)
        return st;
    sw_dtype dt = s->vop == SW_VOP_DIV
                      ? SW_DTYPE_FLOATING
                      : join_dtype(sw_tensor_dtype(x), sw_tensor_dtype(y));
    const sw_host_ops *ops = host_ops_of(x->carrier);
    int64_t n = rl->cosize, size = rl->size;
    sw_value *slots = sw_calloc((size_t)n + 1, sizeof *slots);
    if (!slots) {
        sw_layout_unref(rl);
        return sw_oom();
    }
    for (int64_t i = 0; i < size && !st; ++i) {
        int64_t px = 0, py = 0, pr = 0;
        sw_value a, c, r;
        st = sw_layout_index(x->layout, i, &px);
        if (!st)
            st = sw_layout_index(y->layout, i, &py);
        if (!st)
            st = sw_layout_index(rl, i, &pr);
        if (!st)
            st = sw_carrier_get(x->carrier, x->offset + px, &a);
        if (st)
            break;
        st = sw_carrier_get(y->carrier, y->offset + py, &c);
        if (!st) {
            st = apply_values(ops, s->vop, &a, &c, &r);
            sw_value_clear(&c);
        }
        sw_value_clear(&a);
        if (!st)
            put_slot(slots, pr, r);
    }
    if (st) {
        for (int64_t i = 0; i < n; ++i)
            sw_value_clear(&slots[i]);
    } else {
        st = tensor_of_values(x->carrier, rl, slots, dt, out);
    }
    sw_free(slots);
    sw_layout_unref(rl);
    return st;
}

static sw_status elementwise_forward(sw_op *op, int32_t nargs,
                                     const sw_arg *args, sw_tensor **out) {
    gen_state *s = gstate(op);
    int binary = s->kind == GEN_BINARY;
    sw_status st = check_tensor(&args[0], binary ? "lhs" : "tensor");
    if (st)
        return st;
    sw_tensor *x = args[0].as.tensor, *y = NULL;
    if (binary) {
        if (nargs < 2 || (st = check_tensor(&args[1], "rhs")))
            return st ? st : sw_fail(SW_ETYPE, "rhs must be a Tensor");
        y = args[1].as.tensor;
        if (!sw_layout_equal(x->layout, y->layout))
            return mixed_forward(s, x, y, out);
    }
    sw_value b = {0};
    sw_dtype dt = sw_tensor_dtype(x);
    if (s->kind == GEN_SCALAR) {
        if (nargs < 2 ||
            (args[1].kind != SW_ARG_F64 && args[1].kind != SW_ARG_I64 &&
             args[1].kind != SW_ARG_BOOL))
            return sw_fail(SW_ETYPE, "%s must be a numerical scalar",
                           s->vop == SW_VOP_POW ? "exponent" : "scalar");
        s->scalar = args[1];
        b = scalar_value(&args[1]);
        int integral = args[1].kind == SW_ARG_I64;
        if (s->vop == SW_VOP_MUL)
            dt = dt == SW_DTYPE_FLOATING || !integral ? SW_DTYPE_FLOATING
                                                      : SW_DTYPE_ANY;
        else
            dt = dt == SW_DTYPE_ANY && integral && args[1].as.i >= 0
                     ? SW_DTYPE_ANY
                     : SW_DTYPE_FLOATING;
    } else if (binary) {
        dt = s->vop == SW_VOP_DIV ? SW_DTYPE_FLOATING
                                  : join_dtype(dt, sw_tensor_dtype(y));
    } else if (s->vop != SW_VOP_RELU) {
        dt = SW_DTYPE_FLOATING;
    }
    const sw_host_ops *ops = host_ops_of(x->carrier);
    int64_t n = x->layout->cosize;
    distinct_walk w = {0, NULL, NULL, NULL, 0};
    if ((st = walk_init(x->layout, &w)))
        return st;
    sw_value *slots = sw_calloc((size_t)n + 1, sizeof *slots);
    if (!slots) {
        walk_free(&w);
        return sw_oom();
    }
    int64_t p = 0;
    for (int64_t k = 0; k < w.total && !st; ++k, p = walk_next(&w, p)) {
        sw_value a, c, r;
        st = sw_carrier_get(x->carrier, x->offset + p, &a);
        if (st)
            break;
        if (binary)
            st = sw_carrier_get(y->carrier, y->offset + p, &c);
        else
            c = b;
        if (!st)
            st = apply_values(ops, s->vop, &a, s->kind == GEN_UNARY ? NULL : &c,
                              &r);
        sw_value_clear(&a);
        if (binary)
            sw_value_clear(&c);
        if (!st)
            put_slot(slots, p, r);
    }
    walk_free(&w);
    if (st) {
        for (int64_t i = 0; i < n; ++i)
            sw_value_clear(&slots[i]);
        sw_free(slots);
        return st;
    }
    st = tensor_of_values(x->carrier, x->layout, slots, dt, out);
    sw_free(slots);
    return st;
}

static sw_status check_two_modes(const sw_tensor *t, const char *name) {
    if (t->layout->rank != 2)
        return sw_fail(SW_EVALUE, "%s must have a two-mode layout", name);
    return SW_OK;
}

/* Sums values through the host ops, starting from the integer 0 as a
 * language's sum() would. */
static sw_status sum_into(const sw_host_ops *ops, sw_value *acc,
                          sw_value *term) {
    sw_value r;
    sw_status st = apply_values(ops, SW_VOP_ADD, acc, term, &r);
    sw_value_clear(term);
    if (st)
        return st;
    sw_value_clear(acc);
    *acc = r;
    return SW_OK;
}

/* The result layout of a reduce: mode 0 (one nesting level flattened),
 * compact. */
static sw_status reduce_layout(const sw_tensor *x, sw_layout **out) {
    sw_status st = check_two_modes(x, "tensor");
    if (st)
        return st;
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, sw_lview_child(sw_lview_of(x->layout), 0));
    return sw_lb_finish_compact(&b, out);
}

static sw_status reduce_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    sw_status st = check_tensor(&args[0], "tensor");
    if (st)
        return st;
    sw_tensor *x = args[0].as.tensor;
    sw_layout *ol = NULL;
    if ((st = reduce_layout(x, &ol)))
        return st;
    const sw_host_ops *ops = host_ops_of(x->carrier);
    int64_t m = x->layout->mode_size[0], k = x->layout->mode_size[1];
    sw_value *slots = sw_calloc((size_t)ol->cosize + 1, sizeof *slots);
    if (!slots) {
        sw_layout_unref(ol);
        return sw_oom();
    }
    for (int64_t i = 0; i < m && !st; ++i) {
        sw_value acc = sw_value_i64(0), term;
        for (int64_t j = 0; j < k && !st; ++j) {
            st = sw_tensor_get(x, i + m * j, &term);
            if (!st)
                st = sum_into(ops, &acc, &term);
        }
        int64_t p;
        sw_layout_index(ol, i, &p);
        put_slot(slots, p, acc);
    }
    if (!st)
        st = tensor_of_values(x->carrier, ol, slots, sw_tensor_dtype(x), out);
    else
        for (int64_t i = 0; i < ol->cosize; ++i)
            sw_value_clear(&slots[i]);
    sw_free(slots);
    sw_layout_unref(ol);
    return st;
}

/* Checks the operands of matmul (two modes) or batched_matmul (three,
 * the last the batch) and gives M, N, K and the batch count. */
static sw_status matmul_operands(const sw_tensor *a, const sw_tensor *b,
                                 int batched, int64_t dims[4]) {
    int32_t want = batched ? 3 : 2;
    if (a->layout->rank != want || b->layout->rank != want) {
        const char *name = a->layout->rank != want ? "lhs" : "rhs";
        if (!batched)
            return check_two_modes(a->layout->rank != 2 ? a : b, name);
        return sw_fail(SW_EVALUE, "%s must have a three-mode layout", name);
    }
    if (a->layout->mode_size[1] != b->layout->mode_size[1])
        return sw_fail(SW_EVALUE, "Matmul inner dimensions must match");
    if (batched && a->layout->mode_size[2] != b->layout->mode_size[2])
        return sw_fail(SW_EVALUE, "Matmul batch dimensions must match");
    dims[0] = a->layout->mode_size[0];
    dims[1] = b->layout->mode_size[0];
    dims[2] = a->layout->mode_size[1];
    dims[3] = batched ? a->layout->mode_size[2] : 1;
    return SW_OK;
}

/* The compact result layout: (lhs mode 0, rhs mode 0[, lhs mode 2]). */
static sw_status matmul_layout(const sw_tensor *a, const sw_tensor *b,
                               int batched, sw_layout **out) {
    sw_lb lb;
    sw_lb_init(&lb);
    sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(a->layout), 0));
    sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(b->layout), 0));
    if (batched)
        sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(a->layout), 2));
    return sw_lb_finish_compact_as(
        &lb, batched ? "batched matmul result" : "matmul result", out);
}

static sw_status matmul_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    int batched = gstate(op)->kind == GEN_BMATMUL;
    sw_status st = check_tensor(&args[0], "lhs");
    if (!st)
        st = nargs < 2 ? sw_fail(SW_ETYPE, "rhs must be a Tensor")
                       : check_tensor(&args[1], "rhs");
    if (st)
        return st;
    sw_tensor *a = args[0].as.tensor, *b = args[1].as.tensor;
    int64_t dims[4] = {0, 0, 0, 0};
    if ((st = matmul_operands(a, b, batched, dims)))
        return st;
    sw_layout *ol = NULL;
    if ((st = matmul_layout(a, b, batched, &ol)))
        return st;
    const sw_host_ops *ops = host_ops_of(a->carrier);
    int64_t m = dims[0], n = dims[1], k = dims[2], nb = dims[3];
    sw_value *slots = sw_calloc((size_t)ol->cosize + 1, sizeof *slots);
    if (!slots) {
        sw_layout_unref(ol);
        return sw_oom();
    }
    for (int64_t bi = 0; bi < nb && !st; ++bi) {
        int64_t ao = bi * m * k, bo = bi * n * k, co = bi * m * n;
        for (int64_t j = 0; j < n && !st; ++j) {
            for (int64_t i = 0; i < m && !st; ++i) {
                sw_value acc = sw_value_i64(0);
                for (int64_t q = 0; q < k && !st; ++q) {
                    sw_value x, y, prod;
                    st = sw_tensor_get(a, ao + i + m * q, &x);
                    if (st)
                        break;
                    st = sw_tensor_get(b, bo + j + n * q, &y);
                    if (!st)
                        st = apply_values(ops, SW_VOP_MUL, &x, &y, &prod);
                    sw_value_clear(&x);
                    sw_value_clear(&y);
                    if (!st)
                        st = sum_into(ops, &acc, &prod);
                }
                int64_t p;
                sw_layout_index(ol, co + i + m * j, &p);
                put_slot(slots, p, acc);
            }
        }
    }
    if (!st)
        st = tensor_of_values(
            a->carrier, ol, slots,
            join_dtype(sw_tensor_dtype(a), sw_tensor_dtype(b)), out);
    else
        for (int64_t i = 0; i < ol->cosize; ++i)
            sw_value_clear(&slots[i]);
    sw_free(slots);
    sw_layout_unref(ol);
    return st;
}

static sw_status gen_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                             sw_tensor **out) {
    if (nargs < 1)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    switch (gstate(op)->kind) {
    case GEN_REDUCE:
        return reduce_forward(op, nargs, args, out);
    case GEN_MATMUL:
    case GEN_BMATMUL:
        return matmul_forward(op, nargs, args, out);
    default:
        return elementwise_forward(op, nargs, args, out);
    }
}

/* ------------------------------------------------------------ backward */

/* Reads logical element i of t as a double. */
static sw_status get_number(const sw_tensor *t, int64_t i, double *out) {
    sw_value v;
    sw_status st = sw_tensor_get(t, i, &v);
    if (st)
        return st;
    st = number_of(&v, out);
    sw_value_clear(&v);
    return st;
}

/* A fresh gradient tensor for input `like` from per-logical doubles. */
static sw_status grad_of(const sw_tensor *like, const double *vals,
                         sw_tensor **out) {
    int64_t n = like->layout->cosize, size = like->layout->size;
    sw_value *slots = sw_calloc((size_t)n + 1, sizeof *slots);
    if (!slots)
        return sw_oom();
    for (int64_t i = 0; i < size; ++i) {
        int64_t p;
        sw_layout_index(like->layout, i, &p);
        slots[p] = sw_value_f64(vals[i]);
    }
    /* Floating on Generic; a definition-backed carrier's gradients keep
     * the operand's Float32. */
    sw_dtype dt = sw_tensor_dtype(like) == SW_DTYPE_FLOAT32 ? SW_DTYPE_FLOAT32
                                                            : SW_DTYPE_FLOATING;
    sw_status st =
        tensor_of_values(like->carrier, like->layout, slots, dt, out);
    sw_free(slots);
    return st;
}

static sw_status elementwise_backward(sw_op *op, sw_tensor *g, int32_t n,
                                      sw_tensor **grads) {
    gen_state *s = gstate(op);
    sw_tensor *x = sw_op_input(op, 0);
    sw_tensor *y = s->kind == GEN_BINARY ? sw_op_input(op, 1) : NULL;
    int64_t size = x->layout->size;
    double *gx = sw_calloc((size_t)size + 1, sizeof *gx);
    double *gy = y ? sw_calloc((size_t)size + 1, sizeof *gy) : NULL;
    sw_status st = (!gx || (y && !gy)) ? sw_oom() : SW_OK;
    double b = 0.0;
    if (!st && s->kind == GEN_SCALAR) {
        sw_value sv = scalar_value(&s->scalar);
        st = number_of(&sv, &b);
    }
    for (int64_t i = 0; i < size && !st; ++i) {
        double gi, xi, yi = b;
        st = get_number(g, i, &gi);
        if (!st)
            st = get_number(x, i, &xi);
        if (!st && y)
            st = get_number(y, i, &yi);
        if (st)
            break;
        gx[i] = gi * vop_partial(s->vop, 0, xi, yi);
        if (y)
            gy[i] = gi * vop_partial(s->vop, 1, xi, yi);
    }
    if (!st)
        st = grad_of(x, gx, &grads[0]);
    if (!st && y && n > 1)
        st = grad_of(y, gy, &grads[1]);
    sw_free(gx);
    sw_free(gy);
    return st;
}

static sw_status reduce_backward(sw_op *op, sw_tensor *g, int32_t n,
                                 sw_tensor **grads) {
    sw_tensor *x = sw_op_input(op, 0);
    int64_t m = x->layout->mode_size[0], size = x->layout->size;
    double *gx = sw_calloc((size_t)size + 1, sizeof *gx);
    if (!gx)
        return sw_oom();
    sw_status st = SW_OK;
    for (int64_t i = 0; i < m && !st; ++i) {
        double gi;
        st = get_number(g, i, &gi);
        for (int64_t j = 0; j < size / m && !st; ++j)
            gx[i + m * j] = gi;
    }
    if (!st)
        st = grad_of(x, gx, &grads[0]);
    sw_free(gx);
    return st;
}

static sw_status matmul_backward(sw_op *op, sw_tensor *g, int32_t n,
                                 sw_tensor **grads) {
    sw_tensor *a = sw_op_input(op, 0), *b = sw_op_input(op, 1);
    int batched = gstate(op)->kind == GEN_BMATMUL;
    int64_t m = a->layout->mode_size[0], nn = b->layout->mode_size[0];
    int64_t k = a->layout->mode_size[1];
    int64_t nb = batched ? a->layout->mode_size[2] : 1;
    double *ga = sw_calloc((size_t)(m * k * nb + 1), sizeof *ga);
    double *gb = sw_calloc((size_t)(nn * k * nb + 1), sizeof *gb);
    sw_status st = (!ga || !gb) ? sw_oom() : SW_OK;
    for (int64_t bi = 0; bi < nb && !st; ++bi) {
        int64_t ao = bi * m * k, bo = bi * nn * k, go = bi * m * nn;
        for (int64_t j = 0; j < nn && !st; ++j)
            for (int64_t i = 0; i < m && !st; ++i) {
                double gij;
                st = get_number(g, go + i + m * j, &gij);
                for (int64_t q = 0; q < k && !st; ++q) {
                    double x, y;
                    st = get_number(a, ao + i + m * q, &x);
                    if (!st)
                        st = get_number(b, bo + j + nn * q, &y);
                    ga[ao + i + m * q] += gij * y;
                    gb[bo + j + nn * q] += gij * x;
                }
            }
    }
    if (!st)
        st = grad_of(a, ga, &grads[0]);
    if (!st && n > 1)
        st = grad_of(b, gb, &grads[1]);
    sw_free(ga);
    sw_free(gb);
    return st;
}

/*
 * The gradient must fit the result it stands for, as the CPU backward
 * kernels require; the checks and messages are theirs, in their order, so
 * that a wrong gradient (Tensor.backwards_traversal does not check its
 * layout) fails alike on both carriers instead of being read partly.
 */
static sw_status check_elementwise_gradient(const gen_state *s,
                                            const sw_tensor *x,
                                            const sw_tensor *g) {
    long long nx = (long long)x->layout->size, ng = (long long)g->layout->size;
    if (nx == ng)
        return SW_OK;
    if (s->kind == GEN_UNARY)
        return sw_fail(SW_EVALUE,
                       "%s: output has %lld elements but gradient "
                       "has %lld",
                       s->name, nx, ng);
    if (s->vop == SW_VOP_ADD || s->vop == SW_VOP_SUB)
        return sw_fail(SW_EVALUE,
                       "copy: dst has %lld elements but src has %lld", nx, ng);
    const char *kernel =
        s->kind == GEN_SCALAR
            ? (s->vop == SW_VOP_MUL ? "mul_scalar" : "pow_grad")
            : (s->vop == SW_VOP_MUL ? "mul" : "div");
    return sw_fail(SW_EVALUE,
                   "%s: output has %lld elements but input 0 has %lld", kernel,
                   nx, ng);
}

static sw_status check_reduce_gradient(const sw_tensor *x, const sw_tensor *g) {
    long long m = (long long)x->layout->mode_size[0];
    long long ng = (long long)g->layout->size;
    if (m == ng)
        return SW_OK;
    return sw_fail(SW_EVALUE,
                   "reduce backward: gradient has %lld elements but "
                   "mode 0 of output has %lld",
                   ng, m);
}

/* The CPU computes dA = G . B first: G is its operand "A", read as
 * (rows, columns[, batch]) from its own modes. */
static sw_status check_matmul_gradient(const sw_tensor *a, const sw_tensor *b,
                                       const sw_tensor *g) {
    int32_t rank = g->layout->rank, want = rank == 3 ? 3 : 2;
    if (rank != want)
        return sw_fail(SW_EVALUE,
                       "gemm: A has %d top-level modes; %d were described",
                       (int)rank, (int)want);
    const int64_t *gm = g->layout->mode_size;
    const char *what = NULL;
    long long x = 0, y = 0;
    if (a->layout->mode_size[0] != gm[0]) {
        what = "rows of C and A";
        x = (long long)a->layout->mode_size[0];
        y = (long long)gm[0];
    } else if (b->layout->mode_size[0] != gm[1]) {
        what = "columns of A and B";
        x = (long long)b->layout->mode_size[0];
        y = (long long)gm[1];
    } else {
        int64_t batch = a->layout->rank == 3 ? a->layout->mode_size[2] : 1;
        int64_t gbatch = rank == 3 ? gm[2] : 1;
        if (batch != gbatch) {
            what = "batch extents of C and A";
            x = (long long)gbatch;
            y = (long long)batch;
        }
    }
    if (!what)
        return SW_OK;
    return sw_fail(SW_EVALUE, "gemm: %s do not match (%lld and %lld)", what, x,
                   y);
}

static sw_status gen_backward(sw_op *op, sw_tensor *g, int32_t n,
                              sw_tensor **grads) {
    gen_state *s = gstate(op);
    int32_t want =
        s->kind == GEN_BINARY || s->kind == GEN_MATMUL || s->kind == GEN_BMATMUL
            ? 2
            : 1;
    if (sw_op_ninputs(op) < want || n < 1)
        return sw_fail(SW_ERUNTIME, "backward requires a recorded forward");
    if (!g)
        return sw_fail(SW_ETYPE, "gradient must be a Tensor");
    sw_tensor *x = sw_op_input(op, 0);
    sw_status st = SW_OK;
    /* Saved inputs whose values the gradient needs must still be there,
     * as the forward requires (a reduce needs only the layout). */
    if (s->kind != GEN_REDUCE) {
        sw_arg xa = sw_arg_tensor(x);
        st = check_tensor(&xa, want == 2 ? "lhs" : "tensor");
        if (!st && want == 2) {
            sw_arg ya = sw_arg_tensor(sw_op_input(op, 1));
            st = check_tensor(&ya, "rhs");
        }
        if (st)
            return st;
    }
    st = s->kind == GEN_REDUCE ? check_reduce_gradient(x, g)
         : s->kind == GEN_MATMUL || s->kind == GEN_BMATMUL
             ? check_matmul_gradient(x, sw_op_input(op, 1), g)
             : check_elementwise_gradient(s, x, g);
    if (st)
        return st;
    switch (s->kind) {
    case GEN_REDUCE:
        return reduce_backward(op, g, n, grads);
    case GEN_MATMUL:
    case GEN_BMATMUL:
        return matmul_backward(op, g, n, grads);
    default:
        return elementwise_backward(op, g, n, grads);
    }
}

static void gen_destroy(sw_op *op) {
    /* The state lives in the operation's block (sw_native_op_new). */
}

/* ------------------------------------------------------------ registry */

typedef struct gen_entry {
    sw_native_op native; /* first: the class and its registry entry */
    gen_kind kind;
} gen_entry;

#define GEN_OP(id, cls_name, k, summary)                                       \
    [id] = {{{SW_OP_CLASS_VERSION, cls_name, gen_forward, gen_backward,        \
              gen_destroy},                                                    \
             id,                                                               \
             "generic",                                                        \
             summary,                                                          \
             0},                                                               \
            k}

static const gen_entry gen_table[SW_OP_BUILTIN_COUNT] = {
    GEN_OP(SW_OP_ADD, "GenericAddOperation", GEN_BINARY,
           "Elementwise lhs + rhs with the host's +."),
    GEN_OP(SW_OP_SUB, "GenericSubOperation", GEN_BINARY,
           "Elementwise lhs - rhs with the host's -."),
    GEN_OP(SW_OP_ELEMENTWISE_MUL, "GenericElementwiseMulOperation", GEN_BINARY,
           "Elementwise lhs * rhs with the host's *."),
    GEN_OP(SW_OP_DIV, "GenericDivOperation", GEN_BINARY,
           "Elementwise lhs / rhs with the host's true division."),
    GEN_OP(SW_OP_MUL, "GenericScalarMulOperation", GEN_SCALAR,
           "tensor * scalar per element; the context keeps the scalar "
           "object."),
    GEN_OP(SW_OP_POW, "GenericPowOperation", GEN_SCALAR,
           "tensor ** exponent per element with the host's **; the context "
           "keeps the exponent object."),
    GEN_OP(SW_OP_EXP, "GenericExpOperation", GEN_UNARY,
           "exp per element; the context keeps the outputs."),
    GEN_OP(SW_OP_RELU, "GenericReLUOperation", GEN_UNARY,
           "max(0, x) per element with the host's max (a negative float "
           "gives the integer 0)."),
    GEN_OP(SW_OP_SIGMOID, "GenericSigmoidOperation", GEN_UNARY,
           "The numerically stable logistic function per element; the "
           "context keeps the outputs."),
    GEN_OP(SW_OP_TANH, "GenericTanhOperation", GEN_UNARY,
           "tanh per element; the context keeps the outputs."),
    GEN_OP(SW_OP_GELU, "GenericGELUOperation", GEN_UNARY,
           "0.5*x*(1 + erf(x/sqrt(2))) per element, in floats."),
    GEN_OP(SW_OP_SILU, "GenericSiLUOperation", GEN_UNARY,
           "x*sigmoid(x) per element; the context keeps sigmoid(x)."),
    GEN_OP(SW_OP_SOFTPLUS, "GenericSoftplusOperation", GEN_UNARY,
           "log1p(exp(-|x|)) + max(x, 0) per element."),
    GEN_OP(SW_OP_ELU, "GenericELUOperation", GEN_UNARY,
           "x as a float if x > 0 else expm1(x), per element (alpha 1)."),
    GEN_OP(SW_OP_LEAKY_RELU, "GenericLeakyReLUOperation", GEN_UNARY,
           "x as a float if x >= 0 else 0.01*x, per element."),
    GEN_OP(SW_OP_REDUCE, "GenericReduceSumOperation", GEN_REDUCE,
           "out[i] = sum over j of tensor[i, j] for a two-mode tensor, with "
           "the host's sum; the output layout is canonical column-major over "
           "mode 0."),
    GEN_OP(SW_OP_MATMUL, "GenericMatmulOperation", GEN_MATMUL,
           "out[i, j] = sum over k of lhs[i, k] * rhs[j, k] (lhs @ rhs.T) for "
           "two-mode tensors."),
    GEN_OP(SW_OP_BATCHED_MATMUL, "GenericBatchedMatmulOperation", GEN_BMATMUL,
           "out[i, j, b] = sum over k of lhs[i, k, b] * rhs[j, k, b] for "
           "three-mode tensors (the third mode is the batch); batched einsum "
           "runs it."),
};

const sw_native_table sw_generic_native_table = {"Generic", gen_table,
                                                 sizeof(gen_entry)};

sw_status sw_generic_op_new(const sw_op_info *op, sw_op **out) {
    const gen_entry *e =
        op->id < SW_OP_BUILTIN_COUNT ? &gen_table[op->id] : NULL;
    if (e && e->native.cls.name) {
        sw_status st = sw_native_op_new(&e->native, sizeof(gen_state), out);
        if (!st) {
            gen_state *s = gstate(*out);
            s->kind = e->kind;
            s->vop = op->vop;
            s->name = op->name;
        }
        return st;
    }
    if (op->flags & SW_OPF_LAYOUT)
        return sw_shared_op_new_info(op, out);
    return sw_fail(SW_ENOTIMPL,
                   "Generic carrier does not support operation '%s'", op->name);
}

/* --------------------------------------------- definition-backed kernels */

sw_status sw_generic_result_layout(const sw_op_info *info, int32_t nargs,
                                   const sw_arg *args, sw_layout **out) {
    sw_status st =
        check_tensor(&args[0], info->form == SW_FORM_MATMUL ? "lhs" : "tensor");
    if (st)
        return st;
    if (info->form == SW_FORM_REDUCE)
        return reduce_layout(args[0].as.tensor, out);
    if (nargs < 2 || (st = check_tensor(&args[1], "rhs")))
        return st ? st : sw_fail(SW_ETYPE, "rhs must be a Tensor");
    int batched = info->id == SW_OP_BATCHED_MATMUL;
    int64_t dims[4];
    st = matmul_operands(args[0].as.tensor, args[1].as.tensor, batched, dims);
    return st ? st
              : matmul_layout(args[0].as.tensor, args[1].as.tensor, batched,
                              out);
}

/*
 * A built-in operation on a definition-backed carrier: the forward runs
 * the carrier's kernels (sw_kernel_run); the backward is the Generic
 * backend's, which reads the saved operands through their carriers and
 * allocates each gradient in its operand's class.
 */
static sw_status kernel_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    gen_state *s = gstate(op);
    sw_tensor *r = NULL;
    sw_status st =
        sw_kernel_run_builtin(sw_op_info_get(s->id), nargs, args,
                              s->kind == GEN_SCALAR ? &s->scalar : NULL, &r);
    if (!st)
        *out = r;
    return st;
}

/*
 * The backward of a direct operation on TiledEvictable tensors whose work
 * is held (their tiles primary), on their primary's class: the saved
 * tiled inputs become dense copies there (one memcpy or device copy
 * each), that class's own operation runs its backward on them, and each
 * tiled input's gradient becomes a fresh
 * TiledEvictable of its geometry whose primary is the dense gradient.
 * *done 0 (nothing changed): another case, which Generic's VJP takes;
 * every tensor operand must then be of the primary's class or a full
 * tiled tensor at offset 0 over it, and so must the gradient.
 */
static sw_status tiled_dense_backward(sw_op *op, sw_tensor *g, int32_t n,
                                      sw_tensor **grads, int *done) {
    gen_state *s = gstate(op);
    *done = 0;
    int32_t ninputs = sw_op_ninputs(op);
    if (ninputs < 1 || ninputs > 2 || !g || s->kind == GEN_BMATMUL)
        return SW_OK;
    const void *cls = NULL;
    for (int32_t i = 0; i < ninputs; ++i) {
        sw_tensor *x = sw_op_input(op, i);
        if (!x || sw_carrier_is_released(x->carrier))
            return SW_OK;
        const void *c = NULL;
        if (sw_carrier_is_tiled(x->carrier)) {
            sw_carrier *p = sw_tiled_primary(x->carrier);
            if (!p || x->offset != 0 ||
                x->layout->cosize != sw_tiled_geometry(x->carrier)->size ||
                !(sw_carrier_is_cpu(p) || sw_carrier_is_opencl(p)))
                return SW_OK;
            c = sw_carrier_class_tag(p);
        } else {
            c = sw_carrier_class_tag(x->carrier);
        }
        if (cls && c != cls)
            return SW_OK;
        cls = c;
    }
    if (sw_carrier_class_tag(g->carrier) != cls)
        return SW_OK;
    *done = 1;
    sw_tensor *dense[2] = {NULL, NULL};
    sw_arg args[2];
    sw_status st = SW_OK;
    for (int32_t i = 0; i < ninputs && !st; ++i) {
        sw_tensor *x = sw_op_input(op, i);
        if (sw_carrier_is_tiled(x->carrier))
            st = sw_tiled_densify(x, &dense[i]);
        else
            dense[i] = sw_tensor_retain(x);
        if (!st)
            args[i] = sw_arg_tensor(dense[i]);
    }
    int32_t nargs = ninputs;
    if (s->kind == GEN_SCALAR)
        args[nargs++] = s->scalar;
    sw_op *dop = NULL;
    sw_tensor *r = NULL, *dg[2] = {NULL, NULL};
    if (!st)
        st = sw_carrier_dispatch_id(dense[0]->carrier, s->id, &dop);
    /* A native operation's backward reads its saved inputs and, for a
     * scalar form, the scalar its forward kept: only that form runs its
     * forward here. */
    if (!st && s->kind == GEN_SCALAR)
        st = sw_op_execute_lowered(dop, nargs, args, &r);
    if (!st)
        st = sw_op_store_inputs(dop, ninputs, dense);
    if (!st)
        st = sw_op_backward(dop, g, n < ninputs ? n : ninputs, dg);
    for (int32_t i = 0; i < ninputs && i < n && !st; ++i) {
        sw_tensor *x = sw_op_input(op, i);
        if (!dg[i] || !sw_carrier_is_tiled(x->carrier)) {
            grads[i] = dg[i];
            dg[i] = NULL;
            continue;
        }
        /* The gradient itself becomes the primary when it can
         * (sw_tiled_copy_of); it is of the primary's class (checked). */
        int copied = 0;
        st = sw_tiled_copy_of(x->carrier, x->layout, dg[i], &grads[i], &copied);
        if (!st && !copied)
            st = sw_fail(SW_ERUNTIME, "a tiled gradient could not be made "
                                      "on its primary's class");
    }
    if (st)
        for (int32_t i = 0; i < n && i < 2; ++i) {
            sw_tensor_unref(grads[i]);
            grads[i] = NULL;
        }
    for (int32_t i = 0; i < 2; ++i) {
        sw_tensor_unref(dense[i]);
        sw_tensor_unref(dg[i]);
    }
    sw_tensor_unref(r);
    sw_op_unref(dop);
    return st;
}

/* The backward of a kernel-run operation: Generic's VJP, with every
 * TiledEvictable saved input held for the work as its forward was (the
 * policy asked with "backward", evicted tiles promoted, tiles pinned);
 * on the primary's class where the inputs allow (tiled_dense_backward). */
static sw_status kernel_backward(sw_op *op, sw_tensor *g, int32_t n,
                                 sw_tensor **grads) {
    void *held[SW_DEF_MAX_OPERANDS] = {NULL};
    sw_carrier *seen[SW_DEF_MAX_OPERANDS] = {NULL};
    int32_t ninputs = sw_op_ninputs(op);
    sw_status st = SW_OK;
    for (int32_t i = 0; i < ninputs && i < SW_DEF_MAX_OPERANDS && !st; ++i) {
        sw_tensor *x = sw_op_input(op, i);
        sw_carrier *c = x ? x->carrier : NULL;
        if (!c || !sw_carrier_is_tiled(c) || sw_carrier_is_released(c))
            continue;
        int again = 0;
        for (int32_t k = 0; k < i; ++k)
            again |= seen[k] == c;
        seen[i] = c;
        if (!again)
            st = sw_tiled_work_begin(c, "backward", &held[i]);
    }
    int done = 0, tiled = 0;
    for (int32_t i = 0; i < SW_DEF_MAX_OPERANDS; ++i)
        tiled |= held[i] != NULL;
    if (!st && tiled)
        st = tiled_dense_backward(op, g, n, grads, &done);
    if (!st && !done)
        st = gen_backward(op, g, n, grads);
    for (int32_t i = 0; i < SW_DEF_MAX_OPERANDS; ++i)
        sw_tiled_work_end(held[i]);
    return st;
}

/* The state lives in the operation's block (sw_op_new_block). */
static const sw_op_class kernel_class = {
    SW_OP_CLASS_VERSION, "DefinedKernelOperation", kernel_forward,
    kernel_backward, gen_destroy};

sw_status sw_defined_op_new(const sw_op_info *op, sw_op **out) {
    const gen_entry *e =
        op->id < SW_OP_BUILTIN_COUNT ? &gen_table[op->id] : NULL;
    if (!e || !e->native.cls.name)
        return sw_fail(SW_ENOTIMPL, "no kernel runs operation '%s'", op->name);
    sw_status st = sw_op_new_block(&kernel_class, sizeof(gen_state), out);
    if (st)
        return st;
    gen_state *s = gstate(*out);
    s->kind = e->kind;
    s->vop = op->vop;
    s->name = op->name;
    s->id = op->id;
    return SW_OK;
}
