"""The shipped backends' capability sets (private).

The library declares and seals the sets of CPU, Generic and OpenCL (every plan
they execute; OpenCL's are the CPU's) and FileBacked and BlockDeviceCarrier
(empty) itself; Evictable has no class-level set.
Nothing here declares anything new: :func:`_initialize_built_in_capabilities`
only observes the shipped classes, so that their sets are sealed and
converted whichever module is imported first.
"""

from strideweave.carriers.block_device import BlockDeviceCarrier
from strideweave.carriers.cpu import CPU
from strideweave.carriers.file_backed import FileBacked
from strideweave.carriers.generic import Generic
from strideweave.carriers.opencl import OpenCL

__all__: list[str] = []

# The classes with a class-level declaration (Evictable has none).
_BUILT_INS = (CPU, Generic, FileBacked, BlockDeviceCarrier, OpenCL)


def _declare_built_in_capabilities(cls: type) -> None:
    """Refuses to declare a shipped set again, or for another class."""
    from strideweave.carriers import operation_capability as oc
    from strideweave.carriers.base import Carrier

    oc._check_carrier_class(cls)
    if cls is Carrier:
        raise TypeError("capabilities cannot be declared for the Carrier base class")
    if cls in _BUILT_INS:
        raise RuntimeError(f"{cls.__name__} capabilities are already declared")
    raise TypeError(f"{cls.__name__} is not a shipped backend")


def _initialize_built_in_capabilities() -> None:
    """Observes the shipped classes; calling it again changes nothing."""
    from strideweave.carriers import operation_capability as oc
    from strideweave.carriers.evictable import Evictable

    for cls in (*_BUILT_INS, Evictable):
        oc.capabilities_for_carrier_class(cls)
