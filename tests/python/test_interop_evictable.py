"""Interactions of DLPack export, move/move_async and the Evictable carrier.

Interop-movement specification sections covered here: "A carrier opts into
DLPack through dlpack_info" (Evictable refused in both residencies, carrier
failure before the dtype), "Versioned exports advertise mutability" (an owned
tier exports read-only), "A capsule keeps its producer alive but not released
storage" (release by a move, by move_async and by an eviction while a capsule
is outstanding), "move relocates values into a caller-supplied carrier" and
its validation table (owned tiers as source or destination, Evictable tensors
as source and destination), "Move registration is explicit" and "A move
operation performs its transfer through the copy hook" (Python-registered
MoveOperation subclasses driving evict/promote), "Pending movement preserves
lifetime through completion" (transitions and tier claims while a move is
pending), "Move participates in autograd across the carrier boundary"
(gradients through moves into and out of hierarchies), with failure
injection on those paths. Reference sections 10, 15 and 16.
"""

import gc
import re
import sys

import numpy as np
import pytest
import strideweave as sw
from helpers_carriers import flat
from strideweave import CPU, DType, Evictable, FileBacked, Generic, Tensor, _native
from strideweave.carriers.move import (
    ElementwiseMoveOperation,
    MoveOperation,
    dispatch_move,
    move_async,
    registered_move_operation,
)
from test_dlpack import READ_ONLY, capsule_name, fields, managed

EV_DLPACK = "DLPack is not supported for Evictable carrier"
EVICTED = "Evictable carrier is evicted; call promote() first"
OWNED_MOVE = "tensor carrier is owned by another carrier object and cannot be moved directly"
PENDING = "Carrier is owned by a pending move and is not mutable"
BIG = 1 << 18  # float32 elements: 1 MiB, a move that runs on a worker
VALUES = [1.0, -2.0, 3.5, 4.0]


def exact(message):
    return "^" + re.escape(message) + "$"


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))


@pytest.fixture(autouse=True)
def clean_state():
    yield
    _native._debug_move_hold(False)
    _native._debug_fail_io_after(-1)
    _native._debug_fail_alloc_after(-1)
    _native._move_wait_idle()
    assert _native._move_pending_count() == 0


def cpu(values):
    return CPU(0).new_like(list(values))


def cpu_hierarchy(values=VALUES):
    return Evictable(cpu(values), FileBacked(dtype=DType.Float32))


def logical(t):
    return [t[i] for i in range(t.size())]


def big_cpu(n=BIG, last=3.0):
    c = CPU(n)
    c[n - 1] = last
    return Tensor(c, 0, flat(n))


class MyGeneric(Generic):
    pass


# ------------------------------------------------------------ DLPack


def test_dlpack_refused_on_evictable_tensors_in_both_residencies():
    e = cpu_hierarchy()
    t = Tensor(e, 1, flat(2))
    for evicted in (False, True):
        if evicted:
            e.evict()
        with pytest.raises(BufferError, match=exact(EV_DLPACK)):
            t.__dlpack_device__()
        for kwargs in ({}, {"max_version": (1, 0)}, {"dl_device": (1, 0)}, {"stream": 1}):
            with pytest.raises(BufferError, match=exact(EV_DLPACK)):
                t.__dlpack__(**kwargs)
        with pytest.raises(BufferError, match=exact(EV_DLPACK)):
            np.from_dlpack(t)
        # the copy demand is resolved first (reference section 15)
        with pytest.raises(BufferError, match="^DLPack copy exports are not supported$"):
            t.__dlpack__(copy=True)
        # export neither changes residency nor versions
        assert e.is_evicted() is evicted and e.version == 0
    e.promote()
    assert logical(Tensor(e, 0, flat(4))) == VALUES


