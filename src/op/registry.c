/*
 * The operation registry (registry.h): the built-in operations' records
 * and the lookups. Backends keep their own per-id tables of kernels and
 * list their classes here through sw_native_ops (op/internal.h).
 */
#include <string.h>

#include "carrier/internal.h"
#include "op/internal.h"
#include "layout/internal.h"
#include "tensor/internal.h"

/* ------------------------------------------------------------- schemas */

#define T_DIFF(n) {n, SW_OPERAND_TENSOR, 1}
#define SCALAR(n) {n, SW_OPERAND_WEAK_SCALAR, 0}
#define STRUCT(n) {n, SW_OPERAND_STRUCTURAL, 0}

static const sw_operand_spec binary_operands[] = {T_DIFF("lhs"), T_DIFF("rhs")};
static const sw_operand_spec scalar_operands[] = {T_DIFF("tensor"),
                                                  SCALAR("scalar")};
static const sw_operand_spec pow_operands[] = {T_DIFF("tensor"),
                                               SCALAR("exponent")};
static const sw_operand_spec unary_operands[] = {T_DIFF("tensor")};
static const sw_operand_spec view_operands[] = {T_DIFF("tensor"),
                                                STRUCT("keys")};
static const sw_operand_spec permute_operands[] = {T_DIFF("tensor"),
                                                   STRUCT("order")};
static const sw_operand_spec rearrange_operands[] = {
    T_DIFF("tensor"), STRUCT("output"), STRUCT("selection")};

#define OPERANDS(a) (int32_t)(sizeof a / sizeof a[0]), a
#define F SW_OPF_FUNCTIONAL

#define BINARY(id, name, title, vop, summary)                                  \
    [id] = {id,                                                                \
            name,                                                              \
            name,                                                              \
            title,                                                             \
            SW_FORM_BINARY,                                                    \
            OPERANDS(binary_operands),                                         \
            F,                                                                 \
            0,                                                                 \
            SW_SAVED_NOTHING,                                                  \
            vop,                                                               \
            summary}
#define UNARY(id, name, title, values, vop, summary)                           \
    [id] = {id, name, name,   title, SW_FORM_UNARY, OPERANDS(unary_operands),  \
            F,  0,    values, vop,   summary}

