"""Pictures of layouts: the index map of a rank-1 or rank-2 layout as SVG.

Each cell of the picture is one logical coordinate: rank 1 is one row of
``size`` cells, rank 2 a grid whose rows are the coordinates of mode 0 and
whose columns those of mode 1 (a hierarchical mode counts its coordinates
colexicographically, as ``layout((i, j))`` does). A cell shows the index
the layout maps it to and is coloured by that index or by its tile (its
column: mode 1 of a divided layout picks the tile, mode 0 walks it).
Hierarchical modes are grouped: heavier lines separate the blocks of their
sub-modes. The SVG is plain text, written from the public API alone, with
no plotting dependency; Jupyter shows it through ``Layout._repr_svg_``.
"""

from __future__ import annotations

from html import escape

from strideweave.core.layout import Layout, Shape

__all__ = ["layout_svg"]

# Eight light colours that keep a black label readable (as CuTe's pictures).
PALETTE = (
    "#cbe4f9",
    "#cdf5f6",
    "#eff9da",
    "#f9ebdf",
    "#f9d8d6",
    "#d6cdea",
    "#f4d9ec",
    "#e2e2e2",
)

# Pictures larger than this many cells are not drawn for Jupyter.
REPR_LIMIT = 4096


def _leaf_extents(shape: Shape) -> list[int]:
    """The extents of a mode's leaves, first (fastest) first."""
    if shape.is_int:
        return [shape.logical_size]
    out: list[int] = []
    for child in shape:
        out += _leaf_extents(child)
    return out


def _group_steps(shape: Shape) -> list[int]:
    """Where a mode's blocks end: the running products of its leaf extents,
    without the whole extent (one per level of grouping)."""
    steps, run = [], 1
    for extent in _leaf_extents(shape)[:-1]:
        run *= extent
        if run > 1:
            steps.append(run)
    return steps


def layout_svg(layout: Layout, *, color_by: str = "index", cell: int = 32) -> str:
    """The index map of a rank-1 or rank-2 layout as an SVG picture.

    Args:
        layout: a Layout of rank 1 or 2 (a rank-0 layout draws as one cell).
        color_by: ``"index"`` colours a cell by the index it maps to (equal
            indices share a colour, so a non-injective layout shows its
            repeats); ``"tile"`` by its column (mode 1), which for a divided
            layout is its tile and for a product its copy.
        cell: the side of a cell in pixels, at least 8.

    Returns:
        str: an ``<svg>`` document.

    Raises:
        TypeError: layout is not a Layout, or cell is not an int.
        ValueError: a rank above 2, an unknown color_by, or a cell below 8.

    Examples:
        >>> import strideweave as sw
        >>> from strideweave.viz import layout_svg
        >>> svg = layout_svg(sw.Layout(sw.Shape([2, 3]), sw.Stride([3, 1])))
        >>> svg.startswith("<svg") and svg.count("<rect class='cell'") == 6
        True
    """
    if not isinstance(layout, Layout):
        raise TypeError("layout must be a Layout")
    if color_by not in ("index", "tile"):
        raise ValueError("color_by must be 'index' or 'tile'")
    if not isinstance(cell, int) or isinstance(cell, bool):
        raise TypeError("cell must be an int")
    if cell < 8:
        raise ValueError("cell must be at least 8 pixels")
    rank = layout.rank
    if rank > 2:
        raise ValueError(f"layout_svg draws layouts of rank 1 or 2, not {rank}")
    if rank == 2:
        rows, cols = layout[0].size, layout[1].size
        row_steps, col_steps = _group_steps(layout[0].shape), _group_steps(layout[1].shape)

        def index(r: int, c: int) -> int:
            return layout((r, c))

    else:
        rows, cols = 1, layout.size
        row_steps, col_steps = [], _group_steps(layout.shape) if rank == 1 else []

        def index(r: int, c: int) -> int:
            return layout(c)

    margin = cell
    width, height = margin + cols * cell + 2, margin + rows * cell + 2
    font = max(8, cell * 3 // 8)
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' font-family='monospace' font-size='{font}'>",
        f"<title>{escape(repr(layout))}</title>",
    ]
    for c in range(cols):
        x = margin + c * cell + cell // 2
        out.append(
            f"<text class='col' x='{x}' y='{margin * 2 // 3}' text-anchor='middle'>{c}</text>"
        )
    for r in range(rows):
        y = margin + r * cell + cell // 2
        out.append(
            f"<text class='row' x='{margin // 2}' y='{y}' text-anchor='middle' "
            f"dominant-baseline='central'>{r}</text>"
        )
    for r in range(rows):
        for c in range(cols):
            value = index(r, c)
            colour = PALETTE[(value if color_by == "index" else c) % len(PALETTE)]
            x, y = margin + c * cell, margin + r * cell
            out.append(
                f"<rect class='cell' x='{x}' y='{y}' width='{cell}' height='{cell}' "
                f"fill='{colour}' stroke='#000' stroke-width='0.5' "
                f"data-row='{r}' data-col='{c}' data-index='{value}'/>"
            )
            out.append(
                f"<text class='index' x='{x + cell // 2}' y='{y + cell // 2}' "
                f"text-anchor='middle' dominant-baseline='central'>{value}</text>"
            )
    # Grouping: a heavier line where each block of a hierarchical mode ends.
    for level, step in enumerate(col_steps):
        for c in range(step, cols, step):
            x = margin + c * cell
            out.append(
                f"<line class='group' x1='{x}' y1='{margin}' x2='{x}' y2='{margin + rows * cell}' "
                f"stroke='#000' stroke-width='{1.5 + level}'/>"
            )
    for level, step in enumerate(row_steps):
        for r in range(step, rows, step):
            y = margin + r * cell
            out.append(
                f"<line class='group' x1='{margin}' y1='{y}' x2='{margin + cols * cell}' y2='{y}' "
                f"stroke='#000' stroke-width='{1.5 + level}'/>"
            )
    out.append(
        f"<rect class='frame' x='{margin}' y='{margin}' width='{cols * cell}' "
        f"height='{rows * cell}' fill='none' stroke='#000' stroke-width='1.5'/>"
    )
    out.append("</svg>")
    return "\n".join(out)


def _repr_html(tensor: object) -> str:
    """Tensor._repr_html_: the repr, and the picture of the layout when
    Layout._repr_svg_ draws one."""
    text = f"<pre>{escape(repr(tensor))}</pre>"
    layout = getattr(tensor, "layout", None)
    picture = _repr_svg(layout) if isinstance(layout, Layout) else None
    return text if picture is None else text + picture


def _repr_svg(layout: Layout) -> str | None:
    """Layout._repr_svg_: the picture, or None (Jupyter then shows the text)
    for ranks above 2 and pictures of more than REPR_LIMIT cells."""
    if layout.rank > 2 or layout.size > REPR_LIMIT:
        return None
    return layout_svg(layout)
