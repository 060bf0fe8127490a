"""TiledEvictable as built so far (later-api.md section 8).

Checklist (built): 8.1 top-level identity ``test_exports``; 8.3
construction and geometry ``test_geometry``, ``test_construction_errors``,
``test_initial_residency``, ``test_storage_dtypes``, ``test_definition_and_facet``,
``test_writes_and_factories``,
``test_element_values_take_the_primary_tiers_kind``; 8.4 ``test_footprint_compatibility``; 8.5
blocking residency ``test_promote_evict``, ``test_residency_errors``,
policies ``test_policy_consulted_once_per_work``, ``test_policy_bad_plans``,
``test_policy_exception_propagates``; 8.8
direct operations ``test_direct_operations``, ``test_direct_gradients``,
``test_direct_gradients_equal_cpu``, ``test_direct_gradients_accumulate``,
``test_direct_gradients_permuted_layout``,
``test_direct_gradients_generic_tiers``;
8.9 ``test_release``; 8.10 tiers ``test_tier_combinations``,
``test_tiers_of_two_definition_backed_classes`` (Generic+CPU
cannot be built here: Generic stores Floating or Any, CPU Float32, Int32
or Bool, and the tiers' dtypes must match).

Asynchronous residency, projection and scatter (8.5 to 8.7) are in
test_tiled_async.py.
"""

from __future__ import annotations

import pytest
import strideweave as sw
from strideweave.carriers import extension as E
from strideweave.carriers.operation_policy import resolve_operation_plan
from strideweave.carriers.tiled_evictable import (
    ResidencyPlan,
    ResidencyPolicy,
    TiledEvictable,
    TiledResidencyFacet,
    TileSelection,
    TileSet,
)

F32 = sw.DType.Float32
I32 = sw.DType.Int32


def compact(shape):
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(strides))


def filled(n, start=0.0):
    c = sw.CPU(n)
    for i in range(n):
        c[i] = start + i
    return c


def test_exports():
    for name, obj in (
        ("TiledEvictable", TiledEvictable),
        ("TiledResidencyFacet", TiledResidencyFacet),
        ("TileSelection", TileSelection),
        ("TileSet", TileSet),
        ("ResidencyPlan", ResidencyPlan),
        ("ResidencyPolicy", ResidencyPolicy),
    ):
        assert getattr(sw, name) is obj


def test_geometry():
    p, q = filled(24), sw.FileBacked(dtype=F32)
    t = TiledEvictable(p, q, (3, 2), (2, 2))
    assert t.primary is p and t.secondary is q
    assert t.grid_shape == (3, 2) and t.tile_shape == (2, 2)
    assert t.logical_shape == (6, 4) and t.size() == 24
    assert t.residency_policy is None
    # Column-major slots; tile (1, 0) holds rows 2-3 of columns 0-1.
    assert [t[i] for i in (2, 3, 8, 9)] == [2.0, 3.0, 8.0, 9.0]
    t.evict(TileSet([(1, 0)]))
    assert t.secondary_tiles == TileSet([(1, 0)])
    assert [t[i] for i in (2, 3, 8, 9)] == [2.0, 3.0, 8.0, 9.0]


def test_construction_errors():
    q = sw.FileBacked(dtype=F32)
    with pytest.raises(TypeError, match="primary must be a Carrier"):
        TiledEvictable([1.0], q, (2,), (2,))
    candidate = sw.CPU(5)
    with pytest.raises(ValueError, match="not the full extent"):
        TiledEvictable(candidate, q, (2,), (2,))
    with pytest.raises(TypeError, match="dtypes must match"):
        TiledEvictable(sw.CPU(4), sw.CPU(4, dtype=I32), (2,), (2,))
    with pytest.raises(ValueError, match="ranks differ"):
        TiledEvictable(sw.CPU(4), q, (2, 1), (2,))
    with pytest.raises(ValueError, match="tile extents must be positive"):
        TiledEvictable(sw.CPU(4), q, (2,), (0,))
    with pytest.raises(TypeError, match="plan"):
        TiledEvictable(sw.CPU(4), q, (2,), (2,), residency_policy=object())

    class NotCallable:
        plan = 3

    with pytest.raises(TypeError, match="callable"):
        TiledEvictable(sw.CPU(4), q, (2,), (2,), residency_policy=NotCallable())
    assert not candidate.is_owned() and not q.is_owned()
    with pytest.raises(TypeError, match="final"):
        type("Sub", (TiledEvictable,), {})


