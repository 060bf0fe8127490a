"""BlockDevice and BlockDeviceCarrier: synchronous raw storage on a Linux block device.

A :class:`BlockDevice` opens a block special file with O_DIRECT and hands out
extents of whole physical blocks; each :class:`BlockDeviceCarrier` holds Float32
values in one extent, read and written on the device directly. The I/O, the
extent allocator, the locking and the fault rules live in the C library.
"""

from strideweave._native import BlockDevice, BlockDeviceCarrier

__all__ = ["BlockDevice", "BlockDeviceCarrier"]
