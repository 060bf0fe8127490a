/*
 * The CPU carrier's native operations: argument rules, result layouts and
 * dtypes, and the calls into the kernels (src/op/kernels/). Results are
 * fresh CPU carriers of cosize elements; backward passes produce Float32
 * gradients in fresh CPU carriers shaped like the inputs.
 */
#include <math.h>
#include <string.h>

#include "carrier/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "op/kernels/kernels.h"
#include "tensor/internal.h"

typedef enum cpu_kind {
    CPU_BINARY,
    CPU_SCALAR,
    CPU_ACT,
    CPU_REDUCE,
    CPU_MATMUL,
    CPU_BMATMUL
} cpu_kind;

typedef struct cpu_entry {
    sw_native_op native; /* first: the class and its registry entry */
    cpu_kind kind;
    int code; /* sw_kelem or sw_kact */
} cpu_entry;

typedef struct cpu_state {
    const cpu_entry *entry;
    sw_kscalar scalar;
} cpu_state;

static cpu_state *cstate(sw_op *op) {
    return sw_op_state(op);
}

/* --------------------------------------------------------------- checks */

static sw_status check_cpu_tensor(const sw_arg *a, const char *name) {
    if (a->kind != SW_ARG_TENSOR)
        return sw_fail(SW_ETYPE, "%s must be a Tensor", name);
    sw_carrier *c = a->as.tensor->carrier;
    if (!sw_carrier_is_cpu(c))
        return sw_fail(SW_ETYPE, "%s must be backed by a CPU carrier", name);
    if (sw_carrier_is_released(c))
        return sw_fail(SW_ERUNTIME, "%s carrier is released", name);
    if (sw_carrier_dtype(c) == SW_DTYPE_BOOL)
        return sw_fail(SW_ETYPE,
                       "%s: CPU operations do not compute on Bool "
                       "tensors",
                       name);
    return SW_OK;
}

static sw_karg karg_of(const sw_tensor *t) {
    /* The carrier is pinned by the execution (see sw_carrier_pin). */
    sw_karg k = {sw_cpu_storage(t->carrier), sw_carrier_dtype(t->carrier),
                 t->offset, t->layout};
    return k;
}

/* A fresh CPU tensor of `layout` and dtype; holes are zero. */
static sw_status fresh(sw_layout *layout, sw_dtype dtype, sw_tensor **out) {
    int compact = 0;
    /* A compact layout has no holes: the kernel writes every element. */
    if (layout->cosize == layout->size &&
        sw_layout_is_compact(layout, &compact) != SW_OK)
        compact = 0;
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new_fresh(layout->cosize, dtype, compact, &c);
    /* A result whose bytes cannot exist is out of memory for the caller,
     * whichever check of sw_cpu_new_fresh refused it (a byte length that
     * overflows, or one past what the allocator can ask for). */
    if (st == SW_EVALUE || st == SW_EOVERFLOW)
        return sw_fail(SW_ENOMEM, "cannot allocate a result of %lld elements",
                       (long long)layout->cosize);
    if (st)
        return st;
    /* In the carrier's block when it is one (sw_cpu_new_fresh). */
    st = sw_tensor_new(c, 0, layout, out);
    sw_carrier_unref(c);
    return st;
}

static sw_dtype join(sw_dtype a, sw_dtype b) {
    return a == SW_DTYPE_FLOAT32 || b == SW_DTYPE_FLOAT32 ? SW_DTYPE_FLOAT32
                                                          : SW_DTYPE_INT32;
}