def test_initial_residency():
    full = TiledEvictable(filled(4), sw.CPU(4), (2,), (2,))
    assert full.primary_tiles == full.valid_tiles == TileSet([(0,), (1,)])
    assert full.dirty_tiles == TileSet()
    assert full.primary.is_owned() and full.secondary.is_owned()
    back = TiledEvictable(sw.FileBacked(dtype=F32), filled(4), (2,), (2,))
    assert back.secondary_tiles == back.valid_tiles == TileSet([(0,), (1,)])
    assert back[3] == 3.0
    empty = TiledEvictable(sw.FileBacked(dtype=F32), sw.FileBacked(dtype=F32), (2,), (2,))
    assert empty.valid_tiles == TileSet()
    with pytest.raises(RuntimeError, match="invalid|resident|promot"):
        empty[0]
    with pytest.raises(RuntimeError, match="invalid|initialization"):
        empty[0] = 1.0
    state = empty.tile_state((1,))
    assert (state.location, state.valid, state.dirty) == ("secondary", False, False)


def test_storage_dtypes():
    cases = [
        (sw.Generic([0.0] * 4), sw.Generic([0.0] * 4)),
        (sw.CPU(4), sw.FileBacked(dtype=F32)),
    ]
    answers = []
    for p, q in cases:
        t = TiledEvictable(p, q, (2,), (2,))
        answers.append({d for d in (F32, I32, sw.DType.Bool) if t.supports_storage_dtype(d)})
        t.evict(TileSet([(0,)]))
        assert {d for d in (F32, I32) if t.supports_storage_dtype(d)} <= answers[-1]
    assert answers[1] == {F32, I32}


def test_definition_and_facet():
    assert E._peek_carrier_definition(TiledEvictable) is not None
    assert E._has_carrier_definition(TiledEvictable)
    assert E._peek_carrier_definition(TiledEvictable).composite is not None
    t = TiledEvictable(sw.CPU(2), sw.CPU(2), (1,), (2,))
    assert isinstance(t.require_facet(TiledResidencyFacet), TiledResidencyFacet)
    with pytest.raises(TypeError, match="already"):
        E.register_carrier_definition(TiledEvictable, E._peek_carrier_definition(TiledEvictable))


def test_writes_and_factories():
    t = TiledEvictable(filled(8), sw.CPU(8), (2, 2), (2, 1))
    t.evict(TileSet([(1, 1)]))
    v = t.version
    t[7] = 70.0
    assert t.version == v + 1 and t.dirty_tiles == TileSet([(1, 1)])
    assert t.tile_state((1, 1)).location == "primary"
    z = t.allocate_like(8)
    assert type(z) is TiledEvictable and z.grid_shape == (2, 2) and z.tile_shape == (2, 1)
    assert z.primary_tiles == TileSet() and z.valid_tiles == TileSet(t._coords())
    assert z.tile_state((0, 0)).location == "implicit" and z[3] == 0.0
    n = t.new_like([float(i) for i in range(8)])
    assert [n[i] for i in range(8)] == [float(i) for i in range(8)]
    assert n.primary_tiles == n.valid_tiles


def test_element_values_take_the_primary_tiers_kind():
    # Values are converted for the innermost primary, as for an Evictable:
    # an Int32 TiledEvictable takes and gives integers, a Bool one bools.
    t = TiledEvictable(sw.CPU(4, dtype=I32), sw.CPU(4, dtype=I32), (2,), (2,))
    t[1] = 7
    t.evict(TileSet([(1,)]))
    t[3] = -2
    assert [t[i] for i in range(4)] == [0, 7, 0, -2]
    assert type(t[1]) is int
    with pytest.raises(TypeError, match="must be an integer"):
        t[0] = 1.5
    x = sw.Tensor(t, 0, compact([4]))
    x[2] = 5
    assert x[2] == 5
    b = TiledEvictable(sw.CPU(2, dtype=sw.DType.Bool), sw.CPU(2, dtype=sw.DType.Bool), (2,), (1,))
    b[0] = True
    assert b[0] is True and b[1] is False


