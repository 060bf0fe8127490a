/*
 * Evictable: a carrier over two owned tiers, its residency transitions,
 * and the EvictableOperation adapter (see strideweave/evictable.h).
 *
 * The hierarchy keeps each current tier with the ownership token it
 * claimed. Every write to a tier happens inside owner access, so the
 * base's ownership guard keeps refusing everybody else. A transition
 * builds the replacement tier aside, moves the values with the registry's
 * move class by lowered execution, and swaps the replacement in only when
 * the move has succeeded; on failure the replacement is disposed of and
 * the hierarchy is untouched.
 */
#include <stdio.h>
#include <string.h>

#include "carrier/internal.h"
#include "strideweave/blockdev.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "strideweave/capability.h"
#include "strideweave/evictable.h"
#include "strideweave/extension.h"
#include "strideweave/interop.h"
#include "strideweave/opencl.h"
#include "tensor/internal.h"

typedef struct ev_state {
    sw_carrier *primary, *secondary; /* counted references */
    int64_t primary_token, secondary_token;
    int64_t size;
    int mutable_;
    int evicted;
    /* The capability snapshot, made at the first query (capability.c). */
    sw_snapshot_slot caps;
} ev_state;

static const sw_carrier_class evictable_class;

static ev_state *ev(const sw_carrier *c) {
    return (ev_state *)c->state;
}

int sw_carrier_is_evictable(const sw_carrier *c) {
    return c && c->cls == &evictable_class;
}

const sw_carrier_class *sw_evictable_class(void) {
    return &evictable_class;
}

sw_snapshot_slot *sw_evictable_caps_slot(sw_carrier *c) {
    if (!sw_carrier_is_evictable(c))
        return NULL;
    return &ev(c)->caps;
}

sw_carrier *sw_evictable_primary(const sw_carrier *c) {
    return sw_carrier_is_evictable(c) ? ev(c)->primary : NULL;
}

sw_carrier *sw_evictable_secondary(const sw_carrier *c) {
    return sw_carrier_is_evictable(c) ? ev(c)->secondary : NULL;
}

int sw_evictable_is_evicted(const sw_carrier *c) {
    return sw_carrier_is_evictable(c) && ev(c)->evicted;
}

static sw_status fail_evicted(void) {
    return sw_fail(SW_ERUNTIME,
                   "Evictable carrier is evicted; call promote() first");
}

/* Released, then evicted: the state every value access needs. */
static sw_status check_promoted(const sw_carrier *c) {
    if (sw_carrier_is_released(c))
        return sw_carrier_fail_released();
    if (ev(c)->evicted)
        return fail_evicted();
    return SW_OK;
}

/* ------------------------------------------------------ saved failures */

/* The calling thread's failure, kept across cleanup that may fail too. */
typedef struct ev_error {
    sw_status status;
    int err;
    char msg[512];
} ev_error;

static void save_error(ev_error *e, sw_status st) {
    e->status = st;
    e->err = sw_errno();
    snprintf(e->msg, sizeof e->msg, "%s", sw_errmsg());
}

static sw_status restore_error(const ev_error *e) {
    if (e->status == SW_EOS && e->err) {
        /* sw_fail_os appends ": <strerror>"; strip the saved copy. */
        const char *cut = strrchr(e->msg, ':');
        int n = cut ? (int)(cut - e->msg) : (int)strlen(e->msg);
        return sw_fail_os(e->err, "%.*s", n, e->msg);
    }
    return sw_fail(e->status, "%s", e->msg);
}

/* ------------------------------------------------------------ tiers */

/* Releases a tier this hierarchy owns, under owner access. */
static void release_tier(sw_carrier *tier, int64_t token) {
    if (sw_carrier_is_released(tier))
        return;
    if (sw_carrier_begin_owner_access(tier, token) == SW_OK) {
        (void)sw_carrier_release_storage(tier);
        (void)sw_carrier_end_owner_access(tier, token);
    }
}

/* Gives up a tier: relinquishes its ownership if still ours, drops the
 * reference. */
static void drop_tier(sw_carrier *tier, int64_t token) {
    if (!tier)
        return;
    if (tier->owner_token == token)
        (void)sw_carrier_relinquish(tier, token);
    sw_carrier_unref(tier);
}

