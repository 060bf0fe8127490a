/*
 * Unit tests of the base module: status names, the per-thread error
 * message, the allocation hook, the live-allocation counter and the
 * aligned allocator.
 *
 * The layout constructors serve as the library calls that fail or allocate,
 * since the base module has no fallible entry point of its own.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/internal.h"
#include "strideweave/base.h"
#include "strideweave/layout.h"
#include "tap.h"

/*
 * An address no library call can produce, to prove that a failing call left
 * its out-parameter alone.
 */
static max_align_t sentinel_storage;
#define SENTINEL_LAYOUT ((sw_layout *)(void *)&sentinel_storage)

static void test_status_names(void) {
    static const struct {
        sw_status status;
        const char *name;
    } names[] = {
        {SW_OK, "SW_OK"},
        {SW_ENOMEM, "SW_ENOMEM"},
        {SW_ETYPE, "SW_ETYPE"},
        {SW_EVALUE, "SW_EVALUE"},
        {SW_EINDEX, "SW_EINDEX"},
        {SW_EKEY, "SW_EKEY"},
        {SW_ERUNTIME, "SW_ERUNTIME"},
        {SW_EBUFFER, "SW_EBUFFER"},
        {SW_ENOTIMPL, "SW_ENOTIMPL"},
        {SW_EOVERFLOW, "SW_EOVERFLOW"},
        {SW_EOS, "SW_EOS"},
        {SW_EINTERRUPTED, "SW_EINTERRUPTED"},
    };
    size_t n = sizeof names / sizeof names[0];
    /* The table above must list every code, or a new one went untested. */
    is_int(n, SW_STATUS_COUNT, "the name table covers SW_STATUS_COUNT codes");
    for (size_t k = 0; k < n; k++)
        is_str(sw_status_name(names[k].status), names[k].name,
               "sw_status_name(%d)", (int)names[k].status);
    /* Out-of-range codes have no contract beyond not crashing. */
    const char *unknown = sw_status_name((sw_status)SW_STATUS_COUNT);
    ok(unknown != NULL && strlen(unknown) > 0,
       "sw_status_name of an unknown code gives a non-empty string");
}

/* Runs in a second thread: its error state starts clean and stays its own. */
static void *thread_error_state(void *arg) {
    int *result = arg;
    int clean = sw_errcode() == SW_OK && strcmp(sw_errmsg(), "") == 0;
    sw_layout *l = SENTINEL_LAYOUT;
    sw_status st = sw_layout_leaf(4, -1, &l);
    int failed_here = st == SW_EVALUE && sw_errcode() == SW_EVALUE;
    result[0] = clean;
    result[1] = failed_here;
    return NULL;
}

static void test_error_state(void) {
    /* Nothing has failed yet in this program. */
    is_int(sw_errcode(), SW_OK, "sw_errcode is SW_OK before any failure");
    is_str(sw_errmsg(), "", "sw_errmsg is empty before any failure");

    sw_layout *l = SENTINEL_LAYOUT;
    sw_status st = sw_layout_leaf(0, 1, &l);
    is_int(st, SW_EVALUE, "sw_layout_leaf(0, 1) fails with SW_EVALUE");
    ok(l == SENTINEL_LAYOUT, "the failed call left its out-parameter alone");
    is_int(sw_errcode(), SW_EVALUE, "sw_errcode reports SW_EVALUE");
    ok(strlen(sw_errmsg()) > 0, "sw_errmsg names the failure: '%s'",
       sw_errmsg());

    /* A success does not erase the last failure: it is the last failure. */
    sw_layout *good = NULL;
    st = sw_layout_leaf(4, 1, &good);
    is_int(st, SW_OK, "sw_layout_leaf(4, 1) succeeds");
    is_int(sw_errcode(), SW_EVALUE, "a later success keeps sw_errcode");
    ok(strlen(sw_errmsg()) > 0, "a later success keeps sw_errmsg");
    sw_layout_unref(good);

    /* The error state is per thread. */
    pthread_t th;
    int result[2] = {0, 0};
    if (ok(pthread_create(&th, NULL, thread_error_state, result) == 0,
           "started a second thread")) {
        pthread_join(th, NULL);
        ok(result[0], "a new thread starts with no failure recorded");
        ok(result[1], "a failure in the second thread is reported there");
    }
    is_int(sw_errcode(), SW_EVALUE,
           "the second thread's failure did not touch this thread's code");

    sw_clear_error();
    is_int(sw_errcode(), SW_OK, "sw_clear_error resets sw_errcode");
    is_str(sw_errmsg(), "", "sw_clear_error empties sw_errmsg");

    /* A second failure replaces the first. */
    l = SENTINEL_LAYOUT;
    st = sw_layout_parse("(2,3", &l);
    is_int(st, SW_EVALUE, "parsing '(2,3' fails with SW_EVALUE");
    is_int(sw_errcode(), SW_EVALUE, "sw_errcode follows the new failure");
    ok(l == SENTINEL_LAYOUT, "the failed parse left its out-parameter alone");
    sw_clear_error();
}

