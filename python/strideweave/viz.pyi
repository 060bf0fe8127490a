"""Pictures of layouts: the index map of a rank-1 or rank-2 layout as SVG."""

from strideweave.core.layout import Layout, Shape

__all__ = ["layout_svg"]

PALETTE: tuple[str, ...]
REPR_LIMIT: int

def _leaf_extents(shape: Shape) -> list[int]:
    """The extents of a mode's leaves, first (fastest) first."""

def _group_steps(shape: Shape) -> list[int]:
    """Where a mode's blocks end: the running products of its leaf extents,
    without the whole extent (one per level of grouping).
    """

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

def _repr_html(tensor: object) -> str:
    """Tensor._repr_html_: the repr, and the picture of the layout when
    Layout._repr_svg_ draws one.
    """

def _repr_svg(layout: Layout) -> str | None:
    """Layout._repr_svg_: the picture, or None (Jupyter then shows the text)
    for ranks above 2 and pictures of more than REPR_LIMIT cells.
    """
