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
    reason: str
    def __post_init__(self) -> None: ...

class CarrierFacet: ...

class KernelExecutionInterface:
    version: str
    def __init__(self, version: str) -> None: ...
    @property
    def compatibility_identity(self) -> tuple[type, str]: ...

@dataclass(frozen=True)
class StorageProvider:
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
    operation: Any
    plans: tuple[OperationCapability, ...]
    kernel_id: str
    prepare: Callable[..., Any]
    preference: int = 0
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class KernelProvider:
    interface: KernelExecutionInterface
    patterns: tuple[KernelPattern, ...] = ()
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class TransferProvider:
    prepare: Callable[..., Any]
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class TransferRoute:
    source_class: type
    destination_class: type
    route_id: str
    provider: TransferProvider
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class CompositeProvider:
    capabilities: Callable[..., Any]
    result_carriers: Callable[..., Any]
    prepare: Callable[..., Any]
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class CarrierDefinition:
    storage: StorageProvider
    kernels: KernelProvider | None = None
    transfers: tuple[TransferRoute, ...] = ()
    composite: CompositeProvider | None = None
    facets: tuple[CarrierFacet, ...] = ()
    def __post_init__(self) -> None: ...

@runtime_checkable
class ProviderCompletion(Protocol):
    @property
    def done(self) -> bool: ...
    def wait(self) -> Any: ...

@dataclass(frozen=True)
class ProviderResult:
    outputs: tuple[Any, ...]
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class _Prepared:
    submit: Callable[..., Any]
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class PreparedTransfer(_Prepared): ...

@dataclass(frozen=True)
class PreparedComposite(_Prepared): ...

@dataclass(frozen=True)
class PreparedKernel:
    interface: KernelExecutionInterface
    submit: Callable[..., Any]
    def __post_init__(self) -> None: ...
    def _take(self) -> Callable[..., Any]: ...

@dataclass(frozen=True)
class TransferRequest:
    tensor: Any
    destination: Carrier
    source_class: type
    destination_class: type
    dtype: Any
    layout: Any
    @property
    def physical_span(self) -> int: ...

@dataclass(frozen=True)
class KernelPack:
    namespace: str
    version: str
    carrier_class: type
    execution_interface: KernelExecutionInterface
    patterns: tuple[KernelPattern, ...]
    def __post_init__(self) -> None: ...

def register_carrier_definition(cls: type, definition: CarrierDefinition) -> None: ...
def register_kernel_pack(pack: KernelPack) -> None: ...
def _register_library_definition(cls: type, definition: CarrierDefinition) -> None: ...
def _peek_carrier_definition(cls: type) -> CarrierDefinition | None: ...
def _has_carrier_definition(cls: type) -> bool: ...
def _require_provider_completion(value: Any) -> Any: ...
def _carrier_facet(carrier: Carrier, kind: Any, required: bool) -> Any: ...
def _consume(values: Any, name: str) -> tuple[Any, ...]: ...
def _patterns(patterns: Any) -> tuple[KernelPattern, ...]: ...
def _route_prepare(provider: TransferProvider, tensor: Any, destination: Carrier) -> Any: ...
def _route_run(prepared: PreparedTransfer) -> None: ...
def _route_submit(prepared: PreparedTransfer) -> Any: ...
def _route_wait(completion: Any) -> None: ...
def _native_patterns(patterns: tuple[KernelPattern, ...]) -> tuple[Any, ...]: ...
def _builtin_invocation(name: str, operands: tuple[Any, ...]) -> Any: ...
def _kernel_prepare(
    pattern: KernelPattern, interface: KernelExecutionInterface, inv: Any
) -> Any: ...
def _kernel_submit(prepared: PreparedKernel, inv: Any) -> tuple[Any, ...]: ...
def _definition_kernel_patterns(cls: type) -> tuple[str, ...]: ...
