"""Garbage collection across the binding: per-class tables that must not
keep classes alive, and reference cycles that pass through library objects
(carriers, tensors, operations) and must be collected, while objects the
library still uses survive."""

import gc
import sys
import weakref

import pytest
import strideweave as sw
from helpers_carriers import L, ListCarrier, flat
from strideweave import CPU, DType, Generic, Tensor
from strideweave.carriers.move import (
    ElementwiseMoveOperation,
    MoveOperation,
    register_move_operation,
    unregister_move_operation,
)


def cpu_tensor(values):
    c = CPU(len(values))
    for i, v in enumerate(values):
        c[i] = v
    return Tensor(c, 0, flat(len(values)))


def gone(ref):
    gc.collect()
    return ref() is None


# ------------------------------------------------------- class lifetimes


def test_carrier_subclasses_are_not_kept_alive():
    def use():
        class MyCPU(CPU):
            pass

        class MyGeneric(Generic):
            pass

        class Values(ListCarrier):
            pass

        t = Tensor(MyCPU(2), 0, flat(2))
        y = sw.relu(t)
        assert y.autograd_ctx._dispatch_carrier_class is MyCPU
        sw.mul(y, 2.0).backward(cpu_tensor([1.0, 1.0]))
        g = Tensor(MyGeneric([1.0, 2.0]), 0, flat(2))
        assert sw.exp(g).autograd_ctx._dispatch_carrier_class is MyGeneric
        v = Values([1.0])
        assert v.dispatch_op is not None and v[0] == 1.0
        return [weakref.ref(MyCPU), weakref.ref(MyGeneric), weakref.ref(Values)]

    refs = use()
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_a_dispatched_operation_keeps_its_carrier_class():
    def make():
        class MyCPU(CPU):
            pass

        return MyCPU(1).dispatch_op("relu"), weakref.ref(MyCPU)

    op, ref = make()
    gc.collect()
    assert ref() is not None and op._dispatch_carrier_class is ref()
    del op
    assert gone(ref)


def test_profiler_events_keep_the_carrier_class():
    def run(prof):
        class MyCPU(CPU):
            pass

        with prof:
            sw.relu(Tensor(MyCPU(2), 0, flat(2)))
        return weakref.ref(MyCPU)

    prof = sw.profile()
    ref = run(prof)
    gc.collect()
    (event,) = [e for e in prof.events() if e.name == "relu"]
    assert event.carrier_type is ref() and event.carrier_type.__name__ == "MyCPU"
    del prof, event
    assert gone(ref)


def test_move_operation_subclasses_are_not_kept_alive():
    def use():
        class Native(ElementwiseMoveOperation):
            pass

        class Copying(MoveOperation):
            def _copy(self, tensor, destination, output, element_count):
                for i in range(tensor.size()):
                    output[i] = tensor[i]

        for cls in (Native, Copying):
            m = cls().forward(cpu_tensor([1.0, 2.0]), CPU(2))
            assert [m[0], m[1]] == [1.0, 2.0] and type(m.autograd_ctx) is cls
        return [weakref.ref(Native), weakref.ref(Copying)]

    refs = use()
    gc.collect()
    assert [r() for r in refs] == [None, None]


@pytest.mark.parametrize("how", ["move", "forward"])
def test_a_recorded_move_keeps_its_route_back(how):
    # The route back is captured by the forward move; unregistering it must
    # not free it while the graph may still run it.
    class Destination(Generic):
        pass

    calls = []

    def register():
        class Back(MoveOperation):
            def _copy(self, tensor, destination, output, element_count):
                calls.append(element_count)
                for i in range(tensor.size()):
                    output[i] = tensor[i]

        register_move_operation(Destination, Generic, Back)
        return weakref.ref(Back)

    ref = register()
    x = Tensor(Generic([1.0, 2.0]), 0, flat(2))
    if how == "move":
        y = sw.move(x, Destination([0.0, 0.0]))
    else:
        y = ElementwiseMoveOperation().forward(x, Destination([0.0, 0.0]))
    assert unregister_move_operation(Destination, Generic) is ref()
    gc.collect()
    assert ref() is not None
    y.backward(Tensor(Destination([1.0, 3.0]), 0, y.layout))
    assert calls == [2] and [x.grad[0], x.grad[1]] == [1.0, 3.0]
    del y
    assert gone(ref)


# ------------------------------------------------------- cycles collected


class MyCPU(CPU):
    pass


class MyEvictable(sw.Evictable):
    pass


def collect_all(make, rounds=3):
    """Runs make() (which returns weak references to what it built, now
    unreferenced but for cycles) a few times; everything must be gone after
    one collection, and the library objects freed with it. A first round
    fills the caches (compiled layout commands) that stay."""
    make()
    gc.collect()
    before = sw._native._debug_live_allocs()
    refs = []
    for _ in range(rounds):
        refs += make()
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)
    assert sw._native._debug_live_allocs() <= before


