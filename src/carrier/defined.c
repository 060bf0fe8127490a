/*
 * Definition-backed carriers (strideweave/extension.h): the definition
 * record and the carrier vtable built over a storage provider.
 *
 * The base (carrier.c) checks release, range and mutability and counts
 * versions before any slot here runs, so the provider only ever sees
 * live, in-range, permitted requests. The storage's size is checked once,
 * at allocation, and kept: the provider's answer is the carrier's size
 * from then on.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "carrier/defined.h"
#include "carrier/internal.h"
#include "tensor/internal.h"
#include "op/internal.h"
#include "strideweave/capability.h"
#include "strideweave/interop.h"
#include "strideweave/op.h"
#include "strideweave/tiled.h"
#include "strideweave/registry.h"

/* The state (carrier/defined.h): shared with the per-call paths. */
typedef sw_defined_state defined_state;

/* The carrier's fields directly (carrier/internal.h): this is on every
 * call's path, several times. */
static defined_state *state_of(const sw_carrier *c) {
    return sw_defined_state_of(c);
}

static const sw_storage_provider *storage_of(const defined_state *s) {
    return &s->defn->def.storage;
}

/* ----------------------------------------------------------- the record */

void sw_defn_unref(sw_defn *d) {
    if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
        return;
    while (d->packs) {
        sw_kernel_pack_rec *next = d->packs->next;
        sw_kernel_pack_free(d->packs);
        d->packs = next;
    }
    sw_free((void *)d->order);
    sw_free(d->caps);
    if (d->def.drop)
        d->def.drop(d->def.ctx);
    sw_free(d);
}

static int complete(const sw_storage_provider *p) {
    return p->version == SW_STORAGE_PROVIDER_VERSION && p->supports_dtype &&
           p->allocate && p->physical_size && p->release && p->read && p->write;
}

/* The ownership and route rules that need only the definition. */
static sw_status check_definition(const void *cls,
                                  const sw_carrier_definition *def,
                                  const char *name) {
    if (def->dependent && !def->has_composite)
        return sw_fail(SW_ETYPE,
                       "%s is a DependentCarrier: its CarrierDefinition "
                       "requires composite",
                       name);
    if (def->dependent && def->has_kernels)
        return sw_fail(SW_ETYPE,
                       "%s is a DependentCarrier: its CarrierDefinition "
                       "forbids kernels",
                       name);
    if (!def->dependent && def->has_composite)
        return sw_fail(SW_ETYPE,
                       "%s is an independent carrier: its "
                       "CarrierDefinition must not supply a composite",
                       name);
    const sw_composite_decl *k = &def->composite;
    if (def->has_composite && def->version >= 2 &&
        (!k->capabilities || !k->result_carriers || !k->prepare || !k->submit))
        return sw_fail(SW_EVALUE,
                       "%s: the composite provider needs capabilities, "
                       "result_carriers, prepare and submit",
                       name);
    if (def->has_composite && def->version == 1)
        return sw_fail(SW_EVALUE,
                       "%s: a composite provider needs a version-2 definition",
                       name);
    if (def->nroutes < 0 || (def->nroutes > 0 && !def->routes))
        return sw_fail(SW_EVALUE, "route count %lld without routes",
                       (long long)def->nroutes);
    for (int64_t i = 0; i < def->nroutes; ++i) {
        const sw_transfer_route_decl *r = &def->routes[i];
        if (!r->route_id || !*r->route_id)
            return sw_fail(SW_EVALUE, "route_id must not be empty");
        if (r->source != cls)
            return sw_fail(SW_ETYPE,
                           "route '%s' must have the exact source_class %s",
                           r->route_id, name);
        if (!r->destination)
            return sw_fail(SW_EVALUE, "route '%s' has no destination",
                           r->route_id);
        if (!r->prepare || (!r->run && !r->submit))
            return sw_fail(SW_EVALUE,
                           "route '%s' needs prepare and submit (or run)",
                           r->route_id);
        for (int64_t j = 0; j < i; ++j)
            if (def->routes[j].destination == r->destination)
                return sw_fail(SW_EVALUE, "duplicate exact transfer routes");
    }
    return SW_OK;
}

/* One allocation: the record, the routes and their move classes, the
 * patterns, then the strings. */
