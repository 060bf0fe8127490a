"""Ergonomic helpers: layout builders, CPU tensor factories, scalar reductions.

Built only from the public primitives (``Layout``, ``CPU``, ``Tensor`` and the
functional operations) and not re-exported by ``import strideweave``; import
it explicitly, for example ``import strideweave.friendly as F``. Every tensor
factory allocates ``layout.cosize`` CPU elements, so it also works for
layouts with holes.

Examples:
    >>> import strideweave.friendly as F
    >>> t = F.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> t.layout
    (2,2):(1,2)
    >>> F.to_list(t), F.item(F.sum(t))
    ([1.0, 3.0, 2.0, 4.0], 10.0)
"""

from __future__ import annotations

import functools
import random
import string
from collections.abc import Sequence
from typing import Any

from strideweave.carriers import CPU, DType
from strideweave.core.layout import Layout, Shape, Stride
from strideweave.functional import mul, reduce
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

# One letter per reduced mode in the reference's "a b ... -> 1" form.
_MAX_REDUCED_MODES = 26


def _check_extents(extents: tuple[Any, ...]) -> list[int]:
    if not extents:
        raise ValueError("at least one extent is required")
    for extent in extents:
        if not isinstance(extent, int) or extent <= 0:
            raise ValueError("extents must be positive integers")
    return [int(extent) for extent in extents]


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
    shape = _check_extents(extents)
    strides = []
    step = 1
    for extent in shape:
        strides.append(step)
        step *= extent
    return Layout(Shape(shape), Stride(strides))


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
    shape = _check_extents(extents)
    strides = [0] * len(shape)
    step = 1
    for k in range(len(shape) - 1, -1, -1):
        strides[k] = step
        step *= shape[k]
    return Layout(Shape(shape), Stride(strides))


def _reject_none(values: Sequence[Any], dtype: DType) -> None:
    """Raises the carrier's own write error when a value is None.

    ``new_like`` reads None as a layout hole and stores 0, so a None value
    would otherwise pass silently.
    """
    if any(value is None for value in values):
        CPU(1, dtype=dtype)[0] = None


def _from_logical(values: Sequence[Any], layout: Layout, dtype: DType) -> Tensor:
    """A CPU tensor of the layout holding values[i] at logical index i."""
    _reject_none(values, dtype)
    physical: list[Any] = [None] * layout.cosize
    index = layout.index
    for i, value in enumerate(values):
        physical[index(i)] = value
    # One bulk write into fresh storage; holes (None) become 0. The empty
    # carrier only names the class and the dtype.
    return Tensor(CPU(0, dtype=dtype).new_like(physical), 0, layout)


def _extents_of(values: Any) -> list[int]:
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError("values must be a non-empty list or tuple")
    extents = []
    level = values
    while isinstance(level, (list, tuple)):
        if not level:
            raise ValueError("values must not contain empty levels")
        extents.append(len(level))
        level = level[0]
    return extents


def _flatten(values: Any, extents: list[int]) -> list[Any]:
    """The leaves of a rectangular nesting in column-major logical order."""
    depth = len(extents)
    strides = [1] * depth
    for k in range(1, depth):
        strides[k] = strides[k - 1] * extents[k - 1]
    flat: list[Any] = [None] * (strides[-1] * extents[-1])

    def walk(level: Any, d: int, base: int) -> None:
        if d == depth:
            if isinstance(level, (list, tuple)):
                raise ValueError("values must be rectangular across every level")
            flat[base] = level
            return
        if not isinstance(level, (list, tuple)) or len(level) != extents[d]:
            raise ValueError("values must be rectangular across every level")
        for j, entry in enumerate(level):
            walk(entry, d + 1, base + j * strides[d])

    walk(values, 0, 0)
    return flat


def _foreign_array(values: Any) -> Any:
    """values as a NumPy array when it is an array object, else None."""
    if isinstance(values, (list, tuple, str)):
        return None
    is_array = hasattr(values, "__dlpack__") or hasattr(values, "__array__")
    if not is_array:
        try:
            memoryview(values)
        except TypeError:
            return None
    import numpy as np

    if hasattr(values, "__array__"):
        try:
            return np.asarray(values)
        except (TypeError, RuntimeError, ValueError):
            if not hasattr(values, "__dlpack__"):
                raise
    if hasattr(values, "__dlpack__"):
        return np.from_dlpack(values)
    return np.asarray(memoryview(values))


