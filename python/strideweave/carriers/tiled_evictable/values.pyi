"""The value types of tiled residency: tile selections, tile sets and plans."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ResidencyPlan", "ResidencyPolicy", "TileSelection", "TileSet"]

@dataclass(frozen=True, slots=True, init=False)
class TileSet:
    coordinates: tuple[tuple[int, ...], ...]
    def __init__(self, coordinates: Iterable[Iterable[int]] = ()) -> None: ...
    @property
    def rank(self) -> int | None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[tuple[int, ...]]: ...
    def __contains__(self, coord: object) -> bool: ...
    def _validate_grid_shape(self, grid_shape: Any) -> None: ...

@dataclass(frozen=True, slots=True, init=False)
class TileSelection:
    per_axis: tuple[tuple[int, ...], ...]
    def __init__(self, per_axis: Iterable[Iterable[int]]) -> None: ...
    @property
    def rank(self) -> int: ...
    @property
    def compact_grid_shape(self) -> tuple[int, ...]: ...
    @property
    def coordinates(self) -> tuple[tuple[int, ...], ...]: ...
    @property
    def tile_set(self) -> TileSet: ...
    def _validate_grid_shape(self, grid_shape: Any) -> None: ...

@dataclass(frozen=True, slots=True, init=False)
class ResidencyPlan:
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
    def plan(self, required: TileSet, purpose: str) -> ResidencyPlan: ...
