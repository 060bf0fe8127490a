/*
 * The OpenCL carrier: one device buffer of Float32, Int32 or Bool
 * elements. Element reads are blocking reads (the in-order queue puts them
 * after every write and move enqueued before); element writes wait for the
 * device before the base publishes the new version; factories fill a
 * mapped buffer; scatter rewrites the buffer in one confirmed write.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "carrier/opencl/blocks.h"
#include "carrier/opencl/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "tensor/internal.h"

static opencl_state *ocl(sw_carrier *c) {
    return sw_carrier_state(c);
}

int sw_opencl_supports_dtype(sw_dtype dtype) {
    return dtype == SW_DTYPE_FLOAT32 || dtype == SW_DTYPE_INT32 ||
           dtype == SW_DTYPE_BOOL;
}

cl_mem sw_opencl_buffer(sw_carrier *c) {
    opencl_state *s = ocl(c);
    pthread_mutex_lock(&s->lock);
    cl_mem m = s->mem;
    if (m)
        (void)sw_cl.RetainMemObject(m);
    pthread_mutex_unlock(&s->lock);
    return m;
}

void sw_opencl_swap_buffer(sw_carrier *c, cl_mem mem) {
    opencl_state *s = ocl(c);
    pthread_mutex_lock(&s->lock);
    cl_mem old = s->mem;
    s->mem = mem;
    pthread_mutex_unlock(&s->lock);
    if (old)
        (void)sw_cl.ReleaseMemObject(old);
}

/*
 * Host blocks of CPU-device buffers. A fresh block faults its pages in at
 * the first write: the kernel zeroes each page (2 MiB at a time with
 * transparent huge pages, when it does not first stall compacting memory
 * for them), which costs as much as the copy into it. So a released
 * buffer's block is kept for the next buffer of the same rounded size: a
 * move into OpenCL or a large kernel's result then writes memory that is
 * already there. At most BLOCK_SLOTS blocks and BLOCK_BYTES bytes are
 * kept, the most recent first; sw_opencl_empty_cache hands them back.
 *
 * The lock is a leaf: nothing else is taken under it. Blocks come back
 * through the buffer's destructor callback, on whichever thread drops the
 * last reference to the buffer (a runtime thread, for one that a command
 * still held), once the runtime no longer uses the memory.
 */
#define BLOCK_HUGE ((size_t)2 << 20)
#define BLOCK_SLOTS 4
#define BLOCK_BYTES ((size_t)512 << 20)

typedef struct host_block {
    void *data;
    size_t size; /* a multiple of BLOCK_HUGE */
} host_block;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block *blocks[BLOCK_SLOTS]; /* blocks[0] the most recent */
static int blocks_count;
static size_t blocks_bytes;
static int64_t blocks_reused;

static void block_free(host_block *b) {
    if (b) {
        free(b->data);
        free(b);
    }
}

/* A kept block of exactly size bytes, taken out of the cache; NULL for
 * none. */
static host_block *block_take(size_t size) {
    host_block *b = NULL;
    pthread_mutex_lock(&blocks_lock);
    for (int i = 0; i < blocks_count; ++i) {
        if (blocks[i]->size != size)
            continue;
        b = blocks[i];
        memmove(&blocks[i], &blocks[i + 1],
                (size_t)(blocks_count - i - 1) * sizeof *blocks);
        --blocks_count;
        blocks_bytes -= size;
        ++blocks_reused;
        break;
    }
    pthread_mutex_unlock(&blocks_lock);
    return b;
}

/* Keeps b as the most recent block, dropping the oldest ones that no
 * longer fit; frees b itself when it is larger than the whole cache. */
static void block_put(host_block *b) {
    host_block *drop[BLOCK_SLOTS];
    int ndrop = 0;
    if (b->size > BLOCK_BYTES) {
        block_free(b);
        return;
    }
    pthread_mutex_lock(&blocks_lock);
    while (blocks_count > 0 && (blocks_count == BLOCK_SLOTS ||
                                blocks_bytes + b->size > BLOCK_BYTES)) {
        host_block *old = blocks[--blocks_count];
        blocks_bytes -= old->size;
        drop[ndrop++] = old;
    }
    memmove(&blocks[1], &blocks[0], (size_t)blocks_count * sizeof *blocks);
    blocks[0] = b;
    ++blocks_count;
    blocks_bytes += b->size;
    pthread_mutex_unlock(&blocks_lock);
    for (int i = 0; i < ndrop; ++i)
        block_free(drop[i]);
}

