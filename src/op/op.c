/*
 * Operation objects: forward with autograd recording, lowered execution,
 * saved inputs and their versions, and the dispatch policy of carriers.
 */
#include <string.h>

#include "carrier/internal.h"
#include "op/internal.h"
#include "profile/internal.h"
#include "strideweave/evictable.h"
#include "tensor/internal.h"

/* The constructors initialise their fields directly: clearing the whole
 * value first and then copying it out makes the copy's wide loads wait on
 * the narrower stores (a store-forwarding stall on every argument). */
sw_arg sw_arg_tensor(sw_tensor *t) {
    sw_arg a = {.kind = SW_ARG_TENSOR, .as.tensor = t};
    return a;
}

sw_arg sw_arg_f64(double f) {
    sw_arg a = {.kind = SW_ARG_F64, .as.f = f};
    return a;
}

sw_arg sw_arg_i64(int64_t i) {
    sw_arg a = {.kind = SW_ARG_I64, .as.i = i};
    return a;
}

static void clear_inputs(sw_op *op) {
    for (int32_t i = 0; i < op->ninputs; ++i)
        sw_tensor_unref(op->inputs[i]);
    /* Large sets keep inputs and versions in one allocation. */
    if (op->inputs != op->small_inputs)
        sw_free(op->inputs);
    op->inputs = NULL;
    op->versions = NULL;
    op->ninputs = 0;
}

static void op_destroy(sw_object *o) {
    sw_op *op = (sw_op *)o;
    clear_inputs(op);
    if (op->cls->destroy)
        op->cls->destroy(op);
    sw_free(op->dispatch_name);
    sw_free(op);
}

sw_status sw_op_new(const sw_op_class *cls, void *state, sw_op **out) {
    if (!cls || cls->version != SW_OP_CLASS_VERSION)
        return sw_fail(SW_EVALUE, "operation class is missing or of an "
                                  "unsupported version");
    sw_op *op = sw_malloc(sizeof *op);
    if (!op)
        return sw_oom();
    memset(op, 0, sizeof *op);
    sw_object_init(&op->obj, op_destroy);
    op->cls = cls;
    op->state = state;
    *out = op;
    return SW_OK;
}

sw_status sw_native_op_new(const sw_native_op *n, size_t state_size,
                           sw_op **out) {
    sw_status st = sw_op_new_block(&n->cls, state_size, out);
    if (!st)
        (*out)->native = n;
    return st;
}

sw_status sw_op_new_block(const sw_op_class *cls, size_t state_size,
                          sw_op **out) {
    size_t head = (sizeof(sw_op) + _Alignof(max_align_t) - 1) /
                  _Alignof(max_align_t) * _Alignof(max_align_t);
    sw_op *op = sw_calloc(1, head + state_size);
    if (!op)
        return sw_oom();
    sw_object_init(&op->obj, op_destroy);
    op->cls = cls;
    op->state = state_size ? (char *)op + head : NULL;
    *out = op;
    return SW_OK;
}

sw_op *sw_op_retain(sw_op *op) {
    if (op)
        sw_object_retain(&op->obj);
    return op;
}

void sw_op_unref(sw_op *op) {
    if (op)
        sw_object_unref(&op->obj);
}

void sw_op_set_peer(sw_op *op, void *peer, const sw_peer_hooks *hooks) {
    sw_object_set_peer(&op->obj, peer, hooks);
}

void *sw_op_get_peer(const sw_op *op) {
    return op->obj.peer;
}

int64_t sw_op_refcount(const sw_op *op) {
    return sw_object_refcount(&op->obj);
}

const sw_op_class *sw_op_get_class(const sw_op *op) {
    return op->cls;
}

void *sw_op_state(const sw_op *op) {
    return op->state;
}

const char *sw_op_dispatch_name(const sw_op *op) {
    return op->info ? op->info->name : op->dispatch_name;
}

const void *sw_op_dispatch_tag(const sw_op *op) {
    return op->dispatch_tag;
}

int32_t sw_op_ninputs(const sw_op *op) {
    return op->ninputs;
}

sw_tensor *sw_op_input(const sw_op *op, int32_t i) {
    return i >= 0 && i < op->ninputs ? op->inputs[i] : NULL;
}

int64_t sw_op_input_version(const sw_op *op, int32_t i) {
    return i >= 0 && i < op->ninputs ? op->versions[i] : -1;
}

