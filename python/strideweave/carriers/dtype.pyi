"""Element types of carriers: identity tags compared with ``is``."""

from collections.abc import Iterable
from enum import Enum
from typing import final

__all__ = ["CompoundDType", "DType"]

class DType(Enum):
    """The element type of a carrier."""

    Any = "Any"
    Floating = "Floating"
    Float32 = "Float32"
    Int32 = "Int32"
    Bool = "Bool"

@final
class CompoundDType:
    """A logical dtype whose values span several storage planes."""

    def __new__(cls, name: str, simple_types: Iterable[DType]) -> CompoundDType: ...
    @property
    def name(self) -> str: ...
    @property
    def simple_types(self) -> tuple[DType, ...]: ...
    def __setattr__(self, name: str, value: object) -> None: ...
    def __delattr__(self, name: str) -> None: ...
    def __reduce__(self) -> tuple[type[CompoundDType], tuple[str, tuple[DType, ...]]]: ...
