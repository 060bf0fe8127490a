"""Operation definitions: schemas, resolution, reference execution and VJPs.

An operation definition names an operation ("acme.scale"), states its
schema (operands and options), resolves each call into a
``ResolvedInvocation`` (result specs, the plan, mutated and saved operands,
a kernel id), and may give a reference (computing the results on CPU and
Generic tensors) and a VJP (the gradients of the differentiable operands
from the cotangents of the results). ``define_operation`` registers a
definition in the library's operation registry, so a name is unique across
C and Python; calling a user definition runs the library's pipeline
(``sw_op_call``) with the Python callbacks adapted by the binding.

The six central definitions (``add``, ``elementwise_mul``, ``mul``,
``relu``, ``reduce_sum``, ``matmul``) are found with
``_operation_definition(name)``; the shipped carriers keep their own
operation classes.

Examples:
    >>> from strideweave.operation_definition import OperandKind, OperandSpec
    >>> OperandSpec("x", OperandKind.TENSOR, differentiable=True).kind.value
    'tensor'
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from strideweave import _native
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_capability import UnsupportedOperationPlan
from strideweave.carriers.operation_policy import (
    OperandRole,
    OperationPlan,
    resolve_operation_plan,
)
from strideweave.core.layout import Layout, Shape, Stride
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

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


REQUIRED: Any = _Marker("REQUIRED")
"""The default of an option that has none: the caller must give it."""

NON_DIFFERENTIABLE: Any = _Marker("NON_DIFFERENTIABLE")
"""The vjp of a definition without gradients."""

_MISSING: Any = _Marker("<missing>")

# The library's numbering of operand kinds (sw_operand_kind).
_KIND_INDEX = {OperandKind.TENSOR: 0, OperandKind.WEAK_SCALAR: 1, OperandKind.STRUCTURAL: 2}


def _check_identifier(name: object, what: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str")
    if not name.isidentifier():
        raise ValueError(f"{what} name {name!r} must be a Python identifier")


def _is_weak_scalar(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, Tensor)


# ------------------------------------------------------------------ schemas


@dataclass(frozen=True)
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

    def __post_init__(self) -> None:
        _check_identifier(self.name, "operand")
        if not isinstance(self.kind, OperandKind):
            raise TypeError("operand kind must be an OperandKind")
        if not isinstance(self.differentiable, bool):
            raise TypeError("differentiable must be a bool")
        if self.differentiable and self.kind is not OperandKind.TENSOR:
            raise ValueError(f"operand {self.name!r}: only a Tensor operand can be differentiable")


@dataclass(frozen=True)
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
    default: Any = REQUIRED

    def __post_init__(self) -> None:
        _check_identifier(self.name, "option")


@dataclass(frozen=True, init=False)
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

    def __init__(self, operands: Iterable[OperandSpec], options: Iterable[OptionSpec] = ()) -> None:
        ops = tuple(operands)
        opts = tuple(options)
        for o in ops:
            if not isinstance(o, OperandSpec):
                raise TypeError("schema operands must be OperandSpec values")
        for o in opts:
            if not isinstance(o, OptionSpec):
                raise TypeError("schema options must be OptionSpec values")
        if not ops:
            raise ValueError("the operand list must not be empty")
        names = [o.name for o in ops] + [o.name for o in opts]
        if len(set(names)) != len(names):
            raise ValueError("operand and option names must be unique")
        object.__setattr__(self, "operands", ops)
        object.__setattr__(self, "options", opts)


# ------------------------------------------------------------------ results


def _finite_tolerance(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a finite, non-negative real")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{what} must be a finite, non-negative real")
    return v


@dataclass(frozen=True)
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
    atol: float = field(default=0.0, kw_only=True)
    rtol: float = field(default=0.0, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DType):
            raise TypeError("result dtype must be a DType")
        if not isinstance(self.layout, Layout):
            raise TypeError("result layout must be a Layout")
        if not isinstance(self.shape, Shape) or self.layout.shape != self.shape:
            raise ValueError("result layout's Shape must equal the declared shape")
        if self.alias_of is not None:
            if isinstance(self.alias_of, bool) or not isinstance(self.alias_of, int):
                raise TypeError("alias_of must be None or an int")
            if self.alias_of < 0:
                raise ValueError("alias_of must be non-negative")
        object.__setattr__(self, "atol", _finite_tolerance(self.atol, "atol"))
        object.__setattr__(self, "rtol", _finite_tolerance(self.rtol, "rtol"))


# -------------------------------------------------------------------- calls


@dataclass(frozen=True, eq=False)
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


def _check_index_list(
    values: Iterable[Any], what: str, call: BoundOperationCall
) -> tuple[int, ...]:
    out = tuple(values)
    n = len(call.operands)
    for v in out:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} entries must be ints")
        if v < 0:
            raise ValueError(f"{what} entries must be non-negative")
        if v >= n:
            raise ValueError(f"{what} index {v} is out-of-range for {n} operands")
        if call.operand_kinds[v] is not OperandKind.TENSOR:
            raise ValueError(f"{what} must name Tensor operands: operand {v} is not one")
    if len(set(out)) != len(out):
        raise ValueError(f"{what} entries must be unique")
    return out


@dataclass(frozen=True, eq=False, init=False)
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
    ) -> None:
        if not isinstance(call, BoundOperationCall):
            raise TypeError("call must be a BoundOperationCall")
        if not isinstance(plan, OperationPlan):
            raise TypeError("plan must be an OperationPlan")
        roles = tuple(
            OperandRole.TENSOR if k is OperandKind.TENSOR else OperandRole.WEAK_SCALAR
            for k in call.operand_kinds
            if k is not OperandKind.STRUCTURAL
        )
        if plan.operation != call.definition.name or tuple(o.role for o in plan.operands) != roles:
            raise ValueError(
                f"the plan must match the call's operation {call.definition.name!r} and operand "
                f"roles {tuple(r.value for r in roles)}"
            )
        res = tuple(results)
        for r in res:
            if not isinstance(r, ResultSpec):
                raise TypeError("results must be ResultSpec values")
        if not res:
            raise ValueError("results must not be empty")
        for r in res:
            if r.alias_of is not None:
                _check_index_list((r.alias_of,), "alias_of", call)
        mutated = _check_index_list(mutated_operands, "mutated_operands", call)
        saved = _check_index_list(saved_operands, "saved_operands", call)
        if kernel_id is None:
            kernel_id = call.definition.name
        if not isinstance(kernel_id, str):
            raise TypeError("kernel_id must be a str or None")
        if not kernel_id:
            raise ValueError("kernel_id must not be empty")
        object.__setattr__(self, "call", call)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "results", res)
        object.__setattr__(self, "mutated_operands", mutated)
        object.__setattr__(self, "saved_operands", saved)
        object.__setattr__(self, "kernel_id", kernel_id)

    @property
    def definition(self) -> OperationDefinition:
        """The OperationDefinition of the call."""
        return self.call.definition

    @property
    def name(self) -> str:
        """The canonical operation name."""
        return self.call.definition.name

    @property
    def operands(self) -> tuple[Any, ...]:
        """The normalized operands, in schema order."""
        return self.call.operands

    @property
    def options(self) -> Mapping[str, Any]:
        """The options, defaults filled in."""
        return self.call.options


@dataclass(frozen=True, eq=False, init=False)
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
    ) -> None:
        if not isinstance(invocation, ResolvedInvocation):
            raise TypeError("invocation must be a ResolvedInvocation")
        outs = tuple(outputs)
        saved = tuple(saved_operands)
        recipe = invocation.saved_operands
        if len(saved) != len(recipe) or any(
            s is not invocation.operands[i] for s, i in zip(saved, recipe, strict=False)
        ):
            raise ValueError(
                f"saved tensors must follow the save recipe {recipe} of {invocation.name!r}"
            )
        object.__setattr__(self, "invocation", invocation)
        object.__setattr__(self, "outputs", outs)
        object.__setattr__(self, "saved_operands", saved)


# --------------------------------------------------------------- definitions

_BindHook = Callable[
    ["OperationDefinition", tuple[Any, ...]], tuple[tuple[Any, ...], tuple[OperandKind, ...]]
]


@dataclass(frozen=True, eq=False)
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
    _native_id: int | None = field(default=None, repr=False)
    _bind_hook: _BindHook | None = field(default=None, repr=False)

    def bind(self, *operands: Any, **options: Any) -> BoundOperationCall:
        """Binds a call to the schema.

        Checks, in order: the operand count, the options (missing
        required, unknown), the operand kinds.

        Returns:
            BoundOperationCall: the bound call.

        Raises:
            TypeError: for each failed check.
        """
        schema = self.schema
        if self._bind_hook is not None:
            ops, kinds = self._bind_hook(self, operands)
        else:
            ops = operands
            kinds = tuple(o.kind for o in schema.operands)
        if len(ops) != len(schema.operands):
            raise TypeError(
                f"{self.name!r} expects {len(schema.operands)} operands, got {len(ops)}"
            )
        known = {o.name: o for o in schema.options}
        for key in options:
            if key not in known:
                raise TypeError(f"{self.name!r} got an unknown option {key!r}")
        filled: dict[str, Any] = {}
        for o in schema.options:
            if o.name in options:
                filled[o.name] = options[o.name]
            elif o.default is REQUIRED:
                raise TypeError(f"{self.name!r} is missing required option {o.name!r}")
            else:
                filled[o.name] = o.default
        if self._bind_hook is None:
            for spec, value in zip(schema.operands, ops, strict=False):
                if spec.kind is OperandKind.TENSOR and not isinstance(value, Tensor):
                    raise TypeError(f"operand {spec.name!r} of {self.name!r} must be a Tensor")
                if spec.kind is OperandKind.WEAK_SCALAR and not _is_weak_scalar(value):
                    raise TypeError(
                        f"operand {spec.name!r} of {self.name!r} must be a weak scalar "
                        "(a real number, not a Tensor)"
                    )
        for value in ops:
            if isinstance(value, Tensor):
                # The library's gate: multi-subtensor operands are refused.
                _native._require_one_subtensor(value)
        return BoundOperationCall(self, tuple(ops), MappingProxyType(filled), kinds)

    def resolve_call(self, *operands: Any, **options: Any) -> ResolvedInvocation:
        """Binds the call and resolves it.

        Returns:
            ResolvedInvocation: what ``resolve`` returned, checked.

        Raises:
            TypeError: a binding error, or a resolve that returned no
                ResolvedInvocation.
            ValueError: an invocation built on a different bound call.
        """
        call = self.bind(*operands, **options)
        invocation = self.resolve(call)
        if not isinstance(invocation, ResolvedInvocation):
            raise TypeError(
                f"resolve of {self.name!r} must return a ResolvedInvocation, "
                f"got {type(invocation).__name__}"
            )
        if invocation.call is not call:
            raise ValueError(
                f"resolve of {self.name!r} returned an invocation of another call: "
                "it must keep the bound-call identity"
            )
        return invocation

    def __call__(self, *operands: Any, **options: Any) -> Any:
        """Runs the operation: a Tensor, or a tuple for several results."""
        if self._native_id is None:
            results = _execute_reference(self.resolve_call(*operands, **options))
        else:
            try:
                results = _native._definition_call(self._native_id, self, operands, options)
            except NotImplementedError as e:
                if type(e) is NotImplementedError:
                    raise UnsupportedOperationPlan(str(e)) from None
                raise
        return results[0] if len(results) == 1 else results


_DEFINITIONS: dict[str, OperationDefinition] = {}
_LOCK = threading.Lock()


def define_operation(
    name: str,
    schema: OperationSchema,
    resolve: Callable[[BoundOperationCall], ResolvedInvocation],
    reference: Callable[[ResolvedInvocation], Any] | None = None,
    vjp: Any = _MISSING,
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
    if not isinstance(name, str):
        raise TypeError("operation name must be a str")
    if not isinstance(schema, OperationSchema):
        raise TypeError("schema must be an OperationSchema")
    if not callable(resolve):
        raise TypeError("resolve must be callable")
    if reference is not None and not callable(reference):
        raise TypeError("reference must be callable or None")
    if vjp is not _MISSING and vjp is not NON_DIFFERENTIABLE and not callable(vjp):
        raise TypeError("vjp must be callable or NON_DIFFERENTIABLE")
    operands = tuple((o.name, _KIND_INDEX[o.kind], o.differentiable) for o in schema.operands)
    options = tuple((o.name, o.default is REQUIRED, o.default) for o in schema.options)
    with _LOCK:
        definition = OperationDefinition(name, schema, resolve, reference, vjp)
        native_id = _native._define_operation(
            name,
            operands,
            options,
            vjp is not _MISSING and vjp is not NON_DIFFERENTIABLE,
            vjp is NON_DIFFERENTIABLE,
            definition,
        )
        object.__setattr__(definition, "_native_id", native_id)
        _DEFINITIONS[name] = definition
    return definition


def _operation_definition(name: str) -> OperationDefinition:
    """The registered definition of name; LookupError when there is none."""
    try:
        return _DEFINITIONS[name]
    except KeyError:
        raise LookupError(f"no operation definition named {name!r}") from None


def _differentiable_indices(invocation: ResolvedInvocation) -> tuple[int, ...]:
    """The operand indices that take gradients: schema-differentiable
    Tensor operands, in operand order."""
    call = invocation.call
    return tuple(
        i
        for i, (spec, kind) in enumerate(
            zip(call.definition.schema.operands, call.operand_kinds, strict=False)
        )
        if spec.differentiable and kind is OperandKind.TENSOR
    )


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
    definition = invocation.definition
    if definition.reference is None:
        raise UnsupportedOperationPlan(f"operation {definition.name!r} has no reference")
    out = definition.reference(invocation)
    results = (out,) if isinstance(out, Tensor) else tuple(out)
    for i, r in enumerate(results):
        if not isinstance(r, Tensor):
            raise TypeError(f"reference result {i} of {definition.name!r} must be a Tensor")
    if not results:
        raise ProviderContractError(f"the reference of {definition.name!r} returned no results")
    if len(results) != len(invocation.results):
        raise ProviderContractError(
            f"the reference of {definition.name!r} returned {len(results)} results, "
            f"declared {len(invocation.results)}"
        )
    for i, (r, spec) in enumerate(zip(results, invocation.results, strict=False)):
        if spec.alias_of is not None:
            if r is not invocation.operands[spec.alias_of]:
                raise ProviderContractError(
                    f"the reference of {definition.name!r} broke aliasing: result {i} is "
                    f"declared alias_of operand {spec.alias_of} but is not that very Tensor"
                )
            continue
        if r.dtype() != spec.dtype or r.layout != spec.layout:
            raise ProviderContractError(
                f"result {i} of the reference of {definition.name!r} is {r.dtype()} over "
                f"{r.layout}, declared {spec.dtype} over {spec.layout}"
            )
    return results


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
    invocation = context.invocation
    cot = tuple(cotangents)
    if len(cot) != len(invocation.results):
        raise ValueError(
            f"the VJP of {invocation.name!r} needs one entry per result "
            f"({len(invocation.results)}), got {len(cot)}"
        )
    vjp = invocation.definition.vjp
    if vjp is NON_DIFFERENTIABLE or not callable(vjp):
        raise RuntimeError(f"operation {invocation.name!r} has no VJP")
    grads = vjp(context, cot)
    if not isinstance(grads, (tuple, list)):
        raise TypeError(
            f"the VJP of {invocation.name!r} must return a tuple of Tensor or None, "
            f"got {type(grads).__name__}"
        )
    grads = tuple(grads)
    indices = _differentiable_indices(invocation)
    if len(grads) != len(indices):
        raise ValueError(
            f"the VJP of {invocation.name!r} must return {len(indices)} entries "
            "(one per differentiable operand), got {len(grads)}"
        )
    for g, i in zip(grads, indices, strict=False):
        if g is None:
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"VJP gradients of {invocation.name!r} must be Tensors or None")
        x = invocation.operands[i]
        if g.layout.shape != x.layout.shape:
            raise ValueError(
                f"the VJP of {invocation.name!r} returned a gradient of incompatible shape "
                f"for operand {i}"
            )
        if g.dtype() != x.dtype():
            raise TypeError(
                f"the VJP of {invocation.name!r} returned a gradient of incompatible dtype "
                f"{g.dtype()} for operand {i} ({x.dtype()})"
            )
    return grads


# ------------------------------------------------------- the six central ones


def _compact(shape: Shape) -> Layout:
    """The canonical column-major layout of shape, nesting kept."""
    step = 1

    def walk(s: Shape) -> Any:
        nonlocal step
        if s.is_int:
            stride = step
            step *= s.logical_size
            return stride
        return [walk(c) for c in s]

    strides = [walk(c) for c in shape]
    return Layout(shape, Stride(strides))


def _spec(dtype: DType, layout: Layout) -> ResultSpec:
    return ResultSpec(dtype, layout.shape, layout)


def _tensor_or_scalar(value: Any) -> Any:
    return value.dtype() if isinstance(value, Tensor) else value


def _relaid(t: Tensor, layout: Layout) -> Tensor:
    """t's values in fresh storage of t's carrier class laid out by layout."""
    if t.layout == layout:
        return t
    carrier = t.carrier.allocate_like(layout.cosize)
    out = Tensor(carrier, 0, layout)
    for i in range(layout.size):
        out[i] = t[i]
    return out


def _broadcast(t: Tensor, layout: Layout) -> Tensor:
    """t repeated over the modes where its extent is 1, laid out by layout."""
    carrier = t.carrier.allocate_like(layout.cosize)
    out = Tensor(carrier, 0, layout)
    modes = [m.size for m in layout]
    mine = [m.size for m in t.layout]
    for i in range(layout.size):
        coord, rest = [], i
        for full, own in zip(modes, mine, strict=False):
            c = rest % full
            rest //= full
            coord.append(c if own == full else 0)
        out[i] = t[coord]
    return out


def _elementwise_layout(a: Layout, b: Layout) -> Layout:
    """The result layout of an elementwise call on operands of one shape:
    the first's when the layouts are equal or it is compact, else the
    compact column-major layout of the shape (the library's rule for every
    carrier, so that a kernel pattern's declared result matches)."""
    if a == b or a.is_compact():
        return a
    return _compact(a.shape)


def _broadcast_layout(lhs: Tensor, rhs: Tensor) -> Layout:
    a, b = lhs.layout, rhs.layout
    if a.shape == b.shape:
        return _elementwise_layout(a, b)
    if len(a) != len(b):
        raise ValueError(f"add operands are not broadcast-compatible: {a.shape} and {b.shape}")
    modes = []
    for ma, mb in zip(a, b, strict=False):
        if ma.shape == mb.shape or mb.size == 1:
            modes.append(ma.shape)
        elif ma.size == 1:
            modes.append(mb.shape)
        else:
            raise ValueError(f"add operands are not broadcast-compatible: {a.shape} and {b.shape}")
    shape = Shape([_nested(m) for m in modes])
    return _compact(shape)


def _nested(s: Shape) -> Any:
    if s.is_int:
        return s.logical_size
    return [_nested(c) for c in s]


def _sum_to(g: Tensor, like: Tensor) -> Tensor:
    """g summed over the modes where like has extent 1 (add's broadcast)."""
    if g.layout.shape == like.layout.shape:
        return _relaid(g, like.layout)
    carrier = like.carrier.allocate_like(like.layout.cosize)
    out = Tensor(carrier, 0, like.layout)
    modes = [m.size for m in g.layout]
    mine = [m.size for m in like.layout]
    sums: dict[tuple[int, ...], Any] = {}
    for i in range(g.layout.size):
        coord, rest = [], i
        for full, own in zip(modes, mine, strict=False):
            c = rest % full
            rest //= full
            coord.append(c if own == full else 0)
        key = tuple(coord)
        sums[key] = sums.get(key, 0) + g[i]
    for key, v in sums.items():
        out[list(key)] = v
    return out


def _binary_resolve(name: str) -> Callable[[BoundOperationCall], ResolvedInvocation]:
    def resolve(call: BoundOperationCall) -> ResolvedInvocation:
        lhs, rhs = call.operands
        plan = resolve_operation_plan(name, lhs.dtype(), rhs.dtype())
        if name != "add" and lhs.layout.shape != rhs.layout.shape:
            raise ValueError(f"{name} operands must have the same shape")
        layout = (
            _broadcast_layout(lhs, rhs)
            if name == "add"
            else _elementwise_layout(lhs.layout, rhs.layout)
        )
        saved = () if name == "add" else (0, 1)
        return ResolvedInvocation(call, plan, (_spec(plan.output, layout),), (), saved)

    return resolve


def _add_reference(inv: ResolvedInvocation) -> Tensor:
    from strideweave import functional as F

    lhs, rhs = inv.operands
    layout = inv.results[0].layout
    if lhs.layout != layout or rhs.layout != layout:
        lhs = _broadcast(lhs, layout) if lhs.layout.shape != layout.shape else _relaid(lhs, layout)
        rhs = _broadcast(rhs, layout) if rhs.layout.shape != layout.shape else _relaid(rhs, layout)
    return F.add(lhs, rhs)


def _add_vjp(ctx: VJPContext, cot: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
    (c,) = cot
    if c is None:
        return (None, None)
    lhs, rhs = ctx.invocation.operands
    return (_sum_to(c, lhs), _sum_to(c, rhs))


def _emul_reference(inv: ResolvedInvocation) -> Tensor:
    from strideweave import functional as F

    lhs, rhs = inv.operands
    layout = inv.results[0].layout
    return F.elementwise_mul(_relaid(lhs, layout), _relaid(rhs, layout))


def _emul_vjp(ctx: VJPContext, cot: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
    from strideweave import functional as F

    (c,) = cot
    if c is None:
        return (None, None)
    x, y = ctx.saved_operands
    return (
        _relaid(F.elementwise_mul(_relaid(c, y.layout), y), x.layout),
        _relaid(F.elementwise_mul(_relaid(c, x.layout), x), y.layout),
    )


def _mul_bind(
    definition: OperationDefinition, operands: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[OperandKind, ...]]:
    kinds = []
    for spec, value in zip(definition.schema.operands, operands, strict=False):
        if isinstance(value, Tensor):
            kinds.append(OperandKind.TENSOR)
        elif _is_weak_scalar(value):
            kinds.append(OperandKind.WEAK_SCALAR)
        else:
            raise TypeError(f"operand {spec.name!r} of 'mul' must be a Tensor or a weak scalar")
    if len(operands) == 2 and OperandKind.TENSOR not in kinds:
        raise TypeError("'mul' needs a Tensor operand")
    return operands, tuple(kinds)


def _mul_resolve(call: BoundOperationCall) -> ResolvedInvocation:
    lhs, rhs = call.operands
    both = isinstance(lhs, Tensor) and isinstance(rhs, Tensor)
    # tensor * tensor follows elementwise_mul's rules under mul's name.
    plan = resolve_operation_plan(
        "elementwise_mul" if both else "mul", _tensor_or_scalar(lhs), _tensor_or_scalar(rhs)
    )
    if both and lhs.layout.shape != rhs.layout.shape:
        raise ValueError("mul operands must have the same shape")
    tensors = [i for i, k in enumerate(call.operand_kinds) if k is OperandKind.TENSOR]
    layout = call.operands[tensors[0]].layout
    if both:
        layout = _elementwise_layout(lhs.layout, rhs.layout)
    plan = OperationPlan(
        "mul", plan.operands, plan.compute, plan.accumulation, plan.accumulator_dtype, plan.output
    )
    return ResolvedInvocation(call, plan, (_spec(plan.output, layout),), (), tuple(tensors))


def _mul_reference(inv: ResolvedInvocation) -> Tensor:
    from strideweave import functional as F

    lhs, rhs = inv.operands
    if isinstance(lhs, Tensor) and isinstance(rhs, Tensor):
        layout = inv.results[0].layout
        return F.elementwise_mul(_relaid(lhs, layout), _relaid(rhs, layout))
    if isinstance(lhs, Tensor):
        return F.mul(lhs, rhs)
    return F.mul(rhs, lhs)


def _mul_vjp(ctx: VJPContext, cot: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
    from strideweave import functional as F

    (c,) = cot
    lhs, rhs = ctx.invocation.operands
    kinds = ctx.invocation.call.operand_kinds
    out: list[Tensor | None] = []
    for i, k in enumerate(kinds):
        if k is not OperandKind.TENSOR:
            continue
        if c is None:
            out.append(None)
            continue
        other = rhs if i == 0 else lhs
        x = lhs if i == 0 else rhs
        if isinstance(other, Tensor):
            g = F.elementwise_mul(_relaid(c, other.layout), other)
        else:
            g = F.mul(c, other)
        out.append(_relaid(g, x.layout))
    return tuple(out)


def _relu_resolve(call: BoundOperationCall) -> ResolvedInvocation:
    (x,) = call.operands
    plan = resolve_operation_plan("relu", x.dtype())
    return ResolvedInvocation(call, plan, (_spec(plan.output, x.layout),), (), (0,))


def _relu_reference(inv: ResolvedInvocation) -> Tensor:
    from strideweave import functional as F

    return F.relu(inv.operands[0])


def _relu_vjp(ctx: VJPContext, cot: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
    (c,) = cot
    if c is None:
        return (None,)
    (x,) = ctx.saved_operands
    c = _relaid(c, x.layout)
    out = Tensor(x.carrier.allocate_like(x.layout.cosize), 0, x.layout)
    for i in range(x.layout.size):
        out[i] = c[i] if x[i] > 0 else 0
    return (out,)


def _reduce_bind(
    definition: OperationDefinition, operands: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[OperandKind, ...]]:
    if len(operands) == 1:
        operands = (operands[0], None)
    if len(operands) == 2 and not isinstance(operands[0], Tensor):
        raise TypeError("operand 'tensor' of 'reduce_sum' must be a Tensor")
    if len(operands) == 2 and operands[1] is not None and not isinstance(operands[1], str):
        raise TypeError("operand 'pattern' of 'reduce_sum' must be a str or None")
    return operands, (OperandKind.TENSOR, OperandKind.STRUCTURAL)


def _trailing_pattern(x: Tensor) -> str:
    n = len(x.layout)
    names = [f"m{i}" for i in range(n)]
    kept = " ".join(names[:-1]) if n > 1 else "1"
    return f"{' '.join(names)} -> {kept}"


def _reduce_run(x: Tensor, pattern: str | None) -> Tensor:
    from strideweave import functional as F
    from strideweave.einops import reduce as einops_reduce

    if pattern is None and len(x.layout) == 2:
        return F.reduce(x)
    return einops_reduce(x, pattern if pattern is not None else _trailing_pattern(x))


def _reduce_resolve(call: BoundOperationCall) -> ResolvedInvocation:
    from strideweave import functional as F

    x, pattern = call.operands
    accumulator = call.options["accumulator_dtype"]
    if accumulator is None:
        plan = resolve_operation_plan("reduce_sum", x.dtype())
    else:
        plan = resolve_operation_plan("reduce_sum", x.dtype(), accumulator_dtype=accumulator)
    # The result layout depends on the layout and the pattern only; it is
    # found by reducing zeros of the same layout.
    zeros = Tensor(x.carrier.new_like([0] * x.layout.cosize), 0, x.layout)
    with F.no_grad():
        layout = _reduce_run(zeros, pattern).layout
    return ResolvedInvocation(call, plan, (_spec(plan.output, layout),), (), ())


def _reduce_reference(inv: ResolvedInvocation) -> Tensor:
    x, pattern = inv.operands
    return _reduce_run(x, pattern)


def _reduce_vjp(ctx: VJPContext, cot: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
    from strideweave import functional as F

    (c,) = cot
    if c is None:
        return (None,)
    x, pattern = ctx.invocation.operands
    out = Tensor(x.carrier.allocate_like(x.layout.cosize), 0, x.layout)
    if pattern is None and len(x.layout) == 2:
        rows = x.layout[0].size
        for i in range(x.layout.size):
            out[i] = c[i % rows]
        return (out,)
    # The gradient of a sum is the cotangent broadcast back: reduce a
    # tensor of index markers to learn which output each input feeds.
    probe = Tensor(x.carrier.new_like([0] * x.layout.cosize), 0, x.layout)
    y_size = c.layout.size
    with F.no_grad():
        for i in range(x.layout.size):
            probe[i] = 1
            r = _reduce_run(probe, pattern)
            for j in range(y_size):
                if r[j] != 0:
                    out[i] = c[j]
                    break
            probe[i] = 0
    return (out,)


def _matmul_resolve(call: BoundOperationCall) -> ResolvedInvocation:
    lhs, rhs = call.operands
    plan = resolve_operation_plan("matmul", lhs.dtype(), rhs.dtype())
    if len(lhs.layout) != 2:
        raise ValueError("lhs must have a two-mode layout")
    if len(rhs.layout) != 2:
        raise ValueError("rhs must have a two-mode layout")
    if lhs.layout[1].size != rhs.layout[1].size:
        raise ValueError("Matmul inner dimensions must match")
    shape = Shape([_nested(lhs.layout[0].shape), _nested(rhs.layout[0].shape)])
    return ResolvedInvocation(call, plan, (_spec(plan.output, _compact(shape)),), (), (0, 1))


def _matmul_reference(inv: ResolvedInvocation) -> Tensor:
    from strideweave import functional as F

    lhs, rhs = inv.operands
    return F.matmul(lhs, rhs)


def _transpose(t: Tensor) -> Tensor:
    from strideweave import functional as F

    return F.permute(t, 1, 0)


def _matmul_vjp(ctx: VJPContext, cot: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
    from strideweave import functional as F

    (c,) = cot
    if c is None:
        return (None, None)
    a, b = ctx.saved_operands
    # out[i, j] = sum_k a[i, k] b[j, k]: dA = C B (as matmul(C, B^T)),
    # dB = C^T A (as matmul(C^T, A^T)).
    ga = F.matmul(c, _transpose(b))
    gb = F.matmul(_transpose(c), _transpose(a))
    return (_relaid(ga, a.layout), _relaid(gb, b.layout))


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
    definition = OperationDefinition(
        name, OperationSchema(operands, options), resolve, reference, vjp, None, bind_hook
    )
    with _LOCK:
        _DEFINITIONS[name] = definition
    return definition


def _install_builtins() -> None:
    t = OperandKind.TENSOR
    binary = (OperandSpec("lhs", t, True), OperandSpec("rhs", t, True))
    _install_builtin("add", binary, (), _binary_resolve("add"), _add_reference, _add_vjp)
    _install_builtin(
        "elementwise_mul",
        binary,
        (),
        _binary_resolve("elementwise_mul"),
        _emul_reference,
        _emul_vjp,
    )
    _install_builtin("mul", binary, (), _mul_resolve, _mul_reference, _mul_vjp, _mul_bind)
    _install_builtin(
        "relu", (OperandSpec("tensor", t, True),), (), _relu_resolve, _relu_reference, _relu_vjp
    )
    _install_builtin(
        "reduce_sum",
        (OperandSpec("tensor", t, True), OperandSpec("pattern", OperandKind.STRUCTURAL)),
        (OptionSpec("accumulator_dtype", None),),
        _reduce_resolve,
        _reduce_reference,
        _reduce_vjp,
        _reduce_bind,
    )
    _install_builtin("matmul", binary, (), _matmul_resolve, _matmul_reference, _matmul_vjp)


_install_builtins()


def _example_tensor() -> Tensor:
    """A small CPU tensor for the examples."""
    from strideweave.carriers import CPU

    return Tensor(CPU(2), 0, Layout(Shape([2]), Stride([1])))


# Names the binding reaches.
_native._register_definition_layer(ProviderContractError, VJPContext, _execute_reference, _call_vjp)