void sw_opencl_empty_cache(void) {
    host_block *drop[BLOCK_SLOTS];
    pthread_mutex_lock(&blocks_lock);
    int n = blocks_count;
    memcpy(drop, blocks, (size_t)n * sizeof *blocks);
    blocks_count = 0;
    blocks_bytes = 0;
    pthread_mutex_unlock(&blocks_lock);
    for (int i = 0; i < n; ++i)
        block_free(drop[i]);
}

void sw_opencl_buffer_stats(int64_t *cached_blocks, int64_t *cached_bytes,
                            int64_t *reused) {
    pthread_mutex_lock(&blocks_lock);
    if (cached_blocks)
        *cached_blocks = blocks_count;
    if (cached_bytes)
        *cached_bytes = (int64_t)blocks_bytes;
    if (reused)
        *reused = blocks_reused;
    pthread_mutex_unlock(&blocks_lock);
}

/* The destructor callback of a buffer over a host block. */
static void return_host_block(cl_mem m, void *block) {
    (void)m;
    block_put(block);
}

/*
 * A CPU device's buffers are host memory anyway: from bytes = 2 MiB on
 * they are made over a block of our own, 2 MiB aligned with transparent
 * huge pages asked for, kept for reuse once released (above). NULL when
 * that is not possible (the runtime then allocates).
 */
static cl_mem host_backed(sw_cl_device *d, int64_t bytes) {
    if (!(d->type & SW_CL_DEVICE_TYPE_CPU) || bytes < (int64_t)BLOCK_HUGE)
        return NULL;
    size_t size = ((size_t)bytes + BLOCK_HUGE - 1) & ~(BLOCK_HUGE - 1);
    host_block *b = block_take(size);
    if (!b) {
        b = malloc(sizeof *b);
        if (!b)
            return NULL;
        b->size = size;
        b->data = NULL;
        if (posix_memalign(&b->data, BLOCK_HUGE, size) != 0) {
            free(b);
            return NULL;
        }
#ifdef MADV_HUGEPAGE
        (void)madvise(b->data, size, MADV_HUGEPAGE);
#endif
    }
    cl_int err = SW_CL_SUCCESS;
    cl_mem m = sw_cl.CreateBuffer(d->context,
                                  SW_CL_MEM_READ_WRITE | SW_CL_MEM_USE_HOST_PTR,
                                  (size_t)bytes, b->data, &err);
    if (!m) {
        block_put(b);
        return NULL;
    }
    if (sw_cl.SetMemObjectDestructorCallback(m, return_host_block, b) !=
        SW_CL_SUCCESS) {
        /* Without the callback the block could not come back in time. */
        (void)sw_cl.ReleaseMemObject(m);
        (void)sw_cl.Finish(d->queue);
        block_free(b);
        return NULL;
    }
    return m;
}

sw_status sw_opencl_buffer_new(sw_cl_device *d, int64_t bytes, cl_mem *out) {
    cl_mem m = host_backed(d, bytes);
    cl_int err = SW_CL_SUCCESS;
    if (!m)
        m = sw_cl.CreateBuffer(d->context, SW_CL_MEM_READ_WRITE, (size_t)bytes,
                               NULL, &err);
    if (!m)
        return sw_fail(SW_ERUNTIME,
                       "OpenCL buffer of %lld bytes cannot be allocated on "
                       "%s (error %d)",
                       (long long)bytes, d->name, (int)err);
    *out = m;
    return SW_OK;
}

/* ------------------------------------------------------------- values */

static sw_status opencl_store(sw_dtype dtype, const sw_value *v, void *dst) {
    return sw_element_store("OpenCL", dtype, v, dst);
}

/* ------------------------------------------------------------- slots */

static int64_t opencl_size(sw_carrier *c) {
    return ocl(c)->size;
}

