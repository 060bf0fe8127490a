/*
 * The carrier base: dtypes, values, versions, mutability, release and the
 * ownership protocol. Backends only store and fetch; every shared rule is
 * here.
 */
#include <string.h>

#include "carrier/internal.h"

/* ------------------------------------------------------------------ dtypes */

const char *sw_dtype_name(sw_dtype dtype) {
    static const char *const names[SW_DTYPE_COUNT] = {
        "Any", "Floating", "Float32", "Int32", "Bool"};
    if ((int)dtype < 0 || (int)dtype >= SW_DTYPE_COUNT)
        return NULL;
    return names[dtype];
}

int sw_dtype_is_differentiable(sw_dtype dtype) {
    return dtype == SW_DTYPE_FLOATING || dtype == SW_DTYPE_FLOAT32;
}

int64_t sw_dtype_itemsize(sw_dtype dtype) {
    switch (dtype) {
    case SW_DTYPE_FLOATING:
        return 8;
    case SW_DTYPE_FLOAT32:
    case SW_DTYPE_INT32:
        return 4;
    case SW_DTYPE_BOOL:
        return 1;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------ values */

sw_value sw_value_f64(double f) {
    sw_value v;
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_F64;
    v.as.f = f;
    return v;
}

sw_value sw_value_i64(int64_t i) {
    sw_value v;
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_I64;
    v.as.i = i;
    return v;
}

void sw_value_clear(sw_value *v) {
    if (v->kind == SW_VALUE_HOST && v->ops && v->ops->release_value)
        v->ops->release_value(v->as.host);
    memset(v, 0, sizeof *v);
}

/* --------------------------------------------------------------- carriers */

static atomic_int_fast64_t next_token = 1;

sw_status sw_carrier_fail_released(void) {
    return sw_fail(SW_ERUNTIME, "Carrier is released");
}

sw_status sw_carrier_fail_immutable(void) {
    return sw_fail(SW_ERUNTIME, "Carrier is not mutable");
}

static sw_status fail_owned(void) {
    return sw_fail(SW_ERUNTIME, "Carrier is owned by another carrier and "
                                "cannot be modified directly");
}

sw_dtype sw_carrier_pick_dtype(const sw_carrier *c, sw_dtype dtype) {
    return dtype == SW_DTYPE_COUNT ? sw_carrier_dtype(c) : dtype;
}

/* Runs the release slot: once, when the carrier is released and no pin is
 * left (see sw_carrier_pin). */
static void free_storage(sw_carrier *c) {
    if (c->cls->release)
        c->cls->release(c);
}

static void carrier_destroy(sw_object *o) {
    sw_carrier *c = (sw_carrier *)o;
    /* Pins are held under references, so none is left here. */
    if (!(atomic_load(&c->life) & SW_LIFE_RELEASED))
        free_storage(c);
    if (c->cls->destroy)
        c->cls->destroy(c);
    sw_free(c);
}

static sw_status check_class(const sw_carrier_class *cls, sw_dtype dtype) {
    if (!cls || cls->version < 1 || cls->version > SW_CARRIER_CLASS_VERSION ||
        !cls->size || !cls->get)
        return sw_fail(SW_EVALUE, "carrier class is incomplete or of an "
                                  "unsupported version");
    if ((int)dtype < 0 || (int)dtype >= SW_DTYPE_COUNT)
        return sw_fail(SW_EVALUE, "unknown dtype %d", (int)dtype);
    return SW_OK;
}

static void carrier_init(sw_carrier *c, const sw_carrier_class *cls,
                         void *state, sw_dtype dtype) {
    sw_object_init(&c->obj, carrier_destroy);
    c->cls = cls;
    c->state = state;
    c->dtype = dtype;
    atomic_init(&c->version, 0);
    atomic_init(&c->life, 0);
    c->owner_token = 0;
    c->access_thread = 0;
    c->access_depth = 0;
    c->dispatch_fn = NULL;
    c->dispatch_ctx = NULL;
    c->dispatch_tag = NULL;
    c->dlpack_fn = NULL;
    c->dlpack_ctx = NULL;
    atomic_init(&c->move_pending, 0);
    atomic_init(&c->move_thread, 0);
    atomic_init(&c->tensor_room, NULL);
}

void *sw_carrier_take_tensor_room(sw_carrier *c) {
    /* Most carriers have none: a load, not an exchange, says so. */
    if (!atomic_load_explicit(&c->tensor_room, memory_order_relaxed))
        return NULL;
    return atomic_exchange_explicit(&c->tensor_room, NULL,
                                    memory_order_relaxed);
}

sw_status sw_carrier_new(const sw_carrier_class *cls, void *state,
                         sw_dtype dtype, sw_carrier **out) {
    sw_status st = check_class(cls, dtype);
    if (st)
        return st;
    sw_carrier *c = sw_malloc(sizeof *c);
    if (!c)
        return sw_oom();
    carrier_init(c, cls, state, dtype);
    *out = c;
    return SW_OK;
}

/* The offset of what follows a part of `size` bytes at `at`, aligned to
 * `align` (a power of two). */
static size_t after(size_t at, size_t size, size_t align) {
    return (at + size + align - 1) & ~(align - 1);
}

sw_status sw_carrier_new_block(const sw_carrier_class *cls, size_t state_size,
                               size_t tail_size, int zero, sw_dtype dtype,
                               sw_carrier **out, void **state, void **tail) {
    sw_status st = check_class(cls, dtype);
    if (st)
        return st;
    /* The block's start is only as aligned as malloc makes it, so the tail
     * is placed at run time, with room for the worst case. */
    size_t state_at = after(0, sizeof(sw_carrier), _Alignof(max_align_t));
    size_t tail_at = after(state_at, state_size, 1);
    if (tail_size > SIZE_MAX - tail_at - SW_CARRIER_TAIL_ALIGN)
        return sw_oom();
    size_t total = tail_at + SW_CARRIER_TAIL_ALIGN + tail_size;
    char *block = zero ? sw_calloc(1, total) : sw_malloc(total);
    if (!block)
        return sw_oom();
    sw_carrier *c = (sw_carrier *)(void *)block;
    void *s = block + state_at;
    uintptr_t t = ((uintptr_t)(block + tail_at) + SW_CARRIER_TAIL_ALIGN - 1) &
                  ~(uintptr_t)(SW_CARRIER_TAIL_ALIGN - 1);
    carrier_init(c, cls, s, dtype);
    *state = s;
    *tail = (void *)t;
    *out = c;
    return SW_OK;
}

sw_carrier *sw_carrier_retain(sw_carrier *c) {
    if (c)
        sw_object_retain(&c->obj);
    return c;
}

void sw_carrier_unref(sw_carrier *c) {
    if (c)
        sw_object_unref(&c->obj);
}

void sw_carrier_set_peer(sw_carrier *c, void *peer,
                         const sw_peer_hooks *hooks) {
    sw_object_set_peer(&c->obj, peer, hooks);
}

void *sw_carrier_get_peer(const sw_carrier *c) {
    return c->obj.peer;
}

int64_t sw_carrier_refcount(const sw_carrier *c) {
    return sw_object_refcount(&c->obj);
}

const sw_carrier_class *sw_carrier_get_class(const sw_carrier *c) {
    return c->cls;
}

void *sw_carrier_state(const sw_carrier *c) {
    return c->state;
}

sw_dtype sw_carrier_dtype(const sw_carrier *c) {
    return sw_carrier_dtype_inline(c);
}

int64_t sw_carrier_size(sw_carrier *c) {
    return sw_carrier_size_inline(c);
}

int64_t sw_carrier_version(const sw_carrier *c) {
    return atomic_load(&c->version);
}

int sw_carrier_is_released(const sw_carrier *c) {
    return sw_carrier_released_inline(c);
}

sw_status sw_carrier_pin(sw_carrier *c) {
    int_fast64_t s = atomic_load(&c->life);
    do {
        if (s & SW_LIFE_RELEASED)
            return sw_carrier_fail_released();
    } while (!atomic_compare_exchange_weak(&c->life, &s, s + SW_LIFE_PIN));
    return SW_OK;
}

void sw_carrier_unpin(sw_carrier *c) {
    /* The last pin of a released carrier frees what the release left. */
    if (atomic_fetch_sub(&c->life, SW_LIFE_PIN) ==
        (SW_LIFE_RELEASED | SW_LIFE_PIN))
        free_storage(c);
}

int sw_carrier_is_pinned(const sw_carrier *c) {
    return atomic_load(&((sw_carrier *)c)->life) >= SW_LIFE_PIN;
}

int sw_carrier_is_owned(const sw_carrier *c) {
    return c->owner_token != 0 ||
           atomic_load(&((sw_carrier *)c)->move_pending) > 0;
}

int sw_carrier_has_owner(const sw_carrier *c) {
    return c->owner_token != 0;
}

/* Another thread's move owns c: nobody but the move may change it. */
static int moved_elsewhere(const sw_carrier *c) {
    return atomic_load(&((sw_carrier *)c)->move_pending) > 0 &&
           atomic_load(&((sw_carrier *)c)->move_thread) != sw_thread_id();
}

int sw_carrier_has_owner_access(const sw_carrier *c) {
    return c->owner_token != 0 && c->access_depth > 0 &&
           c->access_thread == sw_thread_id();
}

/* Public interfaces may write when not owned, or owned and accessed. */
static int writable_now(const sw_carrier *c) {
    return !c->owner_token || sw_carrier_has_owner_access(c);
}

int sw_carrier_is_mutable(sw_carrier *c) {
    int intrinsic = c->cls->is_mutable ? c->cls->is_mutable(c) : 0;
    return intrinsic && writable_now(c) && !moved_elsewhere(c);
}

sw_status sw_carrier_check_move(const sw_carrier *c) {
    if (moved_elsewhere(c))
        return sw_fail(SW_ERUNTIME, SW_MOVE_OWNED_MESSAGE);
    return SW_OK;
}

void sw_carrier_move_mark(sw_carrier *c, int pending) {
    if (pending > 0) {
        atomic_fetch_add(&c->move_pending, 1);
    } else if (atomic_fetch_sub(&c->move_pending, 1) == 1) {
        atomic_store(&c->move_thread, 0);
    }
}

void sw_carrier_move_worker(sw_carrier *c, uintptr_t thread) {
    atomic_store(&c->move_thread, thread);
}

sw_status sw_carrier_get(sw_carrier *c, int64_t i, sw_value *out) {
    sw_status st = sw_carrier_pin(c);
    if (st)
        return st;
    if (i < 0 || i >= c->cls->size(c))
        st = sw_fail(SW_EINDEX, "Carrier index out of range");
    else
        st = c->cls->get(c, i, out);
    sw_carrier_unpin(c);
    return st;
}

static sw_status set_pinned(sw_carrier *c, int64_t i, const sw_value *v) {
    /* A move's ownership first: its refusal says why the carrier cannot
     * be written now. */
    sw_status st = sw_carrier_check_move(c);
    if (st)
        return st;
    if (!sw_carrier_is_mutable(c) || !c->cls->set)
        return sw_carrier_fail_immutable();
    if (i < 0 || i >= c->cls->size(c))
        return sw_fail(SW_EINDEX, "Carrier index out of range");
    int_fast64_t before = atomic_load(&c->version);
    st = c->cls->set(c, i, v);
    if (st)
        return st;
    /* Exactly one bump per successful write, whatever the backend did. */
    if (atomic_load(&c->version) == before)
        atomic_fetch_add(&c->version, 1);
    return SW_OK;
}

sw_status sw_carrier_set(sw_carrier *c, int64_t i, const sw_value *v) {
    sw_status st = sw_carrier_pin(c);
    if (st)
        return st;
    st = set_pinned(c, i, v);
    sw_carrier_unpin(c);
    return st;
}

sw_status sw_carrier_dlpack_info(sw_carrier *c, void **pointer,
                                 int32_t *device_type, int32_t *device_id) {
    void *p = NULL;
    int32_t type = 0, id = 0;
    sw_status st;
    if (c->dlpack_fn) {
        st = c->dlpack_fn(c, c->dlpack_ctx, &p, &type, &id);
    } else if (c->cls->version < 2 || !c->cls->dlpack_info) {
        /* A version-1 class ends before the slot: never read past it. */
        return sw_fail(SW_EBUFFER, "DLPack is not supported for this carrier");
    } else {
        st = c->cls->dlpack_info(c, &p, &type, &id);
    }
    if (st)
        return st;
    *pointer = p;
    *device_type = type;
    *device_id = id;
    return SW_OK;
}

void sw_carrier_set_dlpack_route(sw_carrier *c, sw_dlpack_info_fn fn,
                                 void *ctx) {
    c->dlpack_fn = fn;
    c->dlpack_ctx = fn ? ctx : NULL;
}

sw_status sw_carrier_bump_version(sw_carrier *c) {
    if (!writable_now(c))
        return fail_owned();
    sw_status moving = sw_carrier_check_move(c);
    if (moving)
        return moving;
    atomic_fetch_add(&c->version, 1);
    return SW_OK;
}

sw_status sw_carrier_release_storage(sw_carrier *c) {
    if (!writable_now(c))
        return fail_owned();
    sw_status moving = sw_carrier_check_move(c);
    if (moving)
        return moving;
    return sw_carrier_release_moved(c);
}

sw_status sw_carrier_release_moved(sw_carrier *c) {
    if (!writable_now(c))
        return fail_owned();
    /* From now on the carrier is released for everyone; its storage goes
     * now, or when the last pin goes. */
    int_fast64_t before = atomic_fetch_or(&c->life, SW_LIFE_RELEASED);
    if (before != 0)
        return SW_OK;
    if (c->cls->version >= 4 && c->cls->release_now) {
        sw_status st = c->cls->release_now(c);
        if (st)
            atomic_fetch_and(&c->life, ~SW_LIFE_RELEASED);
        return st;
    }
    free_storage(c);
    return SW_OK;
}

static sw_status check_alloc_args(const sw_carrier *c, int64_t size,
                                  sw_dtype dtype) {
    if (size < 0)
        return sw_fail(SW_EVALUE, "%s allocation size must be non-negative",
                       c->cls->name);
    if ((int)dtype < 0 || (int)dtype > SW_DTYPE_COUNT)
        return sw_fail(SW_EVALUE, "unknown dtype %d", (int)dtype);
    return SW_OK;
}

sw_status sw_carrier_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                   sw_dtype dtype, int empty,
                                   sw_carrier **out) {
    sw_status st = check_alloc_args(c, size, dtype);
    if (st)
        return st;
    if (!c->cls->allocate_like)
        return sw_fail(SW_ENOTIMPL, "%s carrier does not support allocation",
                       c->cls->name);
    return c->cls->allocate_like(
        c, size, mutable_,
        dtype == SW_DTYPE_COUNT ? sw_carrier_dtype(c) : dtype, empty, out);
}

sw_status sw_carrier_new_like(sw_carrier *c, int64_t n, const sw_value *values,
                              int mutable_, sw_dtype dtype, sw_carrier **out) {
    sw_status st = check_alloc_args(c, n, dtype);
    if (st)
        return st;
    dtype = sw_carrier_pick_dtype(c, dtype);
    if (c->cls->new_like)
        return c->cls->new_like(c, n, values, mutable_, dtype, out);
    /* The default: allocate, then write each present value. */
    sw_carrier *r = NULL;
    st = sw_carrier_allocate_like(c, n, 1, dtype, 0, &r);
    for (int64_t i = 0; !st && i < n; ++i)
        if (values[i].kind != SW_VALUE_NONE)
            st = r->cls->set ? r->cls->set(r, i, &values[i])
                             : sw_carrier_fail_immutable();
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    atomic_store(&r->version, 0);
    if (!mutable_ && r->cls->is_mutable) {
        /* Backends decide intrinsic mutability at allocation; a default
         * new_like cannot change it afterwards. */
        sw_carrier_unref(r);
        return sw_fail(SW_ENOTIMPL,
                       "%s carrier cannot make immutable "
                       "copies",
                       c->cls->name);
    }
    *out = r;
    return SW_OK;
}

/* --------------------------------------------------------------- ownership */

sw_status sw_carrier_claim(sw_carrier *c, int64_t *token) {
    if (sw_carrier_is_released(c))
        return sw_carrier_fail_released();
    if (c->owner_token)
        return sw_fail(SW_ERUNTIME,
                       "Carrier is already owned by another carrier");
    sw_status moving = sw_carrier_check_move(c);
    if (moving)
        return moving;
    c->owner_token = atomic_fetch_add(&next_token, 1);
    *token = c->owner_token;
    return SW_OK;
}

sw_status sw_carrier_relinquish(sw_carrier *c, int64_t token) {
    if (!c->owner_token || token != c->owner_token)
        return sw_fail(SW_ERUNTIME, "Invalid carrier ownership token");
    if (c->access_depth > 0)
        return sw_fail(SW_ERUNTIME, "Carrier ownership cannot be "
                                    "relinquished during owner access");
    c->owner_token = 0;
    return SW_OK;
}

sw_status sw_carrier_begin_owner_access(sw_carrier *c, int64_t token) {
    if (!c->owner_token || token != c->owner_token)
        return sw_fail(SW_ERUNTIME, "Invalid carrier ownership token");
    uintptr_t me = sw_thread_id();
    if (c->access_depth > 0 && c->access_thread != me)
        return sw_fail(SW_ERUNTIME, "Carrier is already being accessed by "
                                    "its owner on another thread");
    c->access_thread = me;
    c->access_depth++;
    return SW_OK;
}

sw_status sw_carrier_end_owner_access(sw_carrier *c, int64_t token) {
    if (!c->owner_token || token != c->owner_token)
        return sw_fail(SW_ERUNTIME, "Invalid carrier ownership token");
    if (c->access_depth == 0 || c->access_thread != sw_thread_id())
        return sw_fail(SW_ERUNTIME, "Carrier owner access must end on the "
                                    "thread where it began");
    if (--c->access_depth == 0)
        c->access_thread = 0;
    return SW_OK;
}
