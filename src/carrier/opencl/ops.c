/*
 * The OpenCL carrier's operations: the CPU carrier's computing built-ins
 * (op/cpu_ops.c) with the same argument rules, result layouts and dtypes,
 * run by the generated kernels of kernels.c on the operands' device
 * buffers. Results are fresh OpenCL carriers on the operands' device;
 * backward passes produce Float32 gradients in fresh OpenCL carriers
 * shaped like the inputs, so a backward over OpenCL tensors stays on the
 * device.
 *
 * Kernels are enqueued, not waited for (see kernels.c): the buffers of
 * the operands are retained only while the launch is enqueued, and the
 * runtime keeps them alive until the kernels that use them have run.
 */
#include <math.h>
#include <string.h>

#include "carrier/opencl/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "tensor/internal.h"

typedef enum ocl_kind {
    OCL_BINARY,
    OCL_SCALAR,
    OCL_ACT,
    OCL_REDUCE,
    OCL_MATMUL,
    OCL_BMATMUL
} ocl_kind;

typedef struct ocl_entry {
    sw_op_class cls; /* first: the operation's class is its entry */
    int32_t op;
    ocl_kind kind;
    int code; /* sw_kelem or sw_kact */
} ocl_entry;

typedef struct ocl_op_state {
    const ocl_entry *entry;
    sw_kscalar scalar;
} ocl_op_state;

static ocl_op_state *ostate(sw_op *op) {
    return sw_op_state(op);
}

static opencl_state *ocl(sw_carrier *c) {
    return sw_carrier_state(c);
}

static const char *title(const ocl_entry *e) {
    return sw_op_info_get(e->op)->title;
}

/* --------------------------------------------------------------- checks */

/* An OpenCL tensor on device *dev (set by the first operand checked). */
static sw_status check_tensor(const sw_arg *a, const char *name,
                              sw_cl_device **dev) {
    if (a->kind != SW_ARG_TENSOR)
        return sw_fail(SW_ETYPE, "%s must be a Tensor", name);
    sw_carrier *c = a->as.tensor->carrier;
    if (!sw_carrier_is_opencl(c))
        return sw_fail(SW_ETYPE, "%s must be backed by an OpenCL carrier",
                       name);
    if (sw_carrier_is_released(c))
        return sw_fail(SW_ERUNTIME, "%s carrier is released", name);
    if (sw_carrier_dtype(c) == SW_DTYPE_BOOL)
        return sw_fail(SW_ETYPE,
                       "%s: OpenCL operations do not compute on Bool tensors",
                       name);
    if (*dev && ocl(c)->device != *dev)
        return sw_fail(SW_EVALUE,
                       "%s is on OpenCL device %lld, the other operands on "
                       "device %lld",
                       name, (long long)ocl(c)->device->index,
                       (long long)(*dev)->index);
    *dev = ocl(c)->device;
    return SW_OK;
}

/*
 * The kernel operand of t over the given leaves, its buffer retained
 * (drop_operand releases it). A released carrier has no buffer: that is
 * refused with the carrier's message.
 */
static sw_status operand(const sw_tensor *t, sw_plan_leaves leaves,
                         sw_clk_operand *out) {
    cl_mem m = sw_opencl_buffer(t->carrier);
    if (!m)
        return sw_carrier_fail_released();
    out->mem = m;
    out->dtype = sw_carrier_dtype(t->carrier);
    out->offset = t->offset;
    out->leaves = leaves;
    return SW_OK;
}

static void drop_operand(sw_clk_operand *o) {
    if (o->mem)
        (void)sw_cl.ReleaseMemObject(o->mem);
    o->mem = NULL;
}

