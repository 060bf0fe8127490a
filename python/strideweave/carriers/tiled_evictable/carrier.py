"""The TiledEvictable carrier: a Python face over the library's (tiled.h).

The library owns the geometry, the tiers and their ownership, tile states,
routed reads and writes, residency, the tile-footprint checks and the six
direct operations; this class converts arguments and presents the state as
TileSets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from strideweave import _native
from strideweave._native import AwaitResidency
from strideweave.carriers.extension import (
    CarrierDefinition,
    CarrierFacet,
    CompositeProvider,
    StorageProvider,
    _register_library_definition,
)
from strideweave.carriers.operation_capability import DependentCarrier
from strideweave.carriers.tiled_evictable.values import ResidencyPlan, TileSelection, TileSet

__all__ = ["TiledEvictable", "TiledResidencyFacet"]

_LOCATIONS = ("primary", "secondary", "implicit")


@dataclasses.dataclass(frozen=True, slots=True)
class _TileState:
    """One tile's place and flags (``TiledEvictable.tile_state``)."""

    location: str
    valid: bool
    dirty: bool


@dataclasses.dataclass(frozen=True, slots=True)
class TiledResidencyFacet(CarrierFacet):
    """The residency interface of a TiledEvictable, found with
    ``carrier.require_facet(TiledResidencyFacet)``.

    Examples:
        >>> TiledResidencyFacet().kind
        'tiled-residency'
    """

    kind: str = "tiled-residency"

    def promote(self, carrier: TiledEvictable, tiles: Any) -> None:
        """Promotes tiles of carrier (see TiledEvictable.promote)."""
        carrier.promote(tiles)

    def evict(self, carrier: TiledEvictable, tiles: Any) -> None:
        """Evicts tiles of carrier (see TiledEvictable.evict)."""
        carrier.evict(tiles)