static sw_status copy_definition(const void *cls,
                                 const sw_carrier_definition *def,
                                 sw_defn **out) {
    size_t bytes = sizeof(sw_defn), name_len = strlen(def->name) + 1;
    size_t iface_len =
        def->has_kernels ? strlen(def->interface_version) + 1 : 0;
    size_t routes_at = bytes;
    bytes += (size_t)def->nroutes * sizeof(sw_transfer_route_decl);
    size_t classes_at = bytes;
    bytes += (size_t)def->nroutes * sizeof(sw_move_class);
    bytes = (bytes + 15) & ~(size_t)15;
    size_t patterns_at = bytes;
    bytes += sw_kernel_patterns_size(def->npatterns, def->patterns);
    size_t strings_at = bytes;
    bytes += name_len + iface_len;
    for (int64_t i = 0; i < def->nroutes; ++i)
        bytes += strlen(def->routes[i].route_id) + 1;
    char *block = sw_calloc(1, bytes);
    if (!block)
        return sw_oom();
    sw_defn *d = (sw_defn *)block;
    d->def = *def;
    d->cls = cls;
    atomic_init(&d->refs, 1);
    sw_transfer_route_decl *routes =
        (sw_transfer_route_decl *)(block + routes_at);
    char *text = block + strings_at;
    memcpy(text, def->name, name_len);
    d->def.name = text;
    text += name_len;
    if (iface_len) {
        memcpy(text, def->interface_version, iface_len);
        d->def.interface_version = text;
        text += iface_len;
    }
    d->patterns = sw_kernel_patterns_place(def->npatterns, def->patterns,
                                           block + patterns_at);
    d->def.patterns = def->npatterns ? d->patterns : NULL;
    for (int64_t i = 0; i < def->nroutes; ++i) {
        size_t n = strlen(def->routes[i].route_id) + 1;
        routes[i] = def->routes[i];
        memcpy(text, def->routes[i].route_id, n);
        routes[i].route_id = text;
        text += n;
    }
    d->def.routes = def->nroutes ? routes : NULL;
    sw_move_class *classes = (sw_move_class *)(block + classes_at);
    for (int64_t i = 0; i < def->nroutes; ++i) {
        classes[i].version = SW_MOVE_CLASS_VERSION;
        classes[i].name = routes[i].route_id;
        classes[i].copy = sw_route_copy;
        classes[i].ctx = &routes[i];
    }
    d->route_classes = def->nroutes ? classes : NULL;
    *out = d;
    return SW_OK;
}

sw_status sw_carrier_define(const void *cls, const sw_carrier_definition *def) {
    if (!cls)
        return sw_fail(SW_EVALUE, "carrier class tag must not be NULL");
    if (!def || def->version < 1 ||
        def->version > SW_CARRIER_DEFINITION_VERSION)
        return sw_fail(SW_EVALUE, "carrier definition is missing or of an "
                                  "unsupported version");
    /* A version-1 definition ends before the kernel provider's fields. */
    sw_carrier_definition full = {0};
    memcpy(&full, def,
           def->version == 1 ? offsetof(sw_carrier_definition, interface_type)
                             : sizeof full);
    def = &full;
    const char *name = def->name && *def->name ? def->name : "carrier";
    if (!complete(&def->storage))
        return sw_fail(SW_EVALUE,
                       "%s: the storage provider is incomplete or of an "
                       "unsupported version",
                       name);
    sw_status st = check_definition(cls, def, name);
    if (st)
        return st;
    if (def->has_kernels && def->version == 1)
        return sw_fail(SW_EVALUE,
                       "%s: a KernelProvider needs a version-2 definition",
                       name);
    if (def->has_kernels && (!def->interface_type || !def->interface_version ||
                             !*def->interface_version))
        return sw_fail(SW_EVALUE,
                       "%s: the KernelProvider needs an execution interface "
                       "(a type and a non-empty version)",
                       name);
    if (!def->has_kernels && def->npatterns)
        return sw_fail(SW_EVALUE, "%s: kernel patterns need a KernelProvider",
                       name);
    if ((st = sw_kernel_patterns_check(name, def->npatterns, def->patterns)))
        return st;
    sw_carrier_definition named = *def;
    named.name = name;
    sw_defn *d = NULL;
    st = copy_definition(cls, &named, &d);
    if (st)
        return st;
    st = sw_defn_rebuild_kernels(d);
    if (!st)
        st = sw_defn_register(cls, d);
    if (st) {
        d->def.drop = NULL; /* the caller keeps ctx */
        sw_defn_unref(d);
    }
    return st;
}

