/*
 * StrideWeave operation definitions: operations that users add to the
 * registry at run time.
 *
 * A definition has a namespaced name ("acme.scale"), a schema (operands
 * with their kind and whether gradients flow to them; options, required
 * or with a default) and callbacks: resolve turns a bound call into a
 * resolution (result specs, the plan, mutated and saved operands, a
 * kernel id), reference computes the results on CPU and Generic tensors,
 * and vjp maps cotangents of the results to gradients of the
 * differentiable operands. Each callback receives the definition's ctx.
 *
 * sw_op_define publishes an immutable record under a fresh id (at least
 * SW_OP_BUILTIN_COUNT) that sw_op_info_get and sw_op_info_find see.
 * Definitions are never replaced or removed, so a record stays valid for
 * the life of the process. Defining is thread-safe; lookups take no lock.
 *
 * sw_op_call runs the whole pipeline: bind, resolve, the checks on the
 * resolution, the released-carrier check, the exact-object alias ban,
 * the reference, the checks on its results and, when grad mode is on and
 * a differentiable tensor operand is present, the autograd nodes (one
 * sw_op per result, run by the ordinary reverse pass).
 */
#ifndef STRIDEWEAVE_DEFINITION_H
#define STRIDEWEAVE_DEFINITION_H

#include "strideweave/op.h"
#include "strideweave/policy.h"
#include "strideweave/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds of one definition. */
#define SW_DEF_MAX_OPERANDS 16
#define SW_DEF_MAX_OPTIONS 16
#define SW_DEF_MAX_RESULTS 8
/* The most definitions one process may register. */
#define SW_DEF_MAX_DEFINITIONS 4096

/* An option of a schema: required, or with a default value. */
typedef struct sw_option_spec {
    const char *name;
    int required;         /* non-zero: no default */
    sw_arg default_value; /* when not required; SW_ARG_HOST stays borrowed */
} sw_option_spec;

/* An option given to a call, by name. */
typedef struct sw_named_arg {
    const char *name;
    sw_arg value;
} sw_named_arg;

/*
 * A call bound to its definition's schema: the operands in schema order
 * and every option in schema order, defaults filled in. Tensors and host
 * objects are borrowed from the caller.
 */
typedef struct sw_bound_call {
    int32_t op; /* the definition's id */
    int32_t noperands;
    sw_arg operands[SW_DEF_MAX_OPERANDS];
    int32_t noptions;
    sw_arg options[SW_DEF_MAX_OPTIONS];
} sw_bound_call;

/* One declared result: a fresh allocation, or an operand returned as the
 * identical object (alias_of >= 0). */
typedef struct sw_result_spec {
    sw_dtype dtype;
    sw_layout *layout; /* owned by the resolution */
    int32_t alias_of;  /* -1: fresh */
    double atol, rtol; /* finite, non-negative */
} sw_result_spec;

/*
 * What resolve states about one call. The library reads every field and
 * changes none. token (optional) is an object the resolver wants kept for
 * as long as the call's autograd nodes live (a binding's own invocation
 * object); token_release drops it, on whichever thread frees the last node.
 */
typedef struct sw_resolution {
    sw_op_plan plan; /* plan.op is the definition's id */
    int32_t nresults;
    sw_result_spec results[SW_DEF_MAX_RESULTS];
    int32_t nmutated;
    int32_t mutated[SW_DEF_MAX_OPERANDS];
    int32_t nsaved;
    int32_t saved[SW_DEF_MAX_OPERANDS];
    const char *kernel_id; /* NULL: the definition's name; copied */
    void *token;
    void (*token_release)(void *token);
} sw_resolution;

/*
 * What a VJP sees: the bound call (tensor operands that are neither saved
 * nor differentiable read SW_ARG_NONE), the resolution, the results as
 * detached tensors over the same storage (no autograd context) and the
 * saved operands, in the order of resolution->saved.
 */
typedef struct sw_vjp_context {
    const sw_bound_call *call;
    const sw_resolution *resolution;
    int32_t noutputs;
    sw_tensor *const *outputs;
    int32_t nsaved;
    sw_tensor *const *saved;
} sw_vjp_context;

/* Writes *out (zeroed by the library first; alias_of entries start at -1).
 * On failure the library clears what was written. */
typedef sw_status (*sw_def_resolve_fn)(void *ctx, const sw_bound_call *call,
                                       sw_resolution *out);
/* Writes res->nresults owned results (NULL entries are errors). An
 * aliased result must be the very operand tensor, retained. */
typedef sw_status (*sw_def_reference_fn)(void *ctx, const sw_bound_call *call,
                                         const sw_resolution *res,
                                         sw_tensor **results);
/* cotangents: one per result, NULL where a result got no gradient. grads:
 * one owned tensor or NULL per differentiable operand, in operand order. */
typedef sw_status (*sw_def_vjp_fn)(void *ctx, const sw_vjp_context *vc,
                                   sw_tensor *const *cotangents, int32_t ngrads,
                                   sw_tensor **grads);

#define SW_OP_DEFINITION_VERSION 1

/*
 * A definition to register. The library copies the names and specs; the
 * callbacks and ctx must stay valid for the life of the process.
 * Exactly one of vjp and non_differentiable must be given.
 */