/* A fresh OpenCL tensor of layout and dtype on d; holes are zero. */
static sw_status fresh(sw_layout *layout, sw_dtype dtype, sw_cl_device *d,
                       sw_tensor **out) {
    int compact = 0;
    /* A compact layout has no holes: the kernel writes every element. */
    if (layout->cosize == layout->size &&
        sw_layout_is_compact(layout, &compact) != SW_OK) {
        sw_clear_error();
        compact = 0;
    }
    sw_carrier *c = NULL;
    sw_status st =
        sw_opencl_new(layout->cosize, dtype, 1, compact, d->index, &c);
    if (st)
        return st;
    st = sw_tensor_new(c, 0, layout, out);
    sw_carrier_unref(c);
    return st;
}

static sw_dtype join(sw_dtype a, sw_dtype b) {
    return a == SW_DTYPE_FLOAT32 || b == SW_DTYPE_FLOAT32 ? SW_DTYPE_FLOAT32
                                                          : SW_DTYPE_INT32;
}

static sw_status finish(sw_status st, sw_tensor *r, sw_tensor **out) {
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

/*
 * Runs map e into r from the inputs (whole layouts), with the buffers
 * held for the launch.
 */
static sw_status run_map(sw_cl_device *d, sw_clk_expr e, sw_tensor *r,
                         int32_t nin, sw_tensor *const *in, sw_kscalar s) {
    sw_clk_operand ops[SW_PLAN_MAX_OPS];
    memset(ops, 0, sizeof ops);
    sw_status st = operand(r, sw_plan_leaves_of(r->layout), &ops[0]);
    for (int32_t k = 0; !st && k < nin; ++k)
        st = operand(in[k], sw_plan_leaves_of(in[k]->layout), &ops[k + 1]);
    if (!st)
        st = sw_clk_map(d, e, nin + 1, ops, s);
    for (int32_t k = 0; k <= nin; ++k)
        drop_operand(&ops[k]);
    return st;
}

/* A fresh tensor of layout and dtype holding map e of the inputs. */
static sw_status map_fresh(sw_cl_device *d, sw_clk_expr e, sw_layout *layout,
                           sw_dtype dtype, int32_t nin, sw_tensor *const *in,
                           sw_kscalar s, sw_tensor **out) {
    sw_tensor *r = NULL;
    sw_status st = fresh(layout, dtype, d, &r);
    if (!st)
        st = run_map(d, e, r, nin, in, s);
    return finish(st, r, out);
}

static const sw_kscalar no_scalar = {0.0, 0};

/* -------------------------------------------------------------- forward */

static sw_status binary_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    const ocl_entry *e = ostate(op)->entry;
    if (nargs != 2)
        return sw_fail(SW_ETYPE, "OpenCL %s requires lhs and rhs tensors",
                       title(e));
    sw_cl_device *d = NULL;
    sw_status st = check_tensor(&args[0], "lhs", &d);
    if (!st)
        st = check_tensor(&args[1], "rhs", &d);
    if (st)
        return st;
    sw_tensor *in[2] = {args[0].as.tensor, args[1].as.tensor};
    sw_layout *rl = NULL;
    if ((st = sw_elementwise_layout(in[0]->layout, in[1]->layout, &rl)))
        return st;
    sw_dtype dt = e->code == SW_KELEM_DIV
                      ? SW_DTYPE_FLOAT32
                      : join(sw_tensor_dtype(in[0]), sw_tensor_dtype(in[1]));
    sw_clk_expr x = {SW_CLK_ELEM, e->code};
    st = map_fresh(d, x, rl, dt, 2, in, no_scalar, out);
    sw_layout_unref(rl);
    return st;
}

