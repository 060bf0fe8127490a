"""TiledEvictable: tiled residency of one logical array across two tiers."""

from strideweave.carriers.tiled_evictable.carrier import TiledEvictable as TiledEvictable
from strideweave.carriers.tiled_evictable.carrier import (
    TiledResidencyFacet as TiledResidencyFacet,
)
from strideweave.carriers.tiled_evictable.values import (
    ResidencyPlan as ResidencyPlan,
)
from strideweave.carriers.tiled_evictable.values import (
    ResidencyPolicy as ResidencyPolicy,
)
from strideweave.carriers.tiled_evictable.values import (
    TileSelection as TileSelection,
)
from strideweave.carriers.tiled_evictable.values import (
    TileSet as TileSet,
)

__all__ = [
    "ResidencyPlan",
    "ResidencyPolicy",
    "TileSelection",
    "TileSet",
    "TiledEvictable",
    "TiledResidencyFacet",
]