static void test_alloc_hook(void) {
    int64_t base = sw_debug_live_allocs();
    ok(base >= 0, "sw_debug_live_allocs is not negative (%lld)",
       (long long)base);

    /* n = 0: the very next allocation fails. */
    sw_layout *l = SENTINEL_LAYOUT;
    sw_debug_fail_alloc_after(0);
    sw_status st = sw_layout_leaf(4, 2, &l);
    sw_status st2 = sw_layout_leaf(4, 2, &l);
    sw_debug_fail_alloc_after(-1);
    is_int(st, SW_ENOMEM, "with the hook at 0, sw_layout_leaf gives SW_ENOMEM");
    is_int(st2, SW_ENOMEM, "every later allocation fails too");
    ok(l == SENTINEL_LAYOUT, "SW_ENOMEM left the out-parameter alone");
    is_int(sw_errcode(), SW_ENOMEM, "sw_errcode reports SW_ENOMEM");
    ok(strlen(sw_errmsg()) > 0, "sw_errmsg is set for SW_ENOMEM: '%s'",
       sw_errmsg());
    is_int(sw_debug_live_allocs(), base, "nothing leaked on SW_ENOMEM");

    /* A negative n disables the hook, whatever its value. */
    sw_debug_fail_alloc_after(0);
    sw_debug_fail_alloc_after(-5);
    l = NULL;
    st = sw_layout_leaf(4, 2, &l);
    is_int(st, SW_OK, "a negative n disables the hook");
    ok(l != NULL, "the constructor wrote its result");
    ok(sw_debug_live_allocs() > base, "a live layout counts as allocations");
    sw_layout_unref(l);
    is_int(sw_debug_live_allocs(), base,
           "releasing the layout returns to the baseline");

    /*
     * Walk the constructor's allocations: n successes then failure, until
     * n is large enough for the call to succeed. Each step must fail cleanly.
     */
    int clean = 1;
    int64_t n;
    for (n = 0; n < 1000; n++) {
        l = SENTINEL_LAYOUT;
        sw_debug_fail_alloc_after(n);
        st = sw_layout_leaf(4, 2, &l);
        sw_debug_fail_alloc_after(-1);
        if (st == SW_OK)
            break;
        if (st != SW_ENOMEM || l != SENTINEL_LAYOUT ||
            sw_debug_live_allocs() != base) {
            diag("n=%lld: status %s, out %s, live %lld (baseline %lld)",
                 (long long)n, sw_status_name(st),
                 l == SENTINEL_LAYOUT ? "untouched" : "written",
                 (long long)sw_debug_live_allocs(), (long long)base);
            clean = 0;
        }
    }
    ok(clean, "every injected failure of sw_layout_leaf was clean");
    ok(st == SW_OK && n > 0,
       "sw_layout_leaf succeeds after %lld allowed allocations", (long long)n);
    if (st == SW_OK)
        sw_layout_unref(l);
    is_int(sw_debug_live_allocs(), base, "back to the baseline after the walk");
    sw_clear_error();
}

/* Non-zero if the n bytes at p are all zero. */
static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (p[i])
            return 0;
    return 1;
}

/*
 * sw_calloc zeroes what it returns at every size, including a small
 * block that malloc's cache hands back dirty after a free, and refuses a
 * count and size whose product overflows.
 */
