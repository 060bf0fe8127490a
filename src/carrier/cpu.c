/*
 * The CPU carrier: native memory, 64-byte aligned, or memory the caller
 * owns. Float32, Int32 and Bool elements.
 */
#include <math.h>
#include <string.h>

#include "carrier/internal.h"
#include "tensor/internal.h"
#include "strideweave/capability.h"
#include "op/internal.h"
#include "strideweave/dlpack.h"

typedef struct cpu_state {
    void *data;
    int64_t size;
    int owned;    /* data is an aligned allocation of the carrier's */
    int in_block; /* state and data live in the carrier's own block */
    int mutable_;
} cpu_state;

static cpu_state *cpu(sw_carrier *c) {
    return sw_carrier_state(c);
}

static int64_t cpu_size(sw_carrier *c) {
    return cpu(c)->size;
}

static sw_status cpu_get(sw_carrier *c, int64_t i, sw_value *out) {
    sw_dtype dtype = sw_carrier_dtype(c);
    *out = sw_element_load(dtype, (const char *)cpu(c)->data +
                                      i * sw_dtype_itemsize(dtype));
    return SW_OK;
}

sw_value sw_element_load(sw_dtype dtype, const void *src) {
    switch (dtype) {
    case SW_DTYPE_FLOAT32: {
        float f;
        memcpy(&f, src, sizeof f);
        return sw_value_f64(f);
    }
    case SW_DTYPE_INT32: {
        int32_t i;
        memcpy(&i, src, sizeof i);
        return sw_value_i64(i);
    }
    default:
        return sw_value_i64(*(const uint8_t *)src != 0);
    }
}

sw_status sw_element_store(const char *who, sw_dtype dtype, const sw_value *v,
                           void *dst) {
    if (v->kind == SW_VALUE_HOST) {
        /* A host number (from a Generic store) converts through its ops. */
        sw_value n;
        if (!v->ops || !v->ops->to_number)
            return sw_fail(SW_ETYPE, "%s value must be a number", who);
        sw_status st = v->ops->to_number(v, &n);
        if (st == SW_ETYPE)
            return sw_fail(SW_ETYPE, "%s value must be a number", who);
        if (st)
            return st;
        if (n.kind == SW_VALUE_HOST)
            return sw_fail(SW_ETYPE, "%s value must be a number", who);
        return sw_element_store(who, dtype, &n, dst);
    }
    switch (dtype) {
    case SW_DTYPE_FLOAT32: {
        float f = v->kind == SW_VALUE_F64   ? (float)v->as.f
                  : v->kind == SW_VALUE_I64 ? (float)v->as.i
                                            : 0.0f;
        memcpy(dst, &f, sizeof f);
        return SW_OK;
    }
    case SW_DTYPE_INT32: {
        if (v->kind == SW_VALUE_F64)
            return sw_fail(SW_ETYPE, "%s value must be an integer", who);
        int64_t i = v->kind == SW_VALUE_I64 ? v->as.i : 0;
        if (i < INT32_MIN || i > INT32_MAX)
            return sw_fail(SW_EOVERFLOW, "%s value is out of int32 range", who);
        int32_t x = (int32_t)i;
        memcpy(dst, &x, sizeof x);
        return SW_OK;
    }
    default: {
        uint8_t b = v->kind == SW_VALUE_F64   ? v->as.f != 0.0
                    : v->kind == SW_VALUE_I64 ? v->as.i != 0
                                              : 0;
        memcpy(dst, &b, 1);
        return SW_OK;
    }
    }
}

static sw_status cpu_store(sw_dtype dtype, const sw_value *v, void *dst) {
    return sw_element_store("CPU", dtype, v, dst);
}

static sw_status cpu_set(sw_carrier *c, int64_t i, const sw_value *v) {
    sw_dtype dtype = sw_carrier_dtype(c);
    char *base = cpu(c)->data;
    return cpu_store(dtype, v, base + i * sw_dtype_itemsize(dtype));
}

static int cpu_is_mutable(sw_carrier *c) {
    return cpu(c)->mutable_;
}

static void cpu_release(sw_carrier *c) {
    cpu_state *s = cpu(c);
    if (s->owned)
        sw_free_aligned(s->data);
    s->data = NULL;
    s->size = 0;
}

static void cpu_destroy(sw_carrier *c) {
    if (!cpu(c)->in_block)
        sw_free(cpu(c));
}

static void *cpu_data(sw_carrier *c) {
    return cpu(c)->data;
}

