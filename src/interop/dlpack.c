/*
 * DLPack export: a managed tensor that aliases a carrier's memory.
 *
 * The managed tensor is one allocation: the DLPack struct (legacy or
 * versioned), the carrier reference its deleter drops, and the shape and
 * stride arrays it points at. Export never copies elements, so its cost
 * does not depend on the tensor's size.
 *
 * Lifetime: the export holds a pin on the carrier (see sw_carrier_pin)
 * until its deleter runs, so a release or a move of the carrier meanwhile
 * takes effect at once for the carrier (released, size 0) while the
 * memory the consumer addresses stays valid until the consumer lets go.
 * Live exports are kept in a set, so a deleter called a second time on
 * the same managed tensor finds it absent and does nothing, without
 * reading the freed block.
 */
#include <pthread.h>
#include <string.h>

#include "carrier/internal.h"
#include "layout/internal.h"
#include "strideweave/evictable.h"
#include "strideweave/interop.h"
#include "tensor/internal.h"

typedef struct export_block {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } m;
    sw_carrier *carrier;
    /* The request's owner, handed to owner_release by the deleter. */
    void *owner;
    void (*owner_release)(void *owner);
    /* Whether the export holds a pin (a released carrier has none). */
    int pinned;
    int64_t dims[]; /* ndim extents, then ndim strides */
} export_block;

/* ------------------------------------------------------ live exports */

/* An open-addressing set of live blocks (linear probing, deletion by
 * backward shift). It starts in static slots, so that an export costs one
 * allocation, and returns to them whenever it empties. */
#define LIVE_STATIC 64
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static export_block *live_static[LIVE_STATIC];
static export_block **live_slots = live_static;
static size_t live_cap = LIVE_STATIC, live_n;

static size_t live_home(const export_block *b, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)b;
    x ^= x >> 31;
    x *= UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(x >> 17) & (cap - 1);
}

static int live_insert_locked(export_block *b) {
    if (2 * (live_n + 1) > live_cap) {
        size_t cap = 2 * live_cap;
        export_block **slots = sw_calloc(cap, sizeof *slots);
        if (!slots)
            return 0;
        for (size_t i = 0; i < live_cap; ++i) {
            if (!live_slots[i])
                continue;
            size_t j = live_home(live_slots[i], cap);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = live_slots[i];
        }
        if (live_slots != live_static)
            sw_free(live_slots);
        live_slots = slots;
        live_cap = cap;
    }
    size_t j = live_home(b, live_cap);
    while (live_slots[j])
        j = (j + 1) & (live_cap - 1);
    live_slots[j] = b;
    live_n++;
    return 1;
}

/* Removes b; 0 if it was not live (a repeated deleter call). */
static int live_remove_locked(const export_block *b) {
    size_t j = live_home(b, live_cap);
    while (live_slots[j] != b) {
        if (!live_slots[j])
            return 0;
        j = (j + 1) & (live_cap - 1);
    }
    live_slots[j] = NULL;
    /* Close the gap: move back later entries whose home is not between
     * the gap and themselves. */
    for (size_t k = (j + 1) & (live_cap - 1); live_slots[k];
         k = (k + 1) & (live_cap - 1)) {
        size_t h = live_home(live_slots[k], live_cap);
        int stays = j <= k ? (j < h && h <= k) : (j < h || h <= k);
        if (!stays) {
            live_slots[j] = live_slots[k];
            live_slots[k] = NULL;
            j = k;
        }
    }
    if (--live_n == 0 && live_slots != live_static) {
        sw_free(live_slots);
        live_slots = live_static;
        live_cap = LIVE_STATIC;
    }
    return 1;
}

/*
 * The DLPack storage of a carrier: the address the tensor offset is
 * relative to, and the device, as the carrier's dlpack_info slot reports
 * them (device used verbatim). A null address is refused for a tensor
 * with elements: it would hand out storage that is not there.
 */
static sw_status storage_info(const sw_tensor *t, void **pointer,
                              int32_t *device_type, int32_t *device_id) {
    if (sw_carrier_is_evictable(t->carrier))
        return sw_fail(SW_EBUFFER,
                       "DLPack is not supported for Evictable carrier");
    void *p = NULL;
    int32_t type = 0, id = 0;
    sw_status st = sw_carrier_dlpack_info(t->carrier, &p, &type, &id);
    if (st)
        return st;
    if (!p && t->layout->size > 0)
        return sw_fail(SW_EBUFFER, "DLPack data pointer must be non-null");
    *pointer = p;
    *device_type = type;
    *device_id = id;
    return SW_OK;
}