/* Runs a kernel into a fresh result; releases it on failure. */
static sw_status finish(sw_status st, sw_tensor *r, sw_tensor **out) {
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

/* -------------------------------------------------------------- forward */

static sw_status binary_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    const cpu_entry *e = cstate(op)->entry;
    if (nargs != 2)
        return sw_fail(SW_ETYPE, "CPU %s requires lhs and rhs tensors",
                       sw_op_info_get(e->native.op)->title);
    sw_status st = check_cpu_tensor(&args[0], "lhs");
    if (!st)
        st = check_cpu_tensor(&args[1], "rhs");
    if (st)
        return st;
    sw_tensor *a = args[0].as.tensor, *b = args[1].as.tensor;
    /* The kernel walks the operands by logical index, so layouts of one
     * shape need no copy first. */
    sw_layout *rl = NULL;
    if ((st = sw_elementwise_layout(a->layout, b->layout, &rl)))
        return st;
    sw_dtype dt = e->code == SW_KELEM_DIV
                      ? SW_DTYPE_FLOAT32
                      : join(sw_tensor_dtype(a), sw_tensor_dtype(b));
    sw_tensor *r = NULL;
    st = fresh(rl, dt, &r);
    sw_layout_unref(rl);
    if (st)
        return st;
    sw_karg in[2] = {karg_of(a), karg_of(b)};
    sw_kscalar none = {0.0, 0};
    st = sw_kernel_elementwise((sw_kelem)e->code, karg_of(r), in, none);
    return finish(st, r, out);
}

static sw_status scalar_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    cpu_state *s = cstate(op);
    const cpu_entry *e = s->entry;
    int is_pow = e->code == SW_KELEM_POW_SCALAR;
    if (nargs != 2)
        return sw_fail(SW_ETYPE, "CPU %s requires a tensor and %s",
                       sw_op_info_get(e->native.op)->title,
                       is_pow ? "exponent" : "scalar");
    sw_status st = check_cpu_tensor(&args[0], "tensor");
    if (st)
        return st;
    const sw_arg *k = &args[1];
    if (k->kind != SW_ARG_F64 && k->kind != SW_ARG_I64 &&
        k->kind != SW_ARG_BOOL)
        return sw_fail(SW_ETYPE, "%s must be a numerical scalar",
                       is_pow ? "exponent" : "scalar");
    sw_tensor *x = args[0].as.tensor;
    double v = k->kind == SW_ARG_F64 ? k->as.f : (double)k->as.i;
    /* Scalars are carried as float32, as the kernels compute. */
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
    sw_tensor *r = NULL;
    if ((st = fresh(x->layout, dt, &r)))
        return st;
    sw_karg in = karg_of(x);
    st = sw_kernel_elementwise((sw_kelem)e->code, karg_of(r), &in, s->scalar);
    return finish(st, r, out);
}

static sw_status act_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                             sw_tensor **out) {
    const cpu_entry *e = cstate(op)->entry;
    if (nargs != 1)
        return sw_fail(SW_ETYPE, "CPU %s requires a tensor",
                       sw_op_info_get(e->native.op)->title);
    sw_status st = check_cpu_tensor(&args[0], "tensor");
    if (st)
        return st;
    sw_tensor *x = args[0].as.tensor, *r = NULL;
    sw_dtype dt =
        e->code == SW_KACT_RELU ? sw_tensor_dtype(x) : SW_DTYPE_FLOAT32;
    if ((st = fresh(x->layout, dt, &r)))
        return st;
    st = sw_kernel_activation((sw_kact)e->code, karg_of(r), karg_of(x));
    return finish(st, r, out);
}

static sw_status reduce_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    if (nargs != 1)
        return sw_fail(SW_ETYPE, "CPU reduce requires a tensor");
    sw_status st = check_cpu_tensor(&args[0], "tensor");
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
    st = fresh(ol, sw_tensor_dtype(x), &r);
    sw_layout_unref(ol);
    if (st)
        return st;
    st = sw_kernel_reduce_sum(karg_of(r), karg_of(x));
    return finish(st, r, out);
}

static sw_kmat mat(const sw_tensor *t, int32_t rows, int32_t cols) {
    sw_kmat m = {karg_of(t), rows, cols, t->layout->rank == 3 ? 2 : -1};
    return m;
}

/* matmul: (M, K) and (N, K) operands; batched_matmul: (M, K, B) and
 * (N, K, B), the product (M, N, B). */
static sw_status matmul_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    int batched = cstate(op)->entry->kind == CPU_BMATMUL;
    int32_t want = batched ? 3 : 2;
    if (nargs != 2)
        return sw_fail(SW_ETYPE, "CPU %s requires lhs and rhs tensors",
                       sw_op_info_get(cstate(op)->entry->native.op)->title);
    sw_status st = check_cpu_tensor(&args[0], "lhs");
    if (!st)
        st = check_cpu_tensor(&args[1], "rhs");
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
    st = fresh(ol, join(sw_tensor_dtype(a), sw_tensor_dtype(b)), &r);
    sw_layout_unref(ol);
    if (st)
        return st;
    st = sw_kernel_gemm(mat(r, 0, 1), mat(a, 0, 1), mat(b, 0, 1));
    return finish(st, r, out);
}

