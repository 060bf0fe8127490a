/*
 * Tiled geometry (strideweave/tiled.h): tiles, footprints and the
 * tile-compatibility check every TiledEvictable entry point runs first.
 */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "layout/internal.h"
#include "strideweave/tiled.h"

sw_status sw_tile_geometry_init(int32_t rank, const int64_t *grid,
                                const int64_t *tile, sw_tile_geometry *out) {
    if (rank < 1 || rank > SW_TILE_MAX_RANK || !grid || !tile)
        return sw_fail(SW_EVALUE,
                       "grid and tile ranks must be between 1 and %d",
                       SW_TILE_MAX_RANK);
    sw_tile_geometry g;
    memset(&g, 0, sizeof g);
    g.rank = rank;
    g.ntiles = g.tile_size = g.size = 1;
    for (int32_t k = 0; k < rank; ++k) {
        if (grid[k] <= 0)
            return sw_fail(SW_EVALUE, "grid extents must be positive");
        if (tile[k] <= 0)
            return sw_fail(SW_EVALUE, "tile extents must be positive");
        g.grid[k] = grid[k];
        g.tile[k] = tile[k];
        g.stride[k] = g.size;
        if (!sw_mul_ok(grid[k], tile[k], &g.extent[k]) ||
            !sw_mul_ok(g.size, g.extent[k], &g.size) ||
            !sw_mul_ok(g.ntiles, grid[k], &g.ntiles) ||
            !sw_mul_ok(g.tile_size, tile[k], &g.tile_size))
            return sw_fail(SW_EOVERFLOW, "tile geometry is too large");
    }
    *out = g;
    return SW_OK;
}

int64_t sw_tile_of_slot(const sw_tile_geometry *g, int64_t p) {
    int64_t t = 0, step = 1;
    for (int32_t k = 0; k < g->rank; ++k) {
        int64_t c = p % g->extent[k];
        p /= g->extent[k];
        t += c / g->tile[k] * step;
        step *= g->grid[k];
    }
    return t;
}

int64_t sw_tile_slot(const sw_tile_geometry *g, int64_t t, int64_t k) {
    int64_t p = 0;
    for (int32_t a = 0; a < g->rank; ++a) {
        int64_t tc = t % g->grid[a], kc = k % g->tile[a];
        t /= g->grid[a];
        k /= g->tile[a];
        p += (tc * g->tile[a] + kc) * g->stride[a];
    }
    return p;
}

int64_t sw_tile_index(const sw_tile_geometry *g, const int64_t *coord) {
    int64_t t = 0, step = 1;
    for (int32_t k = 0; k < g->rank; ++k) {
        if (coord[k] < 0 || coord[k] >= g->grid[k])
            return -1;
        t += coord[k] * step;
        step *= g->grid[k];
    }
    return t;
}

void sw_tile_coord(const sw_tile_geometry *g, int64_t t, int64_t *coord) {
    for (int32_t k = 0; k < g->rank; ++k) {
        coord[k] = t % g->grid[k];
        t /= g->grid[k];
    }
}

/* "(a, b, c)" of tile index t, into buf. */
static const char *coord_text(const sw_tile_geometry *g, int64_t t, char *buf,
                              size_t size) {
    int64_t c[SW_TILE_MAX_RANK];
    sw_tile_coord(g, t, c);
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t k = 0; k < g->rank && used + 1 < size; ++k)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld",
                                 k ? ", " : "(", (long long)c[k]);
    if (used + 1 < size)
        snprintf(buf + used, size - used, ")");
    return buf;
}

sw_status sw_tile_check_footprints(const sw_tile_geometry *g, int64_t offset,
                                   const sw_layout *layout) {
    if (layout->rank != g->rank)
        return sw_fail(SW_EVALUE,
                       "tensor geometry does not match the tile grid: %d "
                       "top-level modes for a rank-%d grid",
                       (int)layout->rank, (int)g->rank);
    for (int32_t k = 0; k < g->rank; ++k)
        if (layout->mode_size[k] != g->extent[k])
            return sw_fail(SW_EVALUE,
                           "tensor geometry does not match the tile grid: "
                           "mode %d has extent %lld, the grid %lld",
                           (int)k, (long long)layout->mode_size[k],
                           (long long)g->extent[k]);
    /* One bit per slot: whether an element already landed there. */
    uint8_t *seen = sw_calloc((size_t)(g->size / 8 + 1), 1);
    if (!seen)
        return sw_oom();
    char a[96], b[96], c[96];
    sw_status st = SW_OK;
    for (int64_t t = 0; t < g->ntiles && !st; ++t) {
        int64_t first = -1;
        for (int64_t k = 0; k < g->tile_size && !st; ++k) {
            /* The tensor's logical index of element k of logical tile t
             * (the same first-axis-fastest numbering as the array's). */
            int64_t i = sw_tile_slot(g, t, k), p = 0;
            sw_layout_index(layout, i, &p);
            p += offset;
            if (p < 0 || p >= g->size) {
                st = sw_fail(SW_EVALUE,
                             "tile footprints: logical tile %s omits slots: "
                             "it reaches slot %lld outside the array",
                             coord_text(g, t, a, sizeof a), (long long)p);
                break;
            }
            int64_t u = sw_tile_of_slot(g, p);
            if (first < 0) {
                first = u;
            } else if (u != first) {
                st = sw_fail(SW_EVALUE,
                             "tile footprints: logical tile %s spans carrier "
                             "tiles %s and %s",
                             coord_text(g, t, a, sizeof a),
                             coord_text(g, first, b, sizeof b),
                             coord_text(g, u, c, sizeof c));
                break;
            }
            if (seen[p / 8] & (1u << (p % 8))) {
                st = sw_fail(SW_EVALUE,
                             "tile footprints: logical tile %s aliases slot "
                             "%lld",
                             coord_text(g, t, a, sizeof a), (long long)p);
                break;
            }
            seen[p / 8] |= (uint8_t)(1u << (p % 8));
        }
        if (!st && first != t)
            st = sw_fail(SW_EVALUE,
                         "tile footprints: logical tile %s remaps onto "
                         "carrier tile %s",
                         coord_text(g, t, a, sizeof a),
                         coord_text(g, first, b, sizeof b));
    }
    sw_free(seen);
    return st;
}