static sw_status export_dtype(sw_dtype dtype, DLDataType *out) {
    switch (dtype) {
    case SW_DTYPE_FLOAT32:
        out->code = kDLFloat;
        break;
    case SW_DTYPE_INT32:
        out->code = kDLInt;
        break;
    default:
        return sw_fail(SW_EBUFFER,
                       "DLPack export supports only Float32 and Int32 tensors");
    }
    out->bits = 32;
    out->lanes = 1;
    return SW_OK;
}

sw_status sw_tensor_dlpack_device(const sw_tensor *t, int32_t *device_type,
                                  int32_t *device_id) {
    if (!t)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_status gate = sw_tensor_single(t, SW_ENTRY_DLPACK);
    if (gate)
        return gate;
    void *p = NULL;
    int32_t type = 0, id = 0;
    sw_status st = storage_info(t, &p, &type, &id);
    if (st)
        return st;
    *device_type = type;
    *device_id = id;
    return SW_OK;
}

/*
 * Drops the carrier reference and the owner, and frees the block, once.
 * The carrier goes first: an owner that keeps the carrier alive (a
 * binding's tensor object) makes that a plain count decrement.
 */
static void block_delete(export_block *b) {
    pthread_mutex_lock(&live_lock);
    int live = live_remove_locked(b);
    pthread_mutex_unlock(&live_lock);
    if (!live)
        return;
    /* The storage may go now if the carrier was released meanwhile. */
    if (b->pinned)
        sw_carrier_unpin(b->carrier);
    sw_carrier_unref(b->carrier);
    if (b->owner_release)
        b->owner_release(b->owner);
    sw_free(b);
}

/* The managed tensor is the block's first member, so its address is the
 * block's: the deleters find the block without reading it, which a
 * repeated call must not do. */
static void delete_legacy(DLManagedTensor *self) {
    if (self)
        block_delete((export_block *)(void *)self);
}

static void delete_versioned(DLManagedTensorVersioned *self) {
    if (self)
        block_delete((export_block *)(void *)self);
}

/* Builds the managed tensor once every check has passed. */
static sw_status make_export(sw_tensor *t, void *pointer, int32_t device_type,
                             int32_t device_id, DLDataType dtype, int versioned,
                             const sw_dlpack_request *req, int pinned,
                             void **out) {
    const sw_layout *l = t->layout;
    int32_t ndim = l->nleaf;
    size_t dims = (size_t)ndim * 2 * sizeof(int64_t);
    export_block *b = sw_malloc(sizeof *b + dims);
    if (!b)
        return sw_oom();
    memset(b, 0, sizeof *b);
    int64_t *shape = ndim ? b->dims : NULL;
    int64_t *strides = ndim ? b->dims + ndim : NULL;
    if (ndim) {
        memcpy(shape, sw_layout_leaf_extents(l), (size_t)ndim * sizeof *shape);
        memcpy(strides, sw_layout_leaf_strides(l),
               (size_t)ndim * sizeof *strides);
    }
    DLTensor dl;
    memset(&dl, 0, sizeof dl);
    dl.data = pointer;
    dl.device.device_type = (DLDeviceType)device_type;
    dl.device.device_id = device_id;
    dl.ndim = ndim;
    dl.dtype = dtype;
    dl.shape = shape;
    dl.strides = strides;
    /* The offset fits: offset + cosize <= the carrier's size, whose bytes
     * were allocated. */
    dl.byte_offset = (uint64_t)t->offset * (uint64_t)(dtype.bits / 8);
    pthread_mutex_lock(&live_lock);
    int ok = live_insert_locked(b);
    pthread_mutex_unlock(&live_lock);
    if (!ok) {
        sw_free(b);
        return sw_oom();
    }
    b->carrier = sw_carrier_retain(t->carrier);
    b->pinned = pinned;
    if (req && req->owner_release) {
        b->owner = req->owner;
        b->owner_release = req->owner_release;
    }
    if (versioned) {
        DLManagedTensorVersioned *m = &b->m.versioned;
        m->version.major = SW_DLPACK_MAJOR;
        m->version.minor = SW_DLPACK_MINOR;
        m->manager_ctx = b;
        m->deleter = delete_versioned;
        m->flags = sw_tensor_is_mutable(t) ? 0 : DLPACK_FLAG_BITMASK_READ_ONLY;
        m->dl_tensor = dl;
        *out = m;
    } else {
        DLManagedTensor *m = &b->m.legacy;
        m->manager_ctx = b;
        m->deleter = delete_legacy;
        m->dl_tensor = dl;
        *out = m;
    }
    return SW_OK;
}

