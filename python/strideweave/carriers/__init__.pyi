"""Carriers: where tensor elements live."""

from strideweave.carriers.base import Carrier as Carrier
from strideweave.carriers.block_device import BlockDevice as BlockDevice
from strideweave.carriers.block_device import BlockDeviceCarrier as BlockDeviceCarrier
from strideweave.carriers.cpu import CPU as CPU
from strideweave.carriers.dtype import DType as DType
from strideweave.carriers.evictable import Evictable as Evictable
from strideweave.carriers.evictable import EvictableOperation as EvictableOperation
from strideweave.carriers.file_backed import FileBacked as FileBacked
from strideweave.carriers.generic import Generic as Generic
from strideweave.carriers.opencl import OpenCL as OpenCL

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
