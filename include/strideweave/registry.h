/*
 * StrideWeave's operation registry: the one list of operations.
 *
 * Every built-in operation has a number (sw_op_id) and an immutable info
 * record: its canonical name, its schema (operands with their kind and
 * whether they are differentiable), the shape of its arguments, what its
 * autograd context keeps and its flags. Carriers dispatch by number; the
 * name is for lookup and messages. The registry is the only place that
 * lists operations: backends, the functional forms and bindings loop over
 * it.
 *
 * Every native operation class (the CPU, Generic and shared layout
 * backends) is listed too, with the operation it implements, its backend
 * and whether it runs without host callbacks, so a binding learns from
 * data, not from a table of its own, what a class is and when it may run
 * without holding the host language's locks.
 *
 * The built-in records are static and immutable: lookups need no lock and
 * never fail on memory. Operations defined at run time (definition.h)
 * follow them, numbered from SW_OP_BUILTIN_COUNT, in an append-only table
 * whose lookups take no lock either.
 */
#ifndef STRIDEWEAVE_REGISTRY_H
#define STRIDEWEAVE_REGISTRY_H

#include "strideweave/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The built-in operations, numbered from 0 in registry order. */
typedef enum sw_op_id {
    SW_OP_ADD = 0,
    SW_OP_SUB,
    SW_OP_ELEMENTWISE_MUL,
    SW_OP_DIV,
    SW_OP_MUL, /* tensor by a weak scalar */
    SW_OP_POW, /* tensor to a weak-scalar exponent */
    SW_OP_EXP,
    SW_OP_RELU,
    SW_OP_SIGMOID,
    SW_OP_TANH,
    SW_OP_GELU,
    SW_OP_SILU,
    SW_OP_SOFTPLUS,
    SW_OP_ELU,
    SW_OP_LEAKY_RELU,
    SW_OP_REDUCE, /* the sum over mode 1 of a two-mode tensor */
    SW_OP_MATMUL,
    SW_OP_BATCHED_MATMUL,
    SW_OP_VIEW,
    SW_OP_PERMUTE,
    SW_OP_REARRANGE,
    SW_OP_BUILTIN_COUNT
} sw_op_id;

/* What an operand is (the kinds of operation definitions). */
typedef enum sw_operand_kind {
    SW_OPERAND_TENSOR = 0,      /* a tensor */
    SW_OPERAND_WEAK_SCALAR = 1, /* a number that takes the tensor's dtype */
    SW_OPERAND_STRUCTURAL = 2   /* view keys, a mode order, a recipe */
} sw_operand_kind;

typedef struct sw_operand_spec {
    const char *name; /* also the key under which a context keeps it */
    sw_operand_kind kind;
    int differentiable; /* tensors only: gradients flow to it */
} sw_operand_spec;

/*
 * The shape of a call's arguments, which decides how a binding converts
 * them and which result layout the operation has.
 */
typedef enum sw_op_form {
    SW_FORM_BINARY = 0,    /* (lhs, rhs): two tensors of one layout */
    SW_FORM_SCALAR = 1,    /* (tensor, scalar) */
    SW_FORM_UNARY = 2,     /* (tensor) */
    SW_FORM_REDUCE = 3,    /* (tensor): two modes in, one out */
    SW_FORM_MATMUL = 4,    /* (lhs, rhs): a contraction */
    SW_FORM_VIEW = 5,      /* (tensor, keys) */
    SW_FORM_PERMUTE = 6,   /* (tensor, order...) */
    SW_FORM_REARRANGE = 7, /* (tensor, output, selection) */
    SW_FORM_DEFINED = 8 /* a user definition: its schema says (definition.h) */
} sw_op_form;

/* sw_op_info.flags */
#define SW_OPF_LAYOUT 0x1u     /* the result is a view of the input */
#define SW_OPF_VARIADIC 0x2u   /* the last operand repeats (permute) */
#define SW_OPF_OPTIONAL 0x4u   /* the last operand may be omitted */
#define SW_OPF_FUNCTIONAL 0x8u /* has a functional form of its name */

/*
 * What an operation's autograd context keeps beside its saved inputs
 * (sw_op_info.saves). Bindings expose these as the context's values.
 */
#define SW_SAVES_OPERANDS 0x1u      /* non-tensor operands, by name */
#define SW_SAVES_OUTPUT_LAYOUT 0x2u /* the result's layout */
#define SW_SAVES_MAPPING 0x4u       /* a view's layout and offset delta */