def test_footprint_compatibility():
    t = TiledEvictable(filled(16), sw.CPU(16), (2, 2), (2, 2))
    permuted = sw.Layout(sw.Shape([[2, 2], [2, 2]]), sw.Stride([[4, 2], [1, 8]]))
    sw.relu(sw.Tensor(t, 0, permuted))
    cases = [
        (sw.Tensor(t, 0, sw.Layout(sw.Shape([4, 4]), sw.Stride([4, 1]))), "remaps"),
        (sw.Tensor(t, 0, sw.Layout(sw.Shape([4, 4]), sw.Stride([0, 4]))), "aliases"),
        (sw.Tensor(t, 1, compact([4, 3])), "geometry"),
    ]
    for x, what in cases:
        v = t.version
        with pytest.raises(ValueError, match="tile footprints|geometry"):
            sw.relu(x)
        assert t.version == v, what


def test_promote_evict():
    t = TiledEvictable(filled(8), sw.FileBacked(dtype=F32), (4,), (2,))
    t.evict(TileSelection([[3, 1]]))
    assert t.secondary_tiles == TileSet([(1,), (3,)])
    v = t.version
    t.evict(TileSet([(1,)]))  # satisfied: idempotent
    t.promote(TileSet([(1,), (3,)]))
    assert t.primary_tiles == TileSet([(0,), (1,), (2,), (3,)])
    assert [t[i] for i in range(8)] == [float(i) for i in range(8)]
    assert t.version == v
    t.evict(TileSet([(0,), (2,)]))
    t[0] = 5.0
    t.evict(TileSet([(0,)]))
    assert t[0] == 5.0 and t[1] == 1.0


def test_residency_errors():
    t = TiledEvictable(filled(4), sw.CPU(4), (2,), (2,))
    with pytest.raises(TypeError, match="TileSet or a TileSelection"):
        t.promote([(0,)])
    with pytest.raises(ValueError, match="range|grid|coordinate"):
        t.evict(TileSet([(5,)]))
    with pytest.raises(ValueError, match="range|grid|coordinate"):
        t.tile_state((2,))
    assert t.primary_tiles == TileSet([(0,), (1,)])


def test_direct_operations():
    t = TiledEvictable(filled(16, -8.0), sw.FileBacked(dtype=F32), (2, 2), (2, 2))
    t.evict(TileSet([(1, 0), (0, 1)]))
    x = sw.Tensor(t, 0, compact([4, 4]))
    names = {c.operation for c in t.operation_capabilities()}
    assert names == {"add", "elementwise_mul", "mul", "relu", "reduce_sum", "matmul"}
    assert t.supports_operation_plan(resolve_operation_plan("relu", F32))
    y = sw.relu(x)
    assert type(y.carrier) is sw.CPU and y.offset == 0
    assert [y[i] for i in range(16)] == [max(i - 8.0, 0.0) for i in range(16)]
    assert y.autograd_ctx._dispatch_carrier_class is TiledEvictable
    # With no policy the work promotes what it requires: the whole tensor.
    assert t.secondary_tiles == TileSet() and t.version == 0
    s = sw.add(x, x)
    assert s[15] == 14.0
    m = sw.matmul(x, x)
    assert type(m.carrier) is sw.CPU
    with pytest.raises(NotImplementedError, match="does not support"):
        sw.exp(x)


