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

class ProviderContractError(RuntimeError):
    """A reference, VJP or provider broke the contract of its invocation.

    Examples:
        >>> issubclass(ProviderContractError, RuntimeError)
        True
    """

class OperandKind(StrEnum):
    """What an operand is: a Tensor, a weak scalar, or a structural value.

    Examples:
        >>> OperandKind("weak_scalar") is OperandKind.WEAK_SCALAR
        True
    """

    TENSOR = "tensor"
    WEAK_SCALAR = "weak_scalar"
    STRUCTURAL = "structural"

class _Marker:
    """A named singleton (REQUIRED, NON_DIFFERENTIABLE)."""
    def __init__(self, name: str) -> None: ...
    def __reduce__(self) -> str: ...

REQUIRED: Any
NON_DIFFERENTIABLE: Any

@dataclasses.dataclass(frozen=True)
class OperandSpec:
    """One operand of a schema.

    Args:
        name: a Python identifier.
        kind: an OperandKind.
        differentiable: whether gradients flow to it (Tensor operands only).

    Raises:
        TypeError: a kind that is not an OperandKind, a non-bool
            differentiable.
        ValueError: a name that is not an identifier; differentiable on a
            non-Tensor kind.

    Examples:
        >>> OperandSpec("factor", OperandKind.STRUCTURAL).differentiable
        False
    """

    name: str
    kind: OperandKind
    differentiable: bool = False
    def __post_init__(self) -> None: ...

@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """One keyword option of a schema.

    Args:
        name: a Python identifier.
        default: its default, or REQUIRED.

    Examples:
        >>> OptionSpec("factor", 2.0).default
        2.0
    """

    name: str
    default: Any = ...
    def __post_init__(self) -> None: ...

@dataclasses.dataclass(frozen=True, init=False)
class OperationSchema:
    """The operands and options of an operation.

    Args:
        operands: an iterable of OperandSpec, consumed once; not empty.
        options: an iterable of OptionSpec, consumed once.

    Raises:
        TypeError: an entry of the wrong type.
        ValueError: no operands; a name repeated among operands and options.

    Examples:
        >>> s = OperationSchema([OperandSpec("x", OperandKind.TENSOR, True)])
        >>> [o.name for o in s.operands], s.options
        (['x'], ())
    """

    operands: tuple[OperandSpec, ...]
    options: tuple[OptionSpec, ...]
    def __init__(
        self, operands: Iterable[OperandSpec], options: Iterable[OptionSpec] = ()
    ) -> None: ...

@dataclasses.dataclass(frozen=True)
class ResultSpec:
    """One declared result of an invocation.

    Args:
        dtype: the result's DType.
        shape: its Shape; the layout must have it.
        layout: its Layout.
        alias_of: None for a fresh allocation, or the index of the Tensor
            operand returned as the identical object.
        atol: the absolute tolerance of comparisons with the reference.
        rtol: the relative tolerance.

    Examples:
        >>> from strideweave import Layout, Shape, Stride
        >>> l = Layout(Shape([2]), Stride([1]))
        >>> ResultSpec(DType.Float32, l.shape, l).alias_of is None
        True
    """

    dtype: DType
    shape: Shape
    layout: Layout
    alias_of: int | None = None
    atol: float = dataclasses.field(default=0.0, kw_only=True)
    rtol: float = dataclasses.field(default=0.0, kw_only=True)
    def __post_init__(self) -> None: ...

@dataclasses.dataclass(frozen=True, eq=False)
class BoundOperationCall:
    """A call bound to its definition's schema (made by ``bind``).

    Attributes:
        definition: the OperationDefinition.
        operands: the operands, in schema order.
        options: a read-only mapping of every option, defaults filled in.
        operand_kinds: the OperandKind of each operand.

    Examples:
        >>> from strideweave.operation_definition import _operation_definition
        >>> call = _operation_definition("relu").bind(_example_tensor())
        >>> call.operand_kinds
        (<OperandKind.TENSOR: 'tensor'>,)
    """

    definition: OperationDefinition
    operands: tuple[Any, ...]
    options: Mapping[str, Any]
    operand_kinds: tuple[OperandKind, ...]

OperationCall = BoundOperationCall

@dataclasses.dataclass(frozen=True, eq=False, init=False)
class ResolvedInvocation:
    """What a definition's resolve states about one bound call.

    Args:
        call: the BoundOperationCall it resolves.
        plan: an OperationPlan whose operation and operand roles match the
            call (its Tensor and weak-scalar operands, in order).
        results: a non-empty iterable of ResultSpec, consumed once.
        mutated_operands: indices of Tensor operands the call writes.
        saved_operands: indices of Tensor operands the VJP needs.
        kernel_id: a non-empty str; None means the definition's name.

    Raises:
        TypeError: a field of the wrong type.
        ValueError: a plan that does not match ("roles"), no results, bad
            indices ("out-of-range", "Tensor operands", "unique"), an
            empty kernel_id.

    Examples:
        >>> from strideweave.operation_definition import _operation_definition
        >>> inv = _operation_definition("relu").resolve_call(_example_tensor())
        >>> inv.name, inv.kernel_id, inv.saved_operands
        ('relu', 'relu', (0,))
    """

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
    def definition(self) -> OperationDefinition:
        """The OperationDefinition of the call."""
    @property
    def name(self) -> str:
        """The canonical operation name."""
    @property
    def operands(self) -> tuple[Any, ...]:
        """The normalized operands, in schema order."""
    @property
    def options(self) -> Mapping[str, Any]:
        """The options, defaults filled in."""

