/*
 * StrideWeave operations and autograd.
 *
 * An operation is an object with a forward and a backward hook supplied by
 * an sw_op_class vtable; native operations and operations defined in a host
 * language (through a binding) share this one base. sw_op_forward runs the
 * forward hook and records the autograd context; sw_tensor_backward runs
 * the reverse pass over the recorded graph. Operations are dispatched by
 * carriers: sw_carrier_dispatch_op asks the carrier's backend for a fresh
 * operation of a canonical name and tags it with the name and the carrier's
 * class.
 *
 * Ownership: sw_op is reference-counted (sw_op_retain / sw_op_unref). A
 * tensor produced by a recorded forward holds its operation; an operation
 * holds its saved input tensors. The graph is a DAG and lives as long as
 * the tensors that reach it.
 *
 * Grad mode is thread-local and starts enabled on every thread.
 */
#ifndef STRIDEWEAVE_OP_H
#define STRIDEWEAVE_OP_H

#include "strideweave/carrier.h"
#include "strideweave/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_op sw_op;

/* One positional argument of an operation. */
typedef enum sw_arg_kind {
    SW_ARG_NONE = 0,
    SW_ARG_TENSOR = 1, /* as.tensor (borrowed) */
    SW_ARG_F64 = 2,    /* a float scalar */
    SW_ARG_I64 = 3,    /* an integral scalar */
    SW_ARG_BOOL = 4,   /* a boolean scalar (not integral for dtype rules) */
    SW_ARG_HOST = 5,   /* any other host object (borrowed), for bindings */
    SW_ARG_KEYS = 6,   /* as.keys: view keys, one per top-level mode */
    SW_ARG_RECIPE = 7  /* as.recipe: a tree recipe (ids allowed) */
} sw_arg_kind;

/*
 * One mode's key of a view: an integer (SW_VIEW_INDEX) removes the mode,
 * a slice keeps part of it. Slice bounds follow Python's slice.indices:
 * absent bounds mean the ends, negative ones count from the end.
 */
typedef enum sw_view_kind { SW_VIEW_INDEX = 0, SW_VIEW_SLICE = 1 } sw_view_kind;
typedef struct sw_view_key {
    sw_view_kind kind;
    int64_t index;
    int has_start, has_stop, has_step;
    int64_t start, stop, step;
} sw_view_key;

typedef struct sw_arg {
    sw_arg_kind kind;
    union {
        sw_tensor *tensor;
        double f;
        int64_t i;
        void *host;
        struct {
            int32_t n;
            const sw_view_key *keys;
        } keys;
        struct {
            int32_t n; /* n < 0: no recipe (the default) */
            const int32_t *tokens;
        } recipe;
    } as;
} sw_arg;

SW_API sw_arg sw_arg_tensor(sw_tensor *t);
SW_API sw_arg sw_arg_f64(double f);
SW_API sw_arg sw_arg_i64(int64_t i);

/*
 * An operation backend. version must be SW_OP_CLASS_VERSION.
 * forward: computes the result from args (the engine has already saved the
 * inputs when recording). backward: writes one gradient per saved input into
 * grads[0..n) (owned references; NULL for "no gradient"). destroy frees
 * the backend state.
 */
#define SW_OP_CLASS_VERSION 1
typedef struct sw_op_class {
    uint32_t version;
    const char *name;
    sw_status (*forward)(sw_op *op, int32_t nargs, const sw_arg *args,
                         sw_tensor **out);
    sw_status (*backward)(sw_op *op, sw_tensor *gradient, int32_t n,
                          sw_tensor **grads);
    void (*destroy)(sw_op *op);
} sw_op_class;

/* Makes an operation of a backend with its state (owned from now on). */
SW_API sw_status sw_op_new(const sw_op_class *cls, void *state, sw_op **out);
SW_API sw_op *sw_op_retain(sw_op *op);
SW_API void sw_op_unref(sw_op *op);
SW_API void sw_op_set_peer(sw_op *op, void *peer, const sw_peer_hooks *hooks);
SW_API void *sw_op_get_peer(const sw_op *op);
/* The number of references to op now, its peer's included (a snapshot;
 * see base.h). */
SW_API int64_t sw_op_refcount(const sw_op *op);
SW_API const sw_op_class *sw_op_get_class(const sw_op *op);
SW_API void *sw_op_state(const sw_op *op);

/* Dispatch metadata: NULL until dispatched. The carrier tag identifies the
 * exact dispatching carrier class (a backend class, or a binding's type). */
SW_API const char *sw_op_dispatch_name(const sw_op *op);
SW_API const void *sw_op_dispatch_tag(const sw_op *op);

/*
 * Runs the operation and records the autograd context: when grad mode is on
 * and some tensor argument is differentiable, the tensor arguments are
 * saved with their versions, and a differentiable result gets this
 * operation as its context. SW_ETYPE "Operation._forward must return a
 * Tensor" if the hook returned none.
 */
