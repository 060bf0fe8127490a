/*
 * Unit tests of the thread pool (src/base/pool.h, strideweave/threads.h)
 * and of the kernels that run over it.
 *
 * Pool: the thread-count setting (environment variable at first use, its
 * parser, set/get and their errors), every chunk run exactly once with
 * slots below the call's thread count, failures of the lowest chunk
 * carried back with their status, message and errno (also from a worker),
 * the caller's interrupt watching inherited by workers, nested calls run
 * inline on the calling thread, concurrent submitters (with a thread
 * changing the setting meanwhile), and no library allocation by the pool.
 *
 * Kernels: add, mul, relu, exp, copy (and a conversion), sum (over
 * output modes, over summed modes with partials, and over everything),
 * axpy and adam at 1, 2 and 3 threads on sizes around the threshold and
 * large odd sizes, compact, strided and transposed: every result is
 * bit-identical across thread counts (memcmp) and right (exact for
 * arithmetic, within a bound for sums); large walks do use the pool and
 * small ones do not; outputs that are not injective stay on one thread;
 * Int32 overflow, interrupts and a failing partial allocation fail the
 * whole call cleanly; kernels on several application threads at once
 * give the same bits.
 *
 * No test depends on timing: the few waits for a worker are bounded (10
 * s) and only a wait that runs out fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
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
#include "op/kernels/kcommon.h"
#include "strideweave/carrier.h"
#include "strideweave/layout.h"
#include "strideweave/tensor.h"
#include "strideweave/threads.h"

/* ------------------------------------------------------------ helpers */

static sw_layout *P(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK) {
        ok(0, "parse '%s': %s", text, sw_errmsg());
        exit(1);
    }
    return l;
}

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

/* Deterministic floats in [-1, 1) with many distinct bits. */
static void fill_random(float *p, int64_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((double)(s >> 8) / 8388608.0 - 1.0);
    }
}

static float *floats(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!p) {
        bail_out("out of memory");
    }
    return p;
}