static sw_status scalar_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    ocl_op_state *s = ostate(op);
    const ocl_entry *e = s->entry;
    int is_pow = e->code == SW_KELEM_POW_SCALAR;
    if (nargs != 2)
        return sw_fail(SW_ETYPE, "OpenCL %s requires a tensor and %s", title(e),
                       is_pow ? "exponent" : "scalar");
    sw_cl_device *d = NULL;
    sw_status st = check_tensor(&args[0], "tensor", &d);
    if (st)
        return st;
    const sw_arg *k = &args[1];
    if (k->kind != SW_ARG_F64 && k->kind != SW_ARG_I64 &&
        k->kind != SW_ARG_BOOL)
        return sw_fail(SW_ETYPE, "%s must be a numerical scalar",
                       is_pow ? "exponent" : "scalar");
    sw_tensor *x = args[0].as.tensor;
    double v = k->kind == SW_ARG_F64 ? k->as.f : (double)k->as.i;
    /* Scalars are carried as float32, as the CPU kernels compute. */
    float f = (float)v;
    s->scalar.f = f;
    s->scalar.i = 0;
    sw_dtype dt = SW_DTYPE_FLOAT32;
    if (sw_tensor_dtype(x) == SW_DTYPE_INT32) {
        if (!is_pow && k->kind == SW_ARG_I64) {
            dt = SW_DTYPE_INT32;
            s->scalar.i = k->as.i;
        } else if (is_pow && isfinite(f) && floorf(f) == f && f >= 0) {
            dt = SW_DTYPE_INT32;
            s->scalar.i = (int64_t)f;
        }
    }
    sw_clk_expr ex = {SW_CLK_ELEM, e->code};
    return map_fresh(d, ex, x->layout, dt, 1, &x, s->scalar, out);
}

static sw_status act_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                             sw_tensor **out) {
    const ocl_entry *e = ostate(op)->entry;
    if (nargs != 1)
        return sw_fail(SW_ETYPE, "OpenCL %s requires a tensor", title(e));
    sw_cl_device *d = NULL;
    sw_status st = check_tensor(&args[0], "tensor", &d);
    if (st)
        return st;
    sw_tensor *x = args[0].as.tensor;
    sw_dtype dt =
        e->code == SW_KACT_RELU ? sw_tensor_dtype(x) : SW_DTYPE_FLOAT32;
    sw_clk_expr ex = {SW_CLK_ACT, e->code};
    return map_fresh(d, ex, x->layout, dt, 1, &x, no_scalar, out);
}

/* out[i] = sum over j of x[i, j] into r (already of mode 0's size). */
static sw_status run_reduce(sw_cl_device *d, sw_tensor *r, sw_tensor *x) {
    sw_clk_operand o = {0}, xi = {0};
    sw_status st = operand(r, sw_plan_leaves_of(r->layout), &o);
    if (!st)
        st = operand(x, sw_plan_leaves_of(x->layout), &xi);
    if (!st)
        st = sw_clk_reduce(d, &o, &xi, sw_plan_leaves_mode(x->layout, 0),
                           sw_plan_leaves_mode(x->layout, 1));
    drop_operand(&o);
    drop_operand(&xi);
    return st;
}

static sw_status reduce_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    (void)op;
    if (nargs != 1)
        return sw_fail(SW_ETYPE, "OpenCL reduce requires a tensor");
    sw_cl_device *d = NULL;
    sw_status st = check_tensor(&args[0], "tensor", &d);
    if (st)
        return st;
    sw_tensor *x = args[0].as.tensor, *r = NULL;
    if (x->layout->rank != 2)
        return sw_fail(SW_EVALUE, "tensor must have a two-mode layout");
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, sw_lview_child(sw_lview_of(x->layout), 0));
    sw_layout *ol = NULL;
    if ((st = sw_lb_finish_compact(&b, &ol)))
        return st;
    st = fresh(ol, sw_tensor_dtype(x), d, &r);
    sw_layout_unref(ol);
    if (st)
        return st;
    return finish(run_reduce(d, r, x), r, out);
}

/* The matrix operand of t: rows mode row, columns mode col, the batch
 * mode 2 of a three-mode layout. */
