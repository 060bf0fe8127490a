"""Transfer routes as asynchronous moves: ownership, the background executor,
failures, lifetime and the move profiling events.

Checklist (later-api.md 6.2, 6.5 and 7; the ownership rule of 6.3 step 4):

- 6.5 ownership claimed before ``prepare`` and held for the whole request,
  even while a slow prepare blocks the initiating thread:
  ``test_ownership_while_prepare_blocks``; the same rule for built-in moves:
  ``test_builtin_moves_own_their_carriers``.
- 6.5 prepare/submit/wait with graph construction off:
  ``test_provider_callbacks_run_with_the_graph_off``.
- 6.5 a completion is collected on the bounded background executor, not on
  the calling thread; the source is live while it is waited on; success
  publishes, releases the source, then records: ``test_completion_on_executor``,
  ``test_executor_is_bounded``.
- 6.5 failures after submission (submit raising, submit returning a
  non-completion, a completion yielding non-None or raising) become the
  handle's terminal exception, the carriers as they were:
  ``test_failures_after_submission``; failures before submission raise
  directly: ``test_failures_before_submission``.
- 6.2/6.5 dropping the handle neither blocks nor cancels; the prepared record
  lives until completion: ``test_dropping_the_handle``.
- 7 ``move.submit``/``move.complete``: ``test_profiled_route_move``,
  ``test_profiled_failure_and_filter``, ``test_profiled_builtin_worker_move``,
  ``test_completions_refresh_once_per_batch``.
"""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
import strideweave as sw
from strideweave import _native
from strideweave.carriers import extension as E
from strideweave.profiling import Profiler

F32 = sw.DType.Float32
WAIT = 30  # generous bound on every wait: never a timing condition

pytestmark = pytest.mark.threads


class Store:
    """A list-backed storage provider."""

    @staticmethod
    def provider():
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


class Completion:
    """A completion that ends when its event is set (or at once)."""

    def __init__(self, value=None, error=None, gate=None):
        self.value, self.error = value, error
        self.gate = gate
        self.threads = []
        self.waits = 0
        self.source_live = None
        self.carrier = None

    @property
    def done(self):
        return self.gate is None or self.gate.is_set()

    def wait(self):
        self.waits += 1
        self.threads.append(threading.get_ident())
        self.grad = sw.is_grad_enabled()
        if self.carrier is not None:
            self.source_live = not self.carrier.is_released()
        if self.gate is not None:
            assert self.gate.wait(WAIT)
        if self.error is not None:
            raise self.error
        return self.value


def routed(name, *, prepare_hook=None, submit=None):
    """A storage class with a route to CPU; submit(request) decides what the
    submission returns after copying the values."""
    cls = type(name, (sw.Carrier,), {})
    seen = {}

    def prepare(request):
        seen["prepare_grad"] = sw.is_grad_enabled()
        if prepare_hook is not None:
            answer = prepare_hook(request)
            if answer is not None:
                return answer

        def do_submit():
            seen["submit_grad"] = sw.is_grad_enabled()
            seen["submit_thread"] = threading.get_ident()
            src, dst = request.tensor.carrier, request.destination
            for i in range(request.physical_span):
                dst[i] = src.values[request.tensor.offset + i]
            return submit(request) if submit is not None else None

        prepared = E.PreparedTransfer(do_submit)
        seen["prepared"] = weakref.ref(prepared)
        return prepared

    route = E.TransferRoute(cls, sw.CPU, "to-cpu", E.TransferProvider(prepare))
    E.register_carrier_definition(cls, E.CarrierDefinition(Store.provider(), transfers=[route]))
    return cls, seen


def source_of(cls, values):
    c = cls(len(values), dtype=F32)
    for i, v in enumerate(values):
        c[i] = v
    return sw.Tensor(c, 0, sw.Layout.leaf(len(values), 1))


def cpu_tensor(values):
    c = sw.CPU(len(values))
    for i, v in enumerate(values):
        c[i] = v
    return sw.Tensor(c, 0, sw.Layout.leaf(len(values), 1))


class grad_off:
    def __enter__(self):
        self.before = sw.is_grad_enabled()
        sw.set_grad_enabled(False)

    def __exit__(self, *exc):
        sw.set_grad_enabled(self.before)


