"""The Generic carrier: a store of Python objects."""

from strideweave._native import Generic

__all__ = ["Generic"]
