/*
 * The library's thread pool: one parallel-for primitive (DESIGN.md
 * principle 7). The public face is strideweave/threads.h.
 *
 * sw_parallel_for(n, max_threads, fn, ctx) calls fn(ctx, c, slot) once
 * for every chunk c in [0, n), spread over up to max_threads threads (the
 * pool's setting when max_threads <= 0): the calling thread and workers
 * that sleep between calls. Chunks are handed out in increasing order,
 * one at a time, to whichever thread is free, so fn must not depend on
 * which thread runs a chunk or in what order chunks end; a caller that
 * wants results independent of the thread count makes its chunks
 * independent of it (layout/plan.h splits plans that way).
 *
 * slot says which thread runs the chunk: 0 is the calling thread, the
 * workers that joined the call get 1, 2, ... in the order they joined,
 * and every slot is below the call's thread count, so a caller can give
 * each thread its own scratch: read t = sw_pool_threads(), allocate t
 * buffers, and pass t as max_threads (the setting may change meanwhile).
 *
 * Where it runs. The call runs every chunk on the calling thread, in
 * order, with slot 0 and without touching the pool, when the thread count
 * is 1, n is 1, the caller is itself running a chunk (a nested call, on a
 * worker or on the thread that submitted the outer call), another call
 * holds the pool (one call at a time: concurrent submitters never wait
 * for each other and never deadlock), the process is exiting, or no
 * worker could be started. Otherwise the caller wakes up to
 * max_threads - 1 workers and takes chunks itself until none are left,
 * then waits for the workers that joined to finish theirs.
 *
 * Errors. fn returns a status; a failure stops the handing out of chunks
 * (chunks already started finish), and sw_parallel_for returns the status
 * of the lowest-numbered chunk that failed, with its message (and errno,
 * for SW_EOS) recorded on the calling thread, whichever thread ran it.
 * Because chunks are handed out in order, that chunk always ran: when
 * every chunk fails or succeeds regardless of where it runs, the reported
 * failure is the same for every thread count.
 *
 * What a worker inherits for a call: the caller's interrupt watching
 * (base/internal.h), so sw_check_interrupt in a chunk answers as it would
 * on the caller. Nothing else: grad mode, profiler sessions and the error
 * message are per thread, and chunk functions must not use them.
 *
 * Resources. The pool allocates nothing through sw_malloc (its state is
 * static), so fault injection and the live-allocation counter see only
 * what chunk functions allocate. Workers are pthreads started on first
 * need with every signal blocked, kept for the life of the process and
 * joined by an atexit handler; after fork() the child starts fresh ones.
 */
#ifndef SW_BASE_POOL_H
#define SW_BASE_POOL_H

#include "base/internal.h"
#include "strideweave/threads.h"

typedef sw_status (*sw_chunk_fn)(void *ctx, int64_t chunk, int32_t slot);

/* The number of threads a call may use now (sw_get_num_threads). */
int32_t sw_pool_threads(void);

/*
 * Runs fn on every chunk of [0, n_chunks) (see the header comment). n <= 0
 * does nothing and returns SW_OK.
 */
sw_status sw_parallel_for(int64_t n_chunks, int32_t max_threads, sw_chunk_fn fn,
                          void *ctx);

/*
 * The value STRIDEWEAVE_NUM_THREADS would give: the decimal integer text
 * (surrounding blanks allowed) if it is in [1, SW_MAX_THREADS], else 0.
 */
int32_t sw_pool_parse_count(const char *text);

/* For tests: the workers started so far, and the calls that ran over the
 * pool (not inline) so far, process-wide. */
int32_t sw_pool_started(void);
int64_t sw_pool_jobs(void);

#endif /* SW_BASE_POOL_H */
