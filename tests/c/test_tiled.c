/*
 * Tiled geometry (include/strideweave/tiled.h): construction checks, tile
 * and slot numbering against a direct enumeration, and the footprint
 * compatibility check with each of its failure kinds.
 */
#define _DEFAULT_SOURCE /* mincore */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "carrier/internal.h"
#include "check.h"
#include "strideweave/strideweave.h"

static sw_layout *parse(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l))
        bail_out(sw_errmsg());
    return l;
}

static void test_geometry(void) {
    sw_tile_geometry g;
    int64_t grid[2] = {3, 2}, tile[2] = {2, 4}, zero[2] = {2, 0};
    expect_fail(sw_tile_geometry_init(0, grid, tile, &g), SW_EVALUE,
                "grid and tile ranks must be between 1 and 8", "rank 0");
    expect_fail(sw_tile_geometry_init(2, grid, zero, &g), SW_EVALUE,
                "tile extents must be positive", "a tile extent of 0");
    expect_fail(sw_tile_geometry_init(2, zero, tile, &g), SW_EVALUE,
                "grid extents must be positive", "a grid extent of 0");
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    expect_fail(sw_tile_geometry_init(2, huge, huge, &g), SW_EOVERFLOW,
                "tile geometry is too large", "an overflowing geometry");
    expect_ok(sw_tile_geometry_init(2, grid, tile, &g), "a 3x2 grid of 2x4");
    is_int(g.extent[0], 6, "extent 0");
    is_int(g.extent[1], 8, "extent 1");
    is_int(g.stride[1], 6, "column-major stride");
    is_int(g.ntiles, 6, "tiles");
    is_int(g.tile_size, 8, "tile size");
    is_int(g.size, 48, "size");

    /* Every slot belongs to exactly the tile its coordinate says, and the
     * footprints enumerate each slot once. */
    int bad = 0, count[48] = {0};
    for (int64_t p = 0; p < 48; ++p) {
        int64_t c0 = p % 6, c1 = p / 6;
        int64_t want = c0 / 2 + (c1 / 4) * 3;
        bad += sw_tile_of_slot(&g, p) != want;
    }
    ok(!bad, "the tile of every slot");
    for (int64_t t = 0; t < 6; ++t)
        for (int64_t k = 0; k < 8; ++k) {
            int64_t p = sw_tile_slot(&g, t, k);
            bad += p < 0 || p >= 48 || sw_tile_of_slot(&g, p) != t;
            if (p >= 0 && p < 48)
                count[p]++;
        }
    for (int64_t p = 0; p < 48; ++p)
        bad += count[p] != 1;
    ok(!bad, "footprints partition the array");
    is_int(sw_tile_slot(&g, 1, 1), 3, "tile (1, 0) element (1, 0) is slot 3");
    int64_t coord[2] = {2, 1}, back[2];
    is_int(sw_tile_index(&g, coord), 5, "index of (2, 1)");
    sw_tile_coord(&g, 5, back);
    ok(back[0] == 2 && back[1] == 1, "coordinate of 5");
    int64_t out[2] = {3, 0};
    is_int(sw_tile_index(&g, out), -1, "outside the grid");
}

static void test_footprints(void) {
    sw_tile_geometry g;
    int64_t grid[2] = {2, 2}, tile[2] = {2, 2};
    expect_ok(sw_tile_geometry_init(2, grid, tile, &g), "2x2 of 2x2");
    sw_layout *l = parse("(4,4):(1,4)");
    expect_ok(sw_tile_check_footprints(&g, 0, l), "the compact layout");
    sw_layout_unref(l);
    /* A permutation inside each tile. */
    l = parse("((2,2),(2,2)):((4,2),(1,8))");
    expect_ok(sw_tile_check_footprints(&g, 0, l), "permuted inside tiles");
    sw_layout_unref(l);
    l = parse("(4,4):(4,1)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (1, 0) remaps onto carrier "
                "tile (0, 1)",
                "a row-major layout");
    sw_layout_unref(l);
    l = parse("(4,4):(0,4)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) aliases slot 0",
                "a stride-0 layout");
    sw_layout_unref(l);
    /* (4,4):(1,4) shifted by one slot: tile (0,0) reaches tile (1,0). */
    l = parse("(4,4):(1,4)");
    expect_fail(sw_tile_check_footprints(&g, 1, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) spans carrier tiles "
                "(0, 0) and (1, 0)",
                "an offset tensor");
    sw_layout_unref(l);
    /* Nested strides that send logical tile (1, 0) to carrier (0, 1). */
    l = parse("((2,2),4):((1,8),2)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) spans carrier tiles "
                "(0, 0) and (1, 0)",
                "a layout that mixes tiles");
    sw_layout_unref(l);
    l = parse("(4,4):(1,5)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) spans carrier tiles "
                "(0, 0) and (1, 0)",
                "a padded stride");
    sw_layout_unref(l);
    l = parse("(4,4):(1,4)");
    expect_fail(sw_tile_check_footprints(&g, 8, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) remaps onto carrier "
                "tile (0, 1)",
                "an offset by whole tiles");
    expect_fail(sw_tile_check_footprints(&g, 14, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) omits slots: it "
                "reaches slot 18 outside the array",
                "an offset past the end");
    sw_layout_unref(l);
    l = parse("(4,2):(1,4)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tensor geometry does not match the tile grid: mode 1 has "
                "extent 2, the grid 4",
                "a shape mismatch");
    sw_layout_unref(l);
    l = parse("(16):(1)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tensor geometry does not match the tile grid: 1 top-level "
                "modes for a rank-2 grid",
                "a rank mismatch");
    sw_layout_unref(l);
    int64_t base = sw_debug_live_allocs();
    l = parse("(4,4):(1,4)");
    sw_debug_fail_alloc_after(0);
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_ENOMEM, NULL,
                "out of memory");
    sw_debug_fail_alloc_after(-1);
    sw_layout_unref(l);
    leak_check(base, "footprint checks");
}

/* ------------------------------------------------------ TiledEvictable */

static sw_carrier *cpu(int64_t n) {
    sw_carrier *c = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c))
        bail_out(sw_errmsg());
    return c;
}

static sw_carrier *file(void) {
    sw_carrier *c = NULL;
    if (sw_file_new_in(NULL, NULL, SW_DTYPE_FLOAT32, 1, &c))
        bail_out(sw_errmsg());
    return c;
}

static double at(sw_carrier *c, int64_t i) {
    sw_value v;
    if (sw_carrier_get(c, i, &v))
        bail_out(sw_errmsg());
    double d = v.kind == SW_VALUE_I64 ? (double)v.as.i : v.as.f;
    sw_value_clear(&v);
    return d;
}