/*
 * Replaces the saved inputs; versions are taken now when take_versions.
 * The new set is complete before the old one goes, as inputs may hold
 * tensors that only the old set keeps alive.
 */
static sw_status save_inputs(sw_op *op, int32_t n, sw_tensor *const *inputs,
                             int take_versions) {
    sw_tensor *small_in[SW_OP_SMALL_INPUTS];
    int64_t small_ver[SW_OP_SMALL_INPUTS];
    sw_tensor **in = small_in;
    int64_t *ver = small_ver;
    if (n > SW_OP_SMALL_INPUTS) {
        /* One block: the versions after the pointers (both 8 bytes). */
        in = sw_malloc((size_t)n * (sizeof *in + sizeof *ver));
        if (!in)
            return sw_oom();
        ver = (int64_t *)(void *)(in + n);
    }
    for (int32_t i = 0; i < n; ++i) {
        in[i] = sw_tensor_retain(inputs[i]);
        if (take_versions || i >= op->ninputs)
            ver[i] = sw_tensor_version(inputs[i]);
        else
            ver[i] = op->versions[i];
    }
    clear_inputs(op);
    if (n > SW_OP_SMALL_INPUTS) {
        op->inputs = in;
        op->versions = ver;
    } else {
        memcpy(op->small_inputs, small_in, (size_t)n * sizeof *in);
        memcpy(op->small_versions, small_ver, (size_t)n * sizeof *ver);
        op->inputs = op->small_inputs;
        op->versions = op->small_versions;
    }
    op->ninputs = n;
    return SW_OK;
}

sw_status sw_op_store_inputs(sw_op *op, int32_t n, sw_tensor *const *inputs) {
    if (n < 0)
        return sw_fail(SW_EVALUE, "negative input count");
    return save_inputs(op, n, inputs, 0);
}

sw_status sw_op_validate_input_versions(const sw_op *op) {
    for (int32_t i = 0; i < op->ninputs; ++i) {
        int64_t now = sw_tensor_version(op->inputs[i]);
        if (now != op->versions[i])
            return sw_fail(SW_ERUNTIME,
                           "A tensor needed for gradient computation was "
                           "modified in-place: expected version %lld, got "
                           "version %lld",
                           (long long)op->versions[i], (long long)now);
    }
    return SW_OK;
}

static sw_status run_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                             sw_tensor **out) {
    sw_tensor *r = NULL;
    if (!op->cls->forward)
        return sw_fail(SW_ETYPE, "operation class has no forward hook");
    sw_status st = op->cls->forward(op, nargs, args, &r);
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    if (!r)
        return sw_fail(SW_ETYPE, "operation forward produced no tensor");
    *out = r;
    return SW_OK;
}

static sw_status forward_body(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    int store = 0;
    int32_t ntensor = 0;
    for (int32_t i = 0; i < nargs; ++i) {
        if (args[i].kind != SW_ARG_TENSOR)
            continue;
        ++ntensor;
        store |= sw_tensor_is_differentiable(args[i].as.tensor);
    }
    store = store && sw_grad_enabled();
    sw_status st = SW_OK;
    if (store) {
        sw_tensor *small[SW_OP_SMALL_INPUTS];
        sw_tensor **in = small;
        if (ntensor > SW_OP_SMALL_INPUTS &&
            !(in = sw_malloc((size_t)ntensor * sizeof *in)))
            return sw_oom();
        for (int32_t i = 0, k = 0; i < nargs; ++i)
            if (args[i].kind == SW_ARG_TENSOR)
                in[k++] = args[i].as.tensor;
        st = save_inputs(op, ntensor, in, 1);
        if (in != small)
            sw_free(in);
        if (st)
            return st;
    } else {
        clear_inputs(op);
    }
    sw_tensor *r = NULL;
    st = run_forward(op, nargs, args, &r);
    if (st)
        return st;
    if (!store)
        sw_constant_results(nargs, args, 1, &r);
    if (store && sw_tensor_is_differentiable(r)) {
        /* A result that is one of its own inputs would hold itself through
         * the operation; it stays a leaf instead. */
        int self_input = 0;
        for (int32_t i = 0; i < op->ninputs; ++i)
            self_input |= op->inputs[i] == r;
        if (!self_input) {
            sw_op_retain(op);
            sw_op_unref(r->ctx);
            r->ctx = op;
        }
    } else {
        clear_inputs(op);
    }
    *out = r;
    return SW_OK;
}

