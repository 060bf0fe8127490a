/*
 * StrideWeave operation plans: what a built-in computing operation does to
 * the dtypes of its operands.
 *
 * A plan states, for one call shape, each operand's role and dtype and the
 * dtype it is converted to, the arithmetic the kernel computes in, the
 * accumulation of a contraction (with its accumulator dtype) and the
 * output dtype. Plans are plain values: resolving one allocates nothing,
 * takes no lock and writes only the caller's struct, so a binding may
 * resolve a plan per call. Carriers declare what they execute as
 * capabilities of the same shape (capability.h).
 *
 * The dtype families: CPU computes on Float32 and Int32 (never on Bool),
 * Generic on Floating (host doubles) and Any (the host's own objects).
 * Operands of one plan come from one family. In each family the plan
 * follows one rule: the result is the family's exact dtype (Int32, Any)
 * only when every tensor operand is exact and the operation keeps exact
 * values (add, sub, elementwise_mul, matmul, batched_matmul, reduce_sum,
 * relu, mul by an integral scalar, pow by a non-negative whole exponent);
 * otherwise it is the family's floating dtype (Float32, Floating) and
 * exact operands are converted to it.
 */
#ifndef STRIDEWEAVE_POLICY_H
#define STRIDEWEAVE_POLICY_H

#include "strideweave/base.h"
#include "strideweave/carrier.h"
#include "strideweave/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The arithmetic a kernel computes in. */
typedef enum sw_arithmetic {
    SW_ARITH_BINARY32 = 0,            /* IEEE single precision */
    SW_ARITH_BINARY64 = 1,            /* host doubles (Floating) */
    SW_ARITH_INT32_EXACT = 2,         /* int32, no result can overflow */
    SW_ARITH_INT32_EXACT_CHECKED = 3, /* int32, overflow is an error */
    SW_ARITH_HOST = 4 /* the host's own arithmetic on its objects (Any) */
} sw_arithmetic;

#define SW_ARITHMETIC_COUNT 5

/* How a contraction accumulates; SW_ACCUM_NONE is the absence of one. */
typedef enum sw_accumulation {
    SW_ACCUM_FLOATING = 0,
    SW_ACCUM_EXACT_INTEGER = 1,
    SW_ACCUM_HOST = 2,
    SW_ACCUM_NONE = 3 /* not a kind: the operation accumulates nothing */
} sw_accumulation;

#define SW_ACCUMULATION_COUNT 3

/* The role of an operand in a plan. */
typedef enum sw_operand_role {
    SW_ROLE_TENSOR = 0,
    SW_ROLE_WEAK_SCALAR = 1 /* a number that takes the plan's dtype */
} sw_operand_role;

#define SW_OPERAND_ROLE_COUNT 2

/* "No dtype": a weak scalar's storage dtype, a plan's accumulator without
 * accumulation, an accumulator option not given. */
#define SW_PLAN_NO_DTYPE SW_DTYPE_COUNT

/* The most operands of a plan. */
#define SW_PLAN_MAX_OPERANDS 3

/*
 * The names of the enumerators: "binary32", "int32_exact_checked", ...;
 * "floating", "exact_integer", "host" (NULL for SW_ACCUM_NONE);
 * "tensor", "weak_scalar". NULL when out of range.
 */
SW_API const char *sw_arithmetic_name(sw_arithmetic a);
SW_API const char *sw_accumulation_name(sw_accumulation a);
SW_API const char *sw_operand_role_name(sw_operand_role r);

/* --------------------------------------------------------------- inputs */

/* What kind of number a weak scalar is (by its type, not its value). */
typedef enum sw_scalar_kind {
    SW_SCALAR_INTEGRAL = 0, /* an integer, bool excluded */
    SW_SCALAR_REAL = 1,     /* any other number */
    SW_SCALAR_BOOL = 2
} sw_scalar_kind;

#define SW_SCALAR_KIND_COUNT 3

/* Facts about a weak scalar's value (sw_plan_input.traits). */
#define SW_SCALAR_NONNEGATIVE 0x1u /* >= 0 */
#define SW_SCALAR_WHOLE_F32 0x2u   /* as float32: finite and integral */
#define SW_SCALAR_TRAITS 0x3u

/*
 * One operand given to resolution: a tensor by its dtype, or a weak
 * scalar by its kind and traits (CPU's pow decides by the exponent's
 * float32 value, Generic's by its type and sign).
 */
