"""Capabilities: which operation plans a carrier executes."""

import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_policy import (
    Accumulation,
    Arithmetic,
    OperandRole,
    OperationPlan,
)

__all__ = [
    "DependentCarrier",
    "OperandCapability",
    "OperationCapability",
    "UnsupportedOperationPlan",
    "capabilities_for_carrier_class",
    "carrier_operation_capabilities",
    "matching_capability",
    "register_operation_capabilities",
    "require_capability",
    "supports_operation_plan",
    "unsupported_plan_reason",
]

class UnsupportedOperationPlan(NotImplementedError):
    """A carrier does not execute an operation plan.

    The message is the stable reason sentence of
    :func:`unsupported_plan_reason`.

    Examples:
        >>> issubclass(UnsupportedOperationPlan, NotImplementedError)
        True
    """

@dataclass(frozen=True)
class OperandCapability:
    """One operand of a capability.

    Args:
        role: an OperandRole.
        dtype: the tensor's storage DType; None for a weak scalar.
        convert_to: the DType the kernel reads the operand as.

    Raises:
        TypeError: "role must be an OperandRole", "tensor operand capability
            needs a storage dtype", "weak scalar operand capability has no
            storage dtype", "convert_to must be a SimpleDType".

    Examples:
        >>> OperandCapability(OperandRole.WEAK_SCALAR, None, DType.Float32).dtype is None
        True
    """

    role: OperandRole
    dtype: DType | None
    convert_to: DType
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class OperationCapability:
    """An operation plan a carrier executes.

    Args:
        operation: the operation's plan name ("add", "reduce_sum").
        operands: a non-empty tuple (or sequence) of OperandCapability.
        compute: an Arithmetic.
        accumulation: an Accumulation, or None for no accumulation.
        accumulator_dtype: a DType with an accumulation, else None.
        output: the result's DType.

    Raises:
        ValueError: "needs at least one operand"; an unknown operation.
        TypeError: "operation must be a str", "compute must be an
            Arithmetic", "accumulation must be an Accumulation",
            "accumulator_dtype must be a SimpleDType", "output must be a
            SimpleDType", and the library's consistency rules.

    Examples:
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> plan = resolve_operation_plan("relu", DType.Int32)
        >>> OperationCapability.from_plan(plan).matches(plan)
        True
    """

    operation: str
    operands: tuple[OperandCapability, ...]
    compute: Arithmetic
    accumulation: Accumulation | None
    accumulator_dtype: DType | None
    output: DType
    def __post_init__(self) -> None: ...
    @classmethod
    def from_plan(cls, plan: OperationPlan) -> OperationCapability:
        """The capability mirroring a plan, field by field.

        Args:
            plan: an OperationPlan.

        Returns:
            OperationCapability: with the plan's fields.

        Examples:
            >>> from strideweave.carriers.operation_policy import resolve_operation_plan
            >>> cap = OperationCapability.from_plan(resolve_operation_plan("exp", DType.Int32))
            >>> cap.operands[0].convert_to
            <DType.Float32: 'Float32'>
        """
    def matches(self, plan: OperationPlan) -> bool:
        """Whether this capability agrees with a plan on every field.

        Args:
            plan: an OperationPlan.

        Returns:
            bool: True only on exact agreement (operation, operand count and
            order, roles, dtypes, conversions, compute, accumulation and its
            presence, accumulator dtype, output).

        Examples:
            >>> from strideweave.carriers.operation_policy import resolve_operation_plan
            >>> cap = OperationCapability.from_plan(resolve_operation_plan("exp", DType.Int32))
            >>> cap.matches(resolve_operation_plan("exp", DType.Float32))
            False
        """

_CLASS_SETS: weakref.WeakKeyDictionary[type, tuple[OperationCapability, ...]]

