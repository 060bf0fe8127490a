"""The Generic carrier: a store of Python objects."""

from strideweave.carriers.generic.carrier import Generic as Generic

__all__ = ["Generic"]