def test_carrier_holding_a_tensor_over_itself():
    # The reported case: 300 such carriers of 1 MiB each stayed alive.
    def make():
        c = MyCPU(1 << 16)
        c.t = Tensor(c, 0, flat(1 << 16))
        return [weakref.ref(c), weakref.ref(c.t)]

    collect_all(make, rounds=20)


def test_carrier_holding_several_tensors_and_views_over_itself():
    def make():
        c = MyCPU(4)
        c.t = Tensor(c, 0, flat(4))
        c.u = Tensor(c, 1, flat(3))
        c.v = c.t[1:3]
        c.w = sw.permute(c.v, 0)
        return [weakref.ref(c), weakref.ref(c.t), weakref.ref(c.v)]

    collect_all(make)


@pytest.mark.parametrize(
    "compute",
    [
        lambda x: sw.relu(x),
        lambda x: x * x,
        lambda x: sw.exp(sw.relu(x) * 2.0),
        lambda x: sw.functional.reduce(x, "i j -> i"),
    ],
)
def test_carrier_holding_results_computed_from_itself(compute):
    # The graph between the result and the tensor over the carrier is made
    # of library objects without Python objects, or with ones only the
    # library keeps.
    def make():
        c = MyCPU(4)
        c.y = compute(Tensor(c, 0, L([2, 2], [1, 2])))
        return [weakref.ref(c), weakref.ref(c.y), weakref.ref(c.y.autograd_ctx)]

    collect_all(make)


def test_carrier_holding_the_operation_of_a_result():
    def make():
        c = MyCPU(2)
        y = sw.relu(Tensor(c, 0, flat(2)))
        c.op = y.autograd_ctx
        return [weakref.ref(c), weakref.ref(y), weakref.ref(c.op)]

    collect_all(make)


def test_python_carrier_holding_a_tensor_over_itself():
    def make():
        c = ListCarrier([1.0, 2.0], dtype=DType.Floating)
        c.t = Tensor(c, 0, flat(2))
        return [weakref.ref(c), weakref.ref(c.t)]

    collect_all(make)


@pytest.mark.parametrize("kind", ["Generic", "CPU"])
def test_a_tensor_that_is_its_own_gradient(kind):
    def make():
        x = Tensor(Generic([1.0, 2.0]) if kind == "Generic" else CPU(2), 0, flat(2))
        x.grad = x
        y = Tensor(Generic([1.0, 2.0]) if kind == "Generic" else CPU(2), 0, flat(2))
        z = Tensor(Generic([1.0, 2.0]) if kind == "Generic" else CPU(2), 0, flat(2))
        y.grad, z.grad = z, y
        return [weakref.ref(x), weakref.ref(y), weakref.ref(z), weakref.ref(x.carrier)]

    collect_all(make)


def test_a_tensor_whose_context_saved_it():
    def make():
        x = Tensor(Generic([1.0, 2.0]), 0, flat(2))
        op = sw.GenericReLUOperation()
        op.store_inputs(x, x)
        x.autograd_ctx = op
        return [weakref.ref(x), weakref.ref(op)]

    collect_all(make)


def test_generic_holding_a_tensor_over_itself():
    def make():
        values = [1, 2]
        g = Generic(values, dtype=DType.Any)
        t = Tensor(g, 0, flat(2))
        values[0] = t  # the store is the list itself
        g2 = Generic([1, 2], dtype=DType.Any)
        g2[1] = Tensor(g2, 0, flat(2))
        return [weakref.ref(g), weakref.ref(t), weakref.ref(g2)]

    collect_all(make)


def test_evictable_holding_a_tensor_over_itself():
    def make():
        e = MyEvictable(CPU(4), CPU(4))
        e.t = Tensor(e, 0, flat(4))
        e.y = e.t * 2.0
        return [weakref.ref(e), weakref.ref(e.primary), weakref.ref(e.t)]

    collect_all(make)


def test_evictable_storing_a_tensor_over_itself():
    # An element of a hierarchy over Generic stores of any values.
    def make():
        e = sw.Evictable(Generic([0, 0], dtype=DType.Any), Generic([0, 0], dtype=DType.Any))
        e[0] = Tensor(e, 0, flat(2))
        e2 = sw.Evictable(Generic([0, 0], dtype=DType.Any), Generic([0, 0], dtype=DType.Any))
        e2[1] = Tensor(e2, 0, flat(2))
        e2.evict()
        return [weakref.ref(e), weakref.ref(e[0]), weakref.ref(e2)]

    collect_all(make)