/* Disposes of a replacement tier that was never published. */
static void dispose_tier(sw_carrier *tier, int64_t token) {
    release_tier(tier, token);
    drop_tier(tier, token);
}

/* The move class of a pair must exist and accept it (its pins). */
static sw_status check_route(const sw_carrier *sc, const sw_carrier *dc) {
    const sw_move_class *cls = NULL;
    sw_status st = sw_move_resolve(sc, dc, &cls);
    if (st)
        return st;
    sw_move_key src = sw_move_key_of(sc), dst = sw_move_key_of(dc);
    /* A device tier moves only through exact bulk routes: element by
     * element, every slot would be a device round trip. */
    if (cls == sw_move_elementwise() &&
        (sw_carrier_is_opencl(sc) || sw_carrier_is_opencl(dc)))
        return sw_fail(SW_ERUNTIME,
                       "an OpenCL Evictable tier needs an exact registered "
                       "move operation for (%s, %s)",
                       src.name ? src.name : "?", dst.name ? dst.name : "?");
    if (cls->source_pin.id && cls->source_pin.id != src.id)
        return sw_fail(SW_ETYPE, "%s requires a %s source", cls->name,
                       cls->source_pin.name ? cls->source_pin.name : "?");
    if (cls->destination_pin.id && cls->destination_pin.id != dst.id)
        return sw_fail(SW_ETYPE, "%s requires a %s destination", cls->name,
                       cls->destination_pin.name ? cls->destination_pin.name
                                                 : "?");
    return SW_OK;
}

/*
 * Moves the whole of src (a flat view of size elements) into dst with the
 * registry's class for the exact pair, by lowered execution, inside owner
 * access to both. The move releases src once the copy has succeeded.
 */
static sw_status transfer(sw_carrier *src, int64_t src_token, sw_carrier *dst,
                          int64_t dst_token, int64_t size) {
    sw_layout *flat = NULL;
    sw_tensor *t = NULL, *r = NULL;
    sw_op *op = NULL;
    sw_status st = sw_layout_leaf(size, 1, &flat);
    if (!st)
        st = sw_tensor_new(src, 0, flat, &t);
    if (!st)
        st = sw_move_op_new(sw_move_dispatch_carriers(src, dst), &op);
    if (!st)
        st = sw_carrier_begin_owner_access(src, src_token);
    if (!st) {
        st = sw_carrier_begin_owner_access(dst, dst_token);
        if (!st) {
            st = sw_move_op_execute_lowered(op, t, dst, &r);
            (void)sw_carrier_end_owner_access(dst, dst_token);
        }
        (void)sw_carrier_end_owner_access(src, src_token);
    }
    if (!st && r->carrier != dst)
        st = sw_fail(SW_ERUNTIME,
                     "move operation did not return its destination carrier");
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_op_unref(op);
    sw_layout_unref(flat);
    return st;
}

/* A fresh tier from like's allocate_like, claimed. */
static sw_status fresh_tier(sw_carrier *like, int64_t size, sw_dtype dtype,
                            int empty, sw_carrier **out, int64_t *token) {
    sw_carrier *c = NULL;
    sw_status st = sw_carrier_allocate_like(like, size, 1, dtype, empty, &c);
    if (!st)
        st = sw_carrier_claim(c, token);
    if (st) {
        sw_carrier_unref(c);
        return st;
    }
    *out = c;
    return SW_OK;
}

/* The guard of both transitions. */
static sw_status check_transition(sw_carrier *c) {
    if (!sw_carrier_is_evictable(c))
        return sw_fail(SW_ETYPE, "carrier is not an Evictable carrier");
    if (sw_carrier_has_owner(c) && !sw_carrier_has_owner_access(c))
        return sw_fail(SW_ERUNTIME, "Evictable carrier is owned by another "
                                    "carrier and cannot be modified "
                                    "directly");
    if (sw_carrier_is_released(c))
        return sw_carrier_fail_released();
    /* A transition already running (re-entered from a move hook). */
    return sw_carrier_check_move(c);
}

