"""The FileBacked carrier: raw numeric values in a binary file."""

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, SupportsIndex

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType

__all__ = ["FileBacked"]

class FileBacked(Carrier):
    """Raw numeric values in a binary file, in native byte order."""

    def __init__(
        self,
        filename: str | bytes | os.PathLike[str] | os.PathLike[bytes] | None = None,
        *,
        mutable: bool = True,
        dtype: DType = ...,
    ) -> None: ...
    @classmethod
    def open(
        cls,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        *,
        dtype: DType = ...,
        mutable: bool = False,
        offset: SupportsIndex | None = None,
        size: SupportsIndex | None = None,
    ) -> FileBacked: ...
    @property
    def path(self) -> Path: ...
    def size(self) -> int: ...
    def dtype(self) -> DType: ...
    def get_value(self, index: SupportsIndex, /) -> float | int: ...
    def set_value(self, index: SupportsIndex, value: Any, /) -> None: ...
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> FileBacked: ...
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> FileBacked: ...
    def _allocate(self, size: SupportsIndex, /) -> None: ...
    def scatter(
        self,
        to_scatter: Any,
        scatter_onto: Any,
        mapping: Any,
        mapping_offset: Any = 0,
    ) -> None: ...
