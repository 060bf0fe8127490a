"""TiledEvictable: tiled residency of one logical array across two tiers.

What is built so far: the value types of section 8.2 (``TileSelection``,
``TileSet``, ``ResidencyPlan``, ``ResidencyPolicy``), and ``TiledEvictable``
as a face over the library's carrier (``strideweave/tiled.h``): geometry,
tier ownership, tile states, routed reads and writes, blocking ``promote``
and ``evict`` with rollback, the tile-footprint checks, the six direct
operations with gradients as TiledEvictable tensors, and release. Not built
yet: asynchronous residency (``promote_async``, ``evict_async``,
``AwaitResidency``), consulting the residency policy, pinning,
``project`` / ``AwaitProjection`` and ``scatter``.

Examples:
    >>> from strideweave.carriers.tiled_evictable import TileSelection
    >>> TileSelection([[0, 2], [1]]).tile_set
    TileSet(coordinates=((0, 1), (2, 1)))
"""

from strideweave.carriers.tiled_evictable.carrier import TiledEvictable, TiledResidencyFacet
from strideweave.carriers.tiled_evictable.values import (
    ResidencyPlan,
    ResidencyPolicy,
    TileSelection,
    TileSet,
)

__all__ = [
    "ResidencyPlan",
    "ResidencyPolicy",
    "TileSelection",
    "TileSet",
    "TiledEvictable",
    "TiledResidencyFacet",
]
