"""Pictures of layouts (strideweave.viz): one cell per coordinate, labelled
with its index and coloured by index or tile, hierarchical modes grouped,
the Jupyter hooks, and the argument checks. The SVG is read back as XML;
where rsvg-convert is installed it is also rendered, and the colours of the
rendered cells are checked."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
import strideweave as sw
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
    pixels = _read_png(tmp_path / "p.png")
    for r in range(2):
        for c in range(3):
            # The centre-left of each cell, clear of its label.
            x, y = 40 + c * 40 + 6, 40 + r * 40 + 20
            want = PALETTE[layout((r, c)) % len(PALETTE)]
            rgb = tuple(int(want[k : k + 2], 16) for k in (1, 3, 5))
            assert pixels[y][x][:3] == rgb, (r, c)


def _read_png(path):
    """The RGBA rows of a non-interlaced 8-bit RGBA PNG (what rsvg writes)."""
    import struct
    import zlib

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    width, height, depth, colour = header[0], header[1], header[2], header[3]
    assert depth == 8 and colour == 6
    raw, stride, rows, prev = zlib.decompress(chunks), width * 4, [], bytearray(width * 4)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - 4] if i >= 4 else 0
            b, c = prev[i], prev[i - 4] if i >= 4 else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * 4 : x * 4 + 4]) for x in range(width)])
        prev = line
    return rows
