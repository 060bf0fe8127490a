"""Compound dtypes: logical dtypes whose values span several storage planes."""

from collections.abc import Iterable
from typing import final

from strideweave.carriers.dtype import DType

__all__ = ["CompoundDType"]

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
