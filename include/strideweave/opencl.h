/*
 * StrideWeave's OpenCL carrier: storage in one device buffer of an OpenCL
 * device (a GPU, or a CPU through PoCL).
 *
 * The runtime (the ICD loader libOpenCL.so.1) is loaded at first use, not
 * linked: a program that never makes an OpenCL carrier runs without any
 * OpenCL installed. Two environment variables are read once, when the
 * runtime is first loaded: STRIDEWEAVE_OPENCL_LIBRARY (the loader to open
 * instead of libOpenCL.so.1) and STRIDEWEAVE_OPENCL_DEVICE (the index of
 * the default device in sw_opencl_device_info's order). Without it the
 * default device is the first GPU, else the first device.
 *
 * The contract (the observable one of an accelerator carrier):
 *  - construction checks its arguments before loading the runtime, then
 *    fails with SW_ERUNTIME and an install hint when there is none;
 *  - slots are zero unless empty; element reads are synchronised (they see
 *    every write and move enqueued before them);
 *  - an element write bumps the version by exactly one and is published
 *    only once the device has confirmed it: a failure leaves the value and
 *    the version as they were;
 *  - scatter is atomic (sw_opencl_scatter);
 *  - DLPack export is refused (the default SW_EBUFFER of carrier.h);
 *  - moves CPU->OpenCL, OpenCL->CPU and OpenCL->OpenCL are exact bulk
 *    routes registered in the move registry from the start: a move copies
 *    the physical span from the tensor's offset (holes included) and keeps
 *    the layout; move_async enqueues the device copy and returns, and the
 *    move completes on the move executor when the copy's event has
 *    completed; a zero-span copy still synchronises; a move into an
 *    OpenCL destination writes a fresh buffer that replaces the
 *    destination's only at the commit, and a move into CPU memory copies
 *    only after the device work completed, so any failure leaves both
 *    carriers' values and versions as they were.
 *
 * Threads: the runtime's entry points are thread-safe; each carrier
 * guards its buffer handle with a lock of its own.
 */
#ifndef STRIDEWEAVE_OPENCL_H
#define STRIDEWEAVE_OPENCL_H

#include "strideweave/base.h"
#include "strideweave/carrier.h"
#include "strideweave/interop.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Makes an OpenCL carrier of size elements on device (an index in
 * sw_opencl_device_info's order; -1 for the default). Checks in order,
 * before the runtime loads: SW_EVALUE "OpenCL size must be
 * non-negative"; SW_EVALUE "OpenCL dtype must be DType.Float32,
 * DType.Int32 or DType.Bool"; SW_EOVERFLOW when the byte length
 * overflows; SW_EVALUE "OpenCL device must be a non-negative index or
 * -1". Then SW_ERUNTIME when the runtime cannot be loaded or has no
 * device, SW_EVALUE when device is not below the device count, and
 * SW_ERUNTIME when the device refuses the buffer.
 */
SW_API sw_status sw_opencl_new(int64_t size, sw_dtype dtype, int mutable_,
                               int empty, int64_t device, sw_carrier **out);

/* Non-zero if c is an OpenCL carrier. */
SW_API int sw_carrier_is_opencl(const sw_carrier *c);
/* The carrier class (the move key of OpenCL is sw_move_key_class of it). */
SW_API const sw_carrier_class *sw_opencl_class(void);
SW_API sw_move_key sw_move_key_opencl(void);
/* Non-zero for Float32, Int32 and Bool: needs no runtime. */
SW_API int sw_opencl_supports_dtype(sw_dtype dtype);

/* Loads the runtime if needed: SW_OK, or SW_ERUNTIME with the reason. */
SW_API sw_status sw_opencl_load(void);

/* One device, as sw_opencl_device_info describes it. */
typedef struct sw_opencl_device_desc {
    int64_t index;
    char platform[128];
    char name[128];
    const char *type; /* "GPU", "CPU", "Accelerator" or "Other" */
    int64_t global_memory;
    int is_default;
} sw_opencl_device_desc;

/* The number of devices (0 without a runtime: this never fails). */
SW_API int64_t sw_opencl_device_count(void);
/* Device i (0 <= i < count); SW_EINDEX otherwise. */
SW_API sw_status sw_opencl_device_info(int64_t i, sw_opencl_device_desc *out);
/* The index of c's device; -1 for other carriers. */
SW_API int64_t sw_opencl_device_of(const sw_carrier *c);

/* Waits for all work enqueued on c's device. SW_ERUNTIME on failure. */
SW_API sw_status sw_opencl_synchronize(sw_carrier *c);

/*
 * Atomic scatter into an OpenCL carrier c: for every logical i, element
 * onto.offset + mapping_offset + mapping(i) of c becomes src[i]. Checks
 * (nothing changes on failure): SW_ETYPE for NULL arguments; SW_ERUNTIME
 * "Carrier is released" / "Carrier is not mutable"; SW_EVALUE when onto
 * is not over c, the mapping's shape differs from src's, or
 * mapping_offset < 0; SW_EINDEX "Carrier index out of range" for a mapped
 * index outside c; SW_ETYPE "OpenCL scatter value must be a real number"
 * for a value that is not a number; the dtype rules of element writes.
 * Then one device write of the whole changed buffer, confirmed before
 * the call returns; the version rises by exactly one.
 */