const sw_move_class *sw_defn_route(const sw_defn *d, const void *destination) {
    for (int64_t i = 0; d && i < d->def.nroutes; ++i)
        if (d->def.routes[i].destination == destination)
            return &d->route_classes[i];
    return NULL;
}

int sw_carrier_has_definition(const void *cls) {
    return sw_defn_lookup(cls, 0) != NULL;
}

void *sw_carrier_definition_ctx(const void *cls) {
    const sw_defn *d = sw_defn_lookup(cls, 0);
    return d ? d->def.ctx : NULL;
}

int sw_carrier_definition_fallback(const void *cls) {
    const sw_defn *d = sw_defn_lookup(cls, 0);
    return d && d->def.storage.elementwise_fallback;
}

/* ------------------------------------------------------------ the slots */

static int64_t defined_size(sw_carrier *c) {
    defined_state *s = c->state;
    return s->allocated ? s->size : 0;
}

static sw_status defined_get(sw_carrier *c, int64_t i, sw_value *out) {
    defined_state *s = c->state;
    const sw_storage_provider *p = storage_of(s);
    return p->read(p->ctx, c, i, out);
}

static sw_status defined_set(sw_carrier *c, int64_t i, const sw_value *v) {
    defined_state *s = c->state;
    const sw_storage_provider *p = storage_of(s);
    sw_journal *j = atomic_load(&s->journal);
    if (j) {
        /* Under a kernel call: the old value first, so that a failing
         * call can put it back. */
        sw_value old;
        sw_status st = p->read(p->ctx, c, i, &old);
        if (!st && (st = sw_journal_record(j, c, i, &old)))
            sw_value_clear(&old);
        if (st)
            return st;
    }
    return p->write(p->ctx, c, i, v);
}

sw_status sw_defined_restore(sw_carrier *c, int64_t i, const sw_value *v) {
    defined_state *s = state_of(c);
    if (!s || !s->allocated || i < 0 || i >= s->size)
        return SW_OK; /* released meanwhile: nothing to put back */
    const sw_storage_provider *p = storage_of(s);
    return p->write(p->ctx, c, i, v);
}

void sw_carrier_version_restore(sw_carrier *c, int64_t version) {
    atomic_store(&c->version, version);
}

static int defined_is_mutable(sw_carrier *c) {
    return ((defined_state *)c->state)->mutable_;
}

static sw_status release_storage_now(sw_carrier *c) {
    defined_state *s = c->state;
    if (!s->allocated)
        return SW_OK;
    const sw_storage_provider *p = storage_of(s);
    sw_status st = p->release(p->ctx, c);
    if (!st)
        s->allocated = 0;
    return st;
}

/* A release with no caller to report to: the error is dropped. */
static void defined_release(sw_carrier *c) {
    if (release_storage_now(c))
        sw_clear_error();
}

static void defined_destroy(sw_carrier *c) {
    defined_state *s = c->state;
    sw_capability_snapshot *snap = atomic_load(&s->snap);
    if (snap)
        sw_capability_snapshot_free(snap);
    sw_defn_unref((sw_defn *)s->defn); /* the state goes with the block */
}

static sw_status new_of(const sw_defn *d, sw_carrier **out);
static sw_status allocate(sw_carrier *c, int64_t slots, sw_dtype dtype,
                          int mutable_, int known);
static sw_status allocate_storage(sw_carrier *c, defined_state *s,
                                  int64_t slots, sw_dtype dtype, int mutable_,
                                  int known);

