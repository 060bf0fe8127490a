/*
 * Unit tests of the thread pool (src/base/pool.h, strideweave/threads.h).
 *
 * Pool: the thread-count setting (environment variable at first use, its
 * parser, set/get and their errors), every chunk run exactly once with
 * slots below the call's thread count, failures of the lowest chunk
 * carried back with their status, message and errno (also from a worker),
 * the caller's interrupt watching inherited by workers, nested calls run
 * inline on the calling thread, concurrent submitters (with a thread
 * changing the setting meanwhile), and no library allocation by the pool.
 *
 * No test depends on timing: the few waits for a worker are bounded (10
 * s) and only a wait that runs out fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/pool.h"
#include "check.h"
#include "strideweave/threads.h"

/* ------------------------------------------------------------ helpers */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits (at most 10 s) until *flag is set; non-zero if it was. */
static int wait_for(atomic_int *flag) {
    double end = now() + 10.0;
    while (!atomic_load(flag)) {
        if (now() > end)
            return 0;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

static void set_threads(int n) {
    sw_status st = sw_set_num_threads(n);
    if (st != SW_OK) {
        ok(0, "sw_set_num_threads(%d): %s", n, sw_errmsg());
        exit(1);
    }
}

/* ------------------------------------------------------------ setting */

static void test_setting_from_environment(void) {
    /* main sets STRIDEWEAVE_NUM_THREADS=3 before anything uses the pool. */
    is_int(sw_get_num_threads(), 3,
           "STRIDEWEAVE_NUM_THREADS is read at first use");
    setenv("STRIDEWEAVE_NUM_THREADS", "2", 1);
    is_int(sw_get_num_threads(), 3, "and only then");
}

static void test_parse_count(void) {
    static const struct {
        const char *text;
        int32_t want;
    } cases[] = {
        {"4", 4},    {" 2 ", 2},
        {"1", 1},    {"1024", 1024},
        {"1025", 0}, {"0", 0},
        {"-1", 0},   {"", 0},
        {"  ", 0},   {"abc", 0},
        {"3x", 0},   {"+3", 0},
        {"3 4", 0},  {"99999999999999999999999", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        is_int(sw_pool_parse_count(cases[i].text), cases[i].want,
               "STRIDEWEAVE_NUM_THREADS='%s' gives %d", cases[i].text,
               (int)cases[i].want);
    is_int(sw_pool_parse_count(NULL), 0, "unset gives 0 (the default)");
}

static void test_set_get(void) {
    set_threads(3);
    static const int bad[] = {0, -1, -1000, SW_MAX_THREADS + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char want[128];
        snprintf(want, sizeof want,
                 "the number of threads must be between 1 and 1024, not %d",
                 bad[i]);
        sw_status st = sw_set_num_threads(bad[i]);
        expect_fail(st, SW_EVALUE, want, "sw_set_num_threads(bad)");
        is_int(sw_get_num_threads(), 3, "a refused count changes nothing");
    }
    expect_ok(sw_set_num_threads(1), "sw_set_num_threads(1)");
    is_int(sw_get_num_threads(), 1, "get returns what set stored (1)");
    expect_ok(sw_set_num_threads(SW_MAX_THREADS), "sw_set_num_threads(max)");
    is_int(sw_get_num_threads(), SW_MAX_THREADS, "up to SW_MAX_THREADS");
    set_threads(2);
    is_int(sw_get_num_threads(), 2, "get returns what set stored (2)");
}

/* --------------------------------------------------------------- pool */

#define MAXCHUNKS 100003

typedef struct count_ctx {
    atomic_int hits[MAXCHUNKS];
    atomic_int bad_slot;
    int32_t limit; /* slots must be below this */
} count_ctx;

static sw_status count_chunk(void *vctx, int64_t c, int32_t slot) {
    count_ctx *x = vctx;
    atomic_fetch_add(&x->hits[c], 1);
    if (slot < 0 || slot >= x->limit)
        atomic_store(&x->bad_slot, 1);
    return SW_OK;
}

static count_ctx counts;

static int run_counted(int64_t n, int32_t max_threads, int32_t limit) {
    for (int64_t c = 0; c < MAXCHUNKS; ++c)
        atomic_store(&counts.hits[c], 0);
    atomic_store(&counts.bad_slot, 0);
    counts.limit = limit;
    if (sw_parallel_for(n, max_threads, count_chunk, &counts) != SW_OK)
        return 0;
    for (int64_t c = 0; c < MAXCHUNKS; ++c)
        if (atomic_load(&counts.hits[c]) != (c < n ? 1 : 0))
            return 0;
    return !atomic_load(&counts.bad_slot);
}

static void test_every_chunk_once(void) {
    static const int64_t sizes[] = {1, 2, 3, 7, 64, 1000, MAXCHUNKS};
    for (int t = 1; t <= 4; ++t) {
        set_threads(t);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
            ok(run_counted(sizes[i], 0, t),
               "%d threads, %lld chunks: each runs once, slots below %d", t,
               (long long)sizes[i], t);
    }
    set_threads(4);
    ok(run_counted(1000, 2, 2), "max_threads 2 under a setting of 4: slots "
                                "0 and 1 only");
    ok(run_counted(0, 0, 4) && run_counted(-5, 0, 4),
       "no chunks: nothing runs, SW_OK");
}

static sw_status no_alloc_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)vctx;
    (void)c;
    (void)slot;
    return SW_OK;
}

static void test_pool_allocates_nothing(void) {
    int64_t base = sw_debug_live_allocs();
    int32_t before = sw_pool_started();
    set_threads(3);
    for (int r = 0; r < 20; ++r)
        sw_parallel_for(100, 0, no_alloc_chunk, NULL);
    ok(sw_pool_started() >= before, "workers are kept (%d started)",
       (int)sw_pool_started());
    ok(sw_pool_started() <= SW_MAX_THREADS, "at most SW_MAX_THREADS workers");
    leak_check(base, "starting and using the pool");
}

static sw_status failing_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)vctx;
    (void)slot;
    if (c == 5 || c == 9 || c >= 40)
        return sw_fail(SW_EVALUE, "chunk %lld failed", (long long)c);
    return SW_OK;
}