static sw_status mat(const sw_tensor *t, int32_t row, int32_t col,
                     sw_clk_mat *m) {
    memset(m, 0, sizeof *m);
    sw_status st = operand(t, sw_plan_leaves_of(t->layout), &m->arg);
    if (st)
        return st;
    m->row = sw_plan_leaves_mode(t->layout, row);
    m->col = sw_plan_leaves_mode(t->layout, col);
    if (t->layout->rank == 3)
        m->batch = sw_plan_leaves_mode(t->layout, 2);
    return SW_OK;
}

/* C = A . B^T per batch (sw_kernel_gemm's contract), C not overlapping. */
static sw_status run_gemm(sw_cl_device *d, sw_tensor *c, sw_tensor *a,
                          int32_t arow, int32_t acol, sw_tensor *b,
                          int32_t brow, int32_t bcol) {
    sw_clk_mat mc, ma, mb;
    memset(&ma, 0, sizeof ma);
    memset(&mb, 0, sizeof mb);
    sw_status st = mat(c, 0, 1, &mc);
    if (!st)
        st = mat(a, arow, acol, &ma);
    if (!st)
        st = mat(b, brow, bcol, &mb);
    if (!st)
        st = sw_clk_gemm(d, &mc, &ma, &mb);
    drop_operand(&mc.arg);
    drop_operand(&ma.arg);
    drop_operand(&mb.arg);
    return st;
}

/* matmul: (M, K) and (N, K) operands; batched_matmul: (M, K, B) and
 * (N, K, B), the product (M, N, B). */
static sw_status matmul_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    const ocl_entry *e = ostate(op)->entry;
    int batched = e->kind == OCL_BMATMUL;
    int32_t want = batched ? 3 : 2;
    if (nargs != 2)
        return sw_fail(SW_ETYPE, "OpenCL %s requires lhs and rhs tensors",
                       title(e));
    sw_cl_device *d = NULL;
    sw_status st = check_tensor(&args[0], "lhs", &d);
    if (!st)
        st = check_tensor(&args[1], "rhs", &d);
    if (st)
        return st;
    sw_tensor *a = args[0].as.tensor, *b = args[1].as.tensor, *r = NULL;
    const char *modes = batched ? "three" : "two";
    if (a->layout->rank != want)
        return sw_fail(SW_EVALUE, "lhs must have a %s-mode layout", modes);
    if (b->layout->rank != want)
        return sw_fail(SW_EVALUE, "rhs must have a %s-mode layout", modes);
    if (a->layout->mode_size[1] != b->layout->mode_size[1])
        return sw_fail(SW_EVALUE, "Matmul inner dimensions must match");
    if (batched && a->layout->mode_size[2] != b->layout->mode_size[2])
        return sw_fail(SW_EVALUE, "Matmul batch dimensions must match");
    sw_lb lb;
    sw_lb_init(&lb);
    sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(a->layout), 0));
    sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(b->layout), 0));
    if (batched)
        sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(a->layout), 2));
    sw_layout *ol = NULL;
    if ((st = sw_lb_finish_compact_as(
             &lb, batched ? "batched matmul result" : "matmul result", &ol)))
        return st;
    st = fresh(ol, join(sw_tensor_dtype(a), sw_tensor_dtype(b)), d, &r);
    sw_layout_unref(ol);
    if (st)
        return st;
    return finish(run_gemm(d, r, a, 0, 1, b, 0, 1), r, out);
}

static sw_status ocl_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                             sw_tensor **out) {
    switch (ostate(op)->entry->kind) {
    case OCL_BINARY:
        return binary_forward(op, nargs, args, out);
    case OCL_SCALAR:
        return scalar_forward(op, nargs, args, out);
    case OCL_ACT:
        return act_forward(op, nargs, args, out);
    case OCL_REDUCE:
        return reduce_forward(op, nargs, args, out);
    case OCL_MATMUL:
    case OCL_BMATMUL:
        return matmul_forward(op, nargs, args, out);
    }
    return sw_fail(SW_ERUNTIME, "unknown OpenCL operation");
}

