/*
 * The OpenCL carrier's private layer: the few OpenCL declarations it uses
 * (so the build needs no OpenCL headers and links no OpenCL library), the
 * table of entry points resolved from libOpenCL.so.1 at first use, the
 * devices with their contexts and queues, and the carrier's state.
 *
 * runtime.c loads the ICD loader and owns the devices; buffers.c is the
 * carrier (one device buffer per carrier); moves.c holds the exact bulk
 * move routes CPU->OpenCL, OpenCL->CPU and OpenCL->OpenCL; kernels.c
 * generates OpenCL C kernels from iteration plans and caches them; ops.c
 * holds the operations that run them (forward and backward).
 *
 * Synchronisation: every device has one in-order command queue, so work
 * on a buffer runs in the order it was enqueued; whoever needs host
 * visibility waits for the event of the last command it enqueued.
 */
#ifndef SW_CARRIER_OPENCL_INTERNAL_H
#define SW_CARRIER_OPENCL_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "carrier/internal.h"
#include "layout/plan.h"
#include "op/kernels/kernels.h"
#include "strideweave/interop.h"
#include "strideweave/opencl.h"

/* ------------------------------------------------- OpenCL declarations */

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef struct sw_cl_opaque *cl_platform_id;
typedef struct sw_cl_opaque *cl_device_id;
typedef struct sw_cl_opaque *cl_context;
typedef struct sw_cl_opaque *cl_command_queue;
typedef struct sw_cl_opaque *cl_mem;
typedef struct sw_cl_opaque *cl_event;
typedef struct sw_cl_opaque *cl_program;
typedef struct sw_cl_opaque *cl_kernel;
typedef intptr_t cl_context_properties;

#define SW_CL_SUCCESS 0
#define SW_CL_DEVICE_NOT_FOUND (-1)
#define SW_CL_PLATFORM_NOT_FOUND_KHR (-1001)
#define SW_CL_PLATFORM_NAME 0x0902
#define SW_CL_DEVICE_TYPE 0x1000
#define SW_CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define SW_CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define SW_CL_DEVICE_NAME 0x102B
#define SW_CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define SW_CL_DEVICE_TYPE_CPU ((cl_bitfield)1 << 1)
#define SW_CL_DEVICE_TYPE_GPU ((cl_bitfield)1 << 2)
#define SW_CL_DEVICE_TYPE_ACCELERATOR ((cl_bitfield)1 << 3)
#define SW_CL_DEVICE_TYPE_ALL ((cl_bitfield)0xFFFFFFFF)
#define SW_CL_MEM_READ_WRITE ((cl_bitfield)1 << 0)
#define SW_CL_MEM_USE_HOST_PTR ((cl_bitfield)1 << 3)
#define SW_CL_MEM_COPY_HOST_PTR ((cl_bitfield)1 << 5)
#define SW_CL_PROGRAM_BUILD_LOG 0x1183
#define SW_CL_MAP_READ ((cl_bitfield)1 << 0)
#define SW_CL_MAP_WRITE_INVALIDATE_REGION ((cl_bitfield)1 << 2)
#define SW_CL_COMPLETE 0

