/*
 * The exact bulk moves of the OpenCL carrier: CPU->OpenCL, OpenCL->CPU and
 * OpenCL->OpenCL, as transfer routes of the move registry (interop.h).
 *
 * A move copies the physical span (cosize elements from the tensor's
 * offset, holes included) to the start of the destination. Its submit,
 * on the submitting thread, enqueues the device commands and returns;
 * its completion, collected on the move executor, waits for their events
 * and then publishes:
 *  - into OpenCL: the span goes into a fresh buffer (with the old
 *    buffer's tail behind it), which replaces the destination's buffer
 *    only once the device has completed, so a failure at any stage leaves
 *    the destination's storage and values as they were;
 *  - into CPU memory: the source's span is mapped, and copied into the
 *    destination only once the map has completed, so a failed enqueue,
 *    map or wait writes nothing.
 * Every move copies at least one element (a layout's cosize is at least
 * one), so every move synchronises with the work enqueued before it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "base/pool.h"
#include "carrier/defined.h"
#include "carrier/opencl/internal.h"
#include "tensor/internal.h"

enum { CPU_TO_OPENCL = 0, OPENCL_TO_CPU = 1, OPENCL_TO_OPENCL = 2 };

static const char *const class_names[3] = {"CpuToOpenCLMoveOperation",
                                           "OpenCLToCpuMoveOperation",
                                           "OpenCLToOpenCLMoveOperation"};

typedef struct move_work {
    int kind;
    const sw_transfer_request *req;
    sw_cl_device *device; /* whose queue runs the commands */
    int64_t bytes;        /* of the span */
    cl_mem fresh;         /* the destination's new buffer */
    cl_mem src_mem, old_mem;
    void *mapped;
    cl_event events[3];
    cl_uint nevents;
} move_work;

static opencl_state *ocl(sw_carrier *c) {
    return sw_carrier_state(c);
}

static sw_status move_prepare(void *ctx, const sw_transfer_request *req,
                              void **work, int *unsupported, char *reason,
                              size_t size) {
    int kind = (int)(intptr_t)ctx;
    sw_carrier *src = req->tensor->carrier, *dst = req->destination;
    int src_ok = kind == CPU_TO_OPENCL ? sw_carrier_is_cpu(src)
                                       : sw_carrier_is_opencl(src);
    int dst_ok = kind == OPENCL_TO_CPU ? sw_carrier_is_cpu(dst)
                                       : sw_carrier_is_opencl(dst);
    if (!src_ok)
        return sw_fail(SW_ETYPE, "%s requires a%s source", class_names[kind],
                       kind == CPU_TO_OPENCL ? " CPU" : "n OpenCL");
    if (!dst_ok)
        return sw_fail(SW_ETYPE, "%s requires a%s destination",
                       class_names[kind],
                       kind == OPENCL_TO_CPU ? " CPU" : "n OpenCL");
    if (kind == OPENCL_TO_OPENCL && ocl(src)->device != ocl(dst)->device) {
        *unsupported = 1;
        snprintf(reason, size,
                 "the carriers are on different OpenCL "
                 "devices");
        return SW_OK;
    }
    move_work *w = sw_malloc(sizeof *w);
    if (!w)
        return sw_oom();
    memset(w, 0, sizeof *w);
    w->kind = kind;
    w->req = req;
    w->device = kind == OPENCL_TO_CPU ? ocl(src)->device : ocl(dst)->device;
    w->bytes = req->physical_span * sw_dtype_itemsize(req->dtype);
    *work = w;
    return SW_OK;
}

/* One enqueued command's outcome (stage ENQUEUE unless map). */
static sw_status enqueued(cl_int err, const char *what) {
    return err == SW_CL_SUCCESS ? SW_OK : sw_cl_fail(what, err);
}