static sw_karg F(float *data, const sw_layout *l) {
    sw_karg a = {data, SW_DTYPE_FLOAT32, 0, l};
    return a;
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

/* ------------------------------------------------------------ kernels */

enum {
    K_ADD,
    K_MUL,
    K_RELU,
    K_EXP,
    K_COPY,
    K_COPY_I32,
    K_SUM,
    K_TANH,
    K_SIGMOID,
    K_GELU,
    K_SILU
};
static const char *const kname[] = {"add",     "mul",       "relu", "exp",
                                    "copy",    "copy->i32", "sum",  "tanh",
                                    "sigmoid", "gelu",      "silu"};

/* One kernel case: operand layouts over buffers of cosize elements. */
typedef struct kcase {
    int kernel;
    const char *out, *in; /* layout texts; the second input uses in too */
} kcase;

static int64_t cosize_of(const sw_layout *l) {
    return sw_layout_cosize(l);
}

/*
 * Runs the case at t threads into a fresh output buffer (zeroed), which it
 * returns; *jobs is how many pool jobs the call used.
 */
static float *run_case(const kcase *kc, const float *a, const float *b, int t,
                       int64_t *jobs, sw_status *status) {
    sw_layout *lo = P(kc->out), *li = P(kc->in);
    int64_t no = cosize_of(lo);
    float *o = floats(no);
    memset(o, 0, (size_t)no * sizeof(float));
    set_threads(t);
    int64_t j0 = sw_pool_jobs();
    sw_karg in[2] = {F((float *)a, li), F((float *)b, li)};
    sw_kscalar s = {0.0, 0};
    sw_karg out = F(o, lo);
    sw_status st = SW_OK;
    switch (kc->kernel) {
    case K_ADD:
        st = sw_kernel_elementwise(SW_KELEM_ADD, out, in, s);
        break;
    case K_MUL:
        st = sw_kernel_elementwise(SW_KELEM_MUL, out, in, s);
        break;
    case K_RELU:
        st = sw_kernel_activation(SW_KACT_RELU, out, in[0]);
        break;
    case K_EXP:
        st = sw_kernel_activation(SW_KACT_EXP, out, in[0]);
        break;
    case K_TANH:
        st = sw_kernel_activation(SW_KACT_TANH, out, in[0]);
        break;
    case K_SIGMOID:
        st = sw_kernel_activation(SW_KACT_SIGMOID, out, in[0]);
        break;
    case K_GELU:
        st = sw_kernel_activation(SW_KACT_GELU, out, in[0]);
        break;
    case K_SILU:
        st = sw_kernel_activation(SW_KACT_SILU, out, in[0]);
        break;
    case K_COPY:
        st = sw_kernel_copy(out, in[0]);
        break;
    case K_COPY_I32:
        out.dtype = SW_DTYPE_INT32;
        st = sw_kernel_copy(out, in[0]);
        break;
    case K_SUM:
        st = sw_kernel_reduce_sum(out, in[0]);
        break;
    }
    *jobs = sw_pool_jobs() - j0;
    *status = st;
    sw_layout_unref(lo);
    sw_layout_unref(li);
    return o;
}

/* Non-zero if out matches the kernel applied element by element. */
static int check_case(const kcase *kc, const float *o, const float *a,
                      const float *b) {
    sw_layout *lo = P(kc->out), *li = P(kc->in);
    int good = 1;
    if (kc->kernel == K_SUM) {
        sw_layout *m0 = NULL, *m1 = NULL;
        sw_layout_mode(li, 0, &m0);
        sw_layout_mode(li, 1, &m1);
        int64_t ni = sw_layout_size(m0), nj = sw_layout_size(m1);
        for (int64_t i = 0; i < ni && good; ++i) {
            double ref = 0.0, mag = 0.0;
            for (int64_t j = 0; j < nj; ++j) {
                int64_t idx;
                sw_layout_index(li, i + j * ni, &idx);
                ref += a[idx];
                mag += fabs(a[idx]);
            }
            int64_t oi;
            sw_layout_index(lo, i, &oi);
            good = fabs(o[oi] - ref) <= 1e-5 * mag + 1e-6;
            if (!good)
                diag("sum %lld: got %.9g, want %.9g", (long long)i, o[oi], ref);
        }
        sw_layout_unref(m0);
        sw_layout_unref(m1);
    } else {
        int64_t n = sw_layout_size(lo);
        for (int64_t i = 0; i < n && good; ++i) {
            int64_t oi, ii;
            sw_layout_index(lo, i, &oi);
            sw_layout_index(li, i, &ii);
            float x = a[ii], y = b[ii];
            switch (kc->kernel) {
            case K_ADD:
                good = o[oi] == x + y;
                break;
            case K_MUL:
                good = o[oi] == x * y;
                break;
            case K_RELU:
                good = o[oi] == (x > 0.0f ? x : 0.0f);
                break;
            case K_EXP:
                /* A few ulps: the exp may be a vectorised one. */
                good = fabsf(o[oi] - expf(x)) <= 1e-6f * expf(x);
                break;
            case K_TANH:
            case K_SIGMOID:
            case K_GELU:
            case K_SILU: {
                /* Within a few ulps of the double-precision function. */
                double d = x, want = kc->kernel == K_TANH ? tanh(d)
                                     : kc->kernel == K_SIGMOID
                                         ? 1.0 / (1.0 + exp(-d))
                                     : kc->kernel == K_GELU
                                         ? 0.5 * d * erfc(-d / sqrt(2.0))
                                         : d / (1.0 + exp(-d));
                good = fabs(o[oi] - want) <= 4e-7 * fabs(want) + 1e-30;
                break;
            }
            case K_COPY:
                good = o[oi] == x;
                break;
            case K_COPY_I32: {
                int32_t v;
                memcpy(&v, &o[oi], sizeof v);
                good = v == (int32_t)x;
                break;
            }
            }
            if (!good)
                diag("%s element %lld differs", kname[kc->kernel],
                     (long long)i);
        }
    }
    sw_layout_unref(lo);
    sw_layout_unref(li);
    return good;
}

static void run_determinism(const kcase *kc, int want_pool) {
    sw_layout *li = P(kc->in), *lo = P(kc->out);
    int64_t ni = cosize_of(li), no = cosize_of(lo);
    sw_layout_unref(li);
    sw_layout_unref(lo);
    float *a = floats(ni), *b = floats(ni);
    fill_random(a, ni, 1);
    fill_random(b, ni, 2);
    if (kc->kernel == K_COPY_I32)
        for (int64_t i = 0; i < ni; ++i)
            a[i] *= 1000.0f;
    float *res[3];
    int64_t jobs[3];
    sw_status st[3];
    for (int t = 1; t <= 3; ++t)
        res[t - 1] = run_case(kc, a, b, t, &jobs[t - 1], &st[t - 1]);
    ok(st[0] == SW_OK && st[1] == SW_OK && st[2] == SW_OK, "%s %s <- %s runs",
       kname[kc->kernel], kc->out, kc->in);
    ok(memcmp(res[0], res[1], (size_t)no * 4) == 0 &&
           memcmp(res[0], res[2], (size_t)no * 4) == 0,
       "%s %s <- %s: bit-identical at 1, 2 and 3 threads", kname[kc->kernel],
       kc->out, kc->in);
    ok(check_case(kc, res[1], a, b), "%s %s <- %s: right at 2 threads",
       kname[kc->kernel], kc->out, kc->in);
    if (want_pool)
        ok(jobs[0] == 0 && jobs[1] >= 1 && jobs[2] >= 1,
           "%s %s <- %s: uses the pool at 2 and 3 threads (jobs %lld, %lld, "
           "%lld)",
           kname[kc->kernel], kc->out, kc->in, (long long)jobs[0],
           (long long)jobs[1], (long long)jobs[2]);
    else
        ok(jobs[0] == 0 && jobs[1] == 0 && jobs[2] == 0,
           "%s %s <- %s: below the threshold, no pool job", kname[kc->kernel],
           kc->out, kc->in);
    for (int t = 0; t < 3; ++t)
        free(res[t]);
    free(a);
    free(b);
}

static void test_kernel_determinism(void) {
    int64_t base = sw_debug_live_allocs();
    /* SW_KPAR_MIN is 131072 elements (16384 for exp, weight 8). */
    static const struct {
        kcase kc;
        int pool;
    } cases[] = {
        {{K_ADD, "131071:1", "131071:1"}, 0},
        {{K_ADD, "131072:1", "131072:1"}, 1},
        {{K_ADD, "131089:1", "131089:2"}, 1},
        {{K_ADD, "1000003:1", "1000003:1"}, 1},
        {{K_ADD, "(1009,997):(1,1009)", "(1009,997):(997,1)"}, 1},
        {{K_MUL, "(363,363):(1,363)", "(363,363):(363,1)"}, 1},
        {{K_MUL, "(361,363):(1,361)", "(361,363):(363,1)"}, 0},
        {{K_MUL, "1000003:3", "1000003:1"}, 1},
        {{K_RELU, "(1009,997):(997,1)", "(1009,997):(1,1009)"}, 1},
        {{K_RELU, "((7,13),10007):((1,7),91)", "((7,13),10007):((1,7),91)"}, 1},
        {{K_EXP, "16383:1", "16383:1"}, 0},
        {{K_EXP, "16384:1", "16384:1"}, 1},
        {{K_EXP, "(211,193):(193,1)", "(211,193):(1,211)"}, 1},
        /* The other vectorised activations, contiguous and transposed. */
        {{K_TANH, "16383:1", "16383:1"}, 0},
        {{K_TANH, "1000003:1", "1000003:1"}, 1},
        {{K_SIGMOID, "1000003:1", "1000003:1"}, 1},
        {{K_SIGMOID, "(211,193):(193,1)", "(211,193):(1,211)"}, 1},
        {{K_GELU, "1000003:1", "1000003:1"}, 1},
        {{K_GELU, "(211,193):(193,1)", "(211,193):(1,211)"}, 1},
        {{K_SILU, "1000003:1", "1000003:1"}, 1},
        {{K_COPY, "(1009,997):(1,1009)", "(1009,997):(997,1)"}, 1},
        {{K_COPY, "1000003:1", "1000003:2"}, 1},
        {{K_COPY_I32, "(1009,997):(1,1009)", "(1009,997):(997,1)"}, 1},
        /* Sums: summed modes outermost (partials), output modes
         * outermost (disjoint outputs), everything into one, transposed,
         * a hierarchical output mode and sizes around the threshold. */
        {{K_SUM, "1009:1", "(1009,997):(1,1009)"}, 1},
        /* Column sums with only 16-row blocks and single rows left. */
        {{K_SUM, "17:1", "(17,9001):(1,17)"}, 1},
        {{K_SUM, "300:1", "(300,1001):(1,300)"}, 1},
        {{K_SUM, "1009:1", "(1009,997):(997,1)"}, 1},
        {{K_SUM, "1:1", "(1,1000003):(0,1)"}, 1},
        {{K_SUM, "1:1", "(1,131071):(0,1)"}, 0},
        {{K_SUM, "1:1", "(1,131072):(0,1)"}, 1},
        {{K_SUM, "997:3", "(997,1009):(1009,1)"}, 1},
        {{K_SUM, "(31,33):(33,1)", "((31,33),1001):((1,31),1023)"}, 1},
        {{K_SUM, "3:1", "(3,333667):(333667,1)"}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        /* At one thread a sum may still run in chunks (inline): only
         * the counts at 2 and 3 threads are about the pool. */
        run_determinism(&cases[i].kc, cases[i].pool);
    }
    leak_check(base, "kernels over the pool");
}

/* An output that is not injective keeps the one-thread result. */
static void test_non_injective_output(void) {
    int64_t n = 1 << 20;
    sw_layout *lin = NULL, *lout = NULL;
    sw_layout_leaf(n, 1, &lin);
    sw_layout_parse("(1024,1024):(0,1)", &lout);
    float *a = floats(n), *b = floats(n);
    fill_random(a, n, 3);
    fill_random(b, n, 4);
    float got[3][1024];
    int64_t jobs[3];
    for (int t = 1; t <= 3; ++t) {
        set_threads(t);
        memset(got[t - 1], 0, sizeof got[t - 1]);
        sw_karg in[2] = {F(a, lin), F(b, lin)};
        sw_kscalar s = {0.0, 0};
        int64_t j0 = sw_pool_jobs();
        sw_status st =
            sw_kernel_elementwise(SW_KELEM_ADD, F(got[t - 1], lout), in, s);
        jobs[t - 1] = sw_pool_jobs() - j0;
        expect_ok(st, "add into a broadcast output");
    }
    ok(memcmp(got[0], got[1], sizeof got[0]) == 0 &&
           memcmp(got[0], got[2], sizeof got[0]) == 0,
       "a broadcast output gets the same values at 1, 2 and 3 threads");
    int last = 1;
    for (int64_t j = 0; j < 1024; ++j)
        last = last && got[1][j] == a[1023 + 1024 * j] + b[1023 + 1024 * j];
    ok(last, "the last visit of each output element wins, as on one thread");
    is_int(jobs[1] + jobs[2], 0, "and it runs on one thread");
    sw_layout_unref(lin);
    sw_layout_unref(lout);
    free(a);
    free(b);
}

static void test_kernel_errors(void) {
    int64_t base = sw_debug_live_allocs();
    int64_t n = 1000003;
    sw_layout *l = NULL;
    sw_layout_leaf(n, 1, &l);
    int32_t *x = malloc((size_t)n * sizeof(int32_t));
    int32_t *y = malloc((size_t)n * sizeof(int32_t));
    int32_t *o = malloc((size_t)n * sizeof(int32_t));
    float *f = floats(n), *g = floats(n);
    for (int64_t i = 0; i < n; ++i) {
        x[i] = (int32_t)i;
        y[i] = 1;
        f[i] = (float)i;
    }
    x[n * 3 / 4] = INT32_MAX;
    f[n / 3] = NAN;
    for (int t = 1; t <= 3; ++t) {
        set_threads(t);
        sw_karg in[2] = {{x, SW_DTYPE_INT32, 0, l}, {y, SW_DTYPE_INT32, 0, l}};
        sw_karg out = {o, SW_DTYPE_INT32, 0, l};
        sw_kscalar s = {0.0, 0};
        sw_status st = sw_kernel_elementwise(SW_KELEM_ADD, out, in, s);
        char name[96];
        snprintf(name, sizeof name,
                 "Int32 add overflowing in a late chunk, "
                 "%d threads",
                 t);
        expect_fail(st, SW_EOVERFLOW,
                    "CPU Int32 operation result is out of int32 range", name);
        sw_karg src = F(f, l);
        st = sw_kernel_copy(out, src);
        snprintf(name, sizeof name,
                 "NaN to Int32 in a middle chunk, %d "
                 "threads",
                 t);
        expect_fail(st, SW_EOVERFLOW,
                    "CPU Int32 operation result is out of int32 range", name);
    }

    /* An interrupt stops a walk split over the pool. */
    set_threads(2);
    int before = sw_interrupt_watch(1);
    sw_interrupt_request();
    sw_karg in2[2] = {F(f, l), F(f, l)};
    sw_kscalar s = {0.0, 0};
    sw_status st = sw_kernel_elementwise(SW_KELEM_ADD, F(g, l), in2, s);
    expect_fail(st, SW_EINTERRUPTED, "operation interrupted",
                "an interrupted add over the pool");
    sw_interrupt_clear();
    sw_interrupt_watch(before);

    /* The partials of a sum are allocated through the hook. */
    sw_layout *lx = P("(1009,991):(1,1009)"), *lo = NULL;
    sw_layout_leaf(1009, 1, &lo);
    float *big = floats(1009 * 991), out[1009];
    fill_random(big, 1009 * 991, 5);
    for (int t = 1; t <= 2; ++t) {
        set_threads(t);
        sw_debug_fail_alloc_after(0);
        st = sw_kernel_reduce_sum(F(out, lo), F(big, lx));
        sw_debug_fail_alloc_after(-1);
        expect_fail(st, SW_ENOMEM, "out of memory",
                    "a sum whose partials cannot be allocated");
    }
    sw_layout_unref(l);
    sw_layout_unref(lx);
    sw_layout_unref(lo);
    leak_check(base, "kernel failures over the pool");
    free(x);
    free(y);
    free(o);
    free(f);
    free(g);
    free(big);
}

/* A kernel inside a pool chunk runs inline. */
typedef struct kernel_in_chunk {
    float *a, *o;
    const sw_layout *l;
    atomic_int bad;
} kernel_in_chunk;

static sw_status kernel_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)slot;
    kernel_in_chunk *k = vctx;
    int64_t jobs = sw_pool_jobs();
    int64_t n = sw_layout_size(k->l);
    sw_karg in = {k->a + c * n, SW_DTYPE_FLOAT32, 0, k->l};
    sw_karg out = {k->o + c * n, SW_DTYPE_FLOAT32, 0, k->l};
    sw_status st = sw_kernel_activation(SW_KACT_RELU, out, in);
    if (sw_pool_jobs() != jobs)
        atomic_store(&k->bad, 1);
    return st;
}

