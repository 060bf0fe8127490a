"""move_async, AwaitResult and AwaitMove (interop-movement specification:
one validated request, eager submission, one terminal outcome, protected
participants, lifetime through completion, autograd across the move)."""

import gc
import threading

import pytest
import strideweave as sw
import strideweave.carriers.move as move_module
from helpers_carriers import flat
from strideweave import CPU, DType, FileBacked, Generic, Tensor, _native
from strideweave.carriers.move import (
    AwaitMove,
    AwaitResult,
    MoveOperation,
    move_async,
    registered_move_operation,
)

BIG = 1 << 18  # float32 elements: exactly 1 MiB, the smallest worker move


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


def big_cpu(n=BIG, last=3.0):
    c = CPU(n)
    c[n - 1] = last
    return Tensor(c, 0, flat(n))


def f32_file():
    return FileBacked(dtype=DType.Float32)


class MyGeneric(Generic):
    pass


# ------------------------------------------------------------ names


def test_names():
    assert sw.move_async is move_async and sw.AwaitMove is AwaitMove
    assert sw.AwaitResult is AwaitResult
    for name in ("move_async", "AwaitMove", "AwaitResult"):
        assert name in move_module.__all__
        assert name not in sw.__all__
    assert issubclass(AwaitMove, AwaitResult)
    assert AwaitMove.__module__ == AwaitResult.__module__ == "strideweave.carriers.move"
    for cls in (AwaitResult, AwaitMove):
        assert not hasattr(cls, "__await__") and not hasattr(cls, "await")
    assert AwaitMove[Tensor].__origin__ is AwaitMove


def test_handles_are_made_by_the_framework_only():
    with pytest.raises(TypeError, match="cannot create"):
        AwaitMove()
    with pytest.raises(TypeError, match="cannot create"):
        AwaitResult()


def test_handle_is_not_awaitable():
    h = move_async(Tensor(CPU(1), 0, flat(1)), CPU(1))
    assert not hasattr(h, "__await__")

    async def waiting():
        return await h

    coroutine = waiting()
    with pytest.raises(TypeError, match="await"):
        coroutine.send(None)
    assert h.done is True


# ------------------------------------------------------------ small moves


def test_small_move_completes_at_submission():
    t = Tensor(CPU(3), 0, flat(3))
    t.carrier[2] = 5.0
    dest = CPU(3)
    h = move_async(t, dest)
    assert type(h) is AwaitMove and h.done is True
    m = h.wait()
    assert m.carrier is dest and m[2] == 5.0 and m.layout is t.layout
    assert h.wait() is m and h.wait() is m
    assert t.carrier.is_released()
    assert type(m.autograd_ctx).__name__ == "ElementwiseMoveOperation"


def test_python_carriers_complete_at_submission():
    t = Tensor(Generic([1.0, 2.0]), 0, flat(2))
    h = move_async(t, FileBacked())
    assert h.done and [h.wait()[i] for i in range(2)] == [1.0, 2.0]


def test_move_equals_move_async_wait():
    a = big_cpu(last=7.0)
    b = big_cpu(last=7.0)
    ma = sw.move(a, f32_file())
    mb = move_async(b, f32_file()).wait()
    assert ma.layout == mb.layout and ma[BIG - 1] == mb[BIG - 1] == 7.0
    assert type(ma.autograd_ctx) is type(mb.autograd_ctx)
    assert a.carrier.is_released() and b.carrier.is_released()


# ------------------------------------------------------------ validation


def test_validation_raises_directly():
    t = Tensor(CPU(2), 0, flat(2))
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        move_async([t], CPU(2))
    with pytest.raises(TypeError, match="^destination must be a Carrier instance$"):
        move_async(t, [CPU(2)])
    with pytest.raises(TypeError, match="^destination must be a Carrier instance$"):
        move_async(t, (CPU(2), CPU(2)))
    with pytest.raises(ValueError, match="own carrier"):
        move_async(t, t.carrier)
    with pytest.raises(RuntimeError, match="^destination carrier must be mutable$"):
        move_async(t, CPU(2, mutable=False))
    with pytest.raises(TypeError, match="^destination dtype must match the tensor dtype$"):
        move_async(t, FileBacked())
    with pytest.raises(ValueError, match="too small"):
        move_async(t, CPU(1))
    assert not t.carrier.is_released() and t.carrier.version == 0


def test_sequence_is_refused_before_anything():
    t = Tensor(CPU(2), 0, flat(2))
    t.carrier.release()
    dest = [CPU(2)]
    with pytest.raises(TypeError, match="^destination must be a Carrier instance$"):
        move_async(t, dest)
    with pytest.raises(RuntimeError, match="^tensor carrier is released$"):
        move_async(t, CPU(2))