static void set(sw_carrier *c, int64_t i, double d) {
    sw_value v = sw_value_f64(d);
    if (sw_carrier_set(c, i, &v))
        bail_out(sw_errmsg());
}

static int where(sw_carrier *c, int64_t t, int *valid, int *dirty) {
    sw_tile_location loc;
    if (sw_tiled_tile_state(c, t, &loc, valid, dirty))
        bail_out(sw_errmsg());
    return (int)loc;
}

static void test_tiled_construction(void) {
    int64_t grid[2] = {2, 2}, tile[2] = {2, 2};
    sw_carrier *p = cpu(16), *q = file(), *t = NULL;
    sw_carrier *small = cpu(5);
    expect_fail(sw_tiled_new(NULL, q, 2, grid, tile, &t), SW_ETYPE,
                "primary tier carrier is missing", "no primary");
    expect_fail(sw_tiled_new(small, q, 2, grid, tile, &t), SW_EVALUE,
                "primary tier holds 5 slots, not the full extent 16",
                "a primary of the wrong size");
    expect_fail(sw_tiled_new(p, p, 2, grid, tile, &t), SW_EVALUE,
                "primary and secondary must be distinct carriers",
                "one carrier twice");
    int64_t zero[2] = {2, 0};
    expect_fail(sw_tiled_new(p, q, 2, grid, zero, &t), SW_EVALUE,
                "tile extents must be positive", "a tile extent of 0");
    ok(!sw_carrier_is_owned(p) && !sw_carrier_is_owned(q),
       "failed construction claims nothing");
    for (int64_t i = 0; i < 16; ++i)
        set(p, i, (double)i);
    expect_ok(sw_tiled_new(p, q, 2, grid, tile, &t), "a CPU + FileBacked one");
    ok(sw_carrier_is_owned(p) && sw_carrier_is_owned(q), "both tiers owned");
    ok(sw_carrier_is_tiled(t), "is tiled");
    is_int(sw_carrier_size(t), 16, "size");
    is_int(sw_carrier_size(q), 16, "the empty secondary grew");
    int valid, dirty;
    is_int(where(t, 3, &valid, &dirty), SW_TILE_PRIMARY, "full primary");
    ok(valid && !dirty, "valid and clean");
    ok(at(t, 13) == 13.0, "reads through the primary");
    sw_carrier *other = cpu(16);
    sw_carrier *t2 = NULL;
    expect_fail(sw_tiled_new(p, other, 2, grid, tile, &t2), SW_ERUNTIME,
                "primary tier carrier is already owned by another carrier",
                "an owned tier");
    sw_carrier_unref(other);
    sw_capability_list l;
    expect_ok(sw_carrier_capabilities(t, &l), "finalized at construction");
    int only_direct = l.count > 0;
    for (int64_t i = 0; i < l.count; ++i)
        only_direct &=
            l.items[i].op == SW_OP_ADD ||
            l.items[i].op == SW_OP_ELEMENTWISE_MUL ||
            l.items[i].op == SW_OP_MUL || l.items[i].op == SW_OP_RELU ||
            l.items[i].op == SW_OP_REDUCE || l.items[i].op == SW_OP_MATMUL;
    ok(only_direct, "the primary's plans of the six direct operations");

    /* Evict tile (1, 0) (slots 2, 3, 6, 7) clean, write, evict dirty. */
    int64_t one[1] = {1};
    expect_ok(sw_tiled_evict(t, 1, one), "evict a clean tile");
    is_int(where(t, 1, &valid, &dirty), SW_TILE_SECONDARY, "now secondary");
    int64_t v0 = sw_carrier_version(t);
    set(t, 6, 60.0);
    is_int(sw_carrier_version(t), v0 + 1, "a write bumps once");
    is_int(where(t, 1, &valid, &dirty), SW_TILE_PRIMARY, "a write promotes");
    ok(dirty, "and dirties");
    expect_ok(sw_tiled_evict(t, 1, one), "evict the dirty tile");
    ok(!sw_carrier_is_cpu(q) && at(t, 6) == 60.0 && at(t, 7) == 7.0,
       "values survive through the secondary");
    is_int(sw_carrier_version(t), v0 + 1, "residency changes no version");
    expect_ok(sw_tiled_promote(t, 1, one), "promote back");
    ok(at(t, 6) == 60.0 && at(t, 2) == 2.0, "values after promotion");
    int64_t dup[2] = {1, 1}, far[1] = {4};
    expect_fail(sw_tiled_promote(t, 2, dup), SW_EVALUE,
                "duplicate tile index 1", "a duplicate");
    expect_fail(sw_tiled_evict(t, 1, far), SW_EVALUE,
                "tile index 4 is outside the grid", "out of range");

    /* allocate_like: same geometry, every tile an implicit zero. */
    sw_carrier *z = NULL;
    expect_ok(sw_carrier_allocate_like(t, 16, 1, SW_DTYPE_FLOAT32, 0, &z),
              "allocate_like");
    is_int(where(z, 0, &valid, &dirty), SW_TILE_IMPLICIT, "implicit");
    ok(valid && at(z, 5) == 0.0, "reads zero");
    set(z, 5, 1.5);
    is_int(where(z, 0, &valid, &dirty), SW_TILE_PRIMARY,
           "a write materializes its tile");
    ok(at(z, 5) == 1.5 && at(z, 4) == 0.0, "zeros around the write");
    sw_carrier_unref(z);

    /* Release releases both tiers and gives them up. */
    expect_ok(sw_carrier_release_storage(t), "release");
    ok(sw_carrier_is_released(p) && sw_carrier_is_released(q),
       "tiers released");
    ok(!sw_carrier_is_owned(p) && !sw_carrier_is_owned(q),
       "tiers relinquished");
    expect_fail(sw_tiled_promote(t, 1, one), SW_ERUNTIME,
                "TiledEvictable is released", "promote after release");
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
    sw_carrier_unref(small);
}