static sw_status make_like(sw_carrier *c, int64_t size, int mutable_,
                           sw_dtype dtype, sw_carrier **out) {
    defined_state *s = c->state;
    const sw_carrier_definition *def = &s->defn->def;
    if (def->make)
        return def->make(def->ctx, c, size, dtype, mutable_, out);
    /* The class is sealed and alive (this carrier holds its definition):
     * no registry lookup. */
    atomic_fetch_add(&((sw_defn *)s->defn)->refs, 1);
    sw_carrier *r = NULL;
    sw_status st = new_of(s->defn, &r);
    /* allocate's checks hold: r is fresh, of this class, neither
     * allocated nor released, and the base checked size and dtype
     * (sw_carrier_allocate_like, sw_carrier_new_like). The class stores
     * c's own dtype: its provider said so when c was allocated, so only
     * another dtype is asked about. */
    if (!st)
        st = allocate_storage(r, r->state, size, dtype, mutable_,
                              s->allocated && dtype == s->dtype);
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

static int s_dependent(const sw_carrier *c) {
    return ((defined_state *)c->state)->defn->def.dependent;
}

static sw_status defined_allocate_like(sw_carrier *c, int64_t size,
                                       int mutable_, sw_dtype dtype, int empty,
                                       sw_carrier **out) {
    /* A provider's storage is whatever allocate makes; a TiledEvictable's
     * tiles become invalid when no values are asked for. The base picked
     * the dtype already (sw_carrier_allocate_like); the class has no dtype
     * slot, so its own is the carrier's field. */
    sw_status st = make_like(c, size, mutable_,
                             dtype == SW_DTYPE_COUNT ? c->dtype : dtype, out);
    if (!st && empty && s_dependent(c) && sw_carrier_is_tiled(*out))
        sw_tiled_forget_values(*out);
    return st;
}

/* Filled through the provider's writes, which count no version: the
 * result starts at version 0 like any fresh carrier. */
static sw_status defined_new_like(sw_carrier *c, int64_t n,
                                  const sw_value *values, int mutable_,
                                  sw_dtype dtype, sw_carrier **out) {
    sw_carrier *r = NULL;
    sw_status st = make_like(c, n, 1, sw_carrier_pick_dtype(c, dtype), &r);
    if (st)
        return st;
    defined_state *rs = state_of(r);
    if (!rs) {
        sw_carrier_unref(r);
        return sw_fail(SW_ETYPE, "%s: make returned another kind of carrier",
                       ((defined_state *)c->state)->defn->def.name);
    }
    const sw_storage_provider *p = storage_of(rs);
    for (int64_t i = 0; i < n && !st; ++i)
        st = p->write(p->ctx, r, i, &values[i]);
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    rs->mutable_ = mutable_ != 0;
    *out = r;
    return SW_OK;
}

/* Why c runs no operation named opname, or SW_OK when it may (its
 * kernels decide per plan when the operation runs). */
static sw_status kernels_refuse(sw_carrier *c, const char *opname) {
    defined_state *s = c->state;
    const sw_carrier_definition *def = &s->defn->def;
    if (sw_carrier_released_inline(c))
        return sw_fail(SW_ERUNTIME, "%s is released", def->name);
    if (def->dependent)
        return SW_OK; /* its composite decides, by its instance snapshot */
    if (!def->has_kernels)
        return sw_fail(SW_ENOTIMPL,
                       "%s is storage-only: its CarrierDefinition has no "
                       "KernelProvider, so it runs no '%s'",
                       def->name, opname);
    return SW_OK;
}

static sw_status defined_dispatch(sw_carrier *c, const struct sw_op_info *op,
                                  struct sw_op **out) {
    sw_status st = kernels_refuse(c, op->name);
    if (st)
        return st;
    /* Views need no kernel: they share the carrier. */
    if (op->flags & SW_OPF_LAYOUT)
        return sw_shared_op_new_info(op, out);
    const sw_defn *d = ((defined_state *)c->state)->defn;
    if (d->def.dependent)
        return op->id >= SW_OP_BUILTIN_COUNT
                   ? sw_fail(SW_ENOTIMPL,
                             "'%s' is a defined operation: call its "
                             "definition, which dispatches on %s",
                             op->name, d->def.name)
                   : sw_defined_op_new(op, out);
    int any = 0;
    for (int64_t i = 0; i < d->norder && !any; ++i)
        any = d->order[i]->op == op->id;
    if (!any)
        return sw_fail(SW_ENOTIMPL, "%s has no kernel for '%s'", d->def.name,
                       op->name);
    if (op->id >= SW_OP_BUILTIN_COUNT)
        return sw_fail(SW_ENOTIMPL,
                       "'%s' is a defined operation: call its definition, "
                       "which dispatches on %s",
                       op->name, ((defined_state *)c->state)->defn->def.name);
    return sw_defined_op_new(op, out);
}

static sw_status defined_dispatch_op(sw_carrier *c, const char *name,
                                     struct sw_op **out) {
    (void)out;
    sw_status st = kernels_refuse(c, name);
    if (st)
        return st;
    defined_state *s = c->state;
    return sw_fail(SW_ENOTIMPL, "%s has no kernel for '%s'", s->defn->def.name,
                   name);
}

const sw_carrier_class sw_defined_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "defined carrier",
    .size = defined_size,
    .get = defined_get,
    .set = defined_set,
    .is_mutable = defined_is_mutable,
    .release = defined_release,
    .destroy = defined_destroy,
    .allocate_like = defined_allocate_like,
    .new_like = defined_new_like,
    .dispatch_op = defined_dispatch_op,
    .dispatch = defined_dispatch,
    .release_now = release_storage_now,
};

