"""Tensors: a carrier, an offset and a layout."""

from strideweave._native import Tensor
from strideweave._native import TensorIndexError as TensorIndexError

__all__ = ["Tensor"]