/* Enqueues the span into a fresh buffer, then the old buffer's tail. */
static sw_status submit_to_opencl(move_work *w) {
    const sw_transfer_request *req = w->req;
    sw_carrier *dst = req->destination;
    int64_t item = sw_dtype_itemsize(req->dtype);
    int64_t total = ocl(dst)->size * item;
    cl_command_queue q = w->device->queue;
    sw_status st = sw_opencl_buffer_new(w->device, total, &w->fresh);
    if (st)
        return st;
    if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
        return sw_cl_fail_injected("copy");
    if (w->kind == CPU_TO_OPENCL) {
        const char *data = sw_cpu_storage(req->tensor->carrier);
        if (!data)
            return sw_carrier_fail_released();
        st = enqueued(sw_cl.EnqueueWriteBuffer(q, w->fresh, 0, 0,
                                               (size_t)w->bytes,
                                               data + req->offset * item, 0,
                                               NULL, &w->events[w->nevents]),
                      "write");
    } else {
        w->src_mem = sw_opencl_buffer(req->tensor->carrier);
        if (!w->src_mem)
            return sw_carrier_fail_released();
        st = enqueued(sw_cl.EnqueueCopyBuffer(
                          q, w->src_mem, w->fresh, (size_t)(req->offset * item),
                          0, (size_t)w->bytes, 0, NULL, &w->events[w->nevents]),
                      "copy");
    }
    if (st)
        return st;
    ++w->nevents;
    if (total > w->bytes) {
        w->old_mem = sw_opencl_buffer(dst);
        if (!w->old_mem)
            return sw_carrier_fail_released();
        if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
            return sw_cl_fail_injected("copy");
        st = enqueued(sw_cl.EnqueueCopyBuffer(
                          q, w->old_mem, w->fresh, (size_t)w->bytes,
                          (size_t)w->bytes, (size_t)(total - w->bytes), 0, NULL,
                          &w->events[w->nevents]),
                      "copy");
        if (st)
            return st;
        ++w->nevents;
    }
    return SW_OK;
}

/* Maps the source's span for reading. */
static sw_status submit_to_cpu(move_work *w) {
    const sw_transfer_request *req = w->req;
    int64_t item = sw_dtype_itemsize(req->dtype);
    w->src_mem = sw_opencl_buffer(req->tensor->carrier);
    if (!w->src_mem)
        return sw_carrier_fail_released();
    if (sw_cl_injected(SW_OPENCL_STAGE_MAP))
        return sw_cl_fail_injected("map");
    cl_int err = SW_CL_SUCCESS;
    w->mapped =
        sw_cl.EnqueueMapBuffer(w->device->queue, w->src_mem, 0, SW_CL_MAP_READ,
                               (size_t)(req->offset * item), (size_t)w->bytes,
                               0, NULL, &w->events[0], &err);
    if (!w->mapped)
        return sw_cl_fail("map", err);
    w->nevents = 1;
    return SW_OK;
}

/* Asks for transparent huge pages over the 2 MiB-aligned interior of a
 * large CPU destination about to be filled: its fresh pages then fault in
 * 2 MiB at a time. Advice only; failures are ignored. */
static void advise_huge(void *data, int64_t bytes) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t start = ((uintptr_t)data + huge - 1) & ~(huge - 1);
    uintptr_t end = ((uintptr_t)data + (uintptr_t)bytes) & ~(huge - 1);
    if (bytes >= (int64_t)(4 * huge) && end > start)
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

/*
 * A host copy of bytes, split into fixed chunks over the library's thread
 * pool: a fresh destination faults its pages in on the first write, and
 * the kernel zeroes them on whichever core takes the fault, so two cores
 * fill it in about the time of one memcpy into memory already there.
 */
#define HOST_COPY_CHUNK ((int64_t)4 << 20)

typedef struct host_copy {
    char *dst;
    const char *src;
    int64_t bytes;
} host_copy;

static sw_status host_copy_chunk(void *ctx, int64_t chunk, int32_t slot) {
    (void)slot;
    const host_copy *h = ctx;
    int64_t at = chunk * HOST_COPY_CHUNK;
    int64_t n =
        h->bytes - at < HOST_COPY_CHUNK ? h->bytes - at : HOST_COPY_CHUNK;
    memcpy(h->dst + at, h->src + at, (size_t)n);
    return SW_OK;
}

static void host_copy_run(void *dst, const void *src, int64_t bytes) {
    host_copy h = {dst, src, bytes};
    (void)sw_parallel_for((bytes + HOST_COPY_CHUNK - 1) / HOST_COPY_CHUNK, 0,
                          host_copy_chunk, &h);
}

