from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Subtensor", "TensorRepresentation"]

@dataclass(frozen=True, eq=False)
class Subtensor:
    storage_dtype: Any
    carrier: Any
    offset: Any
    placement_layout: Any

@dataclass(frozen=True, eq=False)
class TensorRepresentation:
    logical_dtype: Any
    subtensors: Sequence[Subtensor]
    adjacent_layouts: Sequence[Any]
    def __post_init__(self) -> None: ...
    @property
    def primary(self) -> Subtensor: ...
