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
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "carrier/defined.h"
#include "carrier/internal.h"
#include "strideweave/capability.h"
#include "strideweave/interop.h"
#include "strideweave/op.h"
#include "strideweave/registry.h"

typedef struct defined_state {
    const sw_defn *defn;
    sw_dtype dtype;
    int mutable_;
    int allocated;
    int64_t size;
    void *data;
} defined_state;

static const sw_carrier_class defined_class;

static defined_state *state_of(const sw_carrier *c) {
    return sw_carrier_get_class(c) == &defined_class ? sw_carrier_state(c)
                                                     : NULL;
}

static const sw_storage_provider *storage_of(const defined_state *s) {
    return &s->defn->def.storage;
}

/* ----------------------------------------------------------- the record */

void sw_defn_release(sw_defn *d) {
    if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
        return;
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

/* One allocation: the record, then the routes, then the strings. */
static sw_status copy_definition(const void *cls,
                                 const sw_carrier_definition *def,
                                 sw_defn **out) {
    size_t bytes = sizeof(sw_defn), name_len = strlen(def->name) + 1;
    size_t routes_at = bytes;
    bytes += (size_t)def->nroutes * sizeof(sw_transfer_route_decl);
    size_t classes_at = bytes;
    bytes += (size_t)def->nroutes * sizeof(sw_move_class);
    size_t strings_at = bytes;
    bytes += name_len;
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
    if (!def || def->version != SW_CARRIER_DEFINITION_VERSION)
        return sw_fail(SW_EVALUE, "carrier definition is missing or of an "
                                  "unsupported version");
    const char *name = def->name && *def->name ? def->name : "carrier";
    if (!complete(&def->storage))
        return sw_fail(SW_EVALUE,
                       "%s: the storage provider is incomplete or of an "
                       "unsupported version",
                       name);
    sw_status st = check_definition(cls, def, name);
    if (st)
        return st;
    sw_carrier_definition named = *def;
    named.name = name;
    sw_defn *d = NULL;
    st = copy_definition(cls, &named, &d);
    if (st)
        return st;
    st = sw_defn_register(cls, d);
    if (st) {
        d->def.drop = NULL; /* the caller keeps ctx */
        sw_defn_release(d);
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
    defined_state *s = sw_carrier_state(c);
    return s->allocated ? s->size : 0;
}

static sw_status defined_get(sw_carrier *c, int64_t i, sw_value *out) {
    defined_state *s = sw_carrier_state(c);
    const sw_storage_provider *p = storage_of(s);
    return p->read(p->ctx, c, i, out);
}

static sw_status defined_set(sw_carrier *c, int64_t i, const sw_value *v) {
    defined_state *s = sw_carrier_state(c);
    const sw_storage_provider *p = storage_of(s);
    return p->write(p->ctx, c, i, v);
}

static sw_dtype defined_dtype(sw_carrier *c) {
    return ((defined_state *)sw_carrier_state(c))->dtype;
}

static int defined_is_mutable(sw_carrier *c) {
    return ((defined_state *)sw_carrier_state(c))->mutable_;
}

static sw_status release_storage_now(sw_carrier *c) {
    defined_state *s = sw_carrier_state(c);
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
    defined_state *s = sw_carrier_state(c);
    sw_defn_release((sw_defn *)s->defn);
    sw_free(s);
}

static sw_status make_like(sw_carrier *c, int64_t size, int mutable_,
                           sw_dtype dtype, sw_carrier **out) {
    defined_state *s = sw_carrier_state(c);
    const sw_carrier_definition *def = &s->defn->def;
    if (def->make)
        return def->make(def->ctx, c, size, dtype, mutable_, out);
    sw_carrier *r = NULL;
    sw_status st = sw_carrier_defined_new(s->defn->cls, &r);
    if (!st)
        st = sw_carrier_defined_allocate(r, size, dtype, mutable_);
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

static sw_status defined_allocate_like(sw_carrier *c, int64_t size,
                                       int mutable_, sw_dtype dtype, int empty,
                                       sw_carrier **out) {
    (void)empty; /* a provider's storage is whatever allocate makes */
    return make_like(c, size, mutable_, sw_carrier_pick_dtype(c, dtype), out);
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
                       ((defined_state *)sw_carrier_state(c))->defn->def.name);
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

/* No kernel runs on a definition-backed carrier yet (extension.h). */
static sw_status no_kernel(sw_carrier *c, const char *opname) {
    defined_state *s = sw_carrier_state(c);
    const sw_carrier_definition *def = &s->defn->def;
    if (sw_carrier_is_released(c))
        return sw_fail(SW_ERUNTIME, "%s is released", def->name);
    if (!def->has_kernels)
        return sw_fail(SW_ENOTIMPL,
                       "%s is storage-only: its CarrierDefinition has no "
                       "KernelProvider, so it runs no '%s'",
                       def->name, opname);
    return sw_fail(SW_ENOTIMPL, "%s has no kernel for '%s'", def->name, opname);
}

static sw_status defined_dispatch(sw_carrier *c, const struct sw_op_info *op,
                                  struct sw_op **out) {
    (void)out;
    return no_kernel(c, op->name);
}

static sw_status defined_dispatch_op(sw_carrier *c, const char *name,
                                     struct sw_op **out) {
    (void)out;
    return no_kernel(c, name);
}

static const sw_carrier_class defined_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "defined carrier",
    .size = defined_size,
    .get = defined_get,
    .set = defined_set,
    .dtype = defined_dtype,
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
    defined_state *s = sw_calloc(1, sizeof *s);
    if (!s) {
        sw_defn_release((sw_defn *)d);
        return sw_oom();
    }
    s->defn = d;
    s->dtype = SW_DTYPE_FLOAT32;
    sw_carrier *c = NULL;
    sw_status st = sw_carrier_new(&defined_class, s, s->dtype, &c);
    if (st) {
        sw_defn_release((sw_defn *)d);
        sw_free(s);
        return st;
    }
    /* Capabilities and dispatch are keyed by the defined class's tag. */
    sw_carrier_set_dispatch(c, NULL, NULL, cls);
    *out = c;
    return SW_OK;
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
    defined_state *s = c ? state_of(c) : NULL;
    if (!s)
        return sw_fail(SW_EVALUE, "not a definition-backed carrier");
    const char *name = s->defn->def.name;
    if (slots < 0)
        return sw_fail(SW_EVALUE, "%s slots must be non-negative", name);
    if ((int)dtype < 0 || (int)dtype >= SW_DTYPE_COUNT)
        return sw_fail(SW_EVALUE, "unknown dtype %d", (int)dtype);
    if (s->allocated || sw_carrier_is_released(c))
        return sw_fail(SW_ERUNTIME, "%s storage is already allocated", name);
    s->dtype = dtype;
    s->mutable_ = mutable_ != 0;
    int yes = 0;
    sw_status st = sw_carrier_defined_supports_dtype(c, s->dtype, &yes);
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
