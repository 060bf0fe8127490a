"""Storage lifetime: every path that frees storage (release, a move's commit,
an eviction, a DLPack consumer letting go) against every path that reads it
(operations, element access, the reverse pass, scatter, DLPack consumers),
on one thread and across threads.

The library pins a carrier's storage for each reader: a release takes effect
at once (the carrier reports released, size 0) and the memory goes when the
last reader lets go. Under AddressSanitizer the old code failed these tests
with heap-use-after-free; without it, with segmentation faults.
"""

import gc
import sys
import threading

import numpy as np
import pytest
import strideweave as sw
import strideweave.friendly as F
from helpers_carriers import ListCarrier
from strideweave import CPU, DType, Evictable, FileBacked, Generic, Layout, Shape, Stride, Tensor
from strideweave.carriers.move import MoveOperation

pytestmark = pytest.mark.threads

N = 1 << 22  # 16 MiB of float32: the kernels take milliseconds, long enough to overlap


def flat(n):
    return Layout(Shape(n), Stride(1))


def filled(c, n, value):
    one = CPU(1)
    one[0] = value
    t = Tensor(c, 0, flat(n))
    c.scatter(Tensor(one, 0, Layout(Shape(n), Stride(0))), t, flat(n))
    return t


def big(value=-1.0, n=N):
    return filled(CPU(n), n, value)


# The messages of an operand released under the call: which check sees it
# first depends on the moment (scatter names its source).
RELEASED = (
    "tensor carrier is released",
    "Carrier is released",
    "to_scatter carrier is released",
)


def run_readers(target, stop, count=1):
    errors = []

    def loop():
        try:
            while not stop.is_set():
                target()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=loop) for _ in range(count)]
    for th in threads:
        th.start()
    return threads, errors


def finish(threads, errors, stop):
    stop.set()
    for th in threads:
        th.join()
    for e in errors:
        assert isinstance(e, RuntimeError) and str(e) in RELEASED, repr(e)


def test_move_async_under_a_reader_loop():
    t = big()
    h = sw.move_async(t, FileBacked(dtype=DType.Float32))
    seen = 0
    while not h.done:
        try:
            y = sw.relu(t)
            assert y[0] == 0.0 and y[N - 1] == 0.0
            assert t[N - 1] == -1.0
        except RuntimeError as e:
            assert str(e) in RELEASED
        seen += 1
    moved = h.wait()
    assert moved[0] == -1.0 and moved[N - 1] == -1.0
    assert t.carrier.is_released() and t.carrier.size() == 0


@pytest.mark.parametrize("freer", ["release", "move", "evict"])
def test_op_against_a_freer_on_another_thread(freer):
    for _ in range(4):
        if freer == "evict":
            primary = CPU(N)
            ev = Evictable(primary, CPU(N))
            t = Tensor(primary, 0, flat(N))
        else:
            t = big()
        stop = threading.Event()
        threads, errors = run_readers(lambda t=t: sw.relu(t), stop, count=2)
        try:
            if freer == "release":
                t.carrier.release()
            elif freer == "move":
                with sw.no_grad():
                    sw.move(t, FileBacked(dtype=DType.Float32))
            else:
                ev.evict()
        finally:
            finish(threads, errors, stop)
        assert t.carrier.is_released()