def tensor(values: Any, *, layout: Layout | None = None, dtype: DType = DType.Float32) -> Tensor:
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
    array = _foreign_array(values)
    if array is not None:
        from strideweave._io import cpu_from_array

        if layout is not None:
            raise TypeError("layout cannot be given with an array (its shape is used)")
        if dtype is not DType.Float32:
            if dtype not in (DType.Int32, DType.Bool):
                raise ValueError("CPU dtype must be Float32, Int32 or Bool")
            array = array.astype("int32" if dtype is DType.Int32 else "bool")
        return cpu_from_array(array, column_major=True)
    if layout is None and not isinstance(values, (list, tuple, str, int, float)):
        raise ValueError(
            "values must be a non-empty list or tuple, or an array"
            " (the buffer protocol, __array__ or __dlpack__)"
        )
    if layout is not None:
        flat = list(values)
        if len(flat) != layout.size:
            raise ValueError("values length must equal the layout logical size")
    else:
        extents = _extents_of(values)
        flat = _flatten(values, extents)
        layout = column_major(*extents)
    return _from_logical(flat, layout, dtype)


def full(*extents: int, value: Any, dtype: DType = DType.Float32) -> Tensor:
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
    layout = column_major(*extents)
    # A column-major layout is compact: every physical element is logical.
    _reject_none((value,), dtype)
    return Tensor(CPU(0, dtype=dtype).new_like([value] * layout.size), 0, layout)


def zeros(*extents: int, dtype: DType = DType.Float32) -> Tensor:
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
    layout = column_major(*extents)
    return Tensor(CPU(layout.cosize, dtype=dtype), 0, layout)


def ones(*extents: int, dtype: DType = DType.Float32) -> Tensor:
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
    return full(*extents, value=1 if dtype == DType.Int32 else 1.0, dtype=dtype)


def arange(count: int, *, dtype: DType = DType.Float32) -> Tensor:
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
    layout = column_major(count)
    values: list[Any] = list(range(count))
    if dtype != DType.Int32:
        values = [float(i) for i in values]
    return _from_logical(values, layout, dtype)


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
    layout = column_major(*extents)
    generator = random.Random() if rng is None else rng
    return _from_logical([generator.random() for _ in range(layout.size)], layout, DType.Float32)


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
    layout = column_major(*extents)
    generator = random.Random() if rng is None else rng
    values = [generator.gauss(0.0, 1.0) for _ in range(layout.size)]
    return _from_logical(values, layout, DType.Float32)


def sum(tensor: Tensor) -> Tensor:  # noqa: A001 - the reference's public name
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
    if not isinstance(tensor, Tensor):
        raise TypeError("tensor must be a Tensor")
    shape = tensor.layout.shape
    rank = len(shape)
    if rank == 0 or not all(shape[k].is_int for k in range(rank)):
        raise ValueError("tensor must be a flat tensor with integer modes")
    if rank > _MAX_REDUCED_MODES:
        raise ValueError("tensor has too many modes to reduce")
    return reduce(tensor, _scalar_command(rank))


@functools.lru_cache(maxsize=_MAX_REDUCED_MODES)
def _scalar_command(rank: int) -> str:
    """The command ``"a b ... -> 1"`` naming ``rank`` modes (at most 26)."""
    return " ".join(string.ascii_lowercase[:rank]) + " -> 1"


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
    total = sum(tensor)
    return mul(total, 1.0 / tensor.size())


def item(tensor: Tensor) -> Any:
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
    if not isinstance(tensor, Tensor):
        raise TypeError("tensor must be a Tensor")
    if tensor.size() != 1:
        raise ValueError("item requires a tensor with exactly one element")
    return tensor.carrier.get_value(tensor.offset + tensor.layout.index(0))


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
    if not isinstance(tensor, Tensor):
        raise TypeError("tensor must be a Tensor")
    carrier = tensor.carrier
    offset = tensor.offset
    index = tensor.layout.index
    return [carrier.get_value(offset + index(i)) for i in range(tensor.size())]
