"""The Generic carrier: a store of Python objects."""

from collections.abc import Iterable
from typing import Any, SupportsIndex

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_helpers import Operation
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["Generic"]

class Generic(Carrier):
    """A carrier of Python objects.

    A mutable carrier stores any object with __len__, __getitem__ and __setitem__ as it is (a
    list is an alias: changes show through both ways); an immutable one any object with __len__
    and __getitem__ (tuples, ranges, str). Anything else is materialised with list(values),
    consuming one-pass iterators. Values are not checked against the dtype: Floating values are
    meant to be differentiable numbers, Any values are arbitrary objects.

    Args:
        values: an iterable of the elements.
        mutable: whether the carrier can be written (normalised with bool()).
        dtype: DType.Floating or DType.Any.

    Returns:
        Generic: the carrier.

    Raises:
        TypeError: 'Generic requires an iterable object', 'Generic dtype must be a DType'.
        ValueError: 'Generic dtype must be DType.Any or DType.Floating'.

    Examples:
        >>> values = [1.0, 2.0]
        >>> g = Generic(values)
        >>> g[0] = 5.0
        >>> values, g.version
        ([5.0, 2.0], 1)
        >>> Generic(range(3), mutable=False, dtype=DType.Any)[2]
        2
    """

    def __init__(self, values: Iterable[Any], *, mutable: bool = True, dtype: DType = ...) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    def size(self) -> int:
        """len() of the store.

        Returns:
            int: the element count.

        Raises:
            RuntimeError: 'Carrier is released'.

        Examples:
            >>> Generic('abc').size()
            3
        """
    def dtype(self) -> DType:
        """The element type.

        Returns:
            DType: Floating or Any.

        Examples:
            >>> Generic([]).dtype()
            <DType.Floating: 'Floating'>
        """
    def get_value(self, index: Any, /) -> Any:
        """store[index], with Python's indexing rules (-1 is the last element); carrier[i] adds the
        base checks.

        Args:
            index: the store index.

        Returns:
            object: the element.

        Raises:
            RuntimeError: 'Carrier is released'.

        Examples:
            >>> Generic([1, 2, 3]).get_value(-1)
            3
        """
    def set_value(self, index: Any, value: Any, /) -> None:
        """store[index] = value with Python's indexing rules, then one version bump.

        Args:
            index: the store index (negative counts from the end).
            value: any object.

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is not mutable', 'Carrier is released'.

        Examples:
            >>> g = Generic([1, 2])
            >>> g.set_value(-1, 'x')
            >>> g[1], g.version
            ('x', 1)
        """
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> Generic:
        """A new Generic holding the values in a new list (exact Generic only; works after release).

        Args:
            values: an iterable of the elements.
            mutable: whether the new carrier can be written.
            dtype: DType.Floating or DType.Any; None means this carrier's.

        Returns:
            Generic: the new carrier.

        Raises:
            NotImplementedError: 'Generic carrier factory only supports exact Generic carriers' on a
                subclass.

        Examples:
            >>> list(Generic([]).new_like((1, None)))
            [1, None]
        """
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> Generic:
        """A plain Generic of size Nones (also for subclasses; empty is ignored).

        Args:
            size: the element count, >= 0.
            mutable: whether the new carrier can be written.
            dtype: DType.Floating or DType.Any; None means this carrier's.
            empty: ignored.

        Returns:
            Generic: the new carrier.

        Raises:
            ValueError: 'Generic allocation size must be non-negative'.

        Examples:
            >>> list(Generic([]).allocate_like(2))
            [None, None]
        """
    def scatter(
        self,
        to_scatter: Tensor,
        scatter_onto: Tensor,
        mapping: Layout,
        mapping_offset: SupportsIndex = 0,
    ) -> None:
        """self[scatter_onto.offset + mapping_offset + mapping(i)] = to_scatter[i] for every logical i;
        the version rises once per element.

        Args:
            to_scatter: the source Tensor (any carrier).
            scatter_onto: a Tensor over this carrier; only its offset is used.
            mapping: a Layout with the shape of to_scatter's layout.
            mapping_offset: added to every destination index, >= 0.

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is not mutable'.
            TypeError: 'to_scatter must be a Tensor', 'scatter_onto must be a Tensor', 'mapping must
                be a Layout'.
            ValueError: 'scatter_onto must be backed by this carrier', 'mapping shape must match
                to_scatter layout shape', 'mapping_offset must be non-negative', 'scatter mapping
                exceeds destination carrier size'.

        Examples:
            >>> g = Generic([0, 0, 0])
            >>> src = Tensor(Generic(['a', 'b']), 0, Layout(Shape(2), Stride(1)))
            >>> g.scatter(src, Tensor(g, 0, Layout(Shape(3), Stride(1))), Layout(Shape(2), Stride(2)))
            >>> list(g), g.version
            (['a', 0, 'b'], 2)
        """
    def _dispatch_op(self, name: str, /) -> Operation:
        """A fresh operation from the Generic table (a hook: subclasses may override it and reach this
        table through super()).

        Args:
            name: the canonical operation name.

        Returns:
            Operation: a fresh, undispatched operation.

        Raises:
            NotImplementedError: "Generic carrier does not support operation '<name>'".

        Examples:
            >>> type(Generic([])._dispatch_op('add')).__name__
            'GenericAddOperation'
        """