/* ------------------------------------------------------------- backward */

/* A fresh Float32 gradient shaped like x from map e of the inputs. */
static sw_status grad_map(sw_cl_device *d, sw_clk_family fam, int code,
                          const sw_tensor *x, int32_t nin, sw_tensor *const *in,
                          sw_kscalar s, sw_tensor **out) {
    sw_clk_expr e = {fam, code};
    return map_fresh(d, e, x->layout, SW_DTYPE_FLOAT32, nin, in, s, out);
}

/* The backward of reduce: out[i, j] = g[i] for every j, g read through
 * its own leaves followed by stride-0 leaves over x's mode 1. */
static sw_status reduce_backward(sw_cl_device *d, const sw_tensor *x,
                                 sw_tensor *g, sw_tensor **out) {
    sw_plan_leaves gl = sw_plan_leaves_of(g->layout);
    sw_plan_leaves cols = sw_plan_leaves_mode(x->layout, 1);
    if (sw_plan_leaves_size(gl) != x->layout->mode_size[0])
        return sw_fail(SW_EVALUE,
                       "gradient has %lld elements, the reduced tensor's "
                       "rows %lld",
                       (long long)sw_plan_leaves_size(gl),
                       (long long)x->layout->mode_size[0]);
    if (gl.nleaf + cols.nleaf > SW_PLAN_MAX_LEAVES * 2)
        return sw_fail(SW_ENOTIMPL, "reduce backward: too many leaves");
    int64_t ext[SW_PLAN_MAX_LEAVES * 2], str[SW_PLAN_MAX_LEAVES * 2];
    int32_t n = 0;
    for (int32_t i = 0; i < gl.nleaf; ++i, ++n) {
        ext[n] = gl.extent[i];
        str[n] = gl.stride[i];
    }
    for (int32_t i = 0; i < cols.nleaf; ++i, ++n) {
        ext[n] = cols.extent[i];
        str[n] = 0;
    }
    sw_plan_leaves bl = {n, ext, str};
    sw_tensor *r = NULL;
    sw_status st = fresh(x->layout, SW_DTYPE_FLOAT32, d, &r);
    if (st)
        return st;
    sw_clk_operand ops[2];
    memset(ops, 0, sizeof ops);
    st = operand(r, sw_plan_leaves_of(r->layout), &ops[0]);
    if (!st)
        st = operand(g, bl, &ops[1]);
    sw_clk_expr copy = {SW_CLK_COPY, 0};
    if (!st)
        st = sw_clk_map(d, copy, 2, ops, no_scalar);
    drop_operand(&ops[0]);
    drop_operand(&ops[1]);
    return finish(st, r, out);
}

/* The saved inputs whose values the backward reads must still have their
 * storage (the CPU backward's rule). */
static sw_status check_saved(const ocl_entry *e, const sw_tensor *x,
                             const sw_tensor *y) {
    int reads_x = 1, reads_y = 1;
    switch (e->kind) {
    case OCL_BINARY:
        reads_x = reads_y = e->code == SW_KELEM_MUL || e->code == SW_KELEM_DIV;
        break;
    case OCL_SCALAR:
        reads_x = e->code == SW_KELEM_POW_SCALAR;
        break;
    case OCL_REDUCE:
        reads_x = 0;
        break;
    default:
        break;
    }
    const char *xname = y ? "lhs" : "tensor";
    if (reads_x && sw_carrier_is_released(x->carrier))
        return sw_fail(SW_ERUNTIME, "%s carrier is released", xname);
    if (y && reads_y && sw_carrier_is_released(y->carrier))
        return sw_fail(SW_ERUNTIME, "rhs carrier is released");
    return SW_OK;
}

