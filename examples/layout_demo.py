"""The StrideWeave layout algebra at work (run it with ``make demo``).

A layout maps logical coordinates to physical indices. It is written in
CuTe's notation ``shape:stride``; parentheses nest modes, and an integer
index is split over the modes first-mode-fastest. The demo builds a
hierarchical layout, divides it into tiles, shows which tile and which
offset every element of a small matrix lands in, and ends with a complement
and two products. The tilings and the products are also drawn, as SVG files
in the folder given as the first argument (default: layout-demo-pictures).
"""

import sys
import textwrap
from pathlib import Path

from strideweave import Layout, Shape, Stride
from strideweave.viz import layout_svg


def layout(shape: list, stride: list) -> Layout:
    return Layout(Shape(shape), Stride(stride))


def print_grids(titles: list[str], grids: list[list[list[str]]]) -> None:
    """Prints tables side by side under their titles, one cell per element."""
    width = max(len(cell) for grid in grids for row in grid for cell in row)
    cols = [
        max(len(title), len(grid[0]) * (width + 1) - 1)
        for title, grid in zip(titles, grids, strict=True)
    ]

    def line(parts: list[str]) -> None:
        print("   " + "     ".join(p.ljust(c) for p, c in zip(parts, cols, strict=True)).rstrip())

    line(titles)
    for r in range(len(grids[0])):
        line([" ".join(cell.rjust(width) for cell in grid[r]) for grid in grids])


def show_tiling(matrix: Layout, rows: int, tiler: list[Layout]) -> Layout:
    """Prints, for each element (row, col), its tile and its offset in the tile."""
    cols = matrix.size // rows
    zipped = matrix.zipped_divide(tiler)
    tiles, tile_size = zipped[1].size, zipped[0].size
    tile_of = [[""] * cols for _ in range(rows)]
    offset_of = [[""] * cols for _ in range(rows)]
    for t in range(tiles):
        for e in range(tile_size):
            # Mode 0 of a zipped divide walks inside a tile, mode 1 picks the
            # tile; the index is the element's place in the column-major matrix.
            m = zipped([e, t])
            tile_of[m % rows][m // rows] = str(t)
            offset_of[m % rows][m // rows] = str(e)
    print(f"{matrix} divided by [{', '.join(map(str, tiler))}] -> {zipped}")
    print_grids(["tile of each element", "offset inside its tile"], [tile_of, offset_of])
    return zipped


def main() -> None:
    a = layout([9, [4, 8]], [59, [13, 1]])
    print(f"A = {a}: rank {a.rank}, depth {a.depth}, size {a.size}, cosize {a.cosize}")
    # 127 = 1 + 9 * (2 + 4 * 3): the logical index of the coordinate (1,(2,3)).
    print(f"A((1,(2,3))) = {a([1, [2, 3]])}, A(127) = {a(127)}")

    tiler = [Layout.leaf(3, 3), layout([2, 4], [1, 8])]
    print(f"\nA divided mode by mode by the tiler [{tiler[0]}, {tiler[1]}]:")
    print(f"  zipped  {a.zipped_divide(tiler)}")
    print(f"  tiled   {a.tiled_divide(tiler)}")
    print(f"  flat    {a.flat_divide(tiler)}")

    # An 8x6 column-major matrix, cut into 4x3 tiles: first contiguous tiles,
    # then strided ones that take every other row and every other column.
    matrix = layout([8, 6], [1, 8])
    print()
    contiguous = show_tiling(matrix, 8, [Layout.leaf(4, 1), Layout.leaf(3, 1)])
    print()
    strided = show_tiling(matrix, 8, [Layout.leaf(4, 2), Layout.leaf(3, 2)])

    b = Layout.leaf(4, 2)
    c = b.complement(24)
    both = Layout.make_layout(b, c)
    print(f"\ncomplement of {b} in 24: {c}")
    print(f"  ({b}, {c}) = {both}, a bijection onto 0..23: {both.is_compact()}")

    # A 2x2 block repeated 2x3 times: blocked keeps each block together,
    # raked deals the block's elements out across the whole 4x6 grid.
    block, pattern = layout([2, 2], [1, 2]), layout([2, 3], [1, 2])
    blocked, raked = block.blocked_product(pattern), block.raked_product(pattern)
    print(f"\n{block} repeated in the pattern {pattern}:")
    print(f"  blocked product {blocked}")
    print(f"  raked product   {raked}")
    print_grids(
        ["blocked: index of (r,c)", "raked: index of (r,c)"],
        [[[str(p([r, c])) for c in range(6)] for r in range(4)] for p in (blocked, raked)],
    )

    # The pictures: a tiling's columns are its tiles (the matrix indices each
    # one holds), a product's cells the indices its grid maps to.
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("layout-demo-pictures")
    folder.mkdir(parents=True, exist_ok=True)
    pictures = {
        "A.svg": layout_svg(a),
        "contiguous_tiles.svg": layout_svg(contiguous, color_by="tile"),
        "strided_tiles.svg": layout_svg(strided, color_by="tile"),
        "blocked_product.svg": layout_svg(blocked),
        "raked_product.svg": layout_svg(raked),
    }
    for name, svg in pictures.items():
        (folder / name).write_text(svg, encoding="utf-8")
    print(f"\npictures in {folder}/: {', '.join(pictures)}")

    try:
        Layout.leaf(12, 1).divide(Layout.leaf(5, 1))
    except ValueError as err:
        print("\n12:1 / 5:1 raises ValueError:")
        print(textwrap.fill(str(err), 76, initial_indent="  ", subsequent_indent="  "))


if __name__ == "__main__":
    main()
