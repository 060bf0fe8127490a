"""The value types of tiled residency: tile selections, tile sets and plans.

All are frozen, slotted, hashable values with stable reprs; their inputs are
consumed exactly once.

- ``TileSelection(per_axis)``: a Cartesian product of per-axis tile
  coordinates, each axis in the caller's order.
- ``TileSet(coordinates)``: an immutable set of full-rank tile coordinates,
  sorted first-axis-fastest.
- ``ResidencyPlan(promote, retain, evict)``: three disjoint tile sets a
  policy answers with.
- ``ResidencyPolicy``: the protocol of a policy, ``plan(required,
  purpose)``.

Examples:
    >>> s = TileSelection([[7, 2], [4, 9]])
    >>> s.coordinates
    ((7, 4), (2, 4), (7, 9), (2, 9))
    >>> TileSet([(0, 1), (1, 0), (0, 0)]).coordinates
    ((0, 0), (1, 0), (0, 1))
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ResidencyPlan", "ResidencyPolicy", "TileSelection", "TileSet"]


def _finite_iterable(value: Any, what: str) -> tuple[Any, ...]:
    """The items of a finite iterable, consumed once; TypeError otherwise."""
    if value is None or isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{what} must be a finite iterable")
    return tuple(value)


def _integer(value: Any, what: str) -> int:
    """A coordinate: an integer that is not a bool, and non-negative."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isnan(value):
            raise TypeError(f"{what} must be integers")
        raise TypeError(f"{what} must be integers")
    v = int(value)
    if v < 0:
        raise ValueError(f"{what} must be non-negative, got {v}")
    return v


def _sort_key(coord: tuple[int, ...]) -> tuple[int, ...]:
    """First axis fastest: order by the reversed tuple."""
    return coord[::-1]


def _check_grid(coords: tuple[tuple[int, ...], ...], rank: int, grid: Any) -> None:
    """Raises ValueError 'rank' or 'outside' against grid_shape."""
    shape = tuple(int(g) for g in grid)
    if rank != len(shape):
        raise ValueError(f"tile rank {rank} does not match the grid rank {len(shape)}")
    for c in coords:
        for k, (v, g) in enumerate(zip(c, shape, strict=True)):
            if v >= g:
                raise ValueError(f"tile coordinate {c} is outside the grid {shape} on axis {k}")


@dataclass(frozen=True, slots=True, init=False)
class TileSet:
    """An immutable set of full-rank tile coordinates.

    Args:
        coordinates: an iterable of coordinates (each an iterable of
            non-negative integers, all of one rank), without duplicates.

    Returns:
        TileSet: coordinates sorted first-axis-fastest.

    Raises:
        TypeError: a non-iterable, a non-integer component (bools and NaN
            included).
        ValueError: a negative component, mixed ranks, a duplicate.

    Examples:
        >>> TileSet([(1, 0), (0, 0)])
        TileSet(coordinates=((0, 0), (1, 0)))
        >>> len(TileSet())
        0
    """

    coordinates: tuple[tuple[int, ...], ...]

    def __init__(self, coordinates: Iterable[Iterable[int]] = ()) -> None:
        items = _finite_iterable(coordinates, "coordinates")
        coords = []
        for i, c in enumerate(items):
            comps = _finite_iterable(c, f"coordinates[{i}]")
            coords.append(tuple(_integer(v, "components") for v in comps))
        ranks = {len(c) for c in coords}
        if len(ranks) > 1:
            raise ValueError("coordinates must all have the same rank")
        if len(set(coords)) != len(coords):
            raise ValueError("coordinates contain a duplicate")
        object.__setattr__(self, "coordinates", tuple(sorted(coords, key=_sort_key)))

    @property
    def rank(self) -> int | None:
        """The coordinates' rank, or None for the empty set."""
        return len(self.coordinates[0]) if self.coordinates else None

    def __len__(self) -> int:
        return len(self.coordinates)

    def __iter__(self) -> Any:
        return iter(self.coordinates)

    def __contains__(self, coord: object) -> bool:
        return coord in self.coordinates

    def _validate_grid_shape(self, grid_shape: Any) -> None:
        """ValueError 'rank' or 'outside' against a grid; the empty set
        fits any grid."""
        if self.coordinates:
            _check_grid(self.coordinates, len(self.coordinates[0]), grid_shape)