def test_element_reads_against_a_move():
    t = big(2.0)
    stop = threading.Event()

    def read():
        assert t[N // 2] == 2.0

    threads, errors = run_readers(read, stop)
    sw.move(t, FileBacked(dtype=DType.Float32))
    finish(threads, errors, stop)


def test_scatter_against_a_release():
    src = big(1.0)
    dst = CPU(N)
    onto = Tensor(dst, 0, flat(N))
    stop = threading.Event()
    threads, errors = run_readers(lambda: dst.scatter(src, onto, flat(N)), stop)
    src.carrier.release()
    finish(threads, errors + [], stop)
    # scatter reports its own names for released carriers
    for e in errors:
        assert str(e) in RELEASED + ("to_scatter carrier is released",)


def test_release_is_never_refused_for_readers():
    t = big()
    stop = threading.Event()
    threads, errors = run_readers(lambda: sw.relu(t), stop)
    t.carrier.release()  # used to raise "Carrier is in use by another thread"
    finish(threads, errors, stop)


def test_backward_against_a_move():
    for _ in range(4):
        x = big(0.5)
        y = sw.sigmoid(x)
        g = big(1.0)
        outcome = []

        def back(y=y, g=g, outcome=outcome):
            try:
                y.backward(g)
                outcome.append("ok")
            except RuntimeError as e:
                outcome.append(str(e))

        th = threading.Thread(target=back)
        th.start()
        sw.move(x, FileBacked(dtype=DType.Float32))
        th.join()
        assert outcome[0] in ("ok", "tensor carrier is released")


@pytest.mark.parametrize("how", ["release", "move", "evict"])
def test_backward_of_a_released_saved_input(how):
    if how == "evict":
        primary = CPU(3)
        ev = Evictable(primary, CPU(3))
        x = Tensor(primary, 0, flat(3))
    else:
        x = F.ones(3)
    y = sw.sigmoid(x)
    if how == "release":
        x.carrier.release()
    elif how == "move":
        sw.move(x, FileBacked(dtype=DType.Float32))
    else:
        ev.evict()
    with pytest.raises(RuntimeError, match="^tensor carrier is released$"):
        y.backward(F.ones(3))


def test_generic_backward_of_a_released_saved_input():
    x = Tensor(Generic([0.5, 1.0], dtype=DType.Floating), 0, flat(2))
    y = sw.sigmoid(x)
    x.carrier.release()
    g = Tensor(Generic([1.0, 1.0], dtype=DType.Floating), 0, flat(2))
    with pytest.raises(RuntimeError, match="carrier is released$"):
        y.backward(g)


def test_dlpack_consumer_outlives_release():
    c = CPU(1 << 20)
    t = filled(c, 1 << 20, 3.0)
    a = np.from_dlpack(t)
    c.release()
    assert c.is_released() and c.size() == 0 and c.pointer() == 0
    assert a.sum() == 3.0 * (1 << 20)  # the consumer's memory is still there
    del a
    gc.collect()


def test_dlpack_consumer_against_a_release_on_another_thread():
    for _ in range(4):
        t = big(1.0)
        a = np.from_dlpack(t)
        th = threading.Thread(target=t.carrier.release)
        th.start()
        assert a.sum() == float(N)
        th.join()
        assert t.carrier.is_released()


def test_dlpack_consumer_outlives_a_move():
    t = big(5.0)
    a = np.from_dlpack(t)
    moved = sw.move(t, FileBacked(dtype=DType.Float32))
    assert t.carrier.is_released()
    assert a[N - 1] == 5.0 and moved[N - 1] == 5.0


# --------------------------------------------------- failed moves


class FailingDestination(ListCarrier):
    """Raises on the k-th write, after k - 1 have landed."""

    def __init__(self, values, fail_at):
        super().__init__(values, dtype=DType.Floating)
        self.fail_at = fail_at
        self.writes = 0

    def set_value(self, index, value):
        self.writes += 1
        if self.writes == self.fail_at:
            raise OSError("disk full")
        super().set_value(index, value)


class WriteOnceThenFail(MoveOperation):
    def _copy(self, tensor, destination, output, element_count):
        output[0] = tensor[0]
        raise OSError("disk full")


def test_failed_move_hook_steps_the_destination_version():
    dst = CPU(3)
    saved = filled(dst, 3, 1.0)
    y = sw.sigmoid(saved)  # saves `saved` with its version
    before = dst.version
    src = filled(CPU(3), 3, 7.0)
    with pytest.raises(OSError, match="disk full"):
        WriteOnceThenFail().forward(src, dst)
    assert dst[0] == 7.0  # partly written
    assert dst.version == before + 1
    assert not src.carrier.is_released()
    with pytest.raises(RuntimeError, match="modified in-place"):
        y.backward(filled(CPU(3), 3, 1.0))


def test_failed_move_into_a_raising_carrier_steps_its_version():
    dst = FailingDestination([1.0, 2.0, 3.0], fail_at=2)
    before = dst.version
    src = Tensor(Generic([7.0, 8.0, 9.0], dtype=DType.Floating), 0, flat(3))
    with pytest.raises(OSError, match="disk full"):
        sw.move(src, dst)
    assert dst.values[0] == 7.0  # partly written
    assert dst.version == before + 1
    assert not src.carrier.is_released()


def test_failed_move_that_wrote_nothing_keeps_the_version():
    dst = FailingDestination([1.0, 2.0, 3.0], fail_at=1)
    before = dst.version
    src = Tensor(Generic([7.0, 8.0, 9.0], dtype=DType.Floating), 0, flat(3))
    with pytest.raises(OSError, match="disk full"):
        sw.move(src, dst)
    assert dst.values == [1.0, 2.0, 3.0] and dst.version == before
    small = ListCarrier([1.0], dtype=DType.Floating)
    with pytest.raises(ValueError, match="too small"):
        sw.move(src, small)
    assert small.version == 0


class RaisingRelease(ListCarrier):
    def _release(self):
        raise OSError("cannot let go")


def test_a_raising_release_hook_does_not_fail_a_move(monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u))
    src = RaisingRelease([1.0, 2.0], dtype=DType.Floating)
    t = Tensor(src, 0, flat(2))
    dst = Generic([0.0, 0.0], dtype=DType.Floating)
    moved = sw.move(t, dst)  # the move went through: no exception
    assert src.is_released()
    assert [moved[0], moved[1]] == [1.0, 2.0]
    assert len(reported) == 1 and isinstance(reported[0].exc_value, OSError)


def test_a_raising_release_hook_still_raises_from_release():
    c = RaisingRelease([1.0], dtype=DType.Floating)
    with pytest.raises(OSError, match="cannot let go"):
        c.release()
    assert c.is_released()
