"""Carriers: where tensor elements live.

A carrier owns or references storage; the base class :class:`Carrier` owns
the rules every carrier shares (versions, mutability, release, ownership by a
composite carrier), and a backend supplies the storage. Built in: :class:`CPU`
(native memory), :class:`Generic` (Python objects) and :class:`FileBacked`
(a binary file); :class:`BlockDevice` hands out :class:`BlockDeviceCarrier`
extents of a raw block device. Python subclasses of :class:`Carrier` implement the storage
hooks in Python.
(native memory), :class:`Generic` (Python objects), :class:`FileBacked`
(a binary file) and :class:`OpenCL` (an OpenCL device buffer). Python
subclasses of :class:`Carrier` implement the storage hooks in Python.

Examples:
    >>> from strideweave.carriers import CPU, DType
    >>> c = CPU(2, dtype=DType.Int32)
    >>> c[1] = 3
    >>> list(c), c.version
    ([0, 3], 1)
"""

from strideweave.carriers.base import Carrier
from strideweave.carriers.block_device import BlockDevice, BlockDeviceCarrier
from strideweave.carriers.cpu import CPU
from strideweave.carriers.dtype import DType
from strideweave.carriers.evictable import Evictable, EvictableOperation
from strideweave.carriers.file_backed import FileBacked
from strideweave.carriers.generic import Generic
from strideweave.carriers.opencl import OpenCL

__all__ = [
    "BlockDevice",
    "BlockDeviceCarrier",
    "CPU",
    "Carrier",
    "DType",
    "Evictable",
    "EvictableOperation",
    "FileBacked",
    "Generic",
    "OpenCL",
]