/* Chunks on the caller wait for one on a worker; those fail with errno. */
typedef struct worker_fail {
    atomic_int worker_ran;
    atomic_int timed_out;
    int mode; /* 0: SW_EOS from sw_fail_os; 1: interrupt check; 2: alloc */
    atomic_int saw_interrupt;
} worker_fail;

static sw_status worker_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)c;
    worker_fail *w = vctx;
    if (slot == 0) {
        if (!wait_for(&w->worker_ran))
            atomic_store(&w->timed_out, 1);
        return SW_OK;
    }
    sw_status st = SW_OK;
    if (w->mode == 0) {
        st = sw_fail_os(ENOENT, "worker chunk");
    } else if (w->mode == 1) {
        st = sw_check_interrupt();
        if (st)
            atomic_store(&w->saw_interrupt, 1);
    } else {
        void *p = sw_malloc(64);
        st = p ? SW_OK : sw_oom();
        sw_free(p);
    }
    atomic_store(&w->worker_ran, 1);
    return st;
}

static sw_status run_worker_fail(worker_fail *w, int mode) {
    atomic_store(&w->worker_ran, 0);
    atomic_store(&w->timed_out, 0);
    atomic_store(&w->saw_interrupt, 0);
    w->mode = mode;
    return sw_parallel_for(64, 0, worker_chunk, w);
}

static void test_errors(void) {
    for (int t = 1; t <= 3; ++t) {
        set_threads(t);
        sw_status st = sw_parallel_for(64, 0, failing_chunk, NULL);
        char name[64];
        snprintf(name, sizeof name, "failing chunks at %d threads", t);
        expect_fail(st, SW_EVALUE, "chunk 5 failed", name);
    }
    set_threads(2);
    worker_fail w;
    sw_clear_error();
    sw_status st = run_worker_fail(&w, 0);
    ok(!atomic_load(&w.timed_out), "a worker took a chunk");
    is_int(st, SW_EOS, "a failure on a worker fails the call (%s)", S(st));
    is_str(sw_errmsg(), "worker chunk: No such file or directory",
           "with the worker's message on the calling thread");
    is_int(sw_errno(), ENOENT, "and its errno");
    sw_clear_error();

    /* Fault injection reaches allocations made on workers. */
    int64_t base = sw_debug_live_allocs();
    sw_debug_fail_alloc_after(0);
    st = run_worker_fail(&w, 2);
    sw_debug_fail_alloc_after(-1);
    ok(!atomic_load(&w.timed_out), "a worker took a chunk");
    expect_fail(st, SW_ENOMEM, "out of memory",
                "an injected allocation failure on a worker");
    leak_check(base, "allocation failure on a worker");
}

static void test_interrupt_watching(void) {
    set_threads(2);
    worker_fail w;
    int before = sw_interrupt_watch(1);
    sw_interrupt_request();
    sw_status st = run_worker_fail(&w, 1);
    ok(!atomic_load(&w.timed_out), "a worker took a chunk");
    ok(atomic_load(&w.saw_interrupt),
       "a worker sees the request the watching caller would");
    expect_fail(st, SW_EINTERRUPTED, "operation interrupted",
                "an interrupt seen on a worker");
    sw_interrupt_watch(0);
    st = run_worker_fail(&w, 1);
    ok(!atomic_load(&w.timed_out), "a worker took a chunk");
    ok(!atomic_load(&w.saw_interrupt) && st == SW_OK,
       "with a caller that does not watch, workers ignore it too");
    sw_interrupt_clear();
    sw_interrupt_watch(before);
}

typedef struct nest_ctx {
    atomic_int mismatch;
    atomic_int inner_runs;
    atomic_int inner_jobs;
} nest_ctx;

