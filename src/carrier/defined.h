/*
 * Definition-backed carriers (strideweave/extension.h): the registered
 * definition record, shared by the class registry (src/op/capability.c,
 * which keeps one per class entry under its lock) and the carrier vtable
 * (defined.c).
 */
#ifndef SW_CARRIER_DEFINED_H
#define SW_CARRIER_DEFINED_H

#include "carrier/internal.h"
#include "strideweave/extension.h"
#include "strideweave/interop.h"

#include <stdatomic.h>

typedef struct sw_defn {
    sw_carrier_definition def; /* name and routes point into this record */
    const void *cls;
    /* The registry's reference and one per carrier of the class: a class
     * forgotten while instances live keeps its definition until they go. */
    atomic_long refs;
    /* One move class per route (route i's ctx is &def.routes[i]). */
    struct sw_move_class *route_classes;
    /* The kernel set: the built-in patterns (in this record's block) and
     * the packs registered before the class was sealed. Changed only
     * under the capability registry's lock while the class is open; read
     * without it once sealed (a reader seals the class first). */
    sw_kernel_pattern_decl *patterns; /* def.npatterns entries */
    struct sw_kernel_pack_rec *packs; /* sorted by (namespace, version) */
    /* Every pattern in candidate order, and the union of their plans
     * (sorted, without duplicates: the class's capabilities). */
    const sw_kernel_pattern_decl **order;
    int64_t norder;
    struct sw_op_capability *caps;
    int64_t ncaps;
} sw_defn;

/* A registered pack: a copy of its declaration (strings and patterns in
 * the same block). */
typedef struct sw_kernel_pack_rec {
    struct sw_kernel_pack_rec *next;
    sw_kernel_pack_decl decl;
} sw_kernel_pack_rec;

/* Rollback journal of one kernel submission (kernel.c). */
typedef struct sw_journal sw_journal;
/* Records the old value of element i of c (the journal takes it over). */
sw_status sw_journal_record(sw_journal *j, sw_carrier *c, int64_t i,
                            const sw_value *old);
/* Writes element i through the provider, without journal or version. */
sw_status sw_defined_restore(sw_carrier *c, int64_t i, const sw_value *v);
/* Sets c's version (rollback and the one step of a declared mutation). */
void sw_carrier_version_restore(sw_carrier *c, int64_t version);

/* The copy of n patterns: its size, and placing it in block. */
size_t sw_kernel_patterns_size(int64_t n, const sw_kernel_pattern_decl *ps);
sw_kernel_pattern_decl *
sw_kernel_patterns_place(int64_t n, const sw_kernel_pattern_decl *src,
                         char *block);

/* Checks the patterns of a definition or a pack (owner names it). */
sw_status sw_kernel_patterns_check(const char *owner, int64_t n,
                                   const sw_kernel_pattern_decl *patterns);

/* Copies a pack declaration into one block (checked by the caller). */
sw_status sw_kernel_pack_copy(const sw_kernel_pack_decl *decl,
                              sw_kernel_pack_rec **out);
void sw_kernel_pack_free(sw_kernel_pack_rec *rec);

/* Rebuilds d's candidate order and capability union from its patterns
 * and packs (under the registry's lock, before sealing). On failure d
 * keeps what it had. */
sw_status sw_defn_rebuild_kernels(sw_defn *d);

/* Registers a pack for its class (capability.c, under the lock). */
sw_status sw_defn_add_pack(const sw_kernel_pack_decl *decl);

/* The copy hook of route classes (src/interop/move.c): ctx is the route. */
sw_status sw_route_copy(sw_op *op, sw_tensor *tensor, sw_carrier *destination,
                        sw_tensor *output, int64_t element_count);

/* The move class of d's route to exactly destination (a class tag), or
 * NULL when d has none. */
const struct sw_move_class *sw_defn_route(const sw_defn *d,
                                          const void *destination);

/* Drops a reference; the last frees d and drops its ctx (accepts NULL). */
void sw_defn_unref(sw_defn *d);

/* Publishes d for cls under the registry's rules (extension.h); on
 * failure the caller keeps d. */
sw_status sw_defn_register(const void *cls, sw_defn *d);

/* The definition of cls or NULL; observe non-zero seals it, and then the
 * caller gets a reference (sw_defn_unref). */
const sw_defn *sw_defn_lookup(const void *cls, int observe);