def test_evictable_carrier_failure_precedes_the_dtype():
    # Floating is not exportable either; the carrier failure is reported.
    e = Evictable(Generic([1.0, 2.0]), Generic([]))
    t = Tensor(e, 0, flat(2))
    with pytest.raises(BufferError, match=exact(EV_DLPACK)):
        t.__dlpack__()
    with pytest.raises(BufferError, match=exact(EV_DLPACK)):
        t.__dlpack_device__()
    b = Evictable(CPU(2, dtype=DType.Bool), CPU(0, dtype=DType.Bool))
    with pytest.raises(BufferError, match=exact(EV_DLPACK)):
        Tensor(b, 0, flat(2)).__dlpack__(max_version=(1, 0))


def test_failed_evictable_exports_keep_no_reference():
    t = Tensor(cpu_hierarchy(), 0, flat(4))
    before = sys.getrefcount(t)
    for _ in range(50):
        with pytest.raises(BufferError):
            t.__dlpack__(max_version=(1, 0))
        with pytest.raises(BufferError):
            t.__dlpack_device__()
    assert sys.getrefcount(t) == before


def test_owned_tier_exports_read_only_and_eviction_releases_it():
    p = cpu(VALUES)
    e = Evictable(p, FileBacked(dtype=DType.Float32))
    tier = Tensor(p, 0, flat(4))
    cap = tier.__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == "dltensor_versioned"
    assert managed(cap).flags & READ_ONLY
    assert fields(cap)["data"] == p.pointer()
    legacy = tier.__dlpack__()
    a = np.from_dlpack(tier)
    assert a.tolist() == VALUES and not a.flags.writeable
    # the eviction releases the exported primary while capsules are out
    e.evict()
    assert e.is_evicted() and p.is_released() and p.pointer() == 0
    assert fields(cap)["data"] != 0  # now dangling: never read it
    with pytest.raises(BufferError, match="^DLPack data pointer must be non-null$"):
        tier.__dlpack__()
    # the secondary tier is owned too, and not exportable (FileBacked)
    with pytest.raises(BufferError, match="^DLPack is not supported for this carrier$"):
        Tensor(e.secondary, 0, flat(4)).__dlpack__()
    del a, cap, legacy
    gc.collect()
    e.promote()
    assert logical(Tensor(e, 0, flat(4))) == VALUES
    # the fresh primary exports read-only as long as it is owned
    fresh = Tensor(e.primary, 0, flat(4))
    assert managed(fresh.__dlpack__(max_version=(1, 0))).flags & READ_ONLY
    assert np.from_dlpack(fresh).tolist() == VALUES


def test_capsule_outstanding_while_move_releases_the_source():
    t = Tensor(cpu(VALUES), 0, flat(4))
    source = t.carrier
    address = source.pointer()
    cap = t.__dlpack__(max_version=(1, 0))
    m = sw.move(t, FileBacked(dtype=DType.Float32))  # succeeds
    assert source.is_released() and source.pointer() == 0
    assert fields(cap)["data"] == address  # no longer held by the carrier
    with pytest.raises(BufferError, match="^DLPack data pointer must be non-null$"):
        t.__dlpack__()
    assert logical(m) == VALUES
    # moved back into a CPU carrier, the values export again from there
    back = sw.move(m, CPU(4))
    assert np.from_dlpack(back).tolist() == VALUES
    assert fields(back.__dlpack__())["data"] == back.carrier.pointer()
    del cap
    gc.collect()


def test_capsule_keeps_a_moved_tensor_object_alive():
    import weakref

    t = Tensor(cpu(VALUES), 0, flat(4))
    tref = weakref.ref(t)
    cap = t.__dlpack__()
    m = sw.move(t, CPU(4))
    assert m.autograd_ctx.inputs() == (t,)  # the move node holds the source too
    del t, m
    gc.collect()
    assert tref() is not None
    del cap
    gc.collect()
    assert tref() is None


def test_capsule_outstanding_while_an_asynchronous_move_is_pending():
    t = big_cpu(last=5.0)
    source = t.carrier
    cap = t.__dlpack__(max_version=(1, 0))
    f = FileBacked(dtype=DType.Float32)
    _native._debug_move_hold(True)
    h = move_async(t, f)
    assert not h.done
    # reads continue: a second export aliases the still-live source
    a = np.from_dlpack(t)
    assert a[BIG - 1] == 5.0
    with pytest.raises(RuntimeError, match=exact(PENDING)):
        source.release()
    _native._debug_move_hold(False)
    m = h.wait()
    assert source.is_released() and m[BIG - 1] == 5.0
    del a, cap
    gc.collect()