@dataclasses.dataclass(frozen=True, eq=False, init=False)
class VJPContext:
    """What a VJP receives besides the cotangents.

    Args:
        invocation: the ResolvedInvocation of the forward call.
        outputs: its results (an iterable, consumed once).
        saved_operands: the saved Tensors, in the order of
            ``invocation.saved_operands``.

    Raises:
        TypeError: an invocation that is not a ResolvedInvocation.
        ValueError: saved tensors that do not follow the save recipe.

    Examples:
        >>> from strideweave.operation_definition import _operation_definition
        >>> x = _example_tensor()
        >>> inv = _operation_definition("relu").resolve_call(x)
        >>> VJPContext(inv, (), (x,)).saved_operands[0] is x
        True
    """

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
    """A registered operation: its name, schema and callbacks.

    Made by ``define_operation`` (or, for the six central definitions, by
    the package). Callable: ``definition(*operands, **options)`` runs the
    operation and returns a Tensor, or a tuple for several results.

    Examples:
        >>> from strideweave.operation_definition import _operation_definition
        >>> _operation_definition("matmul").name
        'matmul'
    """

    name: str
    schema: OperationSchema
    resolve: Callable[[BoundOperationCall], ResolvedInvocation]
    reference: Callable[[ResolvedInvocation], Any] | None
    vjp: Any
    _native_id: int | None = ...
    _bind_hook: _BindHook | None = ...
    def bind(self, *operands: Any, **options: Any) -> BoundOperationCall:
        """Binds a call to the schema.

        Checks, in order: the operand count, the options (missing
        required, unknown), the operand kinds.

        Returns:
            BoundOperationCall: the bound call.

        Raises:
            TypeError: for each failed check.
        """
    def resolve_call(self, *operands: Any, **options: Any) -> ResolvedInvocation:
        """Binds the call and resolves it.

        Returns:
            ResolvedInvocation: what ``resolve`` returned, checked.

        Raises:
            TypeError: a binding error, or a resolve that returned no
                ResolvedInvocation.
            ValueError: an invocation built on a different bound call.
        """
    def __call__(self, *operands: Any, **options: Any) -> Any:
        """Runs the operation: a Tensor, or a tuple for several results."""

def define_operation(
    name: str,
    schema: OperationSchema,
    resolve: Callable[[BoundOperationCall], ResolvedInvocation],
    reference: Callable[[ResolvedInvocation], Any] | None = None,
    vjp: Any = ...,
) -> OperationDefinition:
    """Registers an operation definition in the library's registry.

    Args:
        name: dot-namespaced identifier segments ("acme.scale"); the first
            segment may be neither ``strideweave`` nor a built-in name.
        schema: its OperationSchema.
        resolve: ``resolve(call) -> ResolvedInvocation``.
        reference: ``reference(invocation) -> Tensor | tuple[Tensor, ...]``,
            or None.
        vjp: ``vjp(context, cotangents) -> tuple[Tensor | None, ...]`` (one
            entry per differentiable operand), or NON_DIFFERENTIABLE. It
            must be given explicitly.

    Returns:
        OperationDefinition: the immutable, callable definition.

    Raises:
        TypeError: arguments of the wrong type.
        ValueError: a name that is not namespaced or is reserved, a vjp
            not supplied explicitly, a name already defined.

    Examples:
        >>> from strideweave.operation_definition import _operation_definition
        >>> _operation_definition("add").vjp is not NON_DIFFERENTIABLE
        True
    """

def _operation_definition(name: str) -> OperationDefinition:
    """The registered definition of name; LookupError when there is none."""

def _differentiable_indices(invocation: ResolvedInvocation) -> tuple[int, ...]:
    """The operand indices that take gradients: schema-differentiable
    Tensor operands, in operand order.
    """

def _execute_reference(invocation: ResolvedInvocation) -> tuple[Tensor, ...]:
    """Runs the reference of an invocation and checks its results.

    Returns:
        tuple[Tensor, ...]: one Tensor per declared result.

    Raises:
        UnsupportedOperationPlan: the definition has no reference.
        TypeError: a result that is not a Tensor.
        ProviderContractError: no results, a wrong count, dtype or layout,
            or a broken alias.
    """

def _call_vjp(
    context: VJPContext, cotangents: Iterable[Tensor | None]
) -> tuple[Tensor | None, ...]:
    """Calls a definition's VJP and checks what it returns.

    Args:
        context: the VJPContext.
        cotangents: one Tensor or None per result.

    Returns:
        tuple: one Tensor or None per differentiable operand.

    Raises:
        ValueError: not one cotangent per result; a wrong length or shape.
        RuntimeError: a NON_DIFFERENTIABLE definition ("no VJP").
        TypeError: an entry that is not a Tensor or None; a wrong dtype.
    """

def _install_builtin(
    name: str,
    operands: tuple[OperandSpec, ...],
    options: tuple[OptionSpec, ...],
    resolve: Callable[[BoundOperationCall], ResolvedInvocation],
    reference: Callable[[ResolvedInvocation], Any],
    vjp: Any,
    bind_hook: _BindHook | None = None,
) -> OperationDefinition:
    """Installs one central definition of a built-in operation."""
