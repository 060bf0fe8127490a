"""Carrier extension: a new kind of storage as one immutable definition.

A user adds storage to StrideWeave without touching the framework by
registering a :class:`CarrierDefinition` for an exact :class:`Carrier`
subclass. The definition's :class:`StorageProvider` supplies six callbacks
(``supports_dtype``, ``physical_size``, ``allocate``, ``release``, ``read``,
``write``); the library builds the carrier from them and checks index range,
liveness, mutability, the size after allocation and versions itself. The
values here are frozen and validate their fields; the registration rules are
the library's (``strideweave/extension.h``).

What works today: storage-only carriers (construction ``Cls(slots, *, dtype,
mutable=True)``, element access, ``new_like``/``allocate_like``, a refusable
``release``, facets, capability queries), compute carriers whose
``KernelProvider`` and ``KernelPack`` patterns run operations through the
library's pipeline (candidates in order, result checks, rollback, one
version step per declared mutation, autograd through the central VJP),
moves through transfer routes (with autograd through the route back), and
elementwise moves between two definition-backed classes whose providers
both allow it, and definition-backed ``DependentCarrier`` classes whose
``CompositeProvider`` gives each instance its capabilities (at
``_finalize_dependent_capabilities``) and runs its operations.

Examples:
    >>> import strideweave as sw
    >>> from strideweave.carriers.extension import StorageProvider
    >>> class ListStore(sw.Carrier):
    ...     pass
    >>> store = StorageProvider(
    ...     supports_dtype=lambda c, d: d == sw.DType.Float32,
    ...     physical_size=lambda c: len(c.values),
    ...     allocate=lambda c, n: setattr(c, "values", [0.0] * n),
    ...     release=lambda c: setattr(c, "values", []),
    ...     read=lambda c, i: c.values[i],
    ...     write=lambda c, i, v: c.values.__setitem__(i, v),
    ... )
    >>> sw.register_carrier_definition(ListStore, sw.CarrierDefinition(store))
    >>> c = ListStore(3, dtype=sw.DType.Float32)
    >>> c[1] = 2.5
    >>> c.size(), c[1], c.version
    (3, 2.5, 1)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from strideweave import _native
from strideweave._native import Carrier
from strideweave.carriers.operation_capability import DependentCarrier, OperationCapability

__all__ = [
    "CarrierDefinition",
    "CarrierFacet",
    "CompositeProvider",
    "KernelExecutionInterface",
    "KernelPack",
    "KernelPattern",
    "KernelProvider",
    "PreparedComposite",
    "PreparedKernel",
    "PreparedTransfer",
    "ProviderCompletion",
    "ProviderResult",
    "StorageProvider",
    "TransferProvider",
    "TransferRequest",
    "TransferRoute",
    "Unsupported",
    "register_carrier_definition",
    "register_kernel_pack",
]


def _callable(value: Any, name: str) -> None:
    if not callable(value):
        raise TypeError(f"{name} must be callable")


def _text(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string")
    if not value:
        raise ValueError(f"{name} must not be empty")


def _carrier_class(value: Any, name: str) -> None:
    if not (isinstance(value, type) and issubclass(value, Carrier)):
        raise TypeError(f"{name} must be a Carrier subclass")


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A provider's refusal: the next candidate is tried.

    Args:
        reason: why (a non-empty string).

    Returns:
        Unsupported: the refusal.

    Examples:
        >>> Unsupported("alignment").reason
        'alignment'
    """

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str):
            raise TypeError("reason must be a string")
        if not self.reason:
            raise ValueError("reason must not be empty")


class CarrierFacet:
    """An open marker base for immutable carrier-specific providers.

    Subclass it (typically as a frozen, slotted dataclass) and pass instances
    in ``CarrierDefinition(facets=...)``; ``carrier.facet(T)`` finds one by
    its exact type.

    Examples:
        >>> class Alignment(CarrierFacet):
        ...     bytes = 64
        >>> isinstance(Alignment(), CarrierFacet)
        True
    """

    __slots__ = ()


