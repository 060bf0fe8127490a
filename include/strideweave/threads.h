/*
 * StrideWeave threads: how many threads the library's kernels use.
 *
 * Large CPU kernels (elementwise arithmetic, activations, copies, fills,
 * sums and the optimizer steps, from a few hundred thousand elements)
 * split their work into chunks whose boundaries depend only on the
 * operands, never on the number of threads, and run them over a pool of
 * worker threads that the library starts on first use; the calling thread
 * takes part in the work. Results are bit-identical for every thread
 * count, sums included (each chunk adds its part in a fixed order and the
 * parts are combined in chunk order).
 *
 * One call uses the pool at a time: a kernel called while another thread's
 * kernel holds it, or from inside a pool chunk, runs its chunks on its own
 * thread. The workers block every signal, never call into a host language,
 * and are joined when the process exits normally; a child made by fork()
 * starts new ones when it first needs them.
 */
#ifndef STRIDEWEAVE_THREADS_H
#define STRIDEWEAVE_THREADS_H

#include "strideweave/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest number of threads a call may use (the caller included). */
#define SW_MAX_THREADS 1024

/*
 * Sets the number of threads later kernel calls use, the calling one
 * included (1: everything runs on the calling thread). Process-wide and
 * safe to call from any thread at any time; a kernel already running
 * keeps the count it started with. Workers are started when a call first
 * needs them and are kept (idle ones sleep). Errors: SW_EVALUE unless
 * 1 <= n <= SW_MAX_THREADS ("the number of threads must be between 1 and
 * 1024, not 0"); the setting is then unchanged.
 */
SW_API sw_status sw_set_num_threads(int n);

/*
 * The number of threads kernel calls use. Until sw_set_num_threads is
 * called it is the value of the environment variable
 * STRIDEWEAVE_NUM_THREADS, read once at the first call of either function
 * or the first kernel that could use the pool, when that value is a
 * decimal integer from 1 to SW_MAX_THREADS; otherwise (unset, empty, not
 * a number, out of range) the variable is ignored and the count is the
 * number of cores the process may run on (at most SW_MAX_THREADS).
 */
SW_API int sw_get_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_THREADS_H */
