/*
 * StrideWeave Evictable: a two-tier storage hierarchy as a carrier, and the
 * EvictableOperation adapter that runs its computations.
 *
 * An Evictable composes a primary carrier (where values live while
 * promoted and where computation happens) and a secondary carrier (where
 * evict() puts them). It takes exclusive ownership of both tiers through
 * the carrier ownership protocol (carrier.h): the tiers stay readable
 * through aliases while live, but refuse direct writes, scatter, release
 * and move; the Evictable writes them under owner access.
 *
 * Residency. A new hierarchy is promoted. sw_evictable_evict moves the
 * values to the secondary (the current one if it is live and large enough,
 * else a fresh one from the secondary's allocate_like), releasing the
 * primary; sw_evictable_promote moves them back into a fresh carrier from
 * the released primary's allocate_like, releasing the secondary. Each
 * transition resolves the move registry (sw_move_dispatch) for the exact
 * tier classes at that moment and runs the move as lowered execution (no
 * autograd node). Replacement tiers are published only after the move has
 * succeeded: a failed transition leaves residency, tiers and ownership as
 * they were, and may be retried. Transitions never change the Evictable's
 * own version. While evicted, element access, operation dispatch and
 * scatter fail with SW_ERUNTIME "Evictable carrier is evicted; call
 * promote() first".
 *
 * Computation. An Evictable dispatches every operation as an
 * EvictableOperation wrapping a fresh operation of its primary: the
 * adapter lowers its Evictable tensor inputs to tensors over their
 * primaries, runs the primary operation by lowered execution, and wraps
 * the result back: a view of an input's primary stays in that input's
 * hierarchy; fresh storage becomes a new Evictable whose secondary is an
 * empty (size 0) carrier of the input secondary's class. The adapter is the
 * only autograd node; its backward lowers the saved inputs again (they must
 * be promoted; the result need not be) and wraps the primary's gradients
 * the same way.
 *
 * DLPack export is refused in both residencies (SW_EBUFFER "DLPack is not
 * supported for Evictable carrier").
 *
 * Ownership: constructors write an owned reference; getters return
 * borrowed ones. An Evictable holds counted references to its current
 * tiers; when it is destroyed it relinquishes their ownership (without
 * releasing them), so the caller can use them again.
 */
#ifndef STRIDEWEAVE_EVICTABLE_H
#define STRIDEWEAVE_EVICTABLE_H

#include "strideweave/carrier.h"
#include "strideweave/op.h"
#include "strideweave/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Makes a hierarchy over primary and secondary and claims both. Checks, in
 * order: SW_ETYPE "primary must be a Carrier instance" / "secondary must be
 * a Carrier instance" for NULL; SW_EVALUE "primary and secondary must be
 * distinct carriers"; SW_ERUNTIME "primary carrier is released",
 * "secondary carrier is released", "primary carrier is already owned by
 * another carrier", "secondary carrier is already owned by another
 * carrier"; SW_ETYPE "primary and secondary dtypes must match";
 * SW_ERUNTIME "secondary carrier must be mutable"; SW_EVALUE "primary
 * carrier must contain at least one element"; then the move classes of
 * both directions must accept the tier classes (SW_ETYPE "<Move> requires
 * a <Class> source"). Records the primary's size, dtype and mutability.
 * Nothing is claimed unless everything succeeds.
 */
SW_API sw_status sw_evictable_new(sw_carrier *primary, sw_carrier *secondary,
                                  sw_carrier **out);

/* Non-zero if c is an Evictable carrier. */
SW_API int sw_carrier_is_evictable(const sw_carrier *c);
/* The backend class of Evictable carriers (their operations' tag). */
SW_API const sw_carrier_class *sw_evictable_class(void);

/* The current tiers (borrowed; NULL for other carriers). They change
 * across transitions. */
SW_API sw_carrier *sw_evictable_primary(const sw_carrier *c);
SW_API sw_carrier *sw_evictable_secondary(const sw_carrier *c);
SW_API int sw_evictable_is_evicted(const sw_carrier *c);

/*
 * The residency transitions (no-ops when already there). SW_ETYPE
 * "carrier is not an Evictable carrier"; SW_ERUNTIME "Evictable carrier is
 * owned by another carrier and cannot be modified directly" when owned by
 * an outer composite without owner access; "Carrier is released";
 * "Carrier has a pending move" while a transition of c is running (from a
 * move hook: during the move, c also refuses writes and release, and
 * accepts reads); then whatever allocation or the move reports, with the
 * hierarchy unchanged.
 */
SW_API sw_status sw_evictable_evict(sw_carrier *c);
SW_API sw_status sw_evictable_promote(sw_carrier *c);

/*
 * A tensor over t's primary with t's offset and layout (an owned
 * reference). SW_ETYPE if t's carrier is not an Evictable; SW_ERUNTIME
 * "Carrier is released" or the evicted failure.
 */
SW_API sw_status sw_evictable_lower(const sw_tensor *t, sw_tensor **out);

/*
 * An EvictableOperation wrapping primary (retained). SW_ETYPE
 * "primary_operation must be an Operation" for NULL.
 *
 * Forward (once: SW_ERUNTIME "EvictableOperation forward may only be
 * called once"): SW_ETYPE "EvictableOperation requires a tensor input"
 * without an Evictable tensor argument, "Evictable primary carriers must
 * match", "Evictable secondary carriers must match", "EvictableOperation
 * requires Evictable tensor inputs"; the evicted and released failures;
 * SW_ETYPE "operation result does not use the primary carrier" when the
 * primary operation's result is of another carrier class.
 *
 * Backward: SW_ERUNTIME "EvictableOperation backward requires forward
 * first"; the saved inputs must be promoted; SW_ETYPE "gradient must be a
 * Tensor", "gradient carrier must match the primary carrier class" (an
 * Evictable gradient is lowered; any other must have the primary's class).
 */
SW_API sw_status sw_evictable_op_new(sw_op *primary, sw_op **out);
SW_API int sw_op_is_evictable(const sw_op *op);
/* The class of EvictableOperation (what profiler events name as the
 * implementation of an Evictable execution). */
SW_API const sw_op_class *sw_evictable_op_class(void);
/* The wrapped operation (borrowed), NULL for other operations. */
SW_API sw_op *sw_evictable_op_primary(const sw_op *op);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_EVICTABLE_H */
