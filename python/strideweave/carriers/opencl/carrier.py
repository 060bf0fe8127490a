"""The OpenCL carrier: storage in one OpenCL device buffer.

The OpenCL runtime (the ICD loader ``libOpenCL.so.1``) is loaded by the
library at the first construction, after the arguments are checked; the
package imports and runs without it. ``opencl_devices()`` lists the devices
(an empty list without a runtime).
"""

from typing import TypedDict

from strideweave._native import OpenCL, opencl_devices

__all__ = ["OpenCL", "opencl_devices"]


class OpenCLDevice(TypedDict):
    """One entry of ``opencl_devices()``."""

    index: int
    platform: str
    name: str
    type: str
    global_memory: int
    default: bool
