/* The carrier base structure, shared by the backends and tensors. */
#ifndef SW_CARRIER_INTERNAL_H
#define SW_CARRIER_INTERNAL_H

#include "base/internal.h"
#include "strideweave/carrier.h"

struct sw_carrier {
    sw_object obj;
    const sw_carrier_class *cls;
    void *state;
    sw_dtype dtype;
    atomic_int_fast64_t version;
    /* Storage lifetime: bit 0 is set once the carrier is released; the
     * rest counts pins, SW_LIFE_PIN each (see sw_carrier_pin). The release
     * slot runs when the word first becomes exactly SW_LIFE_RELEASED. */
    atomic_int_fast64_t life;
    /* Ownership by a composite: 0 when not owned. */
    int64_t owner_token;
    /* The thread inside owner access, and how deep. */
    uintptr_t access_thread;
    int32_t access_depth;
    /* A binding's dispatch route and class tag (see op.h). */
    sw_status (*dispatch_fn)(sw_carrier *c, const char *name, void *ctx,
                             struct sw_op **out);
    void *dispatch_ctx;
    const void *dispatch_tag;
    /* A binding's dlpack_info route (NULL: the class's slot). */
    sw_dlpack_info_fn dlpack_fn;
    void *dlpack_ctx;
    /* Asynchronous moves this carrier takes part in (as source or
     * destination), and the worker thread running them (0 before it
     * starts): no other thread may write, resize, release or claim the
     * carrier until they end. See sw_carrier_check_move. */
    atomic_int move_pending;
    atomic_uintptr_t move_thread;
    /* Room in the carrier's own block for its first tensor, or NULL:
     * sw_tensor_new takes it once (sw_carrier_offer_tensor_room). */
    _Atomic(void *) tensor_room;
};

#define SW_LIFE_RELEASED ((int_fast64_t)1)
#define SW_LIFE_PIN ((int_fast64_t)2)

/* The alignment of the tail of a carrier made by sw_carrier_new_block. */
#define SW_CARRIER_TAIL_ALIGN 64

/*
 * A carrier that shares one allocation with its backend state and with
 * tail_size bytes after it (a small carrier's elements): one allocation
 * and one free instead of three. The state (state_size bytes) follows the
 * base, aligned for any member; the tail starts at a multiple of
 * SW_CARRIER_TAIL_ALIGN. *state and *tail point into the block, which is
 * zeroed when zero; it goes with the carrier, so the class's destroy and
 * release slots must not free either part. Errors as sw_carrier_new;
 * SW_ENOMEM when the block cannot be had.
 */
sw_status sw_carrier_new_block(const sw_carrier_class *cls, size_t state_size,
                               size_t tail_size, int zero, sw_dtype dtype,
                               sw_carrier **out, void **state, void **tail);

/*
 * Offers room, SW_TENSOR_ROOM bytes aligned for any member inside c's own
 * block (sw_carrier_new_block), to c's first tensor: sw_tensor_new places
 * that tensor there instead of allocating it, so a fresh result (a
 * carrier and its one tensor) is one allocation. The memory is c's, which
 * the tensor holds, so it outlives the tensor; it goes with c's block.
 * Called by a constructor before c is handed out. sw_carrier_take_tensor_room
 * returns the room once (then NULL), from any thread.
 */
static inline void sw_carrier_offer_tensor_room(sw_carrier *c, void *room) {
    atomic_store_explicit(&c->tensor_room, room, memory_order_relaxed);
}
void *sw_carrier_take_tensor_room(sw_carrier *c);

/* Common failures with the reference texts. */
sw_status sw_carrier_fail_released(void);
sw_status sw_carrier_fail_immutable(void);

/*
 * A move owns its source and its destination from its submission (before
 * a transfer route's prepare runs) until its outcome is recorded: the one
 * rule that protects the participants of every move, synchronous or not,
 * built-in or routed, and of an Evictable's residency transitions. While
 * it does, sw_carrier_is_owned reports 1, sw_carrier_is_mutable 0 for
 * every thread but the one running the move's transfer, and every change
 * (writes, version bumps, resizing, release, ownership claims, other
 * moves) from those threads fails with SW_ERUNTIME SW_MOVE_OWNED_MESSAGE.
 * Reads are allowed: the source does not change.
 */
#define SW_MOVE_OWNED_MESSAGE                                                  \
    "Carrier is owned by a pending move and is not mutable"

/* SW_ERUNTIME SW_MOVE_OWNED_MESSAGE while a move owns c and the caller is
 * not the thread running its transfer; SW_OK otherwise. */
sw_status sw_carrier_check_move(const sw_carrier *c);

/* Marks c as owned by a move (pending > 0), or ends that (pending < 0);
 * sets the thread running the transfer, allowed to change it (0: none). */
void sw_carrier_move_mark(sw_carrier *c, int pending);
void sw_carrier_move_worker(sw_carrier *c, uintptr_t thread);

