"""The operation profiler (reference §17): what is recorded, nesting and
carrier filtering on a controlled workload, self-time arithmetic, shapes,
failures, the session rules and their messages, threads, aggregates, the
text table and the Chrome trace export."""

import dataclasses
import gc
import json
import threading
import time

import pytest
import strideweave as sw
import strideweave.operation
import strideweave.profiling as profiling
from strideweave import (
    CPU,
    Carrier,
    Generic,
    GenericReLUOperation,
    Operation,
    Profiler,
    ProfilerAggregate,
    ProfilerEvent,
    Tensor,
)
from strideweave.carriers.operation_helpers import execute_lowered_operation

OUTER_SLEEP = 0.004
INNER_SLEEP = 0.006
NS = 1_000_000_000


def layout(shape):
    return sw.Layout(sw.Shape(shape), sw.Stride(_col_major(shape)))


def _col_major(shape):
    stride, out = 1, []
    for extent in shape:
        if isinstance(extent, list):
            inner = _col_major(extent)
            # scale the nested strides by what came before
            out.append([s * stride for s in inner])
            for e in extent:
                stride *= e
        else:
            out.append(stride)
            stride *= extent
    return out


def cpu_vector(n):
    return Tensor(CPU(n), 0, layout([n]))


def generic_vector(values):
    return Tensor(Generic(list(values)), 0, layout([len(values)]))


# ---------------------------------------------------- controlled workload


class SleepInner(Operation):
    """Sleeps INNER_SLEEP and returns its input."""

    def _forward(self, x):
        time.sleep(INNER_SLEEP)
        return x


class SleepOuter(Operation):
    """Sleeps OUTER_SLEEP, then runs "inner" dispatched by an InnerCarrier."""

    def _forward(self, x):
        time.sleep(OUTER_SLEEP)
        y = Tensor(InnerCarrier([0.0] * x.layout.cosize), 0, x.layout)
        y.carrier.dispatch_op("inner").forward(y)
        return x


class Failing(Operation):
    def _forward(self, x):
        raise ValueError("the operation fails")


class NoTensor(Operation):
    def _forward(self, x):
        return 3


class OuterCarrier(Generic):
    def _dispatch_op(self, name):
        table = {"outer": SleepOuter, "fail": Failing, "none": NoTensor}
        if name in table:
            return table[name]()
        return super()._dispatch_op(name)


class InnerCarrier(Generic):
    def _dispatch_op(self, name):
        if name == "inner":
            return SleepInner()
        return super()._dispatch_op(name)


def outer_tensor():
    return Tensor(OuterCarrier([1.0, 2.0]), 0, layout([2]))


def run(name, t):
    return t.carrier.dispatch_op(name).forward(t)


# ----------------------------------------------------------------- names


def test_exports():
    assert profiling.__all__ == ["Profiler", "ProfilerAggregate", "ProfilerEvent", "profile"]
    for name in profiling.__all__:
        assert getattr(sw, name) is getattr(profiling, name)
        assert getattr(strideweave.operation, name) is getattr(profiling, name)
        assert name in sw.__all__
    assert profiling.__doc__


def test_event_and_aggregate_dataclasses():
    fields = [f.name for f in dataclasses.fields(ProfilerEvent)]
    assert fields == [
        "id",
        "parent_id",
        "name",
        "carrier_type",
        "implementation_type",
        "input_shapes",
        "start_time_ns",
        "duration_ns",
        "self_time_ns",
        "thread_id",
        "succeeded",
    ]
    fields = [f.name for f in dataclasses.fields(ProfilerAggregate)]
    assert fields == [
        "name",
        "carrier_type",
        "input_shapes",
        "count",
        "total_time_ns",
        "self_total_time_ns",
        "mean_time_ns",
        "min_time_ns",
        "max_time_ns",
    ]
    assert ProfilerEvent.__slots__ and ProfilerAggregate.__slots__


# ------------------------------------------------------- what is recorded