def test_one_way_route_rejected_before_submission():
    class Back(MoveOperation):
        source_class = Generic

        def _copy(self, tensor, destination, output, element_count):
            raise AssertionError("never runs")

    class MyCPU(CPU):
        pass

    t = Tensor(MyCPU(2), 0, flat(2))
    f = f32_file()
    with registered_move_operation(FileBacked, MyCPU, Back):
        with pytest.raises(TypeError, match="^Back requires a Generic source$"):
            move_async(t, f)
    assert not t.carrier.is_released() and f.size() == 0


# ------------------------------------------------------------ the worker


def test_large_move_returns_before_the_copy_ends():
    n = 16 << 20  # 64 MiB of float32
    seen_pending = []
    for _ in range(3):  # a busy machine could, rarely, finish first
        t = big_cpu(n, last=9.0)
        f = f32_file()
        h = move_async(t, f)
        seen_pending.append(h.done is False)
        m = h.wait()
        assert h.done is True and m[n - 1] == 9.0 and f.size() == n
        assert t.carrier.is_released() and f.version == 0
        del t, f, h, m
        if seen_pending[-1]:
            break
    assert any(seen_pending)


def test_participants_are_protected_until_the_outcome():
    t = big_cpu()
    source = t.carrier
    f = f32_file()
    _native._debug_move_hold(True)
    h = move_async(t, f)
    assert h.done is False and _native._move_pending_count() == 1
    pending = "^Carrier is owned by a pending move and is not mutable$"
    with pytest.raises(RuntimeError, match=pending):
        source[0] = 1.0
    with pytest.raises(RuntimeError, match=pending):
        t[0] = 1.0
    with pytest.raises(RuntimeError, match=pending):
        source.release()
    with pytest.raises(RuntimeError, match=pending):
        source._increment_version()
    with pytest.raises(RuntimeError, match=pending):
        source._claim_ownership()
    with pytest.raises(RuntimeError, match=pending):
        f.release()
    with pytest.raises(RuntimeError, match=pending):
        f._allocate(4)
    with pytest.raises(RuntimeError, match="^tensor carrier is owned by a pending move$"):
        sw.move(t, f32_file())
    with pytest.raises(RuntimeError, match="^tensor carrier is owned by a pending move$"):
        move_async(t, f32_file())
    other = Tensor(CPU(2), 0, flat(2))
    with pytest.raises(
        RuntimeError, match="^destination carrier must be mutable: it is owned by a pending move$"
    ):
        sw.move(other, f)
    # reads observe the unchanged source
    assert t[BIG - 1] == 3.0 and source.version == 1
    _native._debug_move_hold(False)
    m = h.wait()
    assert h.done and m[BIG - 1] == 3.0
    assert source.is_released()
    f[0] = 4.0  # usable again
    assert f.version == 1
    assert not other.carrier.is_released()


def test_dropping_the_handle_neither_blocks_nor_cancels():
    t = big_cpu(last=6.0)
    source = t.carrier
    f = f32_file()
    _native._debug_move_hold(True)
    h = move_async(t, f)
    del h
    gc.collect()
    assert _native._move_pending_count() == 1 and not source.is_released()
    _native._debug_move_hold(False)
    _native._move_wait_idle()
    assert source.is_released() and f.size() == BIG and f[BIG - 1] == 6.0


@pytest.mark.threads
def test_concurrent_waits_see_one_outcome():
    t = big_cpu()
    _native._debug_move_hold(True)
    h = move_async(t, f32_file())
    results = []
    threads = [threading.Thread(target=lambda: results.append(h.wait())) for _ in range(3)]
    for th in threads:
        th.start()
    _native._debug_move_hold(False)
    for th in threads:
        th.join()
    assert len(results) == 3 and results[0] is results[1] is results[2]
    assert results[0] is h.wait()


def test_filebacked_to_cpu_on_the_worker():
    m = sw.move(big_cpu(last=2.0), f32_file())
    dest = CPU(BIG)
    _native._debug_move_hold(True)
    h = move_async(m, dest)
    assert not h.done
    with pytest.raises(RuntimeError, match="pending move"):
        dest[0] = 1.0
    _native._debug_move_hold(False)
    back = h.wait()
    assert back.carrier is dest and back[BIG - 1] == 2.0 and dest.version == 0
    assert m.carrier.is_released()


# ------------------------------------------------------------ failures


