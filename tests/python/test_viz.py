"""Pictures of layouts (strideweave.viz): one cell per coordinate, labelled
with its index and coloured by index or tile, hierarchical modes grouped,
the Jupyter hooks, and the argument checks. The SVG is read back as XML;
where rsvg-convert is installed it is also rendered, and the colours of the
rendered cells are checked; a real browser (headless Chromium) renders it
too, and the colour of every cell's pixels is checked against the layout
(in CI, STRIDEWEAVE_REQUIRE_BROWSER makes a missing browser a failure)."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
import strideweave as sw
from helpers_browser import chromium_or_skip, hex_rgb, read_png, screenshot_svg
from strideweave.viz import PALETTE, REPR_LIMIT, layout_svg

NS = "{http://www.w3.org/2000/svg}"


def L(shape, stride):
    return sw.Layout(sw.Shape(shape), sw.Stride(stride))


def cells(svg):
    root = ET.fromstring(svg)
    return [r for r in root.iter(f"{NS}rect") if r.get("class") == "cell"]


def test_rank_two_cells_are_the_index_map():
    layout = L([3, 4], [4, 1])  # row-major 3x4
    svg = layout_svg(layout)
    got = cells(svg)
    assert len(got) == 12
    for rect in got:
        r, c = int(rect.get("data-row")), int(rect.get("data-col"))
        assert int(rect.get("data-index")) == layout((r, c)) == 4 * r + c
        assert rect.get("fill") == PALETTE[(4 * r + c) % len(PALETTE)]
    labels = [t.text for t in ET.fromstring(svg).iter(f"{NS}text") if t.get("class") == "index"]
    assert sorted(map(int, labels)) == list(range(12))
    assert "<title>(3,4):(4,1)</title>" in svg


def test_tiles_share_a_colour():
    divided = L([8, 6], [1, 8]).zipped_divide([sw.Layout.leaf(4, 1), sw.Layout.leaf(3, 1)])
    got = cells(layout_svg(divided, color_by="tile"))
    tiles = {}
    for rect in got:
        tiles.setdefault(int(rect.get("data-col")), set()).add(rect.get("fill"))
    assert len(tiles) == divided[1].size == 4
    assert all(len(fills) == 1 for fills in tiles.values())
    assert len({next(iter(f)) for f in tiles.values()}) == 4


def test_hierarchical_modes_are_grouped():
    layout = L([[2, 2], [2, 3]], [[4, 1], [2, 8]])
    root = ET.fromstring(layout_svg(layout))
    lines = [g for g in root.iter(f"{NS}line") if g.get("class") == "group"]
    # Mode 0 = (2,2): one line after row 2; mode 1 = (2,3): after columns 2 and 4.
    horizontal = sorted(float(g.get("y1")) for g in lines if g.get("y1") == g.get("y2"))
    vertical = sorted(float(g.get("x1")) for g in lines if g.get("x1") == g.get("x2"))
    assert len(horizontal) == 1 and len(vertical) == 2
    assert len(cells(layout_svg(L([4, 6], [1, 4])))) == 24  # flat: no grouping
    flat_lines = [g for g in ET.fromstring(layout_svg(L([4, 6], [1, 4]))).iter(f"{NS}line")]
    assert flat_lines == []


def test_rank_one_and_repeats():
    got = cells(layout_svg(L([5], [0])))  # a broadcast: every cell is index 0
    assert len(got) == 5 and {r.get("data-index") for r in got} == {"0"}
    assert len({r.get("fill") for r in got}) == 1
    assert len(cells(layout_svg(sw.Layout.leaf(7, 2)))) == 7


def test_jupyter_hooks():
    layout = L([2, 3], [1, 2])
    assert layout._repr_svg_() == layout_svg(layout)
    assert L([2, 2, 2], [1, 2, 4])._repr_svg_() is None  # rank 3
    assert sw.Layout.leaf(REPR_LIMIT + 1, 1)._repr_svg_() is None  # too many cells
    t = sw.Tensor(sw.CPU(6), 0, layout)
    html = t._repr_html_()
    assert html.startswith("<pre>Tensor(") and html.endswith("</svg>")
    big = sw.Tensor(sw.CPU(8), 0, L([2, 2, 2], [1, 2, 4]))
    assert "<svg" not in big._repr_html_()


def test_argument_checks():
    with pytest.raises(TypeError, match="^layout must be a Layout$"):
        layout_svg("(2,3):(1,2)")
    with pytest.raises(ValueError, match="rank 1 or 2, not 3"):
        layout_svg(L([2, 2, 2], [1, 2, 4]))
    with pytest.raises(ValueError, match="color_by must be"):
        layout_svg(L([2], [1]), color_by="value")
    with pytest.raises(ValueError, match="at least 8"):
        layout_svg(L([2], [1]), cell=4)
    with pytest.raises(TypeError, match="cell must be an int"):
        layout_svg(L([2], [1]), cell=10.0)


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="rsvg-convert is not installed")
def test_rendered_picture_has_the_colours(tmp_path):
    layout = L([2, 3], [3, 1])
    (tmp_path / "p.svg").write_text(layout_svg(layout, cell=40))
    subprocess.run(
        ["rsvg-convert", str(tmp_path / "p.svg"), "-o", str(tmp_path / "p.png")], check=True
    )
    pixels = read_png(tmp_path / "p.png")
    for r in range(2):
        for c in range(3):
            # The centre-left of each cell, clear of its label.
            x, y = 40 + c * 40 + 6, 40 + r * 40 + 20
            want = PALETTE[layout((r, c)) % len(PALETTE)]
            rgb = tuple(int(want[k : k + 2], 16) for k in (1, 3, 5))
            assert pixels[y][x][:3] == rgb, (r, c)


def _cell_colours(pixels, layout, cell):
    """The rendered colour of each cell (r, c): the pixels of a small patch
    left of the label, which must all agree."""
    rank2 = layout.rank == 2
    rows, cols = (layout[0].size, layout[1].size) if rank2 else (1, layout.size)
    out = {}
    for r in range(rows):
        for c in range(cols):
            x0, y0 = cell + c * cell, cell + r * cell  # the margin is one cell
            patch = {
                pixels[y][x][:3]
                for y in range(y0 + cell // 2 - 2, y0 + cell // 2 + 3)
                for x in range(x0 + 4, x0 + 8)
            }
            assert len(patch) == 1, f"cell ({r}, {c}) is not one flat colour: {sorted(patch)}"
            out[(r, c)] = patch.pop()
    return out


def _close(got, want):
    return all(abs(g - w) <= 2 for g, w in zip(got, want, strict=True))


def test_pictures_in_a_browser(tmp_path):
    browser = chromium_or_skip()
    cell = 40
    # Tiles: a 8 x 6 column-major matrix cut into 4 x 3 blocks, one colour per
    # tile (mode 1), every tile its own colour.
    tiled = L([8, 6], [1, 8]).zipped_divide([sw.Layout.leaf(4, 1), sw.Layout.leaf(3, 1)])
    # Values: a layout with repeats (stride 0), where equal indices share a colour.
    repeats = L([3, [2, 2]], [1, [0, 3]])
    for layout, color_by in ((tiled, "tile"), (repeats, "index")):
        svg = layout_svg(layout, color_by=color_by, cell=cell)
        root = ET.fromstring(svg)
        width, height = int(root.get("width")), int(root.get("height"))
        folder = tmp_path / color_by
        folder.mkdir()
        pixels = read_png(screenshot_svg(browser, svg, width, height, folder))
        assert len(pixels) >= height and len(pixels[0]) >= width, "the screenshot is too small"
        colours = _cell_colours(pixels, layout, cell)
        groups = {}
        for (r, c), rgb in colours.items():
            key = c if color_by == "tile" else layout((r, c))
            want = PALETTE[key % len(PALETTE)]
            assert _close(rgb, hex_rgb(want)), f"{layout} cell ({r}, {c}): {rgb}, not {want}"
            groups.setdefault(key, set()).add(rgb)
        # Cells of one tile (one index) share one colour; different tiles differ.
        assert all(len(g) == 1 for g in groups.values()), groups
        firsts = [next(iter(g)) for g in groups.values()]
        if color_by == "tile":
            assert len(groups) == 4 and len(set(firsts)) == 4
        else:
            assert sorted(groups) == sorted({layout(i) for i in range(layout.size)})
            assert len(set(firsts)) == len(groups)
