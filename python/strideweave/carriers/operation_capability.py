"""Capabilities: which operation plans a carrier executes.

A capability has the fields of an :class:`OperationPlan` and matches a plan
only on exact agreement of every field; no nearby shape is substituted.

Independent carriers declare one complete set per exact class with
:func:`register_operation_capabilities`; any query about a class, or
constructing an instance, observes it, and an undeclared class observed once
stays permanently empty. CPU and Generic ship complete sets, FileBacked an
empty one; Evictable has no class-level set, only per-instance snapshots.
Dependent carriers (:class:`DependentCarrier`) finalize a snapshot per
instance. The rules (sorting, matching, sealing, the reason sentences) live
in the C library.

Examples:
    >>> from strideweave import CPU, DType
    >>> from strideweave.carriers.operation_policy import resolve_operation_plan
    >>> plan = resolve_operation_plan("add", DType.Int32, DType.Int32)
    >>> supports_operation_plan(CPU, plan)
    True
    >>> cap = matching_capability(CPU, plan)
    >>> cap.matches(plan), cap.compute.value
    (True, 'int32_exact_checked')
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from strideweave import _native
from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType
from strideweave.carriers.evictable import Evictable
from strideweave.carriers.operation_policy import (
    Accumulation,
    Arithmetic,
    OperandRole,
    OperationPlan,
    _check_operation,
    _from_raw,
    _to_raw,
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

    def __post_init__(self) -> None:
        if not isinstance(self.role, OperandRole):
            raise TypeError("role must be an OperandRole")
        if self.role is OperandRole.TENSOR and self.dtype is None:
            raise TypeError("tensor operand capability needs a storage dtype")
        if self.role is OperandRole.WEAK_SCALAR and self.dtype is not None:
            raise TypeError("weak scalar operand capability has no storage dtype")
        if self.dtype is not None and not isinstance(self.dtype, DType):
            raise TypeError("dtype must be a SimpleDType")
        if not isinstance(self.convert_to, DType):
            raise TypeError("convert_to must be a SimpleDType")


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

    def __post_init__(self) -> None:
        if not isinstance(self.operation, str):
            raise TypeError("operation must be a str")
        operands = self.operands
        if not isinstance(operands, tuple):
            if isinstance(operands, str | bytes) or not isinstance(operands, Iterable):
                raise TypeError("operands must be a sequence of OperandCapability")
            operands = tuple(operands)
            object.__setattr__(self, "operands", operands)
        if not operands:
            raise ValueError("operation capability needs at least one operand")
        if not all(isinstance(o, OperandCapability) for o in operands):
            raise TypeError("operands must be OperandCapability entries")
        if not isinstance(self.compute, Arithmetic):
            raise TypeError("compute must be an Arithmetic")
        if self.accumulation is not None and not isinstance(self.accumulation, Accumulation):
            raise TypeError("accumulation must be an Accumulation")
        if self.accumulator_dtype is not None and not isinstance(self.accumulator_dtype, DType):
            raise TypeError("accumulator_dtype must be a SimpleDType")
        if not isinstance(self.output, DType):
            raise TypeError("output must be a SimpleDType")
        _check_operation(self.operation)
        _native._check_capability(_to_raw(self))

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
        _check_plan(plan)
        return _from_raw(_to_raw(plan), cls, OperandCapability)

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
        _check_plan(plan)
        return _to_raw(self) == _to_raw(plan)


def _check_plan(plan: object) -> None:
    if not isinstance(plan, OperationPlan):
        raise TypeError(f"plan must be an OperationPlan, not {type(plan).__name__!r}")


# --------------------------------------------------------------- classes


def _check_carrier_class(cls: object) -> type:
    if not isinstance(cls, type):
        raise TypeError(f"must be a carrier class, not a {type(cls).__name__!r} instance")
    if not issubclass(cls, Carrier):
        raise TypeError(f"{cls.__name__} is not a Carrier implementation")
    return cls


# The converted tuple of each observed class: its set never changes once
# observed (the library seals it), and the entry goes with the class.
_CLASS_SETS: weakref.WeakKeyDictionary[type, tuple[OperationCapability, ...]] = (
    weakref.WeakKeyDictionary()
)


def _caps(raws: Iterable[tuple[Any, ...]]) -> tuple[OperationCapability, ...]:
    return tuple(_from_raw(raw, OperationCapability, OperandCapability) for raw in raws)


def _class_set(cls: type) -> tuple[OperationCapability, ...]:
    caps = _CLASS_SETS.get(cls)
    if caps is None:
        caps = _caps(_native._caps_list(cls, cls.__name__))
        _CLASS_SETS[cls] = caps
    return caps


def _filter(
    caps: tuple[OperationCapability, ...], operation: object
) -> tuple[OperationCapability, ...]:
    if operation is None:
        return caps
    if not isinstance(operation, str):
        raise TypeError("operation must be a str or None")
    return tuple(c for c in caps if c.operation == operation)


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
    _check_carrier_class(cls)
    if cls is Carrier:
        raise TypeError("capabilities cannot be declared for the Carrier base class")
    if issubclass(cls, DependentCarrier):
        raise TypeError(
            f"{cls.__name__} is a DependentCarrier implementation: its instances "
            "finalize their own capability snapshots"
        )
    if isinstance(caps, str | bytes) or not isinstance(caps, Iterable):
        raise TypeError(f"{cls.__name__} capabilities must be OperationCapability entries")
    entries = tuple(caps)
    if not all(isinstance(c, OperationCapability) for c in entries):
        raise TypeError(f"{cls.__name__} capabilities must be OperationCapability entries")
    _native._declare_capabilities(cls, cls.__name__, [_to_raw(c) for c in entries])


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
    _check_carrier_class(cls)
    return _filter(_class_set(cls), operation)


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
    _check_carrier_class(cls)
    _check_plan(plan)
    caps = _class_set(cls)
    i = _native._caps_match(cls, cls.__name__, _to_raw(plan))
    return caps[i] if i >= 0 else None


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
    return matching_capability(cls, plan) is not None


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
    _check_carrier_class(cls)
    _check_plan(plan)
    _class_set(cls)
    return _native._caps_reason(cls, cls.__name__, _to_raw(plan))


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
    cap = matching_capability(cls, plan)
    if cap is None:
        raise UnsupportedOperationPlan(unsupported_plan_reason(cls, plan))
    return cap


# ------------------------------------------------------ dependent carriers


class _InstanceRegistry:
    """Per-instance values keyed by identity, dropped when the instance goes.

    Instances that compare equal still keep separate entries.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], Any]] = {}

    def get(self, obj: object) -> Any:
        entry = self._entries.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        return entry[1]

    def set(self, obj: object, value: Any) -> None:
        key = id(obj)
        entries = self._entries

        def drop(ref: weakref.ref[Any], key: int = key) -> None:
            current = entries.get(key)
            if current is not None and current[0] is ref:
                del entries[key]

        entries[key] = (weakref.ref(obj, drop), value)

    def __contains__(self, obj: object) -> bool:
        return self.get(obj) is not None

    def __len__(self) -> int:
        return sum(1 for ref, _ in self._entries.values() if ref() is not None)

    def __iter__(self) -> Iterator[Any]:
        return iter([obj for ref, _ in list(self._entries.values()) if (obj := ref()) is not None])


