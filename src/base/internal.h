/*
 * Private helpers shared by every subsystem: error reporting, the counted
 * allocator, checked arithmetic and reference counts.
 */
#ifndef SW_BASE_INTERNAL_H
#define SW_BASE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strideweave/base.h"

#if defined(__GNUC__)
#define SW_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SW_PRINTF(f, a)
#endif

/* Marks the failure just recorded as a broken provider contract
 * (sw_op_contract_failed); the next failure recorded clears the mark. */
void sw_error_mark_contract(void);
int sw_error_is_contract(void);

/* Records a failure for sw_errmsg() and returns its status. */
sw_status sw_fail(sw_status status, const char *fmt, ...) SW_PRINTF(2, 3);

/* Records an SW_EOS failure with the errno behind it; the message gets
 * ": <strerror(err)>" appended. */
sw_status sw_fail_os(int err, const char *fmt, ...) SW_PRINTF(2, 3);

/*
 * Records a failure exactly as another thread recorded it: its status, its
 * message (verbatim) and its errno (sw_errno), so work done on a worker
 * thread fails on the thread that asked for it. Returns status.
 */
sw_status sw_restore_error(sw_status status, int err, const char *message);

/*
 * The library allocator. Every allocation in the library goes through these,
 * so that the fault-injection hook and the live counter see all of them.
 * sw_malloc and friends do not record an error on failure; callers return
 * sw_oom(), which does.
 */
void *sw_malloc(size_t n);
void *sw_calloc(size_t count, size_t size);
void *sw_realloc(void *p, size_t n);
void sw_free(void *p);
sw_status sw_oom(void);
/*
 * For the aligned allocator's cache of freed blocks: a block leaving the
 * cache counts as an allocation, through the fault-injection hook (false:
 * the hook failed it, nothing counted), and one entering it as freed.
 */
bool sw_alloc_count_reuse(void);
void sw_alloc_count_cached(void);

/* Checked int64 arithmetic: false on overflow. */
static inline bool sw_mul_ok(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_mul_overflow(a, b, r);
}
static inline bool sw_add_ok(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_add_overflow(a, b, r);
}

/* An atomic reference count. */
typedef struct sw_refcount {
    atomic_int_fast64_t n;
} sw_refcount;

static inline void sw_ref_init(sw_refcount *r) {
    atomic_init(&r->n, 1);
}
static inline void sw_ref_inc(sw_refcount *r) {
    atomic_fetch_add_explicit(&r->n, 1, memory_order_relaxed);
}
/* True when the count dropped to zero and the object must be freed. */
static inline bool sw_ref_dec(sw_refcount *r) {
    return atomic_fetch_sub_explicit(&r->n, 1, memory_order_acq_rel) == 1;
}

/*
 * The header of every reference-counted object that can have a peer (see
 * sw_peer_hooks in base.h).
 */
typedef struct sw_object {
    atomic_int_fast64_t ref;
    void *peer;
    const sw_peer_hooks *hooks;
    /* Frees the object; called once, when the last reference goes. */
    void (*destroy)(struct sw_object *o);
    /* Links objects waiting for destruction (see sw_object_unref). */
    struct sw_object *next_dead;
} sw_object;

void sw_object_init(sw_object *o, void (*destroy)(sw_object *o));
void sw_object_retain(sw_object *o);
/*
 * Drops a reference; the last one destroys the object. Destruction is
 * iterative: objects whose last reference goes while another is being
 * destroyed wait in a per-thread list, so releasing a chain of 100,000
 * autograd nodes does not recurse 100,000 deep.
 */
void sw_object_unref(sw_object *o);
void sw_object_set_peer(sw_object *o, void *peer, const sw_peer_hooks *hooks);
/* The current count (a snapshot when other threads hold references). */
int64_t sw_object_refcount(const sw_object *o);

/* A 64-byte aligned allocation (2 MiB aligned and advised for huge pages
 * from 4 MiB), zeroed when zero, and its release; NULL when out of memory
 * (also for sizes that leave no room for the alignment). Freed blocks of
 * 32 MiB and more may wait in a small cache for a request of their exact
 * size (object.c); they count as freed meanwhile. */
void *sw_alloc_aligned(size_t n, int zero);
void sw_free_aligned(void *p);

/* Gives the whole pages inside [p, p + n) of an anonymous allocation back
 * to the system: they read as zeros afterwards and take no memory until
 * written (a no-op where the system cannot). For memory whose values are
 * no longer needed. */
void sw_discard_pages(void *p, size_t n);

/* Maps the whole pages inside [p, p + n) of an anonymous allocation in
 * one call, as writing them would one page fault at a time (a no-op where
 * the system cannot). For memory about to be filled by a read that would
 * otherwise fault inside the system call. */
void sw_populate_pages(void *p, size_t n);

/* Advises the whole pages inside [p, p + n) against huge pages, for memory
 * whose parts come and go on their own (a no-op where the system cannot). */
void sw_advise_small_pages(void *p, size_t n);

/*
 * The interrupt request (see sw_interrupt_request in base.h): the flag,
 * and whether the calling thread watches it. Kernels call
 * sw_check_interrupt between chunks of work; while no request is raised
 * it costs one relaxed load of a flag that no other thread writes.
 */
extern atomic_int sw_interrupt_flag;
extern _Thread_local int sw_interrupt_watching;

/* SW_EINTERRUPTED "operation interrupted" (recorded with sw_fail). */
sw_status sw_fail_interrupted(void);

/* SW_EINTERRUPTED if a request is raised and this thread watches it. */
static inline sw_status sw_check_interrupt(void) {
    if (!atomic_load_explicit(&sw_interrupt_flag, memory_order_relaxed))
        return SW_OK;
    return sw_interrupt_watching ? sw_fail_interrupted() : SW_OK;
}

/* How many elements kernels visit between two interrupt checks. */
#define SW_INTERRUPT_EVERY ((int64_t)1 << 20)

/* A number that identifies the calling thread while it runs. */
uintptr_t sw_thread_id(void);

#endif /* SW_BASE_INTERNAL_H */