/*
 * transfer() for a transition of c: for its duration c counts as taking
 * part in a move with no thread allowed to change it, so a move hook
 * cannot write, release or transition the hierarchy under the move.
 */
static sw_status transition_transfer(sw_carrier *c, sw_carrier *src,
                                     int64_t src_token, sw_carrier *dst,
                                     int64_t dst_token) {
    sw_carrier_move_mark(c, 1);
    sw_status st = transfer(src, src_token, dst, dst_token, ev(c)->size);
    sw_carrier_move_mark(c, -1);
    return st;
}

sw_status sw_evictable_evict(sw_carrier *c) {
    sw_status st = check_transition(c);
    if (st || ev(c)->evicted)
        return st;
    ev_state *s = ev(c);
    sw_carrier *dst = s->secondary;
    int64_t token = s->secondary_token;
    int fresh = sw_carrier_is_released(dst) || sw_carrier_size(dst) < s->size;
    if (fresh) {
        st = fresh_tier(s->secondary, s->size, c->dtype, 0, &dst, &token);
        if (st)
            return st;
    }
    st = transition_transfer(c, s->primary, s->primary_token, dst, token);
    if (st) {
        if (fresh) {
            ev_error e;
            save_error(&e, st);
            dispose_tier(dst, token);
            st = restore_error(&e);
        }
        return st;
    }
    if (fresh) {
        /* The replaced secondary goes for good. */
        dispose_tier(s->secondary, s->secondary_token);
        s->secondary = dst;
        s->secondary_token = token;
    }
    s->evicted = 1;
    return SW_OK;
}

sw_status sw_evictable_promote(sw_carrier *c) {
    sw_status st = check_transition(c);
    if (st || !ev(c)->evicted)
        return st;
    ev_state *s = ev(c);
    sw_carrier *dst = NULL;
    int64_t token = 0;
    /* The move writes every element, so the storage may start empty. */
    st = fresh_tier(s->primary, s->size, c->dtype, 1, &dst, &token);
    if (st)
        return st;
    st = transition_transfer(c, s->secondary, s->secondary_token, dst, token);
    if (st) {
        ev_error e;
        save_error(&e, st);
        dispose_tier(dst, token);
        return restore_error(&e);
    }
    /* The old primary was released by the eviction. */
    drop_tier(s->primary, s->primary_token);
    s->primary = dst;
    s->primary_token = token;
    s->evicted = 0;
    return SW_OK;
}

/* ------------------------------------------------------------- slots */

static int64_t ev_size(sw_carrier *c) {
    return ev(c)->size;
}

static sw_status ev_get(sw_carrier *c, int64_t i, sw_value *out) {
    if (ev(c)->evicted)
        return fail_evicted();
    return sw_carrier_get(ev(c)->primary, i, out);
}

static sw_status ev_set(sw_carrier *c, int64_t i, const sw_value *v) {
    ev_state *s = ev(c);
    if (s->evicted)
        return fail_evicted();
    sw_status st = sw_carrier_begin_owner_access(s->primary, s->primary_token);
    if (st)
        return st;
    st = sw_carrier_set(s->primary, i, v);
    (void)sw_carrier_end_owner_access(s->primary, s->primary_token);
    return st;
}

static int ev_is_mutable(sw_carrier *c) {
    return ev(c)->mutable_;
}

static void ev_release(sw_carrier *c) {
    /* The base also calls this slot when the last reference goes; the
     * tiers then stay live and are only given back (ev_destroy). */
    if (atomic_load(&c->obj.ref) == 0)
        return;
    ev_state *s = ev(c);
    release_tier(s->primary, s->primary_token);
    release_tier(s->secondary, s->secondary_token);
}

static void ev_destroy(sw_carrier *c) {
    ev_state *s = ev(c);
    drop_tier(s->primary, s->primary_token);
    drop_tier(s->secondary, s->secondary_token);
    sw_capability_snapshot_free(atomic_load(&s->caps));
    sw_free(s);
}