def _check_plan(plan: object) -> None: ...
def _check_carrier_class(cls: object) -> type: ...
def _caps(raws: Iterable[tuple[Any, ...]]) -> tuple[OperationCapability, ...]: ...
def _class_set(cls: type) -> tuple[OperationCapability, ...]: ...
def _filter(
    caps: tuple[OperationCapability, ...], operation: object
) -> tuple[OperationCapability, ...]: ...
def register_operation_capabilities(cls: type, caps: Iterable[OperationCapability]) -> None:
    """Declares the complete, one-time capability set of a custom carrier class.

    The declaration is atomic: on any error nothing is published and the
    class stays open. An empty set is a complete declaration. Lookups use the
    exact class only: subclasses, bases and siblings are separate.

    Args:
        cls: a definition-free Carrier subclass (not a shipped backend, not a
            DependentCarrier).
        caps: its OperationCapability entries.

    Raises:
        TypeError: "must be a carrier class", "not a Carrier implementation",
            "cannot be declared for the Carrier base class", "is a
            DependentCarrier implementation", "is a shipped backend", "must
            be OperationCapability entries", "has already declared", "first
            observed without a declaration" or "already observed".
        ValueError: "already declares a capability" for a duplicate.

    Examples:
        >>> import strideweave as sw
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> Mine = type("Mine", (sw.Carrier,), {})
        >>> plan = resolve_operation_plan("relu", sw.DType.Float32)
        >>> register_operation_capabilities(Mine, [OperationCapability.from_plan(plan)])
        >>> [c.operation for c in capabilities_for_carrier_class(Mine)]
        ['relu']
    """

def capabilities_for_carrier_class(
    cls: type, operation: str | None = None
) -> tuple[OperationCapability, ...]:
    """The declared capabilities of a carrier class (observing it).

    Args:
        cls: a Carrier class; its exact set is read, never a base's.
        operation: only this operation's entries (a plan name); None for all.

    Returns:
        tuple[OperationCapability, ...]: sorted by field values, so add <
        reduce_sum < relu.

    Raises:
        TypeError: cls is not a Carrier class.

    Examples:
        >>> from strideweave import CPU, Evictable, FileBacked
        >>> len(capabilities_for_carrier_class(CPU, "relu"))
        2
        >>> capabilities_for_carrier_class(FileBacked), capabilities_for_carrier_class(Evictable)
        ((), ())
    """

def matching_capability(cls: type, plan: OperationPlan) -> OperationCapability | None:
    """The capability of a carrier class that matches a plan exactly.

    Args:
        cls: a Carrier class.
        plan: an OperationPlan.

    Returns:
        OperationCapability | None: the match, or None.

    Examples:
        >>> from strideweave import CPU, DType
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> matching_capability(CPU, resolve_operation_plan("add", DType.Any, DType.Any)) is None
        True
    """

def supports_operation_plan(cls: type, plan: OperationPlan) -> bool:
    """Whether a carrier class executes exactly this plan.

    Args:
        cls: a Carrier class.
        plan: an OperationPlan.

    Returns:
        bool: True when one capability matches.

    Raises:
        TypeError: "must be an OperationPlan" for another object.

    Examples:
        >>> from strideweave import Generic, DType
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> supports_operation_plan(Generic, resolve_operation_plan("matmul", DType.Any, DType.Any))
        True
    """

def unsupported_plan_reason(cls: type, plan: OperationPlan) -> str | None:
    """Why a carrier class does not execute a plan.

    Args:
        cls: a Carrier class.
        plan: an OperationPlan.

    Returns:
        str | None: None when supported; otherwise "<Cls> declares no
        operation-plan capability for '<op>'" or "<Cls> declares no
        operation-plan capability for this '<op>' plan: <plan sentence>".

    Examples:
        >>> from strideweave import FileBacked, DType
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> unsupported_plan_reason(FileBacked, resolve_operation_plan("relu", DType.Int32))
        "FileBacked declares no operation-plan capability for 'relu'"
    """

