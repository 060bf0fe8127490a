"""Operation definitions: schemas, resolution, reference execution and VJPs."""

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Any

from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_policy import OperationPlan as OperationPlan
from strideweave.core.layout import Layout, Shape
from strideweave.tensor import Tensor

__all__ = [
    "NON_DIFFERENTIABLE",
    "REQUIRED",
    "BoundOperationCall",
    "OperandKind",
    "OperandSpec",
    "OperationCall",
    "OperationDefinition",
    "OperationPlan",
    "OperationSchema",
    "OptionSpec",
    "ProviderContractError",
    "ResolvedInvocation",
    "ResultSpec",
    "VJPContext",
    "define_operation",
]

class ProviderContractError(RuntimeError): ...

class OperandKind(StrEnum):
    TENSOR = "tensor"
    WEAK_SCALAR = "weak_scalar"
    STRUCTURAL = "structural"

class _Marker:
    def __init__(self, name: str) -> None: ...
    def __reduce__(self) -> str: ...

REQUIRED: Any
NON_DIFFERENTIABLE: Any

@dataclasses.dataclass(frozen=True)
class OperandSpec:
    name: str
    kind: OperandKind
    differentiable: bool = False
    def __post_init__(self) -> None: ...

@dataclasses.dataclass(frozen=True)
class OptionSpec:
    name: str
    default: Any = ...
    def __post_init__(self) -> None: ...

@dataclasses.dataclass(frozen=True, init=False)
class OperationSchema:
    operands: tuple[OperandSpec, ...]
    options: tuple[OptionSpec, ...]
    def __init__(
        self, operands: Iterable[OperandSpec], options: Iterable[OptionSpec] = ()
    ) -> None: ...

@dataclasses.dataclass(frozen=True)
class ResultSpec:
    dtype: DType
    shape: Shape
    layout: Layout
    alias_of: int | None = None
    atol: float = dataclasses.field(default=0.0, kw_only=True)
    rtol: float = dataclasses.field(default=0.0, kw_only=True)
    def __post_init__(self) -> None: ...

@dataclasses.dataclass(frozen=True, eq=False)
class BoundOperationCall:
    definition: OperationDefinition
    operands: tuple[Any, ...]
    options: Mapping[str, Any]
    operand_kinds: tuple[OperandKind, ...]

OperationCall = BoundOperationCall

@dataclasses.dataclass(frozen=True, eq=False, init=False)
class ResolvedInvocation:
    call: BoundOperationCall
    plan: OperationPlan
    results: tuple[ResultSpec, ...]
    mutated_operands: tuple[int, ...]
    saved_operands: tuple[int, ...]
    kernel_id: str
    def __init__(
        self,
        call: BoundOperationCall,
        plan: OperationPlan,
        results: Iterable[ResultSpec],
        mutated_operands: Iterable[int] = (),
        saved_operands: Iterable[int] = (),
        kernel_id: str | None = None,
    ) -> None: ...
    @property
    def definition(self) -> OperationDefinition: ...
    @property
    def name(self) -> str: ...
    @property
    def operands(self) -> tuple[Any, ...]: ...
    @property
    def options(self) -> Mapping[str, Any]: ...

@dataclasses.dataclass(frozen=True, eq=False, init=False)
class VJPContext:
    invocation: ResolvedInvocation
    outputs: tuple[Tensor, ...]
    saved_operands: tuple[Tensor, ...]
    def __init__(
        self,
        invocation: ResolvedInvocation,
        outputs: Iterable[Tensor],
        saved_operands: Iterable[Tensor],
    ) -> None: ...

_BindHook = Callable[
    [OperationDefinition, tuple[Any, ...]], tuple[tuple[Any, ...], tuple[OperandKind, ...]]
]

@dataclasses.dataclass(frozen=True, eq=False)
class OperationDefinition:
    name: str
    schema: OperationSchema
    resolve: Callable[[BoundOperationCall], ResolvedInvocation]
    reference: Callable[[ResolvedInvocation], Any] | None
    vjp: Any
    _native_id: int | None = ...
    _bind_hook: _BindHook | None = ...
    def bind(self, *operands: Any, **options: Any) -> BoundOperationCall: ...
    def resolve_call(self, *operands: Any, **options: Any) -> ResolvedInvocation: ...
    def __call__(self, *operands: Any, **options: Any) -> Any: ...

def define_operation(
    name: str,
    schema: OperationSchema,
    resolve: Callable[[BoundOperationCall], ResolvedInvocation],
    reference: Callable[[ResolvedInvocation], Any] | None = None,
    vjp: Any = ...,
) -> OperationDefinition: ...
def _operation_definition(name: str) -> OperationDefinition: ...
def _differentiable_indices(invocation: ResolvedInvocation) -> tuple[int, ...]: ...
def _execute_reference(invocation: ResolvedInvocation) -> tuple[Tensor, ...]: ...
def _call_vjp(
    context: VJPContext, cotangents: Iterable[Tensor | None]
) -> tuple[Tensor | None, ...]: ...
def _install_builtin(
    name: str,
    operands: tuple[OperandSpec, ...],
    options: tuple[OptionSpec, ...],
    resolve: Callable[[BoundOperationCall], ResolvedInvocation],
    reference: Callable[[ResolvedInvocation], Any],
    vjp: Any,
    bind_hook: _BindHook | None = None,
) -> OperationDefinition: ...
