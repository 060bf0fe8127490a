"""Ergonomic helpers: layout builders, CPU tensor factories, scalar reductions."""

import random
from typing import Any

from strideweave.carriers.dtype import DType
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = [
    "arange",
    "column_major",
    "full",
    "item",
    "mean",
    "ones",
    "rand",
    "randn",
    "row_major",
    "sum",
    "tensor",
    "to_list",
    "zeros",
]

def column_major(*extents: int) -> Layout:
    """A flat column-major (first mode fastest) layout.

    Args:
        extents: one positive int per mode.

    Returns:
        The Layout whose strides are the running products from the left.

    Raises:
        ValueError: no extents, or one that is not a positive int.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.column_major(2, 3, 4)
        (2,3,4):(1,2,6)
    """

def row_major(*extents: int) -> Layout:
    """A flat row-major (last mode fastest) layout.

    Args:
        extents: one positive int per mode.

    Returns:
        The Layout whose strides are the running products from the right.

    Raises:
        ValueError: no extents, or one that is not a positive int.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.row_major(2, 3, 4)
        (2,3,4):(12,4,1)
    """

def tensor(values: Any, *, layout: Layout | None = None, dtype: DType = ...) -> Tensor:
    """A CPU tensor from Python values.

    An array object (anything with the buffer protocol, ``__array__`` or
    ``__dlpack__``: NumPy arrays, ``array.array``, PyTorch CPU tensors) is
    copied in bulk into a fresh CPU carrier with its shape (a column-major
    layout, as for nested lists; a 0-d array gives the layout ``():()``)
    and a matching dtype: bool arrays become Bool, integer arrays Int32
    (ValueError when a value does not fit), floating arrays Float32; an
    explicit ``dtype`` other than Float32 converts the values to it.

    Args:
        values: with ``layout``, a flat sequence in logical-index order;
            without, nested lists or tuples whose outermost level is mode 0
            (``result[i, j] == values[i][j]``), or an array object.
        layout: the Layout to use, or None for ``column_major`` of the
            nesting's extents.
        dtype: DType.Float32 or DType.Int32.

    Returns:
        A fresh CPU Tensor backed by ``layout.cosize`` elements.

    Raises:
        ValueError: a length that differs from the layout's size; a scalar,
            empty, or ragged nesting; an unsupported dtype.
        TypeError: a non-integral value for Int32.

    Examples:
        >>> import strideweave.friendly as F
        >>> t = F.tensor([[1, 2, 3], [4, 5, 6]])
        >>> t.layout, t[1, 2]
        ((2,3):(1,2), 6.0)
        >>> F.tensor([1.5, 2.5], layout=F.column_major(2))[1]
        2.5
    """

def full(*extents: int, value: Any, dtype: DType = ...) -> Tensor:
    """A column-major CPU tensor with every element equal to value.

    Args:
        extents: one positive int per mode.
        value: the fill value (a required keyword).
        dtype: DType.Float32 or DType.Int32.

    Returns:
        A fresh CPU Tensor.

    Raises:
        ValueError: bad extents or dtype.
        TypeError: a non-integral value for Int32.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.to_list(F.full(2, 2, value=7.0))
        [7.0, 7.0, 7.0, 7.0]
    """

def zeros(*extents: int, dtype: DType = ...) -> Tensor:
    """A column-major CPU tensor of zeros.

    Args:
        extents: one positive int per mode.
        dtype: DType.Float32 or DType.Int32.

    Returns:
        A fresh, zero-filled CPU Tensor.

    Raises:
        ValueError: bad extents or dtype.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.to_list(F.zeros(3))
        [0.0, 0.0, 0.0]
    """

def ones(*extents: int, dtype: DType = ...) -> Tensor:
    """A column-major CPU tensor of ones (1 for Int32, 1.0 otherwise).

    Args:
        extents: one positive int per mode.
        dtype: DType.Float32 or DType.Int32.

    Returns:
        A fresh CPU Tensor.

    Raises:
        ValueError: bad extents or dtype.

    Examples:
        >>> import strideweave as sw
        >>> import strideweave.friendly as F
        >>> F.to_list(F.ones(2, dtype=sw.DType.Int32))
        [1, 1]
    """