static void test_tiled_invalid_and_rollback(void) {
    int64_t grid[1] = {3}, tile[1] = {2};
    sw_carrier *p = file(), *q = file(), *t = NULL;
    expect_ok(sw_tiled_new(p, q, 1, grid, tile, &t), "two empty tiers");
    int valid, dirty;
    where(t, 0, &valid, &dirty);
    ok(!valid, "every tile invalid");
    sw_value v;
    expect_fail(sw_carrier_get(t, 1, &v), SW_ERUNTIME,
                "tile (0) of TiledEvictable is invalid: it must be promoted "
                "or written first",
                "reading an invalid tile");
    sw_value w = sw_value_f64(1.0);
    expect_fail(sw_carrier_set(t, 1, &w), SW_ERUNTIME,
                "tile (0) of TiledEvictable is invalid: its initialization "
                "must come from a write to a valid tile or a promotion",
                "writing an invalid tile");
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);

    /* A failing copy rolls the whole request back. */
    sw_carrier *p2 = cpu(6), *q2 = file();
    for (int64_t i = 0; i < 6; ++i)
        set(p2, i, (double)i + 1);
    expect_ok(sw_tiled_new(p2, q2, 1, grid, tile, &t), "CPU + FileBacked");
    set(t, 0, 10.0);
    set(t, 4, 50.0); /* tiles 0 and 2 dirty */
    int64_t all[3] = {0, 1, 2};
    int64_t base = sw_carrier_version(t);
    sw_debug_fail_io_after(1); /* the second tile's write fails */
    sw_status st = sw_tiled_evict(t, 3, all);
    sw_debug_fail_io_after(-1);
    is_int(st, SW_EOS, "an injected I/O failure");
    int loc0 = where(t, 0, &valid, &dirty);
    ok(loc0 == SW_TILE_PRIMARY && dirty, "tile 0 rolled back to dirty primary");
    is_int(where(t, 2, &valid, &dirty), SW_TILE_PRIMARY, "tile 2 untouched");
    ok(at(t, 0) == 10.0 && at(t, 4) == 50.0 && at(t, 3) == 4.0,
       "values unchanged");
    is_int(sw_carrier_version(t), base, "version unchanged");
    expect_ok(sw_tiled_evict(t, 3, all), "the retry succeeds");
    ok(at(t, 0) == 10.0 && at(t, 4) == 50.0, "values after the retry");
    sw_carrier_unref(t);
    sw_carrier_unref(p2);
    sw_carrier_unref(q2);
}

static void test_tiled_operations(void) {
    int64_t grid[2] = {2, 2}, tile[2] = {2, 2};
    sw_carrier *p = cpu(16), *q = file(), *t = NULL;
    for (int64_t i = 0; i < 16; ++i)
        set(p, i, (double)i - 8);
    expect_ok(sw_tiled_new(p, q, 2, grid, tile, &t), "a tiled operand");
    int64_t some[2] = {1, 2};
    expect_ok(sw_tiled_evict(t, 2, some), "part of it evicted");
    sw_layout *l = parse("(4,4):(1,4)");
    sw_tensor *x = NULL, *y = NULL;
    expect_ok(sw_tensor_new(t, 0, l, &x), "the full tensor");
    expect_ok(sw_unary("relu", x, &y), "relu on a partly resident tensor");
    ok(sw_carrier_is_cpu(sw_tensor_carrier(y)), "the result is on CPU");
    int good = 1;
    for (int64_t i = 0; i < 16; ++i) {
        sw_value v;
        sw_tensor_get(y, i, &v);
        good &= v.as.f == ((double)i - 8 > 0 ? (double)i - 8 : 0.0);
    }
    ok(good, "relu values");
    int valid, dirty;
    is_int(where(t, 1, &valid, &dirty), SW_TILE_PRIMARY,
           "with no policy, an operation promotes what it requires");
    sw_tensor *g = NULL, *ones = NULL;
    sw_carrier *oc = cpu(16);
    for (int64_t i = 0; i < 16; ++i)
        set(oc, i, 1.0);
    expect_ok(sw_tensor_new(oc, 0, l, &ones), "a cotangent");
    expect_ok(sw_tensor_backward(y, ones), "backward");
    g = sw_tensor_grad(x);
    ok(g && sw_carrier_is_tiled(sw_tensor_carrier(g)),
       "the gradient is a TiledEvictable tensor");
    if (g) {
        sw_value v;
        sw_tensor_get(g, 15, &v);
        ok(v.as.f == 1.0, "gradient of a positive element");
        sw_tensor_get(g, 0, &v);
        ok(v.as.f == 0.0, "gradient of a negative element");
        ok(sw_carrier_is_cpu(sw_tiled_primary(sw_tensor_carrier(g))),
           "computed on the primary's class: the dense gradient is the "
           "gradient's primary");
        int every = 1;
        for (int64_t i = 0; i < 16; ++i) {
            sw_tensor_get(g, i, &v);
            every &= v.as.f == (i > 8 ? 1.0 : 0.0);
        }
        ok(every, "every gradient value");
    }
    sw_tensor_unref(y);
    y = NULL;
    expect_ok(sw_add(x, x, &y), "add of two tiled tensors");
    sw_value v;
    sw_tensor_get(y, 15, &v);
    ok(v.as.f == 14.0, "add values");
    sw_tensor_unref(y);
    y = NULL;
    expect_ok(sw_matmul(x, x, &y), "matmul");
    sw_tensor_unref(y);
    y = NULL;
    expect_ok(sw_reduce_sum(x, &y), "reduce_sum");
    sw_tensor_get(y, 0, &v);
    ok(v.as.f == -8.0 + -4.0 + 0.0 + 4.0, "reduce values");
    sw_tensor_unref(y);
    y = NULL;
    sw_status st = sw_unary("exp", x, &y);
    is_int(st, SW_ENOTIMPL, "exp is not a direct operation");
    ok(strstr(sw_errmsg(), "TiledEvictable does not support 'exp'") != NULL,
       "does not support");
    sw_layout *rm = parse("(4,4):(4,1)");
    sw_tensor *xr = NULL;
    expect_ok(sw_tensor_new(t, 0, rm, &xr), "a row-major view");
    expect_fail(sw_unary("relu", xr, &y), SW_EVALUE,
                "tile footprints: logical tile (1, 0) remaps onto carrier "
                "tile (0, 1)",
                "an incompatible layout");
    sw_tensor_unref(xr);
    sw_layout_unref(rm);
    sw_tensor_unref(ones);
    sw_carrier_unref(oc);
    sw_tensor_unref(x);
    sw_layout_unref(l);
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
}

