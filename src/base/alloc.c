/*
 * The counted allocator. A live counter proves the absence of leaks in
 * tests, and a countdown makes the n-th allocation fail so that tests can
 * walk every allocation site of an operation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

static atomic_int_fast64_t live_allocs;
/* Negative: injection disabled. Otherwise the successes left. */
static atomic_int_fast64_t fail_countdown = -1;

static bool injected_failure(void) {
    int_fast64_t left =
        atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    while (left >= 0) {
        if (left == 0)
            return true;
        if (atomic_compare_exchange_weak(&fail_countdown, &left, left - 1))
            return false;
    }
    return false;
}

void *sw_malloc(size_t n) {
    if (injected_failure())
        return NULL;
    void *p = malloc(n ? n : 1);
    if (p)
        atomic_fetch_add_explicit(&live_allocs, 1, memory_order_relaxed);
    return p;
}

/* Below this, calloc is malloc and a memset: glibc's calloc skips the
 * per-thread cache that malloc uses, which costs small objects made on
 * every operation (results, nodes, operation records) more than zeroing
 * does. Larger blocks keep calloc, which gets zero pages for free. */
#define SMALL_CALLOC 1024

/* Called through a volatile pointer so that the compiler does not fold
 * malloc and memset back into calloc. */
static void *(*volatile const zero_fill)(void *, int, size_t) = memset;

void *sw_calloc(size_t count, size_t size) {
    if (injected_failure())
        return NULL;
    /* An impossible product is refused here, not by calloc (which some
     * runtimes, sanitizers among them, treat as a fatal error). */
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p;
    if (count <= SMALL_CALLOC && size <= SMALL_CALLOC &&
        count * size <= SMALL_CALLOC) {
        size_t n = count && size ? count * size : 1;
        p = malloc(n);
        if (p)
            zero_fill(p, 0, n);
    } else {
        p = calloc(count ? count : 1, size ? size : 1);
    }
    if (p)
        atomic_fetch_add_explicit(&live_allocs, 1, memory_order_relaxed);
    return p;
}

void *sw_realloc(void *p, size_t n) {
    if (p == NULL)
        return sw_malloc(n);
    if (injected_failure())
        return NULL;
    return realloc(p, n ? n : 1);
}

void sw_free(void *p) {
    if (p == NULL)
        return;
    atomic_fetch_sub_explicit(&live_allocs, 1, memory_order_relaxed);
    free(p);
}

bool sw_alloc_count_reuse(void) {
    if (injected_failure())
        return false;
    atomic_fetch_add_explicit(&live_allocs, 1, memory_order_relaxed);
    return true;
}

void sw_alloc_count_cached(void) {
    atomic_fetch_sub_explicit(&live_allocs, 1, memory_order_relaxed);
}

sw_status sw_oom(void) {
    return sw_fail(SW_ENOMEM, "out of memory");
}

void sw_debug_fail_alloc_after(int64_t n) {
    atomic_store(&fail_countdown, n < 0 ? -1 : n);
}

int64_t sw_debug_live_allocs(void) {
    return atomic_load(&live_allocs);
}