/* A blocking read of bytes at byte offset at into dst. */
static sw_status read_bytes(sw_carrier *c, int64_t at, int64_t bytes,
                            void *dst) {
    opencl_state *s = ocl(c);
    if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
        return sw_cl_fail_injected("read");
    cl_mem m = sw_opencl_buffer(c);
    if (!m)
        return sw_carrier_fail_released();
    cl_int err = sw_cl.EnqueueReadBuffer(s->device->queue, m, 1, (size_t)at,
                                         (size_t)bytes, dst, 0, NULL, NULL);
    (void)sw_cl.ReleaseMemObject(m);
    return err == SW_CL_SUCCESS ? SW_OK : sw_cl_fail("read", err);
}

/* A write of bytes at byte offset at, confirmed by the device. */
static sw_status write_bytes(sw_carrier *c, int64_t at, int64_t bytes,
                             const void *src) {
    opencl_state *s = ocl(c);
    if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
        return sw_cl_fail_injected("write");
    cl_mem m = sw_opencl_buffer(c);
    if (!m)
        return sw_carrier_fail_released();
    cl_event ev = NULL;
    cl_int err = sw_cl.EnqueueWriteBuffer(s->device->queue, m, 0, (size_t)at,
                                          (size_t)bytes, src, 0, NULL, &ev);
    sw_status st = err == SW_CL_SUCCESS ? sw_cl_wait(1, &ev, "write")
                                        : sw_cl_fail("write", err);
    sw_cl_release_events(1, &ev);
    (void)sw_cl.ReleaseMemObject(m);
    return st;
}

/* Puts back bytes a write that was not confirmed may have changed: a
 * blocking write outside the fault hook, keeping the caller's failure. */
static void restore_bytes(sw_carrier *c, int64_t at, int64_t bytes,
                          const void *old) {
    char msg[300];
    sw_status st = sw_errcode();
    snprintf(msg, sizeof msg, "%s", sw_errmsg());
    cl_mem m = sw_opencl_buffer(c);
    if (m) {
        (void)sw_cl.EnqueueWriteBuffer(ocl(c)->device->queue, m, 1, (size_t)at,
                                       (size_t)bytes, old, 0, NULL, NULL);
        (void)sw_cl.ReleaseMemObject(m);
    }
    (void)sw_fail(st, "%s", msg);
}

static sw_status opencl_get(sw_carrier *c, int64_t i, sw_value *out) {
    sw_dtype dtype = sw_carrier_dtype(c);
    int64_t item = sw_dtype_itemsize(dtype);
    unsigned char raw[4];
    sw_status st = read_bytes(c, i * item, item, raw);
    if (st)
        return st;
    *out = sw_element_load(dtype, raw);
    return SW_OK;
}

/*
 * One element write, published by the base only when this returns SW_OK:
 * the old value is read first, so that a write the device did not confirm
 * is undone and aliases keep seeing the old value.
 */
static sw_status opencl_set(sw_carrier *c, int64_t i, const sw_value *v) {
    sw_dtype dtype = sw_carrier_dtype(c);
    int64_t item = sw_dtype_itemsize(dtype);
    unsigned char raw[4], old[4];
    sw_status st = opencl_store(dtype, v, raw);
    if (!st)
        st = read_bytes(c, i * item, item, old);
    if (st)
        return st;
    st = write_bytes(c, i * item, item, raw);
    if (st)
        restore_bytes(c, i * item, item, old);
    return st;
}

static int opencl_is_mutable(sw_carrier *c) {
    return ocl(c)->mutable_;
}

static void opencl_release(sw_carrier *c) {
    sw_opencl_swap_buffer(c, NULL);
    ocl(c)->size = 0;
}

static void opencl_destroy(sw_carrier *c) {
    opencl_state *s = ocl(c);
    pthread_mutex_destroy(&s->lock);
    sw_free(s);
}

static sw_status opencl_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                      sw_dtype dtype, int empty,
                                      sw_carrier **out) {
    return sw_opencl_new(size, dtype, mutable_, empty, ocl(c)->device->index,
                         out);
}

/* Maps the whole buffer of a fresh carrier for writing (stage MAP). */
static sw_status map_for_write(sw_carrier *c, int64_t bytes, void **ptr) {
    opencl_state *s = ocl(c);
    if (sw_cl_injected(SW_OPENCL_STAGE_MAP))
        return sw_cl_fail_injected("map");
    cl_int err = SW_CL_SUCCESS;
    void *p = sw_cl.EnqueueMapBuffer(s->device->queue, s->mem, 1,
                                     SW_CL_MAP_WRITE_INVALIDATE_REGION, 0,
                                     (size_t)bytes, 0, NULL, NULL, &err);
    if (!p)
        return sw_cl_fail("map", err);
    *ptr = p;
    return SW_OK;
}

