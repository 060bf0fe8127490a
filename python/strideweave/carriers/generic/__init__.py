"""The Generic carrier: a store of Python objects."""

from strideweave.carriers.generic.carrier import Generic

__all__ = ["Generic"]
