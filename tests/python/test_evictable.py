"""The Evictable carrier and EvictableOperation: construction, tier ownership,
residency transitions, refusals while evicted, operations and autograd
through the adapter, and failure injection during transitions."""

import gc
import math
import os
import re
from pathlib import Path

import pytest
import strideweave as sw
from helpers_carriers import L, ListCarrier, flat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strideweave import (
    CPU,
    DType,
    Evictable,
    EvictableOperation,
    FileBacked,
    Generic,
    Operation,
    Tensor,
    _native,
)

EVICTED = "Evictable carrier is evicted; call promote() first"
OWNED_DIRECT = "Carrier is owned by another carrier and cannot be modified directly"
OWNED_EVICT = "Evictable carrier is owned by another carrier and cannot be modified directly"
VALUES = [1.0, -2.0, 3.5, 4.0]


def exact(message):
    """A pattern matching exactly message."""
    return "^" + re.escape(message) + "$"


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    # FileBacked temporaries go to a directory of this test.
    monkeypatch.setenv("TMPDIR", str(tmp_path))


def cpu(values):
    return CPU(0).new_like(values)


def gen_pair(values=VALUES, secondary=()):
    return Generic(list(values)), Generic(list(secondary))


# Tier pairs for round trips: (name, make primary, make secondary).
PAIRS = {
    "Generic/Generic": (lambda: Generic(list(VALUES)), lambda: Generic([])),
    "Generic/Generic sized": (lambda: Generic(list(VALUES)), lambda: Generic([0.0] * 6)),
    "CPU/CPU": (lambda: cpu(VALUES), lambda: CPU(0)),
    "CPU/FileBacked": (lambda: cpu(VALUES), lambda: FileBacked(dtype=DType.Float32)),
    "Generic/FileBacked": (lambda: Generic(list(VALUES)), lambda: FileBacked()),
    "FileBacked/CPU": (
        lambda: FileBacked(dtype=DType.Float32).new_like(VALUES),
        lambda: CPU(0),
    ),
    "python/Generic": (lambda: ListCarrier(VALUES, dtype=DType.Floating), lambda: Generic([])),
}


# ------------------------------------------------------------ construction


def test_construction_checks_in_order():
    a, b = gen_pair()
    with pytest.raises(TypeError, match="^primary must be a Carrier instance$"):
        Evictable(1, b)
    with pytest.raises(TypeError, match="^primary must be a Carrier instance$"):
        Evictable(Generic, b)
    with pytest.raises(TypeError, match="^secondary must be a Carrier instance$"):
        Evictable(a, None)
    with pytest.raises(ValueError, match="^primary and secondary must be distinct carriers$"):
        Evictable(a, a)
    released = Generic([1.0])
    released.release()
    with pytest.raises(RuntimeError, match="^primary carrier is released$"):
        Evictable(released, released.new_like([]))
    with pytest.raises(RuntimeError, match="^secondary carrier is released$"):
        Evictable(a, released)
    x, y = gen_pair()
    held = Evictable(x, y)
    with pytest.raises(RuntimeError, match="^primary carrier is already owned by another carrier$"):
        Evictable(x, b)
    with pytest.raises(
        RuntimeError, match="^secondary carrier is already owned by another carrier$"
    ):
        Evictable(a, y)
    with pytest.raises(TypeError, match="^primary and secondary dtypes must match$"):
        Evictable(cpu([1.0]), b)
    with pytest.raises(RuntimeError, match="^secondary carrier must be mutable$"):
        Evictable(a, Generic([], mutable=False))
    with pytest.raises(ValueError, match="^primary carrier must contain at least one element$"):
        Evictable(Generic([]), b)
    assert not a.is_owned() and not b.is_owned()
    assert held.primary is x


def test_positional_arguments_only():
    a, b = gen_pair()
    with pytest.raises(TypeError):
        Evictable(primary=a, secondary=b)
    with pytest.raises(TypeError):
        Evictable(a)
    assert not a.is_owned()


