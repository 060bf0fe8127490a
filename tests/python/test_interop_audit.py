"""Gaps found auditing the interop-movement specification against the tests.

Sections covered: "Await results share one completion contract" (the
completion base is read-only), "Move registration is explicit, validated,
and process-global" (the scoped registration refuses a duplicate on entry
and keeps the existing entry), "Pending movement preserves lifetime through
completion" (a synchronous copy hook cannot release, mutate or move again
the source it is moving), "A capsule keeps its producer alive but not
released storage" and "Export is zero-copy" (a consumer alias of a move
destination observes the moved values), and allocation failure injection
in the Python capsule protocol. Reference sections 15 and 16.
"""

import gc
import sys

import numpy as np
import pytest
import strideweave as sw
from helpers_carriers import flat
from strideweave import CPU, DType, FileBacked, Generic, Tensor, _native
from strideweave.carriers.move import (
    CpuToFileBackedMoveOperation,
    MoveOperation,
    dispatch_move,
    move_async,
    registered_move_operation,
)

VALUES = [1.0, -2.0, 3.5, 4.0]
PENDING = "^Carrier is owned by a pending move and is not mutable$"


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))


@pytest.fixture(autouse=True)
def clean_state():
    yield
    _native._debug_fail_alloc_after(-1)
    _native._move_wait_idle()


def cpu_tensor(values):
    return Tensor(CPU(0).new_like(list(values)), 0, flat(len(values)))


def logical(t):
    return [t[i] for i in range(t.size())]


class MyGeneric(Generic):
    pass


# ------------------------------------------------------------ completion


def test_completion_handles_are_read_only():
    h = move_async(cpu_tensor(VALUES), CPU(4))
    with pytest.raises(AttributeError):
        h.done = False
    with pytest.raises(AttributeError):
        del h.done
    with pytest.raises(AttributeError):
        h.result = None
    assert h.done is True and logical(h.wait()) == VALUES


# ------------------------------------------------------------ registry


def test_scoped_registration_refuses_a_duplicate_on_entry():
    class Other(MoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            raise AssertionError("never runs")

    entered = []
    with pytest.raises(
        ValueError, match=r"^a move operation is already registered for \(CPU, FileBacked\)$"
    ):
        with registered_move_operation(CPU, FileBacked, Other):
            entered.append(True)
    assert entered == []
    assert dispatch_move(CPU, FileBacked) is CpuToFileBackedMoveOperation
    m = sw.move(cpu_tensor(VALUES), FileBacked(dtype=DType.Float32))
    assert type(m.autograd_ctx) is CpuToFileBackedMoveOperation


# ------------------------------------------- participants of a running copy


def test_a_copy_hook_cannot_release_mutate_or_move_its_source():
    outcomes = []

    class Meddling(MoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            source = tensor.carrier
            for action in (
                source.release,
                lambda: source.__setitem__(0, 9.0),
                source._increment_version,
                source._claim_ownership,
            ):
                with pytest.raises(RuntimeError, match=PENDING):
                    action()
                outcomes.append(action)
            with pytest.raises(RuntimeError, match="^tensor carrier is owned by a pending move$"):
                sw.move(tensor, Generic([0.0] * 4))
            with pytest.raises(RuntimeError, match="^tensor carrier is owned by a pending move$"):
                move_async(tensor, Generic([0.0] * 4))
            for i in range(tensor.size()):
                output[i] = tensor[i]  # reads of the source and writes go on

    t = Tensor(MyGeneric(list(VALUES)), 0, flat(4))
    dest = Generic([0.0] * 4)
    with registered_move_operation(MyGeneric, Generic, Meddling):
        m = sw.move(t, dest)
    assert len(outcomes) == 4
    assert m.carrier is dest and logical(m) == VALUES
    assert t.carrier.is_released() and not t.carrier.is_owned()
    dest[0] = 2.0  # both are free again
    assert dest.version == 5


# ----------------------------------------------------- consumers and moves


def test_a_consumer_alias_of_a_destination_sees_the_moved_values():
    dest = CPU(4)
    alias = np.from_dlpack(Tensor(dest, 0, flat(4)))
    assert alias.tolist() == [0.0] * 4
    f = sw.move(cpu_tensor(VALUES), FileBacked(dtype=DType.Float32))
    back = sw.move(f, dest)  # the bulk FileBacked to CPU route
    assert back.carrier is dest and dest.version == 0
    assert alias.tolist() == VALUES  # the export aliased the storage
    # the elementwise route writes through the same storage too
    other = CPU(4)
    alias2 = np.from_dlpack(Tensor(other, 0, flat(4)))
    sw.move(Tensor(Generic(list(VALUES)), 0, flat(4)), Generic([0.0] * 4))
    sw.move(cpu_tensor([5.0, 6.0, 7.0, 8.0]), other)
    assert alias2.tolist() == [5.0, 6.0, 7.0, 8.0] and other.version == 4


# ------------------------------------------------------------ failures


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_allocation_failures_in_the_capsule_protocol(max_version):
    t = cpu_tensor(VALUES)
    gc.collect()
    base = _native._debug_live_allocs()
    refs = sys.getrefcount(t)
    failures = 0
    for n in range(50):
        _native._debug_fail_alloc_after(n)
        try:
            cap = t.__dlpack__(max_version=max_version)
        except MemoryError:
            failures += 1
            _native._debug_fail_alloc_after(-1)
            assert sys.getrefcount(t) == refs
            assert _native._debug_live_allocs() == base
            continue
        finally:
            _native._debug_fail_alloc_after(-1)
        assert np.from_dlpack(t).tolist() == VALUES
        del cap
        gc.collect()
        assert sys.getrefcount(t) == refs and _native._debug_live_allocs() == base
        break
    else:
        raise AssertionError("still failing after 50 allocations")
    assert failures > 0
