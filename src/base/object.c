/*
 * Reference counts with peers (toggle references), aligned allocations and
 * thread identity.
 */
#define _DEFAULT_SOURCE /* madvise */
#include <pthread.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "base/internal.h"

void sw_object_init(sw_object *o, void (*destroy)(sw_object *o)) {
    atomic_init(&o->ref, 1);
    o->peer = NULL;
    o->hooks = NULL;
    o->destroy = destroy;
    o->next_dead = NULL;
}

void sw_object_retain(sw_object *o) {
    int_fast64_t n = atomic_fetch_add(&o->ref, 1) + 1;
    if (n == 2 && o->peer)
        o->hooks->retain(o->peer);
}

static _Thread_local sw_object *dead;
static _Thread_local int draining;

void sw_object_unref(sw_object *o) {
    /* Read before letting go: once our reference is gone another thread
     * may drop the last one and free o. */
    int has_peer = o->peer != NULL;
    int_fast64_t n = atomic_fetch_sub(&o->ref, 1) - 1;
    if (n == 1 && has_peer) {
        /* Only the peer's reference is left: stop keeping the peer alive.
         * It may go at once and release its reference, destroying o; o
         * must not be touched after this call. */
        o->hooks->release(o->peer);
        return;
    }
    if (n != 0)
        return;
    o->next_dead = dead;
    dead = o;
    if (draining)
        return;
    draining = 1;
    while (dead) {
        sw_object *d = dead;
        dead = d->next_dead;
        d->destroy(d);
    }
    draining = 0;
}

void sw_object_set_peer(sw_object *o, void *peer, const sw_peer_hooks *hooks) {
    void *old = o->peer;
    const sw_peer_hooks *old_hooks = o->hooks;
    o->peer = peer;
    o->hooks = peer ? hooks : NULL;
    int_fast64_t n = atomic_load(&o->ref);
    if (peer && n > 1)
        hooks->retain(peer);
    if (old && n > 1)
        old_hooks->release(old);
}

int64_t sw_object_refcount(const sw_object *o) {
    return (int64_t)atomic_load(&o->ref);
}

/*
 * Large blocks (tensor storage of 4 MiB and more) start on a 2 MiB
 * boundary and are advised for transparent huge pages, as NumPy does for
 * its data: a fresh 64 MiB result then faults in 32 pages instead of
 * 16384, which is most of what a large elementwise operation into a new
 * tensor costs beyond its memory traffic. The advice only sets a flag on
 * the mapping (where the system allows huge pages only on request, it is
 * that request); it never changes contents, and a refusal is harmless.
 * The extra 2 MiB of address space is never touched, so it costs no
 * memory.
 */
#define SW_HUGE_MIN ((size_t)4 << 20)
#define SW_HUGE_ALIGN ((size_t)2 << 20)

/*
 * A small cache of freed blocks of 32 MiB and more: the C library hands
 * blocks that large straight back to the system and a new one faults in
 * again, page by page, each page zeroed by the kernel (7.4 ms for 64 MiB
 * with huge pages, 23 ms without), while smaller freed blocks it keeps and
 * reuses itself. A training step frees a weight's gradient (zero_grad)
 * just before its backward makes a new one of the same size, so a freed
 * block waits here, up to SW_CACHE_SLOTS of them and cache_cap() bytes in
 * all, for a request of exactly its size: a sixteenth of the machine's
 * memory, at least 256 MiB and at most 1 GiB, so that a loop that moves or
 * computes tensors of a few hundred MiB (a source and a destination each
 * time) reuses its blocks. A cached block counts as freed and its reuse
 * as an allocation (alloc.c), which the allocation hook can fail, so the
 * live count and fault injection see what they would see without the
 * cache.
 */
#define SW_CACHE_MIN ((size_t)32 << 20)
#define SW_CACHE_SLOTS 4
#define SW_CACHE_FLOOR ((size_t)256 << 20)
#define SW_CACHE_CEILING ((size_t)1 << 30)

typedef struct cached_block {
    char *raw;
    size_t total;
} cached_block;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cached_block cache[SW_CACHE_SLOTS];
static size_t cache_bytes;
static size_t cache_cap; /* set once, by cache_init */

/* A fork while another thread holds the lock would leave it held in the
 * child: the lock is taken across fork() (as the C library does for its
 * own allocator) and released on both sides. */
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_lock_take(void) {
    pthread_mutex_lock(&cache_lock);
}

static void cache_lock_drop(void) {
    pthread_mutex_unlock(&cache_lock);
}

