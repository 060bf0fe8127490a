/*
 * Reference counts with peers (toggle references), aligned allocations and
 * thread identity.
 */
#define _DEFAULT_SOURCE /* madvise */
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
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
    int_fast64_t n = atomic_fetch_sub(&o->ref, 1) - 1;
    if (n == 1 && o->peer) {
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

void *sw_alloc_aligned(size_t n, int zero) {
    /* The original pointer is kept just before the aligned block. */
    size_t align = n >= SW_HUGE_MIN ? SW_HUGE_ALIGN : 64;
    if (n > SIZE_MAX - align - sizeof(void *))
        return NULL;
    size_t total = n + align + sizeof(void *);
    char *raw = zero ? sw_calloc(1, total) : sw_malloc(total);
    if (!raw)
        return NULL;
    uintptr_t start = (uintptr_t)(raw + sizeof(void *));
    char *aligned = (char *)((start + align - 1) & ~(uintptr_t)(align - 1));
    memcpy(aligned - sizeof(void *), &raw, sizeof raw);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == SW_HUGE_ALIGN)
        (void)madvise(aligned, n & ~(SW_HUGE_ALIGN - 1), MADV_HUGEPAGE);
#endif
    return aligned;
}

void sw_free_aligned(void *p) {
    if (!p)
        return;
    void *raw;
    memcpy(&raw, (char *)p - sizeof(void *), sizeof raw);
    sw_free(raw);
}

uintptr_t sw_thread_id(void) {
    static _Thread_local char marker;
    return (uintptr_t)&marker;
}