/* A hierarchy over a fresh primary and an empty secondary like c's. */
static sw_status wrap_fresh(sw_carrier *primary, sw_carrier *secondary_like,
                            sw_carrier **out) {
    sw_carrier *lazy = NULL;
    sw_status st = sw_carrier_allocate_like(
        secondary_like, 0, 1, sw_carrier_dtype(primary), 0, &lazy);
    if (!st)
        st = sw_evictable_new(primary, lazy, out);
    sw_carrier_unref(lazy);
    return st;
}

static sw_status ev_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                  sw_dtype dtype, int empty, sw_carrier **out) {
    sw_carrier *p = NULL;
    sw_status st = sw_carrier_allocate_like(ev(c)->primary, size, mutable_,
                                            dtype, empty, &p);
    if (!st)
        st = wrap_fresh(p, ev(c)->secondary, out);
    sw_carrier_unref(p);
    return st;
}

static sw_status ev_new_like(sw_carrier *c, int64_t n, const sw_value *values,
                             int mutable_, sw_dtype dtype, sw_carrier **out) {
    sw_carrier *p = NULL;
    sw_status st =
        sw_carrier_new_like(ev(c)->primary, n, values, mutable_, dtype, &p);
    if (!st)
        st = wrap_fresh(p, ev(c)->secondary, out);
    sw_carrier_unref(p);
    return st;
}

static sw_status ev_dispatch_op(sw_carrier *c, const char *name, sw_op **out) {
    sw_status st = check_promoted(c);
    if (st)
        return st;
    sw_op *inner = NULL;
    st = sw_carrier_dispatch_op(ev(c)->primary, name, &inner);
    if (st)
        return st;
    st = sw_evictable_op_new(inner, out);
    sw_op_unref(inner);
    return st;
}

static const sw_carrier_class evictable_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Evictable",
    .size = ev_size,
    .get = ev_get,
    .set = ev_set,
    .is_mutable = ev_is_mutable,
    .release = ev_release,
    .destroy = ev_destroy,
    .allocate_like = ev_allocate_like,
    .new_like = ev_new_like,
    .dispatch_op = ev_dispatch_op,
};

sw_status sw_evictable_new(sw_carrier *primary, sw_carrier *secondary,
                           sw_carrier **out) {
    if (!primary)
        return sw_fail(SW_ETYPE, "primary tier carrier is missing");
    if (!secondary)
        return sw_fail(SW_ETYPE, "secondary tier carrier is missing");
    if (sw_carrier_is_blockdev(primary) || sw_carrier_is_blockdev(secondary))
        return sw_fail(SW_ETYPE,
                       "BlockDeviceCarrier is not a supported Evictable tier");
    if (primary == secondary)
        return sw_fail(SW_EVALUE,
                       "primary and secondary must be distinct carriers");
    if (sw_carrier_is_released(primary))
        return sw_fail(SW_ERUNTIME, "primary carrier is released");
    if (sw_carrier_is_released(secondary))
        return sw_fail(SW_ERUNTIME, "secondary carrier is released");
    if (primary->owner_token)
        return sw_fail(SW_ERUNTIME,
                       "primary carrier is already owned by another carrier");
    if (secondary->owner_token)
        return sw_fail(SW_ERUNTIME, "secondary carrier is already owned by "
                                    "another carrier");
    sw_dtype dtype = sw_carrier_dtype(primary);
    if (dtype != sw_carrier_dtype(secondary))
        return sw_fail(SW_ETYPE, "primary and secondary dtypes must match");
    if (!sw_carrier_is_mutable(secondary))
        return sw_fail(SW_ERUNTIME, "secondary carrier must be mutable");
    int64_t size = sw_carrier_size(primary);
    if (size <= 0)
        return sw_fail(SW_EVALUE,
                       "primary carrier must contain at least one element");
    sw_status st = check_route(primary, secondary);
    if (!st)
        st = check_route(secondary, primary);
    if (st)
        return st;
    ev_state *s = sw_malloc(sizeof *s);
    if (!s)
        return sw_oom();
    memset(s, 0, sizeof *s);
    s->size = size;
    s->mutable_ = sw_carrier_is_mutable(primary);
    sw_carrier *c = NULL;
    st = sw_carrier_new(&evictable_class, s, dtype, &c);
    if (st) {
        sw_free(s);
        return st;
    }
    /* The state is the carrier's from here: claim into it last, so that
     * destroying c on failure gives back nothing it does not own. */
    int64_t pt = 0, stoken = 0;
    st = sw_carrier_claim(primary, &pt);
    if (!st) {
        st = sw_carrier_claim(secondary, &stoken);
        if (st)
            (void)sw_carrier_relinquish(primary, pt);
    }
    if (st) {
        sw_carrier_unref(c);
        return st;
    }
    s->primary = sw_carrier_retain(primary);
    s->secondary = sw_carrier_retain(secondary);
    s->primary_token = pt;
    s->secondary_token = stoken;
    *out = c;
    return SW_OK;
}

