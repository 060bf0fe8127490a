"""The carrier base class: storage plus the shared carrier policy."""

from strideweave._native import Carrier

__all__ = ["Carrier"]