static sw_status cpu_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                   sw_dtype dtype, int empty,
                                   sw_carrier **out) {
    return sw_cpu_new(size, dtype, mutable_, empty, out);
}

static sw_status cpu_new_like(sw_carrier *c, int64_t n, const sw_value *values,
                              int mutable_, sw_dtype dtype, sw_carrier **out) {
    sw_carrier *r = NULL;
    sw_status st = sw_cpu_new(n, dtype, mutable_, 1, &r);
    if (st)
        return st;
    char *base = cpu(r)->data;
    int64_t item = sw_dtype_itemsize(dtype);
    for (int64_t i = 0; i < n && !st; ++i)
        st = cpu_store(dtype, &values[i], base + i * item);
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

/* The native operations (src/op/cpu_ops.c). */
static sw_status cpu_dispatch(sw_carrier *c, const sw_op_info *op,
                              struct sw_op **out) {
    return sw_cpu_op_new(op, out);
}

/* Host memory: DLPack device (kDLCPU, 0). */
static sw_status cpu_dlpack_info(sw_carrier *c, void **pointer,
                                 int32_t *device_type, int32_t *device_id) {
    *pointer = sw_carrier_is_released(c) ? NULL : cpu(c)->data;
    *device_type = kDLCPU;
    *device_id = 0;
    return SW_OK;
}

static const sw_carrier_class cpu_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "CPU",
    .size = cpu_size,
    .get = cpu_get,
    .set = cpu_set,
    .is_mutable = cpu_is_mutable,
    .release = cpu_release,
    .destroy = cpu_destroy,
    .allocate_like = cpu_allocate_like,
    .new_like = cpu_new_like,
    .data = cpu_data,
    .dlpack_info = cpu_dlpack_info,
    .dispatch = cpu_dispatch,
};

static sw_status check_cpu_dtype(sw_dtype dtype) {
    if (dtype != SW_DTYPE_FLOAT32 && dtype != SW_DTYPE_INT32 &&
        dtype != SW_DTYPE_BOOL)
        return sw_fail(SW_EVALUE, "CPU dtype must be DType.Float32, "
                                  "DType.Int32 or DType.Bool");
    return SW_OK;
}

static sw_status cpu_make(void *data, int64_t size, sw_dtype dtype, int owned,
                          int mutable_, sw_carrier **out) {
    cpu_state *s = sw_malloc(sizeof *s);
    if (!s)
        return sw_oom();
    s->data = data;
    s->size = size;
    s->owned = owned;
    s->in_block = 0;
    s->mutable_ = mutable_ != 0;
    sw_status st = sw_carrier_new(&cpu_class, s, dtype, out);
    if (st)
        sw_free(s);
    return st;
}

/*
 * The byte length of size elements of dtype. It must fit int64_t and
 * size_t with room to spare for the aligned allocator's header, so that
 * neither the length nor any element address computed from it wraps.
 */
static sw_status cpu_bytes(int64_t size, sw_dtype dtype, int64_t *bytes) {
    int64_t item = sw_dtype_itemsize(dtype);
    if (!sw_mul_ok(size, item, bytes) || *bytes > INT64_MAX - 128 ||
        (uint64_t)*bytes > (uint64_t)(SIZE_MAX - 128))
        return sw_fail(SW_EOVERFLOW,
                       "CPU size %lld is too large: %lld elements of "
                       "DType.%s (%lld bytes each) overflow the byte length",
                       (long long)size, (long long)size, sw_dtype_name(dtype),
                       (long long)item);
    return SW_OK;
}

/* The alignment that loads and stores of a dtype's elements need. */
static int64_t cpu_alignment(sw_dtype dtype) {
    switch (dtype) {
    case SW_DTYPE_FLOAT32:
        return (int64_t) _Alignof(float);
    case SW_DTYPE_INT32:
        return (int64_t) _Alignof(int32_t);
    default:
        return 1;
    }
}

sw_status sw_cpu_new(int64_t size, sw_dtype dtype, int mutable_, int empty,
                     sw_carrier **out) {
    if (size < 0)
        return sw_fail(SW_EVALUE, "CPU size must be non-negative");
    sw_status st = check_cpu_dtype(dtype);
    if (st)
        return st;
    int64_t bytes;
    if ((st = cpu_bytes(size, dtype, &bytes)))
        return st;
    void *data = sw_alloc_aligned((size_t)bytes, !empty);
    if (!data)
        return sw_oom();
    st = cpu_make(data, size, dtype, 1, mutable_, out);
    if (st)
        sw_free_aligned(data);
    return st;
}

