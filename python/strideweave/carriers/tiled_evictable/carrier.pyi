"""The TiledEvictable carrier: a Python face over the library's (tiled.h)."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, final

from strideweave.carriers.extension import CarrierDefinition, CarrierFacet
from strideweave.carriers.operation_capability import DependentCarrier
from strideweave.carriers.tiled_evictable import AwaitResidency
from strideweave.carriers.tiled_evictable.values import ResidencyPlan, TileSet

__all__ = ["TiledEvictable", "TiledResidencyFacet"]

@dataclass(frozen=True, slots=True)
class _TileState:
    """One tile's place and flags (``TiledEvictable.tile_state``)."""

    location: str
    valid: bool
    dirty: bool

@dataclass(frozen=True, slots=True)
class TiledResidencyFacet(CarrierFacet):
    """The residency interface of a TiledEvictable, found with
    ``carrier.require_facet(TiledResidencyFacet)``.

    Examples:
        >>> TiledResidencyFacet().kind
        'tiled-residency'
    """

    kind: str = ...
    def promote(self, carrier: TiledEvictable, tiles: Any) -> None:
        """Promotes tiles of carrier (see TiledEvictable.promote)."""
    def evict(self, carrier: TiledEvictable, tiles: Any) -> None:
        """Evicts tiles of carrier (see TiledEvictable.evict)."""

@final
class TiledEvictable(DependentCarrier):
    """One logical array cut into tiles, each resident in a primary or a
    secondary tier (or an implicit zero).

    Args:
        primary: the compute tier (a Carrier holding the whole extent, or
            an empty FileBacked or OpenCL one, which grows).
        secondary: the backing tier (likewise; mutable).
        grid_shape: tiles per axis.
        tile_shape: slots per tile per axis.
        residency_policy: an object with ``plan(required, purpose)``, or
            None (kept by identity; not consulted yet).

    Returns:
        TiledEvictable: the carrier; both tiers are owned by it until its
        release.

    Raises:
        TypeError: a non-Carrier tier, tiers of different dtypes, a policy
            without a callable ``plan``, a subclass.
        ValueError: a tier of another size, ranks that differ, a zero
            extent.
        RuntimeError: a released or owned tier; an OpenCL tier paired with
            a class it has no exact registered move with (FileBacked).

    Examples:
        >>> import strideweave as sw
        >>> t = TiledEvictable(sw.CPU(8), sw.FileBacked(dtype=sw.DType.Float32), (2, 2), (2, 1))
        >>> t.logical_shape, t.size(), len(t.primary_tiles)
        ((4, 2), 8, 4)
        >>> t.evict(TileSet([(1, 0)]))
        >>> t.tile_state((1, 0)).location
        'secondary'
    """
    def __new__(
        cls,
        primary: Any,
        secondary: Any,
        grid_shape: Iterable[int],
        tile_shape: Iterable[int],
        *,
        residency_policy: Any = None,
    ) -> TiledEvictable: ...
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Construction happens in __new__."""
    @property
    def primary(self) -> Any:
        """The primary (compute) tier."""
    @property
    def secondary(self) -> Any:
        """The secondary (backing) tier."""
    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Tiles per axis."""
    @property
    def tile_shape(self) -> tuple[int, ...]:
        """Slots per tile per axis."""
    @property
    def logical_shape(self) -> tuple[int, ...]:
        """grid_shape times tile_shape, axis by axis."""
    @property
    def residency_policy(self) -> Any:
        """The policy given at construction (by identity), or None."""
    @property
    def primary_tiles(self) -> TileSet:
        """The tiles resident in the primary tier."""
    @property
    def secondary_tiles(self) -> TileSet:
        """The tiles resident in the secondary tier."""
    @property
    def valid_tiles(self) -> TileSet:
        """The tiles that hold values (implicit zeros included)."""
    @property
    def dirty_tiles(self) -> TileSet:
        """The primary tiles written since they came into the primary."""
    def tile_state(self, coord: Any) -> _TileState:
        """The place and flags of one tile (location "primary", "secondary"
        or "implicit"; valid; dirty).
        """
    def promote(self, tiles: Any) -> None:
        """Makes tiles primary and valid (blocking; no version change).

        Raises:
            TypeError: not a TileSet or TileSelection.
            ValueError: a coordinate outside the grid.
            RuntimeError: the carrier is released, or a tile is invalid.
        """
    def evict(self, tiles: Any) -> None:
        """Writes tiles back to the secondary tier and makes them secondary
        (blocking; no version change). Raises as promote does.
        """
    def promote_async(self, tiles: Any) -> AwaitResidency:
        """Starts promoting tiles on the background executor; returns an
        AwaitResidency whose wait() returns None. Checks and raises as
        promote does before it returns; a tile of a pending residency
        request raises RuntimeError (conflict) until that request ends.
        """
    def evict_async(self, tiles: Any) -> AwaitResidency:
        """Starts evicting tiles on the background executor (as
        promote_async).
        """
    def _implicit_zero_like(self) -> TiledEvictable:
        """A carrier like this one (geometry, tier classes, policy) whose
        every tile is a valid implicit zero: no storage is written until a
        tile is promoted, which materialises zeros without a version bump.
        """
    @property
    def _pending_requests(self) -> int:
        """Asynchronous requests on this carrier that have not ended."""
    def _policy_plan(
        self, required: tuple[int, ...], purpose: str
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """The library's question to the policy: tile indices in, the
        plan's promote, retain and evict indices out (checked).
        """
    def _plan_for(self, required: TileSet, purpose: str) -> ResidencyPlan:
        """What the policy plans for required (no policy: promote it)."""

_DEFINITION: CarrierDefinition