/* Unmaps and waits for the device to hold the values. */
static sw_status unmap_confirmed(sw_carrier *c, void *ptr) {
    opencl_state *s = ocl(c);
    cl_event ev = NULL;
    cl_int err = sw_cl.EnqueueUnmapMemObject(s->device->queue, s->mem, ptr, 0,
                                             NULL, &ev);
    if (err != SW_CL_SUCCESS)
        return sw_cl_fail("unmap", err);
    sw_status st = sw_cl_wait(1, &ev, "unmap");
    sw_cl_release_events(1, &ev);
    return st;
}

static sw_status opencl_new_like(sw_carrier *c, int64_t n,
                                 const sw_value *values, int mutable_,
                                 sw_dtype dtype, sw_carrier **out) {
    sw_carrier *r = NULL;
    sw_status st =
        sw_opencl_new(n, dtype, mutable_, 1, ocl(c)->device->index, &r);
    if (st || n == 0) {
        if (!st)
            *out = r;
        return st;
    }
    int64_t item = sw_dtype_itemsize(dtype);
    void *p = NULL;
    st = map_for_write(r, n * item, &p);
    for (int64_t i = 0; !st && i < n; ++i)
        st = opencl_store(dtype, &values[i], (char *)p + i * item);
    if (p) {
        char msg[300] = "";
        sw_status first = st;
        if (first)
            snprintf(msg, sizeof msg, "%s", sw_errmsg());
        sw_status un = unmap_confirmed(r, p);
        st = first ? sw_fail(first, "%s", msg) : un;
    }
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

/* The computing built-ins run generated kernels (ops.c); the layout
 * operations are views over the same buffer, which compile nothing. */
static sw_status opencl_dispatch(sw_carrier *c, const sw_op_info *op,
                                 struct sw_op **out) {
    (void)c;
    return sw_opencl_op_new(op, out);
}

const sw_carrier_class sw_opencl_carrier_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "OpenCL",
    .size = opencl_size,
    .get = opencl_get,
    .set = opencl_set,
    .is_mutable = opencl_is_mutable,
    .release = opencl_release,
    .destroy = opencl_destroy,
    .allocate_like = opencl_allocate_like,
    .new_like = opencl_new_like,
    .dispatch = opencl_dispatch,
};

const sw_carrier_class *sw_opencl_class(void) {
    return &sw_opencl_carrier_class;
}

int sw_carrier_is_opencl(const sw_carrier *c) {
    return c && sw_carrier_get_class(c) == &sw_opencl_carrier_class;
}

sw_move_key sw_move_key_opencl(void) {
    return sw_move_key_class(&sw_opencl_carrier_class);
}

int64_t sw_opencl_device_of(const sw_carrier *c) {
    return sw_carrier_is_opencl(c) ? ocl((sw_carrier *)c)->device->index : -1;
}

/* ------------------------------------------------------- construction */

