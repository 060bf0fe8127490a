"""Carrier extension: a new kind of storage as one immutable definition."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from strideweave.carriers.base import Carrier
from strideweave.carriers.operation_capability import OperationCapability

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
    def __post_init__(self) -> None: ...

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

    version: str
    def __init__(self, version: str) -> None: ...
    @property
    def compatibility_identity(self) -> tuple[type, str]:
        """``(type(self), self.version)``: what packs must match."""

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
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class _Prepared:
    """_Prepared(submit: 'Callable[..., Any]')"""

    submit: Callable[..., Any]
    def __post_init__(self) -> None: ...

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
    def __post_init__(self) -> None: ...
    def _take(self) -> Callable[..., Any]:
        """The submit callback, once: prepared work is submitted at most once."""

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
    def __post_init__(self) -> None: ...

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

def _register_library_definition(cls: type, definition: CarrierDefinition) -> None:
    """Names the Python face of a definition the library registered."""

def _peek_carrier_definition(cls: type) -> CarrierDefinition | None:
    """The definition of exactly cls, or None; observes nothing."""

def _has_carrier_definition(cls: type) -> bool:
    """Whether exactly cls has a definition; observes nothing."""

def _require_provider_completion(value: Any) -> Any:
    """``value`` if it is a provider completion, else TypeError naming why."""

def _carrier_facet(carrier: Carrier, kind: Any, required: bool) -> Any:
    """Carrier.facet / require_facet: the facet of exactly kind, or None."""

def _consume(values: Any, name: str) -> tuple[Any, ...]: ...
def _patterns(patterns: Any) -> tuple[KernelPattern, ...]: ...
def _route_prepare(provider: TransferProvider, tensor: Any, destination: Carrier) -> Any:
    """A route's prepare: its PreparedTransfer, or an Unsupported's reason."""

def _route_run(prepared: PreparedTransfer) -> None:
    """Submits a prepared transfer and waits for it exactly once."""

def _route_submit(prepared: PreparedTransfer) -> Any:
    """Submits a prepared transfer once: None when the work is complete, else
    its provider completion (which the framework waits for on its move
    executor).
    """

def _route_wait(completion: Any) -> None:
    """Waits for a transfer's completion, which must yield None."""

def _native_patterns(patterns: tuple[KernelPattern, ...]) -> tuple[Any, ...]:
    """The patterns as the binding registers them: (operation name, raw
    plans, kernel_id, preference, pattern).
    """

def _builtin_invocation(name: str, operands: tuple[Any, ...]) -> Any:
    """The central definition's invocation of a built-in operation's call."""

def _kernel_prepare(pattern: KernelPattern, interface: KernelExecutionInterface, inv: Any) -> Any:
    """A pattern's prepare: its PreparedKernel, or an Unsupported's reason."""

def _kernel_submit(prepared: PreparedKernel, inv: Any) -> tuple[Any, ...]:
    """Submits prepared kernel or composite work once and waits for its
    result once.
    """

def _definition_kernel_patterns(cls: type) -> tuple[str, ...]:
    """The kernel ids of exactly cls, in candidate order; observes nothing."""