# instance -> (native snapshot, sorted tuple of OperationCapability)
_FROZEN = _InstanceRegistry()


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
        raise NotImplementedError(
            f"{type(self).__name__} must implement _generate_operation_capabilities()"
        )

    def _finalize_dependent_capabilities(self) -> None:
        """Freezes this instance's capability snapshot, once.

        Raises:
            RuntimeError: "already finalized" the second time.
            TypeError: "must be OperationCapability entries".
            ValueError: "generated two capabilities" for a duplicate.
        """
        name = type(self).__name__
        if self in _FROZEN:
            raise RuntimeError(f"{name} capabilities are already finalized")
        definition = _native._carrier_definition(type(self))
        if definition is not None and definition.composite is not None:
            # The library asks the CompositeProvider, once, and keeps the
            # snapshot with the carrier.
            _native._defined_finalize(self)
            _FROZEN.set(self, (self, _caps(_native._caps_list(self, name))))
            return
        entries = tuple(self._generate_operation_capabilities())
        if not all(isinstance(c, OperationCapability) for c in entries):
            raise TypeError(f"{name} capabilities must be OperationCapability entries")
        snapshot = _native._snapshot_new()
        _native._snapshot_finalize(snapshot, name, [_to_raw(c) for c in entries])
        if self in _FROZEN:  # pragma: no cover (another thread won)
            raise RuntimeError(f"{name} capabilities are already finalized")
        _FROZEN.set(self, (snapshot, _caps(_native._caps_list(snapshot, name))))

    def _operation_capability_snapshot(
        self, name: str | None = None
    ) -> tuple[OperationCapability, ...]:
        """The finalized snapshot (optionally one operation's entries).

        Args:
            name: an operation's plan name, or None for all.

        Returns:
            tuple[OperationCapability, ...]: sorted entries.
        """
        return _filter(_instance_capabilities(self), name)


