"""The Evictable carrier: a two-tier storage hierarchy, and its operation adapter."""

from collections.abc import Iterable
from typing import Any, SupportsIndex

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_helpers import Operation
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["Evictable", "EvictableOperation"]

class Evictable(Carrier):
    """A two-tier storage hierarchy: values live in primary while promoted and in secondary after
    evict().

    The constructor takes exclusive ownership of both carriers: they stay readable through old
    references while live, but refuse direct writes, scatter, release and move. Computation runs
    on the primary through EvictableOperation adapters; element access, operations and scatter
    fail while evicted. The hierarchy's size, dtype and mutability are the primary's at
    construction. When the hierarchy is garbage-collected it gives both current tiers back.

    Args:
        primary: a live, unowned carrier with at least one element.
        secondary: a live, unowned, mutable carrier of the same dtype.

    Returns:
        Evictable: the hierarchy.

    Raises:
        TypeError: 'primary must be a Carrier instance', 'secondary must be a Carrier instance',
            'primary and secondary dtypes must match'.
        ValueError: 'primary and secondary must be distinct carriers', 'primary carrier must
            contain at least one element'.
        RuntimeError: 'primary carrier is released', 'secondary carrier is released', 'primary
            carrier is already owned by another carrier', 'secondary carrier is already owned by
            another carrier', 'secondary carrier must be mutable'.

    Examples:
        >>> primary = Generic([1.0])
        >>> carrier = Evictable(primary, Generic([0.0]))
        >>> carrier.is_mutable(), primary.is_owned(), primary.is_mutable()
        (True, True, False)
        >>> carrier[0] = 2.0
        >>> carrier.version, primary[0]
        (1, 2.0)
    """

    def __init__(self, primary: Carrier, secondary: Carrier, /) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    @property
    def primary(self) -> Carrier:
        """The current primary tier (a new object after each promotion).

        Returns:
            Carrier: the primary.

        Examples:
            >>> p = Generic([1.0])
            >>> Evictable(p, Generic([0.0])).primary is p
            True
        """
    @property
    def secondary(self) -> Carrier:
        """The current secondary tier (replaced when an eviction needs a larger or live one).

        Returns:
            Carrier: the secondary.

        Examples:
            >>> s = Generic([0.0])
            >>> Evictable(Generic([1.0]), s).secondary is s
            True
        """
    def size(self) -> int:
        """The element count recorded at construction; 0 after release.

        Returns:
            int: the size.

        Examples:
            >>> Evictable(Generic([1.0, 2.0]), Generic([])).size()
            2
        """
    def dtype(self) -> DType:
        """The primary's dtype.

        Returns:
            DType: the element type.

        Examples:
            >>> Evictable(Generic([1.0]), Generic([])).dtype()
            <DType.Floating: 'Floating'>
        """
    def get_value(self, index: SupportsIndex, /) -> Any:
        """Reads one element of the promoted primary.

        Args:
            index: the element, 0 <= index < size().

        Returns:
            Any: the value.

        Raises:
            RuntimeError: 'Carrier is released', 'Evictable carrier is evicted; call promote()
                first'.
            IndexError: 'Carrier index out of range'.

        Examples:
            >>> Evictable(Generic([1.5]), Generic([])).get_value(0)
            1.5
        """
    def set_value(self, index: SupportsIndex, value: Any, /) -> None:
        """Writes one element of the promoted primary (under owner access, so the primary's version
        rises too) and bumps the hierarchy's version once.

        Args:
            index: the element, 0 <= index < size().
            value: the value.

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is not mutable', 'Evictable carrier is evicted; call promote()
                first'.

        Examples:
            >>> e = Evictable(Generic([1.0]), Generic([]))
            >>> e.set_value(0, 4.0)
            >>> e[0], e.version, e.primary.version
            (4.0, 1, 1)
        """
    def is_evicted(self) -> bool:
        """Whether the values are in the secondary tier.

        Returns:
            bool: True after evict() until promote().

        Examples:
            >>> Evictable(Generic([1.0]), Generic([])).is_evicted()
            False
        """
    def evict(self) -> None:
        """Moves the values to the secondary tier and releases the primary.

        The destination is the current secondary if it is live and large enough, else a fresh one
        from its allocate_like. The move class comes from the move registry for the exact tier
        classes and runs without recording autograd. The new secondary is published only after the
        move succeeded: on failure the hierarchy is as before and the call may be retried. A no-op
        when already evicted; the version never changes.

        Returns:
            None.

        Raises:
            RuntimeError: 'Evictable carrier is owned by another carrier and cannot be modified
                directly', 'Carrier is released'.
            OSError: an I/O failure of a file tier.

        Examples:
            >>> e = Evictable(Generic([1.0, 2.0]), Generic([]))
            >>> old = e.primary
            >>> e.evict()
            >>> e.is_evicted(), old.is_released(), list(e.secondary)
            (True, True, [1.0, 2.0])
        """
    def promote(self) -> None:
        """Moves the values back into a fresh primary (from the released primary's allocate_like) and
        releases the secondary.

        The same publication rule as evict(): on failure nothing changes. A no-op when promoted; the
        version never changes.

        Returns:
            None.

        Raises:
            RuntimeError: 'Evictable carrier is owned by another carrier and cannot be modified
                directly', 'Carrier is released'.
            OSError: an I/O failure of a file tier.

        Examples:
            >>> e = Evictable(Generic([1.0, 2.0]), Generic([]))
            >>> e.evict()
            >>> e.promote()
            >>> e.is_evicted(), list(e), e.secondary.is_released()
            (False, [1.0, 2.0], True)
        """
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> Evictable:
        """A new hierarchy: the primary's new_like(values) over an empty secondary like this one's.

        Args:
            values: an iterable of values (at least one).
            mutable: whether the new primary can be written.
            dtype: the element type; None means this carrier's.

        Returns:
            Evictable: the new hierarchy.

        Raises:
            ValueError: 'primary carrier must contain at least one element'.

        Examples:
            >>> e = Evictable(Generic([1.0]), Generic([]))
            >>> n = e.new_like([3.0, 4.0])
            >>> list(n), n.secondary.size()
            ([3.0, 4.0], 0)
        """
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> Evictable:
        """A new hierarchy: the primary's allocate_like(size) over an empty secondary like this one's.

        Args:
            size: the element count, >= 1.
            mutable: whether the new primary can be written.
            dtype: the element type; None means this carrier's.
            empty: passed on to the primary.

        Returns:
            Evictable: the new hierarchy.

        Raises:
            ValueError: 'primary carrier must contain at least one element'.

        Examples:
            >>> e = Evictable(CPU(1), CPU(0))
            >>> e.allocate_like(3).size()
            3
        """
    def scatter(
        self,
        to_scatter: Tensor,
        scatter_onto: Tensor,
        mapping: Layout,
        mapping_offset: SupportsIndex = 0,
    ) -> None:
        """Scatters into the promoted primary under owner access, then bumps the hierarchy's version
        once. An Evictable source is read through its primary.

        Args:
            to_scatter: the source Tensor.
            scatter_onto: a Tensor backed by this carrier (its offset is used).
            mapping: a Layout of to_scatter's shape.
            mapping_offset: an offset added to every mapped index.

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is not mutable', 'Carrier is released', 'Evictable carrier is
                evicted; call promote() first'.
            ValueError: 'scatter_onto must be backed by this carrier object'.
            TypeError: 'to_scatter must be a Tensor', 'mapping must be a Layout'.

        Examples:
            >>> e = Evictable(Generic([0.0, 0.0]), Generic([]))
            >>> src = Tensor(Generic([5.0]), 0, Layout(Shape(1), Stride(1)))
            >>> onto = Tensor(e, 0, Layout(Shape(2), Stride(1)))
            >>> e.scatter(src, onto, Layout(Shape(1), Stride(1)), 1)
            >>> list(e), e.version
            ([0.0, 5.0], 1)
        """
    def dlpack_info(self) -> dict[str, int]:
        """Refuses DLPack export, promoted or not.

        Returns:
            dict: never returns.

        Raises:
            BufferError: 'DLPack is not supported for Evictable carrier'.

        Examples:
            >>> Evictable(Generic([1.0]), Generic([])).dlpack_info()
            Traceback (most recent call last):
            ...
            BufferError: DLPack is not supported for Evictable carrier
        """
    def _dispatch_op(self, name: str, /) -> Operation:
        """An EvictableOperation wrapping the primary's dispatched operation of this name (a hook:
        subclasses may override it and reach this one through super()).

        Args:
            name: the canonical operation name.

        Returns:
            EvictableOperation: a fresh, undispatched adapter.

        Raises:
            RuntimeError: 'Evictable carrier is evicted; call promote() first'.

        Examples:
            >>> e = Evictable(Generic([1.0]), Generic([]))
            >>> type(e._dispatch_op('relu').primary_operation).__name__
            'GenericReLUOperation'
        """

