/*
 * Reference counts with peers (toggle references), aligned allocations and
 * thread identity.
 */
#include <string.h>

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

void *sw_alloc_aligned(size_t n, int zero) {
    /* The original pointer is kept just before the aligned block. */
    size_t total = n + 64 + sizeof(void *);
    char *raw = zero ? sw_calloc(1, total) : sw_malloc(total);
    if (!raw)
        return NULL;
    uintptr_t start = (uintptr_t)(raw + sizeof(void *));
    char *aligned = (char *)((start + 63) & ~(uintptr_t)63);
    memcpy(aligned - sizeof(void *), &raw, sizeof raw);
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
