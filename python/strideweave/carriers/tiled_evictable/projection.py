"""Projection and scatter of selected tiles (the library's
``sw_tiled_project_async`` and ``sw_tiled_scatter_async``).

``project`` gathers the tiles a TileSelection names from a full
TiledEvictable tensor into one compact tensor on the primary tier's class;
``scatter`` is its inverse, making a fresh TiledEvictable. Both check
everything before they return, then run on the background executor (at
once, on the calling thread, when a residency policy, a Generic tier or a
Python carrier is involved) and hold the selected tiles until they end.

Examples:
    >>> import strideweave as sw
    >>> from strideweave.carriers.tiled_evictable.projection import project
    >>> t = sw.TiledEvictable(sw.CPU(8), sw.CPU(8), (2, 2), (2, 2))
    >>> x = sw.Tensor(t, 0, sw.Layout((4, 2), (1, 4)))
    >>> project(x, sw.TileSelection([[1], [0]])).wait().shape
    (2, 2)
"""

from __future__ import annotations

from typing import Any

from strideweave import _native
from strideweave._native import AwaitMove, AwaitProjection
from strideweave.carriers.tiled_evictable.values import TileSelection
from strideweave.tensor import Tensor

__all__ = ["project", "scatter"]


def _selection(selection: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if not isinstance(selection, TileSelection):
        raise TypeError("selection must be a TileSelection")
    coords = tuple(c for axis in selection.per_axis for c in axis)
    return selection.compact_grid_shape, coords


def project(tensor: Any, selection: Any, destination: Any = None) -> AwaitProjection:
    """Gathers the selected tiles of a full TiledEvictable tensor.

    Args:
        tensor: a full, tile-compatible Tensor on a TiledEvictable.
        selection: the TileSelection of tiles to gather.
        destination: a live, mutable Carrier of the primary tier's exact
            class and dtype holding at least the compact size (an empty
            FileBacked or OpenCL one grows), or None for a fresh one.

    Returns:
        AwaitProjection: wait() gives the compact Tensor, column-major over
        the selected tile count times the tile extent on each axis.

    Raises:
        TypeError: a non-Tensor, a Tensor on another carrier, a
            non-selection, a destination of another class or dtype.
        ValueError: a rank, range or footprint mismatch, a destination too
            small.
        RuntimeError: a released carrier, an immutable destination.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError("tensor must be a Tensor")
    counts, coords = _selection(selection)
    return _native._tiled_project(tensor, counts, coords, destination)


def scatter(
    compact: Any, template: Any, selection: Any, *, reduction: str = "replace"
) -> AwaitMove:
    """Scatters a compact tensor into a fresh TiledEvictable like template.

    Args:
        compact: a Tensor on the template's primary tier class with the
            selection's compact shape.
        template: a full Tensor on a TiledEvictable.
        selection: the TileSelection the compact tiles go to.
        reduction: "replace" (the compact values) or "add" (template plus
            compact).

    Returns:
        AwaitMove: wait() gives the new Tensor (template's layout, version 1;
        the selected tiles primary, valid and dirty; the others invalid).

    Raises:
        ValueError: an unknown reduction, a shape or range mismatch.
        TypeError: non-Tensors, a compact of another class or dtype.
        RuntimeError: released carriers; "add" onto an invalid tile.
    """
    if reduction not in ("replace", "add"):
        raise ValueError(f"reduction must be 'replace' or 'add', not {reduction!r}")
    if not isinstance(compact, Tensor):
        raise TypeError("compact must be a Tensor")
    if not isinstance(template, Tensor):
        raise TypeError("template must be a Tensor")
    counts, coords = _selection(selection)
    return _native._tiled_scatter(compact, template, counts, coords, reduction == "add")
