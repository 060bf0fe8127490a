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
class AwaitProjection(AwaitResult[Tensor]):
    """The handle of one TiledEvictable projection; wait() returns the compact Tensor.

    Returns:
        AwaitProjection: not constructible from Python.

    Examples:
        >>> from strideweave.carriers.tiled_evictable import AwaitProjection
        >>> from strideweave.carriers.move import AwaitResult
        >>> issubclass(AwaitProjection, AwaitResult)
        True
    """

@final
class AwaitResidency(AwaitResult[None]):
    """The handle of one promote_async or evict_async call; wait() returns None.

    Returns:
        AwaitResidency: not constructible from Python.

    Examples:
        >>> from strideweave.carriers.tiled_evictable import AwaitResidency
        >>> AwaitResidency()
        Traceback (most recent call last):
        TypeError: cannot create 'strideweave.carriers.tiled_evictable.AwaitResidency' instances
    """

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