sw_status sw_opencl_new(int64_t size, sw_dtype dtype, int mutable_, int empty,
                        int64_t device, sw_carrier **out) {
    if (size < 0)
        return sw_fail(SW_EVALUE, "OpenCL size must be non-negative");
    if (!sw_opencl_supports_dtype(dtype))
        return sw_fail(SW_EVALUE, "OpenCL dtype must be DType.Float32, "
                                  "DType.Int32 or DType.Bool");
    int64_t item = sw_dtype_itemsize(dtype), bytes;
    if (!sw_mul_ok(size, item, &bytes) || (uint64_t)bytes > SIZE_MAX / 2)
        return sw_fail(SW_EOVERFLOW,
                       "OpenCL size %lld is too large: the byte length "
                       "overflows",
                       (long long)size);
    if (device < -1)
        return sw_fail(SW_EVALUE,
                       "OpenCL device must be a non-negative index or -1");
    sw_cl_device *d = NULL;
    sw_status st = sw_cl_device_get(device, &d);
    if (st)
        return st;
    opencl_state *s = sw_malloc(sizeof *s);
    if (!s)
        return sw_oom();
    memset(s, 0, sizeof *s);
    s->device = d;
    s->size = size;
    s->mutable_ = mutable_ != 0;
    pthread_mutex_init(&s->lock, NULL);
    if (bytes > 0)
        st = sw_opencl_buffer_new(d, bytes, &s->mem);
    if (!st && bytes > 0 && !empty) {
        unsigned char zero = 0;
        cl_event ev = NULL;
        cl_int err = SW_CL_SUCCESS;
        if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
            st = sw_cl_fail_injected("fill");
        else if ((err = sw_cl.EnqueueFillBuffer(d->queue, s->mem, &zero, 1, 0,
                                                (size_t)bytes, 0, NULL, &ev)) !=
                 SW_CL_SUCCESS)
            st = sw_cl_fail("fill", err);
        else
            st = sw_cl_wait(1, &ev, "fill");
        sw_cl_release_events(1, &ev);
    }
    if (!st)
        st = sw_carrier_new(&sw_opencl_carrier_class, s, dtype, out);
    if (st) {
        if (s->mem)
            (void)sw_cl.ReleaseMemObject(s->mem);
        pthread_mutex_destroy(&s->lock);
        sw_free(s);
    }
    return st;
}

sw_status sw_opencl_synchronize(sw_carrier *c) {
    if (!sw_carrier_is_opencl(c))
        return sw_fail(SW_ETYPE, "sw_opencl_synchronize needs an OpenCL "
                                 "carrier");
    cl_int err = sw_cl.Finish(ocl(c)->device->queue);
    return err == SW_CL_SUCCESS ? SW_OK : sw_cl_fail("finish", err);
}

/* ------------------------------------------------------------- scatter */

sw_status sw_opencl_scatter(sw_carrier *c, const sw_tensor *src,
                            const sw_tensor *onto, const sw_layout *mapping,
                            int64_t mapping_offset) {
    if (!c || !src || !onto || !mapping)
        return sw_fail(SW_ETYPE, "scatter needs a source, a target and a "
                                 "mapping");
    if (!sw_carrier_is_opencl(c))
        return sw_fail(SW_ETYPE, "sw_opencl_scatter needs an OpenCL carrier");
    sw_status st = sw_carrier_pin(c);
    if (st)
        return st;
    sw_dtype dtype = sw_carrier_dtype(c);
    int64_t item = sw_dtype_itemsize(dtype), n = ocl(c)->size;
    unsigned char *host = NULL, *old = NULL;
    if ((st = sw_carrier_check_move(c)))
        goto done;
    if (!sw_carrier_is_mutable(c)) {
        st = sw_carrier_fail_immutable();
        goto done;
    }
    if (onto->carrier != c) {
        st = sw_fail(SW_EVALUE, "scatter_onto must be backed by this carrier");
        goto done;
    }
    if (!sw_tree_equal(mapping->shape, src->layout->shape)) {
        st = sw_fail(SW_EVALUE, "mapping shape must match to_scatter shape");
        goto done;
    }
    if (mapping_offset < 0) {
        st = sw_fail(SW_EVALUE, "mapping_offset must be non-negative");
        goto done;
    }
    /* An OpenCL source on the same device is copied by a kernel. */
    int handled = 0;
    st = sw_opencl_scatter_device(c, src, onto, mapping,
                                  onto->offset + mapping_offset, &handled);
    if (handled) {
        if (!st)
            st = sw_carrier_bump_version(c);
        goto done;
    }
    if (st)
        goto done;
    host = sw_malloc(n * item > 0 ? (size_t)(n * item) : 1);
    old = sw_malloc(n * item > 0 ? (size_t)(n * item) : 1);
    if (!host || !old) {
        st = sw_oom();
        goto done;
    }
    if (n > 0 && (st = read_bytes(c, 0, n * item, host)))
        goto done;
    memcpy(old, host, (size_t)(n * item));
    /* Every value lands in the host copy first: a bad index or value
     * fails before the device sees anything. */
    for (int64_t i = 0; i < src->layout->size; ++i) {
        int64_t at = 0;
        if ((st = sw_layout_index(mapping, i, &at)))
            goto done;
        at += onto->offset + mapping_offset;
        if (at < 0 || at >= n) {
            st = sw_fail(SW_EINDEX, "Carrier index out of range");
            goto done;
        }
        sw_value v;
        if ((st = sw_tensor_get((sw_tensor *)src, i, &v)))
            goto done;
        if (v.kind == SW_VALUE_NONE ||
            (v.kind == SW_VALUE_HOST && (!v.ops || !v.ops->to_number))) {
            sw_value_clear(&v);
            st = sw_fail(SW_ETYPE, "OpenCL scatter value must be a real "
                                   "number");
            goto done;
        }
        st = opencl_store(dtype, &v, host + at * item);
        sw_value_clear(&v);
        if (st == SW_ETYPE)
            st = sw_fail(SW_ETYPE, "OpenCL scatter value must be a real "
                                   "number");
        if (st)
            goto done;
    }
    if (n > 0 && (st = write_bytes(c, 0, n * item, host))) {
        restore_bytes(c, 0, n * item, old);
        goto done;
    }
    st = sw_carrier_bump_version(c);
done:
    sw_free(old);
    sw_free(host);
    sw_carrier_unpin(c);
    return st;
}