def test_owned_tiers_are_guarded_but_readable():
    a, b = gen_pair(secondary=[0.0])
    e = Evictable(a, b)
    assert e.primary is a and e.secondary is b
    assert e.size() == 4 and e.dtype() is DType.Floating
    assert e.is_mutable() and not e.is_evicted()
    for tier in (a, b):
        assert tier.is_owned()
        assert not tier.is_mutable()
        with pytest.raises(RuntimeError, match="^Carrier is not mutable$"):
            tier[0] = 9.0
        with pytest.raises(RuntimeError, match=f"^{OWNED_DIRECT}$"):
            tier.release()
        with pytest.raises(RuntimeError, match=f"^{OWNED_DIRECT}$"):
            tier._increment_version()
        with pytest.raises(RuntimeError, match="^Carrier is not mutable$"):
            tier.scatter(Tensor(Generic([1.0]), 0, flat(1)), Tensor(tier, 0, flat(1)), flat(1))
        with pytest.raises(RuntimeError, match="^Carrier is already owned by another carrier$"):
            tier._claim_ownership()
    assert a[1] == -2.0 and list(a) == VALUES
    assert not a.is_released()


def test_writes_through_the_hierarchy():
    a, b = gen_pair()
    e = Evictable(a, b)
    e[0] = 2.0
    assert e.version == 1 and a.version == 1
    assert a[0] == 2.0 and e[0] == 2.0
    e.set_value(1, 5.0)
    assert e.version == 2 and e.get_value(1) == 5.0
    with pytest.raises(IndexError, match="^Carrier index out of range$"):
        e[4] = 1.0
    with pytest.raises(IndexError, match="^Carrier index out of range$"):
        e[-1]
    cpu_e = Evictable(cpu([0.0, 0.0]), CPU(0))
    cpu_e[1] = 3
    assert cpu_e[1] == 3.0 and isinstance(cpu_e[1], float)


def test_immutable_hierarchy():
    e = Evictable(Generic([1.0], mutable=False), Generic([]))
    assert not e.is_mutable()
    with pytest.raises(RuntimeError, match="^Carrier is not mutable$"):
        e[0] = 2.0
    e.evict()
    e.promote()
    assert not e.is_mutable() and not e.primary.is_mutable()
    assert e[0] == 1.0


def test_garbage_collection_gives_the_tiers_back():
    a, b = gen_pair()
    e = Evictable(a, b)
    del e
    gc.collect()
    assert not a.is_owned() and not b.is_owned()
    assert a.is_mutable() and not a.is_released()
    a[0] = 7.0
    a.release()


def test_tiers_outlive_their_python_objects():
    e = Evictable(Generic([1.0, 2.0]), Generic([]))
    gc.collect()
    assert list(e.primary) == [1.0, 2.0]
    assert e.primary is e.primary


# ------------------------------------------------------------- transitions


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_round_trip(pair):
    make_primary, make_secondary = PAIRS[pair]
    p, s = make_primary(), make_secondary()
    large = s.size() >= 4
    e = Evictable(p, s)
    e.evict()
    assert e.is_evicted() and p.is_released()
    secondary = e.secondary
    assert (secondary is s) == large
    assert secondary.is_owned() and not secondary.is_mutable()
    assert [secondary[i] for i in range(4)] == pytest.approx(VALUES)
    if secondary is not s:
        assert s.is_released() and not s.is_owned()
    assert e.version == 0 and e.size() == 4
    e.evict()
    assert e.secondary is secondary
    e.promote()
    primary = e.primary
    assert primary is not p and type(primary) is type(p)
    assert not e.is_evicted() and list(e) == pytest.approx(VALUES)
    assert secondary.is_released()
    assert not p.is_owned() and primary.is_owned()
    with pytest.raises(RuntimeError, match="^Carrier is released$"):
        p[0]
    assert e.version == 0
    e.promote()
    assert e.primary is primary
    e.evict()
    assert e.secondary is not secondary
    e.promote()
    assert list(e) == pytest.approx(VALUES)


