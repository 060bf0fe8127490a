"""BlockDevice and BlockDeviceCarrier: synchronous raw storage on a Linux block device."""

from strideweave.carriers.block_device.carrier import BlockDevice, BlockDeviceCarrier

__all__ = ["BlockDevice", "BlockDeviceCarrier"]