typedef sw_status (*run_fn)(sw_op *op, int32_t nargs, const sw_arg *args,
                            sw_tensor **out);

/* An execution with a profiler active on this thread: dispatched
 * operations run inside a profiler frame. Kept out of line so that the
 * unprofiled path stays one branch. */
#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static sw_status
run_profiled(run_fn body, sw_op *op, int32_t nargs, const sw_arg *args,
             sw_tensor **out) {
    sw_profile_frame frame;
    if (!op->dispatched || !sw_profile_begin(op, nargs, args, &frame))
        return body(op, nargs, args, out);
    sw_status st = body(op, nargs, args, out);
    sw_profile_end(&frame, st == SW_OK);
    return st;
}

/*
 * The pins of one execution: every carrier of the tensors an operation
 * reads, held while it runs (see sw_carrier_pin). A released carrier is
 * not pinned: release is permanent, so the operation sees it released
 * and refuses it with its own message.
 */
typedef struct pin_set {
    sw_carrier *small[8];
    sw_carrier **pinned;
    int32_t n;
    int multi; /* a tensor has several subtensors */
} pin_set;

static sw_status pins_take(pin_set *p, int32_t count, sw_tensor *const *ts,
                           const sw_arg *args) {
    p->pinned = p->small;
    p->n = 0;
    p->multi = 0;
    if (count > (int32_t)(sizeof p->small / sizeof p->small[0])) {
        p->pinned = sw_malloc((size_t)count * sizeof *p->pinned);
        if (!p->pinned)
            return sw_oom();
    }
    for (int32_t i = 0; i < count; ++i) {
        sw_tensor *t = ts                              ? ts[i]
                       : args[i].kind == SW_ARG_TENSOR ? args[i].as.tensor
                                                       : NULL;
        if (!t)
            continue;
        p->multi |= t->planes != NULL;
        if (sw_carrier_pin(t->carrier) == SW_OK)
            p->pinned[p->n++] = t->carrier;
    }
    return SW_OK;
}

static int takes_multi(const sw_op *op) {
    return op && op->native && (op->native->flags & SW_NATIVE_MULTI_VIEW);
}

/*
 * The gate of operations (see sw_tensor_require_single): only the pure
 * views of the leading level take multi-subtensor operands; an
 * EvictableOperation over one refuses them where it lowers them.
 */
#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static sw_status
gate_operands(const sw_op *op, int32_t nargs, const sw_arg *args) {
    if (takes_multi(op) || takes_multi(sw_evictable_op_primary(op)))
        return SW_OK;
    return sw_args_single(nargs, args, SW_ENTRY_OPERATION);
}

static void pins_drop(pin_set *p) {
    for (int32_t i = 0; i < p->n; ++i)
        sw_carrier_unpin(p->pinned[i]);
    if (p->pinned != p->small)
        sw_free(p->pinned);
}

static sw_status run_pinned(run_fn body, sw_op *op, int32_t nargs,
                            const sw_arg *args, sw_tensor **out) {
    pin_set pins;
    sw_status st = pins_take(&pins, nargs, NULL, args);
    if (st)
        return st;
    if (SW_UNLIKELY(pins.multi) && (st = gate_operands(op, nargs, args))) {
        pins_drop(&pins);
        return st;
    }
    if (SW_UNLIKELY(sw_profile_tls != NULL))
        st = run_profiled(body, op, nargs, args, out);
    else
        st = body(op, nargs, args, out);
    pins_drop(&pins);
    return st;
}

sw_status sw_op_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                        sw_tensor **out) {
    return run_pinned(forward_body, op, nargs, args, out);
}

sw_status sw_op_execute_lowered(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    return run_pinned(run_forward, op, nargs, args, out);
}