static void test_kernel_in_chunk(void) {
    set_threads(2);
    int64_t n = 1 << 18;
    sw_layout *l = NULL;
    sw_layout_leaf(n, 1, &l);
    kernel_in_chunk k = {floats(4 * n), floats(4 * n), l, 0};
    fill_random(k.a, 4 * n, 6);
    sw_status st = sw_parallel_for(4, 0, kernel_chunk, &k);
    expect_ok(st, "large kernels inside pool chunks");
    int good = 1;
    for (int64_t i = 0; i < 4 * n && good; ++i)
        good = k.o[i] == (k.a[i] > 0.0f ? k.a[i] : 0.0f);
    ok(good, "they compute the right values");
    ok(!atomic_load(&k.bad), "and run inline (no pool job of their own)");
    sw_layout_unref(l);
    free(k.a);
    free(k.o);
}

/* Application threads running large kernels at once. */
typedef struct kthread {
    pthread_t thread;
    const float *a, *b;
    const float *want_add, *want_sum;
    int failures;
} kthread;

#define KT_N 1000003
#define KT_R 1009
#define KT_C 991

static void *kthread_main(void *arg) {
    kthread *k = arg;
    sw_layout *l = NULL, *lx = NULL, *lo = NULL;
    sw_layout_leaf(KT_N, 1, &l);
    sw_layout_parse("(1009,991):(1,1009)", &lx);
    sw_layout_leaf(KT_R, 1, &lo);
    float *o = malloc(KT_N * sizeof(float));
    float s[KT_R];
    for (int r = 0; o && r < 6; ++r) {
        sw_karg in[2] = {F((float *)k->a, l), F((float *)k->b, l)};
        sw_kscalar sc = {0.0, 0};
        if (sw_kernel_elementwise(SW_KELEM_ADD, F(o, l), in, sc) != SW_OK ||
            memcmp(o, k->want_add, KT_N * sizeof(float)) != 0)
            k->failures++;
        if (sw_kernel_reduce_sum(F(s, lo), F((float *)k->a, lx)) != SW_OK ||
            memcmp(s, k->want_sum, sizeof s) != 0)
            k->failures++;
    }
    free(o);
    sw_layout_unref(l);
    sw_layout_unref(lx);
    sw_layout_unref(lo);
    return NULL;
}