def arange(count: int, *, dtype: DType = ...) -> Tensor:
    """A one-mode CPU tensor holding 0, 1, ..., count - 1.

    Args:
        count: a positive int.
        dtype: DType.Float32 (float values) or DType.Int32.

    Returns:
        A fresh CPU Tensor of layout ``count:1``.

    Raises:
        ValueError: a count that is not a positive int; a bad dtype.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.to_list(F.arange(4))
        [0.0, 1.0, 2.0, 3.0]
    """

def rand(*extents: int, rng: random.Random | None = None) -> Tensor:
    """A Float32 CPU tensor of ``rng.random()`` draws in logical order.

    Args:
        extents: one positive int per mode.
        rng: the generator; None uses a fresh ``random.Random()``.

    Returns:
        A fresh CPU Tensor with values in [0, 1).

    Raises:
        ValueError: bad extents.

    Examples:
        >>> import random
        >>> import strideweave.friendly as F
        >>> t = F.rand(2, 3, rng=random.Random(0))
        >>> all(0.0 <= v < 1.0 for v in F.to_list(t))
        True
    """

def randn(*extents: int, rng: random.Random | None = None) -> Tensor:
    """A Float32 CPU tensor of ``rng.gauss(0.0, 1.0)`` draws in logical order.

    Args:
        extents: one positive int per mode.
        rng: the generator; None uses a fresh ``random.Random()``.

    Returns:
        A fresh CPU Tensor of standard normal samples.

    Raises:
        ValueError: bad extents.

    Examples:
        >>> import random
        >>> import strideweave.friendly as F
        >>> F.randn(4, rng=random.Random(0)).layout
        4:1
    """

def sum(tensor: Tensor) -> Tensor:
    """The sum of every element, as an exact scalar ``1:1``.

    This is ``reduce(tensor, "a b ... -> 1")`` with one symbol per
    top-level mode (the layout command string form of ``strideweave.einops``);
    the result supports ``backward()`` with no argument.

    Args:
        tensor: a tensor whose top-level modes are all flat, on any carrier
            that supports rearrange and reduce.

    Returns:
        A Tensor of layout ``Layout(Shape(1), Stride(1))``.

    Raises:
        TypeError: a non-Tensor.
        ValueError: no modes, a hierarchical mode, or more than 26 modes.

    Examples:
        >>> import strideweave.friendly as F
        >>> s = F.sum(F.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> s.layout, s[0]
        (1:1, 10.0)
    """

def mean(tensor: Tensor) -> Tensor:
    """The mean of every element: ``sum(tensor) * (1 / tensor.size())``.

    Args:
        tensor: as for ``sum``.

    Returns:
        A Tensor of layout ``Layout(Shape(1), Stride(1))``.

    Raises:
        TypeError: a non-Tensor.
        ValueError: as for ``sum``.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.item(F.mean(F.tensor([1.0, 2.0, 3.0, 6.0])))
        3.0
    """

def item(tensor: Tensor) -> float | int | bool:
    """The single value of a one-element tensor.

    Args:
        tensor: a Tensor with exactly one element.

    Returns:
        The carrier's value at that element (a float for Float32).

    Raises:
        TypeError: a non-Tensor.
        ValueError: a tensor whose size is not 1.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.item(F.full(1, value=2.5))
        2.5
    """

def to_list(tensor: Tensor) -> list[Any]:
    """The values of a tensor in logical order (first mode fastest).

    Args:
        tensor: any Tensor.

    Returns:
        A list of ``tensor.size()`` values.

    Raises:
        TypeError: a non-Tensor.

    Examples:
        >>> import strideweave.friendly as F
        >>> F.to_list(F.tensor([[1, 2], [3, 4]]))
        [1.0, 3.0, 2.0, 4.0]
    """
