"""Operation plans: what a built-in operation does to its operands' dtypes."""

from dataclasses import dataclass
from enum import Enum
from typing import Any

from strideweave.carriers.dtype import DType

__all__ = [
    "Accumulation",
    "Arithmetic",
    "OperandPlan",
    "OperandRole",
    "OperationPlan",
    "OperationSpec",
    "registered_operations",
    "resolve_operation_plan",
]

class Arithmetic(Enum):
    BINARY32 = "binary32"
    BINARY64 = "binary64"
    INT32_EXACT = "int32_exact"
    INT32_EXACT_CHECKED = "int32_exact_checked"
    HOST = "host"

class Accumulation(Enum):
    FLOATING = "floating"
    EXACT_INTEGER = "exact_integer"
    HOST = "host"

class OperandRole(Enum):
    TENSOR = "tensor"
    WEAK_SCALAR = "weak_scalar"

_NAMES: dict[str, tuple[str, ...]]
_TABLES: dict[type[Enum], tuple[str, ...]]
_INDEX: dict[Enum, int]
_BY_INDEX: dict[type[Enum], tuple[Any, ...]]
_OPERATIONS: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...]
_OPERATION_NAMES: frozenset[str]
_NOT_GIVEN: Any

def _check_operation(operation: object) -> None: ...

@dataclass(frozen=True)
class OperandPlan:
    role: OperandRole
    dtype: DType | None
    convert_to: DType
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class OperationPlan:
    operation: str
    operands: tuple[OperandPlan, ...]
    compute: Arithmetic
    accumulation: Accumulation | None
    accumulator_dtype: DType | None
    output: DType
    def __post_init__(self) -> None: ...
    def describe(self) -> str: ...

@dataclass(frozen=True)
class OperationSpec:
    name: str
    dispatch_name: str
    title: str
    operands: tuple[tuple[str, OperandRole], ...]

_SPECS: tuple[OperationSpec, ...]

def registered_operations() -> tuple[OperationSpec, ...]: ...
def resolve_operation_plan(
    name: str, *operand_dtypes_or_scalars: object, accumulator_dtype: Any = ...
) -> OperationPlan: ...
def _to_raw(plan: Any) -> tuple[Any, ...]: ...
def _from_raw(raw: tuple[Any, ...], plan_type: Any = None, operand_type: Any = None) -> Any: ...