class EvictableOperation(Operation):
    """The operation of Evictable carriers: runs primary_operation on the tensors' primary tiers
    and wraps the result back into a hierarchy.

    forward lowers every Evictable tensor input to its promoted primary, stores the lowered
    inputs on the primary operation, runs it by sealed lowered execution and returns the result
    in an Evictable: a view stays in its input's hierarchy, fresh storage gets a new hierarchy
    with an empty secondary. The adapter is the only autograd node; backward needs the saved
    inputs promoted (not the result) and returns Evictable gradients. forward may run once.

    Args:
        primary_operation: the Operation of the primary carrier.

    Returns:
        EvictableOperation: the adapter.

    Raises:
        TypeError: 'primary_operation must be an Operation'.

    Examples:
        >>> e = Evictable(Generic([-1.0, 2.0]), Generic([]))
        >>> x = Tensor(e, 0, Layout(Shape(2), Stride(1)))
        >>> y = relu(x)
        >>> type(y.autograd_ctx).__name__, type(y.carrier).__name__, y[1]
        ('EvictableOperation', 'Evictable', 2.0)
        >>> y.carrier.secondary.size()
        0
    """

    def __init__(self, primary_operation: Operation) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    @property
    def primary_operation(self) -> Operation:
        """The wrapped operation of the primary carrier.

        Returns:
            Operation: the primary operation.

        Examples:
            >>> inner = GenericReLUOperation()
            >>> EvictableOperation(inner).primary_operation is inner
            True
        """
