"""Kernel patterns, packs and definition-backed dispatch (later-api.md section 5).

Checklist:

- 5.1 KernelPattern values: ``test_carrier_extension.test_kernel_values``.
- 5.2 KernelPack values and ``register_kernel_pack``: ``test_pack_rejections``,
  ``test_pack_after_observation``, ``test_rejected_pack_contributes_nothing``,
  ``test_pack_registration_races_observation``.
- 5.3 capability union and selection order: ``test_capability_union``,
  ``test_selection_order``, ``test_every_candidate_rejects``,
  ``test_exception_is_terminal``, ``test_prepare_gets_provider_interface``,
  ``test_prepare_and_submit_return_types``.
- 5.4 the pipeline: ``test_released_and_storage_only``, ``test_no_kernel``,
  ``test_completion_waited_once``, ``test_completion_failure``,
  ``test_contract_errors`` (count, dtype, layout, size, carrier role, aliases,
  unauthorized operand), ``test_rollback_after_failure``,
  ``test_declared_mutation_bumps_once``, ``test_one_node_per_output``,
  ``test_builtin_autograd``, ``test_builtin_binary_on_mixed_layouts``,
  ``test_profiler_one_event``.
- 5.5 typical extension use: ``test_e2e_optimized_and_reference``
  (and ``examples/custom_compute.py`` in test_examples),
  ``test_composite_results_on_compute_class``.
- 4.5 definition-backed DependentCarrier: ``test_composite_finalization``,
  ``test_composite_snapshots_per_instance``, ``test_composite_result_carriers``,
  ``test_composite_refusals``.
"""

from __future__ import annotations

import threading

import pytest
import strideweave as sw
from strideweave.carriers import extension as E
from strideweave.carriers.operation_capability import (
    OperationCapability,
    capabilities_for_carrier_class,
)
from strideweave.carriers.operation_policy import OperandRole, OperationPlan, resolve_operation_plan
from strideweave.operation_definition import (
    NON_DIFFERENTIABLE,
    OperandKind,
    OperandSpec,
    OperationSchema,
    OptionSpec,
    ProviderContractError,
    ResolvedInvocation,
    ResultSpec,
    _operation_definition,
    define_operation,
)

F32 = sw.DType.Float32
I32 = sw.DType.Int32
RELU = _operation_definition("relu")
IFACE = E.KernelExecutionInterface("1")


def storage(*, dtypes=(F32, I32)):
    return E.StorageProvider(
        supports_dtype=lambda c, d: d in dtypes,
        physical_size=lambda c: len(c.values),
        allocate=lambda c, n: setattr(c, "values", [0] * n),
        release=lambda c: setattr(c, "values", []),
        read=lambda c, i: c.values[i],
        write=lambda c, i, v: c.values.__setitem__(i, v),
    )


def plan_of(name, *dtypes):
    return OperationCapability.from_plan(resolve_operation_plan(name, *dtypes))


def relu_values(x, layout):
    """A fresh tensor of x's class holding relu(x) under layout."""
    out = sw.Tensor(x.carrier.allocate_like(layout.cosize), 0, layout)
    for i in range(x.layout.size):
        out[i] = max(x[i], 0)
    return out


def relu_kernel(kid, log=None, *, refuse=None, interface=None, preference=0, dtype=F32, **kw):
    """A relu pattern: refuse(inv) -> reason or None; submit computes relu."""

    def prepare(inv, iface):
        if log is not None:
            log.append(kid)
        reason = refuse(inv) if refuse else None
        if reason:
            return E.Unsupported(reason)
        x = inv.operands[0]
        return E.PreparedKernel(
            interface or iface,
            kw.get("submit") or (lambda: E.ProviderResult([relu_values(x, inv.results[0].layout)])),
        )

    return E.KernelPattern(RELU, [plan_of("relu", dtype)], kid, prepare, preference)


def compute_class(name, patterns=(), packs=(), interface=IFACE):
    cls = type(name, (sw.Carrier,), {})
    E.register_carrier_definition(
        cls, E.CarrierDefinition(storage(), kernels=E.KernelProvider(interface, patterns))
    )
    for ns, ver, pats in packs:
        E.register_kernel_pack(E.KernelPack(ns, ver, cls, interface, pats))
    return cls


