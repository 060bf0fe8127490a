"""The OpenCL carrier: storage in one OpenCL device buffer."""

from strideweave.carriers.opencl.carrier import OpenCL as OpenCL
from strideweave.carriers.opencl.carrier import opencl_devices as opencl_devices

__all__ = ["OpenCL", "opencl_devices"]