def test_dlpack_of_a_move_result_in_an_evictable_destination():
    e = cpu_hierarchy([0.0] * 4)
    m = sw.move(Tensor(cpu(VALUES), 0, flat(4)), e)
    assert m.carrier is e
    with pytest.raises(BufferError, match=exact(EV_DLPACK)):
        m.__dlpack__()


# ------------------------------------------------------------ move and tiers


def test_direct_move_of_an_owned_tier_is_refused():
    p, s = cpu(VALUES), CPU(4)
    e = Evictable(p, s)
    for tier in (p, s):
        t = Tensor(tier, 0, flat(4))
        for mover in (sw.move, lambda x, d: move_async(x, d).wait()):
            dest = CPU(4)
            with pytest.raises(RuntimeError, match=exact(OWNED_MOVE)):
                mover(t, dest)
            assert dest.version == 0 and not tier.is_released() and tier.is_owned()
    old_primary = Tensor(p, 0, flat(4))
    e.evict()
    # the evicted secondary is still owned; the old primary is released
    with pytest.raises(RuntimeError, match=exact(OWNED_MOVE)):
        sw.move(Tensor(e.secondary, 0, flat(4)), CPU(4))
    with pytest.raises(RuntimeError, match="^tensor carrier is released$"):
        sw.move(old_primary, CPU(4))
    assert e.is_evicted() and e.version == 0
    e.promote()
    assert list(e) == VALUES


def test_move_into_an_owned_tier_is_refused():
    p = cpu([0.0] * 4)
    e = Evictable(p, FileBacked(dtype=DType.Float32))
    t = Tensor(cpu(VALUES), 0, flat(4))
    for dest in (p, e.secondary):
        with pytest.raises(RuntimeError, match="^destination carrier must be mutable$"):
            sw.move(t, dest)
        with pytest.raises(RuntimeError, match="^destination carrier must be mutable$"):
            move_async(t, dest)
    assert not t.carrier.is_released() and p.version == 0 and e.version == 0
    assert e.secondary.size() == 0  # an empty FileBacked tier did not grow


def test_tiers_are_movable_again_after_the_hierarchy_is_collected():
    p = cpu(VALUES)
    e = Evictable(p, CPU(0))
    del e
    gc.collect()
    m = sw.move(Tensor(p, 0, flat(4)), CPU(4))
    assert logical(m) == VALUES and p.is_released()


@pytest.mark.parametrize("kind", ["CPU", "Generic"])
def test_move_an_evictable_tensor_out(kind):
    if kind == "CPU":
        e, dest = cpu_hierarchy(), CPU(4)
    else:
        e, dest = Evictable(Generic(list(VALUES)), Generic([])), Generic([0.0] * 4)
    p, s = e.primary, e.secondary
    t = Tensor(e, 0, flat(4))
    assert dispatch_move(Evictable, type(dest)) is ElementwiseMoveOperation
    h = move_async(t, dest)
    assert h.done  # the elementwise route completes at submission
    m = h.wait()
    assert m.carrier is dest and logical(m) == VALUES
    assert type(m.autograd_ctx) is ElementwiseMoveOperation
    assert e.is_released() and p.is_released() and s.is_released()


def test_move_into_an_evictable_destination():
    e = cpu_hierarchy([0.0] * 4)
    t = Tensor(cpu(VALUES), 0, flat(4))
    m = sw.move(t, e)
    assert m.carrier is e and logical(m) == VALUES and t.carrier.is_released()
    assert e.version == 4 and e.primary.version == 4  # one write per element
    e.evict()
    e.promote()
    assert logical(m) == VALUES