sw_status sw_cpu_new_fresh(int64_t size, sw_dtype dtype, int empty,
                           sw_carrier **out) {
    int64_t bytes = 0;
    if (size < 0 || check_cpu_dtype(dtype) != SW_OK ||
        cpu_bytes(size, dtype, &bytes) != SW_OK || bytes > SW_CPU_BLOCK_BYTES) {
        sw_clear_error();
        return sw_cpu_new(size, dtype, 1, empty, out);
    }
    /* The tensor's room follows the state, as aligned as the state is. */
    size_t at = (sizeof(cpu_state) + _Alignof(max_align_t) - 1) /
                _Alignof(max_align_t) * _Alignof(max_align_t);
    void *state = NULL, *data = NULL;
    sw_status st =
        sw_carrier_new_block(&cpu_class, at + SW_TENSOR_ROOM, (size_t)bytes,
                             !empty, dtype, out, &state, &data);
    if (st)
        return st;
    sw_carrier_offer_tensor_room(*out, (char *)state + at);
    cpu_state *s = state;
    s->data = data;
    s->size = size;
    s->owned = 0;
    s->in_block = 1;
    s->mutable_ = 1;
    return SW_OK;
}

sw_status sw_cpu_wrap(void *pointer, int64_t size, sw_dtype dtype, int mutable_,
                      sw_carrier **out) {
    if (size < 0)
        return sw_fail(SW_EVALUE, "CPU size must be non-negative");
    if (pointer == NULL)
        return sw_fail(SW_EVALUE, "CPU pointer must be a positive integer "
                                  "address");
    sw_status st = check_cpu_dtype(dtype);
    if (st)
        return st;
    int64_t bytes, align = cpu_alignment(dtype);
    if ((st = cpu_bytes(size, dtype, &bytes)))
        return st;
    /* The end of the memory must be an address too. */
    if ((uintptr_t)pointer > UINTPTR_MAX - (uint64_t)bytes)
        return sw_fail(SW_EOVERFLOW,
                       "CPU pointer 0x%llx plus %lld bytes overflows the "
                       "address space",
                       (unsigned long long)(uintptr_t)pointer,
                       (long long)bytes);
    if ((uintptr_t)pointer % (uintptr_t)align != 0)
        return sw_fail(SW_EVALUE,
                       "CPU pointer 0x%llx is not aligned to %lld bytes, as "
                       "DType.%s elements require",
                       (unsigned long long)(uintptr_t)pointer, (long long)align,
                       sw_dtype_name(dtype));
    return cpu_make(pointer, size, dtype, 0, mutable_, out);
}

/* The memory of elements [first, first + count) of a live CPU carrier
 * that allocated its own storage: advise(its start, its bytes); nothing
 * for other carriers and ranges. */
static void advise_owned(sw_carrier *c, int64_t first, int64_t count,
                         void (*advise)(void *, size_t)) {
    if (!sw_carrier_is_cpu(c) || sw_carrier_is_released(c))
        return;
    const cpu_state *s = cpu(c);
    if (!s->owned || first < 0 || count <= 0 || first > s->size - count)
        return;
    size_t item = (size_t)sw_dtype_itemsize(sw_carrier_dtype(c));
    advise((char *)s->data + (size_t)first * item, (size_t)count * item);
}

void sw_cpu_discard(sw_carrier *c, int64_t first, int64_t count) {
    advise_owned(c, first, count, sw_discard_pages);
}

void sw_cpu_populate(sw_carrier *c, int64_t first, int64_t count) {
    advise_owned(c, first, count, sw_populate_pages);
}

void sw_cpu_small_pages(sw_carrier *c) {
    if (!sw_carrier_is_cpu(c) || sw_carrier_is_released(c) || !cpu(c)->owned)
        return;
    const cpu_state *s = cpu(c);
    sw_advise_small_pages(s->data, (size_t)s->size * (size_t)sw_dtype_itemsize(
                                                         sw_carrier_dtype(c)));
}

const sw_carrier_class *sw_cpu_class(void) {
    return &cpu_class;
}

int sw_carrier_is_cpu(const sw_carrier *c) {
    return sw_carrier_get_class(c) == &cpu_class;
}

void *sw_cpu_storage(sw_carrier *c) {
    return sw_carrier_is_cpu(c) ? cpu(c)->data : NULL;
}

void *sw_cpu_data(sw_carrier *c) {
    if (!sw_carrier_is_cpu(c) || sw_carrier_is_released(c))
        return NULL;
    return cpu(c)->data;
}