def tensor(cls, values, dtype=F32):
    c = cls(len(values), dtype=dtype).new_like(values, mutable=True)
    assert c.version == 0
    return sw.Tensor(c, 0, sw.Layout.leaf(len(values), 1))


def values_of(t):
    return [t[i] for i in range(t.layout.size)]


# ------------------------------------------------------------------ 5.2


def test_pack_rejections():
    cls = compute_class("PackTarget")
    pattern = relu_kernel("k")
    for target in (sw.CPU, sw.Generic, type("Undefined", (sw.Carrier,), {})):
        with pytest.raises(TypeError, match="exact CarrierDefinition"):
            E.register_kernel_pack(E.KernelPack("acme", "1", target, IFACE, [pattern]))
    sub = type("PackSub", (cls,), {})
    with pytest.raises(TypeError, match="exact CarrierDefinition"):
        E.register_kernel_pack(E.KernelPack("acme", "1", sub, IFACE, [pattern]))
    storage_only = type("PackStorageOnly", (sw.Carrier,), {})
    E.register_carrier_definition(storage_only, E.CarrierDefinition(storage()))
    with pytest.raises(TypeError, match="exact CarrierDefinition"):
        E.register_kernel_pack(E.KernelPack("acme", "1", storage_only, IFACE, [pattern]))
    dep = type("PackDep", (sw.DependentCarrier,), {})
    with pytest.raises(TypeError, match="DependentCarrier"):
        E.register_kernel_pack(E.KernelPack("acme", "1", dep, IFACE, [pattern]))
    with pytest.raises(TypeError, match="does not match"):
        E.register_kernel_pack(
            E.KernelPack("acme", "1", cls, E.KernelExecutionInterface("2"), [pattern])
        )

    class OtherInterface(E.KernelExecutionInterface):
        pass

    with pytest.raises(TypeError, match="does not match"):
        E.register_kernel_pack(E.KernelPack("acme", "1", cls, OtherInterface("1"), [pattern]))
    with pytest.raises(TypeError):
        E.register_kernel_pack("not a pack")
    E.register_kernel_pack(
        E.KernelPack("acme", "1", cls, E.KernelExecutionInterface("1"), [pattern])
    )
    with pytest.raises(ValueError, match="namespace and version"):
        E.register_kernel_pack(E.KernelPack("acme", "1", cls, IFACE, [relu_kernel("k2")]))
    with pytest.raises(ValueError, match="kernel_id"):
        E.register_kernel_pack(E.KernelPack("acme", "2", cls, IFACE, [relu_kernel("k")]))
    assert E._definition_kernel_patterns(cls) == ("k",)


def test_pack_after_observation():
    cls = compute_class("PackLate")
    cls(1, dtype=F32)
    with pytest.raises(TypeError, match="already observed"):
        E.register_kernel_pack(E.KernelPack("acme", "1", cls, IFACE, [relu_kernel("k")]))
    queried = compute_class("PackQueried")
    capabilities_for_carrier_class(queried)
    with pytest.raises(TypeError, match="already observed"):
        E.register_kernel_pack(E.KernelPack("acme", "1", queried, IFACE, [relu_kernel("k")]))


def test_rejected_pack_contributes_nothing():
    cls = compute_class("PackRejected", [relu_kernel("base")])
    bad = E.KernelPack("acme", "1", cls, IFACE, [relu_kernel("fresh"), relu_kernel("base")])
    with pytest.raises(ValueError, match="kernel_id"):
        E.register_kernel_pack(bad)
    assert E._definition_kernel_patterns(cls) == ("base",)
    E.register_kernel_pack(E.KernelPack("acme", "1", cls, IFACE, [relu_kernel("fresh")]))
    assert E._definition_kernel_patterns(cls) == ("base", "fresh")