def require_capability(cls: type, plan: OperationPlan) -> OperationCapability:
    """The capability of a carrier class matching a plan, or an error.

    Args:
        cls: a Carrier class.
        plan: an OperationPlan.

    Returns:
        OperationCapability: the match.

    Raises:
        UnsupportedOperationPlan: with the reason of unsupported_plan_reason.

    Examples:
        >>> from strideweave import CPU, DType
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> require_capability(CPU, resolve_operation_plan("relu", DType.Int32)).output
        <DType.Int32: 'Int32'>
    """

class _InstanceRegistry:
    """Per-instance values keyed by identity, dropped when the instance goes.

    Instances that compare equal still keep separate entries.
    """
    def __init__(self) -> None: ...
    def get(self, obj: object) -> Any: ...
    def set(self, obj: object, value: Any) -> None: ...
    def __contains__(self, obj: object) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...

_FROZEN: _InstanceRegistry

class DependentCarrier(Carrier):
    """A carrier built from others whose capabilities depend on the instance.

    A subclass implements :meth:`_generate_operation_capabilities` and calls
    :meth:`_finalize_dependent_capabilities` once (typically at the end of
    ``__init__``); the base constructor never generates. Until then every
    capability query raises RuntimeError "has not finalized".

    Examples:
        >>> from strideweave import DType
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> exp = resolve_operation_plan("exp", DType.Float32)
        >>> class Tiered(DependentCarrier):
        ...     def _generate_operation_capabilities(self):
        ...         yield OperationCapability.from_plan(exp)
        >>> t = Tiered()
        >>> t._finalize_dependent_capabilities()
        >>> [c.operation for c in t.operation_capabilities()]
        ['exp']
    """
    def _generate_operation_capabilities(self) -> Iterable[OperationCapability]:
        """The capabilities of this instance, consumed once by finalization.

        Returns:
            Iterable[OperationCapability]: the entries.

        Raises:
            NotImplementedError: the base has none to give.
        """
    def _finalize_dependent_capabilities(self) -> None:
        """Freezes this instance's capability snapshot, once.

        Raises:
            RuntimeError: "already finalized" the second time.
            TypeError: "must be OperationCapability entries".
            ValueError: "generated two capabilities" for a duplicate.
        """
    def _operation_capability_snapshot(
        self, name: str | None = None
    ) -> tuple[OperationCapability, ...]:
        """The finalized snapshot (optionally one operation's entries).

        Args:
            name: an operation's plan name, or None for all.

        Returns:
            tuple[OperationCapability, ...]: sorted entries.
        """

def _instance_entry(
    carrier: DependentCarrier,
) -> tuple[Any, tuple[OperationCapability, ...]]: ...
def _instance_capabilities(carrier: object) -> tuple[OperationCapability, ...]:
    """The finalized snapshot of a DependentCarrier instance."""

def _source(carrier: Carrier) -> tuple[Any, tuple[OperationCapability, ...]]:
    """Where an instance's capabilities come from, and their objects."""

def carrier_operation_capabilities(carrier: Carrier) -> tuple[OperationCapability, ...]:
    """The capabilities of a carrier instance.

    Independent carriers read their exact class's set; Evictable and
    DependentCarrier instances their snapshot. The current dtype is never a
    filter.

    Args:
        carrier: a Carrier instance.

    Returns:
        tuple[OperationCapability, ...]: sorted, immutable.

    Raises:
        TypeError: "not a class" for a class, "must be a Carrier instance"
            for anything else.

    Examples:
        >>> from strideweave import CPU
        >>> len(carrier_operation_capabilities(CPU(1))) == len(capabilities_for_carrier_class(CPU))
        True
    """

def _carrier_capabilities(carrier: Carrier, operation_name: object) -> tuple[Any, ...]: ...
def _carrier_match(carrier: Carrier, plan: object) -> OperationCapability | None: ...
def _carrier_supports(carrier: Carrier, plan: object) -> bool: ...
def _carrier_reason(carrier: Carrier, plan: object) -> str | None: ...
def _carrier_require(carrier: Carrier, plan: object) -> OperationCapability: ...