def test_worker_io_failure_is_the_terminal_outcome():
    t = big_cpu(last=8.0)
    f = f32_file()
    _native._debug_move_hold(True)
    h = move_async(t, f)
    _native._debug_fail_io_after(1)  # the resize works, the write fails
    _native._debug_move_hold(False)
    with pytest.raises(OSError) as first:
        h.wait()
    _native._debug_fail_io_after(-1)
    with pytest.raises(OSError) as second:
        h.wait()
    assert first.value is second.value
    assert h.done
    assert not t.carrier.is_released() and t[BIG - 1] == 8.0
    assert t.carrier.version == 1 and f.version == 0
    t.carrier[0] = 1.0  # the source is usable again
    m = move_async(t, f).wait()
    assert m[0] == 1.0 and m[BIG - 1] == 8.0


def test_copy_hook_failure_is_the_terminal_outcome():
    class Exploding(MoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            raise LookupError("copy failed")

    t = Tensor(MyGeneric([1.0]), 0, flat(1))
    dest = Generic([0.0])
    with registered_move_operation(MyGeneric, Generic, Exploding):
        h = move_async(t, dest)
    assert h.done
    with pytest.raises(LookupError, match="copy failed") as first:
        h.wait()
    with pytest.raises(LookupError) as second:
        h.wait()
    assert first.value is second.value
    assert not t.carrier.is_released() and t[0] == 1.0 and dest.version == 0


def test_allocation_failures_leave_source_and_leak_nothing():
    gc.collect()
    base = _native._debug_live_allocs()
    for n in range(200):
        t = Tensor(CPU(2), 0, flat(2))
        t.carrier[1] = 2.0
        _native._debug_fail_alloc_after(n)
        try:
            h = move_async(t, CPU(2))
            m = h.wait()
        except MemoryError:
            m = None
        finally:
            _native._debug_fail_alloc_after(-1)
        if m is None:
            assert not t.carrier.is_released() and t[1] == 2.0
            del t
            h = None
            gc.collect()
            assert _native._debug_live_allocs() == base, f"leak after failure {n}"
            continue
        assert m[1] == 2.0
        del t, m, h
        gc.collect()
        assert _native._debug_live_allocs() == base
        return
    raise AssertionError("still failing after 200 allocations")


# ------------------------------------------------------------ autograd


def test_autograd_across_an_asynchronous_move():
    x = big_cpu(last=1.5)
    y = sw.mul(x, 2.0)
    _native._debug_move_hold(True)
    h = move_async(y, f32_file())
    _native._debug_move_hold(False)
    m = h.wait()
    node = m.autograd_ctx
    assert type(node).__name__ == "CpuToFileBackedMoveOperation"
    assert node.inputs() == (y,)
    g = sw.move(big_cpu(last=10.0), f32_file())
    (grad,) = node.backward(g)
    assert type(grad.carrier) is CPU and grad[BIG - 1] == 10.0 and grad[0] == 0.0
    m.backward(g)
    assert x.grad[BIG - 1] == 20.0


def test_grad_mode_is_captured_at_submission():
    y = sw.mul(big_cpu(), 1.0)
    _native._debug_move_hold(True)
    with sw.no_grad():
        h = move_async(y, f32_file())
    _native._debug_move_hold(False)
    assert h.wait().autograd_ctx is None


@pytest.mark.threads
def test_many_moves_from_many_threads():
    errors = []

    def run(k):
        try:
            for i in range(3):
                t = big_cpu(last=float(k * 10 + i))
                f = f32_file()
                m = move_async(t, f).wait()
                back = move_async(m, CPU(BIG)).wait()
                assert back[BIG - 1] == float(k * 10 + i)
                assert t.carrier.is_released() and f.is_released()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


@pytest.mark.threads
def test_blocking_move_protects_participants_too():
    t = big_cpu(last=4.0)
    source = t.carrier
    f = f32_file()
    _native._debug_move_hold(True)
    results = []
    mover = threading.Thread(target=lambda: results.append(sw.move(t, f)))
    mover.start()
    while _native._move_pending_count() == 0:
        threading.Event().wait(0.001)
    with pytest.raises(
        RuntimeError, match="^Carrier is owned by a pending move and is not mutable$"
    ):
        source[0] = 1.0
    with pytest.raises(
        RuntimeError, match="^Carrier is owned by a pending move and is not mutable$"
    ):
        f.release()
    _native._debug_move_hold(False)
    mover.join()
    (m,) = results
    assert m.carrier is f and m[BIG - 1] == 4.0 and source.is_released()


def test_blocking_move_refuses_sequences_first():
    t = Tensor(CPU(1), 0, flat(1))
    t.carrier.release()
    with pytest.raises(TypeError, match="^destination must be a Carrier instance$"):
        sw.move(t, [CPU(1)])