/* Owned by a composite carrier (ownership tokens), whatever moves do. */
int sw_carrier_has_owner(const sw_carrier *c);

/* sw_carrier_release_storage for the move that owns c, at its commit:
 * the move's own ownership does not refuse it. */
sw_status sw_carrier_release_moved(sw_carrier *c);

/*
 * The memory of a CPU carrier for a caller holding a pin (NULL for other
 * carriers): unlike sw_cpu_data it stays valid after a release that
 * happened while the pin is held, until the pin goes.
 */
void *sw_cpu_storage(sw_carrier *c);

/* Gives back the memory of elements [first, first + count) of a CPU
 * carrier that allocated its own storage (sw_cpu_new): their values are
 * lost (they read as zeros). For an owner that keeps those values
 * elsewhere, as a TiledEvictable does for an evicted tile. Other carriers
 * and CPU carriers over memory they do not own are left alone. */
void sw_cpu_discard(sw_carrier *c, int64_t first, int64_t count);

/* Maps the memory of elements [first, first + count) of such a carrier
 * ahead of a bulk read into them (sw_populate_pages); nothing for other
 * carriers. */
void sw_cpu_populate(sw_carrier *c, int64_t first, int64_t count);

/* Advises the memory of such a carrier against huge pages, so that
 * discarding a part gives back that part alone. */
void sw_cpu_small_pages(sw_carrier *c);

/* Tells the system that elements [i, i + n) of a FileBacked carrier will
 * be read soon, so that their reads from the disk start now, all at once,
 * instead of one by one as the reads come. Only a hint: nothing happens
 * for other carriers, ranges outside the file or a failure. */
void sw_file_will_read(sw_carrier *c, int64_t i, int64_t n);

/*
 * A fresh mutable CPU carrier of size elements, as sw_cpu_new(size, dtype,
 * 1, empty) makes it and with its errors, for an operation's result. One
 * of at most SW_CPU_BLOCK_BYTES bytes is a single allocation with its
 * elements and room for its first tensor (sw_carrier_new_block,
 * sw_carrier_offer_tensor_room): a release then stops every access at
 * once, as always, but the bytes go only with the carrier.
 */
#define SW_CPU_BLOCK_BYTES 1024
sw_status sw_cpu_new_fresh(int64_t size, sw_dtype dtype, int empty,
                           sw_carrier **out);

/*
 * One element of a Float32, Int32 or Bool array in memory (4, 4 or 1
 * bytes) to a value, and a value into one: a host number converts
 * through its ops; SW_ETYPE "<who> value must be a number" / "must be an
 * integer" (a float for Int32), SW_EOVERFLOW "<who> value is out of int32
 * range". The CPU and OpenCL carriers' element access (cpu.c).
 */
sw_value sw_element_load(sw_dtype dtype, const void *src);
sw_status sw_element_store(const char *who, sw_dtype dtype, const sw_value *v,
                           void *dst);

/*
 * The bodies of sw_carrier_dtype, sw_carrier_is_released, sw_carrier_size
 * and sw_carrier_class_tag, inline for the per-call paths (kernel.c); the
 * public functions are these.
 */
static inline sw_dtype sw_carrier_dtype_inline(const sw_carrier *c) {
    return c->cls->dtype ? c->cls->dtype((sw_carrier *)c) : c->dtype;
}

static inline int sw_carrier_released_inline(const sw_carrier *c) {
    return (atomic_load(&((sw_carrier *)c)->life) & SW_LIFE_RELEASED) != 0;
}

static inline int64_t sw_carrier_size_inline(sw_carrier *c) {
    if (sw_carrier_released_inline(c))
        return 0;
    int64_t n = c->cls->size(c);
    return n < 0 ? 0 : n;
}

static inline const void *sw_carrier_tag_inline(const sw_carrier *c) {
    return c->dispatch_tag ? c->dispatch_tag : (const void *)c->cls;
}

/* Checks a dtype argument: SW_DTYPE_COUNT means "the carrier's own". */
sw_dtype sw_carrier_pick_dtype(const sw_carrier *c, sw_dtype dtype);

/* Scatter onto an Evictable: delegated to its primary under owner access
 * (src/carrier/evictable.c); NULL arguments are reported in its order. */
sw_status sw_evictable_scatter(sw_carrier *c, const sw_tensor *src,
                               const sw_tensor *onto, const sw_layout *mapping,
                               int64_t mapping_offset);

/* Where an Evictable keeps its capability snapshot (NULL for other
 * carriers); capability.c publishes it once, freed with the carrier. */
struct sw_capability_snapshot;
typedef _Atomic(struct sw_capability_snapshot *) sw_snapshot_slot;
sw_snapshot_slot *sw_evictable_caps_slot(sw_carrier *c);

#endif /* SW_CARRIER_INTERNAL_H */