/* The entry points used, resolved by name from the ICD loader. */
typedef struct sw_cl_api {
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void *,
                              size_t *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id *,
                           cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *, size_t *);
    cl_context (*CreateContext)(
        const cl_context_properties *, cl_uint, const cl_device_id *,
        void (*)(const char *, const void *, size_t, void *), void *, cl_int *);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id,
                                           cl_bitfield, cl_int *);
    cl_mem (*CreateBuffer)(cl_context, cl_bitfield, size_t, void *, cl_int *);
    cl_int (*RetainMemObject)(cl_mem);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*SetMemObjectDestructorCallback)(cl_mem, void (*)(cl_mem, void *),
                                             void *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t,
                                size_t, void *, cl_uint, const cl_event *,
                                cl_event *);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t,
                                 size_t, const void *, cl_uint,
                                 const cl_event *, cl_event *);
    cl_int (*EnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t,
                                size_t, size_t, cl_uint, const cl_event *,
                                cl_event *);
    /* Rectangular transfers (strided blocks, buffers.c): origins and regions in
     * bytes along the first dimension, rows and slices along the other two. */
    cl_int (*EnqueueReadBufferRect)(cl_command_queue, cl_mem, cl_uint,
                                    const size_t *, const size_t *,
                                    const size_t *, size_t, size_t, size_t,
                                    size_t, void *, cl_uint, const cl_event *,
                                    cl_event *);
    cl_int (*EnqueueWriteBufferRect)(cl_command_queue, cl_mem, cl_uint,
                                     const size_t *, const size_t *,
                                     const size_t *, size_t, size_t, size_t,
                                     size_t, const void *, cl_uint,
                                     const cl_event *, cl_event *);
    cl_int (*EnqueueCopyBufferRect)(cl_command_queue, cl_mem, cl_mem,
                                    const size_t *, const size_t *,
                                    const size_t *, size_t, size_t, size_t,
                                    size_t, cl_uint, const cl_event *,
                                    cl_event *);
    cl_int (*EnqueueFillBuffer)(cl_command_queue, cl_mem, const void *, size_t,
                                size_t, size_t, cl_uint, const cl_event *,
                                cl_event *);
    void *(*EnqueueMapBuffer)(cl_command_queue, cl_mem, cl_uint, cl_bitfield,
                              size_t, size_t, cl_uint, const cl_event *,
                              cl_event *, cl_int *);
    cl_int (*EnqueueUnmapMemObject)(cl_command_queue, cl_mem, void *, cl_uint,
                                    const cl_event *, cl_event *);
    cl_int (*WaitForEvents)(cl_uint, const cl_event *);
    /* User events and barriers: the test hold (sw_debug_opencl_hold). */
    cl_event (*CreateUserEvent)(cl_context, cl_int *);
    cl_int (*SetUserEventStatus)(cl_event, cl_int);
    cl_int (*EnqueueBarrierWithWaitList)(cl_command_queue, cl_uint,
                                         const cl_event *, cl_event *);
    cl_int (*ReleaseEvent)(cl_event);
    cl_int (*Flush)(cl_command_queue);
    cl_int (*Finish)(cl_command_queue);
    /* Programs and kernels (kernels.c). */
    cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **,
                                          const size_t *, cl_int *);
    cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *,
                           const char *, void (*)(cl_program, void *), void *);
    cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t,
                                  void *, size_t *);
    cl_int (*ReleaseProgram)(cl_program);
    cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (*ReleaseKernel)(cl_kernel);
    cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint,
                                   const size_t *, const size_t *,
                                   const size_t *, cl_uint, const cl_event *,
                                   cl_event *);
} sw_cl_api;

/* The table, complete once sw_cl_load has succeeded. */
extern sw_cl_api sw_cl;

/* One OpenCL device, with its context and queue made at first use. Device
 * records live as long as the process. */
typedef struct sw_cl_device {
    int64_t index;
    cl_platform_id platform;
    cl_device_id id;
    cl_bitfield type;
    cl_ulong global_mem;
    size_t max_group; /* the largest work group (0 when unknown) */
    char name[128];
    char platform_name[128];
    pthread_mutex_t lock;
    int ready; /* context and queue exist (under lock, then for good) */
    cl_context context;
    cl_command_queue queue;
} sw_cl_device;

/* Loads the runtime and lists the devices, once per process: SW_OK, or
 * SW_ERUNTIME with the reason and an install hint every time after. */
sw_status sw_cl_load(void);

/* The device of a given index (-1: the default) with its context and
 * queue. SW_EVALUE for an index out of range. */
sw_status sw_cl_device_get(int64_t index, sw_cl_device **out);

/* SW_ERUNTIME "OpenCL <what> failed (error <code>)". */
sw_status sw_cl_fail(const char *what, cl_int err);

/*
 * The failure-injection hook (sw_debug_opencl_fail): non-zero when this
 * call at stage must fail; the caller then fails as the runtime would
 * have, with SW_ERUNTIME "OpenCL <what> failed (injected)".
 */
int sw_cl_injected(sw_opencl_stage stage);
sw_status sw_cl_fail_injected(const char *what);

/* Waits for n events (stage WAIT): SW_OK, or SW_ERUNTIME naming what. */
sw_status sw_cl_wait(cl_uint n, const cl_event *events, const char *what);

/* Waits for every command enqueued on d (stage WAIT): SW_OK, or
 * SW_ERUNTIME naming what. */
sw_status sw_cl_finish(sw_cl_device *d, const char *what);

/* Releases each non-NULL event and sets it to NULL. */
void sw_cl_release_events(cl_uint n, cl_event *events);

/* ------------------------------------------------------- the carrier */

