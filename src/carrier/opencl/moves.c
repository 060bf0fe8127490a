/*
 * The exact bulk moves of the OpenCL carrier: CPU->OpenCL, OpenCL->CPU,
 * OpenCL->OpenCL, FileBacked->OpenCL and OpenCL->FileBacked, as transfer
 * routes of the move registry (interop.h).
 *
 * A move copies the physical span (cosize elements from the tensor's
 * offset, holes included) to the start of the destination. Its submit,
 * on the submitting thread, enqueues the device commands and returns;
 * its completion, collected on the move executor, waits for their events
 * and then publishes:
 *  - into OpenCL: the span goes into a fresh buffer (with the old
 *    buffer's tail behind it), which replaces the destination's buffer
 *    only once the device has completed, so a failure at any stage leaves
 *    the destination's storage and values as they were. From a file, the
 *    fresh buffer's span is mapped and the file is read into it on the
 *    move executor, so the disk read is asynchronous too. From another
 *    device (another context, so no device copy), the source's span is
 *    mapped there and written into the fresh buffer on the executor;
 *  - into CPU memory: the source's span is mapped, and copied into the
 *    destination only once the map has completed, so a failed enqueue,
 *    map or wait writes nothing. Into a file the same way: the mapped span
 *    is written to the file, whose version ends as it was when the write
 *    succeeds (the CPU->FileBacked rule; a failed write leaves one step,
 *    and a growing file is staged by the move, so it only shows the
 *    values at the commit).
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

enum {
    CPU_TO_OPENCL = 0,
    OPENCL_TO_CPU = 1,
    OPENCL_TO_OPENCL = 2,
    FILE_TO_OPENCL = 3,
    OPENCL_TO_FILE = 4,
    NKINDS = 5
};

static const char *const class_names[NKINDS] = {
    "CpuToOpenCLMoveOperation", "OpenCLToCpuMoveOperation",
    "OpenCLToOpenCLMoveOperation", "FileBackedToOpenCLMoveOperation",
    "OpenCLToFileBackedMoveOperation"};

/* The class at each end of a kind's move: its test, and its name with
 * the article for messages. */
typedef struct move_end {
    int (*is)(const sw_carrier *c);
    const char *name;
} move_end;

static const move_end ends[NKINDS][2] = {
    {{sw_carrier_is_cpu, "a CPU"}, {sw_carrier_is_opencl, "an OpenCL"}},
    {{sw_carrier_is_opencl, "an OpenCL"}, {sw_carrier_is_cpu, "a CPU"}},
    {{sw_carrier_is_opencl, "an OpenCL"}, {sw_carrier_is_opencl, "an OpenCL"}},
    {{sw_carrier_is_file, "a FileBacked"}, {sw_carrier_is_opencl, "an OpenCL"}},
    {{sw_carrier_is_opencl, "an OpenCL"}, {sw_carrier_is_file, "a FileBacked"}},
};

/* Whether the kind's destination is host memory or a file. */
static int to_host(int kind) {
    return kind == OPENCL_TO_CPU || kind == OPENCL_TO_FILE;
}

typedef struct move_work {
    int kind;
    const sw_transfer_request *req;
    sw_cl_device *device; /* whose queue runs the commands */
    int64_t bytes;        /* of the span */
    cl_mem fresh;         /* the destination's new buffer */
    cl_mem src_mem, old_mem;
    cl_mem map_mem;           /* the buffer mapped at mapped (not owned) */
    sw_cl_device *map_device; /* whose queue mapped it */
    void *mapped;
    int across; /* OpenCL -> OpenCL between two devices */
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
    const move_end *from = &ends[kind][0], *to = &ends[kind][1];
    if (!from->is(src))
        return sw_fail(SW_ETYPE, "%s requires %s source", class_names[kind],
                       from->name);
    if (!to->is(dst))
        return sw_fail(SW_ETYPE, "%s requires %s destination",
                       class_names[kind], to->name);
    (void)unsupported;
    (void)reason;
    (void)size;
    move_work *w = sw_malloc(sizeof *w);
    if (!w)
        return sw_oom();
    memset(w, 0, sizeof *w);
    w->kind = kind;
    w->req = req;
    w->device = to_host(kind) ? ocl(src)->device : ocl(dst)->device;
    w->across =
        kind == OPENCL_TO_OPENCL && ocl(src)->device != ocl(dst)->device;
    w->bytes = req->physical_span * sw_dtype_itemsize(req->dtype);
    *work = w;
    return SW_OK;
}