static const sw_op_info builtins[] = {
    BINARY(SW_OP_ADD, "add", "add", SW_VOP_ADD, "Elementwise lhs + rhs."),
    BINARY(SW_OP_SUB, "sub", "sub", SW_VOP_SUB, "Elementwise lhs - rhs."),
    BINARY(SW_OP_ELEMENTWISE_MUL, "elementwise_mul", "elementwise multiply",
           SW_VOP_MUL, "Elementwise lhs * rhs."),
    BINARY(SW_OP_DIV, "div", "divide", SW_VOP_DIV,
           "Elementwise lhs / rhs (true division; the result is Floating or "
           "Float32)."),
    [SW_OP_MUL] = {SW_OP_MUL, "mul", "mul", "scalar multiply", SW_FORM_SCALAR,
                   OPERANDS(scalar_operands), F, SW_SAVES_OPERANDS,
                   SW_SAVED_NOTHING, SW_VOP_MUL},
    [SW_OP_POW] = {SW_OP_POW, "pow", "pow", "power", SW_FORM_SCALAR,
                   OPERANDS(pow_operands), F, SW_SAVES_OPERANDS,
                   SW_SAVED_NOTHING, SW_VOP_POW},
    UNARY(SW_OP_EXP, "exp", "exp", SW_SAVED_OUTPUTS, SW_VOP_EXP,
          "e ** x per element."),
    UNARY(SW_OP_RELU, "relu", "ReLU", SW_SAVED_NOTHING, SW_VOP_RELU,
          "max(0, x) per element (on host values the host's max, so a negative "
          "float may give an integer 0)."),
    UNARY(SW_OP_SIGMOID, "sigmoid", "sigmoid", SW_SAVED_OUTPUTS, SW_VOP_SIGMOID,
          "The logistic function 1/(1+e**-x), numerically stable."),
    UNARY(SW_OP_TANH, "tanh", "tanh", SW_SAVED_OUTPUTS, SW_VOP_TANH,
          "The hyperbolic tangent per element."),
    UNARY(SW_OP_GELU, "gelu", "GELU", SW_SAVED_NOTHING, SW_VOP_GELU,
          "0.5*x*(1 + erf(x/sqrt(2))), the exact GELU."),
    UNARY(SW_OP_SILU, "silu", "SiLU", SW_SAVED_SIGMOID, SW_VOP_SILU,
          "x*sigmoid(x) per element."),
    UNARY(SW_OP_SOFTPLUS, "softplus", "softplus", SW_SAVED_NOTHING,
          SW_VOP_SOFTPLUS, "log1p(exp(-|x|)) + max(x, 0) per element."),
    UNARY(SW_OP_ELU, "elu", "ELU", SW_SAVED_NOTHING, SW_VOP_ELU,
          "x if x > 0 else expm1(x), per element (alpha 1)."),
    UNARY(SW_OP_LEAKY_RELU, "leaky_relu", "leaky ReLU", SW_SAVED_NOTHING,
          SW_VOP_LEAKY_RELU, "x if x >= 0 else 0.01*x, per element."),
    [SW_OP_REDUCE] = {SW_OP_REDUCE, "reduce", "reduce_sum", "reduce",
                      SW_FORM_REDUCE, OPERANDS(unary_operands), F,
                      SW_SAVES_OUTPUT_LAYOUT, SW_SAVED_NOTHING, SW_VOP_ADD},
    [SW_OP_MATMUL] = {SW_OP_MATMUL, "matmul", "matmul", "matmul",
                      SW_FORM_MATMUL, OPERANDS(binary_operands), F,
                      SW_SAVES_OUTPUT_LAYOUT, SW_SAVED_NOTHING, SW_VOP_MUL},
    [SW_OP_BATCHED_MATMUL] = {SW_OP_BATCHED_MATMUL, "batched_matmul",
                              "batched_matmul", "batched matmul",
                              SW_FORM_MATMUL, OPERANDS(binary_operands), 0,
                              SW_SAVES_OUTPUT_LAYOUT, SW_SAVED_NOTHING,
                              SW_VOP_MUL},
    [SW_OP_VIEW] = {SW_OP_VIEW, "view", "view", "view", SW_FORM_VIEW,
                    OPERANDS(view_operands), F | SW_OPF_LAYOUT,
                    SW_SAVES_MAPPING | SW_SAVES_OUTPUT_LAYOUT, SW_SAVED_NOTHING,
                    (sw_vop)-1},
    [SW_OP_PERMUTE] = {SW_OP_PERMUTE, "permute", "permute", "permute",
                       SW_FORM_PERMUTE, OPERANDS(permute_operands),
                       F | SW_OPF_LAYOUT | SW_OPF_VARIADIC,
                       SW_SAVES_OPERANDS | SW_SAVES_OUTPUT_LAYOUT,
                       SW_SAVED_NOTHING, (sw_vop)-1},
    [SW_OP_REARRANGE] = {SW_OP_REARRANGE, "rearrange", "rearrange", "rearrange",
                         SW_FORM_REARRANGE, OPERANDS(rearrange_operands),
                         F | SW_OPF_LAYOUT | SW_OPF_OPTIONAL,
                         SW_SAVES_OPERANDS | SW_SAVES_OUTPUT_LAYOUT,
                         SW_SAVED_NOTHING, (sw_vop)-1},
};

_Static_assert(sizeof builtins / sizeof builtins[0] == SW_OP_BUILTIN_COUNT,
               "every built-in operation has exactly one record");

/* ------------------------------------------------------------- lookups */

int32_t sw_op_count(void) {
    return SW_OP_BUILTIN_COUNT + sw_def_count();
}

const sw_op_info *sw_op_info_get(int32_t id) {
    if (id >= 0 && id < SW_OP_BUILTIN_COUNT)
        return &builtins[id];
    return sw_def_info_get(id);
}