@pytest.mark.threads
def test_cpu_event_fields():
    t = cpu_vector(4)
    before = time.monotonic_ns()
    with sw.profile() as prof:
        result = sw.relu(t)
    after = time.monotonic_ns()
    (e,) = prof.events()
    assert e.id == 0 and e.parent_id is None
    assert e.name == "relu"
    assert e.carrier_type is CPU
    assert e.implementation_type.__name__.endswith("ReLUOperation")
    assert e.implementation_type is not GenericReLUOperation
    assert issubclass(e.implementation_type, Operation)
    assert e.input_shapes is None
    assert before <= e.start_time_ns <= after and e.start_time_ns > 0
    assert 0 <= e.self_time_ns == e.duration_ns <= after - before
    assert e.thread_id == threading.get_ident()
    assert e.succeeded is True
    assert isinstance(result, Tensor)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.name = "x"
    assert hash(e) == hash(dataclasses.replace(e))
    assert e == dataclasses.replace(e)


def test_generic_event_and_implementation_type():
    t = generic_vector([1.0, -2.0])
    with sw.profile() as prof:
        sw.relu(t)
    (e,) = prof.events()
    assert e.carrier_type is Generic
    assert e.implementation_type is GenericReLUOperation


def test_record_shapes():
    t = Tensor(CPU(24), 0, layout([2, [3, 4]]))
    with sw.profile(record_shapes=True) as prof:
        sw.mul(t, 2.0)
        sw.add(t, t)
    mul, add = prof.events()
    assert mul.input_shapes == ((2, (3, 4)), None)
    assert mul.input_shapes[0] == t.layout.shape.top_level
    assert type(mul.input_shapes[0]) is type(t.layout.shape.top_level)
    assert add.input_shapes == ((2, (3, 4)), (2, (3, 4)))
    # one snapshot object per layout
    assert add.input_shapes[0] is add.input_shapes[1]
    hash(mul)


def test_ids_follow_start_order():
    t = cpu_vector(2)
    with sw.profile() as prof:
        sw.exp(t)
        sw.neg(t)
        sw.tanh(t)
    events = prof.events()
    assert [e.id for e in events] == [0, 1, 2]
    assert [e.name for e in events] == ["exp", "mul", "tanh"]
    assert all(e.parent_id is None for e in events)
    starts = [e.start_time_ns for e in events]
    assert starts == sorted(starts)


def test_dispatch_lookup_and_direct_ops_not_recorded():
    t = generic_vector([1.0, 2.0])
    with sw.profile() as prof:
        op = t.carrier.dispatch_op("relu")
        GenericReLUOperation().forward(t)
        GenericReLUOperation()._execute_lowered(t)
    assert prof.events() == ()
    del op


def test_lowered_execution_recorded():
    t = generic_vector([1.0, 2.0])
    with sw.profile() as prof:
        t.carrier.dispatch_op("relu")._execute_lowered(t)
        execute_lowered_operation(t.carrier.dispatch_op("exp"), t)
    assert [e.name for e in prof.events()] == ["relu", "exp"]


def test_results_unchanged_by_profiling():
    t = Tensor(CPU(6), 0, layout([2, 3]))
    for i in range(6):
        t[i] = i - 2.5
    plain = sw.relu(t)
    with sw.profile(record_shapes=True):
        profiled = sw.relu(t)
    assert [profiled[i] for i in range(6)] == [plain[i] for i in range(6)]
    assert profiled.layout == plain.layout


# -------------------------------------------- nesting, filters, self time


def test_nested_execution_and_self_time():
    t = outer_tensor()
    with sw.profile() as prof:
        run("outer", t)
    outer, inner = prof.events()
    assert (outer.name, outer.carrier_type, outer.implementation_type) == (
        "outer",
        OuterCarrier,
        SleepOuter,
    )
    assert (inner.name, inner.carrier_type, inner.implementation_type) == (
        "inner",
        InnerCarrier,
        SleepInner,
    )
    assert (outer.id, outer.parent_id) == (0, None)
    assert (inner.id, inner.parent_id) == (1, 0)
    assert inner.start_time_ns >= outer.start_time_ns
    assert inner.start_time_ns + inner.duration_ns <= outer.start_time_ns + outer.duration_ns
    assert inner.duration_ns >= INNER_SLEEP * NS
    assert inner.self_time_ns == inner.duration_ns
    assert outer.duration_ns >= (OUTER_SLEEP + INNER_SLEEP) * NS
    assert outer.self_time_ns == outer.duration_ns - inner.duration_ns
    assert outer.self_time_ns >= OUTER_SLEEP * NS


