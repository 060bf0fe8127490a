"""TiledEvictable: tiled residency of one logical array across two tiers.

What is built so far: the value types of section 8.2 (``TileSelection``,
``TileSet``, ``ResidencyPlan``, ``ResidencyPolicy``) and, in the library,
the tile geometry and the tile-footprint compatibility check
(``strideweave/tiled.h``). The ``TiledEvictable`` carrier itself, its
residency requests, projection and scatter are not built yet.

Examples:
    >>> from strideweave.carriers.tiled_evictable import TileSelection
    >>> TileSelection([[0, 2], [1]]).tile_set
    TileSet(coordinates=((0, 1), (2, 1)))
"""

from strideweave.carriers.tiled_evictable.values import (
    ResidencyPlan,
    ResidencyPolicy,
    TileSelection,
    TileSet,
)

__all__ = ["ResidencyPlan", "ResidencyPolicy", "TileSelection", "TileSet"]