/*
 * What a reference (host-value) backend keeps per element for the
 * backward pass of a unary operation: nothing, its outputs, or the
 * sigmoid of its inputs.
 */
typedef enum sw_saved_values {
    SW_SAVED_NOTHING = 0,
    SW_SAVED_OUTPUTS = 1,
    SW_SAVED_SIGMOID = 2
} sw_saved_values;

typedef struct sw_op_info {
    int32_t id;            /* its sw_op_id */
    const char *name;      /* the canonical name dispatched: "reduce" */
    const char *plan_name; /* its name in plans: "reduce_sum" */
    const char *title;     /* in messages: "scalar multiply", "ReLU" */
    sw_op_form form;
    int32_t noperands;
    const sw_operand_spec *operands;
    uint32_t flags;         /* SW_OPF_* */
    uint32_t saves;         /* SW_SAVES_* */
    sw_saved_values values; /* SW_FORM_UNARY on host-value backends */
    sw_vop vop;             /* the value operation, or -1 */
    /* What it computes, one sentence for documentation (elementwise and
     * activation operations; NULL for the others). */
    const char *summary;
} sw_op_info;

/* The number of registered operations (the built-ins come first, then
 * the definitions of definition.h in the order they were made). */
SW_API int32_t sw_op_count(void);
/* The record of operation id, or NULL when there is none. A definition's
 * record is published once and never changes or goes away. */
SW_API const sw_op_info *sw_op_info_get(int32_t id);
/* The record of a canonical name (a built-in's or a definition's), or
 * NULL. */
SW_API const sw_op_info *sw_op_info_find(const char *name);
/* The record of the operation op was dispatched as, or NULL (an
 * operation made by a binding under a name of its own). */
SW_API const sw_op_info *sw_op_info_of(const sw_op *op);

/*
 * sw_carrier_dispatch_op (op.h) by number: a fresh operation of built-in
 * operation id from carrier c, tagged with its canonical name and c's
 * class, without looking the name up. The same operation, errors and
 * messages as dispatching the name; SW_EVALUE "unknown operation number
 * <id>" for an id that names no record.
 */
SW_API sw_status sw_carrier_dispatch_id(sw_carrier *c, int32_t id, sw_op **out);

/* ------------------------------------------------- native operation classes */

/* sw_native_op.flags */
#define SW_NATIVE_HOST_FREE 0x1u   /* no host callback on native storage */
#define SW_NATIVE_F32_SCALARS 0x2u /* computes weak scalars as float32 */
/* a pure view that takes multi-subtensor tensors (representation.h) */
#define SW_NATIVE_MULTI_VIEW 0x4u

typedef struct sw_native_op {
    sw_op_class cls;     /* cls.name is the class name */
    int32_t op;          /* the sw_op_id it implements */
    const char *backend; /* "cpu", "generic" or "shared" */
    const char *summary; /* one sentence for documentation */
    uint32_t flags;      /* SW_NATIVE_* */
} sw_native_op;

/*
 * The classes live in numbered slots, one per (backend, operation) pair:
 * slot b * SW_OP_BUILTIN_COUNT + id for the b-th backend. A slot whose
 * backend lacks the operation is empty.
 */
#define SW_NATIVE_BACKENDS 3
#define SW_NATIVE_OP_SLOTS (SW_NATIVE_BACKENDS * SW_OP_BUILTIN_COUNT)

/* The class in slot i, or NULL for an empty or out-of-range slot. */
SW_API const sw_native_op *sw_native_op_at(int32_t slot);
/* The slot of class n, or -1 when n is not one of the library's. */
SW_API int32_t sw_native_op_slot(const sw_native_op *n);
/* The class of op, or NULL for an operation of another class. O(1). */
SW_API const sw_native_op *sw_native_op_of(const sw_op *op);
/* The native class whose sw_op_class is cls, or NULL. */
SW_API const sw_native_op *sw_native_op_of_class(const sw_op_class *cls);
/* A fresh, undispatched operation of class n. */
SW_API sw_status sw_native_op_make(const sw_native_op *n, sw_op **out);

/*
 * Whether running op on args calls no host callback (a SW_NATIVE_HOST_FREE
 * class whose tensor arguments all live on carriers with native storage),
 * so a binding may run it without its interpreter lock. *work (optional)
 * receives a bound on the elements of work the call does (the product of
 * the operand sizes for a contraction, 0 for a layout operation, which
 * touches no element, the largest operand otherwise).
 */
SW_API int sw_op_runs_host_free(const sw_op *op, int32_t nargs,
                                const sw_arg *args, int64_t *work);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_REGISTRY_H */
