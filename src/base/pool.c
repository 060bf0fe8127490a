/*
 * The thread pool behind sw_parallel_for (pool.h) and the thread-count
 * setting (strideweave/threads.h).
 *
 * One job at a time. A submitter that finds the pool free publishes its
 * job (on its own stack), bumps the generation and wakes the workers; each
 * worker that sees a new generation while the job is open and not yet at
 * its thread count joins it under the lock, takes a slot, and then claims
 * chunks with one atomic increment each until they run out. The submitter
 * claims chunks the same way, then closes the job (no worker joins after
 * that) and waits until every worker that joined has left it. A job never
 * waits for a worker that has not joined, so a slow wake-up costs nothing
 * but the chunks that worker would have run.
 */
#define _GNU_SOURCE
#include "base/pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ setting */

static pthread_once_t setting_once = PTHREAD_ONCE_INIT;
static atomic_int setting = 1;

int32_t sw_pool_parse_count(const char *text) {
    if (text == NULL)
        return 0;
    while (*text == ' ' || *text == '\t')
        text++;
    if (*text < '0' || *text > '9')
        return 0;
    long v = 0;
    for (; *text >= '0' && *text <= '9'; ++text) {
        v = v * 10 + (*text - '0');
        if (v > SW_MAX_THREADS)
            return 0;
    }
    while (*text == ' ' || *text == '\t')
        text++;
    if (*text != '\0' || v < 1)
        return 0;
    return (int32_t)v;
}

/* The cores this process may run on (its affinity mask), else online. */
static int32_t default_count(void) {
    long n = 0;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > SW_MAX_THREADS ? SW_MAX_THREADS : (int32_t)n;
}

static void pool_init_once(void);

static void setting_init(void) {
    int32_t n = sw_pool_parse_count(getenv("STRIDEWEAVE_NUM_THREADS"));
    atomic_store(&setting, n ? n : default_count());
    pool_init_once();
}

int32_t sw_pool_threads(void) {
    pthread_once(&setting_once, setting_init);
    return atomic_load_explicit(&setting, memory_order_relaxed);
}

sw_status sw_set_num_threads(int n) {
    pthread_once(&setting_once, setting_init);
    if (n < 1 || n > SW_MAX_THREADS)
        return sw_fail(SW_EVALUE,
                       "the number of threads must be between 1 and %d, not "
                       "%d",
                       SW_MAX_THREADS, n);
    atomic_store(&setting, n);
    return SW_OK;
}

int sw_get_num_threads(void) {
    return sw_pool_threads();
}

/* ---------------------------------------------------------------- job */

typedef struct job {
    sw_chunk_fn fn;
    void *ctx;
    int64_t n;
    atomic_int_fast64_t next; /* the next chunk to hand out */
    atomic_int failed;        /* set once a chunk failed: hand out no more */
    int watching;             /* the submitter's interrupt watching */
    int32_t slots;            /* slots handed out so far (under lock) */
    /* The lowest-numbered failure so far (under lock). */
    int64_t err_chunk;
    sw_status err_status;
    int err_errno;
    char err_msg[512];
} job;

/* Non-zero while this thread runs chunks of a job: nested calls inline. */
static _Thread_local int in_job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* workers wait */
static pthread_cond_t left = PTHREAD_COND_INITIALIZER; /* submitter waits */
/* Everything below is under lock. */
static pthread_t workers[SW_MAX_THREADS];
static int32_t started;
static int busy;  /* a job owns the pool */
static int open_; /* the job takes new workers */
/* Workers inside the job: changed under lock, polled without it. */
static atomic_int joined;
static int32_t max_join; /* workers the job takes */
static int32_t sleepers; /* workers blocked on wake */
/* Bumped (under lock) for every job; read without the lock while spinning. */
static atomic_uintptr_t generation;
static job *current;
static int stopping;                 /* the process is exiting */
static atomic_int_fast64_t jobs_run; /* calls that used the pool */
static int exit_hooked;