/* ------------------------------------------------------ strided blocks */

/*
 * A block as rectangular commands: modes merged where they are contiguous
 * on both sides and unit modes dropped, then the first three modes are one
 * clEnqueue*BufferRect region (bytes, rows, slices) and any further modes
 * are a loop over such regions.
 */
typedef struct rect_plan {
    int32_t rank;
    int64_t extent[SW_CL_BLOCK_MAX_RANK];
    int64_t src[SW_CL_BLOCK_MAX_RANK], dst[SW_CL_BLOCK_MAX_RANK];
    int64_t nregions; /* the product of the extents past the third mode */
} rect_plan;

static sw_status rect_plan_init(const sw_cl_block *b, int64_t src_size,
                                int64_t dst_size, rect_plan *p) {
    memset(p, 0, sizeof *p);
    if (b->rank < 1 || b->rank > SW_CL_BLOCK_MAX_RANK)
        return sw_fail(SW_EVALUE, "an OpenCL block has 1 to %d modes",
                       SW_CL_BLOCK_MAX_RANK);
    /* The last element of the block on each side must be in range; the
     * nesting rule makes the block's elements distinct on each side. */
    int64_t src_last = b->src_at, dst_last = b->dst_at;
    for (int32_t k = 0; k < b->rank; ++k) {
        if (b->extent[k] < 1)
            return sw_fail(SW_EVALUE, "an OpenCL block has positive extents");
        if (b->src_stride[0] != 1 || b->dst_stride[0] != 1 ||
            (k > 0 &&
             (b->src_stride[k] < b->src_stride[k - 1] * b->extent[k - 1] ||
              b->dst_stride[k] < b->dst_stride[k - 1] * b->extent[k - 1] ||
              b->src_stride[k] % b->src_stride[k - 1] != 0 ||
              b->dst_stride[k] % b->dst_stride[k - 1] != 0)))
            return sw_fail(SW_EVALUE, "an OpenCL block's strides must nest "
                                      "column-major");
        src_last += (b->extent[k] - 1) * b->src_stride[k];
        dst_last += (b->extent[k] - 1) * b->dst_stride[k];
    }
    if (b->src_at < 0 || b->dst_at < 0 ||
        (src_size >= 0 && src_last >= src_size) ||
        (dst_size >= 0 && dst_last >= dst_size))
        return sw_fail(SW_EINDEX, "Carrier index out of range");
    for (int32_t k = 0; k < b->rank; ++k) {
        if (b->extent[k] == 1 && k > 0)
            continue;
        int32_t r = p->rank;
        if (r > 0 && b->src_stride[k] == p->src[r - 1] * p->extent[r - 1] &&
            b->dst_stride[k] == p->dst[r - 1] * p->extent[r - 1]) {
            p->extent[r - 1] *= b->extent[k];
            continue;
        }
        p->extent[r] = b->extent[k];
        p->src[r] = b->src_stride[k];
        p->dst[r] = b->dst_stride[k];
        p->rank = r + 1;
    }
    p->nregions = 1;
    for (int32_t k = 3; k < p->rank; ++k)
        p->nregions *= p->extent[k];
    return SW_OK;
}

