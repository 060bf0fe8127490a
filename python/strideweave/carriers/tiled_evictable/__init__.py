"""TiledEvictable: tiled residency of one logical array across two tiers.

What is built so far: the value types of section 8.2 (``TileSelection``,
``TileSet``, ``ResidencyPlan``, ``ResidencyPolicy``), and ``TiledEvictable``
as a face over the library's carrier (``strideweave/tiled.h``): geometry,
tier ownership, tile states, routed reads and writes, blocking ``promote``
and ``evict`` with rollback, asynchronous residency (``promote_async``,
``evict_async`` returning ``AwaitResidency``), residency policies with
pinning, the tile-footprint checks, the six direct operations with
gradients as TiledEvictable tensors, ``projection.project`` (returning
``AwaitProjection``) and ``projection.scatter`` with their gradients, and
release.

Examples:
    >>> from strideweave.carriers.tiled_evictable import TileSelection
    >>> TileSelection([[0, 2], [1]]).tile_set
    TileSet(coordinates=((0, 1), (2, 1)))
"""

from strideweave._native import AwaitProjection, AwaitResidency
from strideweave.carriers.tiled_evictable.carrier import TiledEvictable, TiledResidencyFacet
from strideweave.carriers.tiled_evictable.values import (
    ResidencyPlan,
    ResidencyPolicy,
    TileSelection,
    TileSet,
)

__all__ = [
    "AwaitProjection",
    "AwaitResidency",
    "ResidencyPlan",
    "ResidencyPolicy",
    "TileSelection",
    "TileSet",
    "TiledEvictable",
    "TiledResidencyFacet",
]