def test_move_from_an_evicted_hierarchy_fails_and_keeps_everything():
    e = cpu_hierarchy()
    t = Tensor(e, 0, flat(4))
    e.evict()
    dest = CPU(4)
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        sw.move(t, dest)
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        move_async(t, dest).wait()
    assert e.is_evicted() and not e.is_released() and dest.version == 0
    e.promote()
    assert logical(sw.move(t, dest)) == VALUES and e.is_released()


def test_move_into_an_evicted_hierarchy_fails_and_keeps_everything():
    e = cpu_hierarchy([0.0] * 4)
    e.evict()
    t = Tensor(cpu(VALUES), 0, flat(4))
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        sw.move(t, e)
    assert not t.carrier.is_released() and e.is_evicted() and e.version == 0
    e.promote()
    assert logical(sw.move(t, e)) == VALUES


def test_evictable_destination_dtype_and_size_checks():
    t = Tensor(cpu(VALUES), 0, flat(4))
    with pytest.raises(TypeError, match="^destination dtype must match the tensor dtype$"):
        sw.move(t, Evictable(Generic([0.0] * 4), Generic([])))
    with pytest.raises(
        ValueError, match="^destination carrier is too small for the tensor layout$"
    ):
        sw.move(t, cpu_hierarchy([0.0] * 3))
    frozen = Evictable(CPU(4, mutable=False), CPU(0))
    with pytest.raises(RuntimeError, match="^destination carrier must be mutable$"):
        sw.move(t, frozen)
    released = cpu_hierarchy()
    released.release()
    with pytest.raises(RuntimeError, match="^destination carrier is released$"):
        sw.move(t, released)
    assert not t.carrier.is_released()


# ------------------------------------------------- pending asynchronous moves


def test_hierarchy_cannot_claim_participants_of_a_pending_move():
    t = big_cpu(last=2.0)
    source = t.carrier
    f = FileBacked(dtype=DType.Float32)
    _native._debug_move_hold(True)
    h = move_async(t, f)
    assert not h.done
    with pytest.raises(RuntimeError, match=exact(PENDING)):
        Evictable(source, CPU(0))
    other = CPU(2)
    # a destination owned by the move is not mutable (checked before claims)
    with pytest.raises(RuntimeError, match=exact("secondary carrier must be mutable")):
        Evictable(other, f)
    # the move owns its participants; the refused hierarchy claimed nothing
    assert source.is_owned() and f.is_owned() and not other.is_owned()
    _native._debug_move_hold(False)
    m = h.wait()
    assert source.is_released() and m[BIG - 1] == 2.0
    e = Evictable(f, CPU(0))  # the destination is usable again
    e.evict()
    e.promote()
    assert e[BIG - 1] == 2.0


def test_transitions_do_not_wait_for_pending_moves():
    # A transition of a large CPU/FileBacked hierarchy runs the bulk route by
    # lowered execution on the calling thread, even while workers are held.
    e = Evictable(big_cpu(last=7.0).carrier, FileBacked(dtype=DType.Float32))
    pending = big_cpu(last=1.0)
    _native._debug_move_hold(True)
    h = move_async(pending, FileBacked(dtype=DType.Float32))
    assert not h.done and _native._move_pending_count() == 1
    e.evict()
    assert e.is_evicted() and e.secondary[BIG - 1] == 7.0
    e.promote()
    assert not e.is_evicted() and e[BIG - 1] == 7.0
    assert _native._move_pending_count() == 1 and not h.done
    _native._debug_move_hold(False)
    assert h.wait()[BIG - 1] == 1.0


def test_move_a_hierarchy_result_asynchronously_while_evicting_another():
    e = cpu_hierarchy()
    y = sw.mul(Tensor(e, 0, flat(4)), 2.0)
    big = big_cpu(last=4.0)
    _native._debug_move_hold(True)
    h = move_async(big, FileBacked(dtype=DType.Float32))
    m = sw.move(y, CPU(4))  # Evictable source: completes here
    e.evict()
    _native._debug_move_hold(False)
    assert logical(m) == [2.0 * v for v in VALUES] and h.wait()[BIG - 1] == 4.0
    e.promote()
    assert list(e) == VALUES