class KernelExecutionInterface:
    """The identity of a kernel execution interface: its type and version.

    Args:
        version: a non-empty string.

    Returns:
        KernelExecutionInterface: an immutable value.

    Examples:
        >>> iface = KernelExecutionInterface("1")
        >>> iface.compatibility_identity == (KernelExecutionInterface, "1")
        True
    """

    __slots__ = ("version",)

    def __init__(self, version: str) -> None:
        _text(version, "version")
        object.__setattr__(self, "version", version)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def compatibility_identity(self) -> tuple[type, str]:
        """``(type(self), self.version)``: what packs must match."""
        return (type(self), self.version)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.version!r})"


@dataclass(frozen=True)
class StorageProvider:
    """The storage callbacks of a definition-backed carrier class.

    Each callback receives the carrier object first:
    ``supports_dtype(carrier, dtype) -> bool``, ``physical_size(carrier) ->
    int``, ``allocate(carrier, slots) -> None``, ``release(carrier) -> None``,
    ``read(carrier, index) -> value``, ``write(carrier, index, value) ->
    None``. The framework checks range, liveness and mutability before
    ``read``, ``write`` and ``allocate`` run.

    Args:
        supports_dtype: whether the class stores a dtype.
        physical_size: the number of slots of a carrier.
        allocate: gives a carrier its slots.
        release: frees a carrier's slots.
        read: the value of one slot.
        write: stores the value of one slot.
        elementwise_fallback: whether moves between this class and another
            definition-backed class that also allows it may copy element by
            element when no transfer route serves them.

    Returns:
        StorageProvider: a frozen value.

    Raises:
        TypeError: '<field> must be callable', 'elementwise_fallback must be
            a bool'.

    Examples:
        >>> p = StorageProvider(*[lambda *a: None] * 6)
        >>> p.elementwise_fallback
        False
    """

    supports_dtype: Callable[..., Any]
    physical_size: Callable[..., Any]
    allocate: Callable[..., Any]
    release: Callable[..., Any]
    read: Callable[..., Any]
    write: Callable[..., Any]
    elementwise_fallback: bool = False

    def __post_init__(self) -> None:
        for name in ("supports_dtype", "physical_size", "allocate", "release", "read", "write"):
            _callable(getattr(self, name), name)
        if not isinstance(self.elementwise_fallback, bool):
            raise TypeError("elementwise_fallback must be a bool")


@dataclass(frozen=True)
class KernelPattern:
    """One kernel of a pack: the plans it executes and how to prepare it.

    Args:
        operation: a registered OperationDefinition.
        plans: a non-empty iterable of OperationCapability (consumed once).
        kernel_id: a non-empty string.
        prepare: ``prepare(invocation, interface) -> PreparedKernel |
            Unsupported``.
        preference: a signed integer; higher is tried first.

    Returns:
        KernelPattern: a frozen value.

    Raises:
        TypeError: a wrong type ('preference must be a signed integer' for a
            bool).
        ValueError: 'plans must not be empty', 'duplicate plan', a plan whose
            operation is not operation.name.

    Examples:
        >>> from strideweave.operation_definition import _operation_definition
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> import strideweave as sw
        >>> plan = resolve_operation_plan("relu", sw.DType.Float32)
        >>> p = KernelPattern(_operation_definition("relu"),
        ...                   [OperationCapability.from_plan(plan)], "relu-f32",
        ...                   lambda inv, iface: Unsupported("demo"))
        >>> p.kernel_id, p.preference, len(p.plans)
        ('relu-f32', 0, 1)
    """

    operation: Any
    plans: tuple[OperationCapability, ...]
    kernel_id: str
    prepare: Callable[..., Any]
    preference: int = 0

    def __post_init__(self) -> None:
        from strideweave.operation_definition import OperationDefinition

        if not isinstance(self.operation, OperationDefinition):
            raise TypeError("operation must be an OperationDefinition")
        if isinstance(self.plans, (str, bytes)) or not isinstance(self.plans, Iterable):
            raise TypeError("plans must be an iterable of OperationCapability")
        plans = tuple(self.plans)
        object.__setattr__(self, "plans", plans)
        if not plans:
            raise ValueError("plans must not be empty")
        for plan in plans:
            if not isinstance(plan, OperationCapability):
                raise TypeError("plans must contain OperationCapability values")
            if plan.operation != self.operation.name:
                raise ValueError(
                    f"plan for {plan.operation!r} must have operation.name {self.operation.name!r}"
                )
        if len(set(plans)) != len(plans):
            raise ValueError("plans contain a duplicate plan")
        _text(self.kernel_id, "kernel_id")
        _callable(self.prepare, "prepare")
        if isinstance(self.preference, bool) or not isinstance(self.preference, int):
            raise TypeError("preference must be a signed integer")