static sw_status ocl_backward(sw_op *op, sw_tensor *g, int32_t n,
                              sw_tensor **grads) {
    ocl_op_state *s = ostate(op);
    const ocl_entry *e = s->entry;
    int two = e->kind == OCL_BINARY || e->kind == OCL_MATMUL ||
              e->kind == OCL_BMATMUL;
    if (sw_op_ninputs(op) < (two ? 2 : 1) || n < 1)
        return sw_fail(SW_ERUNTIME, "backward requires a recorded forward");
    sw_arg ga = sw_arg_tensor(g);
    sw_cl_device *d = NULL;
    sw_status st = check_tensor(&ga, "gradient", &d);
    if (st)
        return st;
    sw_tensor *x = sw_op_input(op, 0), *y = two ? sw_op_input(op, 1) : NULL;
    if ((st = check_saved(e, x, y)))
        return st;
    /* The saved inputs the kernels read must be on the gradient's device. */
    if (sw_carrier_is_opencl(x->carrier) && ocl(x->carrier)->device != d)
        return sw_fail(SW_EVALUE, "gradient is on another OpenCL device than "
                                  "the operation's inputs");
    int want0 = sw_tensor_is_differentiable(x);
    int want1 = two && n > 1 && sw_tensor_is_differentiable(y);
    switch (e->kind) {
    case OCL_BINARY:
        switch ((sw_kelem)e->code) {
        case SW_KELEM_ADD:
        case SW_KELEM_SUB:
            if (want0)
                st =
                    grad_map(d, SW_CLK_COPY, 0, x, 1, &g, no_scalar, &grads[0]);
            if (!st && want1)
                st = e->code == SW_KELEM_ADD
                         ? grad_map(d, SW_CLK_COPY, 0, y, 1, &g, no_scalar,
                                    &grads[1])
                         : grad_map(d, SW_CLK_ELEM, SW_KELEM_NEG, y, 1, &g,
                                    no_scalar, &grads[1]);
            return st;
        case SW_KELEM_MUL: {
            sw_tensor *in0[2] = {g, y}, *in1[2] = {g, x};
            if (want0)
                st = grad_map(d, SW_CLK_ELEM, SW_KELEM_MUL, x, 2, in0,
                              no_scalar, &grads[0]);
            if (!st && want1)
                st = grad_map(d, SW_CLK_ELEM, SW_KELEM_MUL, y, 2, in1,
                              no_scalar, &grads[1]);
            return st;
        }
        default: { /* div */
            sw_tensor *in0[2] = {g, y}, *in1[3] = {g, x, y};
            if (want0)
                st = grad_map(d, SW_CLK_ELEM, SW_KELEM_DIV, x, 2, in0,
                              no_scalar, &grads[0]);
            if (!st && want1)
                st = grad_map(d, SW_CLK_ELEM, SW_KELEM_DIV_GRAD_RHS, y, 3, in1,
                              no_scalar, &grads[1]);
            return st;
        }
        }
    case OCL_SCALAR: {
        sw_kscalar f = {s->scalar.f, 0};
        if (e->code == SW_KELEM_MUL_SCALAR)
            return grad_map(d, SW_CLK_ELEM, SW_KELEM_MUL_SCALAR, x, 1, &g, f,
                            &grads[0]);
        sw_tensor *in[2] = {g, x};
        return grad_map(d, SW_CLK_ELEM, SW_KELEM_POW_GRAD, x, 2, in, f,
                        &grads[0]);
    }
    case OCL_ACT: {
        sw_tensor *in[2] = {g, x};
        return grad_map(d, SW_CLK_ACT_GRAD, e->code, x, 2, in, no_scalar,
                        &grads[0]);
    }
    case OCL_REDUCE:
        return reduce_backward(d, x, g, &grads[0]);
    case OCL_MATMUL:
    case OCL_BMATMUL: {
        /* dA = G . B (B read as K x N), dB = G^T . A (as N x M, K x M);
         * batched, per batch index. */
        sw_tensor *da = NULL, *db = NULL;
        if (want0) {
            st = fresh(x->layout, SW_DTYPE_FLOAT32, d, &da);
            if (!st)
                st = run_gemm(d, da, g, 0, 1, y, 1, 0);
            if ((st = finish(st, da, &grads[0])))
                return st;
        }
        if (!want1)
            return SW_OK;
        st = fresh(y->layout, SW_DTYPE_FLOAT32, d, &db);
        if (!st)
            st = run_gemm(d, db, g, 1, 0, x, 1, 0);
        return finish(st, db, &grads[1]);
    }
    }
    return sw_fail(SW_ERUNTIME, "unknown OpenCL operation");
}