SW_API sw_status sw_op_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                               sw_tensor **out);
/* The same without touching saved inputs or attaching a context. */
SW_API sw_status sw_op_execute_lowered(sw_op *op, int32_t nargs,
                                       const sw_arg *args, sw_tensor **out);
/* Runs the backward hook: n gradients into grads (owned or NULL). */
SW_API sw_status sw_op_backward(sw_op *op, sw_tensor *gradient, int32_t n,
                                sw_tensor **grads);

/* Saved inputs (borrowed) and their versions at forward time. */
SW_API int32_t sw_op_ninputs(const sw_op *op);
SW_API sw_tensor *sw_op_input(const sw_op *op, int32_t i);
SW_API int64_t sw_op_input_version(const sw_op *op, int32_t i);
/* Replaces the saved inputs (versions are kept as they were). */
SW_API sw_status sw_op_store_inputs(sw_op *op, int32_t n,
                                    sw_tensor *const *inputs);
/* SW_ERUNTIME "A tensor needed for gradient computation was modified
 * in-place: expected version X, got version Y". */
SW_API sw_status sw_op_validate_input_versions(const sw_op *op);

/* ------------------------------------------------------------ dispatch */

/*
 * A fresh operation of the given canonical name from carrier c, tagged with
 * the name and c's class. SW_ENOTIMPL "<Name> carrier does not support
 * operation '<name>'" when the backend has none; SW_ETYPE when a backend
 * returns an operation that was dispatched before.
 */
SW_API sw_status sw_carrier_dispatch_op(sw_carrier *c, const char *name,
                                        sw_op **out);

/*
 * The backend's own fresh operation for name (its class's slots),
 * whatever route sw_carrier_set_dispatch gave c, not tagged as
 * dispatched: what a binding's default dispatch hook returns.
 */
SW_API sw_status sw_carrier_backend_op(sw_carrier *c, const char *name,
                                       sw_op **out);

/*
 * Binding support: routes dispatch on carrier c through a host-language
 * factory (for example a Python subclass overriding _dispatch_op). tag is
 * the exact class recorded on dispatched operations.
 */
typedef sw_status (*sw_dispatch_fn)(sw_carrier *c, const char *name, void *ctx,
                                    sw_op **out);
SW_API void sw_carrier_set_dispatch(sw_carrier *c, sw_dispatch_fn fn, void *ctx,
                                    const void *tag);

/*
 * The carrier-neutral layout operations every computing carrier dispatches:
 * "view" (args: tensor, keys), "permute" (tensor, then one SW_ARG_I64 per
 * mode) and "rearrange" (tensor, output recipe, selection recipe). Their
 * results are views of the input's carrier; backward scatters the gradient
 * into fresh storage shaped like the input (zeros elsewhere).
 */
SW_API sw_status sw_shared_op_new(const char *name, sw_op **out);

/*
 * The functional forms: dispatch on the tensor's carrier, then a recorded
 * forward. view: SW_EVALUE 'View keys must include exactly one key per
 * top-level mode', 'View slices do not support steps', 'View slices must be
 * non-empty', 'Only whole slices are supported for non-leaf modes', 'View
 * integer key is out of domain'. permute and rearrange follow
 * sw_layout_permute and sw_layout_rearrange.
 */
SW_API sw_status sw_view(sw_tensor *t, int32_t nkeys, const sw_view_key *keys,
                         sw_tensor **out);
SW_API sw_status sw_permute(sw_tensor *t, int32_t n, const int32_t *order,
                            sw_tensor **out);
SW_API sw_status sw_rearrange(sw_tensor *t, int32_t nout, const int32_t *output,
                              int32_t nsel, const int32_t *selection,
                              sw_tensor **out);

/*
 * Arithmetic, activations and contractions, each dispatched on the (lhs)
 * tensor's carrier and run as a recorded forward. Binary forms require
 * carriers of exactly the same class: SW_ETYPE "Tensor backing carriers must
 * match". sw_mul with a tensor argument is sw_elementwise_mul; sw_neg is
 * sw_mul by -1. sw_unary takes the canonical name of an activation or of
 * "exp".
 */
SW_API sw_status sw_add(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out);
SW_API sw_status sw_sub(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out);
SW_API sw_status sw_elementwise_mul(sw_tensor *lhs, sw_tensor *rhs,
                                    sw_tensor **out);
SW_API sw_status sw_div(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out);
SW_API sw_status sw_matmul(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out);
/*
 * "batched_matmul": out[i, j, b] = sum over k of lhs[i, k, b] * rhs[j, k, b]
 * for three-mode operands (rows, contracted, batch), the batched form of
 * sw_matmul. The result is compact column-major over (lhs mode 0, rhs mode
 * 0, lhs mode 2), nesting kept. SW_EVALUE "lhs must have a three-mode
 * layout" (or rhs), "Matmul inner dimensions must match", "Matmul batch
 * dimensions must match". Used by batched einsum; differentiable.
 */