def test_evictable_tiers_holding_a_tensor_over_it():
    def make():
        primary, secondary = MyCPU(4), MyCPU(4)
        e = sw.Evictable(primary, secondary)
        primary.t = Tensor(e, 0, flat(4))
        secondary.t = Tensor(e, 1, flat(3))
        return [weakref.ref(e), weakref.ref(primary), weakref.ref(secondary)]

    collect_all(make)


@pytest.mark.parametrize("transitions", [0, 1, 2])
def test_evictable_over_python_carriers_holding_a_tensor_over_it(transitions):
    def make():
        primary = ListCarrier([1.0, 2.0], dtype=DType.Floating)
        secondary = ListCarrier([0.0, 0.0], dtype=DType.Floating)
        e = sw.Evictable(primary, secondary)
        primary.t = Tensor(e, 0, flat(2))
        secondary.t = primary.t
        if transitions >= 1:
            e.evict()
            e.secondary.t = primary.t
        if transitions >= 2:
            e.promote()
            e.primary.t = primary.t
        return [weakref.ref(e), weakref.ref(primary), weakref.ref(e.primary)]

    collect_all(make)


def test_native_operation_whose_ctx_holds_its_result():
    def make():
        x = Tensor(Generic([1.0, 2.0]), 0, flat(2))
        op = sw.GenericAddOperation()
        op.ctx["y"] = op.forward(x, x)
        cop = CPU(1).dispatch_op("relu")
        cop.ctx["y"] = cop.forward(Tensor(CPU(2), 0, flat(2)))
        return [weakref.ref(op), weakref.ref(op.ctx["y"]), weakref.ref(cop)]

    collect_all(make)


class Doubling(sw.Operation):
    def _forward(self, x):
        out = Tensor(x.carrier.allocate_like(x.size()), 0, x.layout)
        for i in range(x.size()):
            out[i] = 2 * x[i]
        self.result = out
        self.ctx["result"] = out
        return out

    def backward(self, gradient):
        return [gradient * 2.0]


def test_python_operation_holding_its_result():
    def make():
        op = Doubling()
        y = op.forward(Tensor(Generic([1.0, 2.0]), 0, flat(2)))
        assert y.autograd_ctx is op
        return [weakref.ref(op), weakref.ref(y)]

    collect_all(make)


def test_move_operation_holding_its_result():
    class Keeping(ElementwiseMoveOperation):
        pass

    def make():
        op = Keeping()
        op.result = op.forward(cpu_tensor([1.0, 2.0]), MyCPU(2))
        op.result.carrier.op = op
        return [weakref.ref(op), weakref.ref(op.result)]

    collect_all(make)


# ------------------------------------------- nothing is collected too early


def test_objects_a_live_graph_holds_survive_with_their_state():
    def make():
        c = MyCPU(2)
        c[0], c[1] = 1.0, -2.0
        c.tag = "kept"
        x = Tensor(c, 0, flat(2))
        c.t = x  # a cycle as well
        y = sw.relu(x) * 3.0
        return y, weakref.ref(c), weakref.ref(x)

    y, c_ref, x_ref = make()
    gc.collect()
    assert c_ref() is not None and x_ref() is not None
    x = y.autograd_ctx.inputs()[0].autograd_ctx.inputs()[0]
    assert x is x_ref() and x.carrier is c_ref() and x.carrier.tag == "kept"
    y.backward(cpu_tensor([1.0, 1.0]))
    assert [x.grad[0], x.grad[1]] == [3.0, 0.0]
    del x, y
    assert gone(c_ref) and x_ref() is None


class MyTensor(Tensor):
    pass


def test_a_pending_asynchronous_move_keeps_its_participants():
    n = 1 << 18  # 1 MiB of float32: the move runs on a worker thread

    def cycle():
        c = MyCPU(2)
        c.t = Tensor(c, 0, flat(2))
        return weakref.ref(c)

    sw._native._debug_move_hold(True)
    try:
        t = MyTensor(CPU(n), 0, flat(n))
        t[n - 1] = 5.0
        t.me = t
        h = sw.move_async(t, sw.FileBacked(dtype=DType.Float32))
        assert not h.done
        t_ref, other = weakref.ref(t), cycle()
        del t
        gc.collect()
        # The move holds the source; and while it runs, cycles through
        # library objects wait for a later collection.
        assert t_ref() is not None and other() is not None
    finally:
        sw._native._debug_move_hold(False)
    m = h.wait()
    assert m[n - 1] == 5.0 and m.autograd_ctx.inputs()[0] is t_ref()
    assert t_ref().me is t_ref()
    sw._native._move_wait_idle()
    assert gone(other)
    del h, m
    assert gone(t_ref)


