"""The CPU carrier: native memory of Float32, Int32 or Bool elements."""

from strideweave._native import CPU

__all__ = ["CPU"]
