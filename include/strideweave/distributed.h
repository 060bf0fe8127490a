/*
 * StrideWeave distributed: collective operations over CPU tensors on MPI,
 * and data-parallel training (gradients averaged across processes).
 *
 * The library is built with MPI when an implementation is found (the
 * meson option `mpi`, auto by default); sw_dist_available() says whether
 * it was. Without it every call below fails with SW_ENOTIMPL "StrideWeave
 * was built without MPI ...", and the rest of the library is unaffected.
 *
 * Processes. A job is started by mpirun/mpiexec (or runs alone as a job
 * of one). sw_dist_init joins it: rank and world size come from MPI.
 * Every process of the job must make the same collective calls in the
 * same order, like MPI's own collectives.
 *
 * Threads. All MPI calls of the library run on one communication thread
 * that sw_dist_init starts: a collective is queued there and runs while
 * the caller goes on (non-blocking form) or waits (blocking form), so a
 * reduction overlaps the computation that follows it. The library joins
 * an MPI that the program initialised itself (say through mpi4py) when
 * that MPI gives MPI_THREAD_MULTIPLE, and then leaves finalisation to the
 * program. Communication uses a duplicate of MPI_COMM_WORLD, so it never
 * mixes with the program's own messages.
 *
 * Tensors. Collectives run on tensors of CPU carriers with dtype Float32
 * or Int32, of any layout: a tensor whose layout walks its elements in
 * logical (column-major) order over contiguous memory is communicated in
 * place; any other is staged through one compact copy. The elements are
 * matched across processes by logical index, so two processes may hold
 * the same shape in different layouts. A collective that writes a tensor
 * bumps its carrier's version once. While a collective runs, it owns the
 * carriers it writes as a move owns its destination (interop.h): writes,
 * release and moves of them from other threads fail with SW_ERUNTIME
 * until it completes; the storage of every operand is pinned. Collectives
 * record no autograd: they act on values, as an optimizer does.
 *
 * Agreement. Before its data moves, every collective checks that all
 * processes called the same collective with the same shape, dtype,
 * reduction and root; a mismatch fails on every process with SW_EVALUE
 * naming each process's call, for example "all_reduce: the processes
 * disagree: rank 0: Float32 (3, 4); rank 1: Float32 (3, 5)".
 *
 * Failures. MPI errors are returned, not fatal (MPI_ERRORS_RETURN), as
 * SW_ERUNTIME with MPI's message. A process that fails while the others
 * wait in a collective would leave them waiting: call sw_dist_abort,
 * which ends every process of the job (mpirun reports the failing rank
 * and the message). sw_dist_set_timeout bounds how long a blocking call
 * or a wait may take: past it the call fails with SW_ERUNTIME "...did not
 * complete within N s: another process may have failed or not made the
 * same call", after which the job can only be aborted.
 */
#ifndef STRIDEWEAVE_DISTRIBUTED_H
#define STRIDEWEAVE_DISTRIBUTED_H

#include "strideweave/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Non-zero when the library was built with MPI. */
SW_API int sw_dist_available(void);

/*
 * Joins the job (MPI_Init_thread unless MPI is already initialised) and
 * starts the communication thread. Idempotent; SW_ERUNTIME after
 * sw_dist_finalize (MPI cannot start twice), or when a program-initialised
 * MPI lacks MPI_THREAD_MULTIPLE.
 */
SW_API sw_status sw_dist_init(void);
SW_API int sw_dist_initialized(void);
/* This process's rank and the number of processes; SW_ERUNTIME before
 * sw_dist_init. */
SW_API sw_status sw_dist_rank(int *rank);
SW_API sw_status sw_dist_world_size(int *size);

/*
 * Waits for queued collectives, stops the communication thread and
 * finalises MPI if sw_dist_init initialised it. Idempotent; a no-op when
 * sw_dist_init never ran.
 */
SW_API sw_status sw_dist_finalize(void);

/* Ends every process of the job with exit code `code`, after printing
 * message (may be NULL) with this process's rank to stderr. Does not
 * return when MPI is running; returns SW_ERUNTIME before sw_dist_init. */
SW_API sw_status sw_dist_abort(int code, const char *message);

/* The longest a blocking collective or a wait may take, in seconds; 0
 * (the default) waits for ever. SW_EVALUE when negative or not finite. */
SW_API sw_status sw_dist_set_timeout(double seconds);
SW_API double sw_dist_timeout(void);

typedef enum sw_dist_reduce {
    SW_DIST_SUM = 0,
    SW_DIST_MEAN = 1, /* the sum divided by the world size (Float32) */
    SW_DIST_MAX = 2,
    SW_DIST_MIN = 3
} sw_dist_reduce;