sw_status sw_op_backward(sw_op *op, sw_tensor *gradient, int32_t n,
                         sw_tensor **grads) {
    for (int32_t i = 0; i < n; ++i)
        grads[i] = NULL;
    if (!op->cls->backward)
        return sw_fail(SW_ERUNTIME, "Tried to call pure virtual function "
                                    "\"Operation::backward\"");
    /* The saved inputs and the gradient stay readable for the hook. */
    pin_set pins, gpin;
    sw_status st = pins_take(&pins, op->ninputs, op->inputs, NULL);
    if (st)
        return st;
    st = pins_take(&gpin, gradient ? 1 : 0, &gradient, NULL);
    if (st) {
        pins_drop(&pins);
        return st;
    }
    sw_profile_frame frame;
    int profiled = SW_UNLIKELY(sw_profile_tls != NULL) &&
                   sw_profile_backward_begin(op, gradient, &frame);
    st = op->cls->backward(op, gradient, n, grads);
    if (profiled)
        sw_profile_end(&frame, st == SW_OK);
    pins_drop(&gpin);
    pins_drop(&pins);
    if (st) {
        for (int32_t i = 0; i < n; ++i) {
            sw_tensor_unref(grads[i]);
            grads[i] = NULL;
        }
    }
    return st;
}

/* ---------------------------------------------------------------- dispatch */

void sw_carrier_set_dispatch(sw_carrier *c, sw_dispatch_fn fn, void *ctx,
                             const void *tag) {
    c->dispatch_fn = fn;
    c->dispatch_ctx = ctx;
    c->dispatch_tag = tag;
}

/* A class's slot of a given version, or NULL when the class predates it. */
#define SLOT(cls, v, slot) ((cls)->version >= (v) ? (cls)->slot : NULL)

/*
 * The one dispatch path: info is the registry's record of name, or NULL
 * for a name it does not know (which only host dispatch and a class's
 * dispatch_op slot may serve).
 */
static sw_status backend_op(sw_carrier *c, const sw_op_info *info,
                            const char *name, sw_op **out) {
    const sw_carrier_class *cls = c->cls;
    if (info && SLOT(cls, 3, dispatch))
        return cls->dispatch(c, info, out);
    if (cls->dispatch_op)
        return cls->dispatch_op(c, name, out);
    if (SLOT(cls, 3, dispatch))
        return sw_fail(SW_ENOTIMPL,
                       "%s carrier does not support operation '%s'", cls->name,
                       name);
    return sw_fail(SW_ENOTIMPL, "Carrier class does not support operation '%s'",
                   name);
}

sw_status sw_carrier_backend_op(sw_carrier *c, const char *name, sw_op **out) {
    if (!name)
        return sw_fail(SW_ETYPE, "operation name must be a string");
    *out = NULL;
    return backend_op(c, sw_builtin_info_find(name), name, out);
}

static sw_status dispatch(sw_carrier *c, const sw_op_info *info,
                          const char *name, sw_op **out) {
    sw_op *op = NULL;
    sw_status st;
    const sw_carrier_class *cls = c->cls;
    if (c->dispatch_fn)
        st = c->dispatch_fn(c, name, c->dispatch_ctx, &op);
    else
        st = backend_op(c, info, name, &op);
    if (st)
        return st;
    if (!op)
        return sw_fail(SW_ETYPE, "carrier dispatch produced no operation");
    if (op->dispatched) {
        sw_op_unref(op);
        return sw_fail(SW_ETYPE, "carrier dispatch returned an operation "
                                 "that was dispatched before");
    }
    if (!info) {
        size_t n = strlen(name) + 1;
        op->dispatch_name = sw_malloc(n);
        if (!op->dispatch_name) {
            sw_op_unref(op);
            return sw_oom();
        }
        memcpy(op->dispatch_name, name, n);
    }
    op->dispatched = 1;
    op->info = info;
    op->dispatch_tag = c->dispatch_tag ? c->dispatch_tag : (const void *)cls;
    *out = op;
    return SW_OK;
}

sw_status sw_carrier_dispatch(sw_carrier *c, const sw_op_info *info,
                              sw_op **out) {
    return dispatch(c, info, info->name, out);
}

sw_status sw_carrier_dispatch_id(sw_carrier *c, int32_t id, sw_op **out) {
    const sw_op_info *info = sw_op_info_get(id);
    if (!info)
        return sw_fail(SW_EVALUE, "unknown operation number %d", (int)id);
    return dispatch(c, info, info->name, out);
}

sw_status sw_carrier_dispatch_op(sw_carrier *c, const char *name, sw_op **out) {
    if (!name)
        return sw_fail(SW_ETYPE, "operation name must be a string");
    return dispatch(c, sw_builtin_info_find(name), name, out);
}