static sw_status cpu_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                             sw_tensor **out) {
    switch (cstate(op)->entry->kind) {
    case CPU_BINARY:
        return binary_forward(op, nargs, args, out);
    case CPU_SCALAR:
        return scalar_forward(op, nargs, args, out);
    case CPU_ACT:
        return act_forward(op, nargs, args, out);
    case CPU_REDUCE:
        return reduce_forward(op, nargs, args, out);
    case CPU_MATMUL:
    case CPU_BMATMUL:
        return matmul_forward(op, nargs, args, out);
    }
    return sw_fail(SW_ERUNTIME, "unknown CPU operation");
}

/* ------------------------------------------------------------- backward */

/* A fresh Float32 gradient shaped like input x, from an elementwise kernel
 * over the given inputs. */
static sw_status grad_elementwise(sw_kelem op, const sw_tensor *x,
                                  const sw_karg *in, sw_kscalar s,
                                  sw_tensor **out) {
    sw_tensor *r = NULL;
    sw_status st = fresh(x->layout, SW_DTYPE_FLOAT32, &r);
    if (!st)
        st = sw_kernel_elementwise(op, karg_of(r), in, s);
    return finish(st, r, out);
}

/* A fresh Float32 copy of g shaped like input x. */
static sw_status grad_copy(const sw_tensor *x, const sw_tensor *g,
                           sw_tensor **out) {
    sw_tensor *r = NULL;
    sw_status st = fresh(x->layout, SW_DTYPE_FLOAT32, &r);
    if (!st)
        st = sw_kernel_copy(karg_of(r), karg_of(g));
    return finish(st, r, out);
}

/*
 * The saved inputs whose values the backward reads must still have their
 * storage: a release after the forward (directly, by a move or by an
 * eviction) is refused as the forward refuses it. Gradients of add, sub,
 * scalar multiplication and reduce need only the inputs' layouts.
 */