/*
 * A collective in flight. sw_dist_work_done says whether it has
 * completed (0 or 1; never blocks); sw_dist_work_wait blocks until it
 * has (within the timeout) and returns its outcome, again on every call.
 * Results (all_gather, reduce_scatter) are readable once it completed.
 * The caller owns one reference; dropping it does not cancel the work,
 * which keeps what it needs alive until it completes.
 */
typedef struct sw_dist_work sw_dist_work;
SW_API int sw_dist_work_done(sw_dist_work *w);
SW_API sw_status sw_dist_work_wait(sw_dist_work *w);
SW_API sw_dist_work *sw_dist_work_retain(sw_dist_work *w);
SW_API void sw_dist_work_unref(sw_dist_work *w);

/*
 * The collectives. With work == NULL the call blocks until done and
 * returns the outcome; otherwise it returns once the call is queued (after
 * the argument checks, which fail at once) and *work receives the
 * completion. Argument errors: SW_ETYPE for a missing tensor, a tensor
 * that is not on a CPU carrier ("<name> needs a CPU tensor; move it to
 * CPU first"), a dtype other than Float32/Int32, MEAN on Int32; SW_EVALUE
 * for an unknown reduction, a root out of range, a reduce_scatter input
 * whose first mode is not the world size; SW_ERUNTIME for a released or
 * immutable tensor written in place, or one whose layout reaches an
 * element twice ("<name> writes its tensor in place and needs a layout
 * that reaches each element once").
 *
 * all_reduce:     t[i] = reduce over processes of t[i], in place.
 * broadcast:      t[i] = t[i] of process root, in place (root's unchanged
 *                 and its version kept).
 * all_gather:     *out (fresh, shape (world, *shape(t)), each process's
 *                 block contiguous) holds every process's t, rank order.
 * reduce_scatter: t has shape (world, *S); *out (fresh, shape S) is the
 *                 reduction over processes of t[rank].
 * barrier:        returns when every process has called it.
 */
SW_API sw_status sw_dist_all_reduce(sw_tensor *t, sw_dist_reduce op,
                                    sw_dist_work **work);
SW_API sw_status sw_dist_broadcast(sw_tensor *t, int root, sw_dist_work **work);
SW_API sw_status sw_dist_all_gather(const sw_tensor *t, sw_tensor **out,
                                    sw_dist_work **work);
SW_API sw_status sw_dist_reduce_scatter(const sw_tensor *t, sw_dist_reduce op,
                                        sw_tensor **out, sw_dist_work **work);
SW_API sw_status sw_dist_barrier(sw_dist_work **work);

/*
 * Data-parallel training. sw_dist_ddp_new takes the parameters of a model
 * (CPU Float32 leaf tensors that require gradients), broadcasts their
 * values from rank 0 (blocking), groups them into buckets of about
 * bucket_bytes (<= 0: 25 MiB), last parameter first, and watches their
 * gradients (sw_tensor_add_grad_hook): during each reverse pass, when
 * every parameter of a bucket has its gradient, the bucket's gradients
 * are copied into one buffer whose mean across processes is taken while
 * the pass goes on; when the last bucket is ready the pass waits for all
 * of them and writes the means back into every parameter's .grad. After
 * backward, every process holds the same gradients.
 *
 * Every parameter must receive a gradient in every pass (as with
 * PyTorch's DistributedDataParallel by default). sw_dist_ddp_pending
 * gives the number of parameters still waiting in the current pass (0
 * between complete passes); sw_dist_ddp_reset forgets a pass that ended
 * early (a failure), so that the next starts clean. sw_dist_ddp_set_sync
 * (0) turns the averaging off (gradient accumulation over several passes,
 * then turn it on for the last). The hooks go with sw_dist_ddp_unref.
 */
typedef struct sw_dist_ddp sw_dist_ddp;
SW_API sw_status sw_dist_ddp_new(sw_tensor *const *params, int32_t n,
                                 int64_t bucket_bytes, sw_dist_ddp **out);
SW_API int32_t sw_dist_ddp_pending(const sw_dist_ddp *d);
/* Whether parameter i has reported in the current pass (0 or 1). */
SW_API int sw_dist_ddp_reported(const sw_dist_ddp *d, int32_t i);
SW_API int32_t sw_dist_ddp_buckets(const sw_dist_ddp *d);
SW_API void sw_dist_ddp_reset(sw_dist_ddp *d);
SW_API void sw_dist_ddp_set_sync(sw_dist_ddp *d, int on);
SW_API void sw_dist_ddp_unref(sw_dist_ddp *d);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_DISTRIBUTED_H */