def _race_round(name):
    cls = compute_class(name, [relu_kernel("base", dtype=F32)])
    start = threading.Barrier(2)
    outcome = {}

    def register():
        start.wait()
        try:
            E.register_kernel_pack(
                E.KernelPack("acme", "1", cls, IFACE, [relu_kernel("ints", dtype=I32)])
            )
            outcome["registered"] = True
        except TypeError as e:
            assert "already observed" in str(e)
            outcome["registered"] = False

    def observe():
        start.wait()
        outcome["caps"] = capabilities_for_carrier_class(cls)

    threads = [threading.Thread(target=register), threading.Thread(target=observe)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcome


def test_pack_registration_races_observation():
    for round_ in range(20):
        outcome = _race_round(f"PackRace{round_}")
        # Either the observer saw the pack, or the registration failed.
        assert (len(outcome["caps"]) == 2) == outcome["registered"]


# ------------------------------------------------------------------ 5.3


def test_capability_union():
    cls = compute_class(
        "Union",
        [relu_kernel("a")],
        [("acme", "1", [relu_kernel("b"), relu_kernel("ints", dtype=I32)])],
    )
    caps = capabilities_for_carrier_class(cls)
    assert len(caps) == 2  # Float32 relu once, Int32 relu from the pack
    c = cls(1, dtype=I32)
    assert c.supports_operation_plan(resolve_operation_plan("relu", I32))
    assert not c.supports_operation_plan(resolve_operation_plan("exp", F32))
    y = sw.relu(tensor(cls, [-2, 3], I32))
    assert y.dtype() is I32 and values_of(y) == [0, 3]


def test_selection_order():
    log = []
    no = lambda inv: "no"  # noqa: E731
    cls = compute_class(
        "Order",
        [relu_kernel("builtin", log, refuse=no)],
        [
            ("zeta", "1", [relu_kernel("zeta", log)]),
            ("alpha", "1", [relu_kernel("alpha", log, refuse=no)]),
        ],
    )
    assert E._definition_kernel_patterns(cls) == ("builtin", "alpha", "zeta")
    y = sw.relu(tensor(cls, [-1.0, 2.0]))
    assert log == ["builtin", "alpha", "zeta"] and values_of(y) == [0.0, 2.0]
    assert type(y.carrier) is cls

    log.clear()
    pref = compute_class(
        "Preferred",
        [relu_kernel("low", log)],
        [("p", "1", [relu_kernel("high", log, preference=10)])],
    )
    sw.relu(tensor(pref, [1.0]))
    assert log == ["high"]


def test_every_candidate_rejects():
    cls = compute_class(
        "Rejecting",
        [
            relu_kernel("first", refuse=lambda inv: "alignment"),
            relu_kernel("second", refuse=lambda inv: "shape"),
        ],
    )
    with pytest.raises(NotImplementedError, match="first: alignment; second: shape"):
        sw.relu(tensor(cls, [1.0]))


def test_exception_is_terminal():
    log = []

    def boom(inv):
        log.append("boom")
        raise KeyError("provider bug")

    cls = compute_class("Terminal", [relu_kernel("boom", refuse=boom), relu_kernel("next", log)])
    x = tensor(cls, [1.0])
    with pytest.raises(KeyError, match="provider bug"):
        sw.relu(x)
    assert log == ["boom"]
    assert x.autograd_ctx is None and x.carrier.version == 0


def test_prepare_gets_provider_interface():
    seen = []
    iface = E.KernelExecutionInterface("7")

    def prepare(inv, interface):
        seen.append(interface)
        return E.PreparedKernel(
            interface,
            lambda: E.ProviderResult([relu_values(inv.operands[0], inv.results[0].layout)]),
        )

    pack_iface = E.KernelExecutionInterface("7")
    cls = type("IfaceExact", (sw.Carrier,), {})
    E.register_carrier_definition(
        cls, E.CarrierDefinition(storage(), kernels=E.KernelProvider(iface))
    )
    pattern = E.KernelPattern(RELU, [plan_of("relu", F32)], "k", prepare)
    E.register_kernel_pack(E.KernelPack("acme", "1", cls, pack_iface, [pattern]))
    sw.relu(tensor(cls, [1.0]))
    assert seen == [iface] and seen[0] is iface

    other = compute_class(
        "IfaceOther", [relu_kernel("k", interface=E.KernelExecutionInterface("9"))]
    )
    with pytest.raises(TypeError, match="interface"):
        sw.relu(tensor(other, [1.0]))


def test_prepare_and_submit_return_types():
    bad_prepare = E.KernelPattern(RELU, [plan_of("relu", F32)], "k", lambda inv, i: object())
    cls = compute_class("BadPrepare", [bad_prepare])
    with pytest.raises(TypeError, match="prepare"):
        sw.relu(tensor(cls, [1.0]))

    def tensor_submit(inv):
        return relu_values(inv.operands[0], inv.results[0].layout)

    x_holder = {}
    cls2 = compute_class(
        "TensorSubmit",
        [relu_kernel("k", submit=lambda: tensor_submit(x_holder["inv"]))],
    )
    x = tensor(cls2, [1.0])
    x_holder["inv"] = RELU.resolve_call(x)
    with pytest.raises(TypeError, match="completion"):
        sw.relu(x)


# ------------------------------------------------------------------ 5.4


def test_released_and_storage_only():
    cls = compute_class("Released", [relu_kernel("k")])
    x = tensor(cls, [1.0])
    x.carrier.release()
    with pytest.raises(RuntimeError, match="released"):
        sw.relu(x)
    with pytest.raises(RuntimeError, match="^Released is released$"):
        x.carrier.dispatch_op("no such operation")
    plain = type("PlainStore", (sw.Carrier,), {})
    E.register_carrier_definition(plain, E.CarrierDefinition(storage()))
    with pytest.raises(NotImplementedError, match="storage-only"):
        sw.relu(tensor(plain, [1.0]))
    assert plain(1, dtype=F32).operation_capabilities() == ()


def test_no_kernel():
    cls = compute_class("NoKernel", [relu_kernel("k", dtype=I32)])
    with pytest.raises(NotImplementedError, match="no kernel"):
        sw.relu(tensor(cls, [1.0]))
    with pytest.raises(NotImplementedError, match="no kernel"):
        sw.exp(tensor(cls, [1.0]))


class Completion:
    def __init__(self, result=None, error=None):
        self.result, self.error, self.waits = result, error, 0

    @property
    def done(self):
        return True

    def wait(self):
        self.waits += 1
        if self.error is not None:
            raise self.error
        return self.result


def test_completion_waited_once():
    made = []

    def prepare(inv, iface):
        def submit():
            made.append(
                Completion(E.ProviderResult([relu_values(inv.operands[0], inv.results[0].layout)]))
            )
            return made[-1]

        return E.PreparedKernel(iface, submit)

    cls = compute_class("Completing", [E.KernelPattern(RELU, [plan_of("relu", F32)], "k", prepare)])
    y = sw.relu(tensor(cls, [-1.0, 1.0]))
    assert values_of(y) == [0.0, 1.0] and made[0].waits == 1


def test_completion_failure():
    def prepare(inv, iface):
        return E.PreparedKernel(
            iface, lambda: Completion(error=RuntimeError("terminal provider failure"))
        )

    cls = compute_class("Failing", [E.KernelPattern(RELU, [plan_of("relu", F32)], "k", prepare)])
    with pytest.raises(RuntimeError, match="terminal provider failure"):
        sw.relu(tensor(cls, [1.0]))

    def not_a_result(inv, iface):
        return E.PreparedKernel(iface, lambda: Completion(result=object()))

    cls2 = compute_class(
        "NotAResult", [E.KernelPattern(RELU, [plan_of("relu", F32)], "k", not_a_result)]
    )
    with pytest.raises(TypeError, match="completion"):
        sw.relu(tensor(cls2, [1.0]))


def test_contract_errors():
    other = compute_class("OtherRole", [relu_kernel("k")])

    def result_for(kind, inv):
        x = inv.operands[0]
        layout = inv.results[0].layout
        if kind == "count":
            return E.ProviderResult([relu_values(x, layout), relu_values(x, layout)])
        if kind == "dtype":
            c = x.carrier.allocate_like(layout.cosize, dtype=I32)
            return E.ProviderResult([sw.Tensor(c, 0, layout)])
        if kind == "layout":
            c = x.carrier.allocate_like(layout.cosize + 1)
            return E.ProviderResult(
                [
                    sw.Tensor(
                        c,
                        0,
                        sw.Layout.leaf(layout.size, 1) if layout.size > 1 else sw.Layout.leaf(2, 1),
                    )
                ]
            )
        if kind == "size":
            c = x.carrier.allocate_like(layout.cosize + 3)
            return E.ProviderResult([sw.Tensor(c, 0, layout)])
        if kind == "carrier role":
            return E.ProviderResult([sw.Tensor(other(layout.cosize, dtype=F32), 0, layout)])
        if kind == "aliases":
            return E.ProviderResult([x])
        if kind == "unauthorized operand":
            x.carrier[0] = 42.0
            return E.ProviderResult([relu_values(x, layout)])
        raise AssertionError(kind)

    for kind in (
        "count",
        "dtype",
        "layout",
        "size",
        "carrier role",
        "aliases",
        "unauthorized operand",
    ):

        def prepare(inv, iface, kind=kind):
            return E.PreparedKernel(iface, lambda: result_for(kind, inv))

        cls = compute_class(
            "Contract" + kind.title().replace(" ", ""),
            [E.KernelPattern(RELU, [plan_of("relu", F32)], "k", prepare)],
        )
        x = tensor(cls, [-1.0, 2.0, -3.0])
        if kind == "layout":
            x = sw.Tensor(x.carrier, 0, sw.Layout.leaf(1, 1))
        with pytest.raises(ProviderContractError, match=kind):
            sw.relu(x)
        assert x.carrier.values[0] == -1.0, kind
        assert x.carrier.version == 0, kind
        assert x.autograd_ctx is None


def test_rollback_after_failure():
    def prepare(inv, iface):
        x = inv.operands[0]

        def submit():
            x.carrier[0] = 100.0
            x.carrier[1] = 200.0
            raise RuntimeError("device lost")

        return E.PreparedKernel(iface, submit)

    cls = compute_class("Rollback", [E.KernelPattern(RELU, [plan_of("relu", F32)], "k", prepare)])
    x = tensor(cls, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="device lost"):
        sw.relu(x)
    assert x.carrier.values == [1.0, 2.0] and x.carrier.version == 0
    assert x.autograd_ctx is None


def scale_definition(name, *, in_place=False):
    """acme.scale(x, factor=..., tag=...): x * factor (in place when asked)."""

    def resolve(call):
        (x,) = call.operands
        op_plan = _unary_plan(name, x.dtype())
        spec = ResultSpec(x.dtype(), x.layout.shape, x.layout, alias_of=0 if in_place else None)
        return ResolvedInvocation(call, op_plan, (spec,), (0,) if in_place else (), ())

    def reference(inv):
        (x,) = inv.operands
        factor = inv.call.options["factor"]
        if in_place:
            for i in range(x.layout.size):
                x[i] = x[i] * factor
            return x
        out = sw.Tensor(x.carrier.allocate_like(x.layout.cosize), 0, x.layout)
        for i in range(x.layout.size):
            out[i] = x[i] * factor
        return out

    def vjp(ctx, cot):
        (c,) = cot
        factor = ctx.invocation.call.options["factor"]
        out = sw.Tensor(c.carrier.allocate_like(c.layout.cosize), 0, c.layout)
        for i in range(c.layout.size):
            out[i] = c[i] * factor
        return (out,)

    schema = OperationSchema(
        (OperandSpec("x", OperandKind.TENSOR, not in_place),),
        (OptionSpec("factor", 2.0), OptionSpec("tag", None)),
    )
    return define_operation(
        name, schema, resolve, reference, NON_DIFFERENTIABLE if in_place else vjp
    )


def _unary_plan(name, dtype):
    from strideweave.carriers.operation_policy import Arithmetic, OperandPlan

    return OperationPlan(
        name,
        (OperandPlan(OperandRole.TENSOR, dtype, dtype),),
        Arithmetic.BINARY32,
        None,
        None,
        dtype,
    )


def reference_pattern(definition, kid="ref", preference=0, refuse=None):
    def prepare(inv, iface):
        if refuse and refuse(inv):
            return E.Unsupported(refuse(inv))
        return E.PreparedKernel(iface, lambda: E.ProviderResult([inv.definition.reference(inv)]))

    plan = OperationCapability.from_plan(_unary_plan(definition.name, F32))
    return E.KernelPattern(definition, [plan], kid, prepare, preference)


def test_declared_mutation_bumps_once():
    scale_ = scale_definition("kerneltest.scale_", in_place=True)
    cls = compute_class("InPlace", [reference_pattern(scale_)])
    x = tensor(cls, [1.0, 2.0, 3.0])
    r = scale_(x, factor=3.0)
    assert r is x
    assert values_of(x) == [3.0, 6.0, 9.0]
    assert x.carrier.version == 1  # three writes, one declared mutation


def test_one_node_per_output():
    def resolve(call):
        (x,) = call.operands
        spec = ResultSpec(F32, x.layout.shape, x.layout)
        return ResolvedInvocation(call, _unary_plan("kerneltest.split", F32), (spec, spec), (), ())

    def reference(inv):
        (x,) = inv.operands
        a = sw.Tensor(x.carrier.allocate_like(x.layout.cosize), 0, x.layout)
        b = sw.Tensor(x.carrier.allocate_like(x.layout.cosize), 0, x.layout)
        for i in range(x.layout.size):
            a[i] = x[i] * 2
            b[i] = x[i] * 3
        return (a, b)

    def vjp(ctx, cot):
        ca, cb = cot
        like = ca if ca is not None else cb
        out = sw.Tensor(like.carrier.allocate_like(like.layout.cosize), 0, like.layout)
        for i in range(like.layout.size):
            out[i] = (ca[i] * 2 if ca is not None else 0) + (cb[i] * 3 if cb is not None else 0)
        return (out,)

    schema = OperationSchema((OperandSpec("x", OperandKind.TENSOR, True),), ())
    split = define_operation("kerneltest.split", schema, resolve, reference, vjp)
    plan = OperationCapability.from_plan(_unary_plan("kerneltest.split", F32))

    def prepare(inv, iface):
        return E.PreparedKernel(iface, lambda: E.ProviderResult(inv.definition.reference(inv)))

    cls = compute_class("Split", [E.KernelPattern(split, [plan], "split", prepare)])
    x = tensor(cls, [1.0, -1.0])
    a, b = split(x)
    assert type(a.carrier) is cls and type(b.carrier) is cls
    assert a.autograd_ctx is not b.autograd_ctx
    for node in (a.autograd_ctx, b.autograd_ctx):
        assert node._dispatch_carrier_class is cls
        assert node._operation_name == "kerneltest.split"
    ones = sw.Tensor(x.carrier.new_like([1.0, 1.0]), 0, x.layout)
    b.backward(ones)
    assert values_of(x.grad) == [3.0, 3.0]  # output k only: None for the other


def test_builtin_autograd():
    cls = compute_class("Grad", [relu_kernel("k")])
    x = tensor(cls, [-1.0, 2.0, -3.0, 4.0])
    y = sw.relu(x)
    assert y.autograd_ctx is not None
    y.backward(sw.Tensor(x.carrier.new_like([1.0] * 4), 0, x.layout))
    assert type(x.grad.carrier) is cls
    assert values_of(x.grad) == [0.0, 1.0, 0.0, 1.0]
    with sw.no_grad():
        assert sw.relu(x).autograd_ctx is None


ADD = _operation_definition("add")


def add_kernel():
    """An add pattern over logical indices, whatever the operands' layouts."""

    def prepare(inv, iface):
        a, b = inv.operands[0], inv.operands[1]
        layout = inv.results[0].layout

        def submit():
            out = sw.Tensor(a.carrier.allocate_like(layout.cosize), 0, layout)
            for i in range(layout.size):
                out[i] = a[i] + b[i]
            return E.ProviderResult([out])

        return E.PreparedKernel(iface, submit)

    return E.KernelPattern(ADD, [plan_of("add", F32, F32)], "add", prepare)


def test_builtin_binary_on_mixed_layouts():
    cls = compute_class("Mixed", [add_kernel()])
    col = sw.Layout(sw.Shape(2, 3), sw.Stride(1, 2))
    row = sw.Layout(sw.Shape(2, 3), sw.Stride(3, 1))
    a = sw.Tensor(cls(6, dtype=F32).new_like([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]), 0, col)
    b = sw.Tensor(cls(6, dtype=F32).new_like([0.0, 10.0, 20.0, 30.0, 40.0, 50.0]), 0, row)
    # two instances of one class, column-major plus row-major: the first's layout
    y = sw.add(a, b)
    assert y.layout == col and type(y.carrier) is cls
    assert y.tolist() == [[a.tolist()[r][c] + b.tolist()[r][c] for c in range(3)] for r in range(2)]
    assert sw.add(b, a).layout == row
    # a first operand that is not compact (a broadcast row): compact column-major
    bcast = sw.Tensor(a.carrier, 0, sw.Layout(sw.Shape(2, 3), sw.Stride(0, 1)))
    z = sw.add(bcast, b)
    assert z.layout == col
    assert z.tolist() == [
        [bcast.tolist()[r][c] + b.tolist()[r][c] for c in range(3)] for r in range(2)
    ]
    # the central definition declares the same result layouts
    central = _operation_definition("elementwise_mul").resolve_call(bcast, b)
    assert central.results[0].layout == col
    assert _operation_definition("add").resolve_call(a, b).results[0].layout == col
    # gradients reach both operands in their own layouts
    y.backward(sw.Tensor(cls(6, dtype=F32).new_like([1.0] * 6), 0, col))
    assert a.grad.layout == col and b.grad.layout == row
    assert values_of(a.grad) == [1.0] * 6 and values_of(b.grad) == [1.0] * 6
    other = sw.Tensor(cls(4, dtype=F32).new_like([1.0] * 4), 0, sw.Layout.leaf(4, 1))
    with pytest.raises(ValueError, match="add operands must have the same shape"):
        sw.add(a, other)


def test_profiler_one_event():
    cls = compute_class("Profiled", [relu_kernel("k")])
    x = tensor(cls, [-1.0, 2.0])
    with sw.profile(record_shapes=True) as prof:
        sw.relu(x)
    events = prof.events()
    assert len(events) == 1
    e = events[0]
    assert e.name == "relu" and e.carrier_type is cls and e.succeeded


# ------------------------------------------------------------------ 5.5


def test_e2e_optimized_and_reference():
    scale = scale_definition("kerneltest.scale")
    log = []

    def only_even(inv):
        log.append("optimized")
        return None if inv.operands[0].layout.size % 2 == 0 else "odd length"

    cls = type("Accel", (sw.Carrier,), {})
    E.register_carrier_definition(
        cls, E.CarrierDefinition(storage(), kernels=E.KernelProvider(IFACE))
    )
    E.register_kernel_pack(
        E.KernelPack(
            "accel",
            "1",
            cls,
            IFACE,
            [
                reference_pattern(scale, "optimized", 10, refuse=lambda inv: only_even(inv)),
                reference_pattern(scale, "reference"),
            ],
        )
    )
    c = cls(1, dtype=F32)
    assert c.supports_operation_plan(_unary_plan("kerneltest.scale", F32))
    x = tensor(cls, [1.0, 2.0, 3.0])
    y = scale(x, factor=2.0, tag=7)
    assert values_of(y) == [2.0, 4.0, 6.0] and type(y.carrier) is cls
    assert y.autograd_ctx._dispatch_carrier_class is cls
    y.backward(sw.Tensor(x.carrier.new_like([1.0] * 3), 0, x.layout))
    assert values_of(x.grad) == [2.0, 2.0, 2.0]
    # On CPU the same definition runs its reference.
    cpu = sw.Tensor(sw.CPU(2), 0, sw.Layout.leaf(2, 1))
    assert values_of(scale(cpu)) == [0.0, 0.0]


# ------------------------------------------------------------ 4.5 / 5.5


def composite_class(name, compute, *, caps=None, result_carriers=None, refuse=None, log=None):
    """A DependentCarrier whose composite computes relu onto compute."""
    cls = type(name, (sw.DependentCarrier,), {})

    def capabilities(carrier):
        if log is not None:
            log.append("capabilities")
        return iter(caps(carrier) if caps else [plan_of("relu", F32)])

    def results(carrier, inv):
        return result_carriers(carrier, inv) if result_carriers else (compute,)

    def prepare(carrier, inv):
        if refuse:
            return E.Unsupported(refuse)
        x = inv.operands[0]
        layout = inv.results[0].layout

        def submit():
            out = sw.Tensor(compute(layout.cosize, dtype=F32), 0, layout)
            for i in range(layout.size):
                out[i] = max(x[i], 0.0)
            return E.ProviderResult([out])

        return E.PreparedComposite(submit)

    E.register_carrier_definition(
        cls,
        E.CarrierDefinition(
            storage(), composite=E.CompositeProvider(capabilities, results, prepare)
        ),
    )
    return cls


def dependent_tensor(cls, values):
    c = cls(len(values), dtype=F32)
    for i, v in enumerate(values):
        c[i] = v
    return sw.Tensor(c, 0, sw.Layout.leaf(len(values), 1))


def test_composite_finalization():
    log = []
    compute = compute_class("TileCompute", [relu_kernel("k")])
    cls = composite_class("Tiles", compute, log=log)
    x = dependent_tensor(cls, [-1.0, 2.0])
    with pytest.raises(RuntimeError, match="has not finalized"):
        x.carrier.operation_capabilities()
    with pytest.raises(RuntimeError, match="has not finalized"):
        sw.relu(x)
    x.carrier._finalize_dependent_capabilities()
    assert log == ["capabilities"]
    with pytest.raises(RuntimeError, match="already finalized"):
        x.carrier._finalize_dependent_capabilities()
    assert log == ["capabilities"]
    assert x.carrier.supports_operation_plan(resolve_operation_plan("relu", F32))
    assert len(x.carrier.operation_capabilities()) == 1
    bad = composite_class("BadTiles", compute, caps=lambda c: [3])
    b = bad(1, dtype=F32)
    with pytest.raises(TypeError, match="must be OperationCapability entries"):
        b._finalize_dependent_capabilities()
    with pytest.raises(RuntimeError, match="has not finalized"):
        b.operation_capabilities()
    dup = composite_class("DupTiles", compute, caps=lambda c: [plan_of("relu", F32)] * 2)
    with pytest.raises(ValueError, match="generated two capabilities"):
        dup(1, dtype=F32)._finalize_dependent_capabilities()


def test_composite_snapshots_per_instance():
    compute = compute_class("SnapCompute", [relu_kernel("k")])
    cls = composite_class(
        "SnapTiles",
        compute,
        caps=lambda c: [plan_of("relu", F32)] if c.size() > 1 else [plan_of("exp", F32)],
    )
    a, b = cls(2, dtype=F32), cls(1, dtype=F32)
    a._finalize_dependent_capabilities()
    b._finalize_dependent_capabilities()
    relu = resolve_operation_plan("relu", F32)
    assert a.supports_operation_plan(relu) and not b.supports_operation_plan(relu)


def test_composite_results_on_compute_class():
    compute = compute_class("ResultCompute", [relu_kernel("k")])
    cls = composite_class("ResultTiles", compute)
    x = dependent_tensor(cls, [-1.0, 2.0, -3.0])
    x.carrier._finalize_dependent_capabilities()
    y = sw.relu(x)
    assert type(y.carrier) is compute and values_of(y) == [0.0, 2.0, 0.0]
    with sw.profile() as prof:
        sw.relu(x)
    assert [(e.name, e.carrier_type) for e in prof.events()] == [("relu", cls)]


def test_composite_result_carriers():
    compute = compute_class("RoleCompute", [relu_kernel("k")])
    cases = [
        (lambda c, inv: [compute], TypeError, "tuple"),
        (lambda c, inv: (int,), TypeError, "concrete Carrier"),
        (lambda c, inv: (sw.Carrier,), TypeError, "concrete Carrier"),
        (lambda c, inv: (compute, compute), ValueError, "2 classes for 1 results"),
        (lambda c, inv: (sw.CPU,), ProviderContractError, "carrier role"),
    ]
    for i, (rc, exc, match) in enumerate(cases):
        cls = composite_class(f"RoleTiles{i}", compute, result_carriers=rc)
        x = dependent_tensor(cls, [1.0])
        x.carrier._finalize_dependent_capabilities()
        with pytest.raises(exc, match=match):
            sw.relu(x)


def test_composite_refusals():
    compute = compute_class("RefuseCompute", [relu_kernel("k")])
    cls = composite_class("RefuseTiles", compute, refuse="tile footprint")
    x = dependent_tensor(cls, [1.0])
    x.carrier._finalize_dependent_capabilities()
    with pytest.raises(NotImplementedError, match="tile footprint"):
        sw.relu(x)
    with pytest.raises(NotImplementedError, match="does not support"):
        sw.exp(x)
    with pytest.raises(TypeError, match="forbids kernels"):
        dep = type("KernelTiles", (sw.DependentCarrier,), {})
        fn = lambda *a: ()  # noqa: E731
        E.register_carrier_definition(
            dep,
            E.CarrierDefinition(
                storage(),
                kernels=E.KernelProvider(IFACE),
                composite=E.CompositeProvider(fn, fn, fn),
            ),
        )