static void cache_init(void) {
    (void)pthread_atfork(cache_lock_take, cache_lock_drop, cache_lock_drop);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t cap = pages > 0 && page > 0 ? (size_t)pages / 16 * (size_t)page
                                       : SW_CACHE_FLOOR;
    cache_cap = cap < SW_CACHE_FLOOR     ? SW_CACHE_FLOOR
                : cap > SW_CACHE_CEILING ? SW_CACHE_CEILING
                                         : cap;
}

static void cache_enter(void) {
    pthread_once(&cache_once, cache_init);
    pthread_mutex_lock(&cache_lock);
}

/*
 * A cached block of exactly total bytes, now counted as an allocation;
 * NULL when none is cached or the hook failed the reuse (*failed then
 * set, the block left in the cache).
 */
static char *cache_take(size_t total, bool *failed) {
    char *raw = NULL;
    cache_enter();
    for (int i = 0; i < SW_CACHE_SLOTS; ++i) {
        if (!cache[i].raw || cache[i].total != total)
            continue;
        if (!sw_alloc_count_reuse()) {
            *failed = true;
            break;
        }
        raw = cache[i].raw;
        cache[i].raw = NULL;
        cache_bytes -= total;
        break;
    }
    pthread_mutex_unlock(&cache_lock);
    return raw;
}

/* Keeps a freed block for reuse if there is room; false if not. */
static bool cache_put(char *raw, size_t total) {
    bool kept = false;
    cache_enter();
    if (cache_bytes + total <= cache_cap)
        for (int i = 0; i < SW_CACHE_SLOTS && !kept; ++i)
            if (!cache[i].raw) {
                cache[i].raw = raw;
                cache[i].total = total;
                cache_bytes += total;
                kept = true;
            }
    pthread_mutex_unlock(&cache_lock);
    if (kept)
        sw_alloc_count_cached();
    return kept;
}

/* The block header, just before the aligned block: the original pointer
 * and the total size. */
#define SW_ALIGNED_HEADER (sizeof(void *) + sizeof(size_t))

void *sw_alloc_aligned(size_t n, int zero) {
    size_t align = n >= SW_HUGE_MIN ? SW_HUGE_ALIGN : 64;
    if (n > SIZE_MAX - align - SW_ALIGNED_HEADER)
        return NULL;
    size_t total = n + align + SW_ALIGNED_HEADER;
    char *raw = NULL;
    bool cached = false;
    if (total >= SW_CACHE_MIN) {
        bool failed = false;
        raw = cache_take(total, &failed);
        if (failed)
            return NULL;
        cached = raw != NULL;
    }
    if (!raw)
        raw = zero ? sw_calloc(1, total) : sw_malloc(total);
    if (!raw)
        return NULL;
    uintptr_t start = (uintptr_t)(raw + SW_ALIGNED_HEADER);
    char *aligned = (char *)((start + align - 1) & ~(uintptr_t)(align - 1));
    memcpy(aligned - SW_ALIGNED_HEADER, &raw, sizeof raw);
    memcpy(aligned - sizeof(size_t), &total, sizeof total);
    if (cached) {
        if (zero)
            memset(aligned, 0, n);
        return aligned;
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == SW_HUGE_ALIGN)
        (void)madvise(aligned, n & ~(SW_HUGE_ALIGN - 1), MADV_HUGEPAGE);
#endif
    return aligned;
}

void sw_free_aligned(void *p) {
    if (!p)
        return;
    char *raw;
    size_t total;
    memcpy(&raw, (char *)p - SW_ALIGNED_HEADER, sizeof raw);
    memcpy(&total, (char *)p - sizeof(size_t), sizeof total);
    if (total >= SW_CACHE_MIN && cache_put(raw, total))
        return;
    sw_free(raw);
}

/* madvise(advice) over the whole pages inside [p, p + n). */
static void advise_pages(void *p, size_t n, int advice) {
#if defined(__linux__)
    long got = sysconf(_SC_PAGESIZE);
    size_t page = got > 0 ? (size_t)got : 4096;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    if (p && lo < hi)
        (void)madvise((void *)lo, hi - lo, advice);
#else
    (void)p;
    (void)n;
    (void)advice;
#endif
}

void sw_discard_pages(void *p, size_t n) {
#if defined(MADV_DONTNEED)
    advise_pages(p, n, MADV_DONTNEED);
#else
    (void)p;
    (void)n;
#endif
}

/* Linux 5.14 and later; an older kernel refuses it with EINVAL. */
#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23
#endif

void sw_populate_pages(void *p, size_t n) {
#if defined(MADV_POPULATE_WRITE)
    advise_pages(p, n, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

void sw_advise_small_pages(void *p, size_t n) {
#if defined(MADV_NOHUGEPAGE)
    advise_pages(p, n, MADV_NOHUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

uintptr_t sw_thread_id(void) {
    static _Thread_local char marker;
    return (uintptr_t)&marker;
}