def test_filtered_out_child_still_subtracted():
    t = outer_tensor()
    with sw.profile(carriers={OuterCarrier}) as prof:
        run("outer", t)
    (outer,) = prof.events()
    assert outer.name == "outer"
    assert outer.self_time_ns < outer.duration_ns
    assert outer.self_time_ns <= outer.duration_ns - INNER_SLEEP * NS
    assert outer.self_time_ns >= OUTER_SLEEP * NS


def test_filtered_out_parent_makes_a_root():
    t = outer_tensor()
    with sw.profile(carriers=[InnerCarrier]) as prof:
        run("outer", t)
    (inner,) = prof.events()
    assert (inner.name, inner.id, inner.parent_id) == ("inner", 0, None)


def test_filter_is_exact_class_and_empty_records_nothing():
    t = outer_tensor()
    with sw.profile(carriers={Generic}) as prof:
        run("outer", t)
        sw.relu(generic_vector([1.0]))
    assert [(e.name, e.carrier_type) for e in prof.events()] == [("relu", Generic)]
    with sw.profile(carriers=()) as prof:
        run("outer", t)
    assert prof.events() == ()
    with sw.profile(carriers=iter([CPU, InnerCarrier])) as prof:
        run("outer", t)
        sw.relu(cpu_vector(2))
    assert [e.name for e in prof.events()] == ["inner", "relu"]


def test_filter_keeps_no_carrier_instance():
    prof = sw.profile(carriers={CPU, Generic})
    assert prof._carriers == frozenset({CPU, Generic})
    assert all(isinstance(c, type) for c in prof._carriers)


# --------------------------------------------------------------- failures


def test_failed_executions_recorded_and_errors_unchanged():
    t = outer_tensor()
    with sw.profile() as prof:
        with pytest.raises(ValueError, match="^the operation fails$"):
            run("fail", t)
        with pytest.raises(TypeError, match=r"^Operation\._forward must return a Tensor$"):
            run("none", t)
        with pytest.raises(ValueError, match="^Tensor layouts must match$"):
            sw.add(cpu_vector(2), cpu_vector(3))
    assert [(e.name, e.succeeded) for e in prof.events()] == [
        ("fail", False),
        ("none", False),
        ("add", False),
    ]


def test_results_kept_when_body_raises():
    t = cpu_vector(2)
    prof = sw.profile()
    with pytest.raises(KeyError):
        with prof:
            sw.exp(t)
            raise KeyError("body")
    assert [e.name for e in prof.events()] == ["exp"]


# ------------------------------------------------------- argument checks


@pytest.mark.parametrize("factory", [sw.profile, Profiler])
def test_argument_checks(factory):
    with pytest.raises(TypeError, match="^record_shapes must be a bool$"):
        factory(record_shapes=1)
    with pytest.raises(TypeError, match="^record_backward must be a bool$"):
        factory(record_backward=1)
    with pytest.raises(TypeError, match="^carriers must be an iterable of Carrier classes$"):
        factory(carriers=1)
    with pytest.raises(TypeError, match="^carriers must contain only Carrier subclasses$"):
        factory(carriers=[str])
    with pytest.raises(TypeError, match="^carriers must contain only Carrier subclasses$"):
        factory(carriers=[CPU(1)])
    with pytest.raises(TypeError, match="Carrier"):
        factory(carriers=CPU(1))
    with pytest.raises(TypeError, match="Carrier"):
        factory(carriers=[[CPU]])
    with pytest.raises(TypeError):
        factory(None)
    assert isinstance(factory(carriers=[Carrier], record_shapes=True), Profiler)


def test_session_rules():
    prof = sw.profile()
    with pytest.raises(RuntimeError, match="^Profiler context is not active$"):
        prof.__exit__(None, None, None)
    for call in (prof.events, prof.key_averages, prof.table):
        with pytest.raises(
            RuntimeError, match="^Profiler results are available only after context exit$"
        ):
            call()
    with prof as entered:
        assert entered is prof
        with pytest.raises(RuntimeError, match="^Profiler contexts are single-use$"):
            prof.__enter__()
        with pytest.raises(RuntimeError, match="^A profiler session is already active$"):
            with sw.profile():
                pass
        with pytest.raises(RuntimeError, match="results are available only after"):
            prof.events()
    with pytest.raises(RuntimeError, match="^Profiler contexts are single-use$"):
        prof.__enter__()
    with pytest.raises(RuntimeError, match="^Profiler context is not active$"):
        prof.__exit__(None, None, None)
    assert prof.events() == ()
    assert "0 events" in repr(prof)