def _instance_entry(carrier: DependentCarrier) -> tuple[Any, tuple[OperationCapability, ...]]:
    entry = _FROZEN.get(carrier)
    if entry is None and _native._is_defined_dependent(carrier):
        # The library keeps the snapshot (a carrier it finalized itself,
        # such as a TiledEvictable); it says when there is none yet.
        name = type(carrier).__name__
        entry = (carrier, _caps(_native._caps_list(carrier, name)))
        _FROZEN.set(carrier, entry)
    if entry is None:
        raise RuntimeError(
            f"{type(carrier).__name__} has not finalized its operation-plan capabilities"
        )
    return entry


def _instance_capabilities(carrier: object) -> tuple[OperationCapability, ...]:
    """The finalized snapshot of a DependentCarrier instance."""
    if not isinstance(carrier, DependentCarrier):
        raise TypeError("must be a DependentCarrier instance")
    return _instance_entry(carrier)[1]


# ------------------------------------------------------- instance queries


def _source(carrier: Carrier) -> tuple[Any, tuple[OperationCapability, ...]]:
    """Where an instance's capabilities come from, and their objects."""
    if isinstance(carrier, DependentCarrier):
        return _instance_entry(carrier)
    if isinstance(carrier, Evictable):
        return carrier, _caps(_native._caps_list(carrier, "Evictable"))
    cls = type(carrier)
    return cls, _class_set(cls)


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
    if isinstance(carrier, type):
        raise TypeError("carrier_operation_capabilities takes a Carrier instance, not a class")
    if not isinstance(carrier, Carrier):
        raise TypeError("carrier must be a Carrier instance")
    return _source(carrier)[1]


def _carrier_capabilities(carrier: Carrier, operation_name: object) -> tuple[Any, ...]:
    return _filter(carrier_operation_capabilities(carrier), operation_name)


def _carrier_match(carrier: Carrier, plan: object) -> OperationCapability | None:
    _check_plan(plan)
    source, caps = _source(carrier)
    i = _native._caps_match(source, type(carrier).__name__, _to_raw(plan))
    return caps[i] if i >= 0 else None


def _carrier_supports(carrier: Carrier, plan: object) -> bool:
    return _carrier_match(carrier, plan) is not None


def _carrier_reason(carrier: Carrier, plan: object) -> str | None:
    _check_plan(plan)
    source, _ = _source(carrier)
    return _native._caps_reason(source, type(carrier).__name__, _to_raw(plan))


def _carrier_require(carrier: Carrier, plan: object) -> OperationCapability:
    cap = _carrier_match(carrier, plan)
    if cap is None:
        raise UnsupportedOperationPlan(_carrier_reason(carrier, plan))
    return cap


# Seals and converts the shipped sets now, whichever module is imported
# first.
from strideweave.carriers import _built_in_capabilities  # noqa: E402

_built_in_capabilities._initialize_built_in_capabilities()