typedef struct sw_op_definition {
    uint32_t version; /* SW_OP_DEFINITION_VERSION */
    const char *name;
    int32_t noperands;
    const sw_operand_spec *operands;
    int32_t noptions;
    const sw_option_spec *options;
    sw_def_resolve_fn resolve;
    sw_def_reference_fn reference; /* optional */
    sw_def_vjp_fn vjp;
    int non_differentiable;
    void *ctx;
} sw_op_definition;

/*
 * Registers def atomically and writes its id. Nothing is registered on
 * failure. Errors: SW_ETYPE for a missing name, schema array or resolve
 * callback, or a wrong version; SW_EVALUE "operation name 'x' must be
 * dot-namespaced identifier segments" (namespaced), "operation namespace
 * 'x' is reserved" (strideweave or a built-in operation's name), "the vjp
 * must be supplied explicitly ...", "operand name ... must be an
 * identifier", "... only a Tensor operand can be differentiable", "the
 * operand list must not be empty", "... names must be unique", "operation
 * 'x' is already defined"; SW_ERUNTIME when SW_DEF_MAX_DEFINITIONS are
 * registered; SW_ENOMEM.
 */
SW_API sw_status sw_op_define(const sw_op_definition *def, int32_t *id);

/* The definition of id as registered (borrowed, immutable), or NULL for a
 * built-in or unknown id. */
SW_API const sw_op_definition *sw_op_definition_get(int32_t id);

/* Non-zero when operand i of definition id takes gradients. */
SW_API int sw_op_definition_operand_differentiable(int32_t id, int32_t i);

/*
 * Binds a call to definition id, checking in this order: the operand
 * count (SW_ETYPE "'x' expects N operands, got M"), the options (SW_ETYPE
 * "'x' got an option 'k' twice", "'x' got an unknown option 'k'",
 * "'x' is missing required option 'k'") and the operand kinds (SW_ETYPE
 * "operand 'a' of 'x' must be a Tensor", "operand 'a' of 'x' must be a
 * weak scalar (a real number), not a Tensor"). Structural operands pass
 * unchanged. SW_EKEY for an id that is not a definition.
 */
SW_API sw_status sw_op_bind(int32_t id, int32_t noperands,
                            const sw_arg *operands, int32_t noptions,
                            const sw_named_arg *options, sw_bound_call *out);

/*
 * Checks a resolution against its call: the plan's operation and operand
 * roles (the call's tensor and weak-scalar operands, in order: SW_EVALUE
 * "... roles ..."), at least one result, each result's dtype and layout,
 * finite non-negative tolerances, aliases on in-range Tensor operands
 * ("out-of-range", "Tensor operands"), mutated and saved indices unique,
 * in range and on Tensor operands, and a non-empty kernel id.
 */
SW_API sw_status sw_resolution_check(const sw_bound_call *call,
                                     const sw_resolution *res);

/* Runs the definition's resolve on call and checks the result; on
 * failure *out holds nothing. */
SW_API sw_status sw_op_resolve(const sw_bound_call *call, sw_resolution *out);

/* Drops the layouts and the token of res (safe on a zeroed one). */
SW_API void sw_resolution_clear(sw_resolution *res);

/*
 * Calls definition id: binds, resolves, then (before any callback) checks
 * that no tensor operand's carrier is released (SW_ERUNTIME "Carrier is
 * released") and applies the exact-object alias ban (SW_EVALUE "... exact-
 * object aliased ..." when grad mode is on, the definition has a VJP, a
 * differentiable tensor operand is present and a result has alias_of).
 * Runs the reference (SW_ENOTIMPL "operation 'x' has no reference") and
 * checks its results: each a tensor (SW_ETYPE "... must be a Tensor"), of
 * the declared dtype and layout, an aliased one the very operand
 * (SW_ERUNTIME "... broke aliasing ..."; these and "returned no results"
 * are contract failures, see sw_op_contract_failed). Then attaches the autograd
 * nodes. Writes *nresults owned tensors into results (room for
 * SW_DEF_MAX_RESULTS). A failing call leaves no node and no result.
 */
SW_API sw_status sw_op_call(int32_t id, int32_t noperands,
                            const sw_arg *operands, int32_t noptions,
                            const sw_named_arg *options, int32_t *nresults,
                            sw_tensor **results);

/* Runs the reference alone on a checked resolution and checks its results
 * as sw_op_call does; no autograd. */
SW_API sw_status sw_op_execute_reference(const sw_bound_call *call,
                                         const sw_resolution *res,
                                         sw_tensor **results);

/*
 * Whether the last failure on this thread was a broken provider contract
 * (a reference that returned no results or broke an alias, a VJP that
 * returned the wrong gradients, a kernel whose results break the rules of
 * sw_kernel_run): bindings raise their contract error for it. The mark
 * belongs to the failure recorded last (sw_errmsg): recording another
 * clears it.
 */
SW_API int sw_op_contract_failed(void);

/* The resolution and operation kept by a definition node (an sw_op made
 * by sw_op_call), or NULL for another operation or after backward freed
 * the node's saved state. Borrowed. */
SW_API const sw_resolution *sw_op_definition_resolution(const sw_op *op);
/* The number of saved operands a definition node keeps now, and one. */
SW_API int32_t sw_op_definition_nsaved(const sw_op *op);
SW_API sw_tensor *sw_op_definition_saved(const sw_op *op, int32_t i);
/* The result index a definition node stands for, or -1. */
SW_API int32_t sw_op_definition_result(const sw_op *op);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_DEFINITION_H */