static void record_failure(job *j, int64_t chunk, sw_status st) {
    pthread_mutex_lock(&lock);
    if (j->err_status == SW_OK || chunk < j->err_chunk) {
        j->err_chunk = chunk;
        j->err_status = st;
        j->err_errno = sw_errno();
        snprintf(j->err_msg, sizeof j->err_msg, "%s", sw_errmsg());
    }
    pthread_mutex_unlock(&lock);
    atomic_store(&j->failed, 1);
}

static void run_chunks(job *j, int32_t slot) {
    for (;;) {
        if (atomic_load_explicit(&j->failed, memory_order_relaxed))
            return;
        int64_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->n)
            return;
        sw_status st = j->fn(j->ctx, c, slot);
        if (st)
            record_failure(j, c, st);
    }
}

/*
 * How long an idle worker polls for the next job before it sleeps, and
 * how many times a submitter polls for its workers to leave before it
 * sleeps (a pause instruction each, some 10-50 ns). Waking a sleeping
 * thread costs tens of microseconds on a virtual machine, and up to
 * milliseconds when the hypervisor has taken the idle core away: the whole
 * gain of an operation of a million elements. Measured here (1e6-element
 * multiply, 2 threads, 10 ms pause before each burst of 6 calls), the
 * sixth call took 0.19 ms when workers slept after 200 us of polling
 * (slower than one thread, 0.16 ms) and 0.09 ms when they polled through
 * the pause; back to back, 0.08 ms either way. So a worker polls for
 * SW_POOL_SPIN_NS after its last job, as OpenMP runtimes do by default:
 * kernels separated by a few milliseconds of Python get the other cores
 * at once, and an idle process stops using them soon after.
 */
#define SW_POOL_SPIN 4096
#define SW_POOL_SPIN_NS 2000000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Polls for a generation other than seen (or a stop) for up to
 * SW_POOL_SPIN_NS; no lock taken. The clock is read every 64 polls, and
 * from the second batch on the worker also yields its core to any other
 * thread ready to run there (another runtime's workers, such as an OpenCL
 * or OpenMP pool in the same process): polling then keeps no one else off
 * the core, and a yield with nothing else to run returns at once. */
static void spin_for_job(uintptr_t seen) {
    int64_t deadline = now_ns() + SW_POOL_SPIN_NS;
    for (int batch = 0;; ++batch) {
        for (int i = 0; i < 64; ++i) {
            if (atomic_load_explicit(&generation, memory_order_relaxed) != seen)
                return;
            cpu_relax();
        }
        if (now_ns() >= deadline)
            return;
        if (batch > 0)
            sched_yield();
    }
}