/* The definition of a definition-backed carrier (borrowed: the carrier
 * holds a reference), NULL for other carriers. */
const sw_defn *sw_carrier_defn(const sw_carrier *c);

/*
 * The state of a definition-backed carrier (in its block, defined.c) and
 * their class: shared so that the per-call paths (kernel.c) read it
 * directly instead of calling across translation units.
 */
typedef struct sw_defined_state {
    const sw_defn *defn;
    sw_dtype dtype;
    int mutable_;
    int allocated;
    int64_t size;
    void *data;
    void *room; /* SW_DEFINED_ROOM bytes in the block */
    /* The rollback journal of the kernel call writing this carrier now. */
    _Atomic(sw_journal *) journal;
    /* A dependent class's instance capabilities (made at finalization). */
    _Atomic(struct sw_capability_snapshot *) snap;
} sw_defined_state;

extern const sw_carrier_class sw_defined_class;

/* c's state when c is definition-backed, else NULL. */
static inline sw_defined_state *sw_defined_state_of(const sw_carrier *c) {
    return c->cls == &sw_defined_class ? (sw_defined_state *)c->state : NULL;
}

/* Puts c's writes under j; 0 when c is not definition-backed or already
 * under a journal (a nested or concurrent call keeps the outer one). */
static inline int sw_defined_journal_begin(sw_carrier *c, sw_journal *j) {
    sw_defined_state *s = sw_defined_state_of(c);
    sw_journal *none = NULL;
    return s && atomic_compare_exchange_strong(&s->journal, &none, j);
}

/* Takes j out of c again: only after sw_defined_journal_begin(c, j)
 * returned 1 (no other call replaces an installed journal, so a plain
 * store takes it out). */
static inline void sw_defined_journal_end(sw_carrier *c) {
    atomic_store_explicit(&((sw_defined_state *)c->state)->journal, NULL,
                          memory_order_release);
}

/* Makes every tile of the TiledEvictable c invalid (tiled.c; for
 * allocate_like with empty). */
void sw_tiled_forget_values(sw_carrier *c);

/* Work on every tile of the TiledEvictable c for purpose, as a direct
 * operation's forward does (tiled.c): the policy's plan, the promotions
 * and the pins, held in *ticket until sw_tiled_work_end. Nothing has
 * moved when it fails. */
sw_status sw_tiled_work_begin(sw_carrier *c, const char *purpose,
                              void **ticket);
void sw_tiled_work_end(void *ticket);

/* A dense copy of t, a full tensor of a TiledEvictable, on its primary's
 * class: the same layout at offset 0, slot j holding tiled slot
 * t->offset + j (tiled.c; its work must be held, so that the tiles are
 * primary and the copy is one memcpy or device copy). */
sw_status sw_tiled_densify(const sw_tensor *t, sw_tensor **out);

/* A fresh TiledEvictable of like's geometry and tier classes whose
 * primary is dense (taken as it is, not copied: a carrier of like's
 * primary's class, dtype and full extent, owned by nobody), every tile
 * valid and primary; the secondary is fresh (tiled.c). */
sw_status sw_tiled_adopt(sw_carrier *like, sw_carrier *dense, sw_carrier **out);

/* A fresh TiledEvictable like the TiledEvictable `like` (sw_tiled_adopt)
 * and a tensor on it, laid out by layout at offset 0 (its cosize the full
 * extent), holding src's values, when src is of like's primary's class:
 * src's own carrier becomes the primary when it holds the slots as they
 * are and only src (held only by the caller) refers to it; otherwise its
 * values are scattered into a dense carrier of that class, which does.
 * *done 0 for other classes (nothing made: the caller copies). */
/* A scatter of src over the whole of the TiledEvictable c in one block
 * (tiled.c): when base is 0 and mapping and src's layout (at offset 0) are
 * c's array in its own order, and src is a TiledEvictable of c's geometry
 * (made dense) or a dense carrier of c's primary's class, every tile
 * becomes primary, valid and dirty with src's values, and the version
 * rises once. *done 0, nothing changed: not so, or work in progress on c
 * (the caller writes value by value). */
sw_status sw_tiled_assign(sw_carrier *c, const sw_tensor *src, int64_t base,
                          const sw_layout *mapping, int *done);

sw_status sw_tiled_copy_of(sw_carrier *like, sw_layout *layout,
                           const sw_tensor *src, sw_tensor **out, int *done);

#endif
