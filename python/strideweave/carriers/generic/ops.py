"""The Generic carrier's operations: the reference implementations.

They compute over Python objects with Python's own arithmetic (ints stay
ints where Python keeps them) and differentiate in floats. ``Generic`` and
its subclasses dispatch the canonical operation names to these classes;
they can also be constructed directly (undispatched).

Examples:
    >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
    >>> from strideweave.carriers.generic.ops import GenericPowOperation
    >>> x = Tensor(Generic([1, 2, 3]), 0, Layout(Shape(3), Stride(1)))
    >>> y = GenericPowOperation().forward(x, 2)
    >>> [y[i] for i in range(3)]
    [1, 4, 9]
"""

from strideweave import _native

# One class per operation of the backend, as the library's operation
# registry lists them.
__all__: list[str] = _native._native_classes("generic")
globals().update({name: getattr(_native, name) for name in __all__})