static void ocl_op_destroy(sw_op *op) {
    /* The state lives in the operation's block (sw_op_new_block). */
    (void)op;
}

/* ------------------------------------------------------------ the table */

#define OCL_OP(id, cls_name, k, c)                                             \
    [id] = {{SW_OP_CLASS_VERSION, cls_name, ocl_forward, ocl_backward,         \
             ocl_op_destroy},                                                  \
            id,                                                                \
            k,                                                                 \
            c}

static const ocl_entry ocl_table[SW_OP_BUILTIN_COUNT] = {
    OCL_OP(SW_OP_ADD, "_OpenCLAddOperation", OCL_BINARY, SW_KELEM_ADD),
    OCL_OP(SW_OP_SUB, "_OpenCLSubOperation", OCL_BINARY, SW_KELEM_SUB),
    OCL_OP(SW_OP_ELEMENTWISE_MUL, "_OpenCLElementwiseMulOperation", OCL_BINARY,
           SW_KELEM_MUL),
    OCL_OP(SW_OP_DIV, "_OpenCLDivOperation", OCL_BINARY, SW_KELEM_DIV),
    OCL_OP(SW_OP_MUL, "_OpenCLScalarMulOperation", OCL_SCALAR,
           SW_KELEM_MUL_SCALAR),
    OCL_OP(SW_OP_POW, "_OpenCLPowOperation", OCL_SCALAR, SW_KELEM_POW_SCALAR),
    OCL_OP(SW_OP_EXP, "_OpenCLExpOperation", OCL_ACT, SW_KACT_EXP),
    OCL_OP(SW_OP_RELU, "_OpenCLReLUOperation", OCL_ACT, SW_KACT_RELU),
    OCL_OP(SW_OP_SIGMOID, "_OpenCLSigmoidOperation", OCL_ACT, SW_KACT_SIGMOID),
    OCL_OP(SW_OP_TANH, "_OpenCLTanhOperation", OCL_ACT, SW_KACT_TANH),
    OCL_OP(SW_OP_GELU, "_OpenCLGELUOperation", OCL_ACT, SW_KACT_GELU),
    OCL_OP(SW_OP_SILU, "_OpenCLSiLUOperation", OCL_ACT, SW_KACT_SILU),
    OCL_OP(SW_OP_SOFTPLUS, "_OpenCLSoftplusOperation", OCL_ACT,
           SW_KACT_SOFTPLUS),
    OCL_OP(SW_OP_ELU, "_OpenCLELUOperation", OCL_ACT, SW_KACT_ELU),
    OCL_OP(SW_OP_LEAKY_RELU, "_OpenCLLeakyReLUOperation", OCL_ACT,
           SW_KACT_LEAKY_RELU),
    OCL_OP(SW_OP_REDUCE, "_OpenCLReduceSumOperation", OCL_REDUCE, 0),
    OCL_OP(SW_OP_MATMUL, "_OpenCLMatmulOperation", OCL_MATMUL, 0),
    OCL_OP(SW_OP_BATCHED_MATMUL, "_OpenCLBatchedMatmulOperation", OCL_BMATMUL,
           0),
};