/* The export bodies run with the carrier pinned (unless it is released)
 * from before its storage is looked up; a successful export keeps the
 * pin, a failed one drops it. */
static sw_status to_dlpack_pinned(sw_tensor *t, int versioned, int pinned,
                                  void **out) {
    void *pointer = NULL;
    int32_t device_type = 0, device_id = 0;
    DLDataType dtype = {0, 0, 0};
    sw_status st = storage_info(t, &pointer, &device_type, &device_id);
    if (!st)
        st = export_dtype(sw_tensor_dtype(t), &dtype);
    if (st)
        return st;
    return make_export(t, pointer, device_type, device_id, dtype, versioned,
                       NULL, pinned, out);
}

sw_status sw_tensor_to_dlpack(sw_tensor *t, int versioned, void **out) {
    if (!t)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_status gate = sw_tensor_single(t, SW_ENTRY_DLPACK);
    if (gate)
        return gate;
    int pinned = sw_carrier_pin(t->carrier) == SW_OK;
    sw_status st = to_dlpack_pinned(t, versioned, pinned, out);
    if (st && pinned)
        sw_carrier_unpin(t->carrier);
    return st;
}

static sw_status export_pinned(sw_tensor *t, const sw_dlpack_request *req,
                               int pinned, int *versioned, void **out) {
    if (req->copy)
        return sw_fail(SW_EBUFFER, "DLPack copy exports are not supported");
    void *pointer = NULL;
    int32_t device_type = 0, device_id = 0;
    sw_status st = storage_info(t, &pointer, &device_type, &device_id);
    if (st)
        return st;
    switch (req->dl_device) {
    case SW_DLPACK_ARG_NONE:
        break;
    case SW_DLPACK_ARG_PAIR:
        if (req->device[0] != device_type || req->device[1] != device_id)
            return sw_fail(SW_EBUFFER, "DLPack cross-device exports are not "
                                       "supported for this tensor");
        break;
    case SW_DLPACK_ARG_WRONG_LENGTH:
        return sw_fail(SW_EVALUE, "DLPack dl_device must have two elements");
    default:
        return sw_fail(SW_ETYPE, "DLPack dl_device must be a tuple or list");
    }
    DLDataType dtype = {0, 0, 0};
    st = export_dtype(sw_tensor_dtype(t), &dtype);
    if (st)
        return st;
    int want_versioned = 0;
    switch (req->max_version) {
    case SW_DLPACK_ARG_NONE:
        break;
    case SW_DLPACK_ARG_PAIR:
        if (req->version[0] < 0 || req->version[1] < 0)
            return sw_fail(SW_EVALUE,
                           "DLPack max_version elements must be non-negative");
        want_versioned = req->version[0] >= 1;
        break;
    case SW_DLPACK_ARG_WRONG_LENGTH:
        return sw_fail(SW_EVALUE, "DLPack max_version must have two elements");
    default:
        return sw_fail(SW_ETYPE, "DLPack max_version must be a tuple or list");
    }
    void *m = NULL;
    st = make_export(t, pointer, device_type, device_id, dtype, want_versioned,
                     req, pinned, &m);
    if (st)
        return st;
    if (versioned)
        *versioned = want_versioned;
    *out = m;
    return SW_OK;
}

sw_status sw_tensor_dlpack_export(sw_tensor *t, const sw_dlpack_request *req,
                                  int *versioned, void **out) {
    sw_dlpack_request none;
    if (!req) {
        memset(&none, 0, sizeof none);
        req = &none;
    }
    if (!t)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_status gate = sw_tensor_single(t, SW_ENTRY_DLPACK);
    if (gate)
        return gate;
    int pinned = sw_carrier_pin(t->carrier) == SW_OK;
    sw_status st = export_pinned(t, req, pinned, versioned, out);
    if (st && pinned)
        sw_carrier_unpin(t->carrier);
    return st;
}