static void *worker_main(void *arg) {
    /* The generation when it was created: the job being submitted then
     * (published right after) is new to it. */
    uintptr_t seen = (uintptr_t)arg;
    in_job = 1; /* everything a worker runs is inside some job */
    for (;;) {
        spin_for_job(seen);
        pthread_mutex_lock(&lock);
        if (!stopping && generation == seen) {
            /* Nothing new while it polled: sleep until a job comes. */
            sleepers++;
            pthread_cond_wait(&wake, &lock);
            sleepers--;
        }
        if (stopping)
            break;
        if (generation == seen || !open_ || joined >= max_join) {
            /* A spurious wake-up, or the job closed (or filled) before
             * this worker got here: a worker that slept wakes later than
             * a short job lasts, so it polls for the next one rather than
             * sleeping again and missing every job of a burst. */
            seen = generation;
            pthread_mutex_unlock(&lock);
            continue;
        }
        seen = generation;
        job *j = current;
        joined++;
        int32_t slot = ++j->slots;
        pthread_mutex_unlock(&lock);
        int watching = sw_interrupt_watch(j->watching);
        run_chunks(j, slot);
        sw_interrupt_watch(watching);
        sw_clear_error();
        pthread_mutex_lock(&lock);
        if (--joined == 0)
            pthread_cond_signal(&left);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Joins every worker; later calls run inline. Registered with atexit. */
static void pool_shutdown(void) {
    pthread_mutex_lock(&lock);
    stopping = 1;
    pthread_cond_broadcast(&wake);
    int32_t n = started;
    pthread_mutex_unlock(&lock);
    for (int32_t t = 0; t < n; ++t)
        pthread_join(workers[t], NULL);
    pthread_mutex_lock(&lock);
    started = 0;
    pthread_mutex_unlock(&lock);
}

/* Starts workers until there are want of them (under lock). */
static void start_workers(int32_t want) {
    if (started >= want || stopping)
        return;
    if (!exit_hooked) {
        if (atexit(pool_shutdown) != 0)
            return; /* without the hook, workers could not be joined */
        exit_hooked = 1;
    }
    /* New threads inherit the mask: block everything while creating them,
     * so that signals go to the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (started < want) {
        if (pthread_create(&workers[started], NULL, worker_main,
                           (void *)atomic_load(&generation)) != 0)
            break;
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* In a child after fork() only the forking thread exists. */
static void atfork_prepare(void) {
    pthread_mutex_lock(&lock);
}

static void atfork_parent(void) {
    pthread_mutex_unlock(&lock);
}

static void atfork_child(void) {
    started = 0;
    busy = 0;
    open_ = 0;
    joined = 0;
    max_join = 0;
    current = NULL;
    sleepers = 0;
    pthread_cond_init(&wake, NULL);
    pthread_cond_init(&left, NULL);
    pthread_mutex_unlock(&lock);
}

static void pool_init_once(void) {
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int32_t sw_pool_started(void) {
    pthread_mutex_lock(&lock);
    int32_t n = started;
    pthread_mutex_unlock(&lock);
    return n;
}

int64_t sw_pool_jobs(void) {
    return atomic_load_explicit(&jobs_run, memory_order_relaxed);
}

static sw_status run_inline(int64_t n, sw_chunk_fn fn, void *ctx) {
    int outer = in_job;
    in_job = 1;
    sw_status st = SW_OK;
    for (int64_t c = 0; c < n && !st; ++c)
        st = fn(ctx, c, 0);
    in_job = outer;
    return st;
}

sw_status sw_parallel_for(int64_t n_chunks, int32_t max_threads, sw_chunk_fn fn,
                          void *ctx) {
    if (n_chunks <= 0)
        return SW_OK;
    int32_t threads = sw_pool_threads();
    if (max_threads > 0 && max_threads < threads)
        threads = max_threads;
    if ((int64_t)threads > n_chunks)
        threads = (int32_t)n_chunks;
    if (threads <= 1 || in_job)
        return run_inline(n_chunks, fn, ctx);

    job j;
    j.fn = fn;
    j.ctx = ctx;
    j.n = n_chunks;
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);
    j.watching = sw_interrupt_watching;
    j.slots = 0;
    j.err_chunk = 0;
    j.err_status = SW_OK;
    j.err_errno = 0;
    j.err_msg[0] = '\0';

    pthread_mutex_lock(&lock);
    if (busy || stopping) {
        pthread_mutex_unlock(&lock);
        return run_inline(n_chunks, fn, ctx);
    }
    start_workers(threads - 1);
    if (started == 0) {
        pthread_mutex_unlock(&lock);
        return run_inline(n_chunks, fn, ctx);
    }
    busy = 1;
    atomic_fetch_add_explicit(&jobs_run, 1, memory_order_relaxed);
    current = &j;
    open_ = 1;
    joined = 0;
    max_join = threads - 1;
    generation++;
    if (sleepers > 0)
        pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);

    in_job = 1;
    run_chunks(&j, 0);
    in_job = 0;

    pthread_mutex_lock(&lock);
    open_ = 0;
    pthread_mutex_unlock(&lock);
    /* The workers that joined are finishing their last chunks, usually
     * within microseconds: poll before sleeping, as waking up costs more. */
    for (int i = 0; i < SW_POOL_SPIN && atomic_load(&joined) > 0; ++i)
        cpu_relax();
    pthread_mutex_lock(&lock);
    while (joined > 0)
        pthread_cond_wait(&left, &lock);
    current = NULL;
    busy = 0;
    pthread_mutex_unlock(&lock);

    if (j.err_status != SW_OK)
        return sw_restore_error(j.err_status, j.err_errno, j.err_msg);
    return SW_OK;
}
