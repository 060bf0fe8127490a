"""Operation plans: what a built-in operation does to its operands' dtypes.

A plan states, for one call shape, each operand's role, storage dtype and
the dtype it is converted to, the arithmetic the kernel computes in, the
accumulation of a contraction with its accumulator dtype, and the output
dtype. The rules live in the C library (``sw_op_plan_resolve``); this module
gives them frozen, hashable Python values.

Examples:
    >>> from strideweave import DType
    >>> from strideweave.carriers.operation_policy import resolve_operation_plan
    >>> plan = resolve_operation_plan("add", DType.Int32, DType.Float32)
    >>> plan.compute, plan.output
    (<Arithmetic.BINARY32: 'binary32'>, <DType.Float32: 'Float32'>)
    >>> plan.operands[0].convert_to
    <DType.Float32: 'Float32'>
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from strideweave import _native
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


# The library's enumerator order, so values cross the binding as indexes.
_NAMES = _native._plan_names()
_TABLES: dict[type[Enum], tuple[str, ...]] = {
    Arithmetic: _NAMES["arithmetic"],
    Accumulation: _NAMES["accumulation"],
    OperandRole: _NAMES["role"],
}
for _enum, _table in _TABLES.items():
    if tuple(member.value for member in _enum) != _table:  # pragma: no cover
        raise ImportError(f"{_enum.__name__} does not match the library's names {_table}")
_INDEX: dict[Enum, int] = {
    member: i
    for enum in _TABLES
    for i, member in enumerate(enum)  # type: ignore[attr-defined]
}
_BY_INDEX: dict[type[Enum], tuple[Any, ...]] = {enum: tuple(enum) for enum in _TABLES}  # type: ignore[var-annotated]

_OPERATIONS = _native._plan_operations()
_OPERATION_NAMES = frozenset(entry[0] for entry in _OPERATIONS)


def _check_operation(operation: object) -> None:
    if not isinstance(operation, str):
        raise TypeError("operation must be a str")
    if operation not in _OPERATION_NAMES and not _native._is_defined_operation(operation):
        raise ValueError(f"unknown operation {operation!r}: not a registered operation with plans")


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

    def __post_init__(self) -> None:
        if not isinstance(self.role, OperandRole):
            raise TypeError("role must be an OperandRole")
        if self.dtype is not None and not isinstance(self.dtype, DType):
            raise TypeError("dtype must be a DType or None")
        if not isinstance(self.convert_to, DType):
            raise TypeError("convert_to must be a DType")


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

    def __post_init__(self) -> None:
        _check_operation(self.operation)
        if not isinstance(self.operands, tuple) or not all(
            isinstance(o, OperandPlan) for o in self.operands
        ):
            raise TypeError("operands must be a tuple of OperandPlan")
        if not isinstance(self.compute, Arithmetic):
            raise TypeError("compute must be an Arithmetic")
        if self.accumulation is not None and not isinstance(self.accumulation, Accumulation):
            raise TypeError("accumulation must be an Accumulation or None")
        if self.accumulator_dtype is not None and not isinstance(self.accumulator_dtype, DType):
            raise TypeError("accumulator_dtype must be a DType or None")
        if not isinstance(self.output, DType):
            raise TypeError("output must be a DType")

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
        return _native._describe_plan(_to_raw(self))


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


_SPECS = tuple(
    OperationSpec(name, dispatch, title, tuple((o, OperandRole(role)) for o, role in operands))
    for name, dispatch, title, operands in _OPERATIONS
)


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
    return _SPECS


_NOT_GIVEN: Any = object()


def resolve_operation_plan(
    name: str, *operand_dtypes_or_scalars: object, accumulator_dtype: Any = _NOT_GIVEN
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
    if not isinstance(name, str):
        raise TypeError("operation name must be a str")
    if accumulator_dtype is _NOT_GIVEN:
        accumulator_dtype = None
    raw = _native._resolve_plan(name, operand_dtypes_or_scalars, accumulator_dtype)
    return _from_raw(raw)


# ----------------------------------------------------------- raw tuples


def _to_raw(plan: Any) -> tuple[Any, ...]:
    """An OperationPlan or OperationCapability as the binding's tuple."""
    accumulation = plan.accumulation
    return (
        plan.operation,
        tuple((_INDEX[o.role], o.dtype, o.convert_to) for o in plan.operands),
        _INDEX[plan.compute],
        None if accumulation is None else _INDEX[accumulation],
        plan.accumulator_dtype,
        plan.output,
    )


def _from_raw(raw: tuple[Any, ...], plan_type: Any = None, operand_type: Any = None) -> Any:
    """The binding's tuple as an OperationPlan (or the given classes)."""
    plan_type = plan_type or OperationPlan
    operand_type = operand_type or OperandPlan
    operation, operands, compute, accumulation, accumulator, output = raw
    roles = _BY_INDEX[OperandRole]
    return plan_type(
        operation,
        tuple(operand_type(roles[r], d, c) for r, d, c in operands),
        _BY_INDEX[Arithmetic][compute],
        None if accumulation is None else _BY_INDEX[Accumulation][accumulation],
        accumulator,
        output,
    )