static void test_tiled_projection(void) {
    /* A 3x2 grid of 2x2 tiles over a 6x4 array holding its slot numbers. */
    int64_t grid[2] = {3, 2}, tile[2] = {2, 2};
    sw_carrier *p = cpu(24), *q = file(), *t = NULL;
    for (int64_t i = 0; i < 24; ++i)
        set(p, i, (double)i);
    expect_ok(sw_tiled_new(p, q, 2, grid, tile, &t), "a 6x4 tiled array");
    int64_t all[6] = {0, 1, 2, 3, 4, 5};
    expect_ok(sw_tiled_evict(t, 6, all), "everything evicted");
    sw_layout *l = parse("(6,4):(1,6)");
    sw_tensor *x = NULL, *y = NULL;
    expect_ok(sw_tensor_new(t, 0, l, &x), "the full tensor");
    /* Tiles (2, 1) and (0, 1): axis 0 picks 2 then 0, axis 1 picks 1. */
    int64_t counts[2] = {2, 1}, coords[3] = {2, 0, 1};
    int64_t v0 = sw_carrier_version(t);
    expect_ok(sw_tiled_project(x, 2, counts, coords, NULL, &y), "project");
    ok(sw_carrier_is_cpu(sw_tensor_carrier(y)), "on the primary's class");
    is_int(sw_layout_size(sw_tensor_layout(y)), 8, "compact 4x2");
    /* Compact (0, 0) is source (4, 2): slot 4 + 2*6 = 16; compact (2, 1)
     * is source (0, 3): slot 18. */
    sw_value v;
    sw_tensor_get(y, 0, &v);
    ok(v.as.f == 16.0, "compact (0, 0) from source tile (2, 1)");
    sw_tensor_get(y, 2 + 4 * 1, &v);
    ok(v.as.f == 18.0, "compact (2, 1) from source tile (0, 1)");
    is_int(sw_carrier_version(t), v0, "the source version is unchanged");
    int valid, dirty;
    is_int(where(t, 5, &valid, &dirty), SW_TILE_PRIMARY,
           "selected tiles were promoted");
    is_int(where(t, 1, &valid, &dirty), SW_TILE_SECONDARY,
           "others were left alone");
    /* Backward scatter-adds into a fresh tiled gradient. */
    sw_carrier *oc = cpu(8);
    for (int64_t i = 0; i < 8; ++i)
        set(oc, i, (double)i + 1);
    sw_layout *cl = parse("(4,2):(1,4)");
    sw_tensor *ones = NULL;
    expect_ok(sw_tensor_new(oc, 0, cl, &ones), "a cotangent");
    expect_ok(sw_tensor_backward(y, ones), "backward");
    sw_tensor *g = sw_tensor_grad(x);
    ok(g && sw_carrier_is_tiled(sw_tensor_carrier(g)), "a tiled gradient");
    if (g) {
        sw_tensor_get(g, 16, &v);
        ok(v.as.f == 1.0, "gradient at source (4, 2)");
        sw_tensor_get(g, 0, &v);
        ok(v.as.f == 0.0, "zero where nothing was selected");
        sw_carrier *gc = sw_tensor_carrier(g);
        is_int(where(gc, 5, &valid, &dirty), SW_TILE_PRIMARY,
               "a selected gradient tile is primary");
        is_int(where(gc, 1, &valid, &dirty), SW_TILE_IMPLICIT,
               "an untouched gradient tile stays an implicit zero");
        ok(valid, "and valid");
    }
    /* Errors. */
    sw_tensor *z = NULL;
    int64_t bad_counts[2] = {1, 1}, far[2] = {3, 0}, dup_c[2] = {2, 1},
            dup[3] = {1, 1, 0};
    expect_fail(sw_tiled_project(x, 1, bad_counts, far, NULL, &z), SW_EVALUE,
                "selection rank 1 does not match the grid rank 2", "rank");
    expect_fail(sw_tiled_project(x, 2, bad_counts, far, NULL, &z), SW_EVALUE,
                "selected tile coordinate 3 is outside the grid on axis 0 "
                "(extent 3)",
                "range");
    expect_fail(sw_tiled_project(x, 2, dup_c, dup, NULL, &z), SW_EVALUE,
                "duplicate tile coordinate 1 on axis 0", "duplicate");
    sw_carrier *small = cpu(3);
    expect_fail(sw_tiled_project(x, 2, counts, coords, small, &z), SW_EVALUE,
                "destination holds 3 slots, less than the compact size 8",
                "a destination too small");
    sw_carrier *dst = cpu(8);
    expect_ok(sw_tiled_project(x, 2, counts, coords, dst, &z),
              "into a destination");
    ok(sw_tensor_carrier(z) == dst, "the destination holds the result");
    sw_tensor_unref(z);
    z = NULL;
    sw_carrier *cpu_dst = file();
    expect_fail(sw_tiled_project(x, 2, counts, coords, cpu_dst, &z), SW_ETYPE,
                "destination must be of the primary tier's exact class",
                "a destination of another class");
    sw_tensor *rm = NULL;
    sw_layout *rml = parse("(6,4):(4,1)");
    expect_ok(sw_tensor_new(t, 0, rml, &rm), "a row-major view");
    expect_fail(sw_tiled_project(rm, 2, counts, coords, NULL, &z), SW_EVALUE,
                NULL, "an incompatible footprint");
    sw_tensor_unref(rm);
    sw_layout_unref(rml);
    sw_carrier_unref(cpu_dst);
    sw_carrier_unref(dst);
    sw_carrier_unref(small);
    sw_tensor_unref(ones);
    sw_layout_unref(cl);
    sw_carrier_unref(oc);
    sw_tensor_unref(y);
    sw_tensor_unref(x);
    sw_layout_unref(l);
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
}

