"""Element types of carriers: identity tags compared with ``is``."""

from enum import Enum

__all__ = ["DType"]

class DType(Enum):
    """The element type of a carrier.

    Members are identity tags (compare them with ``is``) and are hashable.
    ``Floating`` and ``Float32`` are the differentiable dtypes. ``Any`` holds
    arbitrary Python objects (Generic only); ``Bool`` is stored by CPU and is
    never differentiable.

    Allowed per carrier: Generic takes Any and Floating (default Floating);
    CPU takes Float32 (the default), Int32 and Bool; FileBacked takes Floating
    (8-byte doubles, the default), Float32 and Int32 (4 bytes each).

    Examples:
        >>> [d.value for d in DType]
        ['Any', 'Floating', 'Float32', 'Int32', 'Bool']
        >>> DType("Int32") is DType.Int32
        True
    """

    Any = "Any"
    Floating = "Floating"
    Float32 = "Float32"
    Int32 = "Int32"
    Bool = "Bool"