# ---------------------------------------- registered moves drive transitions


class CountingMove(MoveOperation):
    calls = []

    def _copy(self, tensor, destination, output, element_count):
        CountingMove.calls.append(
            (type(tensor.carrier), type(destination), element_count, output.carrier is destination)
        )
        for i in range(tensor.size()):
            output[i] = tensor[i]


class MyGenericTiers:
    @staticmethod
    def make(values=VALUES):
        return Evictable(MyGeneric(list(values)), Generic([]))


def test_transitions_use_the_registered_python_operation():
    CountingMove.calls.clear()
    # Generic.allocate_like makes a plain Generic even for a subclass
    # (reference section 7), so the promotion is the (Generic, Generic) pair.
    with registered_move_operation(MyGeneric, Generic, CountingMove):
        with registered_move_operation(Generic, Generic, CountingMove):
            e = MyGenericTiers.make()
            e.evict()
            e.promote()
    assert CountingMove.calls == [(MyGeneric, Generic, 4, True), (Generic, Generic, 4, True)]
    assert list(e) == VALUES and type(e.primary) is Generic
    # after unregistration the elementwise fallback serves the same pair
    e.evict()
    e.promote()
    assert len(CountingMove.calls) == 2 and list(e) == VALUES


def test_the_registry_is_consulted_at_every_transition():
    CountingMove.calls.clear()
    e = MyGenericTiers.make()  # built before the registration
    with registered_move_operation(MyGeneric, Generic, CountingMove):
        e.evict()
    e.promote()
    assert CountingMove.calls == [(MyGeneric, Generic, 4, True)]
    assert list(e) == VALUES


def test_a_transition_runs_only_the_copy_hook():
    seen = []

    class Sealed(CountingMove):
        def forward(self, *inputs):
            seen.append("forward")
            return super().forward(*inputs)

        def _execute_lowered(self, *inputs):
            seen.append("_execute_lowered")
            return super()._execute_lowered(*inputs)

    CountingMove.calls.clear()
    e = MyGenericTiers.make()
    with registered_move_operation(MyGeneric, Generic, Sealed):
        e.evict()
    assert seen == [] and len(CountingMove.calls) == 1 and e.version == 0
    e.promote()
    assert list(e) == VALUES