def test_direct_gradients():
    t = TiledEvictable(filled(4, -2.0), sw.CPU(4), (2,), (2,))
    x = sw.Tensor(t, 0, compact([4]))
    y = sw.relu(x)
    y.backward(sw.Tensor(sw.CPU(4).new_like([1.0] * 4), 0, compact([4])))
    g = x.grad
    assert type(g.carrier) is TiledEvictable
    assert g.carrier.valid_tiles == TileSet([(0,), (1,)])
    assert [g[i] for i in range(4)] == [0.0, 0.0, 0.0, 1.0]
    assert t.version == 0


# The direct operations with their gradients, on (x, y) and plain CPU
# twins: x is a (4, 6) array of (2, 3) tiles, y another for binary ones.
DIRECT = {
    "add": lambda x, y: sw.add(x, y),
    "add_cpu_rhs": lambda x, y: sw.add(x, y.detach()),
    "elementwise_mul": lambda x, y: sw.elementwise_mul(x, y),
    "mul": lambda x, y: sw.mul(x, -1.5),
    "relu": lambda x, y: sw.relu(x),
    "reduce_sum": lambda x, y: sw.reduce(x),
    "matmul": lambda x, y: sw.matmul(x, y),
}


def _direct_operands(tiled, secondary=lambda n: sw.FileBacked(dtype=F32)):
    xs = [((i * 7) % 11) - 5.0 for i in range(24)]
    ys = [((i * 5) % 13) / 4.0 - 1.0 for i in range(24)]
    out = []
    for vals in (xs, ys):
        if tiled:
            c = TiledEvictable(sw.CPU(24).new_like(vals), secondary(24), (2, 2), (2, 3))
        else:
            c = sw.CPU(24).new_like(vals)
        t = sw.Tensor(c, 0, compact([4, 6]))
        t.requires_grad = True
        out.append(t)
    return out


@pytest.mark.parametrize("name", sorted(DIRECT))
def test_direct_gradients_equal_cpu(name):
    """The backward of a direct operation runs on the primary's class (the
    tiles are copied out in bulk, the gradient is adopted as a fresh
    TiledEvictable's primary) and gives the CPU's gradients exactly."""
    grads = {}
    for tiled in (False, True):
        x, y = _direct_operands(tiled)
        out = DIRECT[name](x, y)
        ones = sw.CPU(out.layout.cosize).new_like([1.0] * out.layout.cosize)
        out.backward(sw.Tensor(ones, 0, out.layout))
        got = [[g[i] for i in range(24)] if g is not None else None for g in (x.grad, y.grad)]
        grads[tiled] = got
        if tiled:
            g = x.grad
            assert type(g.carrier) is TiledEvictable and g.layout == x.layout
            assert type(g.carrier.primary) is sw.CPU
            assert type(g.carrier.secondary) is sw.FileBacked
            every = TileSet((i, j) for i in range(2) for j in range(2))
            assert g.carrier.valid_tiles == g.carrier.primary_tiles == every
            assert x.carrier.version == 0 and y.carrier.version == 0
            # The gradient's tiles leave for its own fresh secondary and
            # come back with their values.
            g.carrier.evict(every)
            assert [g[i] for i in range(24)] == got[0]
            g.carrier.promote(every)
            assert [g[i] for i in range(24)] == got[0]
    assert grads[True] == grads[False]


def test_direct_gradients_accumulate():
    """A tiled tensor used twice in one operation and again in another: its
    gradients are summed on the primary's class and become one tiled
    gradient, equal to the CPU's."""
    vals = [((i * 7) % 11) / 4.0 - 1.0 for i in range(36)]
    grads = []
    for c in (
        sw.CPU(36).new_like(vals),
        TiledEvictable(sw.CPU(36).new_like(vals), sw.FileBacked(dtype=F32), (2, 2), (3, 3)),
    ):
        x = sw.Tensor(c, 0, compact([6, 6]))
        x.requires_grad = True
        out = sw.add(sw.matmul(x, x), sw.relu(x))
        out.backward(sw.Tensor(sw.CPU(36).new_like([1.0] * 36), 0, out.layout))
        grads.append([x.grad[i] for i in range(36)])
        if type(c) is TiledEvictable:
            assert type(x.grad.carrier) is TiledEvictable
            assert type(x.grad.carrier.primary) is sw.CPU
    assert grads[0] == grads[1]