@dataclass(frozen=True, slots=True, init=False)
class TileSelection:
    """A Cartesian product of per-axis tile coordinates.

    Args:
        per_axis: one iterable of coordinates per axis (each non-empty,
            without duplicates, in the caller's order).

    Returns:
        TileSelection: the selection.

    Raises:
        TypeError: 'per_axis must be a finite iterable', 'per_axis[k] must
            be a finite iterable', 'tile coordinates must be integers'.
        ValueError: no axes or an empty axis ('at least one'), a negative
            coordinate, a duplicate on an axis.

    Examples:
        >>> TileSelection([[2, 7], [4]])
        TileSelection(per_axis=((2, 7), (4,)))
        >>> TileSelection([[2, 7], [4]]).compact_grid_shape
        (2, 1)
    """

    per_axis: tuple[tuple[int, ...], ...]

    def __init__(self, per_axis: Iterable[Iterable[int]]) -> None:
        axes = _finite_iterable(per_axis, "per_axis")
        if not axes:
            raise ValueError("a tile selection needs at least one axis")
        normalized = []
        for k, axis in enumerate(axes):
            values = _finite_iterable(axis, f"per_axis[{k}]")
            if not values:
                raise ValueError(f"axis {k} of a tile selection needs at least one coordinate")
            coords = tuple(_integer(v, "tile coordinates") for v in values)
            if len(set(coords)) != len(coords):
                raise ValueError(f"axis {k} of a tile selection has a duplicate coordinate")
            normalized.append(coords)
        object.__setattr__(self, "per_axis", tuple(normalized))

    @property
    def rank(self) -> int:
        """The number of axes."""
        return len(self.per_axis)

    @property
    def compact_grid_shape(self) -> tuple[int, ...]:
        """The selected count on each axis."""
        return tuple(len(a) for a in self.per_axis)

    @property
    def coordinates(self) -> tuple[tuple[int, ...], ...]:
        """Every selected source tile, compact first-axis-fastest."""
        out: list[tuple[int, ...]] = [()]
        for axis in self.per_axis:
            # Each later axis varies slower than every earlier one.
            out = [prefix + (v,) for v in axis for prefix in out]
        return tuple(out)

    @property
    def tile_set(self) -> TileSet:
        """The selected tiles as a TileSet."""
        return TileSet(self.coordinates)

    def _validate_grid_shape(self, grid_shape: Any) -> None:
        """ValueError 'rank' or 'outside' against a grid."""
        _check_grid(self.coordinates, self.rank, grid_shape)


def _tile_set_field(value: Any, name: str) -> TileSet:
    if value is None:
        return TileSet()
    if not isinstance(value, TileSet):
        raise TypeError(f"{name} must be a TileSet")
    return value


@dataclass(frozen=True, slots=True, init=False)
class ResidencyPlan:
    """What a residency policy decides for one piece of work.

    Args:
        promote: tiles to make primary before the work (None: none).
        retain: tiles to keep pinned while it runs.
        evict: tiles to evict after it.

    Returns:
        ResidencyPlan: three disjoint TileSets (a given one kept by
        identity).

    Raises:
        TypeError: '<field> must be a TileSet'.
        ValueError: two fields that overlap ('must be disjoint').

    Examples:
        >>> ResidencyPlan(promote=TileSet([(0,)])).evict
        TileSet(coordinates=())
    """

    promote: TileSet
    retain: TileSet
    evict: TileSet

    def __init__(
        self,
        promote: TileSet | None = None,
        retain: TileSet | None = None,
        evict: TileSet | None = None,
    ) -> None:
        fields = {
            "promote": _tile_set_field(promote, "promote"),
            "retain": _tile_set_field(retain, "retain"),
            "evict": _tile_set_field(evict, "evict"),
        }
        names = list(fields)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if set(fields[a].coordinates) & set(fields[b].coordinates):
                    raise ValueError(f"ResidencyPlan {a} and {b} must be disjoint")
        for name, value in fields.items():
            object.__setattr__(self, name, value)


@runtime_checkable
class ResidencyPolicy(Protocol):
    """Decides residency for one piece of work.

    ``plan(required, purpose)`` gets the tiles the work needs and why
    ("operation", "projection", "scatter" or "backward") and returns a
    ResidencyPlan.

    Examples:
        >>> class All:
        ...     def plan(self, required, purpose):
        ...         return ResidencyPlan(promote=required)
        >>> isinstance(All(), ResidencyPolicy)
        True
    """

    def plan(self, required: TileSet, purpose: str) -> ResidencyPlan: ...