static void test_calloc_zeroes(void) {
    int64_t base = sw_debug_live_allocs();
    static const size_t sizes[] = {1, 24, 200, 1024, 1025, 4096, 70000};
    for (int i = 0; i < 7; ++i) {
        size_t n = sizes[i];
        for (int round = 0; round < 3; ++round) {
            unsigned char *p = sw_calloc(1, n);
            ok(p && all_zero(p, n), "sw_calloc(1, %zu) is zeroed (round %d)", n,
               round);
            if (p)
                memset(p, 0xAB, n); /* dirty it for the next round */
            sw_free(p);
        }
        unsigned char *q = sw_calloc(n, 3);
        ok(q && all_zero(q, n * 3), "sw_calloc(%zu, 3) is zeroed", n);
        sw_free(q);
    }
    ok(sw_calloc(SIZE_MAX / 2, 4) == NULL,
       "sw_calloc refuses a product that overflows");
    is_int(sw_debug_live_allocs(), base, "sw_calloc leaves nothing live");
}

/*
 * The aligned allocator: 64-byte blocks below 4 MiB, 2 MiB-aligned ones
 * (advised for huge pages) from 4 MiB, zeroed on request, each one live
 * allocation through the hook, and NULL without a leak for a size with
 * no room for the alignment or when the hook fails it.
 */
static void test_alloc_aligned(void) {
    int64_t base = sw_debug_live_allocs();
    static const size_t sizes[] = {1, 100, ((size_t)4 << 20) - 1,
                                   (size_t)4 << 20, ((size_t)9 << 20) + 3};
    for (int i = 0; i < 5; ++i) {
        size_t n = sizes[i];
        size_t want = n >= ((size_t)4 << 20) ? (size_t)2 << 20 : 64;
        unsigned char *p = sw_alloc_aligned(n, 1);
        ok(p && (uintptr_t)p % want == 0,
           "sw_alloc_aligned(%zu) is aligned to %zu bytes", n, want);
        ok(p && all_zero(p, n), "sw_alloc_aligned(%zu, zero) is zeroed", n);
        is_int(sw_debug_live_allocs(), base + 1,
               "sw_alloc_aligned(%zu) is one live allocation", n);
        if (p) {
            p[0] = 1;
            p[n - 1] = 2; /* the whole block is writable */
        }
        sw_free_aligned(p);
        unsigned char *q = sw_alloc_aligned(n, 0);
        ok(q && (uintptr_t)q % want == 0,
           "sw_alloc_aligned(%zu) without zeroing is aligned too", n);
        sw_free_aligned(q);
    }
    is_int(sw_debug_live_allocs(), base, "aligned blocks are all freed");
    ok(sw_alloc_aligned(SIZE_MAX - 16, 0) == NULL,
       "a size with no room for the alignment gives NULL");
    sw_debug_fail_alloc_after(0);
    void *f = sw_alloc_aligned((size_t)8 << 20, 0);
    sw_debug_fail_alloc_after(-1);
    ok(f == NULL, "the allocation hook fails a large aligned block");
    sw_free_aligned(NULL);
    is_int(sw_debug_live_allocs(), base, "no aligned block leaked");

    /* From 32 MiB a freed block waits for a request of its size. */
    size_t big = (size_t)40 << 20;
    unsigned char *p = sw_alloc_aligned(big, 0);
    ok(p != NULL, "a 40 MiB block");
    if (p) {
        memset(p, 0xab, big);
        sw_free_aligned(p);
        is_int(sw_debug_live_allocs(), base, "a cached block counts as freed");
        sw_debug_fail_alloc_after(0);
        void *no = sw_alloc_aligned(big, 0);
        sw_debug_fail_alloc_after(-1);
        ok(no == NULL, "the allocation hook fails a reuse from the cache");
        is_int(sw_debug_live_allocs(), base, "a failed reuse counts nothing");
        /* A fresh block from the system would read as zeros. */
        unsigned char *again = sw_alloc_aligned(big, 0);
        ok(again == p && again[0] == 0xab && again[big - 1] == 0xab,
           "the next request of that size reuses the block as it was");
        sw_free_aligned(again);
        again = sw_alloc_aligned(big, 1);
        ok(again == p && (uintptr_t)again % ((size_t)2 << 20) == 0 &&
               all_zero(again, big),
           "a reused block asked zeroed is zeroed, and still aligned");
        is_int(sw_debug_live_allocs(), base + 1,
               "a reused block counts as one live allocation");
        unsigned char *other = sw_alloc_aligned(big + 4096, 0);
        ok(other && other != again, "another size gets a block of its own");
        sw_free_aligned(other);
        sw_free_aligned(again);

        /* Four freed blocks wait at once (the sources and destinations
         * of two moves), each for the next request of its size. The two
         * cached above are taken out first, and go back at the end. */
        void *d1 = sw_alloc_aligned(big, 0),
             *d2 = sw_alloc_aligned(big + 4096, 0);
        unsigned char *held[4];
        int same = 1;
        for (int k = 0; k < 4; ++k)
            held[k] = sw_alloc_aligned(big + (size_t)(k + 2) * 8192, 0);
        for (int k = 0; k < 4; ++k) {
            if (held[k])
                held[k][0] = (unsigned char)(0x5a + k); /* fresh pages read 0 */
            sw_free_aligned(held[k]);
        }
        for (int k = 0; k < 4; ++k) {
            unsigned char *r =
                sw_alloc_aligned(big + (size_t)(k + 2) * 8192, 0);
            same &= r != NULL && r == held[k] && r[0] == 0x5a + k;
            held[k] = r;
        }
        ok(same, "four freed large blocks are all reused");
        /* The two taken out go back first: the cache holds a 40 MiB block
         * again, which the fork test's churning thread reuses instead of
         * reaching the system allocator (whose lock a fork must not
         * catch held under AddressSanitizer). */
        sw_free_aligned(d1);
        sw_free_aligned(d2);
        for (int k = 0; k < 4; ++k)
            sw_free_aligned(held[k]);
    }
    is_int(sw_debug_live_allocs(), base, "large blocks all freed or cached");
}

