/*
 * StrideWeave tiled geometry: one flat logical array cut into a grid of
 * rectangular tiles, the ground TiledEvictable stands on.
 *
 * The array's slots are its logical coordinates in first-mode-fastest
 * (column-major) order: slot p holds coordinate c with p = sum_k c_k *
 * stride_k, stride_0 = 1, stride_k = stride_{k-1} * extent_{k-1}, where
 * extent_k = grid_k * tile_k. Tile t (a coordinate in the grid) is the
 * rectangular block c_k in [t_k * tile_k, (t_k + 1) * tile_k): its
 * footprint is not a contiguous run of slots. Tiles and the slots inside
 * one tile are both numbered first-axis-fastest.
 *
 * A tensor over such an array is tile-compatible when its offset and
 * layout map each logical tile (the same block of the tensor's own
 * logical coordinates, by top-level mode) injectively onto exactly the
 * carrier tile of the same coordinate; a permutation inside a tile is
 * allowed. Every entry point that takes a full tensor checks this before
 * it changes anything.
 */
#ifndef STRIDEWEAVE_TILED_H
#define STRIDEWEAVE_TILED_H

#include "strideweave/carrier.h"
#include "strideweave/layout.h"
#include "strideweave/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most axes of a tile grid. */
#define SW_TILE_MAX_RANK 8

typedef struct sw_tile_geometry {
    int32_t rank;
    int64_t grid[SW_TILE_MAX_RANK];   /* tiles per axis */
    int64_t tile[SW_TILE_MAX_RANK];   /* slots per tile per axis */
    int64_t extent[SW_TILE_MAX_RANK]; /* grid * tile: the logical shape */
    int64_t stride[SW_TILE_MAX_RANK]; /* column-major strides of extent */
    int64_t ntiles;                   /* product of grid */
    int64_t tile_size;                /* product of tile */
    int64_t size;                     /* product of extent */
} sw_tile_geometry;

/*
 * Fills *out for grid and tile extents of rank axes. SW_EVALUE "grid and
 * tile ranks must be between 1 and 8", "tile extents must be positive"
 * (also for a grid extent of 0 or less: "grid extents must be
 * positive"); SW_EOVERFLOW "tile geometry is too large" when a product
 * leaves int64.
 */
SW_API sw_status sw_tile_geometry_init(int32_t rank, const int64_t *grid,
                                       const int64_t *tile,
                                       sw_tile_geometry *out);

/* The index (first-axis-fastest over the grid) of the tile holding slot
 * p, 0 <= p < size. */
SW_API int64_t sw_tile_of_slot(const sw_tile_geometry *g, int64_t p);

/* The slot of element k (first-axis-fastest inside the tile, 0 <= k <
 * tile_size) of tile t (0 <= t < ntiles). */
SW_API int64_t sw_tile_slot(const sw_tile_geometry *g, int64_t t, int64_t k);

/* The index of tile coordinate coord (rank entries), or -1 when a
 * component is outside the grid. */
SW_API int64_t sw_tile_index(const sw_tile_geometry *g, const int64_t *coord);
/* The coordinate of tile index t (rank entries into coord). */
SW_API void sw_tile_coord(const sw_tile_geometry *g, int64_t t, int64_t *coord);

/*
 * Checks that a tensor of (offset, layout) over an array of geometry g is
 * tile-compatible (see above). The layout must have g's rank of top-level
 * modes with the logical extents (SW_EVALUE "tensor geometry does not
 * match the tile grid: ..."). Then, tile by tile in index order, the first
 * failure is SW_EVALUE "tile footprints: logical tile (i, j) " followed by
 * "spans carrier tiles (a, b) and (c, d)", "remaps onto carrier tile (a,
 * b)", "aliases slot p" (two of its elements share a slot: a stride 0) or
 * "omits slots: it reaches slot p outside the array". SW_ENOMEM.
 */
SW_API sw_status sw_tile_check_footprints(const sw_tile_geometry *g,
                                          int64_t offset,
                                          const sw_layout *layout);

/* ------------------------------------------------------ TiledEvictable */