def probe_refusals(src, dst, other_tensor_on_dst):
    """What another thread sees of a move's participants."""
    assert src.is_owned() and dst.is_owned()
    assert not src.is_mutable() and not dst.is_mutable()
    with pytest.raises(RuntimeError, match="mutable"):
        src[0] = 9.0
    with pytest.raises(RuntimeError, match="mutable"):
        dst[0] = 9.0
    with pytest.raises(RuntimeError, match="owned"):
        src.release()
    with pytest.raises(RuntimeError, match="owned"):
        sw.move_async(sw.Tensor(src, 0, sw.Layout.leaf(1, 1)), sw.CPU(1))
    with pytest.raises(RuntimeError, match="owned"):
        sw.move_async(other_tensor_on_dst, sw.CPU(1))


# ------------------------------------------------------------------ 6.5


def test_ownership_while_prepare_blocks():
    entered, go = threading.Event(), threading.Event()

    def slow(request):
        entered.set()
        assert go.wait(WAIT)

    cls, _ = routed("SlowPrepare", prepare_hook=slow)
    t = source_of(cls, [1.0, 2.0, 3.0])
    dst = sw.CPU(3)
    outcome = {}

    def initiate():
        with grad_off():
            outcome["handle"] = sw.move_async(t, dst)

    mover = threading.Thread(target=initiate)
    assert not t.carrier.is_owned() and not dst.is_owned()
    mover.start()
    try:
        assert entered.wait(WAIT)
        # prepare is still blocking the initiating thread
        probe_refusals(t.carrier, dst, sw.Tensor(dst, 0, sw.Layout.leaf(1, 1)))
    finally:
        go.set()
        mover.join(WAIT)
    moved = outcome["handle"].wait()
    assert [moved[i] for i in range(3)] == [1.0, 2.0, 3.0]
    assert t.carrier.is_released() and not t.carrier.is_owned()
    assert not dst.is_owned() and dst.is_mutable()
    dst[0] = 5.0


def test_builtin_moves_own_their_carriers():
    # One rule for every move: a built-in worker move owns both carriers.
    n = 1 << 19
    src = sw.CPU(n)
    t = sw.Tensor(src, 0, sw.Layout.leaf(n, 1))
    f = sw.FileBacked(dtype=F32)
    _native._debug_move_hold(True)
    try:
        h = sw.move_async(t, f)
        assert src.is_owned() and f.is_owned() and not h.done
        with pytest.raises(RuntimeError, match="mutable"):
            src[0] = 1.0
        with pytest.raises(RuntimeError, match="owned"):
            src.release()
        with pytest.raises(RuntimeError, match="owned"):
            sw.move_async(t, sw.CPU(n))
    finally:
        _native._debug_move_hold(False)
    h.wait()
    assert not f.is_owned() and f.is_mutable() and src.is_released()


def test_provider_callbacks_run_with_the_graph_off():
    gate = threading.Event()
    completion = Completion(gate=gate)
    cls, seen = routed("GraphOff", submit=lambda r: completion)
    t = source_of(cls, [1.0, 2.0])
    assert sw.is_grad_enabled()
    h = sw.move_async(t, sw.CPU(2))  # recorded: the graph is on here
    gate.set()
    moved = h.wait()
    assert (seen["prepare_grad"], seen["submit_grad"], completion.grad) == (False, False, False)
    assert moved.autograd_ctx is not None, "the move itself is recorded"


def test_completion_on_executor():
    gate = threading.Event()
    completion = Completion(gate=gate)
    cls, seen = routed("OnExecutor", submit=lambda r: completion)
    t = source_of(cls, [1.0, 2.0, 3.0])
    completion.carrier = t.carrier
    dst = sw.CPU(3)
    with grad_off():
        h = sw.move_async(t, dst)
    # move_async returned without waiting: the submit callback ran here
    assert seen["submit_thread"] == threading.get_ident()
    assert not h.done
    assert t.carrier.is_owned() and dst.is_owned() and not t.carrier.is_released()
    gate.set()
    moved = h.wait()
    assert h.done and h.wait() is moved
    assert completion.waits == 1, "waited exactly once"
    assert completion.threads[0] != threading.get_ident(), "never on the calling thread"
    assert completion.source_live, "the source is live while the completion is waited on"
    assert type(moved.carrier) is sw.CPU and moved.carrier is dst and moved.offset == 0
    assert moved.layout == t.layout
    assert [moved[i] for i in range(3)] == [1.0, 2.0, 3.0]
    assert t.carrier.is_released() and not dst.is_owned() and dst.is_mutable()


