/*
 * Definition-backed carriers (strideweave/extension.h): the registered
 * definition record, shared by the class registry (src/op/capability.c,
 * which keeps one per class entry under its lock) and the carrier vtable
 * (defined.c).
 */
#ifndef SW_CARRIER_DEFINED_H
#define SW_CARRIER_DEFINED_H

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
} sw_defn;

/* The copy hook of route classes (src/interop/move.c): ctx is the route. */
sw_status sw_route_copy(sw_op *op, sw_tensor *tensor, sw_carrier *destination,
                        sw_tensor *output, int64_t element_count);

/* The move class of d's route to exactly destination (a class tag), or
 * NULL when d has none. */
const struct sw_move_class *sw_defn_route(const sw_defn *d,
                                          const void *destination);

/* Drops a reference; the last frees d and drops its ctx (accepts NULL). */
void sw_defn_release(sw_defn *d);

/* Publishes d for cls under the registry's rules (extension.h); on
 * failure the caller keeps d. */
sw_status sw_defn_register(const void *cls, sw_defn *d);

/* The definition of cls or NULL; observe non-zero seals it, and then the
 * caller gets a reference (sw_defn_release). */
const sw_defn *sw_defn_lookup(const void *cls, int observe);

/* The definition of a definition-backed carrier (borrowed: the carrier
 * holds a reference), NULL for other carriers. */
const sw_defn *sw_carrier_defn(const sw_carrier *c);

#endif