/*
 * TiledEvictable: a definition-backed dependent carrier (extension.h)
 * whose storage is the tiled array of geometry g over two tier carriers,
 * a primary (compute) and a secondary (backing) one, each holding the
 * whole array slot for slot. Every tile is in one place: "primary"
 * (valid in the primary tier; dirty when the secondary's copy is stale),
 * "secondary" (valid in the secondary tier) or "implicit" (a valid tile
 * of zeros stored nowhere); a tile that holds no value yet is invalid.
 *
 * Reads go to the tile's place (implicit tiles read 0; invalid tiles fail
 * with SW_ERUNTIME "tile (i, j) of TiledEvictable is invalid: it must be
 * promoted or written first"). A write promotes its tile first (an
 * invalid one fails with SW_ERUNTIME "tile (i, j) of TiledEvictable is
 * invalid: its initialization must come from a write to a valid tile or
 * a promotion"), then writes the primary and marks the tile dirty; the
 * version rises by one as for any carrier. The carrier owns both tiers
 * exclusively from construction to release (sw_carrier_claim), and its
 * release releases both.
 *
 * Operations: a full, tile-compatible tensor on a TiledEvictable runs
 * add, elementwise_mul, mul, relu, reduce_sum and matmul directly (its
 * capabilities are its primary's plans of these six): the operands are
 * read whole, whatever their residency, into dense tensors of the
 * primary's class, the operation runs there, and the result is an
 * ordinary dense tensor of that class laid out as the same operation on a
 * dense tensor would be. Residency does not change. Gradients are
 * full-shaped TiledEvictable tensors (Generic's VJP, allocated through
 * allocate_like). Any other operation: SW_ENOTIMPL "TiledEvictable does
 * not support ...".
 *
 * Work and policy: every piece of work on a TiledEvictable (a direct
 * operation, "operation", and its backward, "backward"; a projection,
 * "projection"; a scatter's template with add, "scatter") names the tiles it
 * requires and asks the carrier's residency policy for a plan, once: with no
 * policy the plan is to promote what is required. Before the work, the plan's
 * promote tiles and the required ones become primary; during it the required
 * and the retained tiles are pinned (an explicit evict of a pinned tile fails
 * with SW_ERUNTIME "tile ... is pinned by work in progress"); after it the
 * plan's evict tiles are evicted (no version change). A policy that
 * fails, or a plan with a tile outside the grid (SW_EVALUE), stops the
 * work before anything moved.
 */

/* The class tag of TiledEvictable (its definition is the library's). */
SW_API const void *sw_tiled_class(void);
SW_API int sw_carrier_is_tiled(const sw_carrier *c);

/* Where a tile is (sw_tiled_tile_state). */
typedef enum sw_tile_location {
    SW_TILE_PRIMARY = 0,
    SW_TILE_SECONDARY = 1,
    SW_TILE_IMPLICIT = 2
} sw_tile_location;

/*
 * A TiledEvictable over primary and secondary with rank-axis grid and
 * tile extents. Checked before anything is claimed: SW_ETYPE for a
 * missing tier, tiers of different dtypes ("primary and secondary dtypes
 * must match") or a tier that is itself tiled; SW_ERUNTIME for a
 * released, owned or immutable (secondary) tier; SW_EVALUE for the same
 * carrier twice, sw_tile_geometry_init's errors, a non-empty tier whose
 * size is not the array's ("primary tier holds N slots, not the full
 * extent M"); SW_ERUNTIME "an OpenCL TiledEvictable tier needs an exact
 * registered move operation for (A, B) in both directions" when a tier is
 * OpenCL and the other tier's class has only the elementwise move with it
 * (OpenCL and FileBacked; OpenCL with CPU or OpenCL works), as for an
 * Evictable. Initial residency: a full primary makes every tile primary,
 * valid and clean; an empty primary (size 0: it is grown to the extent
 * first) with a full secondary makes every tile secondary and valid; two
 * empty tiers make every tile invalid. An empty tier that cannot grow
 * fails with its growth's error.
 */
SW_API sw_status sw_tiled_new(sw_carrier *primary, sw_carrier *secondary,
                              int32_t rank, const int64_t *grid,
                              const int64_t *tile, sw_carrier **out);

/* The geometry, tiers (borrowed) and a tile's state of a TiledEvictable
 * (NULL / SW_ETYPE for another carrier; SW_EVALUE for a tile out of
 * range). */
SW_API const sw_tile_geometry *sw_tiled_geometry(const sw_carrier *c);
SW_API sw_carrier *sw_tiled_primary(const sw_carrier *c);
SW_API sw_carrier *sw_tiled_secondary(const sw_carrier *c);
SW_API sw_status sw_tiled_tile_state(const sw_carrier *c, int64_t t,
                                     sw_tile_location *location, int *valid,
                                     int *dirty);