/* One enqueued command's outcome (stage ENQUEUE unless map). */
static sw_status enqueued(cl_int err, const char *what) {
    return err == SW_CL_SUCCESS ? SW_OK : sw_cl_fail(what, err);
}

/* Enqueues the old buffer's tail into the fresh buffer (after the span). */
static sw_status copy_tail(move_work *w, int64_t total) {
    if (total <= w->bytes)
        return SW_OK;
    w->old_mem = sw_opencl_buffer(w->req->destination);
    if (!w->old_mem)
        return sw_carrier_fail_released();
    if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
        return sw_cl_fail_injected("copy");
    sw_status st =
        enqueued(sw_cl.EnqueueCopyBuffer(w->device->queue, w->old_mem, w->fresh,
                                         (size_t)w->bytes, (size_t)w->bytes,
                                         (size_t)(total - w->bytes), 0, NULL,
                                         &w->events[w->nevents]),
                 "copy");
    if (!st)
        ++w->nevents;
    return st;
}

/* Maps bytes of buffer m (on device d) from byte at, for reading or for
 * writing over the whole region, with the map's event after those
 * already enqueued. */
static sw_status map_span(move_work *w, sw_cl_device *d, cl_mem m, int64_t at,
                          int writing) {
    if (sw_cl_injected(SW_OPENCL_STAGE_MAP))
        return sw_cl_fail_injected("map");
    cl_int err = SW_CL_SUCCESS;
    w->mapped = sw_cl.EnqueueMapBuffer(
        d->queue, m, 0,
        writing ? SW_CL_MAP_WRITE_INVALIDATE_REGION : SW_CL_MAP_READ,
        (size_t)at, (size_t)w->bytes, 0, NULL, &w->events[w->nevents], &err);
    if (!w->mapped)
        return sw_cl_fail("map", err);
    w->map_mem = m;
    w->map_device = d;
    ++w->nevents;
    return SW_OK;
}

/* Enqueues the span into a fresh buffer, and the old buffer's tail. From
 * a file, the tail goes first and then the span is mapped, for the
 * completion to read the file into (a mapped buffer must not be used by
 * commands). */
static sw_status submit_to_opencl(move_work *w) {
    const sw_transfer_request *req = w->req;
    sw_carrier *dst = req->destination;
    int64_t item = sw_dtype_itemsize(req->dtype);
    int64_t total = ocl(dst)->size * item;
    cl_command_queue q = w->device->queue;
    sw_status st = sw_opencl_buffer_new(w->device, total, &w->fresh);
    if (st)
        return st;
    if (w->kind == FILE_TO_OPENCL) {
        st = copy_tail(w, total);
        return st ? st : map_span(w, w->device, w->fresh, 0, 1);
    }
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
    return copy_tail(w, total);
}

/* Maps the source's span for reading (into CPU memory, a file, or
 * another device). */
static sw_status submit_to_host(move_work *w) {
    const sw_transfer_request *req = w->req;
    int64_t item = sw_dtype_itemsize(req->dtype);
    w->src_mem = sw_opencl_buffer(req->tensor->carrier);
    if (!w->src_mem)
        return sw_carrier_fail_released();
    return map_span(w, ocl(req->tensor->carrier)->device, w->src_mem,
                    req->offset * item, 0);
}

/* Between two devices (two contexts, so no device copy): the mapped
 * source span is written into a fresh buffer of the destination's device,
 * behind it the old buffer's tail, and waited for there. */
static sw_status write_across(move_work *w) {
    sw_cl_release_events(w->nevents, w->events);
    w->nevents = 0;
    int64_t total =
        ocl(w->req->destination)->size * sw_dtype_itemsize(w->req->dtype);
    sw_status st = sw_opencl_buffer_new(w->device, total, &w->fresh);
    if (st)
        return st;
    if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE))
        return sw_cl_fail_injected("write");
    st = enqueued(sw_cl.EnqueueWriteBuffer(w->device->queue, w->fresh, 0, 0,
                                           (size_t)w->bytes, w->mapped, 0, NULL,
                                           &w->events[w->nevents]),
                  "write");
    if (st)
        return st;
    ++w->nevents;
    if ((st = copy_tail(w, total)))
        return st;
    return sw_cl_wait(w->nevents, w->events, "move");
}