def test_executor_is_bounded():
    gate = threading.Event()
    completions = [Completion(gate=gate) for _ in range(10)]
    handles = []
    with grad_off():
        for i, c in enumerate(completions):
            cls, _ = routed(f"Bounded{i}", submit=lambda r, c=c: c)
            handles.append(sw.move_async(source_of(cls, [float(i)]), sw.CPU(1)))
    gate.set()
    assert [h.wait()[0] for h in handles] == [float(i) for i in range(10)]
    threads = {t for c in completions for t in c.threads}
    assert threading.get_ident() not in threads
    assert len(threads) <= 4, "a small fixed pool"


def carriers_as_they_were(t, values, dst):
    src = t.carrier
    assert not src.is_released() and not src.is_owned()
    assert [src[i] for i in range(len(values))] == values
    assert not dst.is_owned() and dst.is_mutable()


def test_failures_after_submission():
    boom = RuntimeError("the device went away")

    def raising(request):
        raise boom

    cases = [
        (raising, RuntimeError, "the device went away"),
        (lambda r: object(), TypeError, "done property"),
        (lambda r: Completion(value=3), TypeError, "must yield None"),
        (lambda r: Completion(error=ValueError("late")), ValueError, "late"),
    ]
    for k, (submit, kind, text) in enumerate(cases):
        cls, _ = routed(f"Failing{k}", submit=submit)
        t = source_of(cls, [1.0, 2.0])
        dst = sw.CPU(2)
        with grad_off():
            h = sw.move_async(t, dst)  # submission happened: a handle exists
        with pytest.raises(kind, match=text) as first:
            h.wait()
        with pytest.raises(kind) as second:
            h.wait()
        assert first.value is second.value, "the identical exception object"
        assert h.done
        carriers_as_they_were(t, [1.0, 2.0], dst)
    # the completion's own exception object is the one raised
    error = ValueError("mine")
    cls, _ = routed("OwnError", submit=lambda r: Completion(error=error))
    with grad_off():
        h = sw.move_async(source_of(cls, [1.0]), sw.CPU(1))
    with pytest.raises(ValueError) as caught:
        h.wait()
    assert caught.value is error


def test_failures_before_submission():
    def broken(request):
        raise KeyError("prepare failed")

    cls, _ = routed("BrokenPrepare", prepare_hook=broken)
    t = source_of(cls, [1.0])
    dst = sw.CPU(1)
    with grad_off(), pytest.raises(KeyError, match="prepare failed"):
        sw.move_async(t, dst)
    carriers_as_they_were(t, [1.0], dst)
    refusing, _ = routed("Refusing", prepare_hook=lambda r: E.Unsupported("alignment"))
    t = source_of(refusing, [1.0])
    with grad_off(), pytest.raises(NotImplementedError, match="Refusing, CPU: alignment"):
        sw.move_async(t, dst)
    carriers_as_they_were(t, [1.0], dst)


def test_dropping_the_handle():
    gate = threading.Event()
    completion = Completion(gate=gate)
    cls, seen = routed("Dropped", submit=lambda r: completion)
    t = source_of(cls, [4.0])
    src = t.carrier
    with grad_off():
        h = sw.move_async(t, sw.CPU(1))
    del h, t
    gc.collect()  # neither blocks nor cancels
    assert seen["prepared"]() is not None, "the prepared record lives until completion"
    assert not src.is_released()
    gate.set()
    _native._move_wait_idle()
    assert src.is_released(), "the move completed in the background"
    gc.collect()
    assert seen["prepared"]() is None, "and let go of the prepared record"


# ------------------------------------------------------------------- 7


