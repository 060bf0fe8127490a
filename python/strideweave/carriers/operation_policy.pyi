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
    """The arithmetic a kernel computes in.

    ``BINARY32`` is IEEE single precision (CPU Float32), ``BINARY64`` host
    doubles (Generic Floating), ``INT32_EXACT`` int32 that cannot overflow
    (relu), ``INT32_EXACT_CHECKED`` int32 whose overflow raises
    OverflowError, and ``HOST`` the host's own arithmetic on its objects
    (Generic Any).

    Examples:
        >>> Arithmetic("int32_exact").name
        'INT32_EXACT'
    """

    BINARY32 = "binary32"
    BINARY64 = "binary64"
    INT32_EXACT = "int32_exact"
    INT32_EXACT_CHECKED = "int32_exact_checked"
    HOST = "host"

class Accumulation(Enum):
    """How a contraction (reduce_sum, matmul) accumulates.

    An elementwise operation has no accumulation: its plan says None.

    Examples:
        >>> Accumulation.EXACT_INTEGER.value
        'exact_integer'
    """

    FLOATING = "floating"
    EXACT_INTEGER = "exact_integer"
    HOST = "host"

class OperandRole(Enum):
    """The role of an operand: a tensor, or a weak scalar that takes the
    plan's dtype.

    Examples:
        >>> OperandRole.WEAK_SCALAR.value
        'weak_scalar'
    """

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
    """One operand of a plan.

    Args:
        role: an OperandRole.
        dtype: the tensor's storage DType; None for a weak scalar.
        convert_to: the DType the kernel reads the operand as.

    Examples:
        >>> OperandPlan(OperandRole.TENSOR, DType.Int32, DType.Float32).convert_to
        <DType.Float32: 'Float32'>
    """

    role: OperandRole
    dtype: DType | None
    convert_to: DType
    def __post_init__(self) -> None: ...

@dataclass(frozen=True)
class OperationPlan:
    """The central plan of one call shape of a built-in operation.

    Args:
        operation: the operation's plan name ("add", "reduce_sum").
        operands: a tuple of OperandPlan, in call order.
        compute: the Arithmetic of the kernel.
        accumulation: the Accumulation of a contraction, or None.
        accumulator_dtype: the accumulator's DType, or None.
        output: the result's DType.

    Examples:
        >>> p = resolve_operation_plan("reduce_sum", DType.Int32)
        >>> p.accumulation, p.accumulator_dtype
        (<Accumulation.EXACT_INTEGER: 'exact_integer'>, <DType.Int32: 'Int32'>)
    """

    operation: str
    operands: tuple[OperandPlan, ...]
    compute: Arithmetic
    accumulation: Accumulation | None
    accumulator_dtype: DType | None
    output: DType
    def __post_init__(self) -> None: ...
    def describe(self) -> str:
        """The plan's stable sentence, as capability reasons quote it.

        Returns:
            str: for example "add with operands (tensor Int32->Int32, tensor
            Int32->Int32), int32_exact_checked compute, no accumulation, Int32
            output".

        Examples:
            >>> print(resolve_operation_plan("relu", DType.Int32).describe())
            relu with operands (tensor Int32->Int32), int32_exact compute,
            no accumulation, Int32 output
        """

@dataclass(frozen=True)
class OperationSpec:
    """A registered operation that has plans.

    Args:
        name: its plan name ("reduce_sum").
        dispatch_name: the name carriers dispatch ("reduce").
        title: its name in messages ("reduce").
        operands: (operand name, OperandRole) pairs, in schema order.

    Examples:
        >>> [s.name for s in registered_operations()][:3]
        ['add', 'sub', 'elementwise_mul']
    """

    name: str
    dispatch_name: str
    title: str
    operands: tuple[tuple[str, OperandRole], ...]

_SPECS: tuple[OperationSpec, ...]

def registered_operations() -> tuple[OperationSpec, ...]:
    """The registered operations that have plans, in registry order.

    Layout operations (view, permute, rearrange) have no plans and are not
    listed. The list comes from the library's registry.

    Returns:
        tuple[OperationSpec, ...]: one spec per operation.

    Examples:
        >>> "reduce_sum" in [s.name for s in registered_operations()]
        True
    """

def resolve_operation_plan(
    name: str, *operand_dtypes_or_scalars: object, accumulator_dtype: Any = ...
) -> OperationPlan:
    """Resolves the central plan of a built-in operation.

    Args:
        name: the operation's plan name ("add", "mul", "reduce_sum").
        *operand_dtypes_or_scalars: one entry per operand, in call order: a
            DType for a tensor operand, a number for a weak scalar (mul also
            takes its scalar first: ``("mul", 3, DType.Int32)``).
        accumulator_dtype: the accumulator DType to require of a
            contraction; not given (or None) accepts the plan's own.

    Returns:
        OperationPlan: the plan.

    Raises:
        TypeError: wrong arity, a non-DType non-number operand, a scalar
            where a tensor belongs or the reverse, Bool tensors, dtypes of
            different carriers, an accumulator other than the plan's, or
            one given for an operation without accumulation.
        ValueError: an unknown operation or a layout operation.

    Examples:
        >>> resolve_operation_plan("mul", DType.Int32, 3).output
        <DType.Int32: 'Int32'>
        >>> resolve_operation_plan("mul", DType.Int32, 0.5).output
        <DType.Float32: 'Float32'>
    """

def _to_raw(plan: Any) -> tuple[Any, ...]:
    """An OperationPlan or OperationCapability as the binding's tuple."""

def _from_raw(raw: tuple[Any, ...], plan_type: Any = None, operand_type: Any = None) -> Any:
    """The binding's tuple as an OperationPlan (or the given classes)."""
