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

from strideweave._native import (
    GenericAddOperation,
    GenericBatchedMatmulOperation,
    GenericDivOperation,
    GenericElementwiseMulOperation,
    GenericELUOperation,
    GenericExpOperation,
    GenericGELUOperation,
    GenericLeakyReLUOperation,
    GenericMatmulOperation,
    GenericPowOperation,
    GenericReduceSumOperation,
    GenericReLUOperation,
    GenericScalarMulOperation,
    GenericSigmoidOperation,
    GenericSiLUOperation,
    GenericSoftplusOperation,
    GenericSubOperation,
    GenericTanhOperation,
)

__all__ = [
    "GenericAddOperation",
    "GenericBatchedMatmulOperation",
    "GenericDivOperation",
    "GenericELUOperation",
    "GenericElementwiseMulOperation",
    "GenericExpOperation",
    "GenericGELUOperation",
    "GenericLeakyReLUOperation",
    "GenericMatmulOperation",
    "GenericPowOperation",
    "GenericReLUOperation",
    "GenericReduceSumOperation",
    "GenericScalarMulOperation",
    "GenericSiLUOperation",
    "GenericSigmoidOperation",
    "GenericSoftplusOperation",
    "GenericSubOperation",
    "GenericTanhOperation",
]
