"""The value types of tiled residency: tile selections, tile sets and plans."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ResidencyPlan", "ResidencyPolicy", "TileSelection", "TileSet"]

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
    def __init__(self, coordinates: Iterable[Iterable[int]] = ()) -> None: ...
    @property
    def rank(self) -> int | None:
        """The coordinates' rank, or None for the empty set."""
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[tuple[int, ...]]: ...
    def __contains__(self, coord: object) -> bool: ...
    def _validate_grid_shape(self, grid_shape: Any) -> None:
        """ValueError 'rank' or 'outside' against a grid; the empty set
        fits any grid.
        """

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
    def __init__(self, per_axis: Iterable[Iterable[int]]) -> None: ...
    @property
    def rank(self) -> int:
        """The number of axes."""
    @property
    def compact_grid_shape(self) -> tuple[int, ...]:
        """The selected count on each axis."""
    @property
    def coordinates(self) -> tuple[tuple[int, ...], ...]:
        """Every selected source tile, compact first-axis-fastest."""
    @property
    def tile_set(self) -> TileSet:
        """The selected tiles as a TileSet."""
    def _validate_grid_shape(self, grid_shape: Any) -> None:
        """ValueError 'rank' or 'outside' against a grid."""

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
    ) -> None: ...

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
