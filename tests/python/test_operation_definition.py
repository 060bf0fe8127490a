"""Operation definitions (strideweave.operation_definition, re-exported by
strideweave.operation): import paths, the schema values and their
messages, define_operation's name and vjp rules, binding in its order of
checks, ResultSpec and ResolvedInvocation validation, reference execution,
VJPs and the autograd rules (alias ban, released carriers, saved
versions, None cotangents), the six central definitions, a Hypothesis
check of a user definition against finite differences, concurrent
definitions against lookups, and the acme.scale end to end."""

import dataclasses
import itertools
import threading

import pytest
import strideweave as sw
import strideweave.functional as F
import strideweave.operation as operation_module
import strideweave.operation_definition as od
from hypothesis import given
from hypothesis import strategies as st
from strideweave import CPU, DType, Generic, Layout, Shape, Stride, Tensor
from strideweave.carriers.operation_capability import UnsupportedOperationPlan
from strideweave.carriers.operation_policy import (
    Arithmetic,
    OperandPlan,
    OperandRole,
    OperationPlan,
)
from strideweave.operation_definition import (
    NON_DIFFERENTIABLE,
    REQUIRED,
    BoundOperationCall,
    OperandKind,
    OperandSpec,
    OperationDefinition,
    OperationSchema,
    OptionSpec,
    ProviderContractError,
    ResolvedInvocation,
    ResultSpec,
    VJPContext,
    _call_vjp,
    _differentiable_indices,
    _execute_reference,
    _operation_definition,
    define_operation,
)

T, W, S = OperandKind.TENSOR, OperandKind.WEAK_SCALAR, OperandKind.STRUCTURAL
_names = itertools.count()


def fresh(prefix="acme"):
    return f"{prefix}.op{next(_names)}"


def cpu(values, shape=None, dtype=DType.Float32):
    shape = shape or [len(values)]
    layout = Layout(Shape(shape), Stride(_strides(shape)))
    t = Tensor(CPU(layout.cosize, dtype=dtype), 0, layout)
    for i, v in enumerate(values):
        t[i] = v
    return t


def _strides(shape):
    out, step = [], 1
    for e in shape:
        out.append(step)
        step *= e
    return out


def values(t):
    return [t[i] for i in range(t.layout.size)]


def plan_for(name, call):
    ops = tuple(
        OperandPlan(OperandRole.TENSOR, v.dtype(), v.dtype())
        if k is T
        else OperandPlan(OperandRole.WEAK_SCALAR, None, DType.Float32)
        for v, k in zip(call.operands, call.operand_kinds, strict=False)
        if k is not S
    )
    return OperationPlan(name, ops, Arithmetic.BINARY32, None, None, DType.Float32)


def spec_like(x, alias_of=None):
    return ResultSpec(x.dtype(), x.layout.shape, x.layout, alias_of)


# ------------------------------------------------------------ acme.scale


def scale_resolve(call):
    (x,) = call.operands
    return ResolvedInvocation(call, plan_for(call.definition.name, call), (spec_like(x),))


def scale_reference(inv):
    return F.mul(inv.operands[0], inv.options["factor"])


def scale_vjp(ctx, cot):
    (c,) = cot
    return (None if c is None else F.mul(c, ctx.invocation.options["factor"]),)


SCALE_SCHEMA = OperationSchema([OperandSpec("x", T, True)], [OptionSpec("factor", 2.0)])
SCALE = define_operation("acme.scale", SCALE_SCHEMA, scale_resolve, scale_reference, scale_vjp)


# ------------------------------------------------------------ import paths

HIDDEN = [
    "OperationCall",
    "BoundOperationCall",
    "OperationPlan",
    "ResolvedInvocation",
    "VJPContext",
]
EXPORTED = [
    "define_operation",
    "OperationDefinition",
    "OperationSchema",
    "OperandSpec",
    "OptionSpec",
    "OperandKind",
    "REQUIRED",
    "NON_DIFFERENTIABLE",
    "ResultSpec",
    "ProviderContractError",
]


@pytest.mark.parametrize("name", EXPORTED + HIDDEN)
def test_import_paths(name):
    obj = getattr(operation_module, name)
    assert getattr(sw, name) is obj
    assert name in operation_module.__all__
    if name != "OperationPlan":
        assert getattr(od, name) is obj


def test_hidden_names_are_not_in_the_top_level_all():
    for name in HIDDEN:
        assert name not in sw.__all__
    for name in EXPORTED:
        assert name in sw.__all__


def test_provider_contract_error_is_a_runtime_error():
    assert issubclass(ProviderContractError, RuntimeError)


# ------------------------------------------------------------ schema values