typedef struct sw_plan_input {
    sw_operand_role role;
    sw_dtype dtype;      /* tensors */
    sw_scalar_kind kind; /* weak scalars */
    uint32_t traits;     /* weak scalars: SW_SCALAR_* */
} sw_plan_input;

/* A tensor input of dtype. */
SW_API sw_plan_input sw_plan_tensor(sw_dtype dtype);
/* A weak-scalar input of kind with the given traits. */
SW_API sw_plan_input sw_plan_scalar(sw_scalar_kind kind, uint32_t traits);
/* A weak-scalar input of kind whose value is v (traits computed). */
SW_API sw_plan_input sw_plan_scalar_value(sw_scalar_kind kind, double v);

/* ---------------------------------------------------------------- plans */

typedef struct sw_operand_plan {
    sw_operand_role role;
    sw_dtype dtype;      /* SW_PLAN_NO_DTYPE for a weak scalar */
    sw_dtype convert_to; /* what the kernel reads it as */
} sw_operand_plan;

/*
 * A resolved plan. A plain value: copy it, compare it with
 * sw_op_plan_equal (entries past noperands are zero and not compared).
 */
typedef struct sw_op_plan {
    int32_t op;        /* its sw_op_id */
    int32_t noperands; /* 1 to SW_PLAN_MAX_OPERANDS */
    sw_operand_plan operands[SW_PLAN_MAX_OPERANDS];
    sw_arithmetic compute;
    sw_accumulation accumulation; /* SW_ACCUM_NONE for elementwise ops */
    sw_dtype accumulator;         /* SW_PLAN_NO_DTYPE without accumulation */
    sw_dtype output;
} sw_op_plan;

/* Non-zero when operation id has plans (a built-in computing operation;
 * layout operations, view, permute and rearrange, have none). */
SW_API int sw_op_has_plan(int32_t id);

/* The record whose plan_name is name ("reduce_sum", "add"), or NULL. */
SW_API const sw_op_info *sw_op_info_find_plan(const char *name);

/*
 * Resolves the central plan of built-in operation op_id for n inputs,
 * with accumulator the accumulator_dtype option (SW_PLAN_NO_DTYPE when not
 * given). Writes *out only on success. Allocates nothing. Errors:
 *   SW_EVALUE "unknown operation id N" (not in the registry);
 *   SW_EVALUE "<op> is a layout operation: it has no operation plan";
 *   SW_ETYPE "<op> takes K operands, got N";
 *   SW_EVALUE for a malformed input (a bad role, dtype, kind or traits);
 *   SW_ETYPE "<name> must be a Tensor" where a tensor belongs and
 *     "<name> must be a numerical scalar" where a weak scalar does (mul
 *     also takes its scalar first: mul(3, x));
 *   SW_ETYPE "<name>: CPU operations do not compute on Bool tensors";
 *   SW_ETYPE "<op> has no plan for A and B operands: ..." when tensor
 *     dtypes come from different families;
 *   SW_ETYPE "unknown option 'accumulator_dtype': <op> has no
 *     accumulation" for an accumulator on an elementwise operation;
 *   SW_ETYPE "accumulator_dtype X is not supported ..." for an
 *     accumulator other than the one the plan chooses (or not a dtype).
 */
SW_API sw_status sw_op_plan_resolve(int32_t op_id, int32_t n,
                                    const sw_plan_input *inputs,
                                    sw_dtype accumulator, sw_op_plan *out);

/* Non-zero when a and b agree on every field (operands up to noperands). */
SW_API int sw_op_plan_equal(const sw_op_plan *a, const sw_op_plan *b);

/*
 * Writes the plan's stable description, for messages:
 *   "add with operands (tensor Int32->Int32, tensor Int32->Int32),
 *    int32_exact_checked compute, no accumulation, Int32 output"
 * (with an accumulation: "..., floating accumulation in Float32, ...";
 * a weak scalar reads "weak_scalar->Float32"). Returns the length the full
 * text has (snprintf's rule: truncated, NUL-terminated when size > 0).
 * Fields out of range print as "?"; never fails.
 */
SW_API int64_t sw_op_plan_describe(const sw_op_plan *plan, char *buf,
                                   size_t size);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_POLICY_H */