/* ------------------------------------------------------------ instances */

sw_status sw_carrier_defined_new(const void *cls, sw_carrier **out) {
    const sw_defn *d = sw_defn_lookup(cls, 1);
    if (!d)
        return sw_fail(SW_ETYPE, "carrier class has no CarrierDefinition");
    return new_of(d, out);
}

static size_t align_max(size_t n) {
    return (n + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) *
           _Alignof(max_align_t);
}

/* A carrier of d's class; takes over a reference to d. One block holds
 * the carrier, its state, room for its first tensor and the provider's
 * room. */
static sw_status new_of(const sw_defn *d, sw_carrier **out) {
    sw_carrier *c = NULL;
    void *state = NULL, *tail = NULL;
    size_t at = align_max(sizeof(defined_state));
    size_t room_at = align_max(at + SW_TENSOR_ROOM);
    sw_status st =
        sw_carrier_new_block(&sw_defined_class, room_at + SW_DEFINED_ROOM, 0, 0,
                             SW_DTYPE_FLOAT32, &c, &state, &tail);
    if (st) {
        sw_defn_unref((sw_defn *)d);
        return st;
    }
    sw_carrier_offer_tensor_room(c, (char *)state + at);
    defined_state *s = state;
    *s = (defined_state){
        .defn = d, .dtype = SW_DTYPE_FLOAT32, .room = (char *)state + room_at};
    memset(s->room, 0, SW_DEFINED_ROOM);
    /* Capabilities and dispatch are keyed by the defined class's tag. */
    sw_carrier_set_dispatch(c, NULL, NULL, d->cls);
    *out = c;
    return SW_OK;
}

/* ---------------------------------------------------------- composites */

static sw_status not_dependent(void) {
    return sw_fail(SW_ETYPE, "carrier is not of a dependent definition-backed "
                             "class");
}

int sw_carrier_defined_is_dependent(const sw_carrier *c) {
    const defined_state *s = c ? state_of(c) : NULL;
    return s && s->defn->def.dependent;
}

sw_status sw_carrier_defined_finalize(sw_carrier *c) {
    defined_state *s = c ? state_of(c) : NULL;
    if (!s || !s->defn->def.dependent)
        return not_dependent();
    const sw_carrier_definition *def = &s->defn->def;
    sw_capability_snapshot *snap = atomic_load(&s->snap);
    if (snap && sw_capability_snapshot_is_final(snap))
        return sw_fail(SW_ERUNTIME, "%s capabilities are already finalized",
                       def->name);
    if (!snap) {
        sw_capability_snapshot *fresh = NULL;
        sw_status st = sw_capability_snapshot_new(&fresh);
        if (st)
            return st;
        if (!atomic_compare_exchange_strong(&s->snap, &snap, fresh))
            sw_capability_snapshot_free(fresh); /* another thread's won */
        snap = atomic_load(&s->snap);
    }
    const sw_op_capability *caps = NULL;
    int64_t n = 0;
    const sw_composite_decl *k = &def->composite;
    sw_status st = k->capabilities(k->ctx, c, &caps, &n);
    if (st)
        return st;
    if (n < 0 || (n > 0 && !caps))
        st = sw_fail(SW_EVALUE, "%s: capabilities gave %lld entries", def->name,
                     (long long)n);
    else
        st = sw_capability_snapshot_finalize(snap, def->name, n, caps);
    if (k->capabilities_done)
        k->capabilities_done(k->ctx, c, caps);
    return st;
}

sw_status sw_carrier_defined_capabilities(const sw_carrier *c,
                                          sw_capability_list *out) {
    const defined_state *s = c ? state_of(c) : NULL;
    if (!s || !s->defn->def.dependent)
        return not_dependent();
    sw_capability_snapshot *snap = atomic_load(&s->snap);
    if (!snap || !sw_capability_snapshot_is_final(snap))
        return sw_fail(SW_ERUNTIME,
                       "%s has not finalized its operation-plan capabilities",
                       s->defn->def.name);
    return sw_capability_snapshot_get(snap, s->defn->def.name, out);
}

