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
/* Binds and resolves a built-in operation's call for the kernels: the
 * central plan and one result (same layout for elementwise operations,
 * Generic's for reduce and matmul). *borrowed 1: the result's layout is
 * the first operand's, not retained (the unary and scalar forms; the
 * operand holds it through the call): the caller sets it to NULL before
 * sw_resolution_clear. On failure *res holds nothing. */
sw_status sw_kernel_resolve_builtin(const sw_op_info *info, int32_t nargs,
                                    const sw_arg *args,
                                    struct sw_bound_call *call,
                                    struct sw_resolution *res, int *borrowed);
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
