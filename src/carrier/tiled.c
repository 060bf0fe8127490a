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

/* The compact, column-major layout of shape. */
static sw_status dense_layout(int32_t rank, const int64_t *shape,
                              sw_layout **out) {
    char text[SW_TILE_MAX_RANK * 48 + 8];
    size_t used = 0;
    int64_t step = 1;
    used += (size_t)snprintf(text + used, sizeof text - used, "(");
    for (int32_t k = 0; k < rank; ++k)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld",
                                 k ? "," : "", (long long)shape[k]);
    used += (size_t)snprintf(text + used, sizeof text - used, "):(");
    for (int32_t k = 0; k < rank; ++k) {
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld",
                                 k ? "," : "", (long long)step);
        step *= shape[k];
    }
    snprintf(text + used, sizeof text - used, ")");
    return sw_layout_parse(text, out);
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
    /* The array's own column-major layout at offset 0 maps every tile onto
     * itself: no walk over the elements. */
    sw_layout *own = NULL;
    if (offset == 0 && dense_layout(g->rank, g->extent, &own) == SW_OK) {
        int same = sw_layout_equal(layout, own);
        sw_layout_unref(own);
        if (same)
            return SW_OK;
    }
    sw_clear_error();
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

/* ------------------------------------------------------ TiledEvictable */

#include <pthread.h>

#include "carrier/defined.h"
#include "carrier/internal.h"
#include "carrier/opencl/blocks.h"
#include "strideweave/definition.h"
#include "strideweave/extension.h"
#include "strideweave/interop.h"
#include "strideweave/opencl.h"
#include "strideweave/registry.h"
#include "op/internal.h"
#include "tensor/internal.h"

typedef struct tiled_state {
    sw_tile_geometry g;
    sw_carrier *primary, *secondary;
    int64_t ptoken, stoken;
    /* Per tile: where it is, whether it holds values, whether it was
     * written since it came into the primary, and whether the secondary
     * holds its current values (eviction copies a tile that is dirty or
     * not backed). Guarded by lock. */
    uint8_t *loc, *valid, *dirty, *backed;
    int32_t *pins; /* work in progress that needs the tile primary */
    /* Pending requests (sw_tiled_*_async): a residency request claims its
     * tiles alone, projections and scatters hold theirs (shared); pending
     * counts the requests. Guarded by lock. */
    uint8_t *claims;
    int32_t *holds;
    int64_t pending;
    sw_residency_policy policy; /* plan NULL: none */
    pthread_mutex_t lock;
} tiled_state;

static char tiled_tag;

static sw_status ensure_defined(void);

const void *sw_tiled_class(void) {
    /* The definition exists once the class is named, so that a second
     * registration is refused as for any defined class. */
    (void)ensure_defined();
    return &tiled_tag;
}

int sw_carrier_is_tiled(const sw_carrier *c) {
    return c && sw_carrier_defined_class(c) == &tiled_tag;
}

static tiled_state *tstate(const sw_carrier *c) {
    return sw_carrier_is_tiled(c) ? sw_carrier_defined_data(c) : NULL;
}

static const char *tile_text(const sw_tile_geometry *g, int64_t t, char *buf,
                             size_t size) {
    return coord_text(g, t, buf, size);
}

/* ----------------------------------------------------- tier transfers */

/* The length of the contiguous runs of a tile's footprint: its first
 * axis, times the next ones while the tile spans whole axes before them. */
static int64_t tile_run(const sw_tile_geometry *g) {
    int64_t run = g->tile[0];
    for (int32_t a = 0; a + 1 < g->rank && g->grid[a] == 1; ++a)
        run *= g->tile[a + 1];
    return run;
}

/* Tile t's footprint as an OpenCL block, the same slots on both sides. */
static void tile_block(const sw_tile_geometry *g, int64_t t, sw_cl_block *b) {
    memset(b, 0, sizeof *b);
    b->rank = g->rank;
    b->src_at = b->dst_at = sw_tile_slot(g, t, 0);
    for (int32_t k = 0; k < g->rank; ++k) {
        b->extent[k] = g->tile[k];
        b->src_stride[k] = b->dst_stride[k] = g->stride[k];
    }
}

/* Tile t's footprint as an OpenCL block whose host side (the source
 * when host_src, else the destination) is the tile laid out compactly
 * from element 0. */
static void tile_block_compact(const sw_tile_geometry *g, int64_t t,
                               int host_src, sw_cl_block *b) {
    tile_block(g, t, b);
    int64_t *at = host_src ? &b->src_at : &b->dst_at;
    int64_t *stride = host_src ? b->src_stride : b->dst_stride;
    *at = 0;
    for (int32_t k = 0; k < g->rank; ++k)
        stride[k] = k ? stride[k - 1] * g->tile[k - 1] : 1;
}

/* Tile t between two tiers that share no device copy (a FileBacked file
 * and an OpenCL device, or two devices), through a compact host copy of
 * the tile: filled from the source (the file's runs, or one device
 * block read), then drained into the destination the same way. */
static sw_status copy_tile_staged(const tiled_state *s, int64_t t,
                                  sw_carrier *src, sw_carrier *dst) {
    const sw_tile_geometry *g = &s->g;
    size_t isz = (size_t)sw_dtype_itemsize(sw_carrier_dtype(src));
    char *stage = sw_malloc((size_t)g->tile_size * isz);
    if (!stage)
        return sw_oom();
    int64_t run = tile_run(g), nruns = g->tile_size / run;
    sw_status st = SW_OK;
    for (int pass = 0; pass < 2 && !st; ++pass) {
        sw_carrier *c = pass == 0 ? src : dst;
        if (sw_carrier_is_file(c)) {
            for (int64_t r = 0; r < nruns && !st; ++r) {
                int64_t p = sw_tile_slot(g, t, r * run);
                char *at = stage + (size_t)(r * run) * isz;
                st = pass == 0 ? sw_file_read(c, p, run, at)
                               : sw_file_write(c, p, run, at);
            }
        } else {
            sw_cl_block b;
            tile_block_compact(g, t, pass == 1, &b);
            st = pass == 0 ? sw_opencl_block_read(c, stage, &b)
                           : sw_opencl_block_write(c, stage, &b);
        }
    }
    sw_free(stage);
    return st;
}

/* The device transfer of tile t between an OpenCL tier and a CPU,
 * FileBacked or OpenCL tier: the bulk moves' device write, read or copy
 * over the footprint, staged through the host with a file or between two
 * devices. *handled 0: another pair. */
static sw_status copy_tile_device(const tiled_state *s, int64_t t,
                                  sw_carrier *src, sw_carrier *dst,
                                  int *handled) {
    sw_cl_block b;
    tile_block(&s->g, t, &b);
    *handled = 1;
    if (sw_carrier_is_file(src) || sw_carrier_is_file(dst))
        return copy_tile_staged(s, t, src, dst);
    if (sw_carrier_is_opencl(src) && sw_carrier_is_cpu(dst))
        return sw_opencl_block_read(src, sw_cpu_data(dst), &b);
    if (sw_carrier_is_cpu(src) && sw_carrier_is_opencl(dst))
        return sw_opencl_block_write(dst, sw_cpu_data(src), &b);
    if (sw_carrier_is_opencl(src) && sw_carrier_is_opencl(dst)) {
        sw_status st = sw_opencl_block_copy(src, dst, &b, handled);
        if (st || *handled)
            return st;
        *handled = 1;
        return copy_tile_staged(s, t, src, dst);
    }
    *handled = 0;
    return SW_OK;
}

/* Copies tile t's footprint from tier src to tier dst (both owned by the
 * carrier: inside owner access). Its runs (tile_run) are contiguous: CPU
 * and FileBacked tiers copy them in bulk, an OpenCL tier moves the whole
 * footprint in device commands (through a host copy of the tile with a
 * file or another device), others go element by element. */
static sw_status copy_tile(const tiled_state *s, int64_t t, sw_carrier *src,
                           int64_t stoken, sw_carrier *dst, int64_t dtoken) {
    const sw_tile_geometry *g = &s->g;
    int64_t run = tile_run(g), nruns = g->tile_size / run;
    int64_t isz = sw_dtype_itemsize(sw_carrier_dtype(src));
    size_t esize = isz > 0 ? (size_t)isz : 0;
    int cpu_src = sw_carrier_is_cpu(src), cpu_dst = sw_carrier_is_cpu(dst);
    int file_src = sw_carrier_is_file(src), file_dst = sw_carrier_is_file(dst);
    sw_status st = sw_carrier_begin_owner_access(src, stoken);
    if (st)
        return st;
    if ((st = sw_carrier_begin_owner_access(dst, dtoken))) {
        (void)sw_carrier_end_owner_access(src, stoken);
        return st;
    }
    int handled = 0;
    if (esize && (sw_carrier_is_opencl(src) || sw_carrier_is_opencl(dst)))
        st = copy_tile_device(s, t, src, dst, &handled);
    if (handled)
        nruns = 0;
    for (int64_t r = 0; r < nruns && !st; ++r) {
        int64_t p = sw_tile_slot(g, t, r * run);
        if (esize && cpu_src && cpu_dst) {
            memcpy((char *)sw_cpu_data(dst) + (size_t)p * esize,
                   (const char *)sw_cpu_data(src) + (size_t)p * esize,
                   (size_t)run * esize);
        } else if (esize && file_src && cpu_dst) {
            st = sw_file_read(src, p, run,
                              (char *)sw_cpu_data(dst) + (size_t)p * esize);
        } else if (esize && cpu_src && file_dst) {
            st = sw_file_write(dst, p, run,
                               (const char *)sw_cpu_data(src) +
                                   (size_t)p * esize);
        } else {
            for (int64_t k = 0; k < run && !st; ++k) {
                sw_value v;
                st = sw_carrier_get(src, p + k, &v);
                if (!st) {
                    st = sw_carrier_set(dst, p + k, &v);
                    sw_value_clear(&v);
                }
            }
        }
    }
    (void)sw_carrier_end_owner_access(dst, dtoken);
    (void)sw_carrier_end_owner_access(src, stoken);
    return st;
}

/* Gives back the primary's memory under an evicted tile t when the
 * primary is CPU: the secondary holds its values now. */
static void discard_tile(const tiled_state *s, int64_t t) {
    if (!sw_carrier_is_cpu(s->primary))
        return;
    int64_t run = tile_run(&s->g), nruns = s->g.tile_size / run;
    for (int64_t r = 0; r < nruns; ++r)
        sw_cpu_discard(s->primary, sw_tile_slot(&s->g, t, r * run), run);
}

/* Writes zeros over tile t's footprint of an OpenCL tier: one device
 * write from zeroed host memory laid out as the tile. */
static sw_status zero_tile_device(const tiled_state *s, int64_t t,
                                  sw_carrier *dst) {
    const sw_tile_geometry *g = &s->g;
    int64_t isz = sw_dtype_itemsize(sw_carrier_dtype(dst));
    void *zeros = sw_calloc((size_t)g->tile_size, (size_t)isz);
    if (!zeros)
        return sw_oom();
    sw_cl_block b;
    tile_block_compact(g, t, 1, &b);
    sw_status st = sw_opencl_block_write(dst, zeros, &b);
    sw_free(zeros);
    return st;
}

/* Writes zeros over tile t's footprint in tier dst. */
static sw_status zero_tile(const tiled_state *s, int64_t t, sw_carrier *dst,
                           int64_t token) {
    sw_status st = sw_carrier_begin_owner_access(dst, token);
    if (st)
        return st;
    if (sw_carrier_is_opencl(dst) &&
        sw_dtype_itemsize(sw_carrier_dtype(dst)) > 0) {
        st = zero_tile_device(s, t, dst);
        (void)sw_carrier_end_owner_access(dst, token);
        return st;
    }
    sw_value zero = sw_carrier_dtype(dst) == SW_DTYPE_INT32 ||
                            sw_carrier_dtype(dst) == SW_DTYPE_ANY
                        ? sw_value_i64(0)
                        : sw_value_f64(0.0);
    for (int64_t k = 0; k < s->g.tile_size && !st; ++k)
        st = sw_carrier_set(dst, sw_tile_slot(&s->g, t, k), &zero);
    (void)sw_carrier_end_owner_access(dst, token);
    return st;
}

/*
 * Prepares the promotions of n tiles from a FileBacked secondary into a
 * CPU primary, before any is copied: the disk reads of every tile start
 * at once, then the primary's pages under them are mapped in one call
 * each while the disk works. The copies then wait for one round of reads
 * instead of a round each, and do not fault page by page inside the
 * reads (the primary gave those pages back when the tiles were evicted).
 * A thread that runs beside computation and waits for a core after each
 * read gains most. Under the lock; only hints, nothing can fail.
 */
static void will_promote(const tiled_state *s, const int64_t *tiles,
                         int64_t n) {
    if (!sw_carrier_is_file(s->secondary))
        return;
    int64_t run = tile_run(&s->g), nruns = s->g.tile_size / run;
    for (int pass = 0; pass < 2; ++pass)
        for (int64_t i = 0; i < n; ++i) {
            if (!s->valid[tiles[i]] || s->loc[tiles[i]] != SW_TILE_SECONDARY)
                continue;
            for (int64_t r = 0; r < nruns; ++r) {
                int64_t p = sw_tile_slot(&s->g, tiles[i], r * run);
                if (pass == 0)
                    sw_file_will_read(s->secondary, p, run);
                else
                    sw_cpu_populate(s->primary, p, run);
            }
        }
}

