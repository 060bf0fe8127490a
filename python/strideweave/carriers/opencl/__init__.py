"""The OpenCL carrier: storage in one OpenCL device buffer."""

from strideweave.carriers.opencl.carrier import OpenCL, opencl_devices

__all__ = ["OpenCL", "opencl_devices"]