static void test_tiled_scatter(void) {
    int64_t grid[2] = {3, 2}, tile[2] = {2, 2};
    sw_carrier *p = cpu(24), *q = file(), *t = NULL;
    for (int64_t i = 0; i < 24; ++i)
        set(p, i, (double)i);
    expect_ok(sw_tiled_new(p, q, 2, grid, tile, &t), "a template");
    sw_layout *l = parse("(6,4):(1,6)");
    sw_tensor *tmpl = NULL, *y = NULL, *back = NULL;
    expect_ok(sw_tensor_new(t, 0, l, &tmpl), "the template tensor");
    int64_t counts[2] = {2, 1}, coords[3] = {2, 0, 1};
    sw_carrier *cc = cpu(8);
    for (int64_t i = 0; i < 8; ++i)
        set(cc, i, 100.0 + (double)i);
    sw_layout *cl = parse("(4,2):(1,4)");
    sw_tensor *compact = NULL;
    expect_ok(sw_tensor_new(cc, 0, cl, &compact), "a compact tensor");
    expect_ok(sw_tiled_scatter(compact, tmpl, 2, counts, coords,
                               SW_SCATTER_REPLACE, &y),
              "scatter replace");
    sw_carrier *rc = sw_tensor_carrier(y);
    ok(sw_carrier_is_tiled(rc) && rc != t, "a fresh TiledEvictable");
    is_int(sw_carrier_version(rc), 1, "at version 1");
    int valid, dirty;
    is_int(where(rc, 5, &valid, &dirty), SW_TILE_PRIMARY, "selected primary");
    ok(valid && dirty, "valid and dirty");
    where(rc, 0, &valid, &dirty);
    ok(!valid, "unselected tiles invalid");
    sw_value v;
    sw_tensor_get(y, 16, &v);
    ok(v.as.f == 100.0, "compact (0, 0) lands on source (4, 2)");
    expect_ok(sw_tiled_project(y, 2, counts, coords, NULL, &back),
              "projecting the result back");
    sw_tensor_get(back, 7, &v);
    ok(v.as.f == 107.0, "projection reproduces compact");
    is_int(sw_carrier_version(t), 0, "the template is unchanged");
    sw_tensor_unref(back);
    back = NULL;
    /* add: template plus compact. */
    sw_tensor *z = NULL;
    expect_ok(
        sw_tiled_scatter(compact, tmpl, 2, counts, coords, SW_SCATTER_ADD, &z),
        "scatter add");
    sw_tensor_get(z, 16, &v);
    ok(v.as.f == 116.0, "template plus compact");
    /* Backward of replace. */
    sw_carrier *gc = cpu(24);
    for (int64_t i = 0; i < 24; ++i)
        set(gc, i, 1.0);
    sw_tensor *cot = NULL;
    expect_ok(sw_tensor_new(gc, 0, l, &cot), "a cotangent");
    expect_ok(sw_tensor_backward(y, cot), "backward");
    sw_tensor *g0 = sw_tensor_grad(compact), *g1 = sw_tensor_grad(tmpl);
    ok(g0 && sw_carrier_is_cpu(sw_tensor_carrier(g0)), "compact's gradient");
    ok(g1 && sw_carrier_is_tiled(sw_tensor_carrier(g1)), "template's gradient");
    if (g1) {
        sw_tensor_get(g1, 16, &v);
        ok(v.as.f == 0.0, "selected slots zeroed for replace");
        sw_tensor_get(g1, 0, &v);
        ok(v.as.f == 1.0, "the cotangent elsewhere");
    }
    /* Errors. */
    sw_tensor *e = NULL;
    expect_fail(sw_tiled_scatter(compact, tmpl, 2, counts, coords,
                                 (sw_scatter_reduction)7, &e),
                SW_EVALUE, "reduction must be replace or add", "reduction");
    sw_layout *wrong = parse("(2,2):(1,2)");
    sw_tensor *bad = NULL;
    expect_ok(sw_tensor_new(cc, 0, wrong, &bad), "a mis-shaped compact");
    expect_fail(
        sw_tiled_scatter(bad, tmpl, 2, counts, coords, SW_SCATTER_REPLACE, &e),
        SW_EVALUE,
        "compact shape must be the selection's compact shape "
        "(selected tiles times tile extents)",
        "compact shape");
    expect_fail(
        sw_tiled_scatter(tmpl, tmpl, 2, counts, coords, SW_SCATTER_REPLACE, &e),
        SW_ETYPE, "compact must be on the primary tier's exact class",
        "a tiled compact");
    /* add onto an invalid template tile. */
    sw_tensor *zt = NULL;
    expect_ok(sw_tiled_scatter(compact, tmpl, 2, counts, coords,
                               SW_SCATTER_REPLACE, &zt),
              "a result with invalid tiles");
    int64_t other[2] = {1, 1}, oc[2] = {0, 0};
    sw_carrier *c4 = cpu(4);
    sw_layout *l4 = parse("(2,2):(1,2)");
    sw_tensor *small = NULL;
    expect_ok(sw_tensor_new(c4, 0, l4, &small), "a one-tile compact");
    expect_fail(sw_tiled_scatter(small, zt, 2, other, oc, SW_SCATTER_ADD, &e),
                SW_ERUNTIME,
                "tile (0, 0) of the template is invalid: add needs its values",
                "add onto an invalid tile");
    sw_tensor_unref(small);
    sw_layout_unref(l4);
    sw_carrier_unref(c4);
    sw_tensor_unref(zt);
    sw_tensor_unref(bad);
    sw_layout_unref(wrong);
    sw_tensor_unref(cot);
    sw_carrier_unref(gc);
    sw_tensor_unref(z);
    sw_tensor_unref(y);
    sw_tensor_unref(compact);
    sw_layout_unref(cl);
    sw_carrier_unref(cc);
    sw_tensor_unref(tmpl);
    sw_layout_unref(l);
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
}

/* A policy that retains nothing, evicts tile 0 after the work, and
 * checks from done that required tiles are pinned meanwhile. */
static struct {
    int calls, done_calls, pinned_refused, out_of_range, fail;
    char purpose[32];
} P;
static const int64_t evict_zero[1] = {0};
static const int64_t far_tile[1] = {99};

static sw_status pol_plan(void *ctx, sw_carrier *c, const int64_t *required,
                          int64_t n, const char *purpose,
                          sw_residency_plan *out) {
    (void)ctx;
    (void)c;
    P.calls++;
    snprintf(P.purpose, sizeof P.purpose, "%s", purpose);
    if (P.fail)
        return sw_set_error(SW_EVALUE, "policy refused");
    out->promote = required;
    out->npromote = n;
    out->evict = P.out_of_range ? far_tile : evict_zero;
    out->nevict = 1;
    return SW_OK;
}

static sw_carrier *pol_carrier;

static void pol_done(void *ctx, const sw_residency_plan *plan) {
    (void)ctx;
    (void)plan;
    P.done_calls++;
    int64_t one[1] = {1};
    if (sw_tiled_evict(pol_carrier, 1, one) == SW_ERUNTIME &&
        strstr(sw_errmsg(), "pinned"))
        P.pinned_refused++;
    sw_clear_error();
}