/* Makes tile t primary and valid; under the lock. */
static sw_status promote_locked(tiled_state *s, int64_t t) {
    if (s->loc[t] == SW_TILE_PRIMARY)
        return SW_OK;
    sw_status st =
        s->loc[t] == SW_TILE_IMPLICIT
            ? zero_tile(s, t, s->primary, s->ptoken)
            : copy_tile(s, t, s->secondary, s->stoken, s->primary, s->ptoken);
    if (!st) {
        s->backed[t] = s->loc[t] == SW_TILE_SECONDARY;
        s->loc[t] = SW_TILE_PRIMARY;
        s->dirty[t] = 0;
    }
    return st;
}

/* ---------------------------------------------------------------- work */

/* What one piece of work pinned and what its plan evicts afterwards. */
typedef struct work_ticket {
    sw_carrier *c;
    int64_t npinned, nevict;
    int64_t *pinned, *evict; /* one allocation */
} work_ticket;

static sw_status plan_tiles(const tiled_state *s, const int64_t *tiles,
                            int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (tiles[i] < 0 || tiles[i] >= s->g.ntiles)
            return sw_fail(SW_EVALUE,
                           "the residency plan names tile index %lld, "
                           "outside the grid",
                           (long long)tiles[i]);
    return SW_OK;
}

/*
 * Starts work that requires n tiles of c for purpose: the plan (the
 * policy's, once, or promote what is required), the promotions, the pins.
 * Nothing has moved when it fails.
 */
static sw_status work_begin(sw_carrier *c, const int64_t *required, int64_t n,
                            const char *purpose, work_ticket *w) {
    tiled_state *s = sw_carrier_defined_data(c);
    memset(w, 0, sizeof *w);
    sw_residency_plan plan = {n, 0, 0, required, NULL, NULL};
    int asked = s->policy.plan != NULL;
    sw_status st = SW_OK;
    if (asked) {
        memset(&plan, 0, sizeof plan);
        st = s->policy.plan(s->policy.ctx, c, required, n, purpose, &plan);
        if (!st && (plan.npromote < 0 || plan.nretain < 0 || plan.nevict < 0))
            st = sw_fail(SW_EVALUE, "a residency plan has negative counts");
        if (!st)
            st = plan_tiles(s, plan.promote, plan.npromote);
        if (!st)
            st = plan_tiles(s, plan.retain, plan.nretain);
        if (!st)
            st = plan_tiles(s, plan.evict, plan.nevict);
    }
    int64_t npin = n + (asked ? plan.nretain : 0);
    int64_t *block = NULL;
    if (!st) {
        block = sw_malloc((size_t)(npin + plan.nevict + 1) * sizeof *block);
        if (!block)
            st = sw_oom();
    }
    if (!st) {
        memcpy(block, required, (size_t)n * sizeof *block);
        if (asked && plan.nretain)
            memcpy(block + n, plan.retain,
                   (size_t)plan.nretain * sizeof *block);
        if (plan.nevict)
            memcpy(block + npin, plan.evict,
                   (size_t)plan.nevict * sizeof *block);
    }
    /* The promotions: the plan's, then whatever is required. */
    pthread_mutex_lock(&s->lock);
    if (!st) {
        if (asked)
            will_promote(s, plan.promote, plan.npromote);
        will_promote(s, required, n);
    }
    for (int64_t i = 0; !st && asked && i < plan.npromote; ++i)
        if (s->valid[plan.promote[i]])
            st = promote_locked(s, plan.promote[i]);
    for (int64_t i = 0; !st && i < n; ++i)
        if (s->valid[required[i]])
            st = promote_locked(s, required[i]);
    for (int64_t i = 0; !st && i < npin; ++i)
        s->pins[block[i]]++;
    pthread_mutex_unlock(&s->lock);
    if (asked && s->policy.done) {
        /* The failure being reported outlives what done does. */
        char msg[512];
        int err = sw_errno();
        snprintf(msg, sizeof msg, "%s", st ? sw_errmsg() : "");
        s->policy.done(s->policy.ctx, &plan);
        if (st)
            sw_restore_error(st, err, msg);
    }
    if (st) {
        sw_free(block);
        return st;
    }
    w->c = c;
    w->pinned = block;
    w->npinned = npin;
    w->evict = block + npin;
    w->nevict = plan.nevict;
    return SW_OK;
}

static sw_status residency(sw_carrier *c, int64_t n, const int64_t *tiles,
                           int evict);

/* Ends the work: unpins, then evicts what the plan said (its failure
 * has no caller: the tiles stay where they are). */
static void work_end(work_ticket *w) {
    if (!w->c)
        return;
    tiled_state *s = sw_carrier_defined_data(w->c);
    pthread_mutex_lock(&s->lock);
    for (int64_t i = 0; i < w->npinned; ++i)
        s->pins[w->pinned[i]]--;
    pthread_mutex_unlock(&s->lock);
    if (w->nevict && residency(w->c, w->nevict, w->evict, 1))
        sw_clear_error();
    sw_free(w->pinned);
    w->c = NULL;
}

/* Every tile index of c's grid, for work on the whole tensor. */
static sw_status all_tiles(const tiled_state *s, int64_t **out) {
    int64_t *t = sw_malloc((size_t)s->g.ntiles * sizeof *t);
    if (!t)
        return sw_oom();
    for (int64_t i = 0; i < s->g.ntiles; ++i)
        t[i] = i;
    *out = t;
    return SW_OK;
}

sw_status sw_tiled_work_begin(sw_carrier *c, const char *purpose,
                              void **ticket) {
    const tiled_state *s = sw_carrier_defined_data(c);
    work_ticket *w = sw_malloc(sizeof *w);
    int64_t *tiles = NULL;
    sw_status st = w ? all_tiles(s, &tiles) : sw_oom();
    if (!st)
        st = work_begin(c, tiles, s->g.ntiles, purpose, w);
    sw_free(tiles);
    if (st) {
        sw_free(w);
        return st;
    }
    *ticket = w;
    return SW_OK;
}

void sw_tiled_work_end(void *ticket) {
    if (!ticket)
        return;
    work_end(ticket);
    sw_free(ticket);
}

/* ------------------------------------------------------------ storage */

static sw_status t_supports(void *ctx, sw_carrier *c, sw_dtype d, int *out) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(c);
    *out = s && sw_carrier_supports_storage_dtype(s->primary, d) &&
           sw_carrier_supports_storage_dtype(s->secondary, d);
    return SW_OK;
}

static sw_status t_allocate(void *ctx, sw_carrier *c, int64_t slots) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(c);
    if (!s || slots != s->g.size)
        return sw_fail(SW_EVALUE, "a TiledEvictable is made by sw_tiled_new");
    return SW_OK;
}

static sw_status t_size(void *ctx, sw_carrier *c, int64_t *out) {
    (void)ctx;
    const tiled_state *s = sw_carrier_defined_data(c);
    *out = s ? s->g.size : 0;
    return SW_OK;
}

/* Releases a tier under owner access and gives it up. */
static void drop_tier(sw_carrier *tier, int64_t token) {
    if (sw_carrier_begin_owner_access(tier, token) == SW_OK) {
        if (sw_carrier_release_storage(tier))
            sw_clear_error();
        (void)sw_carrier_end_owner_access(tier, token);
    }
    (void)sw_carrier_relinquish(tier, token);
}

static void free_state(tiled_state *s) {
    if (!s)
        return;
    if (s->primary)
        drop_tier(s->primary, s->ptoken);
    if (s->secondary)
        drop_tier(s->secondary, s->stoken);
    sw_carrier_unref(s->primary);
    sw_carrier_unref(s->secondary);
    if (s->policy.drop)
        s->policy.drop(s->policy.ctx);
    sw_free(s->loc);
    sw_free(s->pins);
    pthread_mutex_destroy(&s->lock);
    sw_free(s);
}

static sw_status t_release(void *ctx, sw_carrier *c) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(c);
    if (s) {
        pthread_mutex_lock(&s->lock);
        int64_t pending = s->pending;
        pthread_mutex_unlock(&s->lock);
        if (pending)
            return sw_fail(SW_ERUNTIME,
                           "TiledEvictable has %lld pending request%s: wait "
                           "for them before releasing it",
                           (long long)pending, pending == 1 ? "" : "s");
    }
    free_state(s);
    sw_carrier_defined_set_data(c, NULL);
    return SW_OK;
}

static sw_status invalid_tile(const tiled_state *s, int64_t t, int write) {
    char a[96];
    return write ? sw_fail(SW_ERUNTIME,
                           "tile %s of TiledEvictable is invalid: its "
                           "initialization must come from a write to a "
                           "valid tile or a promotion",
                           tile_text(&s->g, t, a, sizeof a))
                 : sw_fail(SW_ERUNTIME,
                           "tile %s of TiledEvictable is invalid: it must be "
                           "promoted or written first",
                           tile_text(&s->g, t, a, sizeof a));
}