def _patterns(patterns: Any) -> tuple[KernelPattern, ...]:
    if isinstance(patterns, (str, bytes)) or not isinstance(patterns, Iterable):
        raise TypeError("patterns must be an iterable of KernelPattern")
    items = tuple(patterns)
    for p in items:
        if not isinstance(p, KernelPattern):
            raise TypeError("patterns must contain KernelPattern values")
    ids = [p.kernel_id for p in items]
    if len(set(ids)) != len(ids):
        raise ValueError("patterns contain a duplicate kernel_id")
    return items


@dataclass(frozen=True)
class KernelProvider:
    """The kernels a definition-backed class ships with.

    Args:
        interface: its KernelExecutionInterface.
        patterns: KernelPattern values (consumed once; unique kernel_id).

    Returns:
        KernelProvider: a frozen value.

    Examples:
        >>> KernelProvider(KernelExecutionInterface("1")).patterns
        ()
    """

    interface: KernelExecutionInterface
    patterns: tuple[KernelPattern, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.interface, KernelExecutionInterface):
            raise TypeError("interface must be a KernelExecutionInterface")
        object.__setattr__(self, "patterns", _patterns(self.patterns))


@dataclass(frozen=True)
class TransferProvider:
    """How a transfer route prepares one move.

    Args:
        prepare: ``prepare(request) -> PreparedTransfer | Unsupported``.

    Returns:
        TransferProvider: a frozen value.

    Examples:
        >>> TransferProvider(lambda request: Unsupported("demo")).prepare(None)
        Unsupported(reason='demo')
    """

    prepare: Callable[..., Any]

    def __post_init__(self) -> None:
        _callable(self.prepare, "prepare")


@dataclass(frozen=True)
class TransferRoute:
    """A move from an exact carrier class to an exact carrier class.

    Args:
        source_class: the defined class (a route's source is always the class
            whose definition declares it).
        destination_class: a Carrier subclass.
        route_id: a non-empty string.
        provider: its TransferProvider.

    Returns:
        TransferRoute: a frozen value.

    Examples:
        >>> import strideweave as sw
        >>> r = TransferRoute(sw.Carrier, sw.CPU, "to-cpu",
        ...                   TransferProvider(lambda request: None))
        >>> r.route_id
        'to-cpu'
    """

    source_class: type
    destination_class: type
    route_id: str
    provider: TransferProvider

    def __post_init__(self) -> None:
        _carrier_class(self.source_class, "source_class")
        _carrier_class(self.destination_class, "destination_class")
        _text(self.route_id, "route_id")
        if not isinstance(self.provider, TransferProvider):
            raise TypeError("provider must be a TransferProvider")


@dataclass(frozen=True)
class CompositeProvider:
    """What a definition-backed DependentCarrier computes with.

    Args:
        capabilities: ``capabilities(carrier) -> Iterable[OperationCapability]``.
        result_carriers: ``result_carriers(carrier, invocation) ->
            tuple[type[Carrier], ...]``.
        prepare: ``prepare(carrier, invocation) -> PreparedComposite |
            Unsupported``.

    Returns:
        CompositeProvider: a frozen value.

    Examples:
        >>> CompositeProvider(*[lambda *a: ()] * 3).capabilities(None)
        ()
    """

    capabilities: Callable[..., Any]
    result_carriers: Callable[..., Any]
    prepare: Callable[..., Any]

    def __post_init__(self) -> None:
        for name in ("capabilities", "result_carriers", "prepare"):
            _callable(getattr(self, name), name)