def test_direct_gradients_permuted_layout():
    """A full tensor whose layout permutes inside the tiles: its gradient
    is laid out as the tensor is, on the adopted primary."""
    vals = [float(i) - 11.0 for i in range(24)]
    layout = sw.Layout(sw.Shape([[2, 3], [2, 2]]), sw.Stride([[6, 2], [1, 12]]))
    grads = []
    for c in (
        sw.CPU(24).new_like(vals),
        TiledEvictable(sw.CPU(24).new_like(vals), sw.CPU(24), (3, 2), (2, 2)),
    ):
        x = sw.Tensor(c, 0, layout)
        x.requires_grad = True
        y = sw.mul(sw.relu(x), 2.0)
        n = y.layout.cosize
        y.backward(sw.Tensor(sw.CPU(n).new_like([1.0] * n), 0, y.layout))
        assert x.grad.layout == layout
        grads.append([x.grad[i] for i in range(24)])
    assert grads[0] == grads[1]


def test_direct_gradients_generic_tiers():
    """Tiers of another class than CPU and OpenCL keep Generic's gradient,
    element by element, with the same values."""
    vals = [float(i) - 1.0 for i in range(4)]
    t = TiledEvictable(sw.Generic(vals), sw.Generic([0.0] * 4), (2,), (2,))
    x = sw.Tensor(t, 0, compact([4]))
    x.requires_grad = True
    y = sw.relu(x)
    y.backward(sw.Tensor(sw.Generic([1.0] * 4), 0, compact([4])))
    assert type(x.grad.carrier) is TiledEvictable
    assert type(x.grad.carrier.primary) is sw.Generic
    assert [x.grad[i] for i in range(4)] == [0.0, 0.0, 1.0, 1.0]


def test_release():
    p, q = filled(4), sw.CPU(4)
    t = TiledEvictable(p, q, (2,), (2,))
    assert t.release() is None and t.release() is None
    assert p.is_released() and q.is_released()
    assert not p.is_owned() and not q.is_owned()
    for call in (lambda: t.promote(TileSet([(0,)])), lambda: t[0]):
        with pytest.raises(RuntimeError, match="released"):
            call()
    assert t.grid_shape == (2,)


def test_tier_combinations():
    for p, q in (
        (sw.Generic([0.0, 1.0, 2.0, 3.0]), sw.Generic([0.0] * 4)),
        (filled(4), sw.FileBacked(dtype=F32)),
        (sw.Generic([0.0, 1.0, 2.0, 3.0]), sw.FileBacked(dtype=sw.DType.Floating)),
    ):
        t = TiledEvictable(p, q, (2,), (2,))
        t.evict(TileSet([(0,), (1,)]))
        t.promote(TileSet([(1,)]))
        assert [t[i] for i in range(4)] == [0.0, 1.0, 2.0, 3.0]


def _list_provider():
    def allocate(c, n):
        c.values = [0.0] * n

    def release(c):
        c.values = []

    def write(c, i, v):
        c.values[i] = v

    return E.StorageProvider(
        supports_dtype=lambda c, d: d == F32,
        physical_size=lambda c: len(c.values),
        allocate=allocate,
        release=release,
        read=lambda c, i: c.values[i],
        write=write,
    )


