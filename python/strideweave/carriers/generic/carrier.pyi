"""The Generic carrier: a store of Python objects."""

from collections.abc import Iterable
from typing import Any, SupportsIndex

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_helpers import Operation
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["Generic"]

class Generic(Carrier):
    """A carrier of Python objects."""

    def __init__(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType = ...
    ) -> None: ...
    def size(self) -> int: ...
    def dtype(self) -> DType: ...
    def get_value(self, index: Any, /) -> Any: ...
    def set_value(self, index: Any, value: Any, /) -> None: ...
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> Generic: ...
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> Generic: ...
    def scatter(
        self,
        to_scatter: Tensor,
        scatter_onto: Tensor,
        mapping: Layout,
        mapping_offset: SupportsIndex = 0,
    ) -> None: ...
    def _dispatch_op(self, name: str, /) -> Operation: ...