static sw_status t_read(void *ctx, sw_carrier *c, int64_t i, sw_value *out) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(c);
    int64_t t = sw_tile_of_slot(&s->g, i);
    pthread_mutex_lock(&s->lock);
    sw_status st = SW_OK;
    if (!s->valid[t]) {
        st = invalid_tile(s, t, 0);
    } else if (s->loc[t] == SW_TILE_IMPLICIT) {
        sw_dtype d = sw_carrier_dtype(s->primary);
        *out = d == SW_DTYPE_INT32 || d == SW_DTYPE_ANY ? sw_value_i64(0)
                                                        : sw_value_f64(0.0);
    } else {
        sw_carrier *tier =
            s->loc[t] == SW_TILE_PRIMARY ? s->primary : s->secondary;
        int64_t token = s->loc[t] == SW_TILE_PRIMARY ? s->ptoken : s->stoken;
        st = sw_carrier_begin_owner_access(tier, token);
        if (!st) {
            st = sw_carrier_get(tier, i, out);
            (void)sw_carrier_end_owner_access(tier, token);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

static sw_status t_write(void *ctx, sw_carrier *c, int64_t i,
                         const sw_value *v) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(c);
    int64_t t = sw_tile_of_slot(&s->g, i);
    pthread_mutex_lock(&s->lock);
    sw_status st = SW_OK;
    if (s->holds[t] > 0) {
        char a[96];
        st = sw_fail(SW_ERUNTIME,
                     "tile %s is pinned by a pending projection or scatter: "
                     "wait for it before writing",
                     tile_text(&s->g, t, a, sizeof a));
    } else {
        st = s->valid[t] ? promote_locked(s, t) : invalid_tile(s, t, 1);
    }
    if (!st) {
        st = sw_carrier_begin_owner_access(s->primary, s->ptoken);
        if (!st) {
            st = sw_carrier_set(s->primary, i, v);
            (void)sw_carrier_end_owner_access(s->primary, s->ptoken);
        }
        if (!st) {
            s->dirty[t] = 1;
            s->backed[t] = 0;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ---------------------------------------------------------- composite */

/* The operations a full TiledEvictable tensor runs directly. */
static int direct_op(int32_t id) {
    return id == SW_OP_ADD || id == SW_OP_ELEMENTWISE_MUL || id == SW_OP_MUL ||
           id == SW_OP_RELU || id == SW_OP_REDUCE || id == SW_OP_MATMUL;
}

/* The instance's capabilities: its primary's plans of the direct
 * operations (they run on the primary's class). */
static sw_status t_caps(void *ctx, sw_carrier *c, const sw_op_capability **out,
                        int64_t *n) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(c);
    sw_capability_list l;
    sw_status st = sw_carrier_capabilities(s->primary, &l);
    if (st)
        return st;
    sw_op_capability *a = sw_malloc((size_t)l.count * sizeof *a + 1);
    if (!a)
        return sw_oom();
    int64_t k = 0;
    for (int64_t i = 0; i < l.count; ++i)
        if (direct_op(l.items[i].op))
            a[k++] = l.items[i];
    *out = a;
    *n = k;
    return SW_OK;
}

static void t_caps_done(void *ctx, sw_carrier *c,
                        const sw_op_capability *entries) {
    (void)ctx;
    (void)c;
    sw_free((void *)entries);
}

static sw_status t_results(void *ctx, const sw_kernel_invocation *inv,
                           const void **classes) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(inv->carrier);
    for (int32_t k = 0; k < inv->resolution->nresults; ++k)
        classes[k] = sw_carrier_class_tag(s->primary);
    return SW_OK;
}

/* Every tiled operand must be a full, tile-compatible tensor: checked
 * before anything runs. */
static sw_status t_prepare(void *ctx, const sw_kernel_invocation *inv,
                           void **work, int *unsupported, char *reason,
                           size_t size) {
    (void)ctx;
    (void)unsupported;
    (void)reason;
    (void)size;
    *work = NULL;
    for (int32_t i = 0; i < inv->call->noperands; ++i) {
        const sw_arg *a = &inv->call->operands[i];
        if (a->kind != SW_ARG_TENSOR ||
            !sw_carrier_is_tiled(a->as.tensor->carrier))
            continue;
        const sw_tensor *t = a->as.tensor;
        tiled_state *s = sw_carrier_defined_data(t->carrier);
        if (!s || sw_carrier_is_released(t->carrier))
            return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
        sw_status st = sw_tile_check_footprints(&s->g, t->offset, t->layout);
        if (st)
            return st;
    }
    return SW_OK;
}

/* The span [offset, offset + n) of the primary into d (a carrier of the
 * primary's class and dtype) in bulk, when every tile is valid and
 * primary (the work promoted them): one memcpy from a CPU primary, one
 * device copy on an OpenCL one. *done 0: not so, another device, or
 * another tier class (the caller copies element by element). */
static sw_status densify_resident(tiled_state *s, int64_t offset, int64_t n,
                                  sw_carrier *d, int *done) {
    *done = 0;
    int cpu = sw_carrier_is_cpu(s->primary) && sw_carrier_is_cpu(d);
    int device = sw_carrier_is_opencl(s->primary);
    int64_t isz = sw_dtype_itemsize(sw_carrier_dtype(s->primary));
    if ((!cpu && !device) || isz <= 0 ||
        sw_carrier_dtype(d) != sw_carrier_dtype(s->primary))
        return SW_OK;
    pthread_mutex_lock(&s->lock);
    int resident = 1;
    for (int64_t t = 0; t < s->g.ntiles && resident; ++t)
        resident = s->valid[t] && s->loc[t] == SW_TILE_PRIMARY;
    sw_status st = SW_OK;
    if (resident &&
        !(st = sw_carrier_begin_owner_access(s->primary, s->ptoken))) {
        if (cpu) {
            if (n > 0)
                memcpy(sw_cpu_data(d),
                       (const char *)sw_cpu_data(s->primary) +
                           (size_t)offset * (size_t)isz,
                       (size_t)n * (size_t)isz);
            *done = 1;
        } else {
            sw_cl_block b;
            memset(&b, 0, sizeof b);
            b.rank = 1;
            b.extent[0] = n;
            b.src_at = offset;
            b.src_stride[0] = b.dst_stride[0] = 1;
            st = sw_opencl_block_copy(s->primary, d, &b, done);
        }
        (void)sw_carrier_end_owner_access(s->primary, s->ptoken);
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* A dense copy of a full tiled tensor on its primary's class: the same
 * layout at offset 0 (slot j holds tiled slot offset + j). */
static sw_status densify(const sw_tensor *t, sw_tensor **out) {
    tiled_state *s = sw_carrier_defined_data(t->carrier);
    int64_t n = t->layout->cosize;
    sw_carrier *d = NULL;
    int done = 0;
    /* Every slot of d is written below: it needs no zeros. */
    sw_status st = sw_carrier_allocate_like(
        s->primary, n, 1, sw_carrier_dtype(t->carrier), 1, &d);
    if (!st)
        st = densify_resident(s, t->offset, n, d, &done);
    for (int64_t j = 0; j < n && !st && !done; ++j) {
        sw_value v;
        st = sw_carrier_get(t->carrier, t->offset + j, &v);
        if (!st) {
            st = sw_carrier_set(d, j, &v);
            sw_value_clear(&v);
        }
    }
    if (!st)
        st = sw_tensor_new(d, 0, t->layout, out);
    sw_carrier_unref(d);
    return st;
}

sw_status sw_tiled_densify(const sw_tensor *t, sw_tensor **out) {
    if (!t || !sw_carrier_is_tiled(t->carrier) ||
        !sw_carrier_defined_data(t->carrier) ||
        sw_carrier_is_released(t->carrier))
        return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
    return densify(t, out);
}

/* r laid out by layout on a fresh carrier of r's class, if it is not. */
static sw_status relaid(sw_tensor *r, sw_layout *layout, sw_tensor **out) {
    if (r->offset == 0 && sw_layout_equal(r->layout, layout) &&
        sw_carrier_size(r->carrier) == layout->cosize) {
        *out = sw_tensor_retain(r);
        return SW_OK;
    }
    sw_carrier *c = NULL;
    sw_status st = sw_carrier_allocate_like(
        r->carrier, layout->cosize, 1, sw_carrier_dtype(r->carrier), 0, &c);
    sw_tensor *t = NULL;
    if (!st)
        st = sw_tensor_new(c, 0, layout, &t);
    sw_carrier_unref(c);
    for (int64_t i = 0; i < layout->size && !st; ++i) {
        sw_value v;
        st = sw_tensor_get(r, i, &v);
        if (!st) {
            st = sw_tensor_set(t, i, &v);
            sw_value_clear(&v);
        }
    }
    if (st) {
        sw_tensor_unref(t);
        return st;
    }
    *out = t;
    return SW_OK;
}

/* Runs the operation on dense copies of the tiled operands, on the
 * primary's class, and lays the result out as declared. */
static sw_status t_submit(void *ctx, void *work,
                          const sw_kernel_invocation *inv,
                          sw_tensor **results) {
    (void)ctx;
    (void)work;
    sw_arg args[SW_DEF_MAX_OPERANDS];
    sw_tensor *dense[SW_DEF_MAX_OPERANDS] = {NULL};
    void *tickets[SW_DEF_MAX_OPERANDS] = {NULL};
    int32_t n = inv->call->noperands;
    sw_status st = SW_OK;
    for (int32_t i = 0; i < n && !st; ++i) {
        args[i] = inv->call->operands[i];
        sw_carrier *c =
            args[i].kind == SW_ARG_TENSOR ? args[i].as.tensor->carrier : NULL;
        if (!c || !sw_carrier_is_tiled(c))
            continue;
        /* The whole operand is required: the policy decides the rest. */
        st = sw_tiled_work_begin(c, "operation", &tickets[i]);
        if (!st && !(st = densify(args[i].as.tensor, &dense[i])))
            args[i] = sw_arg_tensor(dense[i]);
    }
    sw_op *op = NULL;
    sw_tensor *r = NULL;
    if (!st)
        st = sw_carrier_dispatch_id(args[0].as.tensor->carrier, inv->op->id,
                                    &op);
    if (!st)
        st = sw_op_execute_lowered(op, n, args, &r);
    sw_op_unref(op);
    if (!st)
        st = relaid(r, inv->resolution->results[0].layout, &results[0]);
    sw_tensor_unref(r);
    for (int32_t i = 0; i < n; ++i) {
        sw_tensor_unref(dense[i]);
        sw_tiled_work_end(tickets[i]);
    }
    return st;
}

/* new_like and allocate_like: a TiledEvictable of the same geometry over
 * fresh tiers of the same classes, every tile a valid implicit zero. */
static sw_status t_make(void *ctx, sw_carrier *like, int64_t slots,
                        sw_dtype dtype, int mutable_, sw_carrier **out);

static pthread_once_t define_once = PTHREAD_ONCE_INIT;
static sw_status define_status;

static void define_tiled(void) {
    sw_carrier_definition d;
    memset(&d, 0, sizeof d);
    d.version = SW_CARRIER_DEFINITION_VERSION;
    d.name = "TiledEvictable";
    d.storage = (sw_storage_provider){SW_STORAGE_PROVIDER_VERSION,
                                      NULL,
                                      t_supports,
                                      t_allocate,
                                      t_size,
                                      t_release,
                                      t_read,
                                      t_write,
                                      0};
    d.dependent = 1;
    d.has_composite = 1;
    d.composite = (sw_composite_decl){
        NULL, t_caps, t_caps_done, t_results, t_prepare, t_submit, NULL};
    d.make = t_make;
    define_status = sw_carrier_define(&tiled_tag, &d);
}

static sw_status ensure_defined(void) {
    pthread_once(&define_once, define_tiled);
    return define_status
               ? sw_fail(define_status, "TiledEvictable could not be defined")
               : SW_OK;
}

static sw_status check_tier(sw_carrier *t, const char *which) {
    if (!t)
        return sw_fail(SW_ETYPE, "%s tier carrier is missing", which);
    if (sw_carrier_is_tiled(t))
        return sw_fail(SW_ETYPE, "%s tier must not be a TiledEvictable", which);
    if (sw_carrier_is_released(t))
        return sw_fail(SW_ERUNTIME, "%s tier carrier is released", which);
    if (sw_carrier_is_owned(t))
        return sw_fail(SW_ERUNTIME,
                       "%s tier carrier is already owned by another carrier",
                       which);
    return SW_OK;
}

/* Storage whose empty carrier grows to a size on demand: a
 * FileBacked file, an OpenCL device buffer. */
static int growable(const sw_carrier *c) {
    return sw_carrier_is_file(c) || sw_carrier_is_opencl(c);
}

static sw_status grow_empty(sw_carrier *c, int64_t size) {
    return sw_carrier_is_opencl(c) ? sw_opencl_grow_empty(c, size)
                                   : sw_file_resize(c, size);
}

/*
 * An OpenCL tier exchanges tiles only over the exact bulk moves between
 * the tier classes (device writes, reads and copies), as an Evictable's
 * tiers: with only the elementwise fallback between them (OpenCL and
 * Generic, say), every slot would be a device round trip, so the pair is
 * refused before anything is claimed or grown.
 */
static sw_status check_device_pair(const sw_carrier *a, const sw_carrier *b) {
    const sw_move_class *cls = NULL;
    sw_status st = sw_move_resolve(a, b, &cls);
    if (st)
        return st;
    if (cls != sw_move_elementwise())
        return SW_OK;
    sw_move_key x = sw_move_key_of(a), y = sw_move_key_of(b);
    return sw_fail(SW_ERUNTIME,
                   "an OpenCL TiledEvictable tier needs an exact registered "
                   "move operation for (%s, %s) in both directions",
                   x.name ? x.name : "?", y.name ? y.name : "?");
}

static sw_status check_device_tiers(const sw_carrier *primary,
                                    const sw_carrier *secondary) {
    if (!sw_carrier_is_opencl(primary) && !sw_carrier_is_opencl(secondary))
        return SW_OK;
    sw_status st = check_device_pair(primary, secondary);
    return st ? st : check_device_pair(secondary, primary);
}

/* Builds the carrier; initial selects the tiles' start: 0 from the tiers'
 * sizes, 1 every tile implicit zero. */
static sw_status make_tiled(sw_carrier *primary, sw_carrier *secondary,
                            const sw_tile_geometry *g, int implicit,
                            int mutable_, sw_carrier **out) {
    sw_status st = check_tier(primary, "primary");
    if (!st)
        st = check_tier(secondary, "secondary");
    if (st)
        return st;
    if (primary == secondary)
        return sw_fail(SW_EVALUE,
                       "primary and secondary must be distinct carriers");
    sw_dtype dtype = sw_carrier_dtype(primary);
    if (dtype != sw_carrier_dtype(secondary))
        return sw_fail(SW_ETYPE, "primary and secondary dtypes must match");
    if (!sw_carrier_is_mutable(secondary))
        return sw_fail(SW_ERUNTIME, "secondary tier carrier must be mutable");
    int64_t psize = sw_carrier_size(primary),
            ssize = sw_carrier_size(secondary);
    if (psize != 0 && psize != g->size)
        return sw_fail(SW_EVALUE,
                       "primary tier holds %lld slots, not the full extent "
                       "%lld",
                       (long long)psize, (long long)g->size);
    if (ssize != 0 && ssize != g->size)
        return sw_fail(SW_EVALUE,
                       "secondary tier holds %lld slots, not the full extent "
                       "%lld",
                       (long long)ssize, (long long)g->size);
    if ((st = check_device_tiers(primary, secondary)))
        return st;
    if ((st = ensure_defined()))
        return st;
    /* Every check is done: grow what is empty, then claim. */
    for (int k = 0; k < 2; ++k) {
        sw_carrier *tier = k ? secondary : primary;
        if (sw_carrier_size(tier) == g->size)
            continue;
        if (!growable(tier))
            return sw_fail(SW_EVALUE,
                           "an empty %s tier must be able to grow to the "
                           "extent %lld (a FileBacked or OpenCL tier)",
                           k ? "secondary" : "primary", (long long)g->size);
        if ((st = grow_empty(tier, g->size)))
            return st;
    }
    tiled_state *s = sw_calloc(1, sizeof *s);
    uint8_t *flags = sw_calloc((size_t)g->ntiles, 5);
    int32_t *pins = sw_calloc((size_t)g->ntiles, 2 * sizeof *pins);
    if (!s || !flags || !pins) {
        sw_free(s);
        sw_free(flags);
        sw_free(pins);
        return sw_oom();
    }
    s->pins = pins;
    s->holds = pins + g->ntiles;
    s->g = *g;
    s->loc = flags;
    s->valid = flags + g->ntiles;
    s->dirty = flags + 2 * g->ntiles;
    s->backed = flags + 3 * g->ntiles;
    s->claims = flags + 4 * g->ntiles;
    pthread_mutex_init(&s->lock, NULL);
    for (int64_t t = 0; t < g->ntiles; ++t) {
        s->loc[t] = implicit     ? SW_TILE_IMPLICIT
                    : psize != 0 ? SW_TILE_PRIMARY
                                 : SW_TILE_SECONDARY;
        s->valid[t] = implicit || psize != 0 || ssize != 0;
        s->backed[t] = !implicit && psize == 0 && ssize != 0;
    }
    int64_t pt = 0, stk = 0;
    st = sw_carrier_claim(primary, &pt);
    if (!st && (st = sw_carrier_claim(secondary, &stk)))
        (void)sw_carrier_relinquish(primary, pt);
    if (st) {
        sw_free(flags);
        sw_free(pins);
        pthread_mutex_destroy(&s->lock);
        sw_free(s);
        return st;
    }
    s->primary = sw_carrier_retain(primary);
    s->secondary = sw_carrier_retain(secondary);
    s->ptoken = pt;
    s->stoken = stk;
    sw_carrier *c = NULL;
    st = sw_carrier_defined_new(&tiled_tag, &c);
    if (!st) {
        sw_carrier_defined_set_data(c, s);
        st = sw_carrier_defined_allocate(c, g->size, dtype, mutable_);
    }
    if (!st)
        st = sw_carrier_defined_finalize(c);
    if (st) {
        /* The tiers go back as they were, unreleased: the carrier forgets
         * its state before it goes. */
        if (c) {
            sw_carrier_defined_set_data(c, NULL);
            sw_carrier_unref(c);
        }
        (void)sw_carrier_relinquish(primary, pt);
        (void)sw_carrier_relinquish(secondary, stk);
        sw_carrier_unref(s->primary);
        sw_carrier_unref(s->secondary);
        sw_free(flags);
        sw_free(pins);
        pthread_mutex_destroy(&s->lock);
        sw_free(s);
        return st;
    }
    /* Tiles leave a CPU primary one by one (discard_tile): its memory is
     * kept in small pages, so that what goes is what an evicted tile held. */
    if (tile_run(g) * sw_dtype_itemsize(dtype) < ((int64_t)2 << 20))
        sw_cpu_small_pages(primary);
    *out = c;
    return SW_OK;
}

sw_status sw_tiled_new(sw_carrier *primary, sw_carrier *secondary, int32_t rank,
                       const int64_t *grid, const int64_t *tile,
                       sw_carrier **out) {
    sw_tile_geometry g;
    sw_status st = sw_tile_geometry_init(rank, grid, tile, &g);
    return st ? st : make_tiled(primary, secondary, &g, 0, 1, out);
}

static sw_status t_make(void *ctx, sw_carrier *like, int64_t slots,
                        sw_dtype dtype, int mutable_, sw_carrier **out) {
    (void)ctx;
    tiled_state *s = sw_carrier_defined_data(like);
    if (!s)
        return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
    if (slots != s->g.size)
        return sw_fail(SW_EVALUE,
                       "a TiledEvictable like this one holds exactly %lld "
                       "slots, not %lld",
                       (long long)s->g.size, (long long)slots);
    sw_carrier *p = NULL, *q = NULL;
    sw_status st = sw_carrier_allocate_like(s->primary, slots, 1, dtype, 0, &p);
    if (!st)
        st = sw_carrier_allocate_like(s->secondary, slots, 1, dtype, 0, &q);
    if (!st)
        st = make_tiled(p, q, &s->g, 1, mutable_, out);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
    return st;
}

sw_status sw_tiled_adopt(sw_carrier *like, sw_carrier *dense,
                         sw_carrier **out) {
    tiled_state *s = tstate(like);
    if (!s || sw_carrier_is_released(like))
        return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
    if (!dense ||
        sw_carrier_class_tag(dense) != sw_carrier_class_tag(s->primary))
        return sw_fail(SW_ETYPE, "an adopted primary must be of the primary "
                                 "tier's class");
    sw_carrier *q = NULL;
    /* No zeros: a tile the secondary does not back is written to it
     * before it is ever read from there. */
    sw_status st = sw_carrier_allocate_like(s->secondary, s->g.size, 1,
                                            sw_carrier_dtype(dense), 1, &q);
    if (!st)
        st = make_tiled(dense, q, &s->g, 0, 1, out);
    sw_carrier_unref(q);
    return st;
}

sw_status sw_tiled_copy_of(sw_carrier *like, sw_layout *layout,
                           const sw_tensor *src, sw_tensor **out, int *done) {
    tiled_state *s = tstate(like);
    *done = 0;
    if (!s || sw_carrier_is_released(like) || layout->cosize != s->g.size ||
        sw_carrier_class_tag(src->carrier) != sw_carrier_class_tag(s->primary))
        return SW_OK;
    *done = 1;
    sw_carrier *d = NULL, *c = NULL;
    sw_tensor *dt = NULL;
    sw_status st = SW_OK;
    /* src's own carrier when it holds the slots as they are and nothing
     * can see it but the caller: one reference to src and from src, no
     * host peers, no pin, owner or move, and writable. */
    sw_carrier *sc = src->carrier;
    if (src->offset == 0 && sw_layout_equal(src->layout, layout) &&
        sw_carrier_size(sc) == s->g.size &&
        sw_carrier_dtype(sc) == sw_carrier_dtype(like) &&
        atomic_load(&((sw_tensor *)src)->obj.ref) == 1 && !src->obj.peer &&
        atomic_load(&sc->obj.ref) == 1 && !sc->obj.peer &&
        atomic_load(&sc->life) == 0 && !sc->owner_token &&
        atomic_load(&sc->move_pending) == 0 && sw_carrier_is_mutable(sc))
        d = sw_carrier_retain(sc);
    else
        st = sw_carrier_allocate_like(s->primary, s->g.size, 1,
                                      sw_carrier_dtype(like), 0, &d);
    if (!st && d != sc)
        st = sw_tensor_new(d, 0, layout, &dt);
    if (!st && dt)
        st = sw_carrier_scatter(d, src, dt, layout, 0);
    if (!st)
        st = sw_tiled_adopt(like, d, &c);
    if (!st)
        st = sw_tensor_new(c, 0, layout, out);
    sw_tensor_unref(dt);
    sw_carrier_unref(d);
    sw_carrier_unref(c);
    return st;
}

/* ------------------------------------------------------------ queries */

const sw_tile_geometry *sw_tiled_geometry(const sw_carrier *c) {
    tiled_state *s = tstate(c);
    return s ? &s->g : NULL;
}

sw_carrier *sw_tiled_primary(const sw_carrier *c) {
    tiled_state *s = tstate(c);
    return s ? s->primary : NULL;
}

sw_carrier *sw_tiled_secondary(const sw_carrier *c) {
    tiled_state *s = tstate(c);
    return s ? s->secondary : NULL;
}

static sw_status state_for(const sw_carrier *c, tiled_state **out) {
    if (!sw_carrier_is_tiled(c))
        return sw_fail(SW_ETYPE, "carrier is not a TiledEvictable");
    tiled_state *s = sw_carrier_defined_data(c);
    if (!s || sw_carrier_is_released(c))
        return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
    *out = s;
    return SW_OK;
}

sw_status sw_tiled_tile_state(const sw_carrier *c, int64_t t,
                              sw_tile_location *location, int *valid,
                              int *dirty) {
    tiled_state *s = NULL;
    sw_status st = state_for(c, &s);
    if (st)
        return st;
    if (t < 0 || t >= s->g.ntiles)
        return sw_fail(SW_EVALUE, "tile index %lld is outside the grid",
                       (long long)t);
    pthread_mutex_lock(&s->lock);
    *location = (sw_tile_location)s->loc[t];
    *valid = s->valid[t];
    *dirty = s->dirty[t];
    pthread_mutex_unlock(&s->lock);
    return SW_OK;
}

/* ---------------------------------------------------------- residency */

static sw_status conflict(const tiled_state *s, int64_t t) {
    char a[96];
    return sw_fail(SW_ERUNTIME,
                   "tile %s has a pending residency request: wait for it "
                   "first (conflict)",
                   tile_text(&s->g, t, a, sizeof a));
}

/* The checks of a residency request, under the lock: the tiles, and no
 * overlap with a pending request's claim (claimed: the request's own). */
static sw_status check_request(const tiled_state *s, int64_t n,
                               const int64_t *tiles, uint8_t *mark,
                               int claimed) {
    for (int64_t i = 0; i < n; ++i) {
        int64_t t = tiles[i];
        if (t < 0 || t >= s->g.ntiles)
            return sw_fail(SW_EVALUE, "tile index %lld is outside the grid",
                           (long long)t);
        if (mark[t])
            return sw_fail(SW_EVALUE, "duplicate tile index %lld",
                           (long long)t);
        mark[t] = 1;
        if (!s->valid[t])
            return invalid_tile(s, t, 0);
        if (!claimed && s->claims[t])
            return conflict(s, t);
    }
    return SW_OK;
}

/* The state of c for a residency request of n tiles. */
static sw_status request_state(const sw_carrier *c, int64_t n,
                               const int64_t *tiles, tiled_state **out) {
    sw_status st = state_for(c, out);
    if (!st && (n < 0 || (n > 0 && !tiles)))
        st = sw_fail(SW_EVALUE, "tile count %lld without tiles", (long long)n);
    return st;
}

/* promote (evict 0) or evict n tiles, all or nothing; claimed: the tiles
 * are this request's claim. */
static sw_status residency_of(sw_carrier *c, int64_t n, const int64_t *tiles,
                              int evict, int claimed) {
    tiled_state *s = NULL;
    sw_status st = request_state(c, n, tiles, &s);
    if (st)
        return st;
    /* Scratch: the marks of the request, then the states to roll back. */
    uint8_t *mark = sw_calloc((size_t)s->g.ntiles + 1, 1);
    uint8_t *saved = sw_malloc((size_t)s->g.ntiles * 3 + 1);
    if (!mark || !saved) {
        sw_free(mark);
        sw_free(saved);
        return sw_oom();
    }
    pthread_mutex_lock(&s->lock);
    st = check_request(s, n, tiles, mark, claimed);
    memcpy(saved, s->loc, (size_t)s->g.ntiles);
    memcpy(saved + s->g.ntiles, s->dirty, (size_t)s->g.ntiles);
    memcpy(saved + 2 * s->g.ntiles, s->backed, (size_t)s->g.ntiles);
    if (!st && !evict)
        will_promote(s, tiles, n);
    for (int64_t i = 0; i < n && !st; ++i) {
        int64_t t = tiles[i];
        if (!evict) {
            st = promote_locked(s, t);
        } else if (s->pins[t] > 0 || s->holds[t] > 0) {
            char a[96];
            st = sw_fail(SW_ERUNTIME, "tile %s is pinned by work in progress",
                         tile_text(&s->g, t, a, sizeof a));
        } else if (s->loc[t] == SW_TILE_PRIMARY) {
            if (s->dirty[t] || !s->backed[t])
                st = copy_tile(s, t, s->primary, s->ptoken, s->secondary,
                               s->stoken);
            if (!st) {
                s->loc[t] = SW_TILE_SECONDARY;
                s->dirty[t] = 0;
                s->backed[t] = 1;
            }
        }
    }
    if (st) {
        /* All or nothing: the primary still holds every tile it held, so
         * the states alone go back. */
        memcpy(s->loc, saved, (size_t)s->g.ntiles);
        memcpy(s->dirty, saved + s->g.ntiles, (size_t)s->g.ntiles);
        memcpy(s->backed, saved + 2 * s->g.ntiles, (size_t)s->g.ntiles);
    } else if (evict) {
        /* Committed: the memory of the tiles that left the primary goes. */
        for (int64_t i = 0; i < n; ++i)
            if (saved[tiles[i]] == SW_TILE_PRIMARY)
                discard_tile(s, tiles[i]);
    }
    pthread_mutex_unlock(&s->lock);
    sw_free(mark);
    sw_free(saved);
    return st;
}

static sw_status residency(sw_carrier *c, int64_t n, const int64_t *tiles,
                           int evict) {
    return residency_of(c, n, tiles, evict, 0);
}

sw_status sw_tiled_promote(sw_carrier *c, int64_t n, const int64_t *tiles) {
    return residency(c, n, tiles, 0);
}

sw_status sw_tiled_evict(sw_carrier *c, int64_t n, const int64_t *tiles) {
    return residency(c, n, tiles, 1);
}

/* --------------------------------------------------------- projection */

typedef struct projection {
    int32_t rank;
    int64_t counts[SW_TILE_MAX_RANK];
    int64_t *coords;         /* owned: counts[0] + ... + counts[rank - 1] */
    sw_carrier *destination; /* retained, or NULL */
} projection;

static projection *pstate(sw_op *op) {
    return sw_op_state(op);
}

/* Copies a selection (counts[k] coordinates on axis k, one axis after
 * another in coords) into pr, after the checks that need no carrier. */
static sw_status selection_init(projection *pr, int32_t rank,
                                const int64_t *counts, const int64_t *coords) {
    if (rank < 1 || rank > SW_TILE_MAX_RANK || !counts || !coords)
        return sw_fail(SW_EVALUE, "a selection has 1 to %d axes",
                       SW_TILE_MAX_RANK);
    int64_t total = 0;
    for (int32_t k = 0; k < rank; ++k) {
        if (counts[k] < 1)
            return sw_fail(SW_EVALUE,
                           "axis %d of the selection needs at least one "
                           "coordinate",
                           (int)k);
        total += counts[k];
    }
    pr->coords = sw_malloc((size_t)total * sizeof *coords);
    if (!pr->coords)
        return sw_oom();
    pr->rank = rank;
    memcpy(pr->counts, counts, (size_t)rank * sizeof *counts);
    memcpy(pr->coords, coords, (size_t)total * sizeof *coords);
    return SW_OK;
}

/* The selected tiles' indices (*nsel of them, in the selection's order:
 * first axis fastest), allocated. */
static sw_status selection_tiles(const tiled_state *s, const projection *pr,
                                 int64_t **tiles, int64_t *nsel) {
    int64_t n = 1;
    for (int32_t k = 0; k < pr->rank; ++k)
        n *= pr->counts[k];
    int64_t *t = sw_malloc((size_t)n * sizeof *t);
    if (!t)
        return sw_oom();
    for (int64_t c = 0; c < n; ++c) {
        int64_t rest = c, coord[SW_TILE_MAX_RANK];
        const int64_t *axis = pr->coords;
        for (int32_t k = 0; k < pr->rank; ++k) {
            coord[k] = axis[rest % pr->counts[k]];
            rest /= pr->counts[k];
            axis += pr->counts[k];
        }
        t[c] = sw_tile_index(&s->g, coord);
    }
    *tiles = t;
    *nsel = n;
    return SW_OK;
}

/* The source logical index of compact logical index j. */
static int64_t source_index(const tiled_state *s, const projection *pr,
                            const int64_t *cshape, int64_t j) {
    int64_t i = 0, step = 1;
    const int64_t *axis = pr->coords;
    for (int32_t k = 0; k < pr->rank; ++k) {
        int64_t x = j % cshape[k];
        j /= cshape[k];
        int64_t c = x / s->g.tile[k], a = x % s->g.tile[k];
        i += (axis[c] * s->g.tile[k] + a) * step;
        step *= s->g.extent[k];
        axis += pr->counts[k];
    }
    return i;
}

/* The checks of sw_tiled_project that need no state change. */
static sw_status check_projection(const sw_tensor *t, const projection *pr,
                                  int64_t *cshape, int64_t *csize) {
    if (!t || !sw_carrier_is_tiled(t->carrier))
        return sw_fail(SW_ETYPE, "tensor must be on a TiledEvictable");
    tiled_state *s = sw_carrier_defined_data(t->carrier);
    if (!s || sw_carrier_is_released(t->carrier))
        return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
    if (pr->rank != s->g.rank)
        return sw_fail(SW_EVALUE,
                       "selection rank %d does not match the grid rank %d",
                       (int)pr->rank, (int)s->g.rank);
    const int64_t *axis = pr->coords;
    *csize = 1;
    for (int32_t k = 0; k < pr->rank; ++k) {
        if (pr->counts[k] < 1)
            return sw_fail(SW_EVALUE,
                           "axis %d of the selection needs at least one "
                           "coordinate",
                           (int)k);
        for (int64_t a = 0; a < pr->counts[k]; ++a) {
            if (axis[a] < 0 || axis[a] >= s->g.grid[k])
                return sw_fail(SW_EVALUE,
                               "selected tile coordinate %lld is outside the "
                               "grid on axis %d (extent %lld)",
                               (long long)axis[a], (int)k,
                               (long long)s->g.grid[k]);
            for (int64_t b = 0; b < a; ++b)
                if (axis[b] == axis[a])
                    return sw_fail(SW_EVALUE,
                                   "duplicate tile coordinate %lld on axis %d",
                                   (long long)axis[a], (int)k);
        }
        cshape[k] = pr->counts[k] * s->g.tile[k];
        *csize *= cshape[k];
        axis += pr->counts[k];
    }
    sw_status st = sw_tile_check_footprints(&s->g, t->offset, t->layout);
    if (st)
        return st;
    sw_carrier *d = pr->destination;
    if (d) {
        if (d == t->carrier || sw_carrier_is_tiled(d))
            return sw_fail(SW_ETYPE, "destination must be an ordinary carrier, "
                                     "not a TiledEvictable");
        if (sw_carrier_class_tag(d) != sw_carrier_class_tag(s->primary))
            return sw_fail(SW_ETYPE, "destination must be of the primary "
                                     "tier's exact class");
        if (sw_carrier_dtype(d) != sw_carrier_dtype(t->carrier))
            return sw_fail(SW_ETYPE, "destination dtype %s does not match %s",
                           sw_dtype_name(sw_carrier_dtype(d)),
                           sw_dtype_name(sw_carrier_dtype(t->carrier)));
        if (sw_carrier_is_released(d))
            return sw_fail(SW_ERUNTIME, "destination carrier is released");
        if (!sw_carrier_is_mutable(d))
            return sw_fail(SW_ERUNTIME, "destination carrier must be mutable");
        int64_t have = sw_carrier_size(d);
        if (have < *csize && !(have == 0 && growable(d)))
            return sw_fail(SW_EVALUE,
                           "destination holds %lld slots, less than the "
                           "compact size %lld",
                           (long long)have, (long long)*csize);
    }
    return SW_OK;
}

/* Whether t is laid out as the array itself: offset 0, column-major
 * over the geometry's extents (every tile then maps onto its footprint
 * in slot order). */
static int own_layout(const tiled_state *s, const sw_tensor *t) {
    int own = 0;
    sw_layout *l = NULL;
    if (t->offset == 0 && !dense_layout(s->g.rank, s->g.extent, &l)) {
        own = sw_layout_equal(t->layout, l);
        sw_layout_unref(l);
    }
    sw_clear_error();
    return own;
}

/* Whether a compact tensor is dense column-major over cshape at offset
 * 0, as a projection makes it. */
static int compact_layout(int32_t rank, const int64_t *cshape,
                          const sw_tensor *t) {
    int dense = 0;
    sw_layout *l = NULL;
    if (t->offset == 0 && !dense_layout(rank, cshape, &l)) {
        dense = sw_layout_equal(t->layout, l);
        sw_layout_unref(l);
    }
    sw_clear_error();
    return dense;
}

/* Selected tile i's block between the array (its footprint: src when
 * to_compact, else dst) and its place in the compact array over cshape. */
static void compact_block(const sw_tile_geometry *g, const projection *pr,
                          const int64_t *cshape, int64_t tile, int64_t i,
                          int to_compact, sw_cl_block *b) {
    tile_block(g, tile, b);
    int64_t at = 0, cstride = 1, rest = i;
    int64_t *stride = to_compact ? b->dst_stride : b->src_stride;
    for (int32_t k = 0; k < pr->rank; ++k) {
        at += rest % pr->counts[k] * g->tile[k] * cstride;
        rest /= pr->counts[k];
        stride[k] = cstride;
        cstride *= cshape[k];
    }
    if (to_compact)
        b->dst_at = at;
    else
        b->src_at = at;
}

/* A block between two host arrays (element 0 at src and dst): runs of
 * extent[0] elements, contiguous on both sides. */
static void host_block_copy(const char *src, char *dst, const sw_cl_block *b,
                            size_t esize) {
    int64_t rows = 1;
    for (int32_t k = 1; k < b->rank; ++k)
        rows *= b->extent[k];
    for (int64_t r = 0; r < rows; ++r) {
        int64_t from = b->src_at, to = b->dst_at, rest = r;
        for (int32_t k = 1; k < b->rank; ++k) {
            int64_t a = rest % b->extent[k];
            rest /= b->extent[k];
            from += a * b->src_stride[k];
            to += a * b->dst_stride[k];
        }
        memcpy(dst + (size_t)to * esize, src + (size_t)from * esize,
               (size_t)b->extent[0] * esize);
    }
}

/* Whether whole tiles can be copied between a primary and a plain carrier
 * c: the same dtype, and both CPU or both OpenCL on one device. */
static int tiles_copyable(const sw_carrier *primary, const sw_carrier *c) {
    if (sw_carrier_is_tiled(c) ||
        sw_carrier_dtype(c) != sw_carrier_dtype(primary) ||
        sw_dtype_itemsize(sw_carrier_dtype(c)) <= 0)
        return 0;
    if (sw_carrier_is_cpu(primary))
        return sw_carrier_is_cpu(c);
    return sw_carrier_is_opencl(primary) && sw_carrier_is_opencl(c) &&
           sw_opencl_device_of(c) == sw_opencl_device_of(primary);
}

/*
 * Whole tiles between an array (a plain carrier laid out as the tiled
 * array over geometry g) and a compact carrier: one block copy per
 * selected tile, a memcpy per run for CPU, a device copy for OpenCL. The
 * caller has checked the layouts (the array's own and the compact one)
 * and tiles_copyable, and holds whatever access the array needs.
 */
static sw_status blocks_copy(const sw_tile_geometry *g, const projection *pr,
                             const int64_t *cshape, const int64_t *tiles,
                             int64_t nsel, sw_carrier *array,
                             sw_carrier *compact, int to_compact) {
    /* Both stay allocated even if released meanwhile: the copy reads
     * and writes their memory directly. */
    sw_status st = sw_carrier_pin(compact);
    if (st)
        return st;
    if ((st = sw_carrier_pin(array))) {
        sw_carrier_unpin(compact);
        return st;
    }
    int device = sw_carrier_is_opencl(array), done = 1;
    size_t esize = (size_t)sw_dtype_itemsize(sw_carrier_dtype(compact));
    sw_carrier *from = to_compact ? array : compact;
    sw_carrier *to = to_compact ? compact : array;
    for (int64_t i = 0; i < nsel && !st && done; ++i) {
        sw_cl_block b;
        compact_block(g, pr, cshape, tiles[i], i, to_compact, &b);
        if (device)
            st = sw_opencl_block_copy(from, to, &b, &done);
        else
            host_block_copy(sw_cpu_storage(from), sw_cpu_storage(to), &b,
                            esize);
    }
    sw_carrier_unpin(array);
    sw_carrier_unpin(compact);
    if (!st && !done) /* tiles_copyable saw one device */
        st = sw_fail(SW_ERUNTIME, "OpenCL tile copy between two devices");
    return st;
}

/* A projection's gather or a scatter's replace by whole tiles between
 * the primary (under the lock; every selected tile primary) and a
 * compact carrier (blocks_copy). */
static sw_status tiles_copy(tiled_state *s, const projection *pr,
                            const int64_t *cshape, const int64_t *tiles,
                            int64_t nsel, sw_carrier *compact, int to_compact) {
    sw_status st = sw_carrier_begin_owner_access(s->primary, s->ptoken);
    if (st)
        return st;
    st = blocks_copy(&s->g, pr, cshape, tiles, nsel, s->primary, compact,
                     to_compact);
    (void)sw_carrier_end_owner_access(s->primary, s->ptoken);
    return st;
}

/* Whether every selected tile is valid and primary; under the lock. */
static int tiles_resident(const tiled_state *s, const int64_t *tiles,
                          int64_t nsel) {
    for (int64_t i = 0; i < nsel; ++i)
        if (!s->valid[tiles[i]] || s->loc[tiles[i]] != SW_TILE_PRIMARY)
            return 0;
    return 1;
}

/*
 * Copies the selection's values of t into d (compact index j from source
 * logical index source_index(j)). With every selected tile primary (the
 * work pinned them), under the lock: for the array's own layout by whole
 * tiles (tiles_copy) when d can take them; from a CPU primary into a CPU
 * destination element by element from the primary's memory for any
 * other layout; otherwise value by value.
 */
static sw_status gather_values(const sw_tensor *t, tiled_state *s,
                               const projection *pr, const int64_t *cshape,
                               int64_t csize, const int64_t *tiles,
                               int64_t nsel, sw_carrier *d) {
    sw_status st = SW_OK;
    int whole = own_layout(s, t) && tiles_copyable(s->primary, d);
    int host = sw_carrier_is_cpu(s->primary) && tiles_copyable(s->primary, d);
    if (whole || host) {
        pthread_mutex_lock(&s->lock);
        int resident = tiles_resident(s, tiles, nsel);
        if (resident && whole)
            st = tiles_copy(s, pr, cshape, tiles, nsel, d, 1);
        else if (resident && !(st = sw_carrier_pin(d))) {
            /* d stays allocated even if released meanwhile. */
            if (!(st = sw_carrier_begin_owner_access(s->primary, s->ptoken))) {
                size_t esize = (size_t)sw_dtype_itemsize(sw_carrier_dtype(d));
                const char *src = sw_cpu_data(s->primary);
                char *dst = sw_cpu_storage(d);
                for (int64_t j = 0; j < csize && !st; ++j) {
                    int64_t p = 0;
                    st = sw_layout_index(t->layout,
                                         source_index(s, pr, cshape, j), &p);
                    if (!st)
                        memcpy(dst + (size_t)j * esize,
                               src + (size_t)(t->offset + p) * esize, esize);
                }
                (void)sw_carrier_end_owner_access(s->primary, s->ptoken);
            }
            sw_carrier_unpin(d);
        }
        pthread_mutex_unlock(&s->lock);
        if (resident)
            return st;
    }
    for (int64_t j = 0; j < csize && !st; ++j) {
        sw_value v;
        st = sw_tensor_get(t, source_index(s, pr, cshape, j), &v);
        if (!st) {
            st = sw_carrier_set(d, j, &v);
            sw_value_clear(&v);
        }
    }
    return st;
}

/* A fresh TiledEvictable like template's carrier (fresh tiers of the same
 * classes), all tiles implicit zeros (invalid unless keep_valid). */
static sw_status fresh_like(sw_carrier *tc, int keep_valid, sw_carrier **out) {
    tiled_state *s = sw_carrier_defined_data(tc);
    sw_status st = sw_carrier_allocate_like(tc, s->g.size, 1,
                                            sw_carrier_dtype(tc), 0, out);
    if (!st && !keep_valid)
        sw_tiled_forget_values(*out);
    return st;
}

/* Makes tile t valid at loc with values the secondary does not hold:
 * written (dirty) when primary, zeros when implicit. Under the lock. */
static void set_tile(tiled_state *s, int64_t t, sw_tile_location loc) {
    s->valid[t] = 1;
    s->loc[t] = (uint8_t)loc;
    s->dirty[t] = loc == SW_TILE_PRIMARY;
    s->backed[t] = 0;
}

/* Makes the selected tiles of r valid primary tiles holding compact's
 * values (a dense compact carrier over the selection, tiles_copyable),
 * by whole tiles. */
static sw_status replace_tiles(tiled_state *r, const projection *pr,
                               const int64_t *cshape, const int64_t *tiles,
                               int64_t nsel, sw_carrier *compact) {
    pthread_mutex_lock(&r->lock);
    for (int64_t i = 0; i < nsel; ++i)
        set_tile(r, tiles[i], SW_TILE_PRIMARY);
    sw_status st = tiles_copy(r, pr, cshape, tiles, nsel, compact, 0);
    pthread_mutex_unlock(&r->lock);
    return st;
}

static sw_status project_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                 sw_tensor **out) {
    projection *pr = pstate(op);
    const sw_tensor *t =
        nargs >= 1 && args[0].kind == SW_ARG_TENSOR ? args[0].as.tensor : NULL;
    int64_t cshape[SW_TILE_MAX_RANK], csize = 0;
    sw_status st = check_projection(t, pr, cshape, &csize);
    if (st)
        return st;
    tiled_state *s = sw_carrier_defined_data(t->carrier);
    int64_t nsel = 0, *tiles = NULL;
    if ((st = selection_tiles(s, pr, &tiles, &nsel)))
        return st;
    work_ticket w;
    if ((st = work_begin(t->carrier, tiles, nsel, "projection", &w))) {
        sw_free(tiles);
        return st;
    }
    sw_layout *l = NULL;
    if ((st = dense_layout(pr->rank, cshape, &l))) {
        sw_free(tiles);
        work_end(&w);
        return st;
    }
    sw_carrier *d = pr->destination ? sw_carrier_retain(pr->destination) : NULL;
    if (d && sw_carrier_size(d) == 0)
        st = grow_empty(d, csize);
    else if (!d) /* every value is written below */
        st = sw_carrier_allocate_like(s->primary, csize, 1,
                                      sw_carrier_dtype(t->carrier), 1, &d);
    sw_tensor *r = NULL;
    if (!st)
        st = sw_tensor_new(d, 0, l, &r);
    if (!st)
        st = gather_values(t, s, pr, cshape, csize, tiles, nsel, d);
    sw_free(tiles);
    sw_carrier_unref(d);
    sw_layout_unref(l);
    work_end(&w);
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

/* Scatter-adds the cotangent into a fresh TiledEvictable of the source's
 * geometry and layout (implicit zeros elsewhere). */
static sw_status project_backward(sw_op *op, sw_tensor *g, int32_t n,
                                  sw_tensor **grads) {
    projection *pr = pstate(op);
    if (sw_op_ninputs(op) < 1 || n < 1)
        return sw_fail(SW_ERUNTIME, "backward requires a recorded forward");
    if (!g)
        return sw_fail(SW_ETYPE, "gradient must be a Tensor");
    sw_tensor *x = sw_op_input(op, 0);
    tiled_state *s = sw_carrier_defined_data(x->carrier);
    if (!s)
        return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
    int64_t cshape[SW_TILE_MAX_RANK], csize = 1;
    for (int32_t k = 0; k < pr->rank; ++k) {
        cshape[k] = pr->counts[k] * s->g.tile[k];
        csize *= cshape[k];
    }
    if (g->layout->size != csize)
        return sw_fail(SW_EVALUE, "gradient shape must match the projection");
    sw_carrier *gc = NULL;
    sw_status st = fresh_like(x->carrier, 1, &gc);
    sw_tensor *gt = NULL;
    if (!st)
        st = sw_tensor_new(gc, x->offset, x->layout, &gt);
    sw_carrier_unref(gc);
    /* The selected tiles are distinct: with dense layouts on a class that
     * copies whole tiles, the cotangent's tiles replace the zeros. */
    int whole = !st && own_layout(s, x) &&
                compact_layout(pr->rank, cshape, g) &&
                tiles_copyable(s->primary, g->carrier);
    if (whole) {
        int64_t nsel = 0, *tiles = NULL;
        st = selection_tiles(s, pr, &tiles, &nsel);
        if (!st)
            st = replace_tiles(sw_carrier_defined_data(gt->carrier), pr, cshape,
                               tiles, nsel, g->carrier);
        sw_free(tiles);
        csize = 0; /* nothing left to add value by value */
    }
    for (int64_t j = 0; j < csize && !st; ++j) {
        int64_t i = source_index(s, pr, cshape, j);
        sw_value a, b;
        st = sw_tensor_get(g, j, &a);
        if (st)
            break;
        st = sw_tensor_get(gt, i, &b);
        if (!st) {
            double x0 = a.kind == SW_VALUE_I64 ? (double)a.as.i : a.as.f;
            double x1 = b.kind == SW_VALUE_I64 ? (double)b.as.i : b.as.f;
            sw_value sum = sw_value_f64(x0 + x1);
            st = sw_tensor_set(gt, i, &sum);
            sw_value_clear(&b);
        }
        sw_value_clear(&a);
    }
    if (st) {
        sw_tensor_unref(gt);
        return st;
    }
    grads[0] = gt;
    return SW_OK;
}

static void project_destroy(sw_op *op) {
    projection *pr = pstate(op);
    sw_free(pr->coords);
    sw_carrier_unref(pr->destination);
}

static const sw_op_class projection_class = {
    SW_OP_CLASS_VERSION, "_ProjectionOperation", project_forward,
    project_backward, project_destroy};

/* The projection operation of a selection onto destination (or NULL). */
static sw_status projection_op(int32_t rank, const int64_t *counts,
                               const int64_t *coords, sw_carrier *destination,
                               sw_op **out) {
    sw_op *op = NULL;
    sw_status st = sw_op_new_block(&projection_class, sizeof(projection), &op);
    if (st)
        return st;
    projection *pr = pstate(op);
    if ((st = selection_init(pr, rank, counts, coords))) {
        sw_op_unref(op);
        return st;
    }
    pr->destination = destination ? sw_carrier_retain(destination) : NULL;
    *out = op;
    return SW_OK;
}

sw_status sw_tiled_project(sw_tensor *tensor, int32_t rank,
                           const int64_t *counts, const int64_t *coords,
                           sw_carrier *destination, sw_tensor **out) {
    if (!tensor)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_op *op = NULL;
    sw_status st = projection_op(rank, counts, coords, destination, &op);
    if (st)
        return st;
    sw_arg a = sw_arg_tensor(tensor);
    st = sw_op_forward(op, 1, &a, out);
    sw_op_unref(op);
    return st;
}

/* ------------------------------------------------------------- scatter */

typedef struct scatter {
    projection sel; /* the selection (destination unused) */
    sw_scatter_reduction reduction;
} scatter;

/* Whether logical index i of an array of geometry g lies in a selected
 * tile. */
static int selected(const tiled_state *s, const projection *pr, int64_t i) {
    const int64_t *axis = pr->coords;
    for (int32_t k = 0; k < pr->rank; ++k) {
        int64_t c = i % s->g.extent[k] / s->g.tile[k];
        i /= s->g.extent[k];
        int hit = 0;
        for (int64_t a = 0; a < pr->counts[k] && !hit; ++a)
            hit = axis[a] == c;
        if (!hit)
            return 0;
        axis += pr->counts[k];
    }
    return 1;
}

static double number(const sw_value *v) {
    return v->kind == SW_VALUE_I64 ? (double)v->as.i : v->as.f;
}

/*
 * The selected tiles of s (resident: the work pinned them) plus compact
 * (dense over the selection, tiles_copyable), as a fresh tensor of the
 * primary's class: the tiles gathered whole, then the class's own add,
 * recording nothing. *out stays NULL, with no failure, when that is not
 * possible (a dtype without add, tiles not resident, a result that is not
 * dense), and the caller adds value by value.
 */
static sw_status add_tiles(tiled_state *s, const projection *pr,
                           const int64_t *cshape, int64_t csize,
                           const int64_t *tiles, int64_t nsel,
                           sw_tensor *compact, sw_tensor **out) {
    *out = NULL;
    sw_dtype dt = sw_carrier_dtype(s->primary);
    if (dt != SW_DTYPE_FLOAT32 && dt != SW_DTYPE_INT32)
        return SW_OK;
    sw_carrier *gc = NULL;
    sw_tensor *gathered = NULL, *sum = NULL;
    sw_status st = sw_carrier_allocate_like(s->primary, csize, 1, dt, 1, &gc);
    if (!st)
        st = sw_tensor_new(gc, 0, compact->layout, &gathered);
    sw_carrier_unref(gc);
    int resident = 0;
    if (!st) {
        pthread_mutex_lock(&s->lock);
        resident = tiles_resident(s, tiles, nsel);
        if (resident)
            st = tiles_copy(s, pr, cshape, tiles, nsel, gathered->carrier, 1);
        pthread_mutex_unlock(&s->lock);
    }
    if (!st && resident) {
        int grad = sw_grad_enabled();
        sw_set_grad_enabled(0);
        st = sw_add(gathered, compact, &sum);
        sw_set_grad_enabled(grad);
    }
    sw_tensor_unref(gathered);
    if (!st && sum && compact_layout(pr->rank, cshape, sum) &&
        tiles_copyable(s->primary, sum->carrier)) {
        *out = sum;
        return SW_OK;
    }
    sw_tensor_unref(sum);
    return st;
}

/* The checks of a scatter that need no state change; the selected tiles
 * (allocated) on success. */
static sw_status check_scatter(const scatter *sc, const sw_tensor *compact,
                               const sw_tensor *tmpl, int64_t *cshape,
                               int64_t *csize, int64_t **selected,
                               int64_t *nselected) {
    const projection *pr = &sc->sel;
    sw_status st = check_projection(tmpl, pr, cshape, csize);
    if (st)
        return st;
    tiled_state *s = sw_carrier_defined_data(tmpl->carrier);
    if (sw_carrier_is_released(compact->carrier))
        return sw_fail(SW_ERUNTIME, "compact carrier is released");
    if (sw_carrier_is_tiled(compact->carrier) ||
        sw_carrier_class_tag(compact->carrier) !=
            sw_carrier_class_tag(s->primary))
        return sw_fail(SW_ETYPE, "compact must be on the primary tier's exact "
                                 "class");
    if (sw_tensor_dtype(compact) != sw_carrier_dtype(tmpl->carrier))
        return sw_fail(SW_ETYPE, "compact dtype %s does not match %s",
                       sw_dtype_name(sw_tensor_dtype(compact)),
                       sw_dtype_name(sw_carrier_dtype(tmpl->carrier)));
    const sw_layout *cl = compact->layout;
    int shape_ok = cl->rank == pr->rank;
    for (int32_t k = 0; shape_ok && k < pr->rank; ++k)
        shape_ok = cl->mode_size[k] == cshape[k];
    if (!shape_ok)
        return sw_fail(SW_EVALUE, "compact shape must be the selection's "
                                  "compact shape (selected tiles times tile "
                                  "extents)");
    int64_t nsel = 0, *tiles = NULL;
    if ((st = selection_tiles(s, pr, &tiles, &nsel)))
        return st;
    if (sc->reduction == SW_SCATTER_ADD) {
        pthread_mutex_lock(&s->lock);
        int64_t bad = -1;
        for (int64_t i = 0; i < nsel && bad < 0; ++i)
            if (!s->valid[tiles[i]])
                bad = tiles[i];
        pthread_mutex_unlock(&s->lock);
        if (bad >= 0) {
            char a[96];
            sw_free(tiles);
            return sw_fail(SW_ERUNTIME,
                           "tile %s of the template is invalid: add needs its "
                           "values",
                           tile_text(&s->g, bad, a, sizeof a));
        }
    }
    *selected = tiles;
    *nselected = nsel;
    return SW_OK;
}

static sw_status scatter_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                 sw_tensor **out) {
    scatter *sc = sw_op_state(op);
    projection *pr = &sc->sel;
    if (nargs < 2 || args[0].kind != SW_ARG_TENSOR ||
        args[1].kind != SW_ARG_TENSOR)
        return sw_fail(SW_ETYPE, "compact and template must be Tensors");
    sw_tensor *compact = args[0].as.tensor, *tmpl = args[1].as.tensor;
    int64_t cshape[SW_TILE_MAX_RANK], csize = 0, nsel = 0, *tiles = NULL;
    sw_status st =
        check_scatter(sc, compact, tmpl, cshape, &csize, &tiles, &nsel);
    if (st)
        return st;
    tiled_state *s = sw_carrier_defined_data(tmpl->carrier);
    work_ticket w;
    memset(&w, 0, sizeof w);
    if (sc->reduction == SW_SCATTER_ADD &&
        (st = work_begin(tmpl->carrier, tiles, nsel, "scatter", &w))) {
        sw_free(tiles);
        return st;
    }
    sw_carrier *rc = NULL;
    if ((st = fresh_like(tmpl->carrier, 0, &rc))) {
        sw_free(tiles);
        work_end(&w);
        return st;
    }
    tiled_state *r = sw_carrier_defined_data(rc);
    /* With dense layouts (the array's own, the compact one) on a class
     * that copies whole tiles, the tiles are copied whole: the compact
     * values, or for add the template's tiles plus them. */
    int done = 0;
    sw_tensor *sum = NULL;
    if (own_layout(r, tmpl) && compact_layout(pr->rank, cshape, compact) &&
        tiles_copyable(r->primary, compact->carrier)) {
        if (sc->reduction == SW_SCATTER_ADD)
            st = add_tiles(s, pr, cshape, csize, tiles, nsel, compact, &sum);
        sw_tensor *from = sc->reduction == SW_SCATTER_ADD ? sum : compact;
        if (!st && from) {
            st = replace_tiles(r, pr, cshape, tiles, nsel, from->carrier);
            done = 1;
        }
        sw_tensor_unref(sum);
    }
    /* Otherwise the selected tiles become valid primary tiles, then take
     * values. */
    pthread_mutex_lock(&r->lock);
    for (int64_t i = 0; i < nsel && !done; ++i) {
        r->valid[tiles[i]] = 1;
        r->loc[tiles[i]] = SW_TILE_IMPLICIT;
    }
    for (int64_t i = 0; i < nsel && !st && !done; ++i)
        st = promote_locked(r, tiles[i]);
    pthread_mutex_unlock(&r->lock);
    sw_free(tiles);
    sw_tensor *res = NULL;
    if (!st)
        st = sw_tensor_new(rc, 0, tmpl->layout, &res);
    for (int64_t j = 0; j < csize && !st && !done; ++j) {
        int64_t i = source_index(s, pr, cshape, j);
        sw_value v, u;
        st = sw_tensor_get(compact, j, &v);
        if (st)
            break;
        if (sc->reduction == SW_SCATTER_ADD &&
            !(st = sw_tensor_get(tmpl, i, &u))) {
            sw_value total = sw_value_f64(number(&v) + number(&u));
            sw_value_clear(&u);
            sw_value_clear(&v);
            v = total;
        }
        if (!st)
            st = sw_tensor_set(res, i, &v);
        sw_value_clear(&v);
    }
    sw_carrier_unref(rc);
    work_end(&w);
    if (st) {
        sw_tensor_unref(res);
        return st;
    }
    /* One atomic commit: version 1, whatever the writes counted. */
    sw_carrier_version_restore(rc, 1);
    *out = res;
    return SW_OK;
}

static int same_geometry(const sw_tile_geometry *a, const sw_tile_geometry *b) {
    if (a->rank != b->rank)
        return 0;
    for (int32_t k = 0; k < a->rank; ++k)
        if (a->grid[k] != b->grid[k] || a->tile[k] != b->tile[k])
            return 0;
    return 1;
}

/* Whether c has work in progress on any tile (requests, projections,
 * scatters, pins); under the lock. */
static int tiles_busy(const tiled_state *s) {
    if (s->pending > 0)
        return 1;
    for (int64_t t = 0; t < s->g.ntiles; ++t)
        if (s->pins[t] || s->holds[t] || s->claims[t])
            return 1;
    return 0;
}

sw_status sw_tiled_assign(sw_carrier *c, const sw_tensor *src, int64_t base,
                          const sw_layout *mapping, int *done) {
    *done = 0;
    tiled_state *s = tstate(c);
    sw_layout *own = NULL;
    if (!s || base != 0 || src->offset != 0 ||
        dense_layout(s->g.rank, s->g.extent, &own)) {
        sw_clear_error();
        return SW_OK;
    }
    int fits =
        sw_layout_equal(mapping, own) && sw_layout_equal(src->layout, own);
    sw_layout_unref(own);
    if (!fits)
        return SW_OK;
    sw_tensor *dense = NULL;
    sw_status st = SW_OK;
    if (sw_carrier_is_tiled(src->carrier)) {
        tiled_state *gs = tstate(src->carrier);
        if (!gs || src->carrier == c || !same_geometry(&gs->g, &s->g) ||
            !tiles_copyable(s->primary, gs->primary))
            return SW_OK;
        void *ticket = NULL;
        if ((st = sw_tiled_work_begin(src->carrier, "scatter", &ticket)))
            return st;
        st = sw_tiled_densify(src, &dense);
        sw_tiled_work_end(ticket);
        if (st)
            return st;
    } else if (tiles_copyable(s->primary, src->carrier)) {
        dense = sw_tensor_retain((sw_tensor *)src);
    } else {
        return SW_OK;
    }
    /* One block over the whole array, from dense's slot 0. */
    sw_cl_block b;
    memset(&b, 0, sizeof b);
    b.rank = 1;
    b.extent[0] = s->g.size;
    b.src_stride[0] = b.dst_stride[0] = 1;
    pthread_mutex_lock(&s->lock);
    if (!tiles_busy(s) && !(st = sw_carrier_pin(dense->carrier))) {
        *done = 1;
        if (!(st = sw_carrier_begin_owner_access(s->primary, s->ptoken))) {
            int copied = 1;
            if (sw_carrier_is_opencl(s->primary))
                st = sw_opencl_block_copy(dense->carrier, s->primary, &b,
                                          &copied);
            else
                host_block_copy(
                    sw_cpu_storage(dense->carrier), sw_cpu_data(s->primary), &b,
                    (size_t)sw_dtype_itemsize(sw_carrier_dtype(s->primary)));
            if (!st && !copied) /* tiles_copyable saw one device */
                st = sw_fail(SW_ERUNTIME, "OpenCL copy between two devices");
            (void)sw_carrier_end_owner_access(s->primary, s->ptoken);
        }
        sw_carrier_unpin(dense->carrier);
        /* Every tile is primary now, with the new values. After a failed
         * copy only the primary tiles may hold a part of them; the others
         * keep their values where they are. */
        for (int64_t t = 0; t < s->g.ntiles; ++t) {
            if (!st || s->loc[t] == SW_TILE_PRIMARY)
                set_tile(s, t, SW_TILE_PRIMARY);
        }
    }
    pthread_mutex_unlock(&s->lock);
    sw_tensor_unref(dense);
    /* One write: the version rises once, also after a failure that may
     * have written a part. */
    if (*done) {
        sw_status bumped = sw_carrier_bump_version(c);
        st = st ? st : bumped;
    }
    return st;
}

/* A scatter's gradients (compact's gc, template's gt) on success; both
 * dropped on failure. */
static sw_status scatter_grads(sw_status st, sw_tensor *gc, sw_tensor *gt,
                               sw_tensor **grads) {
    if (st) {
        sw_tensor_unref(gc);
        sw_tensor_unref(gt);
        return st;
    }
    grads[0] = gc;
    grads[1] = gt;
    return SW_OK;
}

/*
 * A scatter's backward by whole tiles, when the template is laid out as
 * its array, the cotangent g the same way (a TiledEvictable of the same
 * geometry, made dense on its primary's class, or a dense tensor), the
 * compact densely, all on a class that copies whole tiles: the compact's
 * gradient is g's selected tiles, the template's a TiledEvictable over g's
 * values (adopted when nobody else holds them), its selected tiles
 * implicit zeros for replace. *done 0: not so, nothing made.
 */
static sw_status scatter_backward_tiles(const scatter *sc, tiled_state *s,
                                        sw_tensor *compact, sw_tensor *tmpl,
                                        sw_tensor *g, const int64_t *cshape,
                                        int64_t csize, sw_tensor **grads,
                                        int *done) {
    const projection *pr = &sc->sel;
    *done = 0;
    if (!own_layout(s, tmpl) || g->offset != 0 ||
        !sw_layout_equal(g->layout, tmpl->layout) ||
        !compact_layout(pr->rank, cshape, compact) ||
        !tiles_copyable(s->primary, compact->carrier))
        return SW_OK;
    sw_tensor *dense = NULL;
    sw_status st = SW_OK;
    if (sw_carrier_is_tiled(g->carrier)) {
        tiled_state *gs = sw_carrier_defined_data(g->carrier);
        if (!gs || !same_geometry(&gs->g, &s->g) ||
            !tiles_copyable(s->primary, gs->primary))
            return SW_OK;
        void *ticket = NULL;
        if ((st = sw_tiled_work_begin(g->carrier, "backward", &ticket)))
            return st;
        st = sw_tiled_densify(g, &dense);
        sw_tiled_work_end(ticket);
    } else if (tiles_copyable(s->primary, g->carrier)) {
        dense = sw_tensor_retain(g);
    } else {
        return SW_OK;
    }
    *done = 1;
    sw_carrier *cc = NULL;
    sw_tensor *gc = NULL, *gt = NULL;
    int64_t nsel = 0, *tiles = NULL;
    if (!st)
        st = sw_carrier_allocate_like(compact->carrier, csize, 1,
                                      sw_tensor_dtype(compact), 1, &cc);
    if (!st)
        st = sw_tensor_new(cc, 0, compact->layout, &gc);
    if (!st)
        st = selection_tiles(s, pr, &tiles, &nsel);
    if (!st)
        st = blocks_copy(&s->g, pr, cshape, tiles, nsel, dense->carrier, cc, 1);
    sw_carrier_unref(cc);
    int made = 0;
    if (!st) {
        sw_tensor *d = dense;
        dense = NULL; /* the only reference, so that it can be adopted */
        st = sw_tiled_copy_of(tmpl->carrier, tmpl->layout, d, &gt, &made);
        sw_tensor_unref(d);
        if (!st && !made)
            st = sw_fail(SW_ERUNTIME, "scatter backward: the gradient's class "
                                      "changed");
    }
    if (!st && sc->reduction == SW_SCATTER_REPLACE) {
        tiled_state *r = sw_carrier_defined_data(gt->carrier);
        pthread_mutex_lock(&r->lock);
        for (int64_t i = 0; i < nsel; ++i)
            set_tile(r, tiles[i], SW_TILE_IMPLICIT);
        pthread_mutex_unlock(&r->lock);
    }
    sw_free(tiles);
    sw_tensor_unref(dense);
    return scatter_grads(st, gc, gt, grads);
}

static sw_status scatter_backward(sw_op *op, sw_tensor *g, int32_t n,
                                  sw_tensor **grads) {
    scatter *sc = sw_op_state(op);
    projection *pr = &sc->sel;
    if (sw_op_ninputs(op) < 2 || n < 2)
        return sw_fail(SW_ERUNTIME, "backward requires a recorded forward");
    if (!g)
        return sw_fail(SW_ETYPE, "gradient must be a Tensor");
    sw_tensor *compact = sw_op_input(op, 0), *tmpl = sw_op_input(op, 1);
    tiled_state *s = sw_carrier_defined_data(tmpl->carrier);
    if (!s)
        return sw_fail(SW_ERUNTIME, "TiledEvictable is released");
    if (g->layout->size != tmpl->layout->size)
        return sw_fail(SW_EVALUE, "gradient shape must match the scatter");
    int64_t cshape[SW_TILE_MAX_RANK], csize = 1;
    for (int32_t k = 0; k < pr->rank; ++k) {
        cshape[k] = pr->counts[k] * s->g.tile[k];
        csize *= cshape[k];
    }
    int done = 0;
    sw_status st = scatter_backward_tiles(sc, s, compact, tmpl, g, cshape,
                                          csize, grads, &done);
    if (st || done)
        return st;
    /* compact: the cotangent gathered at the selection. */
    sw_carrier *cc = NULL;
    sw_tensor *gc = NULL, *gt = NULL;
    st = sw_carrier_allocate_like(compact->carrier, compact->layout->cosize, 1,
                                  sw_tensor_dtype(compact), 0, &cc);
    if (!st)
        st = sw_tensor_new(cc, 0, compact->layout, &gc);
    sw_carrier_unref(cc);
    for (int64_t j = 0; j < csize && !st; ++j) {
        sw_value v;
        st = sw_tensor_get(g, source_index(s, pr, cshape, j), &v);
        if (!st) {
            st = sw_tensor_set(gc, j, &v);
            sw_value_clear(&v);
        }
    }
    /* template: the cotangent, its selected slots zeroed for replace. */
    sw_carrier *tc = NULL;
    if (!st)
        st = fresh_like(tmpl->carrier, 1, &tc);
    if (!st)
        st = sw_tensor_new(tc, tmpl->offset, tmpl->layout, &gt);
    sw_carrier_unref(tc);
    for (int64_t i = 0; i < tmpl->layout->size && !st; ++i) {
        if (sc->reduction == SW_SCATTER_REPLACE && selected(s, pr, i))
            continue;
        sw_value v;
        st = sw_tensor_get(g, i, &v);
        if (!st) {
            st = sw_tensor_set(gt, i, &v);
            sw_value_clear(&v);
        }
    }
    return scatter_grads(st, gc, gt, grads);
}

static void scatter_destroy(sw_op *op) {
    scatter *sc = sw_op_state(op);
    sw_free(sc->sel.coords);
}

static const sw_op_class scatter_class = {SW_OP_CLASS_VERSION,
                                          "_ScatterOperation", scatter_forward,
                                          scatter_backward, scatter_destroy};

/* The scatter operation of a selection with reduction. */
static sw_status scatter_op(int32_t rank, const int64_t *counts,
                            const int64_t *coords,
                            sw_scatter_reduction reduction, sw_op **out) {
    if (reduction != SW_SCATTER_REPLACE && reduction != SW_SCATTER_ADD)
        return sw_fail(SW_EVALUE, "reduction must be replace or add");
    sw_op *op = NULL;
    sw_status st = sw_op_new_block(&scatter_class, sizeof(scatter), &op);
    if (st)
        return st;
    scatter *sc = sw_op_state(op);
    sc->reduction = reduction;
    if ((st = selection_init(&sc->sel, rank, counts, coords))) {
        sw_op_unref(op);
        return st;
    }
    *out = op;
    return SW_OK;
}

static sw_status scatter_inputs(const sw_tensor *compact,
                                const sw_tensor *template_) {
    if (!compact || !template_)
        return sw_fail(SW_ETYPE, "compact and template must be Tensors");
    if (!sw_carrier_is_tiled(template_->carrier))
        return sw_fail(SW_ETYPE, "template must be on a TiledEvictable");
    return SW_OK;
}

sw_status sw_tiled_scatter(sw_tensor *compact, sw_tensor *template_,
                           int32_t rank, const int64_t *counts,
                           const int64_t *coords,
                           sw_scatter_reduction reduction, sw_tensor **out) {
    if (reduction != SW_SCATTER_REPLACE && reduction != SW_SCATTER_ADD)
        return sw_fail(SW_EVALUE, "reduction must be replace or add");
    sw_status st = scatter_inputs(compact, template_);
    sw_op *op = NULL;
    if (st || (st = scatter_op(rank, counts, coords, reduction, &op)))
        return st;
    sw_arg a[2] = {sw_arg_tensor(compact), sw_arg_tensor(template_)};
    st = sw_op_forward(op, 2, a, out);
    sw_op_unref(op);
    return st;
}

/* ------------------------------------------------------ pending work */

/*
 * A request for the move executor: a residency change whose tiles it
 * claims, or a projection or scatter (op) whose selected tiles it holds.
 * The claim or hold is taken at submission, before anything runs, and
 * ends when the work ends (or, for work that never ran, when the request
 * goes), before the outcome is visible.
 */
typedef struct tiled_job {
    sw_carrier *c; /* the TiledEvictable whose tiles the request names */
    int64_t n, *tiles;
    int claim; /* residency: claims; otherwise holds */
    int evict;
    int ran;
    sw_op *op;
    int32_t nargs;
    sw_tensor *args[2];
} tiled_job;

/* Ends the request's claim or hold. */
static void job_let_go(tiled_job *j) {
    tiled_state *s = sw_carrier_defined_data(j->c);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    for (int64_t i = 0; i < j->n; ++i) {
        if (j->claim)
            s->claims[j->tiles[i]] = 0;
        else
            s->holds[j->tiles[i]]--;
    }
    s->pending--;
    pthread_mutex_unlock(&s->lock);
}

static sw_status job_run(void *ctx, sw_tensor **out) {
    tiled_job *j = ctx;
    j->ran = 1;
    sw_status st;
    if (j->op) {
        sw_arg a[2];
        for (int32_t i = 0; i < j->nargs; ++i)
            a[i] = sw_arg_tensor(j->args[i]);
        st = sw_op_forward(j->op, j->nargs, a, out);
    } else {
        st = residency_of(j->c, j->n, j->tiles, j->evict, 1);
        *out = NULL;
    }
    job_let_go(j); /* touches no error state */
    return st;
}

static void job_drop(void *ctx) {
    tiled_job *j = ctx;
    if (!j->ran)
        job_let_go(j);
    sw_carrier_unref(j->c);
    sw_op_unref(j->op);
    for (int32_t i = 0; i < j->nargs; ++i)
        sw_tensor_unref(j->args[i]);
    sw_free(j->tiles);
    sw_free(j);
}

/* Built-in storage the executor may touch without a host language. */
static int plain_storage(const sw_carrier *c) {
    return !c || sw_carrier_is_cpu(c) || sw_carrier_is_file(c) ||
           sw_carrier_is_opencl(c);
}

/* Whether j runs at submission instead: its policy or a tier, compact or
 * destination may call into a host language, which the executor's
 * threads must not. */
static int job_here(const tiled_job *j) {
    tiled_state *s = sw_carrier_defined_data(j->c);
    pthread_mutex_lock(&s->lock);
    int policy = s->policy.plan != NULL;
    pthread_mutex_unlock(&s->lock);
    int plain =
        !policy && plain_storage(s->primary) && plain_storage(s->secondary);
    for (int32_t i = 0; plain && i < j->nargs; ++i)
        plain = sw_carrier_is_tiled(j->args[i]->carrier) ||
                plain_storage(j->args[i]->carrier);
    if (plain && j->op == NULL)
        return 0;
    if (plain && j->nargs == 1)
        plain = plain_storage(pstate(j->op)->destination);
    return !plain;
}

/*
 * Takes the request's claim (a residency request: no tile may have a
 * pending claim, and an evicted tile must not be pinned) or hold, under
 * the lock, then submits it. j (with its tiles) is the request's from
 * now on, also on failure.
 */
static sw_status job_submit(tiled_job *j, sw_move_request **out) {
    tiled_state *s = sw_carrier_defined_data(j->c);
    sw_status st = SW_OK;
    pthread_mutex_lock(&s->lock);
    for (int64_t i = 0; i < j->n && j->claim && !st; ++i) {
        int64_t t = j->tiles[i];
        if (s->claims[t]) {
            st = conflict(s, t);
        } else if (j->evict && (s->pins[t] > 0 || s->holds[t] > 0)) {
            char a[96];
            st = sw_fail(SW_ERUNTIME, "tile %s is pinned by work in progress",
                         tile_text(&s->g, t, a, sizeof a));
        }
    }
    if (!st) {
        for (int64_t i = 0; i < j->n; ++i) {
            if (j->claim)
                s->claims[j->tiles[i]] = 1;
            else
                s->holds[j->tiles[i]]++;
        }
        s->pending++;
    }
    pthread_mutex_unlock(&s->lock);
    if (st) {
        j->ran = 1; /* nothing to let go */
        job_drop(j);
        return st;
    }
    return sw_work_submit(job_run, job_drop, j, job_here(j), out);
}

static sw_status job_new(sw_carrier *c, tiled_job **out) {
    tiled_job *j = sw_calloc(1, sizeof *j);
    if (!j)
        return sw_oom();
    j->c = sw_carrier_retain(c);
    *out = j;
    return SW_OK;
}

static sw_status residency_async(sw_carrier *c, int64_t n, const int64_t *tiles,
                                 int evict, sw_move_request **out) {
    tiled_state *s = NULL;
    sw_status st = request_state(c, n, tiles, &s);
    if (st)
        return st;
    if (!out)
        return sw_fail(SW_EVALUE, "a request needs an output");
    uint8_t *mark = sw_calloc((size_t)s->g.ntiles + 1, 1);
    if (!mark)
        return sw_oom();
    pthread_mutex_lock(&s->lock);
    st = check_request(s, n, tiles, mark, 0);
    pthread_mutex_unlock(&s->lock);
    sw_free(mark);
    tiled_job *j = NULL;
    if (st || (st = job_new(c, &j)))
        return st;
    j->claim = 1;
    j->evict = evict;
    j->n = n;
    j->tiles = sw_malloc((size_t)n * sizeof *tiles + 1);
    if (!j->tiles) {
        j->ran = 1;
        job_drop(j);
        return sw_oom();
    }
    if (n)
        memcpy(j->tiles, tiles, (size_t)n * sizeof *tiles);
    return job_submit(j, out);
}

sw_status sw_tiled_promote_async(sw_carrier *c, int64_t n, const int64_t *tiles,
                                 sw_move_request **out) {
    return residency_async(c, n, tiles, 0, out);
}

sw_status sw_tiled_evict_async(sw_carrier *c, int64_t n, const int64_t *tiles,
                               sw_move_request **out) {
    return residency_async(c, n, tiles, 1, out);
}

/* Submits op on nargs tensors, holding tiles of c (taken by the job). */
static sw_status op_async(sw_op *op, int32_t nargs, sw_tensor **args,
                          sw_carrier *c, int64_t *tiles, int64_t n,
                          sw_move_request **out) {
    tiled_job *j = NULL;
    sw_status st = job_new(c, &j);
    if (st) {
        sw_op_unref(op);
        sw_free(tiles);
        return st;
    }
    j->op = op;
    j->nargs = nargs;
    for (int32_t i = 0; i < nargs; ++i)
        j->args[i] = sw_tensor_retain(args[i]);
    j->tiles = tiles;
    j->n = n;
    return job_submit(j, out);
}

sw_status sw_tiled_project_async(sw_tensor *tensor, int32_t rank,
                                 const int64_t *counts, const int64_t *coords,
                                 sw_carrier *destination,
                                 sw_move_request **out) {
    if (!tensor)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    if (!out)
        return sw_fail(SW_EVALUE, "a request needs an output");
    sw_op *op = NULL;
    sw_status st = projection_op(rank, counts, coords, destination, &op);
    if (st)
        return st;
    projection *pr = pstate(op);
    int64_t cshape[SW_TILE_MAX_RANK], csize = 0, n = 0, *tiles = NULL;
    if ((st = check_projection(tensor, pr, cshape, &csize)) ||
        (st = selection_tiles(sw_carrier_defined_data(tensor->carrier), pr,
                              &tiles, &n))) {
        sw_op_unref(op);
        return st;
    }
    return op_async(op, 1, &tensor, tensor->carrier, tiles, n, out);
}

sw_status sw_tiled_scatter_async(sw_tensor *compact, sw_tensor *template_,
                                 int32_t rank, const int64_t *counts,
                                 const int64_t *coords,
                                 sw_scatter_reduction reduction,
                                 sw_move_request **out) {
    if (reduction != SW_SCATTER_REPLACE && reduction != SW_SCATTER_ADD)
        return sw_fail(SW_EVALUE, "reduction must be replace or add");
    if (!out)
        return sw_fail(SW_EVALUE, "a request needs an output");
    sw_status st = scatter_inputs(compact, template_);
    sw_op *op = NULL;
    if (st || (st = scatter_op(rank, counts, coords, reduction, &op)))
        return st;
    int64_t cshape[SW_TILE_MAX_RANK], csize = 0, n = 0, *tiles = NULL;
    if ((st = check_scatter(sw_op_state(op), compact, template_, cshape, &csize,
                            &tiles, &n))) {
        sw_op_unref(op);
        return st;
    }
    sw_tensor *args[2] = {compact, template_};
    return op_async(op, 2, args, template_->carrier, tiles, n, out);
}

void sw_tiled_forget_values(sw_carrier *c) {
    tiled_state *s = tstate(c);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    memset(s->valid, 0, (size_t)s->g.ntiles);
    pthread_mutex_unlock(&s->lock);
}

int sw_tiled_op_kind(const sw_op *op) {
    const sw_op_class *cls = op ? sw_op_get_class(op) : NULL;
    return cls == &projection_class ? 1 : cls == &scatter_class ? 2 : 0;
}

int64_t sw_tiled_pending(const sw_carrier *c) {
    tiled_state *s = tstate(c);
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    int64_t n = s->pending;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* -------------------------------------------------------------- policy */

sw_status sw_tiled_set_policy(sw_carrier *c,
                              const sw_residency_policy *policy) {
    tiled_state *s = NULL;
    sw_status st = state_for(c, &s);
    if (st)
        return st;
    if (policy && !policy->plan)
        return sw_fail(SW_EVALUE, "a residency policy needs a plan callback");
    sw_residency_policy old;
    pthread_mutex_lock(&s->lock);
    old = s->policy;
    if (policy)
        s->policy = *policy;
    else
        memset(&s->policy, 0, sizeof s->policy);
    pthread_mutex_unlock(&s->lock);
    if (old.drop)
        old.drop(old.ctx);
    return SW_OK;
}