class CollectingIdentity(sw.Operation):
    """y = x; its backward collects garbage from inside a reverse pass that
    runs without the GIL."""

    seen = []

    def _forward(self, x):
        out = Tensor(CPU(x.size()), 0, x.layout)
        for i in range(x.size()):
            out[i] = x[i]
        return out

    def backward(self, gradient):
        gc.collect()
        CollectingIdentity.seen.append([r() is not None for r in self.watch])
        return [gradient]


def test_collection_inside_a_reverse_pass_without_the_gil():
    def cycle():
        c = MyCPU(2)
        c.t = Tensor(c, 0, flat(2))
        return weakref.ref(c)

    def graph():
        x = Tensor(MyCPU(2), 0, flat(2))
        x.carrier.t = x
        op = CollectingIdentity()
        z = sw.relu(op.forward(x)) * 2.0
        return z, op, weakref.ref(x)

    z, op, x_ref = graph()
    watch = op.watch = [cycle(), x_ref]
    del op
    CollectingIdentity.seen.clear()
    z.backward(cpu_tensor([1.0, 1.0]))
    # Inside the pass only Python references were reported: the unrelated
    # cycle survived that collection, and so did everything in the graph.
    assert CollectingIdentity.seen == [[True, True]]
    assert x_ref() is not None and x_ref().grad is not None
    assert gone(watch[0])
    del z
    assert gone(x_ref)


def test_collections_while_other_threads_run_reverse_passes():
    import threading

    errors = []

    def train():
        try:
            for _ in range(30):
                x = Tensor(MyCPU(64), 0, L([8, 8], [1, 8]))
                x.carrier.t = x
                for i in range(64):
                    x[i] = (i % 7) - 3.0
                y = sw.relu(x) * 2.0
                loss = sw.functional.reduce(y, "i j -> i")
                loss.backward(cpu_tensor([1.0] * 8))
                assert x.grad[0] == 0.0 and x.grad[5] == 2.0
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=train) for _ in range(2)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        c = MyCPU(4)
        c.t = Tensor(c, 0, flat(4))
        del c
        gc.collect()
    for t in threads:
        t.join()
    assert errors == []
    collect_all(lambda: [weakref.ref(MyCPU(1))])


# ---------------------------------------- reports never exceed the counts


def scenarios():
    """Objects in cycles through the library, still referenced: every kind
    of report the binding makes."""
    keep = []
    c = MyCPU(4)
    c.t = Tensor(c, 0, flat(4))
    c.v = c.t[1:3]
    c.r = sw.relu(c.v)
    d = MyCPU(4)
    d.y = Tensor(d, 0, flat(4)) * Tensor(d, 0, flat(4))
    d.z = (d.y * 2.0).autograd_ctx
    keep += [c, c.t, c.v, c.r, c.r.autograd_ctx, d, d.y, d.y.autograd_ctx, d.z]
    x = Tensor(Generic([1.0, 2.0]), 0, flat(2))
    x.grad = x
    keep += [x, x.carrier]
    values = [1, 2]
    g = Generic(values, dtype=DType.Any)
    values[0] = Tensor(g, 0, flat(2))
    keep += [g, values, values[0]]
    primary = MyCPU(4)
    e = MyEvictable(primary, CPU(4))
    primary.t = e.t = Tensor(e, 0, flat(4))
    e2 = MyEvictable(CPU(4), CPU(4))
    e2.y = Tensor(e2, 0, flat(4)) * 2.0
    keep += [e, primary, e.t, e2, e2.y, e2.y.autograd_ctx]
    op = Doubling()
    y = op.forward(Tensor(Generic([1.0]), 0, flat(1)))
    keep += [op, y, sw.GenericAddOperation()]
    return keep


def test_reports_never_exceed_reference_counts():
    # A report the collector cannot match with a reference would free an
    # object in use: the references reported to every object, by every
    # tracked object, stay within its reference count.
    keep = scenarios()
    everything = gc.get_objects()
    reported = {}
    for r in gc.get_referents(*everything):
        reported[id(r)] = reported.get(id(r), 0) + 1
    del everything, r
    for o in keep:
        # getrefcount's own argument and the loop variable are not reports.
        assert reported.get(id(o), 0) <= sys.getrefcount(o) - 2, repr(o)
    refs = [weakref.ref(o) for o in keep if not isinstance(o, list)]
    del keep, o
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


def test_a_tensor_saved_by_two_results_keeps_its_cycle():
    # COMPATIBILITY entry 37: two library holders that no one object's
    # walk reaches alone leave the toggle reference unexplained, so the
    # cycle stays (and nothing in it is freed early) until it is broken.
    c = MyCPU(2)
    c.t = Tensor(c, 0, flat(2))
    c.y = c.t * 2.0
    c.z = sw.relu(c.t)
    ref = weakref.ref(c)
    del c
    gc.collect()
    assert ref() is not None and ref().y.autograd_ctx.inputs()[0] is ref().t
    del ref().z
    assert gone(ref)