def test_a_failing_registered_operation_leaves_the_transition_retryable():
    class Failing(MoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            output[0] = tensor[0]  # a partial write first
            raise LookupError("tier copy failed")

    e = MyGenericTiers.make()
    p, s = e.primary, e.secondary
    with registered_move_operation(MyGeneric, Generic, Failing):
        with pytest.raises(LookupError, match="^tier copy failed$"):
            e.evict()
        assert not e.is_evicted() and e.primary is p and e.secondary is s
        assert not p.is_released() and s.size() == 0 and e.version == 0
    e.evict()
    with registered_move_operation(Generic, Generic, Failing):
        with pytest.raises(LookupError):
            e.promote()
        assert e.is_evicted() and e.primary is p and p.is_released()
        assert not e.secondary.is_released() and list(e.secondary) == VALUES
    e.promote()
    assert list(e) == VALUES


def test_a_registered_operation_that_fails_with_a_pin():
    class PinnedElsewhere(CountingMove):
        source_class = CPU

    e = MyGenericTiers.make()
    with registered_move_operation(MyGeneric, Generic, PinnedElsewhere):
        # construction checks both directions before claiming any tier
        a, b = MyGeneric([1.0]), Generic([])
        with pytest.raises(TypeError, match="^PinnedElsewhere requires a CPU source$"):
            Evictable(a, b)
        assert not a.is_owned() and not b.is_owned()
        # an existing hierarchy meets the pin at its transition
        with pytest.raises(TypeError, match="^PinnedElsewhere requires a CPU source$"):
            e.evict()
    assert not e.is_evicted() and list(e) == VALUES
    e.evict()
    assert e.is_evicted()


def test_a_move_hook_cannot_disturb_the_hierarchy_it_moves():
    # While a transition runs, the hierarchy takes part in a move: the hook
    # cannot transition, write or release it (no recursion, no half state).
    e = MyGenericTiers.make()
    seen = []

    class Meddling(CountingMove):
        def _copy(self, tensor, destination, output, element_count):
            for action in (e.evict, e.promote, e.release, lambda: e.__setitem__(0, 9.0)):
                with pytest.raises(RuntimeError, match=exact(PENDING)):
                    action()
                seen.append(action)
            assert e[1] == VALUES[1]  # reads continue
            super()._copy(tensor, destination, output, element_count)

    with registered_move_operation(MyGeneric, Generic, Meddling):
        e.evict()
    assert len(seen) == 4 and e.is_evicted() and not e.is_released()
    assert list(e.secondary) == VALUES and e.version == 0
    e.promote()
    e[0] = 5.0  # usable again afterwards
    assert list(e) == [5.0] + VALUES[1:]


class ReleasingDestination(MoveOperation):
    def _copy(self, tensor, destination, output, element_count):
        for i in range(tensor.size()):
            output[i] = tensor[i]
        destination.release()


def test_a_hook_that_releases_its_destination_fails_the_move():
    t = Tensor(MyGeneric(list(VALUES)), 0, flat(4))
    dest = Generic([0.0] * 4)
    with registered_move_operation(MyGeneric, Generic, ReleasingDestination):
        with pytest.raises(RuntimeError, match="^destination carrier is released$"):
            sw.move(t, dest)
        with pytest.raises(RuntimeError, match="^destination carrier is released$"):
            move_async(t, Generic([0.0] * 4)).wait()
    assert not t.carrier.is_released() and logical(t) == VALUES
    assert t.carrier.version == 0


def test_a_hook_that_releases_a_tier_fails_the_transition():
    e = MyGenericTiers.make()
    p, s = e.primary, e.secondary
    with registered_move_operation(MyGeneric, Generic, ReleasingDestination):
        with pytest.raises(RuntimeError, match="^destination carrier is released$"):
            e.evict()
    assert not e.is_evicted() and e.primary is p and e.secondary is s
    assert not p.is_released() and list(e) == VALUES
    e.evict()
    e.promote()
    assert list(e) == VALUES


def test_allocation_failures_in_a_registered_transition():
    failures = 0
    with registered_move_operation(MyGeneric, Generic, CountingMove):
        with registered_move_operation(Generic, Generic, CountingMove):
            for k in range(40):
                e = MyGenericTiers.make()
                for step in ("evict", "promote"):
                    before = (e.is_evicted(), e.primary, e.secondary, e.version)
                    _native._debug_fail_alloc_after(k)
                    try:
                        getattr(e, step)()
                    except MemoryError:
                        failures += 1
                        _native._debug_fail_alloc_after(-1)
                        assert (e.is_evicted(), e.primary, e.secondary, e.version) == before
                        getattr(e, step)()
                    finally:
                        _native._debug_fail_alloc_after(-1)
                assert list(e) == VALUES
    assert failures > 0


# ------------------------------------------------------------ autograd


def test_gradient_through_a_move_out_of_a_hierarchy():
    x = Tensor(cpu_hierarchy(), 0, flat(4))
    y = sw.mul(x, 3.0)
    m = sw.move(y, CPU(4))
    assert type(m.autograd_ctx) is ElementwiseMoveOperation
    assert m.autograd_ctx.inputs() == (y,)
    g = Tensor(cpu([1.0, 2.0, 3.0, 4.0]), 0, flat(4))
    (grad,) = m.autograd_ctx.backward(g)
    # the gradient returns in fresh storage of the source's exact class
    assert type(grad.carrier) is Evictable and grad.carrier is not y.carrier
    assert type(grad.carrier.primary) is CPU and logical(grad) == [1.0, 2.0, 3.0, 4.0]
    assert grad.autograd_ctx is None
    m.backward(g)
    assert type(x.grad.carrier) is Evictable
    assert logical(x.grad) == [3.0, 6.0, 9.0, 12.0]


def test_gradient_through_a_move_into_a_hierarchy():
    x = Tensor(cpu(VALUES), 0, flat(4))
    y = sw.mul(x, 2.0)
    m = sw.move(y, cpu_hierarchy([0.0] * 4))
    z = sw.mul(m, 5.0)
    assert type(z.carrier) is Evictable
    # the hierarchy holding the result may be evicted before backward; the
    # saved input (the move result) must be promoted (reference section 10.2)
    z.carrier.evict()
    z.backward(Tensor(cpu_hierarchy([1.0, 1.0, 1.0, 2.0]), 0, flat(4)))
    assert type(x.grad.carrier) is CPU
    assert logical(x.grad) == [10.0, 10.0, 10.0, 20.0]


def test_gradient_for_an_evicted_source_of_a_move():
    # The move released the source hierarchy; its gradient still comes back
    # in a fresh hierarchy like it.
    x = Tensor(cpu_hierarchy(), 0, flat(4))
    m = sw.move(x, CPU(4))
    assert x.carrier.is_released()
    m.backward(Tensor(cpu([1.0, 0.5, 0.25, 2.0]), 0, flat(4)))
    assert type(x.grad.carrier) is Evictable and not x.grad.carrier.is_evicted()
    assert logical(x.grad) == [1.0, 0.5, 0.25, 2.0]
    x.grad.carrier.evict()
    x.grad.carrier.promote()
    assert logical(x.grad) == [1.0, 0.5, 0.25, 2.0]


def test_move_cotangent_checks_with_hierarchies():
    m = sw.move(Tensor(cpu_hierarchy(), 0, flat(4)), CPU(4))
    node = m.autograd_ctx
    released = Tensor(cpu_hierarchy(), 0, flat(4))
    released.carrier.release()
    with pytest.raises(RuntimeError, match="^gradient carrier is released$"):
        node.backward(released)
    with pytest.raises(ValueError, match="^gradient shape must match the moved tensor's shape$"):
        node.backward(Tensor(cpu_hierarchy(), 0, flat(3)))
    from helpers_carriers import L

    with pytest.raises(ValueError, match="^move backward requires an injective gradient Layout$"):
        node.backward(Tensor(cpu_hierarchy(), 0, L([4], [0])))
    evicted = Tensor(cpu_hierarchy(), 0, flat(4))
    evicted.carrier.evict()
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        node.backward(evicted)
    evicted.carrier.promote()
    (grad,) = node.backward(evicted)
    assert type(grad.carrier) is Evictable and logical(grad) == VALUES


def test_allocation_failures_moving_a_hierarchy_with_autograd():
    gc.collect()
    base = _native._debug_live_allocs()
    for n in range(400):
        x = Tensor(cpu_hierarchy(), 0, flat(4))
        dest = CPU(4)
        _native._debug_fail_alloc_after(n)
        try:
            m = sw.move(x, dest)
            m.backward(Tensor(cpu([1.0] * 4), 0, flat(4)))
        except MemoryError:
            _native._debug_fail_alloc_after(-1)
            assert x.grad is None
            if not x.carrier.is_released():
                assert dest.version == 0 and logical(x) == VALUES
            del x, dest
            m = None
            gc.collect()
            assert _native._debug_live_allocs() == base, f"leak after failure {n}"
            continue
        finally:
            _native._debug_fail_alloc_after(-1)
        assert logical(x.grad) == [1.0] * 4
        del x, dest, m
        gc.collect()
        assert _native._debug_live_allocs() == base
        return
    raise AssertionError("still failing after 400 allocations")


def test_torch_consumer_is_refused_by_a_hierarchy():
    torch = pytest.importorskip("torch")
    e = cpu_hierarchy()
    t = Tensor(e, 0, flat(4))
    for _ in range(2):
        with pytest.raises(BufferError, match=exact(EV_DLPACK)):
            torch.from_dlpack(t)
        e.evict()
    # a tier owned by the hierarchy is readable through torch
    e.promote()
    assert torch.from_dlpack(Tensor(e.primary, 0, flat(4))).tolist() == VALUES
