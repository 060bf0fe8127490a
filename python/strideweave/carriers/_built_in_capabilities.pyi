"""The shipped backends' capability sets (private)."""

from strideweave.carriers.block_device import BlockDeviceCarrier
from strideweave.carriers.cpu import CPU
from strideweave.carriers.file_backed import FileBacked
from strideweave.carriers.generic import Generic
from strideweave.carriers.opencl import OpenCL

__all__: list[str]

_BUILT_INS: tuple[
    type[CPU], type[Generic], type[FileBacked], type[BlockDeviceCarrier], type[OpenCL]
]

def _declare_built_in_capabilities(cls: type) -> None:
    """Refuses to declare a shipped set again, or for another class."""

def _initialize_built_in_capabilities() -> None:
    """Observes the shipped classes; calling it again changes nothing."""
