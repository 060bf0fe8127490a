"""The CPU carrier: native memory of Float32, Int32 or Bool elements."""

from collections.abc import Iterable
from typing import Any, SupportsIndex

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_helpers import Operation
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["CPU"]

class CPU(Carrier):
    """Native memory of Float32, Int32 or Bool elements.

    With no pointer the carrier owns a fresh 64-byte aligned buffer, zero-filled unless
    empty=True. With a pointer (an int address, for example array.array(...).buffer_info()[0])
    it aliases the caller's memory, which is never freed or initialised here. Float32 elements
    read back as Python floats (widened from float32), Int32 as ints, Bool as bools.

    Args:
        size: the element count, >= 0.
        pointer: None, or the positive address of size elements.
        mutable: whether the carrier can be written.
        dtype: DType.Float32 (the default, also for None), DType.Int32 or DType.Bool.
        empty: skip zero-filling a fresh buffer.

    Returns:
        CPU: the carrier.

    Raises:
        ValueError: 'CPU size must be non-negative', 'CPU dtype must be DType.Float32,
            DType.Int32 or DType.Bool', 'CPU pointer must be a positive integer address'.
        TypeError: a non-int size, or 'CPU pointer must be an integer address or None'.

    Examples:
        >>> c = CPU(3)
        >>> c[1] = 0.1
        >>> c[1], c.size(), c.dtype()
        (0.10000000149011612, 3, <DType.Float32: 'Float32'>)
        >>> CPU(2, dtype=DType.Int32)[0]
        0
    """

    def __init__(
        self,
        size: SupportsIndex,
        pointer: int | None = None,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    def size(self) -> int:
        """The number of elements; 0 after release.

        Returns:
            int: the element count.

        Examples:
            >>> CPU(4).size()
            4
        """
    def dtype(self) -> DType:
        """The element type.

        Returns:
            DType: Float32, Int32 or Bool.

        Examples:
            >>> CPU(1, dtype=DType.Bool).dtype()
            <DType.Bool: 'Bool'>
        """
    def get_value(self, index: SupportsIndex, /) -> float | int | bool:
        """Reads one element, range-checked.

        Args:
            index: the element, 0 <= index < size().

        Returns:
            float | int | bool: the value, by dtype.

        Raises:
            IndexError: 'Carrier index out of range'.
            RuntimeError: 'Carrier is released'.

        Examples:
            >>> CPU(2).get_value(1)
            0.0
        """
    def set_value(self, index: SupportsIndex, value: Any, /) -> None:
        """Writes one element and bumps the version by one.

        Float32 takes anything float() converts from a number (bool too; ints too large become inf);
        Int32 takes integers (__index__) in int32 range; Bool takes numbers (non-zero is True).

        Args:
            index: the element, 0 <= index < size().
            value: the new value.

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is not mutable', 'Carrier is released'.
            IndexError: 'Carrier index out of range'.
            TypeError: 'CPU value must be a number', 'CPU value must be an integer'.
            OverflowError: 'CPU value is out of int32 range'.

        Examples:
            >>> c = CPU(2, dtype=DType.Int32)
            >>> c.set_value(0, 7)
            >>> c[0], c.version
            (7, 1)
        """
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> CPU:
        """A new CPU carrier holding values (None entries become 0).

        Works after release.

        Args:
            values: an iterable of numbers or None.
            mutable: whether the new carrier can be written.
            dtype: the element type; None means this carrier's.

        Returns:
            CPU: a carrier of len(values) elements.

        Examples:
            >>> list(CPU(0, dtype=DType.Int32).new_like([1, None, 3]))
            [1, 0, 3]
        """
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> CPU:
        """A fresh CPU carrier, zero-filled unless empty=True.

        Args:
            size: the element count, >= 0.
            mutable: whether the new carrier can be written.
            dtype: the element type; None means this carrier's.
            empty: skip zero-filling.

        Returns:
            CPU: the new carrier.

        Raises:
            ValueError: 'CPU allocation size must be non-negative'.

        Examples:
            >>> CPU(1).allocate_like(2, dtype=DType.Int32).dtype()
            <DType.Int32: 'Int32'>
        """
    def pointer(self) -> int:
        """The address of the first element; 0 after release.

        Returns:
            int: the buffer address.

        Examples:
            >>> CPU(4).pointer() % 64
            0
        """
    def dlpack_info(self) -> dict[str, int]:
        """Where a DLPack export finds the data: host memory.

        Returns:
            dict: {'pointer': address, 'device_type': 1, 'device_id': 0}; the pointer is 0 after
                release.

        Examples:
            >>> info = CPU(1).dlpack_info()
            >>> info['device_type'], info['device_id']
            (1, 0)
        """
    def scatter(
        self,
        to_scatter: Tensor,
        scatter_onto: Tensor,
        mapping: Layout,
        mapping_offset: SupportsIndex = 0,
    ) -> None:
        """Copies to_scatter[i] to element scatter_onto.offset + mapping_offset + mapping(i), for every
        logical i, in one pass; the version rises once.

        Int32 sources convert to float for a Float32 destination.

        Args:
            to_scatter: a Tensor over a CPU carrier.
            scatter_onto: a Tensor over this carrier; only its offset is used.
            mapping: a Layout with the shape of to_scatter's layout.
            mapping_offset: added to every destination index, >= 0.

        Returns:
            None.

        Raises:
            TypeError: 'scatter_onto must be a Tensor', 'scatter_onto must be backed by a CPU
                carrier' (the same for to_scatter), 'mapping must be a Layout', 'cannot scatter
                Float32 values into an Int32 CPU carrier'.
            ValueError: 'mapping_offset must be non-negative', 'scatter_onto must be backed by this
                carrier', 'mapping shape must match to_scatter layout shape', 'scatter mapping
                exceeds destination carrier size'.
            RuntimeError: 'Carrier is not mutable', 'scatter_onto carrier is released', 'to_scatter
                carrier is released'.

        Examples:
            >>> dst = CPU(3)
            >>> src = Tensor(CPU(1).new_like([5, 6]), 0, Layout(Shape(2), Stride(1)))
            >>> dst.scatter(src, Tensor(dst, 1, Layout(Shape(2), Stride(1))), Layout(Shape(2), Stride(1)))
            >>> list(dst), dst.version
            ([0.0, 5.0, 6.0], 1)
        """
    def _dispatch_op(self, name: str, /) -> Operation:
        """A fresh operation from the CPU table (a hook: subclasses may override it and reach this
        table through super()).

        Args:
            name: the canonical operation name.

        Returns:
            Operation: a fresh, undispatched operation.

        Raises:
            NotImplementedError: "CPU carrier does not support operation '<name>'".

        Examples:
            >>> type(CPU(1)._dispatch_op('view')).__name__
            'GenericViewOperation'
        """
