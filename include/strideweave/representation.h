/*
 * StrideWeave tensor representations: storage schemas, multi-subtensor
 * tensors and the one gate of the entry points that do not take them.
 *
 * A tensor's authoritative representation is a list of subtensors, each a
 * (storage dtype, carrier, offset, placement layout), plus one adjacent
 * layout between each pair of neighbouring subtensors. A tensor of a
 * simple dtype has one subtensor (sw_tensor_new makes it): sw_tensor_carrier,
 * sw_tensor_offset and sw_tensor_layout read it. A compound dtype, whose
 * values span several storage planes (a value plane and a scale plane, for
 * example), has one subtensor per plane; subtensor 0 is the primary, and
 * the same getters read it.
 *
 * Adjacent layout i maps a logical coordinate of placement i (it has that
 * shape) to a logical index of level i + 1, below the size of placement
 * i + 1: which scale belongs to which value.
 *
 * Only the pure views of the leading level take multi-subtensor tensors
 * (sw_permute, and sw_view with every start 0); they change subtensor 0's
 * placement and adjacent layout 0 alike and share the later planes. Every
 * other entry point refuses them through sw_tensor_require_single, before
 * it touches any carrier.
 *
 * Ownership: a schema is an immutable, reference-counted value
 * (sw_schema_retain and sw_schema_unref; the simple schemas are static
 * and never freed). A tensor holds counted references to its schema, every
 * carrier and every layout, and never releases a carrier by itself.
 * Getters return borrowed references.
 */
#ifndef STRIDEWEAVE_REPRESENTATION_H
#define STRIDEWEAVE_REPRESENTATION_H

#include "strideweave/carrier.h"
#include "strideweave/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------- schemas */

typedef struct sw_schema sw_schema;

/* The most planes a compound dtype may have. */
#define SW_SCHEMA_MAX_PLANES 16

/*
 * The schema of a simple dtype: one plane, the dtype itself. Static and
 * borrowed (retain and release do nothing to it); NULL for a value outside
 * sw_dtype.
 */
SW_API const sw_schema *sw_schema_simple(sw_dtype dtype);

/*
 * A compound dtype named name (copied) of nplanes simple planes, in order.
 * Errors: SW_ETYPE "a CompoundDType needs a name" for NULL; SW_EVALUE
 * "CompoundDType name must not be empty", "CompoundDType needs at least 2
 * planes, got 1" (nplanes from 2 to SW_SCHEMA_MAX_PLANES), "CompoundDType
 * plane 1 is not a dtype"; SW_ENOMEM.
 */
SW_API sw_status sw_schema_compound_new(const char *name, int32_t nplanes,
                                        const sw_dtype *planes,
                                        sw_schema **out);

SW_API sw_schema *sw_schema_retain(const sw_schema *s);
SW_API void sw_schema_unref(const sw_schema *s);

/* The name: the compound's, or the simple dtype's ("Float32"). */
SW_API const char *sw_schema_name(const sw_schema *s);
/* Non-zero for a compound dtype. */
SW_API int sw_schema_is_compound(const sw_schema *s);
SW_API int32_t sw_schema_nplanes(const sw_schema *s);
/* Plane i's storage dtype (SW_DTYPE_COUNT when i is out of range). */
SW_API sw_dtype sw_schema_plane(const sw_schema *s, int32_t i);

/* ------------------------------------------------------ representations */

/*
 * Checks a representation: logical dtype `dtype`, nsub subtensors given as
 * parallel arrays (storage dtypes, carriers, offsets, placement layouts)
 * and nadjacent adjacent layouts. The checks run in this order, and the
 * first that fails is reported:
 *
 *   schema (SW_EVALUE): "CompoundDType 'mx' requires 2 subtensors, got 1";
 *     "... requires 1 adjacent layouts, got 0"; "subtensor 1 must use
 *     storage dtype Float32, not Int32" (the schema's plane);
 *   universal, for each subtensor in order: "subtensor 1 carrier dtype must
 *     be identical to its storage dtype Float32, not Int32" (SW_EVALUE);
 *     "subtensor carriers must have one exact class: subtensor 1 is
 *     Generic, subtensor 0 is CPU" (SW_ETYPE); "subtensor 1 offset must be
 *     non-negative" (SW_EVALUE); "subtensor 1 placement storage exceeds
 *     carrier size: offset 2 + cosize 4 > 5" (SW_EVALUE);
 *   universal, for each adjacent layout i: "adjacent layout 0 must have the
 *     source placement shape (2,3), not (3,2)" and "adjacent layout 0
 *     reaches outside level 1 shape cardinality 2: cosize 3" (SW_EVALUE).
 *
 * A NULL carrier or layout is SW_ETYPE. Nothing is allocated on success
 * (the shape texts of a failure are); nothing is changed.
 */