static void test_tiled_policy(void) {
    int64_t grid[1] = {3}, tile[1] = {2};
    sw_carrier *p = cpu(6), *q = file(), *t = NULL;
    for (int64_t i = 0; i < 6; ++i)
        set(p, i, (double)i);
    expect_ok(sw_tiled_new(p, q, 1, grid, tile, &t), "a tiled array");
    pol_carrier = t;
    sw_residency_policy bad = {NULL, NULL, NULL, NULL};
    expect_fail(sw_tiled_set_policy(t, &bad), SW_EVALUE,
                "a residency policy needs a plan callback", "no plan");
    sw_residency_policy pol = {NULL, pol_plan, pol_done, NULL};
    expect_ok(sw_tiled_set_policy(t, &pol), "set a policy");
    sw_layout *l = parse("(6):(1)");
    sw_tensor *x = NULL, *y = NULL;
    expect_ok(sw_tensor_new(t, 0, l, &x), "the tensor");
    memset(&P, 0, sizeof P);
    expect_ok(sw_unary("relu", x, &y), "relu under the policy");
    is_int(P.calls, 1, "the policy is asked once");
    is_str(P.purpose, "operation", "for an operation");
    is_int(P.pinned_refused, 1, "required tiles are pinned during the work");
    int valid, dirty;
    is_int(where(t, 0, &valid, &dirty), SW_TILE_SECONDARY,
           "the plan's evictions run after the work");
    /* Backward asks again, with "backward", and promotes the evicted
     * saved tiles while the gradient is computed. */
    sw_carrier *oc = cpu(6);
    for (int64_t i = 0; i < 6; ++i)
        set(oc, i, 1.0);
    sw_tensor *ones = NULL;
    expect_ok(sw_tensor_new(oc, 0, l, &ones), "a cotangent");
    int64_t all[3] = {0, 1, 2};
    expect_ok(sw_tiled_evict(t, 3, all), "every saved tile evicted");
    memset(&P, 0, sizeof P);
    expect_ok(sw_tensor_backward(y, ones), "backward under the policy");
    is_int(P.calls, 1, "the policy is asked once for the backward");
    is_str(P.purpose, "backward", "with the purpose backward");
    is_int(P.pinned_refused, 1, "the saved tiles are pinned meanwhile");
    is_int(where(t, 2, &valid, &dirty), SW_TILE_PRIMARY,
           "backward promoted the evicted saved tiles");
    is_int(where(t, 0, &valid, &dirty), SW_TILE_SECONDARY,
           "and ran the plan's evictions afterwards");
    sw_tensor *g = sw_tensor_grad(x);
    int grads_ok = g != NULL;
    for (int64_t i = 0; g && i < 6; ++i) {
        sw_value v;
        grads_ok &=
            sw_tensor_get(g, i, &v) == SW_OK && v.as.f == (i > 0 ? 1.0 : 0.0);
    }
    ok(grads_ok, "the relu gradient through the re-promoted tiles");
    sw_tensor_unref(ones);
    sw_carrier_unref(oc);
    sw_tensor_set_grad(x, NULL);
    sw_tensor_unref(y);
    y = NULL;
    memset(&P, 0, sizeof P);
    P.out_of_range = 1;
    int64_t before = where(t, 0, &valid, &dirty);
    expect_fail(sw_unary("relu", x, &y), SW_EVALUE,
                "the residency plan names tile index 99, outside the grid",
                "a plan outside the grid");
    is_int(where(t, 0, &valid, &dirty), before, "nothing moved");
    memset(&P, 0, sizeof P);
    P.fail = 1;
    expect_fail(sw_unary("relu", x, &y), SW_EVALUE, "policy refused",
                "a failing policy");
    memset(&P, 0, sizeof P);
    int64_t counts[1] = {1}, coords[1] = {2};
    expect_ok(sw_tiled_project(x, 1, counts, coords, NULL, &y), "project");
    is_str(P.purpose, "projection", "for a projection");
    sw_tensor_unref(y);
    expect_ok(sw_tiled_set_policy(t, NULL), "clear the policy");
    sw_tensor_unref(x);
    sw_layout_unref(l);
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
}

#if defined(__linux__)
/* The whole pages inside [p, p + n): the first one and their count. */
static int64_t whole_pages_at(const void *p, size_t n, uintptr_t *lo) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    *lo = a;
    return a < b ? (int64_t)((b - a) / page) : 0;
}

static int64_t whole_pages(const void *p, size_t n) {
    uintptr_t lo;
    return whole_pages_at(p, n, &lo);
}

/* How many of the whole pages inside [p, p + n) are resident. */
static int64_t resident_pages(const void *p, size_t n) {
    uintptr_t lo;
    int64_t count = whole_pages_at(p, n, &lo);
    if (count == 0)
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *vec = malloc((size_t)count);
    if (!vec || mincore((void *)lo, (size_t)count * page, vec)) {
        free(vec);
        return -1;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < count; ++i)
        k += vec[i] & 1;
    free(vec);
    return k;
}

/* Whether this kernel maps pages on request (MADV_POPULATE_WRITE, Linux
 * 5.14 and later); the library's populating is a no-op where not. */
static int can_populate(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 0;
    int yes = madvise(m, page, 23 /* MADV_POPULATE_WRITE */) == 0;
    munmap(m, page);
    return yes;
}

/* Tile 2 of (64, 64, 8) array t over CPU data, evicted: its reads come
 * from the secondary, and promotion brings its values back into data. */
static void reads_and_promotes(sw_carrier *t, const float *data, int64_t per,
                               const char *when) {
    int good = 1;
    for (int64_t i = 2 * per; i < 3 * per; i += 97)
        good &= at(t, i) == (double)i;
    ok(good, "%s: reads of the evicted tile come from the secondary", when);
    int64_t two[1] = {2};
    expect_ok(sw_tiled_promote(t, 1, two), "promote it again");
    good = 1;
    for (int64_t i = 2 * per; i < 3 * per; ++i)
        good &= data[i] == (float)i;
    ok(good, "%s: promotion brings its values back into the primary", when);
}

/* An evicted tile's pages go back from a CPU primary that allocated its
 * memory; promotion brings the values back from the secondary. */
