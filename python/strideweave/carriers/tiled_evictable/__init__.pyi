"""TiledEvictable: tiled residency of one logical array across two tiers."""

from typing import final

from strideweave.carriers.move import AwaitResult
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
from strideweave.tensor import Tensor

@final
class AwaitProjection(AwaitResult[Tensor]): ...

@final
class AwaitResidency(AwaitResult[None]): ...

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