SW_API sw_status sw_representation_check(const sw_schema *dtype, int32_t nsub,
                                         const sw_dtype *storage_dtypes,
                                         sw_carrier *const *carriers,
                                         const int64_t *offsets,
                                         sw_layout *const *placements,
                                         int32_t nadjacent,
                                         sw_layout *const *adjacent);

/*
 * A tensor holding that representation, after sw_representation_check's
 * checks (its errors). A simple dtype gives the tensor sw_tensor_new would
 * make of subtensor 0. The tensor holds counted references to the schema,
 * the carriers and the layouts. SW_ENOMEM leaves nothing behind.
 */
SW_API sw_status sw_tensor_new_multi(
    const sw_schema *dtype, int32_t nsub, const sw_dtype *storage_dtypes,
    sw_carrier *const *carriers, const int64_t *offsets,
    sw_layout *const *placements, int32_t nadjacent, sw_layout *const *adjacent,
    sw_tensor **out);

/* The number of subtensors: 1 for a simple dtype, the planes of a compound
 * one. */
SW_API int32_t sw_tensor_nsubtensors(const sw_tensor *t);

/* The logical dtype's schema (borrowed): the compound of a multi-subtensor
 * tensor, sw_schema_simple(sw_tensor_dtype(t)) otherwise. */
SW_API const sw_schema *sw_tensor_schema(const sw_tensor *t);

/*
 * Subtensor i (0 <= i < sw_tensor_nsubtensors(t)): its carrier and
 * placement layout (borrowed) and offset; its storage dtype is the
 * carrier's. SW_EINDEX "subtensor index 2 out of range for 2 subtensors".
 */
SW_API sw_status sw_tensor_subtensor(const sw_tensor *t, int32_t i,
                                     sw_carrier **carrier, int64_t *offset,
                                     sw_layout **placement);

/* Adjacent layout i (borrowed), from level i to level i + 1; SW_EINDEX
 * outside 0 .. nsubtensors - 2. */
SW_API sw_status sw_tensor_adjacent_layout(const sw_tensor *t, int32_t i,
                                           sw_layout **out);

/*
 * The version token: one (carrier, version) pair per unique carrier, in
 * the order of first appearance among the subtensors. Writes at most cap
 * pairs (either array may be NULL when cap is 0) and returns how many there
 * are; sw_tensor_nsubtensors(t) is always enough room.
 */
SW_API int32_t sw_tensor_version_token(const sw_tensor *t, int32_t cap,
                                       sw_carrier **carriers,
                                       int64_t *versions);

/* --------------------------------------------------------------- gate */

/* The entry points that refuse multi-subtensor tensors, by what the
 * message names. */
typedef enum sw_entry {
    SW_ENTRY_INDEXING = 0,  /* element reads */
    SW_ENTRY_MUTATION = 1,  /* element writes */
    SW_ENTRY_OPERATION = 2, /* operations, rearrange, moves, optimizer steps */
    SW_ENTRY_BACKWARD = 3,  /* the reverse pass */
    SW_ENTRY_DLPACK = 4,    /* DLPack export and device queries */
    SW_ENTRY_SCATTER = 5,   /* carrier scatter */
    SW_ENTRY_EVICTABLE = 6  /* lowering of an Evictable operation */
} sw_entry;

/*
 * The one gate: SW_OK for NULL or a single-subtensor tensor; for a
 * multi-subtensor tensor SW_ENOTIMPL "Multi-subtensor Tensor indexing is
 * not implemented: ..." (the entry's words: "indexing", "mutation",
 * "operation execution", "backward", "DLPack export", "scatter",
 * "Evictable operation lowering"). Every entry point of the library calls
 * it before it touches a carrier; bindings call it where they would do
 * work of their own first.
 */
SW_API sw_status sw_tensor_require_single(const sw_tensor *t, sw_entry entry);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_REPRESENTATION_H */