/* ------------------------------------------------------------ scatter */

sw_status sw_evictable_scatter(sw_carrier *c, const sw_tensor *src,
                               const sw_tensor *onto, const sw_layout *mapping,
                               int64_t mapping_offset) {
    if (!sw_carrier_is_mutable(c))
        return sw_carrier_fail_immutable();
    sw_status st = check_promoted(c);
    if (st)
        return st;
    if (!onto || onto->carrier != c)
        return sw_fail(SW_EVALUE,
                       "scatter_onto must be backed by this carrier object");
    if (!src)
        return sw_fail(SW_ETYPE, "to_scatter must be a Tensor");
    if (!mapping)
        return sw_fail(SW_ETYPE, "mapping must be a Layout");
    ev_state *s = ev(c);
    sw_tensor *lsrc = NULL, *lonto = NULL;
    if (sw_carrier_is_evictable(src->carrier))
        st = sw_evictable_lower(src, &lsrc);
    else
        lsrc = sw_tensor_retain((sw_tensor *)src);
    if (!st)
        st = sw_tensor_new(s->primary, onto->offset, onto->layout, &lonto);
    if (!st) {
        st = sw_carrier_begin_owner_access(s->primary, s->primary_token);
        if (!st) {
            st = sw_carrier_scatter(s->primary, lsrc, lonto, mapping,
                                    mapping_offset);
            (void)sw_carrier_end_owner_access(s->primary, s->primary_token);
        }
    }
    sw_tensor_unref(lsrc);
    sw_tensor_unref(lonto);
    if (st)
        return st;
    /* One bump for the whole scatter, whatever the primary counted. */
    return sw_carrier_bump_version(c);
}

/* ---------------------------------------------------------- lowering */

sw_status sw_evictable_lower(const sw_tensor *t, sw_tensor **out) {
    if (!t || !sw_carrier_is_evictable(t->carrier))
        return sw_fail(SW_ETYPE,
                       "EvictableOperation requires Evictable tensor inputs");
    sw_status st = sw_tensor_single(t, SW_ENTRY_EVICTABLE);
    if (st)
        return st;
    st = check_promoted(t->carrier);
    if (st)
        return st;
    return sw_tensor_new(ev(t->carrier)->primary, t->offset, t->layout, out);
}

/* ----------------------------------------------- EvictableOperation */

typedef struct evop_state {
    sw_op *primary; /* counted */
    int forwarded;
} evop_state;

static evop_state *evop(const sw_op *op) {
    return (evop_state *)sw_op_state(op);
}

static const void *primary_class_of(const sw_carrier *c) {
    return sw_move_key_of(ev(c)->primary).id;
}

static const void *secondary_class_of(const sw_carrier *c) {
    return sw_move_key_of(ev(c)->secondary).id;
}

/*
 * Wraps carrier r (a primary operation's result or gradient) into a
 * hierarchy: the hierarchy of `known` whose primary r is, if any; else a
 * new one with an empty secondary like like's. *out is an owned reference.
 */
static sw_status wrap_result(sw_carrier *r, sw_carrier *const *known,
                             int32_t nknown, sw_carrier *like,
                             sw_carrier **out) {
    for (int32_t i = 0; i < nknown; ++i) {
        if (known[i] && ev(known[i])->primary == r) {
            *out = sw_carrier_retain(known[i]);
            return SW_OK;
        }
    }
    if (sw_move_key_of(r).id != primary_class_of(like))
        return sw_fail(SW_ETYPE,
                       "operation result does not use the primary carrier");
    return wrap_fresh(r, ev(like)->secondary, out);
}