sw_status sw_opencl_op_new(const sw_op_info *op, sw_op **out) {
    const ocl_entry *e =
        op->id >= 0 && op->id < SW_OP_BUILTIN_COUNT ? &ocl_table[op->id] : NULL;
    if (e && e->cls.name) {
        sw_status st = sw_op_new_block(&e->cls, sizeof(ocl_op_state), out);
        if (!st)
            ostate(*out)->entry = e;
        return st;
    }
    if (op->flags & SW_OPF_LAYOUT)
        return sw_shared_op_new_info(op, out);
    return sw_fail(SW_ENOTIMPL,
                   "OpenCL carrier does not support operation '%s'", op->name);
}

/* -------------------------------------------------------------- scatter */

sw_status sw_opencl_scatter_device(sw_carrier *c, const sw_tensor *src,
                                   const sw_tensor *onto,
                                   const sw_layout *mapping, int64_t base,
                                   int *handled) {
    (void)onto;
    *handled = 0;
    sw_dtype dt = sw_carrier_dtype(c), st_dt = sw_carrier_dtype(src->carrier);
    /* Float32 takes Float32 and Int32 values; Int32 only Int32 (a float
     * would need the range checks of the host path). */
    if (!sw_carrier_is_opencl(src->carrier) ||
        ocl(src->carrier)->device != ocl(c)->device ||
        !(dt == SW_DTYPE_FLOAT32 || (dt == SW_DTYPE_INT32 && st_dt == dt)) ||
        (st_dt != SW_DTYPE_FLOAT32 && st_dt != SW_DTYPE_INT32))
        return SW_OK;
    /* Mapped indices must be known to lie in the carrier: with
     * non-negative strides they run from base to base + cosize - 1. */
    sw_plan_leaves ml = sw_plan_leaves_of(mapping);
    for (int32_t i = 0; i < ml.nleaf; ++i)
        if (ml.stride[i] < 0)
            return SW_OK;
    if (base < 0 || base + mapping->cosize > ocl(c)->size)
        return SW_OK;
    int injective = 0;
    if (sw_layout_is_injective(mapping, &injective) != SW_OK) {
        sw_clear_error();
        return SW_OK;
    }
    /* Several values for one element: the host path keeps the last. */
    if (!injective)
        return SW_OK;
    *handled = 1;
    opencl_state *s = ocl(c);
    sw_cl_device *d = s->device;
    int64_t bytes = s->size * sw_dtype_itemsize(dt);
    /* The copy goes into a fresh buffer holding the old values, which
     * replaces the carrier's only once the device has completed. */
    cl_mem fresh_mem = NULL, old = sw_opencl_buffer(c);
    if (!old)
        return sw_carrier_fail_released();
    sw_status st = sw_opencl_buffer_new(d, bytes, &fresh_mem);
    if (!st) {
        cl_int err = SW_CL_SUCCESS;
        if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
            st = sw_cl_fail_injected("copy");
        else if ((err = sw_cl.EnqueueCopyBuffer(d->queue, old, fresh_mem, 0, 0,
                                                (size_t)bytes, 0, NULL,
                                                NULL)) != SW_CL_SUCCESS)
            st = sw_cl_fail("copy", err);
    }
    sw_clk_operand ops[2];
    memset(ops, 0, sizeof ops);
    if (!st) {
        ops[0].mem = fresh_mem;
        ops[0].dtype = dt;
        ops[0].offset = base;
        ops[0].leaves = sw_plan_leaves_of(mapping);
        st = operand(src, sw_plan_leaves_of(src->layout), &ops[1]);
    }
    sw_clk_expr copy = {SW_CLK_COPY, 0};
    if (!st)
        st = sw_clk_map(d, copy, 2, ops, no_scalar);
    drop_operand(&ops[1]);
    if (!st)
        st = sw_cl_finish(d, "scatter");
    (void)sw_cl.ReleaseMemObject(old);
    if (st) {
        if (fresh_mem)
            (void)sw_cl.ReleaseMemObject(fresh_mem);
        return st;
    }
    sw_opencl_swap_buffer(c, fresh_mem);
    return SW_OK;
}