/*
 * Residency of n tiles (tile indices; duplicates are not allowed):
 * promote makes each primary and valid (copying from the secondary, or
 * writing zeros for an implicit tile); evict copies each dirty primary
 * tile to the secondary and makes it secondary and clean (implicit tiles
 * stay implicit). Tiles move between CPU and FileBacked tiers by bulk
 * copies of their runs, between an OpenCL tier and a CPU tier (or an
 * OpenCL tier of the same device) by the device writes, reads and copies
 * of the bulk moves over the tile's footprint (a few rectangular commands
 * each, waited for before the request commits), and otherwise element by
 * element. Satisfied tiles are left alone; an invalid tile cannot
 * be promoted or evicted (SW_ERUNTIME "tile ... is invalid"). Neither
 * changes the version. A failing copy rolls the whole request back: every
 * tile's state is as before and the values are unchanged (the primary
 * tier keeps its copy of an evicted tile until the request commits). Once
 * it commits, the memory under the evicted tiles of a CPU primary that
 * allocated its own storage goes back to the system (those slots of the
 * primary read as zeros until a promotion refills them); such a primary is
 * kept in small pages when its tiles are smaller than a huge page.
 * SW_EVALUE "tile index N is outside the grid", "duplicate tile index N";
 * SW_ERUNTIME "TiledEvictable is released".
 */
SW_API sw_status sw_tiled_promote(sw_carrier *c, int64_t n,
                                  const int64_t *tiles);
SW_API sw_status sw_tiled_evict(sw_carrier *c, int64_t n, const int64_t *tiles);

/* A residency plan: three disjoint lists of tile indices. */
typedef struct sw_residency_plan {
    int64_t npromote, nretain, nevict;
    const int64_t *promote, *retain, *evict; /* borrowed until the call ends */
} sw_residency_plan;

/*
 * A residency policy: writes the plan for n required tiles and purpose
 * ("operation", "backward", "projection" or "scatter"). The lists it points to
 * must stay valid until done (optional) is called with the same plan, right
 * after the carrier copied them.
 */
typedef struct sw_residency_policy {
    void *ctx;
    sw_status (*plan)(void *ctx, sw_carrier *c, const int64_t *required,
                      int64_t n, const char *purpose, sw_residency_plan *out);
    void (*done)(void *ctx, const sw_residency_plan *plan);
    void (*drop)(void *ctx); /* when the carrier goes or the policy changes */
} sw_residency_policy;

/* Sets (or, with NULL, clears) c's policy; the previous one is dropped.
 * SW_ETYPE for another carrier, SW_EVALUE for a policy without plan. */
SW_API sw_status sw_tiled_set_policy(sw_carrier *c,
                                     const sw_residency_policy *policy);

/*
 * Projection: the tiles a selection names, gathered into one compact
 * tensor. tensor is a full, tile-compatible tensor on a TiledEvictable;
 * the selection is a Cartesian product, counts[k] tile coordinates on
 * axis k listed one axis after another in coords (each axis in the
 * caller's order, no duplicates). The result lies on destination (a
 * live, mutable carrier of the primary tier's exact class and dtype that
 * holds at least the compact size, or an empty FileBacked one, which
 * grows) or, with NULL, on a fresh carrier of the primary's class: offset
 * 0, dense column-major over the compact shape (the selected count times
 * the tile extent on each axis). Compact tile c comes from source tile
 * (coords of axis k at c_k)_k, values inside a tile at the same logical
 * coordinates. The selected tiles are promoted first (no version change);
 * the source keeps its shape, layout, carrier, version and values.
 *
 * Recorded (grad mode on and a differentiable source): one node whose
 * backward scatter-adds the cotangent into a fresh TiledEvictable
 * gradient of the source's layout and geometry (selected tiles primary,
 * the others implicit zeros); the source must not have changed since
 * (the saved-version check).
 *
 * Errors, all before anything changes: SW_ETYPE "tensor must be on a
 * TiledEvictable", a destination of another class or dtype or the
 * TiledEvictable itself; SW_EVALUE "selection rank R does not match the
 * grid rank G", "selected tile coordinate ... is outside the grid",
 * "duplicate ... on axis k", "destination holds N slots, less than the
 * compact size M", the footprint check's errors; SW_ERUNTIME released
 * carriers and an immutable destination; SW_ENOMEM.
 */
SW_API sw_status sw_tiled_project(sw_tensor *tensor, int32_t rank,
                                  const int64_t *counts, const int64_t *coords,
                                  sw_carrier *destination, sw_tensor **out);