/* A tensor over the wrapped carrier with t's offset and layout. */
static sw_status rewrap(sw_tensor *t, sw_carrier *const *known, int32_t nknown,
                        sw_carrier *like, sw_tensor **out) {
    sw_carrier *w = NULL;
    sw_status st = wrap_result(t->carrier, known, nknown, like, &w);
    if (!st)
        st = sw_tensor_new(w, t->offset, t->layout, out);
    sw_carrier_unref(w);
    return st;
}

static sw_status evop_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    evop_state *s = evop(op);
    if (s->forwarded)
        return sw_fail(SW_ERUNTIME,
                       "EvictableOperation forward may only be called once");
    sw_carrier *first = NULL;
    int32_t ntensor = 0;
    for (int32_t i = 0; i < nargs; ++i) {
        if (args[i].kind != SW_ARG_TENSOR || !args[i].as.tensor)
            continue;
        ++ntensor;
        sw_carrier *c = args[i].as.tensor->carrier;
        if (!sw_carrier_is_evictable(c))
            continue;
        if (!first) {
            first = c;
            continue;
        }
        if (primary_class_of(c) != primary_class_of(first))
            return sw_fail(SW_ETYPE, "Evictable primary carriers must match");
        if (secondary_class_of(c) != secondary_class_of(first))
            return sw_fail(SW_ETYPE, "Evictable secondary carriers must match");
    }
    if (!first)
        return sw_fail(SW_ETYPE, "EvictableOperation requires a tensor input");
    sw_arg *largs = sw_malloc((size_t)(nargs + 1) * sizeof *largs);
    sw_tensor **lowered = sw_calloc((size_t)ntensor + 1, sizeof *lowered);
    sw_carrier **known = sw_calloc((size_t)ntensor + 1, sizeof *known);
    sw_status st = largs && lowered && known ? SW_OK : sw_oom();
    int32_t k = 0;
    for (int32_t i = 0; !st && i < nargs; ++i) {
        largs[i] = args[i];
        if (args[i].kind != SW_ARG_TENSOR || !args[i].as.tensor)
            continue;
        st = sw_evictable_lower(args[i].as.tensor, &lowered[k]);
        if (!st) {
            known[k] = args[i].as.tensor->carrier;
            largs[i].as.tensor = lowered[k++];
        }
    }
    if (!st)
        st = sw_op_store_inputs(s->primary, k, lowered);
    sw_tensor *r = NULL;
    if (!st)
        st = sw_op_execute_lowered(s->primary, nargs, largs, &r);
    if (!st)
        st = rewrap(r, known, k, first, out);
    if (!st)
        s->forwarded = 1;
    sw_tensor_unref(r);
    for (int32_t i = 0; lowered && i < k; ++i)
        sw_tensor_unref(lowered[i]);
    sw_free(known);
    sw_free(lowered);
    sw_free(largs);
    return st;
}

/*
 * A plain primary-class gradient, copied into a fresh hierarchy: the
 * primary operation may hand that storage back as a gradient, which is then
 * wrapped without claiming the caller's carrier.
 */
static sw_status adopt_gradient(sw_tensor *g, sw_carrier *like,
                                sw_carrier **wrapped, sw_tensor **lowered) {
    sw_carrier *fresh = NULL;
    sw_tensor *t = NULL;
    sw_status st = sw_carrier_allocate_like(g->carrier, g->layout->cosize, 1,
                                            SW_DTYPE_COUNT, 0, &fresh);
    if (!st)
        st = sw_tensor_new(fresh, 0, g->layout, &t);
    if (!st)
        st = sw_carrier_scatter(fresh, g, t, g->layout, 0);
    if (!st)
        st = wrap_fresh(fresh, ev(like)->secondary, wrapped);
    sw_carrier_unref(fresh);
    if (st) {
        sw_tensor_unref(t);
        return st;
    }
    *lowered = t;
    return SW_OK;
}