static sw_status check_saved(sw_op *op, const sw_tensor *x,
                             const sw_tensor *y) {
    const cpu_entry *e = cstate(op)->entry;
    int reads_x = 1, reads_y = 1;
    switch (e->kind) {
    case CPU_BINARY:
        reads_x = reads_y = e->code == SW_KELEM_MUL || e->code == SW_KELEM_DIV;
        break;
    case CPU_SCALAR:
        reads_x = e->code == SW_KELEM_POW_SCALAR;
        break;
    case CPU_REDUCE:
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

static sw_status cpu_backward(sw_op *op, sw_tensor *g, int32_t n,
                              sw_tensor **grads) {
    cpu_state *s = cstate(op);
    const cpu_entry *e = s->entry;
    int two = e->kind == CPU_BINARY || e->kind == CPU_MATMUL ||
              e->kind == CPU_BMATMUL;
    if (sw_op_ninputs(op) < (two ? 2 : 1) || n < 1)
        return sw_fail(SW_ERUNTIME, "backward requires a recorded forward");
    sw_arg ga = sw_arg_tensor(g);
    sw_status st = check_cpu_tensor(&ga, "gradient");
    if (st)
        return st;
    sw_tensor *x = sw_op_input(op, 0), *y = two ? sw_op_input(op, 1) : NULL;
    if ((st = check_saved(op, x, y)))
        return st;
    sw_kscalar none = {0.0, 0};
    sw_karg kg = karg_of(g), kx = karg_of(x);
    /* Only inputs that take part in autograd get a gradient: a constant
     * operand (sw_tensor_set_requires_grad) costs no work. */
    int want0 = sw_tensor_is_differentiable(x);
    int want1 = two && n > 1 && sw_tensor_is_differentiable(y);
    switch (e->kind) {
    case CPU_BINARY: {
        sw_karg ky = karg_of(y);
        switch ((sw_kelem)e->code) {
        case SW_KELEM_ADD:
        case SW_KELEM_SUB:
            if (want0)
                st = grad_copy(x, g, &grads[0]);
            if (!st && want1)
                st = e->code == SW_KELEM_ADD
                         ? grad_copy(y, g, &grads[1])
                         : grad_elementwise(SW_KELEM_NEG, y, &kg, none,
                                            &grads[1]);
            return st;
        case SW_KELEM_MUL: {
            sw_karg in0[2] = {kg, ky}, in1[2] = {kg, kx};
            if (want0)
                st = grad_elementwise(SW_KELEM_MUL, x, in0, none, &grads[0]);
            if (!st && want1)
                st = grad_elementwise(SW_KELEM_MUL, y, in1, none, &grads[1]);
            return st;
        }
        default: { /* div */
            sw_karg in0[2] = {kg, ky}, in1[3] = {kg, kx, ky};
            if (want0)
                st = grad_elementwise(SW_KELEM_DIV, x, in0, none, &grads[0]);
            if (!st && want1)
                st = grad_elementwise(SW_KELEM_DIV_GRAD_RHS, y, in1, none,
                                      &grads[1]);
            return st;
        }
        }
    }
    case CPU_SCALAR: {
        if (e->code == SW_KELEM_MUL_SCALAR) {
            sw_kscalar f = {s->scalar.f, 0};
            return grad_elementwise(SW_KELEM_MUL_SCALAR, x, &kg, f, &grads[0]);
        }
        sw_karg in[2] = {kg, kx};
        sw_kscalar f = {s->scalar.f, 0};
        return grad_elementwise(SW_KELEM_POW_GRAD, x, in, f, &grads[0]);
    }
    case CPU_ACT: {
        sw_tensor *r = NULL;
        st = fresh(x->layout, SW_DTYPE_FLOAT32, &r);
        if (!st)
            st = sw_kernel_activation_backward((sw_kact)e->code, karg_of(r), kg,
                                               kx, NULL);
        return finish(st, r, &grads[0]);
    }
    case CPU_REDUCE: {
        sw_tensor *r = NULL;
        st = fresh(x->layout, SW_DTYPE_FLOAT32, &r);
        if (!st)
            st = sw_kernel_reduce_sum_backward(karg_of(r), kg);
        return finish(st, r, &grads[0]);
    }
    case CPU_MATMUL:
    case CPU_BMATMUL: {
        /* dA = G . B (B read as K x N), dB = G^T . A (as N x M, K x M);
         * batched, per batch index (mat() keeps mode 2 as the batch). */
        sw_tensor *da = NULL, *db = NULL;
        if (want0) {
            st = fresh(x->layout, SW_DTYPE_FLOAT32, &da);
            if (!st)
                st = sw_kernel_gemm(mat(da, 0, 1), mat(g, 0, 1), mat(y, 1, 0));
            if ((st = finish(st, da, &grads[0])))
                return st;
        }
        if (!want1)
            return SW_OK;
        st = fresh(y->layout, SW_DTYPE_FLOAT32, &db);
        if (!st)
            st = sw_kernel_gemm(mat(db, 0, 1), mat(g, 1, 0), mat(x, 1, 0));
        return finish(st, db, &grads[1]);
    }
    }
    return sw_fail(SW_ERUNTIME, "unknown CPU operation");
}

static void cpu_op_destroy(sw_op *op){
    /* The state lives in the operation's block (sw_native_op_new). */
}

/* ------------------------------------------------------------ registry */

#define CPU_OP(id, cls_name, k, c, summary)                                    \
    [id] = {{{SW_OP_CLASS_VERSION, cls_name, cpu_forward, cpu_backward,        \
              cpu_op_destroy},                                                 \
             id,                                                               \
             "cpu",                                                            \
             summary,                                                          \
             SW_NATIVE_HOST_FREE | SW_NATIVE_F32_SCALARS},                     \
            k,                                                                 \
            c}
#define EXACT " (Int32 exact, overflow-checked)."

static const cpu_entry cpu_table[SW_OP_BUILTIN_COUNT] = {
    CPU_OP(SW_OP_ADD, "_CPUAddOperation", CPU_BINARY, SW_KELEM_ADD,
           "Elementwise lhs + rhs in float32" EXACT),
    CPU_OP(SW_OP_SUB, "_CPUSubOperation", CPU_BINARY, SW_KELEM_SUB,
           "Elementwise lhs - rhs in float32" EXACT),
    CPU_OP(SW_OP_ELEMENTWISE_MUL, "_CPUElementwiseMulOperation", CPU_BINARY,
           SW_KELEM_MUL, "Elementwise lhs * rhs in float32" EXACT),
    CPU_OP(SW_OP_DIV, "_CPUDivOperation", CPU_BINARY, SW_KELEM_DIV,
           "Elementwise lhs / rhs in float32."),
    CPU_OP(SW_OP_MUL, "_CPUScalarMulOperation", CPU_SCALAR, SW_KELEM_MUL_SCALAR,
           "tensor * scalar per element; ctx['scalar'] is the float32 "
           "scalar."),
    CPU_OP(SW_OP_POW, "_CPUPowOperation", CPU_SCALAR, SW_KELEM_POW_SCALAR,
           "tensor ** exponent per element; ctx['exponent'] is the float32 "
           "exponent."),
    CPU_OP(SW_OP_EXP, "_CPUExpOperation", CPU_ACT, SW_KACT_EXP,
           "expf per element."),
    CPU_OP(SW_OP_RELU, "_CPUReLUOperation", CPU_ACT, SW_KACT_RELU,
           "max(x, 0) per element (Int32 exact)."),
    CPU_OP(SW_OP_SIGMOID, "_CPUSigmoidOperation", CPU_ACT, SW_KACT_SIGMOID,
           "The numerically stable logistic function per element."),
    CPU_OP(SW_OP_TANH, "_CPUTanhOperation", CPU_ACT, SW_KACT_TANH,
           "tanhf per element."),
    CPU_OP(SW_OP_GELU, "_CPUGELUOperation", CPU_ACT, SW_KACT_GELU,
           "0.5*x*(1 + erf(x/sqrt(2))) per element."),
    CPU_OP(SW_OP_SILU, "_CPUSiLUOperation", CPU_ACT, SW_KACT_SILU,
           "x*sigmoid(x) per element."),
    CPU_OP(SW_OP_SOFTPLUS, "_CPUSoftplusOperation", CPU_ACT, SW_KACT_SOFTPLUS,
           "log1p(exp(-|x|)) + max(x, 0) per element."),
    CPU_OP(SW_OP_ELU, "_CPUELUOperation", CPU_ACT, SW_KACT_ELU,
           "x if x > 0 else expm1(x), per element."),
    CPU_OP(SW_OP_LEAKY_RELU, "_CPULeakyReLUOperation", CPU_ACT,
           SW_KACT_LEAKY_RELU, "x if x >= 0 else 0.01*x, per element."),
    CPU_OP(SW_OP_REDUCE, "_CPUReduceSumOperation", CPU_REDUCE, 0,
           "out[i] = sum over j of tensor[i, j] for a two-mode tensor."),
    CPU_OP(SW_OP_MATMUL, "_CPUMatmulOperation", CPU_MATMUL, 0,
           "out[i, j] = sum over k of lhs[i, k] * rhs[j, k] (lhs @ rhs.T), a "
           "blocked GEMM."),
    CPU_OP(SW_OP_BATCHED_MATMUL, "_CPUBatchedMatmulOperation", CPU_BMATMUL, 0,
           "out[i, j, b] = sum over k of lhs[i, k, b] * rhs[j, k, b], a "
           "batched blocked GEMM."),
};

const sw_native_table sw_cpu_native_table = {"CPU", cpu_table,
                                             sizeof(cpu_entry)};

sw_status sw_cpu_op_new(const sw_op_info *op, sw_op **out) {
    const cpu_entry *e =
        op->id < SW_OP_BUILTIN_COUNT ? &cpu_table[op->id] : NULL;
    if (e && e->native.cls.name) {
        sw_status st = sw_native_op_new(&e->native, sizeof(cpu_state), out);
        if (!st)
            cstate(*out)->entry = e;
        return st;
    }
    if (op->flags & SW_OPF_LAYOUT)
        return sw_shared_op_new_info(op, out);
    return sw_fail(SW_ENOTIMPL, "CPU carrier does not support operation '%s'",
                   op->name);
}