SW_API sw_status sw_batched_matmul(sw_tensor *lhs, sw_tensor *rhs,
                                   sw_tensor **out);
SW_API sw_status sw_mul(sw_tensor *t, sw_arg scalar, sw_tensor **out);
SW_API sw_status sw_neg(sw_tensor *t, sw_tensor **out);
SW_API sw_status sw_pow(sw_tensor *t, sw_arg exponent, sw_tensor **out);
SW_API sw_status sw_unary(const char *name, sw_tensor *t, sw_tensor **out);
/* out[i] = sum over j of t[i, j] for a two-mode t. */
SW_API sw_status sw_reduce_sum(sw_tensor *t, sw_tensor **out);

/* ------------------------------------------------------------ autograd */

SW_API int sw_grad_enabled(void);
SW_API void sw_set_grad_enabled(int enabled);

/* The operation that produced t (borrowed), or NULL for a leaf. */
SW_API sw_op *sw_tensor_autograd_ctx(const sw_tensor *t);
/* Sets or clears (NULL) the context. SW_ERUNTIME "autograd_ctx is not
 * available for non-differentiable tensors" when setting one on such. */
SW_API sw_status sw_tensor_set_autograd_ctx(sw_tensor *t, sw_op *op);
/*
 * The accumulated gradient (borrowed) or NULL. Reverse passes on several
 * threads may accumulate into one shared tensor at once: every
 * accumulation and every sw_tensor_set_grad is serialised per tensor, so
 * the sum is exact and nothing leaks. The borrowed pointer stays valid
 * until the next sw_tensor_set_grad of t; its values may change under a
 * concurrent pass.
 */
SW_API sw_tensor *sw_tensor_grad(const sw_tensor *t);
SW_API sw_status sw_tensor_set_grad(sw_tensor *t, sw_tensor *grad);
SW_API sw_status sw_tensor_retain_grad(sw_tensor *t, int retain);
SW_API int sw_tensor_retains_grad(const sw_tensor *t);
/*
 * Whether a leaf takes part in autograd (PyTorch's requires_grad; beyond
 * the reference, where every Float32 and Floating tensor does). With 0 the
 * tensor becomes a constant: sw_tensor_is_differentiable reports 0, no
 * gradient is computed for it or accumulated into it (backward passes
 * skip that work), and while grad mode is on, the results of operations
 * whose tensor inputs include a constant and nothing differentiable are
 * constants too. With 1 a constant takes part again. SW_ERUNTIME for a
 * tensor that a recorded operation made ("requires_grad can only be
 * changed on a leaf tensor ...") and for 1 on a tensor of another dtype
 * ("only tensors of a differentiable dtype ... can require gradients").
 */
SW_API sw_status sw_tensor_set_requires_grad(sw_tensor *t, int on);

/*
 * Gradient hooks: fn(t, ctx) runs each time a reverse pass has finished
 * adding into t's .grad (a leaf, or a tensor that retains grad): for a
 * leaf that is when the pass has no further contribution for it, so its
 * gradient is final for that pass (PyTorch's post-accumulate-grad hook).
 * Hooks run in the order they were added, on the thread running the
 * pass, while t's gradient is locked against other passes (a hook may
 * read and write t's .grad, and must not wait for another pass that
 * accumulates into t). A hook that fails stops the pass with its status.
 * *id (may be NULL) receives a handle for sw_tensor_remove_grad_hook,
 * after which fn is never called again for this hook: removal waits for
 * a running call of it. release (may be NULL) runs on ctx when the hook
 * is removed or t is destroyed. SW_ETYPE "grad hook needs a function";
 * not_differentiable's SW_ERUNTIME for tensors that cannot have a grad.
 */
typedef sw_status (*sw_grad_hook_fn)(sw_tensor *t, void *ctx);
SW_API sw_status sw_tensor_add_grad_hook(sw_tensor *t, sw_grad_hook_fn fn,
                                         void *ctx, void (*release)(void *),
                                         int64_t *id);
/* SW_EKEY "no grad hook with this id" when t has none. */
SW_API sw_status sw_tensor_remove_grad_hook(sw_tensor *t, int64_t id);

/*
 * Reverse-mode differentiation from t. gradient may be NULL only for an
 * exact scalar (one flat top-level mode of extent 1). The pass is
 * iterative: discovery counts each distinct differentiable input's
 * consumers, and propagation runs each operation's backward once with the
 * sum of its result's gradients. Leaves and tensors that retain grad
 * accumulate into their .grad.
 */
SW_API sw_status sw_tensor_backward(sw_tensor *t, sw_tensor *gradient);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_OP_H */