/* How sw_tiled_scatter combines. */
typedef enum sw_scatter_reduction {
    SW_SCATTER_REPLACE = 0, /* the compact values */
    SW_SCATTER_ADD = 1      /* the template's values plus the compact ones */
} sw_scatter_reduction;

/*
 * Scatter: the inverse of projection. compact is a tensor on a carrier of
 * template's primary tier's exact class with template's dtype and the
 * selection's compact shape (any layout); template a full, tile-
 * compatible tensor on a TiledEvictable. The result is a fresh
 * TiledEvictable of template's geometry and tier classes (fresh tiers),
 * template's layout at offset 0, at version 1: the selected tiles primary,
 * valid and dirty, holding the compact values (replace) or template plus
 * compact (add); the other tiles invalid. Neither input changes.
 *
 * Recorded: one node (_ScatterOperation). Its backward gives compact the
 * cotangent gathered at the selection (on compact's class, compact's
 * layout), and template, for replace, the cotangent with the selected
 * slots zeroed (a TiledEvictable whose selected tiles are implicit
 * zeros), for add the whole cotangent.
 *
 * Errors, before anything changes: sw_tiled_project's selection and
 * footprint errors; SW_ETYPE for a compact on another class (or on a
 * TiledEvictable) or of another dtype; SW_EVALUE "compact shape must be
 * the selection's compact shape ..."; SW_EVALUE for an unknown reduction;
 * SW_ERUNTIME for released carriers and, with add, "tile ... of the
 * template is invalid: add needs its values".
 */
SW_API sw_status sw_tiled_scatter(sw_tensor *compact, sw_tensor *template_,
                                  int32_t rank, const int64_t *counts,
                                  const int64_t *coords,
                                  sw_scatter_reduction reduction,
                                  sw_tensor **out);

/*
 * Asynchronous forms. Each checks everything the blocking form checks
 * that needs no transfer (with the same errors) before it returns, then
 * queues the work on the move executor (interop.h) and gives its request
 * (work on a carrier with a residency policy, or whose tiers, compact or
 * destination are not CPU or FileBacked storage, may call into a host
 * language and runs before the call returns instead, its request done):
 * sw_move_request_wait gives NULL for residency and the result tensor for
 * a projection or scatter, or the failure (residency rolls back all or
 * nothing, as the blocking forms do).
 *
 * While a request is pending:
 * - a residency request claims its tiles: another residency request
 *   naming one of them (blocking or not) fails with SW_ERUNTIME "tile ...
 *   has a pending residency request: wait for it first (conflict)";
 *   disjoint requests run concurrently;
 * - a projection holds its selected tiles of the source, a scatter those
 *   of the template: a write to one fails with SW_ERUNTIME "tile ... is
 *   pinned by a pending projection or scatter: wait for it before
 *   writing", and evicting one with "... is pinned by work in progress";
 *   reads and other work run normally;
 * - releasing the TiledEvictable fails with SW_ERUNTIME "TiledEvictable
 *   has N pending request(s): wait for them before releasing it".
 * The claim or hold ends when the work ends, before its outcome is
 * visible; sw_tiled_pending counts the requests not ended yet (0 for a
 * carrier that is not a TiledEvictable). A projection or scatter is
 * recorded under the submitting thread's grad mode.
 */
typedef struct sw_move_request sw_move_request;
SW_API sw_status sw_tiled_promote_async(sw_carrier *c, int64_t n,
                                        const int64_t *tiles,
                                        sw_move_request **out);
SW_API sw_status sw_tiled_evict_async(sw_carrier *c, int64_t n,
                                      const int64_t *tiles,
                                      sw_move_request **out);
SW_API sw_status sw_tiled_project_async(sw_tensor *tensor, int32_t rank,
                                        const int64_t *counts,
                                        const int64_t *coords,
                                        sw_carrier *destination,
                                        sw_move_request **out);
SW_API sw_status sw_tiled_scatter_async(sw_tensor *compact,
                                        sw_tensor *template_, int32_t rank,
                                        const int64_t *counts,
                                        const int64_t *coords,
                                        sw_scatter_reduction reduction,
                                        sw_move_request **out);
SW_API int64_t sw_tiled_pending(const sw_carrier *c);
/* 1 for a projection's node, 2 for a scatter's, 0 for any other. */
SW_API int sw_tiled_op_kind(const sw_op *op);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_TILED_H */