typedef struct inner_ctx {
    nest_ctx *outer;
    pthread_t self;
} inner_ctx;

static sw_status inner_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)c;
    inner_ctx *in = vctx;
    if (!pthread_equal(in->self, pthread_self()) || slot != 0)
        atomic_store(&in->outer->mismatch, 1);
    atomic_fetch_add(&in->outer->inner_runs, 1);
    return SW_OK;
}

static sw_status outer_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)c;
    (void)slot;
    inner_ctx in = {vctx, pthread_self()};
    int64_t jobs = sw_pool_jobs();
    sw_status st = sw_parallel_for(16, 0, inner_chunk, &in);
    if (sw_pool_jobs() != jobs)
        atomic_store(&in.outer->inner_jobs, 1);
    return st;
}

static void test_nested(void) {
    set_threads(3);
    nest_ctx n;
    atomic_init(&n.mismatch, 0);
    atomic_init(&n.inner_runs, 0);
    atomic_init(&n.inner_jobs, 0);
    sw_status st = sw_parallel_for(12, 0, outer_chunk, &n);
    expect_ok(st, "nested parallel_for");
    is_int(atomic_load(&n.inner_runs), 12 * 16, "every inner chunk ran once");
    ok(!atomic_load(&n.mismatch),
       "a nested call runs on the thread of its chunk, with slot 0");
}

/* Several application threads submitting at once. */
typedef struct submitter {
    pthread_t thread;
    int id;
    int failures;
} submitter;

typedef struct sum_ctx {
    atomic_llong total;
    atomic_int bad_slot;
} sum_ctx;

static sw_status add_chunk(void *vctx, int64_t c, int32_t slot) {
    sum_ctx *s = vctx;
    atomic_fetch_add(&s->total, (long long)c + 1);
    if (slot < 0 || slot >= SW_MAX_THREADS)
        atomic_store(&s->bad_slot, 1);
    return SW_OK;
}

static void *submit_main(void *arg) {
    submitter *me = arg;
    for (int r = 0; r < 300; ++r) {
        sum_ctx s;
        atomic_init(&s.total, 0);
        atomic_init(&s.bad_slot, 0);
        int64_t n = 1 + (r * 7 + me->id * 13) % 97;
        sw_status st = sw_parallel_for(n, 0, add_chunk, &s);
        if (st != SW_OK || atomic_load(&s.total) != n * (n + 1) / 2 ||
            atomic_load(&s.bad_slot))
            me->failures++;
    }
    return NULL;
}

static atomic_int stop_toggling;

static void *toggle_main(void *arg) {
    (void)arg;
    for (int r = 0; !atomic_load(&stop_toggling); ++r) {
        sw_set_num_threads(1 + r % 3);
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void test_concurrent_submitters(void) {
    set_threads(3);
    submitter subs[4];
    pthread_t toggler;
    atomic_store(&stop_toggling, 0);
    int made = pthread_create(&toggler, NULL, toggle_main, NULL) == 0;
    for (int i = 0; i < 4; ++i) {
        subs[i].id = i;
        subs[i].failures = 0;
        pthread_create(&subs[i].thread, NULL, submit_main, &subs[i]);
    }
    int failures = 0;
    for (int i = 0; i < 4; ++i) {
        pthread_join(subs[i].thread, NULL);
        failures += subs[i].failures;
    }
    atomic_store(&stop_toggling, 1);
    if (made)
        pthread_join(toggler, NULL);
    is_int(failures, 0,
           "4 threads x 300 calls at once, with the setting changing: every "
           "call runs every chunk once");
    set_threads(2);
}

/*
 * A child made by fork() has none of the parent's workers: its first call
 * starts its own instead of waiting for threads that do not exist. (Not
 * under ThreadSanitizer, which does not support threads after a fork of a
 * multi-threaded process.)
 */
static void test_fork(void) {
#if defined(__SANITIZE_THREAD__)
    ok(1, "# SKIP fork under ThreadSanitizer");
#else
    set_threads(3);
    ok(run_counted(1000, 0, 3), "the parent uses its workers");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int good = run_counted(MAXCHUNKS, 0, 3) && run_counted(64, 0, 3);
        _exit(good ? 0 : 1);
    }
    int status = -1, waited = 0;
    double end = now() + 60.0;
    while (pid > 0 && !waited && now() < end) {
        waited = waitpid(pid, &status, WNOHANG) == pid;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (!waited && pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    ok(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "a forked child runs every chunk of its calls once (without hanging)");
    ok(run_counted(1000, 0, 3), "and the parent's workers still serve it");
#endif
}

int main(void) {
    /* Before anything reads the setting. */
    setenv("STRIDEWEAVE_NUM_THREADS", "3", 1);
    test_setting_from_environment();
    test_pool_allocates_nothing();
    test_parse_count();
    test_set_get();
    test_every_chunk_once();
    test_errors();
    test_interrupt_watching();
    test_nested();
    test_concurrent_submitters();
    test_fork();
    return done_testing();
}
