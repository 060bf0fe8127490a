"""The carrier base class: storage plus the shared carrier policy."""

from collections.abc import Iterable
from typing import Any, SupportsIndex, TypeVar

from typing_extensions import disjoint_base

from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_capability import OperationCapability
from strideweave.carriers.operation_helpers import Operation
from strideweave.carriers.operation_policy import OperationPlan
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["Carrier"]

_F = TypeVar("_F")

@disjoint_base
class Carrier:
    """Storage plus the shared carrier policy; the base of every carrier.

    The base owns the rules all carriers share: a version counter that every successful public
    mutation bumps, mutability (the _is_mutable hook, and not owned by a composite carrier),
    release, element access with bounds checks, and the ownership protocol of composite
    carriers. A subclass implements the storage hooks in Python: size(), dtype(), get_value(i),
    new_like(values, *, mutable=True) and allocate_like(size, *, mutable=True, dtype=None,
    empty=False), and optionally _is_mutable(), set_value(i, v) and _release(). Carrier() itself
    can be constructed; its storage hooks raise RuntimeError ('Tried to call pure virtual
    function "Carrier::size"', ...).

    Returns:
        Carrier: a carrier whose hooks are its Python methods.

    Examples:
        >>> class Squares(Carrier):
        ...     def size(self):
        ...         return 4
        ...     def dtype(self):
        ...         return DType.Any
        ...     def get_value(self, index):
        ...         return index * index
        >>> c = Squares()
        >>> c[3], c.is_mutable(), c.version
        (9, False, 0)
        >>> Carrier().size()
        Traceback (most recent call last):
        ...
        RuntimeError: Tried to call pure virtual function "Carrier::size"
    """

    def __init__(self) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    # Storage hooks: a subclass implements them; the base raises
    # RuntimeError('Tried to call pure virtual function "Carrier::<name>"').
    def size(self) -> int:
        """The number of elements (a hook: subclasses implement it).

        Returns:
            int: the element count.

        Raises:
            RuntimeError: on the base class, 'Tried to call pure virtual function "Carrier::size"'.

        Examples:
            >>> CPU(3).size()
            3
        """
    def dtype(self) -> DType:
        """The element type (a hook: subclasses implement it).

        Returns:
            DType: the carrier's dtype.

        Raises:
            RuntimeError: on the base class (pure virtual).

        Examples:
            >>> CPU(3).dtype()
            <DType.Float32: 'Float32'>
        """
    def get_value(self, index: Any, /) -> Any:
        """Reads one element (a hook: subclasses implement it).

        carrier[i] checks release and bounds, then calls this.

        Args:
            index: the element, 0 <= index < size().

        Returns:
            object: the element's value.

        Raises:
            RuntimeError: on the base class (pure virtual).

        Examples:
            >>> Generic([4, 5]).get_value(1)
            5
        """
    def new_like(self, values: Iterable[Any], *, mutable: bool = True) -> Carrier:
        """A new carrier of this kind holding values (a hook).

        Args:
            values: an iterable of element values; None marks a hole.
            mutable: whether the new carrier can be written.

        Returns:
            Carrier: the new carrier.

        Raises:
            RuntimeError: on the base class (pure virtual).

        Examples:
            >>> CPU(1).new_like([1, None, 3])[1]
            0.0
        """
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> Carrier:
        """Fresh storage of this kind (a hook: subclasses implement it).

        Args:
            size: the element count, >= 0.
            mutable: whether the new carrier can be written.
            dtype: the element type; None means this carrier's.
            empty: skip zero-filling where the backend can.

        Returns:
            Carrier: the new carrier.

        Raises:
            RuntimeError: on the base class (pure virtual).

        Examples:
            >>> CPU(1).allocate_like(3).size()
            3
        """
    def scatter(
        self,
        to_scatter: Tensor,
        scatter_onto: Tensor,
        mapping: Layout,
        mapping_offset: SupportsIndex = 0,
    ) -> None:
        """Writes to_scatter[i] at scatter_onto.offset + mapping_offset + mapping(i) of this carrier,
        for every logical i (a hook).

        Args:
            to_scatter: the source Tensor.
            scatter_onto: a Tensor backed by this carrier; only its offset is used.
            mapping: a Layout with the shape of to_scatter's layout.
            mapping_offset: added to every destination index, >= 0.

        Returns:
            None.

        Raises:
            RuntimeError: on the base class (pure virtual).

        Examples:
            >>> dst = CPU(4)
            >>> src = Tensor(CPU(1).new_like([1, 2]), 0, Layout(Shape(2), Stride(1)))
            >>> dst.scatter(src, Tensor(dst, 0, Layout(Shape(4), Stride(1))), Layout(Shape(2), Stride(2)))
            >>> list(dst)
            [1.0, 0.0, 2.0, 0.0]
        """
    # The shared policy.
    def is_mutable(self) -> bool:
        """Whether public interfaces may write now.

        True when the storage is intrinsically mutable (the _is_mutable hook) and no composite
        carrier owns this one, or its owner is accessing it on this thread.

        Returns:
            bool: writable now.

        Examples:
            >>> CPU(2).is_mutable(), CPU(2, mutable=False).is_mutable()
            (True, False)
        """
    def is_owned(self) -> bool:
        """Whether a composite carrier holds the ownership token, or a pending move owns the carrier.

        Returns:
            bool: owned by another carrier, or the source or destination of a move in progress.

        Examples:
            >>> c = CPU(2)
            >>> token = c._claim_ownership()
            >>> c.is_owned(), c.is_mutable()
            (True, False)
        """
    @property
    def version(self) -> int:
        """The version counter: starts at 0; every successful public mutation bumps it.

        Every alias and view of the carrier sees the same number.

        Returns:
            int: the version, >= 0.

        Examples:
            >>> c = CPU(2)
            >>> c[0] = 1.5
            >>> c.version
            1
        """
    def _increment_version(self) -> None:
        """Bumps the version by one.

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is owned by another carrier and cannot be modified directly'
                without owner access.

        Examples:
            >>> c = CPU(2)
            >>> c._increment_version()
            >>> c.version
            1
        """
    def is_released(self) -> bool:
        """Whether release() has run.

        Returns:
            bool: released.

        Examples:
            >>> c = CPU(2)
            >>> c.release()
            >>> c.is_released()
            True
        """
    def release(self) -> None:
        """Frees the storage for good (idempotent; the version does not change).

        Calls the _release hook once; afterwards every element access raises RuntimeError('Carrier
        is released').

        Returns:
            None.

        Raises:
            RuntimeError: owned by another carrier without owner access.

        Examples:
            >>> c = CPU(2)
            >>> c.release()
            >>> c[0]
            Traceback (most recent call last):
            ...
            RuntimeError: Carrier is released
        """
    def dlpack_info(self) -> dict[str, int]:
        """Where a DLPack export finds the data (a hook).

        Tensor.__dlpack__ and __dlpack_device__ ask it on every call. A carrier opts in by
        overriding it: 'pointer' is the integer address the tensor offset counts from (non-zero when
        the tensor has elements), 'device_type' and 'device_id' the DLPack device, reported
        verbatim.

        Returns:
            dict: 'pointer', 'device_type' and 'device_id' (any value dict() accepts; more keys are
                ignored).

        Raises:
            BufferError: 'DLPack is not supported for this carrier' (the default).

        Examples:
            >>> Generic([1]).dlpack_info()
            Traceback (most recent call last):
            ...
            BufferError: DLPack is not supported for this carrier
        """
    def _claim_ownership(self) -> int:
        """Makes a composite carrier the owner; returns its token.

        Returns:
            int: the ownership token (tokens start at 1).

        Raises:
            RuntimeError: 'Carrier is released', or 'Carrier is already owned by another carrier'.

        Examples:
            >>> CPU(1)._claim_ownership() > 0
            True
        """
    def _relinquish_ownership(self, token: SupportsIndex, /) -> None:
        """Gives the ownership up.

        Args:
            token: the token _claim_ownership returned.

        Returns:
            None.

        Raises:
            RuntimeError: 'Invalid carrier ownership token', or 'Carrier ownership cannot be
                relinquished during owner access'.

        Examples:
            >>> c = CPU(1)
            >>> c._relinquish_ownership(c._claim_ownership())
            >>> c.is_owned()
            False
        """
    def _begin_owner_access(self, token: SupportsIndex, /) -> None:
        """Starts (re-entrantly) the owner's privileged access on this thread.

        Args:
            token: the ownership token.

        Returns:
            None.

        Raises:
            RuntimeError: 'Invalid carrier ownership token', or 'Carrier is already being accessed
                by its owner on another thread'.

        Examples:
            >>> c = CPU(1)
            >>> t = c._claim_ownership()
            >>> c._begin_owner_access(t)
            >>> c.is_mutable(), c._has_owner_access()
            (True, True)
        """
    def _end_owner_access(self, token: SupportsIndex, /) -> None:
        """Ends one level of owner access.

        Args:
            token: the ownership token.

        Returns:
            None.

        Raises:
            RuntimeError: 'Invalid carrier ownership token', or 'Carrier owner access must end on
                the thread where it began'.

        Examples:
            >>> c = CPU(1)
            >>> t = c._claim_ownership()
            >>> c._begin_owner_access(t)
            >>> c._end_owner_access(t)
            >>> c._has_owner_access()
            False
        """
    def _has_owner_access(self) -> bool:
        """Whether this thread is inside the owner's access.

        Returns:
            bool: owned, and accessed by the owner on this thread.

        Examples:
            >>> CPU(1)._has_owner_access()
            False
        """
    def dispatch_op(self, operation_name: str, /) -> Operation:
        """A fresh operation for a canonical name, tagged with the name and this carrier's exact class.

        Calls the _dispatch_op hook (a Python override when the class has one; CPU and Generic have
        native tables), requires an Operation that was never dispatched, and records _operation_name
        and _dispatch_carrier_class on it. An instance method only.

        Args:
            operation_name: the canonical name, such as 'add' or 'relu'.

        Returns:
            Operation: the fresh operation.

        Raises:
            NotImplementedError: "Carrier class does not support operation '<name>'" (or the
                backend's own message).
            TypeError: 'Carrier._dispatch_op must return an Operation', 'Carrier._dispatch_op must
                return a fresh Operation instance'.

        Examples:
            >>> op = Generic([1.0]).dispatch_op('relu')
            >>> type(op).__name__, op._operation_name, op._dispatch_carrier_class is Generic
            ('GenericReLUOperation', 'relu', True)
        """
    # Capability and storage-dtype queries.
    def operation_capabilities(
        self, operation_name: str | None = None
    ) -> tuple[OperationCapability, ...]:
        """The operation plans this carrier executes.

        An independent carrier reads its exact class's declared set; a dependent carrier (Evictable,
        a DependentCarrier) its instance snapshot. The answer never depends on the carrier's current
        dtype.

        Args:
            operation_name: only the capabilities of this operation (its plan name, such as
                'reduce_sum'); None for all.

        Returns:
            tuple[OperationCapability, ...]: sorted by field values.

        Examples:
            >>> import strideweave as sw
            >>> caps = sw.CPU(1).operation_capabilities('relu')
            >>> [c.output.value for c in caps]
            ['Float32', 'Int32']
        """
    def supports_operation_plan(self, plan: OperationPlan, /) -> bool:
        """Whether this carrier executes exactly this plan.

        Args:
            plan: an OperationPlan.

        Returns:
            bool: True when a capability matches it on every field.

        Examples:
            >>> import strideweave as sw
            >>> from strideweave.carriers.operation_policy import resolve_operation_plan
            >>> plan = resolve_operation_plan('add', sw.DType.Int32, sw.DType.Int32)
            >>> sw.CPU(1).supports_operation_plan(plan)
            True
        """
    def unsupported_plan_reason(self, plan: OperationPlan, /) -> str | None:
        """Why this carrier does not execute a plan.

        Args:
            plan: an OperationPlan.

        Returns:
            str | None: a stable sentence, or None when it is supported.

        Examples:
            >>> import strideweave as sw
            >>> from strideweave.carriers.operation_policy import resolve_operation_plan
            >>> plan = resolve_operation_plan('relu', sw.DType.Float32)
            >>> sw.CPU(1).unsupported_plan_reason(plan) is None
            True
        """
    def require_operation_plan(self, plan: OperationPlan, /) -> OperationCapability:
        """The capability of this carrier matching a plan.

        Args:
            plan: an OperationPlan.

        Returns:
            OperationCapability: the match.

        Raises:
            UnsupportedOperationPlan: no capability matches (the message is
                unsupported_plan_reason's).

        Examples:
            >>> import strideweave as sw
            >>> from strideweave.carriers.operation_policy import resolve_operation_plan
            >>> plan = resolve_operation_plan('relu', sw.DType.Int32)
            >>> sw.CPU(1).require_operation_plan(plan).compute.value
            'int32_exact'
        """
    def supports_storage_dtype(self, dtype: DType, /) -> bool:
        """Whether this carrier's implementation could allocate homogeneous storage of dtype.

        It never allocates, and the answer does not depend on the current dtype, size, mutability,
        ownership, residency or release state: CPU stores Float32, Int32 and Bool; Generic those and
        Any and Floating; FileBacked Float32, Int32 and Floating; Evictable what both tiers store;
        another carrier only the dtype it holds.

        Args:
            dtype: a DType.

        Returns:
            bool.

        Raises:
            TypeError: dtype is not a DType.

        Examples:
            >>> import strideweave as sw
            >>> sw.CPU(1).supports_storage_dtype(sw.DType.Bool)
            True
            >>> sw.CPU(1).supports_storage_dtype(sw.DType.Floating)
            False
        """
    def facet(self, kind: type[_F], /) -> _F | None:
        """The facet registered under exactly kind in this class's CarrierDefinition.

        Args:
            kind: a CarrierFacet subclass.

        Returns:
            CarrierFacet | None: the facet, or None (always None for a definition-free carrier).

        Raises:
            TypeError: 'facet type must be a CarrierFacet subclass'.

        Examples:
            >>> import strideweave as sw
            >>> sw.CPU(1).facet(sw.CarrierFacet) is None
            True
        """
    def require_facet(self, kind: type[_F], /) -> _F:
        """The facet registered under exactly kind, or NotImplementedError naming kind.

        Args:
            kind: a CarrierFacet subclass.

        Returns:
            CarrierFacet: the facet.

        Raises:
            TypeError: 'facet type must be a CarrierFacet subclass'.
            NotImplementedError: '<Class> has no <kind> facet'.

        Examples:
            >>> import strideweave as sw
            >>> sw.CPU(1).require_facet(sw.CarrierFacet)
            Traceback (most recent call last):
            ...
            NotImplementedError: CPU has no CarrierFacet facet
        """
    def __getitem__(self, index: SupportsIndex, /) -> Any:
        """Return self[key]."""
    def __setitem__(self, index: SupportsIndex, value: Any, /) -> None:
        """Set self[key] to value."""
