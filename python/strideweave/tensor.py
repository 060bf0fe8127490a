"""Tensors: a carrier, an offset and a layout."""

from strideweave._native import Tensor

__all__ = ["Tensor"]