def test_operand_kind_values_and_order():
    assert issubclass(OperandKind, str)
    assert [(m.name, m.value) for m in OperandKind] == [
        ("TENSOR", "tensor"),
        ("WEAK_SCALAR", "weak_scalar"),
        ("STRUCTURAL", "structural"),
    ]


@pytest.mark.parametrize("bad", ["", "not valid", "1name"])
def test_operand_spec_name_must_be_an_identifier(bad):
    with pytest.raises(ValueError, match="identifier"):
        OperandSpec(bad, T)


def test_operand_spec_rules():
    with pytest.raises(TypeError, match="OperandKind"):
        OperandSpec("x", "tensor")
    with pytest.raises(TypeError, match="bool"):
        OperandSpec("x", T, 1)
    for kind in (W, S):
        with pytest.raises(ValueError, match="only a Tensor"):
            OperandSpec("x", kind, True)
    spec = OperandSpec("x", T, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "y"


def test_option_spec_rules():
    with pytest.raises(TypeError):
        OptionSpec(3)
    for bad in ("", "not valid"):
        with pytest.raises(ValueError, match="identifier"):
            OptionSpec(bad)
    assert OptionSpec("k").default is REQUIRED
    assert repr(REQUIRED) == "REQUIRED"
    with pytest.raises(dataclasses.FrozenInstanceError):
        OptionSpec("k").default = 1


def test_schema_consumes_iterables_once_and_checks_entries():
    consumed = []

    def gen():
        consumed.append(1)
        yield OperandSpec("x", T)

    schema = OperationSchema(gen(), iter([OptionSpec("k", 1)]))
    assert consumed == [1]
    assert isinstance(schema.operands, tuple) and isinstance(schema.options, tuple)
    with pytest.raises(TypeError, match="OperandSpec"):
        OperationSchema(["x"])
    with pytest.raises(TypeError, match="OptionSpec"):
        OperationSchema([OperandSpec("x", T)], ["k"])
    with pytest.raises(ValueError, match="must not be empty"):
        OperationSchema([])
    with pytest.raises(ValueError, match="unique"):
        OperationSchema([OperandSpec("x", T)], [OptionSpec("x")])
    with pytest.raises(ValueError, match="unique"):
        OperationSchema([OperandSpec("x", T), OperandSpec("x", S)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        schema.operands = ()


# ---------------------------------------------------------- define_operation


@pytest.mark.parametrize(
    "bad",
    ["plain", ".missing", "acme.", "acme.not-valid", "strideweave.custom", "add.custom"],
)
def test_define_rejects_names(bad):
    with pytest.raises(ValueError, match="namespaced|reserved"):
        define_operation(bad, SCALE_SCHEMA, scale_resolve, scale_reference, scale_vjp)
    with pytest.raises(LookupError):
        _operation_definition(bad)


def test_vjp_must_be_supplied_explicitly():
    name = fresh()
    with pytest.raises(ValueError, match="supplied explicitly"):
        define_operation(name, SCALE_SCHEMA, scale_resolve, scale_reference)
    with pytest.raises(LookupError):
        _operation_definition(name)
    # Nothing was registered: the name is still free.
    define_operation(name, SCALE_SCHEMA, scale_resolve, scale_reference, NON_DIFFERENTIABLE)


def test_define_twice_and_immutability():
    name = fresh()
    d = define_operation(name, SCALE_SCHEMA, scale_resolve, None, NON_DIFFERENTIABLE)
    assert _operation_definition(name) is d
    assert (d.name, d.schema, d.resolve, d.reference, d.vjp) == (
        name,
        SCALE_SCHEMA,
        scale_resolve,
        None,
        NON_DIFFERENTIABLE,
    )
    with pytest.raises(ValueError, match="already defined"):
        define_operation(name, SCALE_SCHEMA, scale_resolve, None, NON_DIFFERENTIABLE)
    with pytest.raises(ValueError, match="already defined"):
        define_operation("acme.scale", SCALE_SCHEMA, scale_resolve, None, scale_vjp)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.name = "acme.other"
    assert _operation_definition(name) is d


def test_define_argument_types():
    with pytest.raises(TypeError):
        define_operation(3, SCALE_SCHEMA, scale_resolve, None, scale_vjp)
    with pytest.raises(TypeError):
        define_operation(fresh(), "schema", scale_resolve, None, scale_vjp)
    with pytest.raises(TypeError):
        define_operation(fresh(), SCALE_SCHEMA, 3, None, scale_vjp)
    with pytest.raises(TypeError):
        define_operation(fresh(), SCALE_SCHEMA, scale_resolve, 3, scale_vjp)
    with pytest.raises(TypeError):
        define_operation(fresh(), SCALE_SCHEMA, scale_resolve, None, 3)


def test_names_are_unique_across_c_and_python():
    # The registry knows the Python definition: plans may name it.
    plan = OperationPlan("acme.scale", (), Arithmetic.BINARY32, None, None, DType.Float32)
    assert plan.operation == "acme.scale"
    with pytest.raises(ValueError, match="unknown operation"):
        OperationPlan("acme.nothing", (), Arithmetic.BINARY32, None, None, DType.Float32)


def test_lookup_of_a_missing_definition():
    with pytest.raises(LookupError):
        _operation_definition("acme.never")


# --------------------------------------------------------------- binding

BIND = define_operation(
    "acme.bind",
    OperationSchema(
        [OperandSpec("x", T, True), OperandSpec("s", W), OperandSpec("tag", S)],
        [OptionSpec("mode"), OptionSpec("k", 5)],
    ),
    lambda call: ResolvedInvocation(
        call, plan_for("acme.bind", call), (spec_like(call.operands[0]),)
    ),
    lambda inv: F.mul(inv.operands[0], inv.operands[1]),
    NON_DIFFERENTIABLE,
)


def test_bind_order_of_checks():
    x = cpu([1.0, 2.0])
    with pytest.raises(TypeError, match="expects 3 operands"):
        BIND.bind(x, 1)
    with pytest.raises(TypeError, match="missing required"):
        BIND.bind(x, 1, "t")
    with pytest.raises(TypeError, match="unknown option"):
        BIND.bind(x, 1, "t", mode=1, bogus=2)
    with pytest.raises(TypeError):
        BIND.bind(x, 1, "t", **{"mode": 1}, mode=2)  # noqa: PIE804
    # Options before kinds.
    with pytest.raises(TypeError, match="missing required"):
        BIND.bind("no tensor", 1, "t")
    with pytest.raises(TypeError, match="must be a Tensor"):
        BIND.bind("no tensor", 1, "t", mode=1)
    for bad in (x, "one"):
        with pytest.raises(TypeError, match="weak scalar"):
            BIND.bind(x, bad, "t", mode=1)


def test_bound_call_fields():
    x = cpu([1.0, 2.0])
    tag = object()
    call = BIND.bind(x, True, tag, mode="m")
    assert isinstance(call, BoundOperationCall)
    assert call.definition is BIND
    assert call.operands == (x, True, tag) and call.operands[2] is tag
    assert dict(call.options) == {"mode": "m", "k": 5}
    assert call.operand_kinds == (T, W, S)
    with pytest.raises(TypeError):
        call.options["k"] = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.operands = ()


def test_call_binds_in_the_library_with_the_same_rules():
    x = cpu([1.0, 2.0])
    with pytest.raises(TypeError, match="expects 3 operands"):
        BIND(x, 1)
    with pytest.raises(TypeError, match="missing required"):
        BIND(x, 1, "t")
    with pytest.raises(TypeError, match="unknown option"):
        BIND(x, 1, "t", mode=1, bogus=2)
    with pytest.raises(TypeError, match="must be a Tensor"):
        BIND("no", 1, "t", mode=1)
    with pytest.raises(TypeError, match="weak scalar"):
        BIND(x, "one", "t", mode=1)
    assert values(BIND(x, 3, "t", mode=1)) == [3.0, 6.0]


def test_resolve_must_return_an_invocation_of_the_same_call():
    x = cpu([1.0])
    other = SCALE.bind(x)
    wrong_type = define_operation(
        fresh(), SCALE_SCHEMA, lambda call: "nope", scale_reference, NON_DIFFERENTIABLE
    )
    with pytest.raises(TypeError, match="ResolvedInvocation"):
        wrong_type.resolve_call(x)
    with pytest.raises(TypeError, match="ResolvedInvocation"):
        wrong_type(x)
    name = fresh()
    wrong_call = define_operation(
        name,
        SCALE_SCHEMA,
        lambda call: ResolvedInvocation(
            SCALE.bind(x), plan_for("acme.scale", other), (spec_like(x),)
        ),
        scale_reference,
        NON_DIFFERENTIABLE,
    )
    with pytest.raises(ValueError, match="bound-call identity"):
        wrong_call.resolve_call(x)
    with pytest.raises(ValueError, match="bound-call identity"):
        wrong_call(x)


def test_the_framework_never_calls_reference_or_vjp_to_resolve():
    seen = []

    def reference(inv):
        seen.append("reference")
        return scale_reference(inv)

    def vjp(ctx, cot):
        seen.append("vjp")
        return scale_vjp(ctx, cot)

    d = define_operation(fresh(), SCALE_SCHEMA, scale_resolve, reference, vjp)
    d.resolve_call(cpu([1.0]))
    assert seen == []


# --------------------------------------------------------------- ResultSpec


def test_result_spec_rules():
    layout = Layout(Shape([2]), Stride([1]))
    with pytest.raises(TypeError, match="DType"):
        ResultSpec("Float32", layout.shape, layout)
    with pytest.raises(ValueError, match="Shape"):
        ResultSpec(DType.Float32, Shape([3]), layout)
    with pytest.raises(ValueError, match="non-negative"):
        ResultSpec(DType.Float32, layout.shape, layout, -1)
    with pytest.raises(TypeError, match="finite"):
        ResultSpec(DType.Float32, layout.shape, layout, atol=True)
    with pytest.raises(TypeError, match="finite"):
        ResultSpec(DType.Float32, layout.shape, layout, rtol=False)
    for bad in (float("inf"), -1.0, float("nan")):
        with pytest.raises(ValueError, match="finite"):
            ResultSpec(DType.Float32, layout.shape, layout, atol=bad)
        with pytest.raises(ValueError, match="finite"):
            ResultSpec(DType.Float32, layout.shape, layout, rtol=bad)
    spec = ResultSpec(DType.Float32, layout.shape, layout, 0, atol=1e-3, rtol=1e-2)
    assert (spec.alias_of, spec.atol, spec.rtol) == (0, 1e-3, 1e-2)
    with pytest.raises(TypeError):
        ResultSpec(DType.Float32, layout.shape, layout, None, 1e-3)  # keyword-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.atol = 1.0


# ------------------------------------------------------- ResolvedInvocation


def test_invocation_fields_and_defaults():
    x = cpu([1.0, 2.0])
    call = BIND.bind(x, 2, "t", mode=1)
    plan = plan_for("acme.bind", call)
    results = iter([spec_like(x)])
    inv = ResolvedInvocation(call, plan, results, iter([0]), iter([0]))
    assert inv.results == (spec_like(x),) or len(inv.results) == 1
    assert inv.mutated_operands == (0,) and inv.saved_operands == (0,)
    assert inv.kernel_id == "acme.bind"
    assert inv.definition is BIND and inv.name == "acme.bind"
    assert inv.operands is call.operands and inv.options is call.options
    assert inv.plan is plan
    with pytest.raises(AttributeError):
        inv.name = "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        inv.kernel_id = "k"
    assert ResolvedInvocation(call, plan, [spec_like(x)], kernel_id="fast").kernel_id == "fast"


def test_invocation_rules():
    x = cpu([1.0, 2.0])
    call = BIND.bind(x, 2, "t", mode=1)
    plan = plan_for("acme.bind", call)
    spec = spec_like(x)
    with pytest.raises(ValueError, match="roles"):
        ResolvedInvocation(call, plan_for("acme.scale", SCALE.bind(x)), [spec])
    swapped = OperationPlan("acme.bind", plan.operands[::-1], plan.compute, None, None, plan.output)
    with pytest.raises(ValueError, match="roles"):
        ResolvedInvocation(call, swapped, [spec])
    with pytest.raises(TypeError):
        ResolvedInvocation(call, "plan", [spec])
    with pytest.raises(ValueError, match="must not be empty"):
        ResolvedInvocation(call, plan, [])
    with pytest.raises(TypeError, match="ResultSpec"):
        ResolvedInvocation(call, plan, ["spec"])
    with pytest.raises(ValueError, match="Tensor operands"):
        ResolvedInvocation(call, plan, [spec], saved_operands=[2])
    with pytest.raises(ValueError, match="Tensor operands"):
        ResolvedInvocation(call, plan, [spec], mutated_operands=[1])
    with pytest.raises(ValueError, match="out-of-range"):
        ResolvedInvocation(call, plan, [spec_like(x, alias_of=7)])
    with pytest.raises(ValueError, match="Tensor operands"):
        ResolvedInvocation(call, plan, [spec_like(x, alias_of=2)])
    with pytest.raises(ValueError, match="out-of-range"):
        ResolvedInvocation(call, plan, [spec], saved_operands=[3])
    with pytest.raises(ValueError, match="non-negative"):
        ResolvedInvocation(call, plan, [spec], saved_operands=[-1])
    with pytest.raises(ValueError, match="unique"):
        ResolvedInvocation(call, plan, [spec], saved_operands=[0, 0])
    with pytest.raises(ValueError, match="empty"):
        ResolvedInvocation(call, plan, [spec], kernel_id="")
    with pytest.raises(TypeError):
        ResolvedInvocation("call", plan, [spec])


# ------------------------------------------------------ reference execution


def definition_with_reference(reference, results=None, vjp=NON_DIFFERENTIABLE):
    def resolve(call):
        (x,) = call.operands
        return ResolvedInvocation(
            call, plan_for(call.definition.name, call), results(x) if results else (spec_like(x),)
        )

    return define_operation(fresh(), SCALE_SCHEMA, resolve, reference, vjp)


def test_reference_results_are_normalized_and_checked():
    x = cpu([1.0, 2.0])
    single = definition_with_reference(lambda inv: F.mul(inv.operands[0], 2.0))
    assert len(_execute_reference(single.resolve_call(x))) == 1
    listed = definition_with_reference(lambda inv: [F.mul(inv.operands[0], 2.0)])
    assert isinstance(_execute_reference(listed.resolve_call(x)), tuple)
    bad = definition_with_reference(lambda inv: ("no",))
    with pytest.raises(TypeError, match="must be a Tensor"):
        _execute_reference(bad.resolve_call(x))
    with pytest.raises(TypeError, match="must be a Tensor"):
        bad(x)
    empty = definition_with_reference(lambda inv: ())
    with pytest.raises(ProviderContractError, match="no results"):
        _execute_reference(empty.resolve_call(x))
    with pytest.raises(ProviderContractError, match="no results"):
        empty(x)
    missing = definition_with_reference(None)
    with pytest.raises(UnsupportedOperationPlan, match="no reference"):
        _execute_reference(missing.resolve_call(x))
    with pytest.raises(UnsupportedOperationPlan, match="no reference"):
        missing(x)


def test_reference_aliasing():
    x = cpu([1.0, 2.0])
    aliased = definition_with_reference(
        lambda inv: inv.operands[0], lambda x: (spec_like(x, alias_of=0),)
    )
    assert aliased(x) is x
    view = definition_with_reference(
        lambda inv: Tensor(inv.operands[0].carrier, 0, inv.operands[0].layout),
        lambda x: (spec_like(x, alias_of=0),),
    )
    with pytest.raises(ProviderContractError, match="aliasing"):
        _execute_reference(view.resolve_call(x))
    with pytest.raises(ProviderContractError, match="aliasing"):
        view(x)
    # A distinct view without alias_of is fine.
    plain_view = definition_with_reference(
        lambda inv: Tensor(inv.operands[0].carrier, 0, inv.operands[0].layout)
    )
    y = plain_view(x)
    assert y is not x and y.carrier is x.carrier


def test_reference_result_must_have_the_declared_dtype_and_layout():
    x = cpu([1.0, 2.0])
    wrong = definition_with_reference(lambda inv: cpu([1, 2], dtype=DType.Int32))
    with pytest.raises(ProviderContractError, match="declared"):
        wrong(x)


# ---------------------------------------------------------- VJP and autograd


def test_vjp_context_and_call_vjp_rules():
    x = cpu([1.0, 2.0])
    inv = SCALE.resolve_call(x)
    with pytest.raises(ValueError, match="save recipe"):
        VJPContext(inv, (), (x,))
    ctx = VJPContext(inv, iter([]), iter([]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.outputs = ()
    with pytest.raises(ValueError, match="one entry per result"):
        _call_vjp(ctx, ())
    c = cpu([1.0, 1.0])
    assert values(_call_vjp(ctx, (c,))[0]) == [2.0, 2.0]
    assert _call_vjp(ctx, (None,)) == (None,)
    nd = define_operation(fresh(), SCALE_SCHEMA, scale_resolve, scale_reference, NON_DIFFERENTIABLE)
    with pytest.raises(RuntimeError, match="no VJP"):
        _call_vjp(VJPContext(nd.resolve_call(x), (), ()), (c,))


@pytest.mark.parametrize(
    ("result", "error", "match"),
    [
        ("nope", TypeError, "tuple"),
        (("nope",), TypeError, "Tensors or None"),
        ((), ValueError, "entries"),
        ((None, None), ValueError, "entries"),
        (lambda: (cpu([1.0, 2.0, 3.0]),), ValueError, "shape"),
        (lambda: (cpu([1, 2], dtype=DType.Int32),), TypeError, "dtype"),
    ],
)
def test_vjp_results_are_checked(result, error, match):
    def vjp(ctx, cot):
        return result() if callable(result) else result

    d = define_operation(fresh(), SCALE_SCHEMA, scale_resolve, scale_reference, vjp)
    x = cpu([1.0, 2.0])
    with pytest.raises(error, match=match):
        _call_vjp(VJPContext(d.resolve_call(x), (), ()), (cpu([1.0, 1.0]),))
    y = d(x)
    with pytest.raises(error, match=match):
        y.backward(cpu([1.0, 1.0]))
    assert x.grad is None


def test_differentiable_indices():
    x = cpu([1.0, 2.0])
    assert _differentiable_indices(BIND.resolve_call(x, 1, "t", mode=1)) == (0,)
    mul = _operation_definition("mul")
    assert _differentiable_indices(mul.resolve_call(3, x)) == (1,)
    assert _differentiable_indices(mul.resolve_call(x, x)) == (0, 1)


def test_no_node_without_a_differentiable_operand_or_under_no_grad():
    nd_schema = OperationSchema([OperandSpec("x", T)], [OptionSpec("factor", 2.0)])
    d = define_operation(fresh(), nd_schema, scale_resolve, scale_reference, scale_vjp)
    x = cpu([1.0, 2.0])
    y = d(x)
    assert y.autograd_ctx is None
    with F.no_grad():
        z = SCALE(x)
    assert z.autograd_ctx is None
    w = SCALE(x)
    assert w.autograd_ctx is not None
    invocation, saved = sw._native._definition_node(w)
    assert isinstance(invocation, ResolvedInvocation) and saved == ()


def test_operands_are_not_kept_alive_without_a_node():
    import gc
    import weakref

    nd_schema = OperationSchema([OperandSpec("x", T)], [OptionSpec("factor", 2.0)])
    d = define_operation(fresh(), nd_schema, scale_resolve, scale_reference, scale_vjp)
    x = cpu([1.0, 2.0])
    ref = weakref.ref(x)
    y = d(x)
    del x
    gc.collect()
    assert ref() is None and values(y) == [2.0, 4.0]


def test_the_node_is_the_definitions_own():
    x = cpu([1.0, 2.0])
    y = SCALE(x)
    assert sw._native._definition_node(y) is not None
    # The reference ran without recording: the built-in mul left no node.
    assert sw._native._definition_node(F.mul(x, 2.0)) is None


def aliasing_definition(vjp):
    def resolve(call):
        (x,) = call.operands
        return ResolvedInvocation(
            call, plan_for(call.definition.name, call), (spec_like(x, alias_of=0),)
        )

    calls = []

    def reference(inv):
        calls.append(1)
        return inv.operands[0]

    return define_operation(fresh(), SCALE_SCHEMA, resolve, reference, vjp), calls


def test_exact_object_alias_ban():
    d, calls = aliasing_definition(scale_vjp)
    x = cpu([1.0, 2.0])
    version = x.version
    with pytest.raises(ValueError, match="exact-object aliased"):
        d(x)
    assert calls == [] and x.version == version and x.autograd_ctx is None
    with F.no_grad():
        assert d(x) is x
    nd, _ = aliasing_definition(NON_DIFFERENTIABLE)
    prior = SCALE(x)
    ctx = prior.autograd_ctx
    assert nd(prior) is prior and prior.autograd_ctx is ctx


def test_released_carrier_check_wins_over_the_alias_ban():
    d, calls = aliasing_definition(scale_vjp)
    x = cpu([1.0, 2.0])
    x.carrier.release()
    with pytest.raises(RuntimeError, match="released"):
        d(x)
    assert calls == []


def test_saved_version_checks():
    def resolve(call):
        (x,) = call.operands
        return ResolvedInvocation(
            call, plan_for(call.definition.name, call), (spec_like(x),), saved_operands=(0,)
        )

    def vjp(ctx, cot):
        (x,) = ctx.saved_operands
        return (F.elementwise_mul(cot[0], x),)

    d = define_operation(fresh(), SCALE_SCHEMA, resolve, scale_reference, vjp)
    x = cpu([1.0, 2.0])
    y = d(x)
    invocation, saved = sw._native._definition_node(y)
    assert saved[0] is x and invocation.saved_operands == (0,)
    # The node's operation object says the same.
    node = y.autograd_ctx
    assert node._resolved_invocation is invocation
    assert node._saved_operands == (x,) and node._saved_operands[0] is x
    x[0] = 5.0
    with pytest.raises(RuntimeError, match="modified in-place|version"):
        y.backward(cpu([1.0, 1.0]))


def test_backward_frees_the_saved_state():
    x = cpu([1.0, 2.0])
    y = SCALE(x, factor=3.0)
    assert sw._native._definition_node(y)[0] is not None
    node = y.autograd_ctx
    y.backward(cpu([1.0, 1.0]))
    assert sw._native._definition_node(y) == (None, ())
    assert node._resolved_invocation is None and node._saved_operands == ()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward(cpu([1.0, 1.0]))


def test_multi_result_cotangents_have_none_for_results_without_gradient():
    def resolve(call):
        (x,) = call.operands
        return ResolvedInvocation(
            call, plan_for(call.definition.name, call), (spec_like(x), spec_like(x))
        )

    seen = []

    def vjp(ctx, cot):
        seen.append(tuple(c is None for c in cot))
        total = None
        for c, k in zip(cot, (2.0, 5.0), strict=False):
            if c is not None:
                g = F.mul(c, k)
                total = g if total is None else F.add(total, g)
        return (total,)

    d = define_operation(
        fresh(),
        SCALE_SCHEMA,
        resolve,
        lambda inv: (F.mul(inv.operands[0], 2.0), F.mul(inv.operands[0], 5.0)),
        vjp,
    )
    x = cpu([1.0, 2.0])
    a, b = d(x)
    assert values(a) == [2.0, 4.0] and values(b) == [5.0, 10.0]
    b.backward(cpu([1.0, 1.0]))
    assert seen == [(True, False)]
    assert values(x.grad) == [5.0, 5.0]


# --------------------------------------------------------- central definitions

CENTRAL = ["add", "elementwise_mul", "mul", "relu", "reduce_sum", "matmul"]


@pytest.mark.parametrize("name", CENTRAL)
def test_central_definitions_exist(name):
    d = _operation_definition(name)
    assert isinstance(d, OperationDefinition) and d.name == name
    assert callable(d.vjp)


def test_shipped_carriers_keep_their_operation_classes():
    assert type(Generic([1.0]).dispatch_op("add")) is operation_module.GenericAddOperation
    assert type(CPU(1).dispatch_op("add")).__name__ == "_CPUAddOperation"


def test_central_mul():
    mul = _operation_definition("mul")
    x = cpu([1, 2], dtype=DType.Int32)
    assert values(mul(x, 3)) == [3, 6]
    assert values(mul(3, x)) == [3, 6]
    roles = [o.role for o in mul.resolve_call(3, x).plan.operands]
    assert roles == [OperandRole.WEAK_SCALAR, OperandRole.TENSOR]
    f = cpu([1.0, 2.0])
    assert values(mul(f, f)) == [1.0, 4.0]
    inv = mul.resolve_call(f, 3.0)
    assert [values(g) for g in _call_vjp(VJPContext(inv, (), (f,)), (cpu([1.0, 1.0]),))] == [
        [3.0, 3.0]
    ]


def test_central_add_broadcasts():
    add = _operation_definition("add")
    a = cpu([1.0, 2.0], [1, 2])
    b = cpu([float(i) for i in range(6)], [3, 2])
    r = add(a, b)
    assert r.layout.shape == b.layout.shape
    # b[i, j] = i + 3 j; a[0, j] = j + 1.
    assert values(r) == [1.0, 2.0, 3.0, 5.0, 6.0, 7.0]
    with pytest.raises(ValueError, match="broadcast-compatible"):
        add(cpu([1.0, 2.0]), cpu([1.0, 2.0, 3.0]))
    inv = add.resolve_call(a, b)
    ga, gb = _call_vjp(VJPContext(inv, (), ()), (cpu([1.0] * 6, [3, 2]),))
    assert values(ga) == [3.0, 3.0] and values(gb) == [1.0] * 6


def test_central_elementwise_mul_relu_reduce_matmul():
    x = cpu([1.0, -2.0, 3.0, -4.0], [2, 2])
    y = cpu([5.0, 6.0, 7.0, 8.0], [2, 2])
    c = cpu([1.0, 1.0, 1.0, 1.0], [2, 2])
    em = _operation_definition("elementwise_mul")
    inv = em.resolve_call(x, y)
    gx, gy = _call_vjp(VJPContext(inv, (), (x, y)), (c,))
    assert values(gx) == values(y) and values(gy) == values(x)
    relu = _operation_definition("relu")
    assert values(relu(x)) == [1.0, 0.0, 3.0, 0.0]
    with pytest.raises(TypeError, match="unknown option"):
        relu(x, accumulator_dtype=DType.Float32)
    inv = relu.resolve_call(x)
    assert values(_call_vjp(VJPContext(inv, (), (x,)), (c,))[0]) == [1.0, 0.0, 1.0, 0.0]
    rs = _operation_definition("reduce_sum")
    assert values(rs(x)) == [4.0, -6.0]
    assert values(rs(x, "a b -> a")) == [4.0, -6.0]
    assert values(rs(x, "a b -> b")) == [-1.0, -1.0]
    with pytest.raises(TypeError, match="accumulator_dtype"):
        rs(cpu([1, 2], [1, 2], dtype=DType.Int32), accumulator_dtype=DType.Float32)
    inv = rs.resolve_call(x)
    (g,) = _call_vjp(VJPContext(inv, (), ()), (cpu([1.0, 2.0]),))
    assert values(g) == [1.0, 2.0, 1.0, 2.0]
    (g,) = _call_vjp(VJPContext(rs.resolve_call(x, "a b -> b"), (), ()), (cpu([1.0, 2.0]),))
    assert values(g) == [1.0, 1.0, 2.0, 2.0]
    mm = _operation_definition("matmul")
    out = mm(x, y)
    assert out.layout == Layout(Shape([2, 2]), Stride([1, 2]))
    inv = mm.resolve_call(x, y)
    ga, gb = _call_vjp(VJPContext(inv, (), (x, y)), (c,))
    # out = X Y^T: dX = C Y, dY = C^T X.
    assert values(ga) == [11.0, 11.0, 15.0, 15.0]
    assert values(gb) == [-1.0, -1.0, -1.0, -1.0]


@pytest.mark.parametrize("name", ["add", "elementwise_mul", "relu", "matmul"])
def test_central_reference_has_the_declared_dtype_and_layout(name):
    d = _operation_definition(name)
    x = cpu([1.0, -2.0, 3.0, -4.0], [2, 2])
    operands = (x,) if name == "relu" else (x, x)
    inv = d.resolve_call(*operands)
    (r,) = _execute_reference(inv)
    assert r.dtype() == inv.results[0].dtype and r.layout == inv.results[0].layout


def test_central_definitions_on_generic():
    g = Generic([1.0, 2.0, 3.0, 4.0])
    x = Tensor(g, 0, Layout(Shape([2, 2]), Stride([1, 2])))
    assert values(_operation_definition("relu")(x)) == [1.0, 2.0, 3.0, 4.0]
    assert values(_operation_definition("reduce_sum")(x)) == [4.0, 6.0]


# -------------------------------------------------------- finite differences


@given(
    st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=6),
    st.floats(-2, 2, allow_nan=False),
)
def test_user_definition_agrees_with_finite_differences(xs, factor):
    x = cpu(xs)
    w = cpu([float(i + 1) for i in range(len(xs))])
    y = SCALE(x, factor=factor)
    y.backward(w)
    h = 1e-2

    def loss(vals):
        with F.no_grad():
            out = SCALE(cpu(vals), factor=factor)
        return sum(a * b for a, b in zip(values(out), values(w), strict=False))

    for i in range(len(xs)):
        up = list(xs)
        down = list(xs)
        up[i] += h
        down[i] -= h
        fd = (loss(up) - loss(down)) / (2 * h)
        assert abs(fd - x.grad[i]) <= 1e-2 * (1 + abs(fd))


# ------------------------------------------------------------- concurrency


def test_defining_on_several_threads_against_lookups():
    prefix = f"conc{next(_names)}"
    errors = []
    stop = threading.Event()

    def definer(k):
        try:
            for i in range(20):
                define_operation(
                    f"{prefix}.t{k}_{i}", SCALE_SCHEMA, scale_resolve, None, NON_DIFFERENTIABLE
                )
                try:
                    define_operation(
                        f"{prefix}.shared", SCALE_SCHEMA, scale_resolve, None, NON_DIFFERENTIABLE
                    )
                except ValueError as e:
                    assert "already defined" in str(e)
        except Exception as e:  # pragma: no cover (reported below)
            errors.append(e)

    def looker():
        while not stop.is_set():
            for k in range(4):
                for i in range(20):
                    try:
                        d = _operation_definition(f"{prefix}.t{k}_{i}")
                    except LookupError:
                        continue
                    if d.name != f"{prefix}.t{k}_{i}":  # pragma: no cover
                        errors.append(d.name)

    threads = [threading.Thread(target=definer, args=(k,)) for k in range(4)]
    lookers = [threading.Thread(target=looker) for _ in range(2)]
    for t in lookers + threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    for t in lookers:
        t.join(timeout=120)
    assert not errors
    for k in range(4):
        for i in range(20):
            assert _operation_definition(f"{prefix}.t{k}_{i}").name == f"{prefix}.t{k}_{i}"
    assert _operation_definition(f"{prefix}.shared")


# ------------------------------------------------------------------- e2e


def test_acme_scale_end_to_end():
    x = cpu([0.5, -1.0, 2.0, 0.25, -0.75, 1.5], [2, 3])
    w = cpu([1.0, 2.0, -1.0, 0.5, 3.0, -2.0], [2, 3])
    y = SCALE(x, factor=1.5)
    assert values(y) == pytest.approx([1.5 * v for v in values(x)])
    assert y.autograd_ctx is not None
    # A chain through a built-in operation after the definition.
    z = F.elementwise_mul(y, w)
    z.backward(cpu([1.0] * 6, [2, 3]))
    assert values(x.grad) == pytest.approx([1.5 * v for v in values(w)])
    assert SCALE(x).autograd_ctx is not None
    assert values(SCALE(x)) == pytest.approx([2.0 * v for v in values(x)])


def test_other_operations_have_no_invocation():
    x = cpu([1.0, -2.0])
    op = F.relu(x).autograd_ctx
    assert op is not None
    assert op._resolved_invocation is None and op._saved_operands == ()
    assert sw.Operation()._resolved_invocation is None