def test_refusals_while_evicted():
    e = Evictable(Generic(list(VALUES)), Generic([]))
    t = Tensor(e, 0, flat(4))
    e.evict()
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        e[0]
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        e.get_value(0)
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        e[0] = 1.0
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        t[0]
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        sw.relu(t)
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        e.dispatch_op("relu")
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        e._dispatch_op("relu")
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        e.scatter(Tensor(Generic([1.0]), 0, flat(1)), t, flat(1))
    assert e.version == 0
    e.promote()
    assert sw.relu(t)[1] == 0


def test_release_releases_both_tiers():
    a, b = gen_pair(secondary=[0.0])
    e = Evictable(a, b)
    e.release()
    assert a.is_released() and b.is_released()
    assert a.is_owned() and b.is_owned()
    assert e.is_released() and e.size() == 0 and e.version == 0
    e.release()
    with pytest.raises(RuntimeError, match="^Carrier is released$"):
        e.evict()
    with pytest.raises(RuntimeError, match="^Carrier is released$"):
        e.promote()
    with pytest.raises(RuntimeError, match="^Carrier is released$"):
        e[0]


def test_nested_hierarchies():
    inner = Evictable(Generic([1.0, 2.0]), Generic([]))
    outer = Evictable(inner, Generic([]))
    assert inner.is_owned() and not inner.is_mutable()
    with pytest.raises(RuntimeError, match=f"^{OWNED_EVICT}$"):
        inner.evict()
    with pytest.raises(RuntimeError, match=f"^{OWNED_EVICT}$"):
        inner.promote()
    outer[1] = 5.0
    assert inner.version == 1 and inner.primary.version == 1
    outer.evict()
    assert inner.is_released()
    outer.promote()
    assert type(outer.primary) is Evictable and outer.primary is not inner
    assert list(outer) == [1.0, 5.0]


def test_python_tiers():
    p = ListCarrier([1.0, 2.0], dtype=DType.Floating)
    s = ListCarrier([], dtype=DType.Floating)
    e = Evictable(p, s)
    e.evict()
    assert p.release_calls == 1
    fresh = e.secondary
    assert isinstance(fresh, ListCarrier) and fresh.values == [1.0, 2.0]
    e.promote()
    assert isinstance(e.primary, ListCarrier) and list(e) == [1.0, 2.0]
    e[0] = 3.0
    assert e.primary.values == [3.0, 2.0]


def test_dlpack_refused_in_both_residencies():
    e = Evictable(cpu([1.0, 2.0]), FileBacked(dtype=DType.Float32))
    with pytest.raises(BufferError, match="^DLPack is not supported for Evictable carrier$"):
        e.dlpack_info()
    e.evict()
    with pytest.raises(BufferError, match="^DLPack is not supported for Evictable carrier$"):
        e.dlpack_info()


def test_factories():
    e = Evictable(cpu([1.0, 2.0]), FileBacked(dtype=DType.Float32))
    n = e.new_like([3, 4, 5])
    assert type(n) is Evictable and list(n) == [3.0, 4.0, 5.0]
    assert type(n.primary) is CPU and type(n.secondary) is FileBacked
    assert n.secondary.size() == 0 and n.dtype() is DType.Float32
    i = e.new_like([1, 2], dtype=DType.Int32)
    assert i.dtype() is DType.Int32 and list(i) == [1, 2]
    with pytest.raises(ValueError, match="^primary carrier must contain at least one element$"):
        e.new_like([])
    a = e.allocate_like(3)
    assert list(a) == [0.0, 0.0, 0.0] and a.secondary.size() == 0
    assert not e.allocate_like(1, mutable=False).is_mutable()
    with pytest.raises(TypeError, match="^Evictable dtype must be a DType$"):
        e.allocate_like(1, dtype="Float32")
    e.evict()
    assert list(e.new_like([1.0])) == [1.0]


# ------------------------------------------------------------------ scatter