@dataclass(frozen=True)
class CarrierDefinition:
    """Everything the framework knows about a definition-backed class.

    Args:
        storage: its StorageProvider.
        kernels: a KernelProvider, or None for a storage-only class.
        transfers: TransferRoute values (consumed once; one per exact pair).
        composite: a CompositeProvider (DependentCarrier classes only).
        facets: CarrierFacet instances (consumed once; one per exact type).

    Returns:
        CarrierDefinition: a frozen value.

    Raises:
        TypeError: a field of the wrong type.
        ValueError: 'duplicate exact transfer routes', 'duplicate exact facet
            types'.

    Examples:
        >>> d = CarrierDefinition(StorageProvider(*[lambda *a: None] * 6))
        >>> d.kernels is None, d.transfers, d.facets
        (True, (), ())
    """

    storage: StorageProvider
    kernels: KernelProvider | None = None
    transfers: tuple[TransferRoute, ...] = ()
    composite: CompositeProvider | None = None
    facets: tuple[CarrierFacet, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.storage, StorageProvider):
            raise TypeError("storage must be a StorageProvider")
        if self.kernels is not None and not isinstance(self.kernels, KernelProvider):
            raise TypeError("kernels must be a KernelProvider or None")
        if self.composite is not None and not isinstance(self.composite, CompositeProvider):
            raise TypeError("composite must be a CompositeProvider or None")
        transfers = _consume(self.transfers, "transfers")
        for t in transfers:
            if not isinstance(t, TransferRoute):
                raise TypeError("transfers must contain TransferRoute values")
        pairs = [(t.source_class, t.destination_class) for t in transfers]
        if len(set(pairs)) != len(pairs):
            raise ValueError("duplicate exact transfer routes")
        facets = _consume(self.facets, "facets")
        for f in facets:
            if not isinstance(f, CarrierFacet):
                raise TypeError("facets must contain CarrierFacet values")
        kinds = [type(f) for f in facets]
        if len(set(kinds)) != len(kinds):
            raise ValueError("duplicate exact facet types")
        object.__setattr__(self, "transfers", transfers)
        object.__setattr__(self, "facets", facets)