static void test_concurrent_kernels(void) {
    float *a = floats(KT_N), *b = floats(KT_N), *want = floats(KT_N);
    float want_sum[KT_R];
    fill_random(a, KT_N, 7);
    fill_random(b, KT_N, 8);
    for (int64_t i = 0; i < KT_N; ++i)
        want[i] = a[i] + b[i];
    set_threads(1);
    sw_layout *lx = P("(1009,991):(1,1009)"), *lo = NULL;
    sw_layout_leaf(KT_R, 1, &lo);
    expect_ok(sw_kernel_reduce_sum(F(want_sum, lo), F(a, lx)),
              "the one-thread sum");
    set_threads(2);
    kthread ks[3];
    for (int i = 0; i < 3; ++i) {
        ks[i].a = a;
        ks[i].b = b;
        ks[i].want_add = want;
        ks[i].want_sum = want_sum;
        ks[i].failures = 0;
        pthread_create(&ks[i].thread, NULL, kthread_main, &ks[i]);
    }
    int failures = 0;
    for (int i = 0; i < 3; ++i) {
        pthread_join(ks[i].thread, NULL);
        failures += ks[i].failures;
    }
    is_int(failures, 0,
           "3 threads running large adds and sums at once get the "
           "one-thread bits");
    sw_layout_unref(lx);
    sw_layout_unref(lo);
    free(a);
    free(b);
    free(want);
}