def test_scatter():
    e = Evictable(Generic([0.0] * 4), Generic([]))
    onto = Tensor(e, 0, flat(4))
    src = Tensor(Generic([5.0, 6.0]), 0, flat(2))
    e.scatter(src, onto, L([2], [2]), 1)
    assert list(e) == [0.0, 5.0, 0.0, 6.0]
    assert e.version == 1 and e.primary.version == 2
    esrc = Tensor(Evictable(Generic([7.0]), Generic([])), 0, flat(1))
    e.scatter(esrc, onto, flat(1))
    assert e[0] == 7.0 and e.version == 2
    with pytest.raises(ValueError, match="^scatter_onto must be backed by this carrier object$"):
        e.scatter(src, src, flat(2))
    with pytest.raises(ValueError, match="^scatter_onto must be backed by this carrier object$"):
        e.scatter(src, None, flat(2))
    with pytest.raises(TypeError, match="^to_scatter must be a Tensor$"):
        e.scatter([1.0], onto, flat(1))
    with pytest.raises(TypeError, match="^mapping must be a Layout$"):
        e.scatter(src, onto, "2:1")
    frozen = Evictable(Generic([0.0], mutable=False), Generic([]))
    with pytest.raises(RuntimeError, match="^Carrier is not mutable$"):
        frozen.scatter(src, Tensor(frozen, 0, flat(1)), flat(1))
    released = Evictable(Generic([0.0]), Generic([]))
    target = Tensor(released, 0, flat(1))
    released.release()
    with pytest.raises(RuntimeError, match="^Carrier is released$"):
        released.scatter(src, target, flat(1))


# ---------------------------------------------------------------- dispatch


def test_dispatch_makes_an_adapter():
    e = Evictable(Generic([1.0]), Generic([]))
    op = e.dispatch_op("relu")
    assert type(op) is EvictableOperation and isinstance(op, Operation)
    assert op._operation_name == "relu" and op._dispatch_carrier_class is Evictable
    inner = op.primary_operation
    assert type(inner) is sw.GenericReLUOperation
    assert inner._operation_name == "relu" and inner._dispatch_carrier_class is Generic
    assert op.primary_operation is inner
    hook = e._dispatch_op("add")
    assert type(hook) is EvictableOperation and hook._operation_name is None
    with pytest.raises(NotImplementedError):
        Evictable(FileBacked().new_like([1.0]), Generic([])).dispatch_op("relu")


def test_subclass_dispatch_tag():
    class MyEvictable(Evictable):
        pass

    e = MyEvictable(Generic([1.0, -1.0]), Generic([]))
    op = e.dispatch_op("relu")
    assert op._dispatch_carrier_class is MyEvictable
    y = sw.relu(Tensor(e, 0, flat(2)))
    assert type(y.carrier) is Evictable and list(y.carrier) == [1.0, 0]


def test_adapter_rules():
    with pytest.raises(TypeError, match="^primary_operation must be an Operation$"):
        EvictableOperation(1)
    with pytest.raises(TypeError):
        EvictableOperation()
    plain = Tensor(Generic([1.0]), 0, flat(1))
    op = EvictableOperation(sw.GenericReLUOperation())
    with pytest.raises(TypeError, match="^EvictableOperation requires a tensor input$"):
        op.forward(plain)
    with pytest.raises(RuntimeError, match="^EvictableOperation backward requires forward first$"):
        op.backward(plain)
    x = Tensor(Evictable(Generic([-1.0]), Generic([])), 0, flat(1))
    y = op.forward(x)
    assert y[0] == 0 and y.autograd_ctx is op
    with pytest.raises(RuntimeError, match="^EvictableOperation forward may only be called once$"):
        op.forward(x)
    with pytest.raises(TypeError, match="^gradient carrier must match the primary carrier class$"):
        op.backward(Tensor(cpu([1.0]), 0, flat(1)))
    (g,) = op.backward(Tensor(Generic([1.0]), 0, flat(1)))
    assert type(g.carrier) is Evictable and g.carrier.secondary.size() == 0
    add = EvictableOperation(sw.GenericAddOperation())
    with pytest.raises(TypeError, match="^EvictableOperation requires Evictable tensor inputs$"):
        add.forward(x, plain)