static void test_tiled_discard(void) {
    /* (64, 64, 8) float32: tiles of (64, 64, 1) are contiguous 16 KiB runs,
     * as an expert per tile is. */
    int64_t grid[3] = {1, 1, 8}, tile[3] = {64, 64, 1};
    const int64_t n = 64 * 64 * 8, per = 64 * 64;
    sw_carrier *p = cpu(n), *q = file(), *t = NULL;
    float *data = sw_cpu_data(p);
    for (int64_t i = 0; i < n; ++i)
        data[i] = (float)i;
    expect_ok(sw_tiled_new(p, q, 3, grid, tile, &t), "a tiled array");
    int64_t two[1] = {2};
    size_t bytes = (size_t)per * sizeof(float);
    ok(resident_pages(data + 2 * per, bytes) > 0,
       "tile 2's pages are resident");
    expect_ok(sw_tiled_evict(t, 1, two), "evict tile 2");
    is_int(resident_pages(data + 2 * per, bytes), 0,
           "the evicted tile's pages went back to the system");
    ok(resident_pages(data + 3 * per, bytes) > 0,
       "the pages of a tile still primary stay");
    reads_and_promotes(t, data, per, "first eviction");
    int good = 1;
    is_int(resident_pages(data + 2 * per, bytes),
           whole_pages(data + 2 * per, bytes),
           "the promoted tile's pages are all mapped again");
    expect_ok(sw_tiled_evict(t, 1, two), "evict tile 2 again");
    /* The hints a promotion gives change nothing but timing, and never
     * fail. */
    sw_clear_error();
    sw_file_will_read(q, -1, 4);
    sw_file_will_read(q, n - 2, 4);
    sw_file_will_read(q, 0, INT64_MAX);
    sw_file_will_read(p, 0, 4);
    sw_cpu_populate(p, -1, 4);
    sw_cpu_populate(p, n - 2, 4);
    sw_cpu_populate(q, 0, 4);
    is_int(sw_errcode(), SW_OK,
           "hints outside the range or on another class "
           "do nothing and leave no error");
    sw_file_will_read(q, 2 * per, per);
    sw_cpu_populate(p, 2 * per, per);
    if (can_populate())
        is_int(resident_pages(data + 2 * per, bytes),
               whole_pages(data + 2 * per, bytes),
               "populating maps an evicted tile's pages");
    else
        ok(1, "populating an evicted tile # SKIP this kernel does not map "
              "pages on request");
    /* The whole pages of tile 2 were given back; the pages it shares
     * with its neighbours were not. */
    uintptr_t lo;
    int64_t count = whole_pages_at(data + 2 * per, bytes, &lo) *
                    sysconf(_SC_PAGESIZE) / (int64_t)sizeof(float);
    int64_t first = (int64_t)((float *)lo - data);
    good = count > 0;
    for (int64_t i = first; i < first + count; ++i)
        good &= data[i] == 0.0f;
    for (int64_t i = 3 * per; i < 4 * per; ++i)
        good &= data[i] == (float)i;
    ok(good, "populated pages read as zeros, written ones keep their values");
    reads_and_promotes(t, data, per, "after populating");
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
}
#endif

static void test_tiled_injection(void) {
    int64_t grid[2] = {2, 2}, tile[2] = {2, 1};
    int64_t base = sw_debug_live_allocs();
    for (int64_t k = 0; k < 200; ++k) {
        sw_carrier *p = cpu(8), *q = cpu(8), *t = NULL;
        sw_debug_fail_alloc_after(k);
        sw_status st = sw_tiled_new(p, q, 2, grid, tile, &t);
        int64_t one[1] = {3};
        if (!st)
            st = sw_tiled_evict(t, 1, one);
        sw_debug_fail_alloc_after(-1);
        if (t == NULL)
            ok(!sw_carrier_is_owned(p) && !sw_carrier_is_owned(q),
               "nothing claimed after failure %lld", (long long)k);
        sw_carrier_unref(t);
        sw_carrier_unref(p);
        sw_carrier_unref(q);
        if (!st)
            break;
    }
    leak_check(base, "TiledEvictable under allocation failure");
}

/* A direct operation's backward on the primary's class under allocation
 * failure: each failure is reported, nothing leaks, and the saved input
 * is unchanged. */
static void test_tiled_backward_injection(void) {
    int64_t grid[2] = {2, 2}, tile[2] = {2, 2};
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = parse("(4,4):(1,4)");
    /* relu; then matmul(x, x), whose two gradients of x are summed and
     * copied into one tiled gradient. */
    for (int matmul = 0; matmul <= 1; ++matmul)
        for (int64_t k = 0; k < 600; ++k) {
            sw_carrier *p = cpu(16), *q = file(), *t = NULL, *oc = cpu(16);
            for (int64_t i = 0; i < 16; ++i) {
                set(p, i, (double)i - 8);
                set(oc, i, 1.0);
            }
            sw_tensor *x = NULL, *y = NULL, *ones = NULL;
            expect_ok(sw_tiled_new(p, q, 2, grid, tile, &t), "a tiled operand");
            expect_ok(sw_tensor_new(t, 0, l, &x), "the full tensor");
            expect_ok(sw_tensor_new(oc, 0, l, &ones), "a cotangent");
            if (matmul)
                expect_ok(sw_matmul(x, x, &y), "matmul");
            else
                expect_ok(sw_unary("relu", x, &y), "relu");
            sw_debug_fail_alloc_after(k);
            sw_status st = sw_tensor_backward(y, ones);
            sw_debug_fail_alloc_after(-1);
            if (!st) {
                sw_value v;
                sw_tensor_get(sw_tensor_grad(x), 15, &v);
                /* matmul(a, b) is a b^T: with ones, d/dx[3,3] is twice
                 * the sum of column 3, x[j, 3] = j + 12 - 8. */
                double want = matmul ? 2.0 * (4 + 5 + 6 + 7) : 1.0;
                ok(v.as.f == want && sw_carrier_is_tiled(
                                         sw_tensor_carrier(sw_tensor_grad(x))),
                   "%s backward succeeds after %lld allocations",
                   matmul ? "matmul" : "relu", (long long)k);
            }
            ok(at(t, 3) == -5.0 && sw_carrier_version(t) == 0,
               "the input is unchanged after failure %lld", (long long)k);
            sw_tensor_unref(y);
            sw_tensor_unref(ones);
            sw_tensor_unref(x);
            sw_carrier_unref(t);
            sw_carrier_unref(p);
            sw_carrier_unref(q);
            sw_carrier_unref(oc);
            if (!st)
                break;
        }
    sw_layout_unref(l);
    leak_check(base, "a tiled backward under allocation failure");
}

/* The asynchronous forms: checks at submission, claims and holds while
 * pending (the executor held, so "pending" is deterministic), outcomes,
 * rollback, and release refused until the work ends. */
