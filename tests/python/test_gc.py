"""Garbage collection across the binding: per-class tables that must not
keep classes alive, and reference cycles that pass through library objects
(carriers, tensors, operations) and must be collected, while objects the
library still uses survive."""

import gc
import weakref

import pytest
import strideweave as sw
from helpers_carriers import ListCarrier, flat
from strideweave import CPU, Generic, Tensor
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
