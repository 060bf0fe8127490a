"""Element types of carriers: identity tags compared with ``is``."""

from enum import Enum

__all__ = ["DType"]

class DType(Enum):
    """The element type of a carrier."""

    Any = "Any"
    Floating = "Floating"
    Float32 = "Float32"
    Int32 = "Int32"
    Bool = "Bool"