def test_exit_returns_false():
    prof = sw.profile()
    prof.__enter__()
    assert prof.__exit__(None, None, None) is False


# --------------------------------------------------------------- threads


@pytest.mark.threads
def test_two_threads_profile_independently():
    barrier = threading.Barrier(2)
    results = {}

    def work(key, count):
        t = cpu_vector(4)
        with sw.profile() as prof:
            barrier.wait()
            for _ in range(count):
                sw.exp(t)
            barrier.wait()
        results[key] = (threading.get_ident(), prof.events())

    threads = [threading.Thread(target=work, args=(k, n)) for k, n in (("a", 3), ("b", 5))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for key, count in (("a", 3), ("b", 5)):
        ident, events = results[key]
        assert len(events) == count
        assert [e.id for e in events] == list(range(count))
        assert {e.thread_id for e in events} == {ident}


@pytest.mark.threads
def test_other_threads_not_recorded():
    with sw.profile() as prof:
        th = threading.Thread(target=lambda: sw.exp(cpu_vector(2)))
        th.start()
        th.join()
        sw.relu(cpu_vector(2))
    assert [e.name for e in prof.events()] == ["relu"]


@pytest.mark.threads
def test_cross_thread_exit_abandons_and_owner_recovers():
    prof = sw.profile()
    prof.__enter__()
    errors = []

    def stop():
        try:
            prof.__exit__(None, None, None)
        except RuntimeError as exc:
            errors.append(str(exc))

    th = threading.Thread(target=stop)
    th.start()
    th.join()
    assert errors == ["Profiler session must be stopped on its active thread"]
    # the owner thread recovers before its next operation or profiler
    sw.exp(cpu_vector(2))
    with sw.profile() as again:
        sw.relu(cpu_vector(2))
    assert [e.name for e in again.events()] == ["relu"]
    with pytest.raises(RuntimeError, match="results are available only after context exit"):
        prof.events()
    with pytest.raises(RuntimeError, match="^Profiler context is not active$"):
        prof.__exit__(None, None, None)


@pytest.mark.threads
def test_cross_thread_exit_then_new_profile_recovers():
    prof = sw.profile()
    prof.__enter__()
    th = threading.Thread(
        target=lambda: pytest.raises(RuntimeError, prof.__exit__, None, None, None)
    )
    th.start()
    th.join()
    with sw.profile() as again:
        sw.exp(cpu_vector(2))
    assert len(again.events()) == 1


def test_finalized_active_profiler_recovers():
    prof = sw.profile()
    prof.__enter__()
    del prof
    gc.collect()
    with sw.profile() as again:
        sw.exp(cpu_vector(2))
    assert len(again.events()) == 1


# ------------------------------------------------- aggregates and table


def fake(events):
    """A stopped profiler holding the given events (for exact layouts)."""
    prof = sw.profile()
    prof.__enter__()
    prof.__exit__(None, None, None)
    prof._events = tuple(events)
    return prof


def ev(i, name, carrier, duration, self_time=None, shapes=None):
    return ProfilerEvent(
        i,
        None,
        name,
        carrier,
        Operation,
        shapes,
        1000 + i,
        duration,
        duration if self_time is None else self_time,
        1,
        True,
    )


def test_key_averages_groups_and_statistics():
    prof = fake(
        [
            ev(0, "relu", Generic, 10, 4, ((2,),)),
            ev(1, "relu", Generic, 30, 30, ((1,),)),
            ev(2, "add", CPU, 5, 5, ((1,), (1,))),
            ev(3, "relu", CPU, 7, 7, ((2,),)),
        ]
    )
    rows = prof.key_averages()
    assert [(r.name, r.carrier_type) for r in rows] == [
        ("add", CPU),
        ("relu", CPU),
        ("relu", Generic),
    ]
    relu = rows[2]
    assert (relu.count, relu.total_time_ns, relu.self_total_time_ns) == (2, 40, 34)
    assert (relu.mean_time_ns, relu.min_time_ns, relu.max_time_ns) == (20.0, 10, 30)
    assert relu.input_shapes is None
    assert isinstance(relu.mean_time_ns, float)
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [(r.name, r.carrier_type, r.input_shapes, r.count) for r in grouped] == [
        ("add", CPU, ((1,), (1,)), 1),
        ("relu", CPU, ((2,),), 1),
        ("relu", Generic, ((1,),), 1),
        ("relu", Generic, ((2,),), 1),
    ]
    with pytest.raises(TypeError, match="^group_by_input_shape must be a bool$"):
        prof.key_averages(group_by_input_shape=1)
    with pytest.raises(TypeError):
        prof.key_averages(True)


def test_key_averages_grouped_example():
    with sw.profile(record_shapes=True) as prof:
        sw.relu(cpu_vector(2))
        sw.relu(cpu_vector(1))
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [(r.input_shapes, r.count) for r in grouped] == [(((1,),), 1), (((2,),), 1)]


def test_table_layout():
    prof = fake([ev(0, "relu", Generic, 10, 4), ev(1, "add", CPU, 12345, 12345)])
    text = prof.table()
    assert text == "\n".join(
        [
            "Name  Carrier                                       Calls  Total (ns)"
            "  Self total (ns)  Mean (ns)  Min (ns)  Max (ns)",
            "----  --------------------------------------------  -----  ----------"
            "  ---------------  ---------  --------  --------",
            "add   strideweave.carriers.cpu.carrier.CPU          1      12345     "
            "  12345            12345.0    12345     12345   ",
            "relu  strideweave.carriers.generic.carrier.Generic  1      10        "
            "  4                10.0       10        10      ",
        ]
    )
    assert not text.endswith("\n")


def test_table_grouped_column_and_empty():
    prof = fake([ev(0, "relu", CPU, 3, 3, ((2, (3, 4)), None))])
    lines = prof.table(group_by_input_shape=True).split("\n")
    carrier = "strideweave.carriers.cpu.carrier.CPU"
    assert lines[0].startswith(
        "Name  " + "Carrier".ljust(len(carrier)) + "  Input shapes       " + "  Calls"
    )
    assert lines[2].startswith("relu  " + carrier + "  ((2, (3, 4)), None)  1    ")
    empty = fake([]).table()
    assert empty.split("\n") == [
        "Name  Carrier  Calls  Total (ns)  Self total (ns)  Mean (ns)  Min (ns)  Max (ns)",
        "----  -------  -----  ----------  ---------------  ---------  --------  --------",
    ]


def test_table_sorting_and_limits():
    prof = fake(
        [
            ev(0, "b", CPU, 10, 1),
            ev(1, "a", CPU, 20, 2),
            ev(2, "c", Generic, 5, 3),
            ev(3, "c", Generic, 5, 3),
        ]
    )

    def names(**kw):
        return [line.split()[0] for line in prof.table(**kw).split("\n")[2:]]

    assert names() == ["c", "a", "b"]  # self total 6, 2, 1
    assert names(descending=False) == ["b", "a", "c"]
    assert names(sort_by="name", descending=False) == ["a", "b", "c"]
    assert names(sort_by="total_time_ns") == ["a", "b", "c"]
    assert names(sort_by="count") == ["c", "a", "b"]
    assert names(sort_by="mean_time_ns", descending=False) == ["c", "b", "a"]
    # ties keep the deterministic order (a before b, both CPU)
    assert names(sort_by="carrier_type") == ["c", "a", "b"]
    assert names(sort_by="input_shapes") == ["a", "b", "c"]
    assert names(row_limit=1) == ["c"]
    assert names(row_limit=0) == []
    assert names(row_limit=10) == ["c", "a", "b"]


def test_table_argument_checks():
    prof = fake([])
    with pytest.raises(ValueError) as info:
        prof.table(sort_by="x")
    assert str(info.value) == "unsupported profiler table sort field: 'x'"
    with pytest.raises(TypeError, match="^descending must be a bool$"):
        prof.table(descending=1)
    for bad in (True, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="^row_limit must be a non-negative integer or None$"):
            prof.table(row_limit=bad)
    with pytest.raises(TypeError, match="^group_by_input_shape must be a bool$"):
        prof.table(group_by_input_shape=None)
    # validation order: sort field, then descending, then row_limit
    with pytest.raises(ValueError, match="sort field"):
        prof.table(sort_by="x", descending=1, row_limit=-1)
    with pytest.raises(TypeError, match="descending"):
        prof.table(descending=1, row_limit=-1)
    with pytest.raises(ValueError, match="row_limit"):
        prof.table(row_limit=-1, group_by_input_shape=1)


# ------------------------------------------------------------ chrome trace


@pytest.mark.threads
def test_chrome_trace(tmp_path):
    t = outer_tensor()
    with sw.profile(record_shapes=True) as prof:
        run("outer", t)
        sw.relu(cpu_vector(2))
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    data = json.loads(path.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    events = prof.events()
    assert len(spans) == len(events) == 3
    meta = [e for e in data["traceEvents"] if e["ph"] == "M"]
    assert [m["tid"] for m in meta] == [threading.get_ident()]
    for span, event in zip(spans, events, strict=True):
        assert span["name"] == event.name
        assert span["tid"] == event.thread_id
        assert isinstance(span["pid"], int)
        assert span["ts"] == pytest.approx(event.start_time_ns / 1000)
        assert span["dur"] == pytest.approx(event.duration_ns / 1000)
        assert span["args"]["id"] == event.id
        assert span["args"]["parent_id"] == event.parent_id
        assert span["args"]["succeeded"] is True
    outer, inner, relu = spans
    assert outer["args"]["carrier"] == f"{__name__}.OuterCarrier"
    assert inner["args"]["implementation"] == f"{__name__}.SleepInner"
    assert relu["args"]["input_shapes"] == "((2,),)"
    # nesting: the inner span lies inside the outer one
    assert outer["ts"] <= inner["ts"]
    assert inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    with pytest.raises(RuntimeError, match="only after context exit"):
        sw.profile().export_chrome_trace(path)


@pytest.mark.parametrize("kind", ["CPU", "Generic"])
def test_backward_under_profiler(kind):
    if kind == "CPU":
        x = Tensor(CPU(1), 0, layout([1]))
        x[0] = 2.0
    else:
        x = generic_vector([2.0])
    with sw.profile(record_shapes=True) as prof:
        y = sw.mul(x, 3.0)
        z = sw.elementwise_mul(y, y)
        z.backward()
    assert x.grad[0] == pytest.approx(36.0)
    # the reverse pass runs backward rules directly; only the accumulation
    # of y's two gradient contributions is a dispatched execution
    names = [e.name for e in prof.events()]
    assert names[:2] == ["mul", "elementwise_mul"]
    assert set(names[2:]) <= {"add"}
    assert all(e.succeeded for e in prof.events())


@pytest.mark.parametrize("kind", ["CPU", "Generic"])
def test_record_backward(kind):
    if kind == "CPU":
        x = Tensor(CPU(1), 0, layout([1]))
        x[0] = 2.0
        cls = CPU
    else:
        x = generic_vector([2.0])
        cls = Generic
    with sw.profile(record_shapes=True, record_backward=True) as prof:
        y = sw.mul(x, 3.0)
        z = sw.elementwise_mul(y, y)
        z.backward()
    assert x.grad[0] == pytest.approx(36.0)
    events = prof.events()
    names = [e.name for e in events]
    assert names[:2] == ["mul", "elementwise_mul"]
    # one event per node, the nodes in the order the engine ran them
    backward = [e for e in events if e.name.endswith(".backward")]
    assert [e.name for e in backward] == ["elementwise_mul.backward", "mul.backward"]
    forward = {e.name: e for e in events[:2]}
    for e in backward:
        assert e.carrier_type is cls and e.succeeded and e.parent_id is None
        assert e.implementation_type is forward[e.name[: -len(".backward")]].implementation_type
        assert e.input_shapes == ((1,),)
    rows = {(r.name, r.carrier_type) for r in prof.key_averages()}
    assert ("mul.backward", cls) in rows and ("elementwise_mul.backward", cls) in rows
    assert "mul.backward" in prof.table()


class ScaleBack(Operation):
    """x * 2 in Python whose backward dispatches an elementwise multiply."""

    def _forward(self, x):
        return Tensor(Generic([x[i] * 2 for i in range(x.size())]), 0, x.layout)

    def backward(self, gradient):
        time.sleep(INNER_SLEEP)
        two = Tensor(Generic([2.0] * gradient.size()), 0, gradient.layout)
        return [sw.elementwise_mul(gradient, two)]


class ScaleCarrier(Generic):
    def _dispatch_op(self, name):
        return ScaleBack() if name == "scale" else super()._dispatch_op(name)


def test_record_backward_nests_what_the_backward_runs():
    x = Tensor(ScaleCarrier([1.0, 2.0]), 0, layout([2]))
    y = run("scale", x)
    with sw.profile(record_backward=True) as prof:
        y.backward(Tensor(Generic([1.0, 1.0]), 0, layout([2])))
    assert [x.grad[i] for i in range(2)] == [2.0, 2.0]
    events = prof.events()
    back = next(e for e in events if e.name == "scale.backward")
    assert back.carrier_type is ScaleCarrier and back.implementation_type is ScaleBack
    child = next(e for e in events if e.name == "elementwise_mul")
    assert child.parent_id == back.id
    assert back.duration_ns >= INNER_SLEEP * NS
    assert back.self_time_ns == back.duration_ns - child.duration_ns
    # off by default: the same backward gives the child as a root
    y = run("scale", x)
    with sw.profile() as prof:
        y.backward(Tensor(Generic([1.0, 1.0]), 0, layout([2])))
    # (the add accumulates into x.grad from the first pass)
    assert [e.name for e in prof.events()] == ["elementwise_mul", "add"]
    assert all(e.parent_id is None for e in prof.events())


def test_record_backward_of_a_move():
    x = Tensor(CPU(2), 0, layout([2]))
    y = sw.move(x, CPU(2))
    with sw.profile(carriers=[CPU], record_backward=True) as prof:
        y.backward(Tensor(CPU(2), 0, layout([2])))
    back = [e for e in prof.events() if e.name == "move.backward"]
    assert len(back) == 1 and back[0].carrier_type is CPU and back[0].succeeded


class MyReLU(GenericReLUOperation):
    pass


class ReLUCarrier(Generic):
    def _dispatch_op(self, name):
        return MyReLU() if name == "relu" else super()._dispatch_op(name)


def test_implementation_type_is_the_python_subclass():
    t = Tensor(ReLUCarrier([1.0, -1.0]), 0, layout([2]))
    with sw.profile(carriers=[ReLUCarrier]) as prof:
        sw.relu(t)
    (e,) = prof.events()
    assert (e.carrier_type, e.implementation_type) == (ReLUCarrier, MyReLU)


class Adapter(Operation):
    """Runs the primary carrier's operation through lowered execution, as a
    composite carrier's adapter does."""

    def _forward(self, x):
        primary = Tensor(Generic([x[i] for i in range(x.size())]), 0, x.layout)
        return execute_lowered_operation(primary.carrier.dispatch_op("relu"), primary)


class Composite(Generic):
    def _dispatch_op(self, name):
        return Adapter() if name == "relu" else super()._dispatch_op(name)


def test_composite_lowered_execution_nests():
    t = Tensor(Composite([1.0, -1.0]), 0, layout([2]))
    with sw.profile() as prof:
        result = sw.relu(t)
    assert [result[i] for i in range(2)] == [1.0, 0.0]
    outer, inner = prof.events()
    assert (outer.name, outer.carrier_type, outer.parent_id) == ("relu", Composite, None)
    assert (inner.name, inner.carrier_type, inner.parent_id) == ("relu", Generic, 0)
    assert inner.implementation_type is GenericReLUOperation
    assert outer.self_time_ns == outer.duration_ns - inner.duration_ns
    rows = prof.key_averages()
    # sorted by (module, qualname): strideweave.carriers... before test_profiler
    assert [(r.name, r.carrier_type) for r in rows] == [("relu", Generic), ("relu", Composite)]
    with sw.profile(carriers={Generic}) as only:
        sw.relu(t)
    (e,) = only.events()
    assert (e.carrier_type, e.parent_id) == (Generic, None)
    with sw.profile(carriers={Composite}) as outer_only:
        sw.relu(t)
    (e,) = outer_only.events()
    assert e.self_time_ns < e.duration_ns


@pytest.mark.threads
def test_thread_ending_inside_a_profiler_abandons_it():
    prof = sw.profile()

    def enter_and_leave_running():
        prof.__enter__()
        sw.exp(cpu_vector(2))

    th = threading.Thread(target=enter_and_leave_running)
    th.start()
    th.join()
    # join() returns before the system thread has finished exiting; the
    # session ends as it does
    deadline = time.monotonic() + 10
    while prof._session.active and time.monotonic() < deadline:
        time.sleep(0.001)
    assert not prof._session.active
    with pytest.raises(RuntimeError, match="results are available only after context exit"):
        prof.events()
    with pytest.raises(RuntimeError, match="^Profiler context is not active$"):
        prof.__exit__(None, None, None)
