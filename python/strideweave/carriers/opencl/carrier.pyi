"""The OpenCL carrier: storage in one OpenCL device buffer."""

from collections.abc import Iterable
from typing import Any, SupportsIndex, TypedDict, final

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType

__all__ = ["OpenCL", "opencl_devices"]

class OpenCLDevice(TypedDict):
    """One entry of ``opencl_devices()``."""

    index: int
    platform: str
    name: str
    type: str
    global_memory: int
    default: bool

@final
class OpenCL(Carrier):
    """Storage in one OpenCL device buffer (Float32, Int32 or Bool)."""

    def __init__(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType = ...,
        empty: bool = False,
        device: SupportsIndex | None = None,
    ) -> None: ...
    @property
    def device(self) -> int: ...
    def size(self) -> int: ...
    def dtype(self) -> DType: ...
    def get_value(self, index: SupportsIndex, /) -> float | int | bool: ...
    def set_value(self, index: SupportsIndex, value: Any, /) -> None: ...
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> OpenCL: ...
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> OpenCL: ...
    def dlpack_info(self) -> dict[str, int]: ...
    def supports_storage_dtype(self, dtype: DType, /) -> bool: ...
    def synchronize(self) -> None: ...
    def scatter(
        self,
        to_scatter: Any,
        scatter_onto: Any,
        mapping: Any,
        mapping_offset: Any = 0,
    ) -> None: ...

def opencl_devices() -> list[OpenCLDevice]: ...