typedef struct opencl_state {
    sw_cl_device *device;
    /* The buffer (NULL for no elements or after release), replaced only
     * under lock by a committed move; readers retain it under lock. */
    pthread_mutex_t lock;
    cl_mem mem;
    int64_t size;
    int mutable_;
} opencl_state;

extern const sw_carrier_class sw_opencl_carrier_class;

/* The carrier's buffer, retained (NULL for none), for work outside the
 * lock; release it with sw_cl.ReleaseMemObject. */
cl_mem sw_opencl_buffer(sw_carrier *c);

/* Makes a new buffer of bytes (> 0) on the device. */
sw_status sw_opencl_buffer_new(sw_cl_device *d, int64_t bytes, cl_mem *out);

/* Replaces the carrier's buffer by mem (owned from now on) and releases
 * the old one: a committed move's new storage. */
void sw_opencl_swap_buffer(sw_carrier *c, cl_mem mem);

/* ----------------------------------------------- kernels (kernels.c) */

/* What a map kernel computes per element. */
typedef enum sw_clk_family {
    SW_CLK_ELEM = 0,     /* code: sw_kelem */
    SW_CLK_ACT = 1,      /* code: sw_kact, f(x) */
    SW_CLK_ACT_GRAD = 2, /* code: sw_kact, g * f'(x) from (g, x) */
    SW_CLK_COPY = 3      /* the input, converted to the output's dtype */
} sw_clk_family;

typedef struct sw_clk_expr {
    sw_clk_family family;
    int code;
} sw_clk_expr;

/* An operand: a buffer (borrowed), its dtype (Float32 or Int32), the
 * element offset, and the leaves (borrowed) that map logical indices to
 * elements past the offset. */
typedef struct sw_clk_operand {
    cl_mem mem;
    sw_dtype dtype;
    int64_t offset;
    sw_plan_leaves leaves;
} sw_clk_operand;

/* A matrix operand of a product: its rows', columns' and batch modes'
 * leaves (batch: no leaves for none). */
typedef struct sw_clk_mat {
    sw_clk_operand arg;
    sw_plan_leaves row, col, batch;
} sw_clk_mat;

/*
 * ops[0] = e(ops[1..nops)) per logical element, enqueued on d (see
 * kernels.c): a Float32 output converts Int32 inputs; Int32 outputs take
 * Int32 inputs, and the checked forms (ELEM) fail with SW_EOVERFLOW
 * "OpenCL Int32 operation result is out of int32 range" after waiting for
 * the kernel. s: the scalar of MUL_SCALAR, POW_SCALAR and POW_GRAD.
 */
sw_status sw_clk_map(sw_cl_device *d, sw_clk_expr e, int32_t nops,
                     const sw_clk_operand *ops, sw_kscalar s);

/* out[i] = sum over j of x[rows(i) + cols(j)]: Float32 or Int32 (exact,
 * SW_EOVERFLOW "OpenCL integer accumulation overflowed"). out->leaves
 * index the output; x's own leaves are not used. */
sw_status sw_clk_reduce(sw_cl_device *d, const sw_clk_operand *out,
                        const sw_clk_operand *x, sw_plan_leaves rows,
                        sw_plan_leaves cols);

/* C[i, j, b] = sum over k of A[i, k, b] * B[j, k, b]: Float32 C (tiled)
 * or Int32 C from Int32 A and B (exact, SW_EOVERFLOW as reduce). */
sw_status sw_clk_gemm(sw_cl_device *d, const sw_clk_mat *c, const sw_clk_mat *a,
                      const sw_clk_mat *b);

/* A fresh operation of built-in op on OpenCL carriers (ops.c), or
 * SW_ENOTIMPL "OpenCL carrier does not support operation '<name>'". */
sw_status sw_opencl_op_new(const struct sw_op_info *op, struct sw_op **out);

/* Copies src (an OpenCL tensor on c's device) into c through a kernel,
 * atomically: into a fresh buffer that replaces c's once the device has
 * completed (ops.c). *handled is 0 when the dtypes need the host path. */
sw_status sw_opencl_scatter_device(sw_carrier *c, const sw_tensor *src,
                                   const sw_tensor *onto,
                                   const sw_layout *mapping, int64_t base,
                                   int *handled);

/* The exact move classes (moves.c): CPU->OpenCL, OpenCL->CPU,
 * OpenCL->OpenCL. */
extern const sw_move_class sw_opencl_move_classes[5];

#endif /* SW_CARRIER_OPENCL_INTERNAL_H */