def test_profiled_route_move():
    gate = threading.Event()
    completion = Completion(gate=gate)
    cls, _ = routed("Profiled", submit=lambda r: completion)
    t = source_of(cls, [1.0, 2.0, 3.0])
    with grad_off():
        with sw.profile(carriers={cls}, record_shapes=True) as prof:
            h = sw.move_async(t, sw.CPU(3))
        (submit,) = prof.events()
        assert (submit.name, submit.carrier_type, submit.succeeded) == ("move.submit", cls, True)
        assert submit.input_shapes == ((3,), None)
        released = _native.profile_now_ns()
        gate.set()
        h.wait()
        h.wait()
    events = prof.events()
    assert events is prof.events() and prof.key_averages() == prof.key_averages()
    sub, com = events
    assert sub == submit
    assert com.name == "move.complete" and com.parent_id == sub.id
    assert (com.carrier_type, com.input_shapes, com.implementation_type) == (
        sub.carrier_type,
        sub.input_shapes,
        sub.implementation_type,
    )
    assert com.succeeded
    assert com.start_time_ns <= released <= com.start_time_ns + com.duration_ns
    assert com.thread_id != threading.get_ident()
    rows = {(r.name, r.count) for r in prof.key_averages()}
    assert rows == {("move.submit", 1), ("move.complete", 1)}


def test_profiled_failure_and_filter():
    cls, _ = routed("ProfiledFail", submit=lambda r: Completion(value=1))
    with grad_off():
        with sw.profile() as prof:
            h = sw.move_async(source_of(cls, [1.0]), sw.CPU(1))
            with pytest.raises(TypeError):
                h.wait()
    sub, com = prof.events()
    assert sub.succeeded and not com.succeeded and com.parent_id == sub.id
    good, _ = routed("ProfiledGood")
    with grad_off():
        with sw.profile(carriers={sw.CPU}) as other:
            sw.move(source_of(good, [1.0]), sw.CPU(1))
    assert other.events() == (), "the filter selects by the source's class"


def test_profiled_builtin_worker_move():
    n = 1 << 19
    t = sw.Tensor(sw.CPU(n), 0, sw.Layout.leaf(n, 1))
    _native._debug_move_hold(True)
    try:
        with sw.profile(carriers=[sw.CPU]) as prof:
            h = sw.move_async(t, sw.FileBacked(dtype=F32))
        assert [e.name for e in prof.events()] == ["move.submit"]
    finally:
        _native._debug_move_hold(False)
    moved = h.wait()
    sub, com = prof.events()
    assert com.name == "move.complete" and com.parent_id == sub.id
    assert sub.carrier_type is sw.CPU and sub.implementation_type is sw.CpuToFileBackedMoveOperation
    with sw.profile(carriers=[sw.FileBacked]) as back:
        sw.move(moved, sw.CPU(n))
    assert [e.carrier_type for e in back.events()] == [sw.FileBacked, sw.FileBacked]


def test_completions_refresh_once_per_batch(monkeypatch):
    calls = []
    original = Profiler._refresh_events_locked

    def counting(self):
        calls.append(1)
        original(self)

    monkeypatch.setattr(Profiler, "_refresh_events_locked", counting)
    gate = threading.Event()
    handles = []
    with grad_off():
        classes = [
            routed(f"Batch{i}", submit=lambda r: Completion(gate=gate))[0] for i in range(40)
        ]
        with sw.profile() as prof:
            for i, cls in enumerate(classes):
                handles.append(sw.move_async(source_of(cls, [float(i)]), sw.CPU(1)))
    assert len(calls) == 1, "once at exit"
    assert [e.name for e in prof.events()] == ["move.submit"] * 40
    gate.set()
    for h in handles:
        h.wait()
    events = prof.events()
    assert len(calls) == 2, "once more for the batch"
    assert prof.events() is events and len(calls) == 2
    assert [e.id for e in events] == list(range(80))
    starts = [e.start_time_ns for e in events]
    assert starts == sorted(starts)
    by_id = {e.id: e for e in events}
    completes = [e for e in events if e.name == "move.complete"]
    assert len(completes) == 40
    assert all(by_id[e.parent_id].name == "move.submit" for e in completes)
