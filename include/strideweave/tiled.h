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

#include "strideweave/layout.h"

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

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_TILED_H */