/* ----------------------------------------------------- optimizer steps */

static sw_tensor *cpu_tensor(const char *layout, int64_t n, uint32_t seed,
                             float **data) {
    sw_layout *l = P(layout);
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    if (expect_ok(sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c), "a carrier")) {
        *data = sw_cpu_data(c);
        fill_random(*data, n, seed);
        expect_ok(sw_tensor_new(c, 0, l, &t), "a tensor");
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static void test_optimizer_determinism(void) {
    int64_t base = sw_debug_live_allocs();
    static const struct {
        const char *y, *x;
        int64_t ny, nx;
    } cases[] = {
        {"1000003:1", "1000003:1", 1000003, 1000003},
        {"(1009,997):(1,1009)", "(1009,997):(997,1)", 1009 * 997, 1009 * 997},
        {"131072:2", "131072:1", 262144, 131072},
        /* A broadcast y takes every step in order: one thread. */
        {"(1024,1024):(1,0)", "(1024,1024):(1,1024)", 1024, 1 << 20},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        float *res[3];
        float *xd = NULL, *yd = NULL;
        int good = 1;
        for (int t = 1; t <= 3; ++t) {
            set_threads(t);
            sw_tensor *y = cpu_tensor(cases[i].y, cases[i].ny, 11, &yd);
            sw_tensor *x = cpu_tensor(cases[i].x, cases[i].nx, 12, &xd);
            res[t - 1] = floats(cases[i].ny);
            if (!y || !x) {
                sw_tensor_unref(y);
                sw_tensor_unref(x);
                return;
            }
            float *y0 = floats(cases[i].ny);
            memcpy(y0, yd, (size_t)cases[i].ny * 4);
            expect_ok(sw_tensor_axpy(y, -0.37, x), "axpy");
            memcpy(res[t - 1], yd, (size_t)cases[i].ny * 4);
            if (i < 3 && t == 2) {
                /* Exact: one rounding of y + alpha * x per element. */
                const sw_layout *ly = sw_tensor_layout(y);
                const sw_layout *lx = sw_tensor_layout(x);
                for (int64_t k = 0; k < sw_layout_size(ly) && good; ++k) {
                    int64_t iy, ix;
                    sw_layout_index(ly, k, &iy);
                    sw_layout_index(lx, k, &ix);
                    good = yd[iy] ==
                           (float)((double)y0[iy] + -0.37 * (double)xd[ix]);
                }
            }
            free(y0);
            sw_tensor_unref(y);
            sw_tensor_unref(x);
        }
        ok(memcmp(res[0], res[1], (size_t)cases[i].ny * 4) == 0 &&
               memcmp(res[0], res[2], (size_t)cases[i].ny * 4) == 0,
           "axpy %s += a * %s: bit-identical at 1, 2 and 3 threads", cases[i].y,
           cases[i].x);
        ok(good, "axpy %s: right", cases[i].y);
        for (int t = 0; t < 3; ++t)
            free(res[t]);
    }

    /* Adam: parameter and both moments, after two steps. */
    float *out[3][3];
    int64_t n = 300007;
    for (int t = 1; t <= 3; ++t) {
        set_threads(t);
        float *pd, *gd, *md, *vd;
        sw_tensor *p = cpu_tensor("300007:1", n, 21, &pd);
        sw_tensor *g = cpu_tensor("300007:1", n, 22, &gd);
        sw_tensor *m = cpu_tensor("300007:1", n, 23, &md);
        sw_tensor *v = cpu_tensor("300007:1", n, 24, &vd);
        for (int64_t k = 0; v && k < n; ++k)
            vd[k] = fabsf(vd[k]);
        sw_adam h = {1e-3, 0.9, 0.999, 1e-8, 0.01, 1};
        expect_ok(sw_tensor_adam_step(p, g, m, v, &h), "adam step 1");
        h.step = 2;
        expect_ok(sw_tensor_adam_step(p, g, m, v, &h), "adam step 2");
        float *src[3] = {pd, md, vd};
        for (int k = 0; k < 3; ++k) {
            out[t - 1][k] = floats(n);
            memcpy(out[t - 1][k], src[k], (size_t)n * 4);
        }
        sw_tensor_unref(p);
        sw_tensor_unref(g);
        sw_tensor_unref(m);
        sw_tensor_unref(v);
    }
    int same = 1;
    for (int k = 0; k < 3; ++k)
        same = same && memcmp(out[0][k], out[1][k], (size_t)n * 4) == 0 &&
               memcmp(out[0][k], out[2][k], (size_t)n * 4) == 0;
    ok(same, "adam: parameter and moments bit-identical at 1, 2 and 3 "
             "threads");
    for (int t = 0; t < 3; ++t)
        for (int k = 0; k < 3; ++k)
            free(out[t][k]);
    leak_check(base, "optimizer steps over the pool");
}

/* GEMM over the pool: the same bits at 1, 2, 3 and 4 threads, whose
 * tile grids differ, for shapes cut along rows (several MC blocks, a
 * ragged last one), along columns (few rows, many columns: the training
 * shapes), both ways (two tiles a thread), with a transposed A, a
 * transposed B, both transposed, and a batch. */
static void test_gemm_determinism(void) {
    static const char *const shapes[][3] = {
        /* C, A, B layouts (C[i,j] = sum_k A[i,k] B[j,k]) */
        {"(700,300):(1,700)", "(700,200):(1,700)", "(300,200):(1,300)"},
        {"(401,129):(1,401)", "(401,513):(513,1)", "(129,513):(1,129)"},
        {"(3,300,80):(24000,1,300)", "(3,300,90):(27000,1,300)",
         "(3,80,90):(7200,1,80)"},
        {"(64,901):(1,64)", "(64,300):(1,64)", "(901,300):(300,1)"},
        {"(203,1101):(1,203)", "(203,310):(310,1)", "(1101,310):(310,1)"},
    };
    enum { NSHAPES = 5, NT = 4 };
    for (int s = 0; s < NSHAPES; ++s) {
        sw_layout *lc = P(shapes[s][0]), *la = P(shapes[s][1]),
                  *lb = P(shapes[s][2]);
        int64_t nc = cosize_of(lc), na = cosize_of(la), nb = cosize_of(lb);
        float *a = floats(na), *b = floats(nb);
        fill_random(a, na, 11u + (uint32_t)s);
        fill_random(b, nb, 17u + (uint32_t)s);
        float *out[NT];
        int64_t jobs_before = sw_pool_jobs();
        for (int t = 1; t <= NT; ++t) {
            set_threads(t);
            out[t - 1] = floats(nc);
            memset(out[t - 1], 0, (size_t)nc * sizeof(float));
            sw_kmat c = sw_kmat_of(F(out[t - 1], lc));
            sw_kmat ka = sw_kmat_of(F(a, la)), kb = sw_kmat_of(F(b, lb));
            if (s == 2) {
                c.batch_mode = ka.batch_mode = kb.batch_mode = 0;
                c.row_mode = ka.row_mode = kb.row_mode = 1;
                c.col_mode = ka.col_mode = kb.col_mode = 2;
            }
            sw_status st = sw_kernel_gemm(c, ka, kb);
            if (st != SW_OK)
                bail_out(sw_errmsg());
        }
        int same = 1;
        for (int t = 1; t < NT; ++t)
            same =
                same && memcmp(out[0], out[t], (size_t)nc * sizeof(float)) == 0;
        ok(same, "gemm %s: bit-identical at 1, 2, 3 and 4 threads",
           shapes[s][0]);
        ok(sw_pool_jobs() > jobs_before, "gemm %s: ran over the pool",
           shapes[s][0]);
        for (int t = 0; t < NT; ++t)
            free(out[t]);
        free(a);
        free(b);
        sw_layout_unref(lc);
        sw_layout_unref(la);
        sw_layout_unref(lb);
    }
    set_threads(2);
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
    test_kernel_determinism();
    test_non_injective_output();
    test_kernel_errors();
    test_kernel_in_chunk();
    test_concurrent_kernels();
    test_optimizer_determinism();
    test_gemm_determinism();
    return done_testing();
}