struct sw_tensor;
SW_API sw_status sw_opencl_scatter(sw_carrier *c, const sw_tensor *src,
                                   const sw_tensor *onto,
                                   const sw_layout *mapping,
                                   int64_t mapping_offset);

/*
 * Operations. The OpenCL carrier runs the computing built-in operations of
 * the CPU carrier with the same argument rules, result layouts, dtypes and
 * capability set (Float32 and Int32; Bool refused): add, sub,
 * elementwise_mul, div, mul and pow by a scalar, the activations, reduce,
 * matmul and batched_matmul, with their backward passes; the layout
 * operations are views that run nothing. Operands must be OpenCL
 * tensors on one device; results are fresh OpenCL carriers on it.
 *
 * Each operation runs an OpenCL C kernel generated from the operation,
 * the dtypes and the iteration plan of its operands (strides and extents
 * included, so strided, hierarchical and broadcast layouts need no copy),
 * compiled at its first use and kept in a per-process cache keyed by the
 * generated source. A launch returns once the kernel is enqueued: host
 * reads, moves and sw_opencl_synchronize wait for it. Int32 operations
 * that can overflow (add, sub, elementwise_mul, mul, pow, reduce, matmul)
 * wait for their kernel to report overflow as SW_EOVERFLOW, as the CPU's
 * do. Errors of kernel compilation or launch are SW_ERUNTIME.
 *
 * sw_opencl_kernel_stats: the cache's entries, the kernels compiled and
 * the kernels launched since the process started (any argument may be
 * NULL). For tests and benchmarks.
 */
SW_API void sw_opencl_kernel_stats(int64_t *entries, int64_t *compiled,
                                   int64_t *launched);

/*
 * Buffers of at least 2 MiB on a CPU device (PoCL) are host memory of the
 * library's own, and a released one's memory is kept (at most four
 * blocks, 512 MiB in all, the most recent first) for the next buffer of
 * the same size rounded up to 2 MiB: its pages are already faulted in, so
 * a move into OpenCL or a large result writes at the speed of a copy. A
 * reused block's old contents are overwritten (zeroed unless empty).
 * sw_opencl_empty_cache frees every kept block; buffers in use are not
 * affected. sw_opencl_buffer_stats: the blocks kept now, their bytes, and
 * the buffers made over a kept block since the process started (any
 * argument may be NULL). Neither call needs the runtime or fails.
 */
SW_API void sw_opencl_empty_cache(void);
SW_API void sw_opencl_buffer_stats(int64_t *cached_blocks,
                                   int64_t *cached_bytes, int64_t *reused);

/* The exact bulk move classes, registered for their pairs: CPU and
 * FileBacked to OpenCL and back, and OpenCL to OpenCL (a device copy on
 * one device; between two, the source's span mapped on its device and
 * written into the destination's buffer on the move executor). A move
 * from a file maps the fresh device buffer and reads the file into it on
 * the move executor; a move into a file maps the source and writes the
 * file from it there, leaving the file's version as it was. */
SW_API const sw_move_class *sw_move_cpu_to_opencl(void);
SW_API const sw_move_class *sw_move_opencl_to_cpu(void);
SW_API const sw_move_class *sw_move_opencl_to_opencl(void);
SW_API const sw_move_class *sw_move_file_to_opencl(void);
SW_API const sw_move_class *sw_move_opencl_to_file(void);

/*
 * Fault injection for tests: after sw_debug_opencl_fail(stage, n), n more
 * calls at that stage succeed and the next one fails as the runtime would
 * (SW_ERUNTIME "... failed (injected)"); then the hook is off again.
 * SW_OPENCL_STAGE_NONE turns it off. Stages: enqueueing a command
 * (kernel launches included), waiting for events, mapping a buffer,
 * compiling a generated kernel.
 */
typedef enum sw_opencl_stage {
    SW_OPENCL_STAGE_NONE = 0,
    SW_OPENCL_STAGE_ENQUEUE = 1,
    SW_OPENCL_STAGE_WAIT = 2,
    SW_OPENCL_STAGE_MAP = 3,
    SW_OPENCL_STAGE_COMPILE = 4
} sw_opencl_stage;

SW_API void sw_debug_opencl_fail(sw_opencl_stage stage, int64_t after);

/*
 * A device-side gate for tests: sw_debug_opencl_hold(1) enqueues, on the
 * queue of every device in use (the default one included), a barrier that
 * waits for an event only sw_debug_opencl_hold(0) completes. Commands
 * enqueued meanwhile are accepted but do not start, so a test can observe
 * work that is submitted and not yet done (and anything that waits for
 * the device blocks until the hold ends). Holding twice or releasing
 * without a hold does nothing. SW_ERUNTIME without a runtime.
 */
SW_API sw_status sw_debug_opencl_hold(int hold);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_OPENCL_H */