/* Churns the cache of large blocks (its lock taken on every call) until
 * told to stop. */
static atomic_int churn_stop;

static void *churn_cache(void *arg) {
    (void)arg;
    while (!atomic_load(&churn_stop))
        sw_free_aligned(sw_alloc_aligned((size_t)40 << 20, 0));
    return NULL;
}

/*
 * fork() while another thread is inside the cache of large blocks: the
 * child can still allocate and free large blocks (the lock is not left
 * held in it). Each child gets 10 s; one that hangs is killed and counted.
 */
static void test_alloc_cache_fork(void) {
    pthread_t churner;
    atomic_store(&churn_stop, 0);
    pthread_create(&churner, NULL, churn_cache, NULL);
    int good = 0, forks = 20;
    for (int i = 0; i < forks; ++i) {
        pid_t pid = fork();
        if (pid == 0) {
            void *p = sw_alloc_aligned((size_t)40 << 20, 0);
            sw_free_aligned(p);
            _exit(p ? 0 : 1);
        }
        int status = -1;
        for (int waited = 0; waited < 1000; ++waited) {
            if (waitpid(pid, &status, WNOHANG) == pid)
                break;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
            status = -1;
        }
        if (status == -1) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            status = -1;
        }
        good += status == 0;
    }
    atomic_store(&churn_stop, 1);
    pthread_join(churner, NULL);
    is_int(good, forks,
           "children forked while the large-block cache is busy allocate "
           "and exit");
}

static void test_retain_release(void) {
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = NULL;
    if (!ok(sw_layout_leaf(6, 1, &l) == SW_OK, "made 6:1"))
        return;
    int64_t held = sw_debug_live_allocs();
    ok(sw_layout_retain(l) == l, "sw_layout_retain returns its argument");
    is_int(sw_debug_live_allocs(), held, "retain allocates nothing");
    sw_layout_unref(l);
    is_int(sw_debug_live_allocs(), held,
           "one release of two references frees nothing");
    is_int(sw_layout_size(l), 6, "the layout is still usable");
    sw_layout_unref(l);
    is_int(sw_debug_live_allocs(), base, "the last release frees everything");

    sw_layout_unref(NULL);
    sw_tree_unref(NULL);
    ok(1, "releasing NULL is a no-op");
}

static void test_version(void) {
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", SW_VERSION_MAJOR, SW_VERSION_MINOR,
             SW_VERSION_PATCH);
    is_str(sw_version(), want, "sw_version matches the header macros");
    ok(sw_version() == sw_version(), "sw_version returns a static string");
}

int main(void) {
    /* Must run first: it checks the state before anything has failed. */
    test_error_state();
    test_status_names();
    test_alloc_hook();
    test_calloc_zeroes();
    test_alloc_aligned();
    test_alloc_cache_fork();
    test_retain_release();
    test_version();
    return done_testing();
}
