"""Projection and scatter of selected tiles."""

from typing import Any

from strideweave.carriers.move import AwaitMove
from strideweave.carriers.tiled_evictable import AwaitProjection

__all__ = ["project", "scatter"]

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