/* Unmaps what the work mapped and waits for it; the first failure. */
static sw_status unmap(move_work *w) {
    if (!w->mapped)
        return SW_OK;
    cl_event ev = NULL;
    cl_int err = sw_cl.EnqueueUnmapMemObject(w->map_device->queue, w->map_mem,
                                             w->mapped, 0, NULL, &ev);
    w->mapped = NULL;
    if (err != SW_CL_SUCCESS)
        return sw_cl_fail("unmap", err);
    sw_status st = sw_cl_wait(1, &ev, "unmap");
    sw_cl_release_events(1, &ev);
    return st;
}

/* Writes the mapped span into the destination file from its element 0.
 * The file's version ends as it was: a move is not an in-place mutation
 * (copy_cpu_to_file's rule); after a failure the move leaves one step. */
static sw_status write_file(move_work *w) {
    sw_carrier *dst = w->req->destination;
    int64_t version = sw_carrier_version(dst);
    sw_status st = sw_file_write(dst, 0, w->req->physical_span, w->mapped);
    if (!st)
        atomic_store(&dst->version, version);
    return st;
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
    } else if (w->kind == OPENCL_TO_FILE) {
        return write_file(w);
    } else if (w->across && (st = write_across(w))) {
        return st;
    } else if (w->kind == FILE_TO_OPENCL) {
        /* The disk read, here on the move executor, then the unmap that
         * hands the span to the device. */
        st = sw_file_read(w->req->tensor->carrier, w->req->offset,
                          w->req->physical_span, w->mapped);
        if (!st)
            st = unmap(w);
        if (st)
            return st;
    }
    if (w->fresh) {
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
    if (to_host(w->kind) || w->across)
        st = submit_to_host(w);
    else
        st = submit_to_opencl(w);
    if (st)
        return st;
    (void)sw_cl.Flush(w->map_device ? w->map_device->queue : w->device->queue);
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
    if (unmap(w))
        sw_clear_error();
    if (w->fresh)
        (void)sw_cl.ReleaseMemObject(w->fresh);
    if (w->src_mem)
        (void)sw_cl.ReleaseMemObject(w->src_mem);
    if (w->old_mem)
        (void)sw_cl.ReleaseMemObject(w->old_mem);
    sw_free(w);
}

#define ROUTE(id, kind)                                                        \
    {.route_id = id,                                                           \
     .ctx = (void *)(intptr_t)(kind),                                          \
     .prepare = move_prepare,                                                  \
     .finish = move_finish,                                                    \
     .submit = move_submit}

static sw_transfer_route_decl routes[NKINDS] = {
    ROUTE("CpuToOpenCL", CPU_TO_OPENCL),
    ROUTE("OpenCLToCpu", OPENCL_TO_CPU),
    ROUTE("OpenCLToOpenCL", OPENCL_TO_OPENCL),
    ROUTE("FileBackedToOpenCL", FILE_TO_OPENCL),
    ROUTE("OpenCLToFileBacked", OPENCL_TO_FILE),
};

/* The move classes; the host ends are pinned by the registry's keys. */
#define OPENCL_PIN {&sw_opencl_carrier_class, "OpenCL"}
#define MOVE_CLASS(kind, name_, src_pin, dst_pin)                              \
    {.version = SW_MOVE_CLASS_VERSION,                                         \
     .name = name_,                                                            \
     .source_pin = src_pin,                                                    \
     .destination_pin = dst_pin,                                               \
     .copy = sw_route_copy,                                                    \
     .ctx = &routes[kind]}
#define NO_PIN {NULL, NULL}

const sw_move_class sw_opencl_move_classes[NKINDS] = {
    MOVE_CLASS(CPU_TO_OPENCL, "CpuToOpenCLMoveOperation", NO_PIN, OPENCL_PIN),
    MOVE_CLASS(OPENCL_TO_CPU, "OpenCLToCpuMoveOperation", OPENCL_PIN, NO_PIN),
    MOVE_CLASS(OPENCL_TO_OPENCL, "OpenCLToOpenCLMoveOperation", OPENCL_PIN,
               OPENCL_PIN),
    MOVE_CLASS(FILE_TO_OPENCL, "FileBackedToOpenCLMoveOperation", NO_PIN,
               OPENCL_PIN),
    MOVE_CLASS(OPENCL_TO_FILE, "OpenCLToFileBackedMoveOperation", OPENCL_PIN,
               NO_PIN),
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

const sw_move_class *sw_move_file_to_opencl(void) {
    return &sw_opencl_move_classes[FILE_TO_OPENCL];
}

const sw_move_class *sw_move_opencl_to_file(void) {
    return &sw_opencl_move_classes[OPENCL_TO_FILE];
}
