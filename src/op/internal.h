/* The operation structure, shared by dispatch, the engine and backends. */
#ifndef SW_OP_INTERNAL_H
#define SW_OP_INTERNAL_H

#include "base/internal.h"
#include "strideweave/op.h"
#include "strideweave/registry.h"

#define SW_OP_SMALL_INPUTS 2

struct sw_op {
    sw_object obj;
    const sw_op_class *cls;
    const sw_native_op *native; /* NULL: not a native class */
    const sw_op_info *info;     /* what it was dispatched as, or NULL */
    void *state;
    char *dispatch_name; /* owned; NULL when info names it */
    const void *dispatch_tag;
    int dispatched;
    sw_tensor **inputs; /* small_inputs or an allocation */
    int64_t *versions;  /* small_versions, or with inputs' allocation */
    int32_t ninputs;
    /* The saved inputs of a small call (most are), without an allocation. */
    sw_tensor *small_inputs[SW_OP_SMALL_INPUTS];
    int64_t small_versions[SW_OP_SMALL_INPUTS];
};

/* A fresh operation of class cls with a zeroed state of state_size bytes
 * in the same block (the class's destroy hook must not free it). */
sw_status sw_op_new_block(const sw_op_class *cls, size_t state_size,
                          sw_op **out);

/* Dispatches operation id on t's carrier and runs a recorded forward. */
sw_status sw_dispatch_forward(sw_tensor *t, sw_op_id id, int32_t nargs,
                              const sw_arg *args, sw_tensor **out);

/* Dispatches a registered operation on c (sw_carrier_dispatch_op by
 * number). */
sw_status sw_carrier_dispatch(sw_carrier *c, const sw_op_info *info,
                              sw_op **out);

/* A fresh operation of a native class with a zeroed state of state_size
 * bytes in the same block (the class's destroy hook must not free it). */
sw_status sw_native_op_new(const sw_native_op *n, size_t state_size,
                           sw_op **out);

/*
 * The backends' native classes, each table indexed by sw_op_id (an entry
 * whose class has no name is an operation the backend lacks), and their
 * constructors: a fresh operation for an id, or SW_ENOTIMPL "<Backend>
 * carrier does not support operation '<name>'".
 */
typedef struct sw_native_table {
    const char *backend; /* as in messages: "CPU", "Generic" */
    const void *entries; /* the backend's entry array */
    size_t stride;       /* the size of one entry; sw_native_op first */
} sw_native_table;
extern const sw_native_table sw_cpu_native_table;
extern const sw_native_table sw_generic_native_table;
extern const sw_native_table sw_shared_native_table;

sw_status sw_cpu_op_new(const sw_op_info *op, sw_op **out);
sw_status sw_generic_op_new(const sw_op_info *op, sw_op **out);
sw_status sw_shared_op_new_info(const sw_op_info *op, sw_op **out);

/* What sw_op_plan_resolve(op_id, n, inputs, SW_PLAN_NO_DTYPE, ...) gives
 * for n tensor inputs of dtype when it has that answer memoised already
 * (src/op/policy.c), else NULL: resolve in full then. */
struct sw_op_plan;
const struct sw_op_plan *sw_op_plan_memo(int32_t op_id, int32_t n,
                                         sw_dtype dtype);

/* This thread's grad mode, non-zero while it is off (autograd/grad.c:
 * sw_grad_enabled, sw_set_grad_enabled): read and set directly where a
 * per-call path turns it off around a kernel. */
extern _Thread_local int sw_grad_disabled_tls;

/* Definition-backed kernels (src/carrier/kernel.c, extension.h). */
struct sw_bound_call;
struct sw_resolution;
/* The result layout Generic gives a reduce or a (batched) matmul, with its
 * operand checks. */
sw_status sw_generic_result_layout(const sw_op_info *info, int32_t nargs,
                                   const sw_arg *args, sw_layout **out);
/* A fresh operation running built-in op on a definition-backed carrier's
 * kernels, with the Generic backward. */
sw_status sw_defined_op_new(const sw_op_info *op, sw_op **out);
/* Runs built-in operation info on the kernels of the definition-backed
 * carrier of args[0]: binds and resolves the call (the central plan and
 * one result: the first operand's layout for the unary and scalar forms,
 * the elementwise rule for binary ones, Generic's for reduce and matmul),
 * then sw_kernel_run. scalar (or NULL) receives args[1] once the call is
 * bound. *out is set only on success. */
sw_status sw_kernel_run_builtin(const sw_op_info *info, int32_t nargs,
                                const sw_arg *args, sw_arg *scalar,
                                sw_tensor **out);
/* Fails with SW_ERUNTIME and the message, marked as a broken provider
 * contract (sw_op_contract_failed). */
sw_status sw_contract_fail(const char *fmt, ...) SW_PRINTF(1, 2);

/*
 * The result layout of an elementwise operation on two tensors (owned in
 * *out). Equal layouts give that layout, holes and strides included (the
 * reference's rule). Layouts that differ but have the same top-level
 * extents (rank and each top-level mode's size) name the same logical
 * elements, so the operation is defined: the result takes a's layout when
 * it is compact, else the compact column-major layout of a's shape (its
 * nesting kept). Anything else fails with SW_EVALUE "Tensor layouts must
 * match".
 */
/* The one rule for results of an execution that recorded no node: while
 * grad mode is on, when a tensor argument is a constant
 * (sw_tensor_set_requires_grad), the differentiable leaf results become
 * constants too. (Results of recorded executions are never constants;
 * an argument returned as a result is already what it is, since no
 * argument was differentiable.) */
void sw_constant_results(int32_t nargs, const sw_arg *args, int32_t n,
                         sw_tensor *const *results);

sw_status sw_elementwise_layout(const sw_layout *a, const sw_layout *b,
                                sw_layout **out);

/* The built-in record of a canonical name, or NULL (dispatch and the
 * backends' tables know built-ins only). */
const sw_op_info *sw_builtin_info_find(const char *name);

/* The definitions' part of the registry (definition.c). */
int32_t sw_def_count(void);
const sw_op_info *sw_def_info_get(int32_t id);
const sw_op_info *sw_def_info_find(const char *name);

#endif /* SW_OP_INTERNAL_H */