static sw_status move_wait(void *ctx, void **error) {
    (void)error;
    move_work *w = ctx;
    sw_status st = sw_cl_wait(w->nevents, w->events, "move");
    if (st)
        return st;
    if (w->kind == OPENCL_TO_CPU && w->bytes > 0) {
        char *dst = sw_cpu_storage(w->req->destination);
        if (!dst)
            return sw_carrier_fail_released();
        advise_huge(dst, w->bytes);
        host_copy_run(dst, w->mapped, w->bytes);
    } else if (w->fresh) {
        /* The device holds the values: the new buffer is the storage. */
        sw_opencl_swap_buffer(w->req->destination, w->fresh);
        w->fresh = NULL;
    }
    return SW_OK;
}

static sw_status move_submit(void *ctx, void *work,
                             sw_transfer_completion *completion) {
    (void)ctx;
    move_work *w = work;
    sw_status st;
    /* A layout's cosize is at least one: every move copies, and so waits
     * for the device. */
    if (w->kind == OPENCL_TO_CPU)
        st = submit_to_cpu(w);
    else
        st = submit_to_opencl(w);
    if (st)
        return st;
    (void)sw_cl.Flush(w->device->queue);
    completion->ctx = w;
    completion->wait = move_wait;
    return SW_OK;
}

/* Frees the work once the move is done with it: waits for what is still
 * enqueued (the host memory it reads must outlive it), unmaps, and drops
 * a buffer that was never published. */
static void move_finish(void *ctx, void *work) {
    (void)ctx;
    move_work *w = work;
    if (!w)
        return;
    if (w->nevents)
        (void)sw_cl.WaitForEvents(w->nevents, w->events);
    sw_cl_release_events(w->nevents, w->events);
    if (w->mapped) {
        cl_event ev = NULL;
        if (sw_cl.EnqueueUnmapMemObject(w->device->queue, w->src_mem, w->mapped,
                                        0, NULL, &ev) == SW_CL_SUCCESS) {
            (void)sw_cl.WaitForEvents(1, &ev);
            sw_cl_release_events(1, &ev);
        }
    }
    if (w->fresh)
        (void)sw_cl.ReleaseMemObject(w->fresh);
    if (w->src_mem)
        (void)sw_cl.ReleaseMemObject(w->src_mem);
    if (w->old_mem)
        (void)sw_cl.ReleaseMemObject(w->old_mem);
    sw_free(w);
}

static sw_transfer_route_decl routes[3] = {
    {.route_id = "CpuToOpenCL",
     .ctx = (void *)(intptr_t)CPU_TO_OPENCL,
     .prepare = move_prepare,
     .finish = move_finish,
     .submit = move_submit},
    {.route_id = "OpenCLToCpu",
     .ctx = (void *)(intptr_t)OPENCL_TO_CPU,
     .prepare = move_prepare,
     .finish = move_finish,
     .submit = move_submit},
    {.route_id = "OpenCLToOpenCL",
     .ctx = (void *)(intptr_t)OPENCL_TO_OPENCL,
     .prepare = move_prepare,
     .finish = move_finish,
     .submit = move_submit},
};

const sw_move_class sw_opencl_move_classes[3] = {
    {.version = SW_MOVE_CLASS_VERSION,
     .name = "CpuToOpenCLMoveOperation",
     .destination_pin = {&sw_opencl_carrier_class, "OpenCL"},
     .copy = sw_route_copy,
     .ctx = &routes[0]},
    {.version = SW_MOVE_CLASS_VERSION,
     .name = "OpenCLToCpuMoveOperation",
     .source_pin = {&sw_opencl_carrier_class, "OpenCL"},
     .copy = sw_route_copy,
     .ctx = &routes[1]},
    {.version = SW_MOVE_CLASS_VERSION,
     .name = "OpenCLToOpenCLMoveOperation",
     .source_pin = {&sw_opencl_carrier_class, "OpenCL"},
     .destination_pin = {&sw_opencl_carrier_class, "OpenCL"},
     .copy = sw_route_copy,
     .ctx = &routes[2]},
};

const sw_move_class *sw_move_cpu_to_opencl(void) {
    return &sw_opencl_move_classes[CPU_TO_OPENCL];
}

const sw_move_class *sw_move_opencl_to_cpu(void) {
    return &sw_opencl_move_classes[OPENCL_TO_CPU];
}

const sw_move_class *sw_move_opencl_to_opencl(void) {
    return &sw_opencl_move_classes[OPENCL_TO_OPENCL];
}