/* Region r's element origins (source, destination) and the rect geometry
 * in bytes. */
static void rect_region(const rect_plan *p, const sw_cl_block *b, int64_t r,
                        int64_t item, size_t origin_src[3],
                        size_t origin_dst[3], size_t region[3],
                        size_t pitch_src[2], size_t pitch_dst[2]) {
    int64_t at_src = b->src_at, at_dst = b->dst_at;
    for (int32_t k = 3; k < p->rank; ++k) {
        int64_t a = r % p->extent[k];
        r /= p->extent[k];
        at_src += a * p->src[k];
        at_dst += a * p->dst[k];
    }
    origin_src[0] = (size_t)(at_src * item);
    origin_dst[0] = (size_t)(at_dst * item);
    origin_src[1] = origin_src[2] = origin_dst[1] = origin_dst[2] = 0;
    region[0] = (size_t)(p->extent[0] * item);
    region[1] = p->rank > 1 ? (size_t)p->extent[1] : 1;
    region[2] = p->rank > 2 ? (size_t)p->extent[2] : 1;
    /* Pitches of 0 let the runtime compute them for unused dimensions. */
    pitch_src[0] = p->rank > 1 ? (size_t)(p->src[1] * item) : 0;
    pitch_dst[0] = p->rank > 1 ? (size_t)(p->dst[1] * item) : 0;
    pitch_src[1] = p->rank > 2 ? (size_t)(p->src[2] * item) : 0;
    pitch_dst[1] = p->rank > 2 ? (size_t)(p->dst[2] * item) : 0;
}

enum { BLOCK_WRITE, BLOCK_READ, BLOCK_COPY };

/* Enqueues every region of the block (dir: BLOCK_*), then waits for all
 * of them: the runtime may report a failed command only through its own
 * event. */
static sw_status block_run(int dir, sw_carrier *src, const void *host_src,
                           sw_carrier *dst, void *host_dst,
                           const sw_cl_block *b) {
    sw_carrier *dev = dir == BLOCK_READ ? src : dst;
    opencl_state *s = ocl(dev);
    int64_t item = sw_dtype_itemsize(sw_carrier_dtype(dev));
    cl_mem src_mem = dir == BLOCK_WRITE ? NULL : sw_opencl_buffer(src);
    cl_mem dst_mem = dir == BLOCK_READ ? NULL : sw_opencl_buffer(dst);
    cl_event *events = NULL;
    cl_uint nevents = 0;
    rect_plan p;
    memset(&p, 0, sizeof p);
    sw_status st = SW_OK;
    if ((dir != BLOCK_WRITE && !src_mem) || (dir != BLOCK_READ && !dst_mem))
        st = sw_carrier_fail_released();
    else
        st = rect_plan_init(b, dir == BLOCK_WRITE ? -1 : ocl(src)->size,
                            dir == BLOCK_READ ? -1 : ocl(dst)->size, &p);
    if (!st && !(events = sw_calloc((size_t)p.nregions, sizeof *events)))
        st = sw_oom();
    const char *what = dir == BLOCK_WRITE  ? "block write"
                       : dir == BLOCK_READ ? "block read"
                                           : "block copy";
    for (int64_t r = 0; !st && r < p.nregions; ++r) {
        size_t os[3], od[3], region[3], ps[2], pd[2];
        rect_region(&p, b, r, item, os, od, region, ps, pd);
        if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE)) {
            st = sw_cl_fail_injected(what);
            break;
        }
        cl_int err;
        cl_event *ev = &events[nevents];
        if (dir == BLOCK_WRITE)
            err = sw_cl.EnqueueWriteBufferRect(s->device->queue, dst_mem, 0, od,
                                               os, region, pd[0], pd[1], ps[0],
                                               ps[1], host_src, 0, NULL, ev);
        else if (dir == BLOCK_READ)
            err = sw_cl.EnqueueReadBufferRect(s->device->queue, src_mem, 0, os,
                                              od, region, ps[0], ps[1], pd[0],
                                              pd[1], host_dst, 0, NULL, ev);
        else
            err = sw_cl.EnqueueCopyBufferRect(s->device->queue, src_mem,
                                              dst_mem, os, od, region, ps[0],
                                              ps[1], pd[0], pd[1], 0, NULL, ev);
        if (err != SW_CL_SUCCESS)
            st = sw_cl_fail(what, err);
        else
            ++nevents;
    }
    if (nevents) {
        /* Whatever was enqueued completes before the host memory it
         * reads or writes may go, also after a failure. */
        (void)sw_cl.Flush(s->device->queue);
        if (st)
            (void)sw_cl.WaitForEvents(nevents, events);
        else
            st = sw_cl_wait(nevents, events, what);
        sw_cl_release_events(nevents, events);
    }
    sw_free(events);
    if (src_mem)
        (void)sw_cl.ReleaseMemObject(src_mem);
    if (dst_mem)
        (void)sw_cl.ReleaseMemObject(dst_mem);
    return st;
}