def test_tiers_of_two_definition_backed_classes():
    # Two storage classes of the extension API, joined by routes both ways,
    # as the tiers (8.10). Tile copies between them go through their
    # storage providers (COMPATIBILITY 108), so the values survive every
    # mix of residency.
    fast = type("FastTier", (sw.Carrier,), {})
    slow = type("SlowTier", (sw.Carrier,), {})

    def route(src, dst, name):
        def prepare(request):
            def submit():
                s, d = request.tensor.carrier, request.destination
                for i in range(request.physical_span):
                    d[i] = s.values[request.tensor.offset + i]

            return E.PreparedTransfer(submit)

        return E.TransferRoute(src, dst, name, E.TransferProvider(prepare))

    E.register_carrier_definition(
        fast, E.CarrierDefinition(_list_provider(), transfers=[route(fast, slow, "down")])
    )
    E.register_carrier_definition(
        slow, E.CarrierDefinition(_list_provider(), transfers=[route(slow, fast, "up")])
    )
    p = fast(4, dtype=F32)
    for i in range(4):
        p[i] = float(i)
    t = TiledEvictable(p, slow(4, dtype=F32), (2,), (2,))
    assert p.is_owned()
    t[1] = 10.0
    assert t.dirty_tiles == TileSet([(0,)])
    t.evict(TileSet([(0,), (1,)]))
    assert t.secondary_tiles == TileSet([(0,), (1,)])
    assert [t[i] for i in range(4)] == [0.0, 10.0, 2.0, 3.0]
    t.promote(TileSet([(1,)]))
    assert t.tile_state((1,)).location == "primary"
    assert [t[i] for i in range(4)] == [0.0, 10.0, 2.0, 3.0]
    # The direct operations compute on the primary's class, and this one
    # stores only (no KernelProvider).
    with pytest.raises(NotImplementedError, match="relu"):
        sw.relu(sw.Tensor(t, 0, compact([4])))
    t.release()
    assert p.is_released()


class Recorder:
    """A policy that records its calls and evicts the first tile after."""

    def __init__(self, result=None):
        self.calls = []
        self.result = result

    def plan(self, required, purpose):
        self.calls.append((required, purpose))
        if self.result is not None:
            return self.result
        keep = TileSet(c for c in required if c != (0,))
        return ResidencyPlan(promote=keep, evict=TileSet([(0,)]))


def test_policy_consulted_once_per_work():
    policy = Recorder()
    t = TiledEvictable(filled(6), sw.FileBacked(dtype=F32), (3,), (2,), residency_policy=policy)
    assert t.residency_policy is policy
    x = sw.Tensor(t, 0, compact([6]))
    sw.relu(x)
    assert policy.calls == [(TileSet([(0,), (1,), (2,)]), "operation")]
    assert t.tile_state((0,)).location == "secondary"
    # Explicit promote and evict never consult the policy.
    t.promote(TileSet([(0,)]))
    t.evict(TileSet([(1,)]))
    assert len(policy.calls) == 1


def test_policy_consulted_for_backward():
    policy = Recorder()
    t = TiledEvictable(filled(6), sw.FileBacked(dtype=F32), (3,), (2,), residency_policy=policy)
    x = sw.Tensor(t, 0, compact([6]))
    y = sw.relu(x)
    t.evict(TileSet([(1,), (2,)]))
    ones = sw.CPU(6)
    for i in range(6):
        ones[i] = 1.0
    y.backward(sw.Tensor(ones, 0, compact([6])))
    every = TileSet([(0,), (1,), (2,)])
    assert policy.calls == [(every, "operation"), (every, "backward")]
    # The evicted saved tiles came back for the gradient; the plan's
    # eviction ran after it.
    assert t.tile_state((2,)).location == "primary"
    assert t.tile_state((0,)).location == "secondary"
    assert [x.grad[i] for i in range(6)] == [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("result", "exc"),
    [(3, TypeError), (ResidencyPlan(evict=TileSet([(9,)])), ValueError)],
)
def test_policy_bad_plans(result, exc):
    t = TiledEvictable(
        filled(6), sw.FileBacked(dtype=F32), (3,), (2,), residency_policy=Recorder(result)
    )
    t.evict(TileSet([(2,)]))
    x = sw.Tensor(t, 0, compact([6]))
    with pytest.raises(exc):
        sw.relu(x)
    assert t.tile_state((2,)).location == "secondary"  # nothing moved


def test_policy_exception_propagates():
    class Boom:
        def plan(self, required, purpose):
            raise KeyError("policy bug")

    t = TiledEvictable(filled(2), sw.CPU(2), (1,), (2,), residency_policy=Boom())
    with pytest.raises(KeyError, match="policy bug"):
        sw.relu(sw.Tensor(t, 0, compact([2])))