static sw_status evop_backward(sw_op *op, sw_tensor *gradient, int32_t n,
                               sw_tensor **grads) {
    evop_state *s = evop(op);
    if (!s->forwarded)
        return sw_fail(SW_ERUNTIME,
                       "EvictableOperation backward requires forward first");
    int32_t ninputs = sw_op_ninputs(op);
    sw_tensor **lowered = sw_calloc((size_t)ninputs + 1, sizeof *lowered);
    /* The hierarchies a gradient may belong to: the inputs', the
     * gradient's, and those made for earlier gradients of this call. */
    sw_carrier **known =
        sw_calloc((size_t)ninputs + (size_t)n + 2, sizeof *known);
    sw_tensor **inner = sw_calloc((size_t)n + 1, sizeof *inner);
    sw_tensor *lg = NULL;
    sw_carrier *gwrap = NULL;
    sw_status st = lowered && known && inner ? SW_OK : sw_oom();
    for (int32_t i = 0; !st && i < ninputs; ++i) {
        sw_tensor *in = sw_op_input(op, i);
        st = sw_evictable_lower(in, &lowered[i]);
        if (!st)
            known[i] = in->carrier;
    }
    sw_carrier *like = !st && ninputs > 0 ? known[0] : NULL;
    int32_t nknown = ninputs;
    if (!st && !like)
        st = sw_fail(SW_ERUNTIME,
                     "EvictableOperation backward requires forward first");
    if (!st)
        st = sw_op_store_inputs(s->primary, ninputs, lowered);
    if (!st && !gradient)
        st = sw_fail(SW_ETYPE, "gradient must be a Tensor");
    if (!st && sw_carrier_is_evictable(gradient->carrier)) {
        st = sw_evictable_lower(gradient, &lg);
        if (!st)
            known[nknown++] = gradient->carrier;
    } else if (!st) {
        if (sw_move_key_of(gradient->carrier).id != primary_class_of(like))
            st = sw_fail(SW_ETYPE,
                         "gradient carrier must match the primary carrier "
                         "class");
        else
            st = adopt_gradient(gradient, like, &gwrap, &lg);
        if (!st)
            known[nknown++] = gwrap;
    }
    if (!st)
        st = sw_op_backward(s->primary, lg, n, inner);
    for (int32_t i = 0; !st && i < n; ++i) {
        if (!inner[i])
            continue;
        sw_carrier *in_like = i < ninputs ? known[i] : like;
        st = rewrap(inner[i], known, nknown, in_like, &grads[i]);
        /* Later gradients over the same storage share this hierarchy. */
        if (!st)
            known[nknown++] = grads[i]->carrier;
    }
    for (int32_t i = 0; inner && i < n; ++i)
        sw_tensor_unref(inner[i]);
    for (int32_t i = 0; lowered && i < ninputs; ++i)
        sw_tensor_unref(lowered[i]);
    sw_tensor_unref(lg);
    sw_carrier_unref(gwrap);
    sw_free(inner);
    sw_free(known);
    sw_free(lowered);
    return st;
}

static void evop_destroy(sw_op *op) {
    evop_state *s = evop(op);
    sw_op_unref(s->primary);
    sw_free(s);
}

static const sw_op_class evictable_op_class = {
    .version = SW_OP_CLASS_VERSION,
    .name = "EvictableOperation",
    .forward = evop_forward,
    .backward = evop_backward,
    .destroy = evop_destroy,
};

sw_status sw_evictable_op_new(sw_op *primary, sw_op **out) {
    if (!primary)
        return sw_fail(SW_ETYPE, "primary_operation must be an Operation");
    evop_state *s = sw_malloc(sizeof *s);
    if (!s)
        return sw_oom();
    s->primary = sw_op_retain(primary);
    s->forwarded = 0;
    sw_status st = sw_op_new(&evictable_op_class, s, out);
    if (st) {
        sw_op_unref(s->primary);
        sw_free(s);
    }
    return st;
}

const sw_op_class *sw_evictable_op_class(void) {
    return &evictable_op_class;
}

int sw_op_is_evictable(const sw_op *op) {
    return op && sw_op_get_class(op) == &evictable_op_class;
}

sw_op *sw_evictable_op_primary(const sw_op *op) {
    return sw_op_is_evictable(op) ? evop(op)->primary : NULL;
}