def test_binary_operations_need_matching_classes():
    gx = Tensor(Evictable(Generic([1.0, 2.0]), Generic([])), 0, flat(2))
    gf = Tensor(Evictable(Generic([1.0, 2.0]), FileBacked()), 0, flat(2))
    cx = Tensor(Evictable(cpu([1.0, 2.0]), CPU(0)), 0, flat(2))
    with pytest.raises(TypeError, match="^Evictable secondary carriers must match$"):
        sw.add(gx, gf)
    with pytest.raises(TypeError, match="^Evictable primary carriers must match$"):
        sw.add(gx, cx)
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        sw.add(gx, Tensor(Generic([1.0, 2.0]), 0, flat(2)))
    assert list(sw.add(gx, gx).carrier) == [2.0, 4.0]


# -------------------------------------------------------- forward results


def hierarchy_tensor(kind, values, layout):
    if kind == "CPU":
        return Tensor(Evictable(cpu(values), FileBacked(dtype=DType.Float32)), 0, layout)
    return Tensor(Evictable(Generic(list(values)), FileBacked()), 0, layout)


def plain_tensor(kind, values, layout):
    return Tensor(cpu(values) if kind == "CPU" else Generic(list(values)), 0, layout)


def logical(t):
    return [t[i] for i in range(t.size())]


UNARY = ["exp", "relu", "sigmoid", "tanh", "gelu", "silu", "softplus", "elu", "leaky_relu"]