sw_status sw_opencl_block_write(sw_carrier *dst, const void *src,
                                const sw_cl_block *b) {
    if (!sw_carrier_is_opencl(dst) || !src || !b)
        return sw_fail(SW_ETYPE, "an OpenCL block write needs an OpenCL "
                                 "destination, host memory and a block");
    return block_run(BLOCK_WRITE, NULL, src, dst, NULL, b);
}

sw_status sw_opencl_block_read(sw_carrier *src, void *dst,
                               const sw_cl_block *b) {
    if (!sw_carrier_is_opencl(src) || !dst || !b)
        return sw_fail(SW_ETYPE, "an OpenCL block read needs an OpenCL "
                                 "source, host memory and a block");
    return block_run(BLOCK_READ, src, NULL, NULL, dst, b);
}

sw_status sw_opencl_block_copy(sw_carrier *src, sw_carrier *dst,
                               const sw_cl_block *b, int *handled) {
    *handled = 0;
    if (!sw_carrier_is_opencl(src) || !sw_carrier_is_opencl(dst) || !b ||
        src == dst)
        return sw_fail(SW_ETYPE, "an OpenCL block copy needs two distinct "
                                 "OpenCL carriers and a block");
    if (ocl(src)->device != ocl(dst)->device)
        return SW_OK;
    if (sw_carrier_dtype(src) != sw_carrier_dtype(dst))
        return sw_fail(SW_ETYPE, "an OpenCL block copy needs one dtype");
    *handled = 1;
    return block_run(BLOCK_COPY, src, NULL, dst, NULL, b);
}

sw_status sw_opencl_grow_empty(sw_carrier *c, int64_t size) {
    if (!sw_carrier_is_opencl(c))
        return sw_fail(SW_ETYPE, "only an OpenCL carrier grows this way");
    if (sw_carrier_is_released(c))
        return sw_carrier_fail_released();
    opencl_state *s = ocl(c);
    int64_t item = sw_dtype_itemsize(sw_carrier_dtype(c)), bytes;
    if (size < 0 || !sw_mul_ok(size, item, &bytes) ||
        (uint64_t)bytes > SIZE_MAX / 2)
        return sw_fail(SW_EOVERFLOW,
                       "OpenCL size %lld is too large: the byte length "
                       "overflows",
                       (long long)size);
    pthread_mutex_lock(&s->lock);
    int empty = s->size == 0 && s->mem == NULL;
    pthread_mutex_unlock(&s->lock);
    if (!empty)
        return sw_fail(SW_EVALUE, "only an empty OpenCL carrier can grow");
    if (size == 0)
        return SW_OK;
    cl_mem m = NULL;
    sw_status st = sw_opencl_buffer_new(s->device, bytes, &m);
    if (st)
        return st;
    unsigned char zero = 0;
    cl_event ev = NULL;
    cl_int err = SW_CL_SUCCESS;
    if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
        st = sw_cl_fail_injected("fill");
    else if ((err = sw_cl.EnqueueFillBuffer(s->device->queue, m, &zero, 1, 0,
                                            (size_t)bytes, 0, NULL, &ev)) !=
             SW_CL_SUCCESS)
        st = sw_cl_fail("fill", err);
    else
        st = sw_cl_wait(1, &ev, "fill");
    sw_cl_release_events(1, &ev);
    if (st) {
        (void)sw_cl.ReleaseMemObject(m);
        return st;
    }
    pthread_mutex_lock(&s->lock);
    s->mem = m;
    s->size = size;
    pthread_mutex_unlock(&s->lock);
    return SW_OK;
}