def _extents(values: Any, name: str) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of integers")
    return tuple(values)


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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("TiledEvictable is final")

    def __new__(
        cls,
        primary: Any,
        secondary: Any,
        grid_shape: Iterable[int],
        tile_shape: Iterable[int],
        *,
        residency_policy: Any = None,
    ) -> TiledEvictable:
        if residency_policy is not None:
            plan = getattr(residency_policy, "plan", None)
            if plan is None:
                raise TypeError("residency_policy must have a plan method")
            if not callable(plan):
                raise TypeError("residency_policy.plan must be callable")
        self = _native._tiled_new(
            cls,
            primary,
            secondary,
            _extents(grid_shape, "grid_shape"),
            _extents(tile_shape, "tile_shape"),
        )
        self._residency_policy = residency_policy
        if residency_policy is not None:
            _native._tiled_use_policy(self)
        # What stays answerable after release.
        self._tiers = (primary, secondary)
        self._geometry = _native._tiled_geometry(self)
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Construction happens in __new__."""

    # ------------------------------------------------------------ geometry

    def _tier_pair(self) -> tuple[Any, Any]:
        tiers = getattr(self, "_tiers", None)
        return tiers if tiers is not None else _native._tiled_tiers(self)

    def _shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        geometry = getattr(self, "_geometry", None)
        return geometry if geometry is not None else _native._tiled_geometry(self)

    @property
    def primary(self) -> Any:
        """The primary (compute) tier."""
        return self._tier_pair()[0]

    @property
    def secondary(self) -> Any:
        """The secondary (backing) tier."""
        return self._tier_pair()[1]

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Tiles per axis."""
        return self._shapes()[0]

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """Slots per tile per axis."""
        return self._shapes()[1]

    @property
    def logical_shape(self) -> tuple[int, ...]:
        """grid_shape times tile_shape, axis by axis."""
        grid, tile = self._shapes()
        return tuple(g * t for g, t in zip(grid, tile, strict=True))

    @property
    def residency_policy(self) -> Any:
        """The policy given at construction (by identity), or None."""
        return getattr(self, "_residency_policy", None)

    # ----------------------------------------------------------- residency

    def _coords(self) -> list[tuple[int, ...]]:
        grid = self.grid_shape
        out: list[tuple[int, ...]] = [()]
        for g in grid:
            out = [prefix + (v,) for v in range(g) for prefix in out]
        return out

    def _tiles_where(self, test: Any) -> TileSet:
        states = _native._tiled_states(self)
        return TileSet(c for c, s in zip(self._coords(), states, strict=True) if test(s))

    @property
    def primary_tiles(self) -> TileSet:
        """The tiles resident in the primary tier."""
        return self._tiles_where(lambda s: s[0] == 0 and s[1])

    @property
    def secondary_tiles(self) -> TileSet:
        """The tiles resident in the secondary tier."""
        return self._tiles_where(lambda s: s[0] == 1 and s[1])

    @property
    def valid_tiles(self) -> TileSet:
        """The tiles that hold values (implicit zeros included)."""
        return self._tiles_where(lambda s: s[1])

    @property
    def dirty_tiles(self) -> TileSet:
        """The primary tiles written since they came into the primary."""
        return self._tiles_where(lambda s: s[2])

    def _index(self, coord: Any) -> int:
        grid = self.grid_shape
        c = tuple(coord)
        if len(c) != len(grid) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in c
        ):
            raise ValueError(f"tile coordinate {coord!r} does not fit the grid {grid}")
        index, step = 0, 1
        for v, g in zip(c, grid, strict=True):
            if not 0 <= v < g:
                raise ValueError(f"tile coordinate {c} is outside the grid {grid}")
            index += v * step
            step *= g
        return index

    def tile_state(self, coord: Any) -> _TileState:
        """The place and flags of one tile (location "primary", "secondary"
        or "implicit"; valid; dirty)."""
        loc, valid, dirty = _native._tiled_states(self)[self._index(coord)]
        return _TileState(_LOCATIONS[loc], valid, dirty)

    def _request(self, tiles: Any) -> tuple[int, ...]:
        if isinstance(tiles, TileSelection):
            tiles = tiles.tile_set
        if not isinstance(tiles, TileSet):
            raise TypeError("tiles must be a TileSet or a TileSelection")
        tiles._validate_grid_shape(self.grid_shape)
        return tuple(self._index(c) for c in tiles.coordinates)

    def promote(self, tiles: Any) -> None:
        """Makes tiles primary and valid (blocking; no version change).

        Raises:
            TypeError: not a TileSet or TileSelection.
            ValueError: a coordinate outside the grid.
            RuntimeError: the carrier is released, or a tile is invalid.
        """
        _native._tiled_residency(self, self._request(tiles), False)

    def evict(self, tiles: Any) -> None:
        """Writes tiles back to the secondary tier and makes them secondary
        (blocking; no version change). Raises as promote does."""
        _native._tiled_residency(self, self._request(tiles), True)

    def promote_async(self, tiles: Any) -> AwaitResidency:
        """Starts promoting tiles on the background executor; returns an
        AwaitResidency whose wait() returns None. Checks and raises as
        promote does before it returns; a tile of a pending residency
        request raises RuntimeError (conflict) until that request ends."""
        return _native._tiled_residency_async(self, self._request(tiles), False)

    def evict_async(self, tiles: Any) -> AwaitResidency:
        """Starts evicting tiles on the background executor (as
        promote_async)."""
        return _native._tiled_residency_async(self, self._request(tiles), True)

    def _implicit_zero_like(self) -> TiledEvictable:
        """A carrier like this one (geometry, tier classes, policy) whose
        every tile is a valid implicit zero: no storage is written until a
        tile is promoted, which materialises zeros without a version bump."""
        return self.allocate_like(self.size())

    @property
    def _pending_requests(self) -> int:
        """Asynchronous requests on this carrier that have not ended."""
        return int(_native._tiled_pending(self))

    def _policy_plan(
        self, required: tuple[int, ...], purpose: str
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """The library's question to the policy: tile indices in, the
        plan's promote, retain and evict indices out (checked)."""
        coords = self._coords()
        plan = self._plan_for(TileSet(coords[i] for i in required), purpose)
        out = []
        for field in (plan.promote, plan.retain, plan.evict):
            field._validate_grid_shape(self.grid_shape)
            out.append(tuple(self._index(c) for c in field.coordinates))
        return out[0], out[1], out[2]

    def _plan_for(self, required: TileSet, purpose: str) -> ResidencyPlan:
        """What the policy plans for required (no policy: promote it)."""
        policy = self.residency_policy
        if policy is None:
            return ResidencyPlan(promote=required)
        plan = policy.plan(required, purpose)
        if not isinstance(plan, ResidencyPlan):
            raise TypeError("residency_policy.plan must return a ResidencyPlan")
        return plan


def _library_only(*args: Any) -> Any:
    raise TypeError("the library runs TiledEvictable's storage: use the carrier itself")


def _face_prepare(carrier: Any, invocation: Any) -> Any:
    from strideweave.carriers.extension import Unsupported

    return Unsupported("the library runs TiledEvictable's operations")


# The Python value describing the definition the library registers for
# TiledEvictable: its callbacks answer through the carrier, and the
# library's own definition is what runs.
_DEFINITION = CarrierDefinition(
    StorageProvider(
        supports_dtype=lambda c, d: c.supports_storage_dtype(d),
        physical_size=lambda c: c.size(),
        allocate=_library_only,
        release=lambda c: c.release(),
        read=lambda c, i: c[i],
        write=lambda c, i, v: c.__setitem__(i, v),
    ),
    composite=CompositeProvider(
        capabilities=lambda c: c.operation_capabilities(),
        result_carriers=lambda c, inv: (type(c.primary),) * len(inv.results),
        prepare=_face_prepare,
    ),
    facets=(TiledResidencyFacet(),),
)

_native._register_tiled_type(TiledEvictable)
_register_library_definition(TiledEvictable, _DEFINITION)
