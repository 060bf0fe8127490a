"""The CPU carrier: native memory of Float32, Int32 or Bool elements."""

from collections.abc import Iterable
from typing import Any, SupportsIndex

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_helpers import Operation
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["CPU"]

class CPU(Carrier):
    """Native memory of Float32, Int32 or Bool elements."""

    def __init__(
        self,
        size: SupportsIndex,
        pointer: int | None = None,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> None: ...
    def size(self) -> int: ...
    def dtype(self) -> DType: ...
    def get_value(self, index: SupportsIndex, /) -> float | int | bool: ...
    def set_value(self, index: SupportsIndex, value: Any, /) -> None: ...
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> CPU: ...
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> CPU: ...
    def pointer(self) -> int: ...
    def dlpack_info(self) -> dict[str, int]: ...
    def scatter(
        self,
        to_scatter: Tensor,
        scatter_onto: Tensor,
        mapping: Layout,
        mapping_offset: SupportsIndex = 0,
    ) -> None: ...
    def _dispatch_op(self, name: str, /) -> Operation: ...