static void test_tiled_async(void) {
    int64_t grid[2] = {3, 2}, tile[2] = {2, 2};
    sw_carrier *p = cpu(24), *q = file(), *t = NULL;
    for (int64_t i = 0; i < 24; ++i)
        set(p, i, (double)i);
    expect_ok(sw_tiled_new(p, q, 2, grid, tile, &t), "a 6x4 tiled array");
    sw_move_request *r = NULL, *r2 = NULL;
    int64_t bad[1] = {6}, two[2] = {0, 1}, one[1] = {1}, other[1] = {4};
    expect_fail(sw_tiled_evict_async(t, 1, bad, &r), SW_EVALUE,
                "tile index 6 is outside the grid", "range checked at once");
    ok(r == NULL, "no request for a refused call");
    is_int(sw_tiled_pending(t), 0, "nothing pending");

    sw_debug_move_hold(1);
    expect_ok(sw_tiled_evict_async(t, 2, two, &r), "evict two tiles");
    is_int(sw_tiled_pending(t), 1, "one request pending");
    ok(!sw_move_request_done(r), "not done while the executor is held");
    expect_fail(sw_tiled_promote_async(t, 1, one, &r2), SW_ERUNTIME,
                "tile (1, 0) has a pending residency request: wait for it "
                "first (conflict)",
                "an overlapping request conflicts");
    expect_fail(sw_tiled_promote(t, 1, one), SW_ERUNTIME,
                "tile (1, 0) has a pending residency request: wait for it "
                "first (conflict)",
                "so does a blocking one");
    expect_ok(sw_tiled_evict_async(t, 1, other, &r2), "a disjoint request");
    is_int(sw_tiled_pending(t), 2, "two pending");
    expect_fail(sw_carrier_release_storage(t), SW_ERUNTIME,
                "TiledEvictable has 2 pending requests: wait for them before "
                "releasing it",
                "release refused while pending");
    ok(!sw_carrier_is_released(t), "still live");
    sw_debug_move_hold(0);
    sw_tensor *none = t ? (sw_tensor *)1 : NULL;
    expect_ok(sw_move_request_wait(r, &none), "the eviction completes");
    ok(none == NULL, "residency has no result");
    expect_ok(sw_move_request_wait(r2, NULL), "the other too");
    sw_move_wait_idle();
    is_int(sw_tiled_pending(t), 0, "nothing pending afterwards");
    int valid, dirty;
    is_int(where(t, 1, &valid, &dirty), SW_TILE_SECONDARY, "tile 1 evicted");
    is_int(where(t, 4, &valid, &dirty), SW_TILE_SECONDARY, "tile 4 evicted");
    is_int(where(t, 2, &valid, &dirty), SW_TILE_PRIMARY, "tile 2 stays");
    ok(at(t, 1) == 1.0 && at(t, 21) == 21.0, "values survive");
    sw_move_request_unref(r);
    sw_move_request_unref(r2);
    r = r2 = NULL;

    /* A projection holds its tiles: writes there and evictions wait;
     * reads and other tiles go on. */
    sw_layout *l = parse("(6,4):(1,6)");
    sw_tensor *x = NULL, *y = NULL;
    expect_ok(sw_tensor_new(t, 0, l, &x), "the full tensor");
    int64_t counts[2] = {1, 1}, coords[2] = {0, 0};
    int64_t wrong[2] = {1, 1}, far[2] = {3, 0};
    expect_fail(sw_tiled_project_async(x, 2, wrong, far, NULL, &r), SW_EVALUE,
                "selected tile coordinate 3 is outside the grid on axis 0 "
                "(extent 3)",
                "projection checks at submission");
    sw_debug_move_hold(1);
    expect_ok(sw_tiled_project_async(x, 2, counts, coords, NULL, &r),
              "project tile (0, 0)");
    sw_value v = sw_value_f64(5.0);
    expect_fail(sw_carrier_set(t, 0, &v), SW_ERUNTIME,
                "tile (0, 0) is pinned by a pending projection or scatter: "
                "wait for it before writing",
                "a write to a selected slot");
    int64_t first[1] = {0};
    expect_fail(sw_tiled_evict(t, 1, first), SW_ERUNTIME,
                "tile (0, 0) is pinned by work in progress",
                "evicting a held tile");
    expect_ok(sw_carrier_set(t, 2, &v), "a write elsewhere");
    ok(at(t, 0) == 0.0, "reads go on");
    sw_debug_move_hold(0);
    expect_ok(sw_move_request_wait(r, &y), "the projection completes");
    ok(y && sw_layout_size(sw_tensor_layout(y)) == 4, "a 2x2 compact tensor");
    if (y) {
        sw_tensor_get(y, 3, &v);
        ok(v.as.f == 7.0, "compact (1, 1) is source slot 7");
    }
    sw_move_wait_idle();
    expect_ok(sw_carrier_set(t, 0, &v), "writable again");

    /* A scatter, asynchronously, and its checks. */
    sw_tensor *z = NULL;
    expect_fail(sw_tiled_scatter_async(y, x, 2, counts, coords, 7, &r2),
                SW_EVALUE, "reduction must be replace or add",
                "scatter checks the reduction");
    expect_ok(sw_tiled_scatter_async(y, x, 2, counts, coords,
                                     SW_SCATTER_REPLACE, &r2),
              "scatter back");
    expect_ok(sw_move_request_wait(r2, &z), "the scatter completes");
    ok(z && sw_carrier_is_tiled(sw_tensor_carrier(z)), "a tiled result");
    if (z) {
        sw_tensor_get(z, 7, &v);
        ok(v.as.f == 7.0, "scattered value");
    }
    sw_move_wait_idle();
    sw_tensor_unref(z);
    sw_tensor_unref(y);
    sw_move_request_unref(r);
    sw_move_request_unref(r2);
    r = r2 = NULL;

    /* A failed residency request rolls back and can be retried. */
    expect_ok(sw_tiled_evict(t, 1, first), "tile 0 to the secondary");
    sw_debug_fail_alloc_after(0);
    sw_status st = sw_tiled_promote_async(t, 1, first, &r);
    sw_debug_fail_alloc_after(-1);
    ok(st == SW_ENOMEM || st == SW_OK, "promotion under allocation failure");
    if (r) {
        sw_move_request_wait(r, NULL);
        sw_clear_error();
        sw_move_request_unref(r);
        r = NULL;
    }
    sw_move_wait_idle();
    is_int(sw_tiled_pending(t), 0, "no claim left behind");
    expect_ok(sw_tiled_promote(t, 1, first), "the retry");
    is_int(where(t, 0, &valid, &dirty), SW_TILE_PRIMARY, "promoted");
    expect_ok(sw_carrier_release_storage(t), "release once idle");
    sw_tensor_unref(x);
    sw_layout_unref(l);
    sw_carrier_unref(t);
    sw_carrier_unref(p);
    sw_carrier_unref(q);
}

int main(void) {
    test_geometry();
    test_footprints();
    test_tiled_construction();
    test_tiled_invalid_and_rollback();
    test_tiled_operations();
    test_tiled_projection();
    test_tiled_scatter();
    test_tiled_policy();
#if defined(__linux__)
    test_tiled_discard();
#endif
    test_tiled_async();
    test_tiled_injection();
    test_tiled_backward_injection();
    return done_testing();
}