const sw_op_info *sw_builtin_info_find(const char *name) {
    if (!name)
        return NULL;
    for (int32_t i = 0; i < SW_OP_BUILTIN_COUNT; ++i) {
        const sw_op_info *e = &builtins[i];
        if (e->name[0] == name[0] && strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

const sw_op_info *sw_op_info_find(const char *name) {
    const sw_op_info *e = sw_builtin_info_find(name);
    /* Defined names are namespaced: only a dotted name can be one. */
    return e || !name || !strchr(name, '.') ? e : sw_def_info_find(name);
}

const sw_op_info *sw_op_info_of(const sw_op *op) {
    return op ? op->info : NULL;
}

/* ------------------------------------------------- native operation classes */

static const sw_native_table *const tables[] = {
    &sw_generic_native_table, &sw_shared_native_table, &sw_cpu_native_table};
#define NTABLES (sizeof tables / sizeof tables[0])

static const sw_native_op *entry(const sw_native_table *t, int32_t id) {
    return (const sw_native_op *)(const void *)((const char *)t->entries +
                                                (size_t)id * t->stride);
}

_Static_assert(NTABLES == SW_NATIVE_BACKENDS, "one table per backend");

const sw_native_op *sw_native_op_at(int32_t slot) {
    if (slot < 0 || slot >= SW_NATIVE_OP_SLOTS)
        return NULL;
    const sw_native_op *e =
        entry(tables[slot / SW_OP_BUILTIN_COUNT], slot % SW_OP_BUILTIN_COUNT);
    return e->cls.name ? e : NULL;
}

int32_t sw_native_op_slot(const sw_native_op *n) {
    if (!n)
        return -1;
    for (size_t k = 0; k < NTABLES; ++k) {
        const sw_native_table *t = tables[k];
        /* Addresses as integers: n may lie in no table at all. */
        uintptr_t base = (uintptr_t)t->entries, p = (uintptr_t)n;
        if (p >= base && p < base + SW_OP_BUILTIN_COUNT * t->stride &&
            (p - base) % t->stride == 0)
            return (int32_t)(k * SW_OP_BUILTIN_COUNT) +
                   (int32_t)((p - base) / t->stride);
    }
    return -1;
}

sw_status sw_native_op_make(const sw_native_op *n, sw_op **out) {
    int32_t slot = sw_native_op_slot(n);
    if (slot < 0 || !n->cls.name)
        return sw_fail(SW_EVALUE, "not a native operation class");
    const sw_op_info *info = &builtins[n->op];
    switch (slot / SW_OP_BUILTIN_COUNT) {
    case 0:
        return sw_generic_op_new(info, out);
    case 1:
        return sw_shared_op_new_info(info, out);
    default:
        return sw_cpu_op_new(info, out);
    }
}

const sw_native_op *sw_native_op_of(const sw_op *op) {
    return op ? op->native : NULL;
}

const sw_native_op *sw_native_op_of_class(const sw_op_class *cls) {
    /* The class is the first member of its sw_native_op. */
    const sw_native_op *n = (const sw_native_op *)(const void *)cls;
    return cls && sw_native_op_slot(n) >= 0 ? n : NULL;
}

int sw_op_runs_host_free(const sw_op *op, int32_t nargs, const sw_arg *args,
                         int64_t *work) {
    if (work)
        *work = 0;
    const sw_native_op *n = op ? op->native : NULL;
    if (!n || !(n->flags & SW_NATIVE_HOST_FREE))
        return 0;
    const sw_op_info *info = &builtins[n->op];
    int contraction = info->form == SW_FORM_MATMUL;
    int64_t w = 0;
    for (int32_t i = 0; i < nargs; ++i) {
        if (args[i].kind != SW_ARG_TENSOR)
            continue;
        sw_tensor *t = args[i].as.tensor;
        if (!t || !sw_carrier_is_cpu(t->carrier))
            return 0;
        int64_t size = t->layout->size;
        if (contraction && w > 0) /* m*k times n*k bounds m*n*k */
            w = size > INT64_MAX / w ? INT64_MAX : w * size;
        else if (size > w)
            w = size;
    }
    if (work)
        *work = info->flags & SW_OPF_LAYOUT ? 0 : w;
    return 1;
}