sw_status sw_carrier_defined_supports_dtype(sw_carrier *c, sw_dtype dtype,
                                            int *out) {
    defined_state *s = c ? state_of(c) : NULL;
    if (!s)
        return sw_fail(SW_EVALUE, "not a definition-backed carrier");
    if ((int)dtype < 0 || (int)dtype >= SW_DTYPE_COUNT)
        return sw_fail(SW_EVALUE, "unknown dtype %d", (int)dtype);
    const sw_storage_provider *p = storage_of(s);
    int yes = 0;
    sw_status st = p->supports_dtype(p->ctx, c, dtype, &yes);
    if (!st)
        *out = yes != 0;
    return st;
}

sw_status sw_carrier_defined_allocate(sw_carrier *c, int64_t slots,
                                      sw_dtype dtype, int mutable_) {
    return allocate(c, slots, dtype, mutable_, 0);
}

/* sw_carrier_defined_allocate; known: the class is known to store dtype. */
static sw_status allocate(sw_carrier *c, int64_t slots, sw_dtype dtype,
                          int mutable_, int known) {
    defined_state *s = c ? state_of(c) : NULL;
    if (!s)
        return sw_fail(SW_EVALUE, "not a definition-backed carrier");
    const char *name = s->defn->def.name;
    if (slots < 0)
        return sw_fail(SW_EVALUE, "%s slots must be non-negative", name);
    if ((int)dtype < 0 || (int)dtype >= SW_DTYPE_COUNT)
        return sw_fail(SW_EVALUE, "unknown dtype %d", (int)dtype);
    if (s->allocated || sw_carrier_released_inline(c))
        return sw_fail(SW_ERUNTIME, "%s storage is already allocated", name);
    return allocate_storage(c, s, slots, dtype, mutable_, known);
}

/* allocate once its arguments and c are checked. */
static sw_status allocate_storage(sw_carrier *c, defined_state *s,
                                  int64_t slots, sw_dtype dtype, int mutable_,
                                  int known) {
    const char *name = s->defn->def.name;
    /* The base reads the dtype from the carrier (the class has no dtype
     * slot): kept with the state's. */
    s->dtype = dtype;
    c->dtype = dtype;
    s->mutable_ = mutable_ != 0;
    int yes = known;
    sw_status st =
        known ? SW_OK : sw_carrier_defined_supports_dtype(c, s->dtype, &yes);
    if (st)
        return st;
    if (!yes)
        return sw_fail(SW_ETYPE, "%s does not support storage dtype %s", name,
                       sw_dtype_name(s->dtype));
    const sw_storage_provider *p = storage_of(s);
    st = p->allocate(p->ctx, c, slots);
    if (st)
        return st;
    int64_t got = 0;
    st = p->physical_size(p->ctx, c, &got);
    if (!st && got < 0)
        st = sw_fail(SW_EVALUE,
                     "%s.physical_size must not return a negative value", name);
    else if (!st && got != slots)
        st = sw_fail(SW_EVALUE,
                     "%s.physical_size returned %lld, not the requested "
                     "physical size %lld",
                     name, (long long)got, (long long)slots);
    if (st) {
        /* Give the storage back; the first error is the one reported. */
        sw_status keep = st;
        char message[512];
        snprintf(message, sizeof message, "%s", sw_errmsg());
        if (p->release(p->ctx, c))
            sw_clear_error();
        return sw_fail(keep, "%s", message);
    }
    s->size = slots;
    s->allocated = 1;
    return SW_OK;
}

const sw_defn *sw_carrier_defn(const sw_carrier *c) {
    defined_state *s = c ? state_of(c) : NULL;
    return s ? s->defn : NULL;
}

int sw_carrier_is_defined(const sw_carrier *c) {
    return c && state_of(c) != NULL;
}

const void *sw_carrier_defined_class(const sw_carrier *c) {
    defined_state *s = c ? state_of(c) : NULL;
    return s ? s->defn->cls : NULL;
}

int sw_carrier_defined_is_allocated(const sw_carrier *c) {
    defined_state *s = c ? state_of(c) : NULL;
    return s && s->allocated;
}

void *sw_carrier_defined_data(const sw_carrier *c) {
    defined_state *s = c ? state_of(c) : NULL;
    return s ? s->data : NULL;
}

void sw_carrier_defined_set_data(sw_carrier *c, void *data) {
    defined_state *s = c ? state_of(c) : NULL;
    if (s)
        s->data = data;
}

void *sw_carrier_defined_room(sw_carrier *c, size_t bytes) {
    defined_state *s = c ? state_of(c) : NULL;
    return s && bytes <= SW_DEFINED_ROOM ? s->room : NULL;
}