@pytest.mark.parametrize("kind", ["CPU", "Generic"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_results_and_gradients_match_the_primary(kind, name):
    layout = L([2, 2], [1, 2])
    x = hierarchy_tensor(kind, VALUES, layout)
    p = plain_tensor(kind, VALUES, layout)
    y, q = getattr(sw, name)(x), getattr(sw, name)(p)
    assert type(y.carrier) is Evictable and type(y.carrier.primary) is type(p.carrier)
    assert type(y.carrier.secondary) is FileBacked and y.carrier.secondary.size() == 0
    assert type(y.autograd_ctx) is EvictableOperation
    assert logical(y) == pytest.approx(logical(q))
    y.backward(plain_tensor(kind, [1.0, 0.5, 2.0, -1.0], layout))
    q.backward(plain_tensor(kind, [1.0, 0.5, 2.0, -1.0], layout))
    assert type(x.grad.carrier) is Evictable
    assert logical(x.grad) == pytest.approx(logical(p.grad))


@pytest.mark.parametrize("kind", ["CPU", "Generic"])
def test_composite_gradients_match(kind):
    layout = L([2, 2], [1, 2])
    results = []
    for make in (hierarchy_tensor, plain_tensor):
        a = make(kind, VALUES, layout)
        b = make(kind, [0.5, 1.5, -1.0, 2.0], layout)
        m = sw.matmul(sw.tanh(a), b)
        s = sw.sub(sw.mul(m, 3.0), sw.elementwise_mul(a, b))
        total = sw.reduce(sw.pow(sw.permute(s, 1, 0), 2))
        total.backward(plain_tensor(kind, [1.0, 1.0], total.layout))
        results.append((logical(total), logical(a.grad), logical(b.grad)))
    (he, ha, hb), (pe, pa, pb) = results
    assert he == pytest.approx(pe, rel=1e-5)
    assert ha == pytest.approx(pa, rel=1e-4)
    assert hb == pytest.approx(pb, rel=1e-4)


def test_primary_ctx_is_kept():
    x = Tensor(Evictable(Generic([0.0]), Generic([])), 0, flat(1))
    y = sw.sigmoid(x)
    assert y.autograd_ctx.primary_operation.ctx["saved_values"] == [0.5]
    c = Tensor(Evictable(cpu([1.0, 2.0, 3.0, 4.0]), CPU(0)), 0, L([2, 2], [1, 2]))
    m = sw.mul(c, 0.1)
    assert m.autograd_ctx.primary_operation.ctx["scalar"] == pytest.approx(0.1)
    r = sw.reduce(c)
    assert r.autograd_ctx.primary_operation.ctx["output_layout"] == r.layout
    assert not y.autograd_ctx.ctx


def test_views_stay_in_the_hierarchy():
    e = Evictable(Generic(list(VALUES)), Generic([]))
    x = Tensor(e, 0, L([2, 2], [1, 2]))
    v = x[1, :]
    assert v.carrier is e and v[1] == 4.0
    p = sw.permute(x, 1, 0)
    assert p.carrier is e
    r = sw.rearrange(x, sw.Tree(sw.Node.id(1), sw.Node.id(0)))
    assert r.carrier is e and r[0, 1] == -2.0
    v.backward(Tensor(Generic([1.0, None, 1.0]), 0, v.layout))
    assert logical(x.grad) == [0.0, 1.0, 0.0, 1.0]


def test_result_primary_class_is_checked():
    class Foreign(Operation):
        def _forward(self, tensor):
            return Tensor(cpu([1.0]), 0, flat(1))

        def backward(self, gradient):
            return (None,)

    op = EvictableOperation(Foreign())
    x = Tensor(Evictable(Generic([1.0]), Generic([])), 0, flat(1))
    with pytest.raises(TypeError, match="^operation result does not use the primary carrier$"):
        op.forward(x)


def test_python_primary_operation():
    class Double(Operation):
        def _forward(self, tensor):
            assert type(tensor.carrier) is Generic
            return Tensor(Generic([2 * tensor[i] for i in range(tensor.size())]), 0, tensor.layout)

        def backward(self, gradient):
            return (
                Tensor(
                    Generic([2 * gradient[i] for i in range(gradient.size())]), 0, gradient.layout
                ),
            )

    x = Tensor(Evictable(Generic([1.0, 3.0]), Generic([])), 0, flat(2))
    op = EvictableOperation(Double())
    y = op.forward(x)
    assert list(y.carrier) == [2.0, 6.0] and type(y.carrier) is Evictable
    assert y.autograd_ctx is op
    assert [type(t.carrier) for t in op.primary_operation.inputs()] == [Generic]
    y.backward(Tensor(Generic([1.0, 1.0]), 0, flat(2)))
    assert list(x.grad.carrier) == [2.0, 2.0]


# ---------------------------------------------------------------- autograd


@pytest.mark.parametrize("kind", ["CPU", "Generic"])
def test_backward_while_the_result_is_evicted(kind):
    x = hierarchy_tensor(kind, VALUES, flat(4))
    y = sw.exp(x)
    y.carrier.evict()
    y.backward(plain_tensor(kind, [1.0] * 4, flat(4)))
    assert logical(x.grad) == pytest.approx([math.exp(v) for v in VALUES], rel=1e-6)
    assert x.grad.carrier.secondary.size() == 0


def test_backward_needs_the_saved_inputs_promoted():
    x = hierarchy_tensor("Generic", VALUES, flat(4))
    y = sw.tanh(x)
    x.carrier.evict()
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        y.backward(Tensor(Generic([1.0] * 4), 0, flat(4)))
    x.carrier.promote()
    y.backward(Tensor(Generic([1.0] * 4), 0, flat(4)))
    assert logical(x.grad) == pytest.approx([1 - math.tanh(v) ** 2 for v in VALUES])


def test_evicted_gradient_is_refused():
    x = hierarchy_tensor("CPU", VALUES, flat(4))
    y = sw.relu(x)
    g = hierarchy_tensor("CPU", [1.0] * 4, flat(4))
    g.carrier.evict()
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        y.backward(g)
    g.carrier.promote()
    y.backward(g)
    assert logical(x.grad) == [1.0, 0.0, 1.0, 1.0]


def test_implicit_scalar_backward():
    x = Tensor(Evictable(Generic([3.0]), Generic([])), 0, flat(1))
    y = sw.mul(sw.elementwise_mul(x, x), 2)
    y.backward()
    assert logical(x.grad) == [12.0] and type(x.grad.carrier) is Evictable


def test_transitions_do_not_invalidate_saved_versions():
    x = hierarchy_tensor("CPU", VALUES, flat(4))
    y = sw.sigmoid(x)
    x.carrier.evict()
    x.carrier.promote()
    y.backward(plain_tensor("CPU", [1.0] * 4, flat(4)))
    x.carrier[0] = 0.0
    with pytest.raises(RuntimeError, match="^A tensor needed for gradient computation"):
        y.backward(plain_tensor("CPU", [1.0] * 4, flat(4)))


# ------------------------------------------------------- failure injection


def temp_files():
    return sorted(Path(os.environ["TMPDIR"]).iterdir())


def state(e):
    return (e.is_evicted(), e.primary, e.secondary, e.version)


@pytest.mark.parametrize("pair", ["Generic/Generic", "CPU/FileBacked", "CPU/CPU"])
def test_allocation_failures_leave_transitions_retryable(pair):
    make_primary, make_secondary = PAIRS[pair]
    failures = 0
    for k in range(40):
        e = Evictable(make_primary(), make_secondary())
        for step in ("evict", "promote"):
            before = state(e)
            _native._debug_fail_alloc_after(k)
            try:
                getattr(e, step)()
            except MemoryError:
                failures += 1
                _native._debug_fail_alloc_after(-1)
                assert state(e) == before
                assert e.primary.is_owned() and e.secondary.is_owned()
                getattr(e, step)()
            finally:
                _native._debug_fail_alloc_after(-1)
        assert list(e) == pytest.approx(VALUES)
    assert failures > 0


@pytest.mark.parametrize("pair", ["CPU/FileBacked", "Generic/FileBacked", "FileBacked/CPU"])
def test_io_failures_leave_transitions_retryable(pair):
    make_primary, make_secondary = PAIRS[pair]
    failures = 0
    for k in range(8):
        e = Evictable(make_primary(), make_secondary())
        for step in ("evict", "promote"):
            before = state(e)
            _native._debug_fail_io_after(k)
            try:
                getattr(e, step)()
            except OSError:
                failures += 1
                _native._debug_fail_io_after(-1)
                assert state(e) == before
                values = e.secondary if e.is_evicted() else e
                assert [values[i] for i in range(4)] == pytest.approx(VALUES)
                getattr(e, step)()
            finally:
                _native._debug_fail_io_after(-1)
        assert list(e) == pytest.approx(VALUES)
        e.release()
    assert failures > 0
    gc.collect()
    assert temp_files() == []


def test_failing_python_tier_leaves_state_valid():
    class Flaky(ListCarrier):
        fail = True

        def set_value(self, index, value):
            if Flaky.fail:
                raise ValueError("disk full")
            super().set_value(index, value)

        def allocate_like(self, size, *, mutable=True, dtype=None, empty=False):
            return Flaky([None] * size, mutable=mutable, dtype=dtype or self.kind)

    e = Evictable(Generic([1.0, 2.0]), Flaky([], dtype=DType.Floating))
    primary = e.primary
    with pytest.raises(ValueError, match="^disk full$"):
        e.evict()
    assert not e.is_evicted() and e.primary is primary and not primary.is_released()
    assert list(e) == [1.0, 2.0]
    Flaky.fail = False
    e.evict()
    assert e.is_evicted() and e.secondary.values == [1.0, 2.0]


def test_adapter_subclass():
    class Traced(EvictableOperation):
        pass

    op = Traced(sw.GenericExpOperation())
    x = Tensor(Evictable(Generic([0.0]), Generic([])), 0, flat(1))
    y = op.forward(x)
    assert (
        y[0] == 1.0
        and y.autograd_ctx is op
        and type(op.primary_operation).__name__ == ("GenericExpOperation")
    )


def test_gradients_returned_as_the_incoming_storage():
    class PassThrough(Operation):
        def _forward(self, lhs, rhs):
            return Tensor(lhs.carrier.new_like([lhs[i] + rhs[i] for i in range(2)]), 0, flat(2))

        def backward(self, gradient):
            return (gradient, gradient)

    e = Evictable(Generic([1.0, 2.0]), Generic([]))
    x = Tensor(e, 0, flat(2))
    op = EvictableOperation(PassThrough())
    y = op.forward(x, x)
    g = Generic([1.0, 3.0])
    grads = op.backward(Tensor(g, 0, flat(2)))
    assert grads[0].carrier is grads[1].carrier and type(grads[0].carrier) is Evictable
    assert list(grads[0].carrier) == [1.0, 3.0] and not g.is_owned()
    y.backward(Tensor(g, 0, flat(2)))
    assert list(x.grad.carrier) == [2.0, 6.0] and not g.is_owned()
    eg = Tensor(Evictable(Generic([1.0, 1.0]), Generic([])), 0, flat(2))
    again = EvictableOperation(PassThrough())
    again.forward(x, x)
    first, second = again.backward(eg)
    assert first.carrier is second.carrier is eg.carrier


# ------------------------------------------------------------- properties

TIERS = {
    "Generic/Generic": (lambda v: Generic(list(v)), lambda: Generic([])),
    "CPU/CPU": (cpu, lambda: CPU(0)),
    "CPU/FileBacked": (cpu, lambda: FileBacked(dtype=DType.Float32)),
    "Generic/FileBacked": (lambda v: Generic(list(v)), lambda: FileBacked()),
    "FileBacked/CPU": (lambda v: FileBacked(dtype=DType.Float32).new_like(v), lambda: CPU(0)),
    "python/Generic": (lambda v: ListCarrier(v, dtype=DType.Floating), lambda: Generic([])),
}
FLOAT32 = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(FLOAT32, min_size=1, max_size=24),
    pair=st.sampled_from(sorted(TIERS)),
    steps=st.lists(st.sampled_from(["evict", "promote", "write"]), max_size=8),
)
def test_residency_changes_preserve_values(values, pair, steps):
    make_primary, make_secondary = TIERS[pair]
    e = Evictable(make_primary(values), make_secondary())
    expected = list(values)
    version = 0
    for step in steps:
        if step == "write":
            if e.is_evicted():
                with pytest.raises(RuntimeError, match=exact(EVICTED)):
                    e[0] = 1.5
                continue
            e[len(expected) - 1] = 1.5
            expected[-1] = 1.5
            version += 1
        else:
            getattr(e, step)()
        assert e.version == version
        assert e.primary.is_owned() and e.secondary.is_owned()
    e.promote()
    assert list(e) == pytest.approx(expected)
    e.release()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.floats(-4, 4, allow_nan=False, width=32), min_size=4, max_size=4),
    name=st.sampled_from(UNARY),
    kind=st.sampled_from(["CPU", "Generic"]),
    evict_result=st.booleans(),
)
def test_gradients_match_the_plain_computation(values, name, kind, evict_result):
    layout = L([2, 2], [2, 1])
    x = hierarchy_tensor(kind, values, layout)
    p = plain_tensor(kind, values, layout)
    y = sw.elementwise_mul(getattr(sw, name)(x), x)
    q = sw.elementwise_mul(getattr(sw, name)(p), p)
    assert logical(y) == pytest.approx(logical(q), rel=1e-6, abs=1e-6)
    if evict_result:
        y.carrier.evict()
    y.backward(plain_tensor(kind, [1.0, -0.5, 2.0, 0.25], layout))
    q.backward(plain_tensor(kind, [1.0, -0.5, 2.0, 0.25], layout))
    assert logical(x.grad) == pytest.approx(logical(p.grad), rel=1e-6, abs=1e-6)
