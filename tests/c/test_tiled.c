/*
 * Tiled geometry (include/strideweave/tiled.h): construction checks, tile
 * and slot numbering against a direct enumeration, and the footprint
 * compatibility check with each of its failure kinds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    sw_layout_release(l);
    /* A permutation inside each tile. */
    l = parse("((2,2),(2,2)):((4,2),(1,8))");
    expect_ok(sw_tile_check_footprints(&g, 0, l), "permuted inside tiles");
    sw_layout_release(l);
    l = parse("(4,4):(4,1)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (1, 0) remaps onto carrier "
                "tile (0, 1)",
                "a row-major layout");
    sw_layout_release(l);
    l = parse("(4,4):(0,4)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) aliases slot 0",
                "a stride-0 layout");
    sw_layout_release(l);
    /* (4,4):(1,4) shifted by one slot: tile (0,0) reaches tile (1,0). */
    l = parse("(4,4):(1,4)");
    expect_fail(sw_tile_check_footprints(&g, 1, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) spans carrier tiles "
                "(0, 0) and (1, 0)",
                "an offset tensor");
    sw_layout_release(l);
    /* Nested strides that send logical tile (1, 0) to carrier (0, 1). */
    l = parse("((2,2),4):((1,8),2)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) spans carrier tiles "
                "(0, 0) and (1, 0)",
                "a layout that mixes tiles");
    sw_layout_release(l);
    l = parse("(4,4):(1,5)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) spans carrier tiles "
                "(0, 0) and (1, 0)",
                "a padded stride");
    sw_layout_release(l);
    l = parse("(4,4):(1,4)");
    expect_fail(sw_tile_check_footprints(&g, 8, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) remaps onto carrier "
                "tile (0, 1)",
                "an offset by whole tiles");
    expect_fail(sw_tile_check_footprints(&g, 14, l), SW_EVALUE,
                "tile footprints: logical tile (0, 0) omits slots: it "
                "reaches slot 18 outside the array",
                "an offset past the end");
    sw_layout_release(l);
    l = parse("(4,2):(1,4)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tensor geometry does not match the tile grid: mode 1 has "
                "extent 2, the grid 4",
                "a shape mismatch");
    sw_layout_release(l);
    l = parse("(16):(1)");
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_EVALUE,
                "tensor geometry does not match the tile grid: 1 top-level "
                "modes for a rank-2 grid",
                "a rank mismatch");
    sw_layout_release(l);
    int64_t base = sw_debug_live_allocs();
    l = parse("(4,4):(1,4)");
    sw_debug_fail_alloc_after(0);
    expect_fail(sw_tile_check_footprints(&g, 0, l), SW_ENOMEM, NULL,
                "out of memory");
    sw_debug_fail_alloc_after(-1);
    sw_layout_release(l);
    leak_check(base, "footprint checks");
}

int main(void) {
    test_geometry();
    test_footprints();
    return done_testing();
}