def _consume(values: Any, name: str) -> tuple[Any, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be an iterable")
    return tuple(values)


@runtime_checkable
class ProviderCompletion(Protocol):
    """The completion of provider work: ``done`` (a bool) and a blocking
    ``wait()``. Completions are expected to be thread-safe and idempotent.

    Examples:
        >>> class Done:
        ...     done = True
        ...     def wait(self):
        ...         return None
        >>> isinstance(Done(), ProviderCompletion)
        True
    """

    @property
    def done(self) -> bool: ...

    def wait(self) -> Any: ...


def _require_provider_completion(value: Any) -> Any:
    """``value`` if it is a provider completion, else TypeError naming why."""
    if hasattr(value, "__await__"):
        raise TypeError("a provider completion must not expose a coroutine")
    if not (hasattr(value, "done") and callable(getattr(value, "wait", None))):
        raise TypeError("a provider completion needs a done property and a wait() method")
    if not isinstance(value.done, bool):
        raise TypeError("done must be a bool")
    return value


@dataclass(frozen=True)
class ProviderResult:
    """The outputs of a kernel or composite submission.

    Args:
        outputs: a non-empty iterable of Tensor values (consumed once).

    Returns:
        ProviderResult: a frozen value.

    Examples:
        >>> import strideweave as sw
        >>> t = sw.Tensor(sw.CPU(1), 0, sw.Layout.leaf(1, 1))
        >>> len(ProviderResult([t]).outputs)
        1
    """

    outputs: tuple[Any, ...]

    def __post_init__(self) -> None:
        from strideweave.tensor import Tensor

        outputs = _consume(self.outputs, "outputs")
        if not outputs:
            raise ValueError("outputs must not be empty")
        for t in outputs:
            if not isinstance(t, Tensor):
                raise TypeError("outputs must be Tensor values")
        object.__setattr__(self, "outputs", outputs)


@dataclass(frozen=True)
class _Prepared:
    submit: Callable[..., Any]
    _submitted: list[bool] = field(default_factory=lambda: [False], init=False, repr=False)

    def __post_init__(self) -> None:
        _callable(self.submit, "submit")

    def _take(self) -> Callable[..., Any]:
        """The submit callback, once: prepared work is submitted at most once."""
        if self._submitted[0]:
            raise RuntimeError("prepared work was already submitted")
        self._submitted[0] = True
        return self.submit


@dataclass(frozen=True)
class PreparedTransfer(_Prepared):
    """Prepared transfer work: ``submit()`` returns None or a completion.

    ``move_async`` calls ``submit()`` on the calling thread and returns; a
    completion's ``wait()`` is called once, on the framework's background
    move executor, and this record stays alive until then.

    Examples:
        >>> PreparedTransfer(lambda: None)._take()() is None
        True
    """


@dataclass(frozen=True)
class PreparedComposite(_Prepared):
    """Prepared composite work: ``submit()`` returns a ProviderResult or a
    completion yielding one.

    Examples:
        >>> callable(PreparedComposite(lambda: None).submit)
        True
    """


@dataclass(frozen=True)
class PreparedKernel:
    """Prepared kernel work for one interface.

    Args:
        interface: the provider's KernelExecutionInterface (the same object).
        submit: returns a ProviderResult or a completion yielding one.

    Returns:
        PreparedKernel: a frozen value.

    Examples:
        >>> iface = KernelExecutionInterface("1")
        >>> PreparedKernel(iface, lambda: None).interface is iface
        True
    """

    interface: KernelExecutionInterface
    submit: Callable[..., Any]
    _submitted: list[bool] = field(default_factory=lambda: [False], init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.interface, KernelExecutionInterface):
            raise TypeError("interface must be a KernelExecutionInterface")
        _callable(self.submit, "submit")

    def _take(self) -> Callable[..., Any]:
        """The submit callback, once: prepared work is submitted at most once."""
        if self._submitted[0]:
            raise RuntimeError("prepared work was already submitted")
        self._submitted[0] = True
        return self.submit


@dataclass(frozen=True)
class TransferRequest:
    """One move, as a transfer provider sees it (made by the framework).

    Providers copy ``physical_span`` slots, from ``tensor.offset`` in the
    source carrier to 0 in the destination.

    Examples:
        >>> import strideweave as sw
        >>> t = sw.Tensor(sw.CPU(5), 0, sw.Layout.leaf(3, 2))
        >>> r = TransferRequest(t, sw.CPU(5), sw.CPU, sw.CPU, sw.DType.Float32, t.layout)
        >>> r.physical_span
        5
    """

    tensor: Any
    destination: Carrier
    source_class: type
    destination_class: type
    dtype: Any
    layout: Any

    @property
    def physical_span(self) -> int:
        """``layout.cosize``: the slots a provider copies."""
        return int(self.layout.cosize)


@dataclass(frozen=True)
class KernelPack:
    """Kernels added to a definition-backed class after its definition.

    Args:
        namespace: a non-empty string.
        version: a non-empty string.
        carrier_class: the target class (eligibility is checked at
            registration).
        execution_interface: a KernelExecutionInterface.
        patterns: KernelPattern values (consumed once; non-empty; unique
            kernel_id).

    Returns:
        KernelPack: a frozen value.

    Examples:
        >>> KernelPack("acme", "1", object, KernelExecutionInterface("1"), [])
        Traceback (most recent call last):
        ...
        ValueError: patterns must not be empty
    """

    namespace: str
    version: str
    carrier_class: type
    execution_interface: KernelExecutionInterface
    patterns: tuple[KernelPattern, ...]

    def __post_init__(self) -> None:
        _text(self.namespace, "namespace")
        _text(self.version, "version")
        if not isinstance(self.carrier_class, type):
            raise TypeError("carrier_class must be a class")
        if not isinstance(self.execution_interface, KernelExecutionInterface):
            raise TypeError("execution_interface must be a KernelExecutionInterface")
        patterns = _patterns(self.patterns)
        if not patterns:
            raise ValueError("patterns must not be empty")
        object.__setattr__(self, "patterns", patterns)


def _shipped() -> tuple[type, ...]:
    from strideweave.carriers import CPU, BlockDeviceCarrier, Evictable, FileBacked, Generic

    return (Generic, CPU, FileBacked, BlockDeviceCarrier, Evictable)


def register_carrier_definition(cls: type, definition: CarrierDefinition) -> None:
    """Registers the one definition of an exact carrier class.

    Args:
        cls: a concrete Carrier subclass other than Carrier.
        definition: its CarrierDefinition.

    Returns:
        None.

    Raises:
        TypeError: a wrong argument, a definition-free shipped carrier,
            'already has a CarrierDefinition', 'already observed' (an
            instance was constructed or a capability queried first), a route
            without the exact source_class, or a broken independent /
            dependent rule ('must not supply a composite', 'requires
            composite', 'forbids kernels').
        ValueError: 'duplicate exact transfer routes'.

    Examples:
        >>> import strideweave as sw
        >>> register_carrier_definition(sw.CPU, CarrierDefinition(
        ...     StorageProvider(*[lambda *a: None] * 6)))
        Traceback (most recent call last):
        ...
        TypeError: CPU is a definition-free shipped carrier
    """
    if (
        not isinstance(cls, type)
        or not issubclass(cls, Carrier)
        or cls is Carrier
        or inspect.isabstract(cls)
    ):
        raise TypeError("cls must be a concrete Carrier subclass other than Carrier")
    if not isinstance(definition, CarrierDefinition):
        raise TypeError("definition must be a CarrierDefinition")
    for base in _shipped():
        if issubclass(cls, base) and cls is not base:
            raise TypeError(
                f"{cls.__name__} derives from {base.__name__}, a definition-free shipped carrier"
            )
    if cls in _LIBRARY_DEFINITIONS:
        raise TypeError(f"{cls.__name__} already has a CarrierDefinition")
    dependent = issubclass(cls, DependentCarrier)
    routes = tuple(
        (t.source_class, t.destination_class, t.route_id, t.provider) for t in definition.transfers
    )
    kernels = definition.kernels
    _native._define_carrier(
        cls,
        definition,
        definition.storage,
        routes,
        dependent,
        definition.kernels is not None,
        definition.composite is not None,
        definition.storage.elementwise_fallback,
        kernels.interface if kernels is not None else None,
        _native_patterns(kernels.patterns if kernels is not None else ()),
        definition.composite,
    )


def _native_patterns(patterns: tuple[KernelPattern, ...]) -> tuple[Any, ...]:
    """The patterns as the binding registers them: (operation name, raw
    plans, kernel_id, preference, pattern)."""
    from strideweave.carriers.operation_policy import _to_raw

    return tuple(
        (p.operation.name, [_to_raw(c) for c in p.plans], p.kernel_id, p.preference, p)
        for p in patterns
    )


def register_kernel_pack(pack: KernelPack) -> None:
    """Adds a pack of kernels to a definition-backed class.

    The target must be an exact class with its own definition and a
    KernelProvider whose interface matches the pack's, not yet observed
    (no instance constructed, no capability queried). The pack's patterns
    join the class's candidates: by descending preference, then the
    provider's own patterns, then packs by (namespace, version).

    Args:
        pack: the KernelPack.

    Returns:
        None.

    Raises:
        TypeError: a non-pack, 'exact CarrierDefinition' (no definition of
            its own, or a shipped carrier), 'DependentCarrier', 'does not
            match' (the interface), 'already observed'.
        ValueError: 'namespace and version' already registered, a
            'kernel_id' the target already uses.

    Examples:
        >>> import strideweave as sw
        >>> from strideweave.operation_definition import _operation_definition
        >>> from strideweave.carriers.operation_policy import resolve_operation_plan
        >>> plan = OperationCapability.from_plan(resolve_operation_plan("relu", sw.DType.Float32))
        >>> pattern = KernelPattern(_operation_definition("relu"), [plan], "k",
        ...                         lambda inv, iface: Unsupported("demo"))
        >>> register_kernel_pack(KernelPack("acme", "1", sw.CPU,
        ...                                 KernelExecutionInterface("1"), [pattern]))
        Traceback (most recent call last):
        ...
        TypeError: CPU has no exact CarrierDefinition of its own
    """
    if not isinstance(pack, KernelPack):
        raise TypeError("pack must be a KernelPack")
    target = pack.carrier_class
    if isinstance(target, type) and issubclass(target, DependentCarrier):
        raise TypeError(f"{target.__name__} is a DependentCarrier: it takes no kernel packs")
    definition = _native._carrier_definition(target)
    if definition is None or definition.kernels is None:
        raise TypeError(
            f"{getattr(target, '__name__', target)} has no exact CarrierDefinition "
            "of its own" + ("" if definition is None else " with a KernelProvider")
        )
    provider = definition.kernels.interface
    if pack.execution_interface.compatibility_identity != provider.compatibility_identity:
        raise TypeError("the pack's execution_interface does not match the KernelProvider's")
    _native._register_kernel_pack(
        target,
        pack.namespace,
        pack.version,
        pack.execution_interface,
        provider,
        _native_patterns(pack.patterns),
    )


def _builtin_invocation(name: str, operands: tuple[Any, ...]) -> Any:
    """The central definition's invocation of a built-in operation's call."""
    from strideweave.operation_definition import _operation_definition

    return _operation_definition(name).resolve_call(*operands)


def _kernel_prepare(pattern: KernelPattern, interface: KernelExecutionInterface, inv: Any) -> Any:
    """A pattern's prepare: its PreparedKernel, or an Unsupported's reason."""
    prepared = pattern.prepare(inv, interface)
    if isinstance(prepared, Unsupported):
        return prepared.reason
    if not isinstance(prepared, PreparedKernel):
        raise TypeError(
            f"prepare of kernel {pattern.kernel_id!r} must return a PreparedKernel or an "
            f"Unsupported, not {type(prepared).__name__}"
        )
    if prepared.interface.compatibility_identity != interface.compatibility_identity:
        raise TypeError(
            f"the PreparedKernel of {pattern.kernel_id!r} carries another interface than "
            "the KernelProvider's"
        )
    return prepared


def _kernel_submit(prepared: Any, inv: Any) -> tuple[Any, ...]:
    """Submits prepared kernel or composite work once and waits for its
    result once."""
    from strideweave.operation_definition import ProviderContractError
    from strideweave.tensor import Tensor

    result = prepared._take()()
    if isinstance(result, Tensor):
        raise TypeError("kernel submit must return a ProviderResult or a completion, not a Tensor")
    if not isinstance(result, ProviderResult):
        completion = _require_provider_completion(result)
        result = completion.wait()
        if not isinstance(result, ProviderResult):
            raise TypeError(
                f"a kernel completion must yield a ProviderResult, not {type(result).__name__}"
            )
    if len(result.outputs) != len(inv.results):
        raise ProviderContractError(
            f"kernel returned {len(result.outputs)} outputs: the count must be {len(inv.results)}"
        )
    return result.outputs


def _composite_capabilities(composite: CompositeProvider, carrier: Carrier) -> list[Any]:
    """A composite's capabilities of one instance, consumed once, as raw entries."""
    from strideweave.carriers.operation_policy import _to_raw

    entries = tuple(composite.capabilities(carrier))
    if not all(isinstance(c, OperationCapability) for c in entries):
        raise TypeError(
            f"{type(carrier).__name__} capabilities must be OperationCapability entries"
        )
    return [_to_raw(c) for c in entries]


def _composite_result_carriers(
    composite: CompositeProvider, carrier: Carrier, inv: Any
) -> tuple[type, ...]:
    """The class of each result's carrier, checked."""
    classes = composite.result_carriers(carrier, inv)
    if not isinstance(classes, tuple):
        raise TypeError(
            f"result_carriers must return a tuple of Carrier classes, not {type(classes).__name__}"
        )
    for cls in classes:
        if (
            not isinstance(cls, type)
            or not issubclass(cls, Carrier)
            or cls is Carrier
            or inspect.isabstract(cls)
        ):
            raise TypeError(f"result_carriers must name concrete Carrier classes, not {cls!r}")
    if len(classes) != len(inv.results):
        raise ValueError(
            f"result_carriers returned {len(classes)} classes for {len(inv.results)} results"
        )
    return classes


def _composite_prepare(composite: CompositeProvider, carrier: Carrier, inv: Any) -> Any:
    """A composite's prepare: its PreparedComposite, or an Unsupported's reason."""
    prepared = composite.prepare(carrier, inv)
    if isinstance(prepared, Unsupported):
        return prepared.reason
    if not isinstance(prepared, PreparedComposite):
        raise TypeError(
            "composite prepare must return a PreparedComposite or an Unsupported, not "
            f"{type(prepared).__name__}"
        )
    return prepared


def _definition_kernel_patterns(cls: type) -> tuple[str, ...]:
    """The kernel ids of exactly cls, in candidate order; observes nothing."""
    return tuple(_native._kernel_ids(cls))


def _route_prepare(provider: TransferProvider, tensor: Any, destination: Carrier) -> Any:
    """A route's prepare: its PreparedTransfer, or an Unsupported's reason."""
    carrier = tensor.carrier
    request = TransferRequest(
        tensor, destination, type(carrier), type(destination), carrier.dtype(), tensor.layout
    )
    prepared = provider.prepare(request)
    if isinstance(prepared, Unsupported):
        return prepared.reason
    if not isinstance(prepared, PreparedTransfer):
        raise TypeError("prepare must return a PreparedTransfer or an Unsupported")
    return prepared


def _route_submit(prepared: PreparedTransfer) -> Any:
    """Submits a prepared transfer once: None when the work is complete, else
    its provider completion (which the framework waits for on its move
    executor)."""
    result = prepared._take()()
    if result is None:
        return None
    return _require_provider_completion(result)


def _route_wait(completion: Any) -> None:
    """Waits for a transfer's completion, which must yield None."""
    if completion.wait() is not None:
        raise TypeError("a transfer completion must yield None")


def _route_run(prepared: PreparedTransfer) -> None:
    """Submits a prepared transfer and waits for it exactly once."""
    completion = _route_submit(prepared)
    if completion is not None:
        _route_wait(completion)


# Carriers whose definitions the library registers itself (TiledEvictable):
# the Python value that describes each, by exact class.
_LIBRARY_DEFINITIONS: dict[type, CarrierDefinition] = {}


def _register_library_definition(cls: type, definition: CarrierDefinition) -> None:
    """Names the Python face of a definition the library registered."""
    _LIBRARY_DEFINITIONS[cls] = definition


def _peek_carrier_definition(cls: type) -> CarrierDefinition | None:
    """The definition of exactly cls, or None; observes nothing."""
    library = _LIBRARY_DEFINITIONS.get(cls) if isinstance(cls, type) else None
    return library if library is not None else _native._carrier_definition(cls)


def _has_carrier_definition(cls: type) -> bool:
    """Whether exactly cls has a definition; observes nothing."""
    return _peek_carrier_definition(cls) is not None


def _carrier_facet(carrier: Carrier, kind: Any, required: bool) -> Any:
    """Carrier.facet / require_facet: the facet of exactly kind, or None."""
    if not (isinstance(kind, type) and issubclass(kind, CarrierFacet)):
        raise TypeError("facet type must be a CarrierFacet subclass")
    definition = _peek_carrier_definition(type(carrier))
    found = None
    if definition is not None:
        found = next((f for f in definition.facets if type(f) is kind), None)
    if found is None and required:
        raise NotImplementedError(f"{type(carrier).__name__} has no {kind.__name__} facet")
    return found
