"""How separately built features work together: the profiler around Evictable
executions, moves and layout command strings; layout command strings on
Evictable, Generic-subclass and pure-Python carriers, with gradients."""

import re

import pytest
import strideweave as sw
from helpers_carriers import L, ListCarrier
from strideweave import (
    CPU,
    CpuToFileBackedMoveOperation,
    DType,
    ElementwiseMoveOperation,
    Evictable,
    EvictableOperation,
    FileBacked,
    Generic,
    GenericMatmulOperation,
    GenericReduceSumOperation,
    GenericReLUOperation,
    RearrangeOperation,
    Tensor,
)
from strideweave.carriers.cpu import ops as cpu_ops
from strideweave.carriers.generic.ops import GenericBatchedMatmulOperation

EVICTED = "Evictable carrier is evicted; call promote() first"
KINDS = ["CPU", "Generic"]
VALUES = [1.0, -2.0, 3.5, 4.0, -0.5, 2.5, 1.5, -3.0, 0.25, 2.0, -1.0, 0.75]
LAYOUT = L([2, 3, 2], [1, 2, 6])


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    # FileBacked temporaries go to a directory of this test.
    monkeypatch.setenv("TMPDIR", str(tmp_path))


def exact(message):
    return "^" + re.escape(message) + "$"


def primary_class(kind):
    return CPU if kind == "CPU" else Generic


def plain(kind, values=VALUES, layout=LAYOUT):
    if kind == "CPU":
        return Tensor(CPU(0).new_like(list(values)), 0, layout)
    return Tensor(Generic(list(values)), 0, layout)


def hierarchy(kind, values=VALUES, layout=LAYOUT):
    if kind == "CPU":
        carrier = Evictable(CPU(0).new_like(list(values)), FileBacked(dtype=DType.Float32))
    else:
        carrier = Evictable(Generic(list(values)), FileBacked())
    return Tensor(carrier, 0, layout)


def logical(t):
    return [t[i] for i in range(t.size())]


def ops_of(kind):
    """The executed implementation classes of the CPU or Generic carrier."""
    if kind == "CPU":
        return {
            "relu": cpu_ops._CPUReLUOperation,
            "reduce": cpu_ops._CPUReduceSumOperation,
            "matmul": cpu_ops._CPUMatmulOperation,
            "batched_matmul": cpu_ops._CPUBatchedMatmulOperation,
        }
    return {
        "relu": GenericReLUOperation,
        "reduce": GenericReduceSumOperation,
        "matmul": GenericMatmulOperation,
        "batched_matmul": GenericBatchedMatmulOperation,
    }


def summary(prof):
    return [
        (e.id, e.parent_id, e.name, e.carrier_type, e.implementation_type) for e in prof.events()
    ]


# ------------------------------------------------------ profiler x Evictable


@pytest.mark.parametrize("kind", KINDS)
def test_evictable_execution_nests_the_primary_execution(kind):
    x = hierarchy(kind)
    inner = primary_class(kind)
    with sw.profile(record_shapes=True) as prof:
        y = sw.relu(x)
    assert logical(y) == logical(sw.relu(plain(kind)))
    assert summary(prof) == [
        (0, None, "relu", Evictable, EvictableOperation),
        (1, 0, "relu", inner, ops_of(kind)["relu"]),
    ]
    outer, nested = prof.events()
    assert all(e.succeeded for e in prof.events())
    # the adapter's self time excludes the lowered primary execution
    assert outer.self_time_ns == outer.duration_ns - nested.duration_ns
    assert nested.self_time_ns == nested.duration_ns
    assert outer.start_time_ns <= nested.start_time_ns
    assert nested.start_time_ns + nested.duration_ns <= outer.start_time_ns + outer.duration_ns
    # both see the same argument layout: the lowered tensor keeps it
    assert outer.input_shapes == nested.input_shapes == ((2, 3, 2),)
    assert outer.input_shapes[0] == x.layout.shape.top_level
    # the adapter's autograd node is what the event names
    assert type(y.autograd_ctx) is EvictableOperation


@pytest.mark.parametrize("kind", KINDS)
def test_evictable_carrier_filtering(kind):
    x = hierarchy(kind)
    inner = primary_class(kind)
    with sw.profile(carriers=[Evictable]) as outer_only:
        sw.relu(x)
    ((_, parent, name, carrier, impl),) = summary(outer_only)
    assert (parent, name, carrier, impl) == (None, "relu", Evictable, EvictableOperation)
    (outer,) = outer_only.events()
    # the filtered-out nested execution is still not charged to the adapter
    assert outer.self_time_ns < outer.duration_ns
    with sw.profile(carriers=[inner]) as inner_only:
        sw.relu(x)
    assert summary(inner_only) == [(0, None, "relu", inner, ops_of(kind)["relu"])]
    (nested,) = inner_only.events()
    assert nested.self_time_ns == nested.duration_ns
    with sw.profile(carriers={Evictable, inner}) as both:
        sw.relu(x)
    assert [(e.parent_id, e.carrier_type) for e in both.events()] == [
        (None, Evictable),
        (0, inner),
    ]
    other = Generic if kind == "CPU" else CPU
    with sw.profile(carriers=[other, FileBacked]) as neither:
        sw.relu(x)
    assert neither.events() == ()


class MyEvictable(Evictable):
    pass


def test_evictable_subclass_is_matched_by_exact_class():
    x = Tensor(MyEvictable(Generic([1.0, -1.0]), Generic([])), 0, L([2], [1]))
    with sw.profile() as prof:
        sw.relu(x)
    assert [(e.carrier_type, e.implementation_type) for e in prof.events()] == [
        (MyEvictable, EvictableOperation),
        (Generic, GenericReLUOperation),
    ]
    with sw.profile(carriers=[Evictable]) as base_only:
        sw.relu(x)
    assert base_only.events() == ()
    with sw.profile(carriers=[MyEvictable]) as sub_only:
        sw.relu(x)
    assert [(e.carrier_type, e.parent_id) for e in sub_only.events()] == [(MyEvictable, None)]


def test_nested_hierarchies_nest_their_events():
    inner = Evictable(Generic([1.0, -2.0]), Generic([]))
    t = Tensor(Evictable(inner, Generic([])), 0, L([2], [1]))
    with sw.profile() as prof:
        r = sw.relu(t)
    assert logical(r) == [1.0, 0]
    assert [(e.parent_id, e.carrier_type, e.implementation_type) for e in prof.events()] == [
        (None, Evictable, EvictableOperation),
        (0, Evictable, EvictableOperation),
        (1, Generic, GenericReLUOperation),
    ]
    a, b, c = prof.events()
    assert a.self_time_ns == a.duration_ns - b.duration_ns
    assert b.self_time_ns == b.duration_ns - c.duration_ns


@pytest.mark.parametrize("kind", KINDS)
def test_evictable_key_averages_and_table(kind):
    x = hierarchy(kind, [1.0, -2.0], L([2], [1]))
    z = hierarchy(kind, [1.0, -2.0, 3.0], L([3], [1]))
    inner = primary_class(kind)
    with sw.profile(record_shapes=True) as prof:
        sw.relu(x)
        sw.relu(x)
        sw.relu(z)
    rows = prof.key_averages()
    # sorted by (module, qualname): strideweave.carriers.cpu... sorts before
    # strideweave.carriers.evictable..., which sorts before ...generic...
    order = [inner, Evictable] if kind == "CPU" else [Evictable, inner]
    assert [(r.name, r.carrier_type, r.count) for r in rows] == [
        ("relu", order[0], 3),
        ("relu", order[1], 3),
    ]
    events = prof.events()
    for row in rows:
        mine = [e for e in events if e.carrier_type is row.carrier_type]
        assert row.total_time_ns == sum(e.duration_ns for e in mine)
        assert row.self_total_time_ns == sum(e.self_time_ns for e in mine)
        assert row.min_time_ns == min(e.duration_ns for e in mine)
        assert row.max_time_ns == max(e.duration_ns for e in mine)
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [(r.carrier_type, r.input_shapes, r.count) for r in grouped] == [
        (order[0], ((2,),), 2),
        (order[0], ((3,),), 1),
        (order[1], ((2,),), 2),
        (order[1], ((3,),), 1),
    ]
    lines = prof.table(sort_by="name", descending=False).split("\n")
    assert len(lines) == 4
    assert lines[0].split() == [
        "Name",
        "Carrier",
        "Calls",
        "Total",
        "(ns)",
        "Self",
        "total",
        "(ns)",
        "Mean",
        "(ns)",
        "Min",
        "(ns)",
        "Max",
        "(ns)",
    ]
    names = [f"{c.__module__}.{c.__qualname__}" for c in order]
    assert [line.split()[1] for line in lines[2:]] == names
    shown = prof.table(sort_by="carrier_type", descending=True, group_by_input_shape=True)
    assert [line.split()[1] for line in shown.split("\n")[2:]] == [names[1]] * 2 + [names[0]] * 2


def test_evicted_execution_is_a_failed_event():
    x = hierarchy("Generic")
    x.carrier.evict()
    with sw.profile() as prof, pytest.raises(RuntimeError, match=exact(EVICTED)):
        sw.relu(x)
    # dispatch itself refuses an evicted hierarchy: nothing executed
    assert prof.events() == ()
    x.carrier.promote()
    op = x.carrier.dispatch_op("relu")
    x.carrier.evict()
    with sw.profile() as prof, pytest.raises(RuntimeError, match=exact(EVICTED)):
        op.forward(x)
    ((_, parent, name, carrier, impl),) = summary(prof)
    assert (parent, name, carrier, impl) == (None, "relu", Evictable, EvictableOperation)
    assert prof.events()[0].succeeded is False


@pytest.mark.parametrize("kind", KINDS)
def test_evictable_backward_under_profiler(kind):
    x = hierarchy(kind, [2.0], L([1], [1]))
    with sw.profile() as prof:
        y = sw.mul(x, 3.0)
        z = sw.elementwise_mul(y, y)
        z.backward()
    assert x.grad[0] == pytest.approx(36.0)
    inner = primary_class(kind)
    forward = [(e.name, e.carrier_type, e.parent_id) for e in prof.events()[:4]]
    assert forward == [
        ("mul", Evictable, None),
        ("mul", inner, 0),
        ("elementwise_mul", Evictable, None),
        ("elementwise_mul", inner, 2),
    ]
    # the reverse pass runs backward rules directly; at most gradient sums
    assert {e.name for e in prof.events()[4:]} <= {"add"}


# ----------------------------------------------------------- profiler x move


def test_public_moves_give_two_events_and_transitions_none():
    # The movement specification's rule (supersedes "moves are never
    # recorded"): a public move records move.submit and move.complete; a
    # MoveOperation's forward and residency transitions are not moves of
    # the public API and stay unrecorded.
    src = Tensor(CPU(0).new_like([1.0, 2.0]), 0, L([2], [1]))
    ev = Evictable(Generic([1.0, 2.0]), Generic([]))
    with sw.profile() as prof:
        moved = sw.move(src, CPU(2))
        direct = ElementwiseMoveOperation().forward(moved, CPU(2))
        bulk = CpuToFileBackedMoveOperation().forward(direct, FileBacked(dtype=DType.Float32))
        ev.evict()
        ev.promote()
    submit, complete = prof.events()
    assert (submit.name, complete.name) == ("move.submit", "move.complete")
    assert complete.parent_id == submit.id and submit.carrier_type is CPU
    assert logical(bulk) == [1.0, 2.0]
    assert ElementwiseMoveOperation()._operation_name is None


class MovingCarrier(Generic):
    """Dispatches registry move classes under its own names: annotated moves."""

    def _dispatch_op(self, name):
        if name == "copy_out":
            return ElementwiseMoveOperation()
        return super()._dispatch_op(name)


def test_annotated_move_is_recorded():
    t = Tensor(MovingCarrier([1.0, 2.0, 3.0]), 1, L([2], [1]))
    op = t.carrier.dispatch_op("copy_out")
    assert (op._operation_name, op._dispatch_carrier_class) == ("copy_out", MovingCarrier)
    with sw.profile(record_shapes=True) as prof:
        r = op.forward(t, Generic([0.0, 0.0]))
    assert logical(r) == [2.0, 3.0]
    ((_, parent, name, carrier, impl),) = summary(prof)
    assert (parent, name, carrier, impl) == (
        None,
        "copy_out",
        MovingCarrier,
        ElementwiseMoveOperation,
    )
    (e,) = prof.events()
    # one entry per positional argument: the tensor, then the destination
    assert e.input_shapes == ((2,), None)
    assert e.succeeded
    # the move released its source
    with pytest.raises(RuntimeError, match=exact("Carrier is released")):
        t[0]
    t = Tensor(MovingCarrier([1.0, 2.0]), 0, L([2], [1]))
    with sw.profile(carriers=[Generic]) as other:
        t.carrier.dispatch_op("copy_out").forward(t, Generic([0.0, 0.0]))
    assert other.events() == ()


def test_failed_annotated_move_is_a_failed_event():
    t = Tensor(MovingCarrier([1.0, 2.0]), 0, L([2], [1]))
    with sw.profile() as prof, pytest.raises(ValueError, match="too small"):
        t.carrier.dispatch_op("copy_out").forward(t, Generic([0.0]))
    (e,) = prof.events()
    assert (e.name, e.succeeded) == ("copy_out", False)


# --------------------------------------------------------- profiler x einops

EINOPS_CALLS = {
    "rearrange": (lambda a, b: sw.rearrange(a, "a k b -> b (k a)"), ["rearrange"]),
    "reduce": (lambda a, b: sw.reduce(a, "a k b -> b"), ["rearrange", "reduce"]),
    "einsum": (
        lambda a, b: sw.einsum(a, b, "a k b, c k b -> a c"),
        ["rearrange", "rearrange", "matmul", "rearrange"],
    ),
    "batched": (
        lambda a, b: sw.einsum(a, b, "a k b, c k b -> a c b"),
        ["rearrange", "rearrange", "batched_matmul", "rearrange"],
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", sorted(EINOPS_CALLS))
def test_einops_event_names(kind, call):
    fn, names = EINOPS_CALLS[call]
    a, b = plain(kind), plain(kind, [v * 0.5 for v in VALUES])
    with sw.profile(record_shapes=True) as prof:
        fn(a, b)
    events = prof.events()
    assert [e.name for e in events] == names
    assert all(e.parent_id is None and e.succeeded for e in events)
    assert {e.carrier_type for e in events} == {primary_class(kind)}
    impls = ops_of(kind)
    for e in events:
        want = RearrangeOperation if e.name == "rearrange" else impls[e.name]
        assert e.implementation_type is want
    # the first rearrange sees the caller's tensor; contractions see two modes
    # (three with a batch)
    assert events[0].input_shapes[0] == (2, 3, 2)
    for e in events:
        if e.name == "matmul":
            assert [len(s) for s in e.input_shapes] == [2, 2]
        if e.name == "batched_matmul":
            assert [len(s) for s in e.input_shapes] == [3, 3]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", sorted(EINOPS_CALLS))
def test_einops_on_evictable_under_profiler(kind, call):
    fn, names = EINOPS_CALLS[call]
    a, b = hierarchy(kind), hierarchy(kind, [v * 0.5 for v in VALUES])
    with sw.profile() as prof:
        fn(a, b)
    inner = primary_class(kind)
    expected = []
    for name in names:
        outer = len(expected)
        expected.append((name, Evictable, EvictableOperation, None))
        want = RearrangeOperation if name == "rearrange" else ops_of(kind)[name]
        expected.append((name, inner, want, outer))
    got = [(e.name, e.carrier_type, e.implementation_type, e.parent_id) for e in prof.events()]
    assert got == expected


# -------------------------------------------------------- einops x Evictable


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", sorted(EINOPS_CALLS))
def test_einops_on_evictable_matches_the_primary(kind, call):
    fn, _ = EINOPS_CALLS[call]
    other = [v * 0.5 - 1.0 for v in VALUES]
    a, b = hierarchy(kind), hierarchy(kind, other)
    p, q = plain(kind), plain(kind, other)
    y, r = fn(a, b), fn(p, q)
    assert type(y.carrier) is Evictable
    assert type(y.carrier.primary) is primary_class(kind)
    assert type(y.autograd_ctx) is EvictableOperation
    assert repr(y.layout) == repr(r.layout)
    assert logical(y) == pytest.approx(logical(r), rel=1e-6)
    if call == "rearrange":
        # a view: the same hierarchy, no new storage
        assert y.carrier is a.carrier
    else:
        assert y.carrier is not a.carrier
        assert y.carrier.secondary.size() == 0
    gradient = plain(kind, [0.5 + i for i in range(r.size())], r.layout)
    y.backward(gradient)
    r.backward(gradient)
    assert type(a.grad.carrier) is Evictable
    assert logical(a.grad) == pytest.approx(logical(p.grad), rel=1e-6)
    if call in ("einsum", "batched"):
        assert type(b.grad.carrier) is Evictable
        assert logical(b.grad) == pytest.approx(logical(q.grad), rel=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_einops_scalar_reduce_on_evictable_backward(kind):
    a, p = hierarchy(kind), plain(kind)
    s, t = sw.reduce(a, "a k b -> 1"), sw.reduce(p, "a k b -> 1")
    assert repr(s.layout) == repr(t.layout) == "1:1"
    assert s[0] == pytest.approx(t[0])
    s.backward()
    t.backward()
    assert logical(a.grad) == logical(p.grad) == [1.0] * len(VALUES)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", sorted(EINOPS_CALLS))
def test_einops_on_evicted_tensors_refused(kind, call):
    fn, _ = EINOPS_CALLS[call]
    a, b = hierarchy(kind), hierarchy(kind)
    a.carrier.evict()
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        fn(a, b)
    if call in ("einsum", "batched"):
        # an evicted right-hand side is refused the same way
        with pytest.raises(RuntimeError, match=exact(EVICTED)):
            fn(b, a)
    a.carrier.promote()
    assert logical(fn(a, b)) == pytest.approx(logical(fn(plain(kind), plain(kind))), rel=1e-6)


def test_einops_result_evicted_before_backward():
    a = hierarchy("CPU")
    y = sw.reduce(a, "a k b -> b")
    y.carrier.evict()
    # the result need not be promoted during backward; the inputs must be
    y.backward(plain("CPU", [1.0, 2.0], y.layout))
    assert logical(a.grad) == [1.0] * 6 + [2.0] * 6
    z = sw.reduce(a, "a k b -> b")
    a.carrier.evict()
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        z.backward(plain("CPU", [1.0, 2.0], z.layout))


def test_einsum_mixing_evictable_and_plain_is_refused():
    with pytest.raises(TypeError, match=exact("Tensor backing carriers must match")):
        sw.einsum(hierarchy("CPU"), plain("CPU"), "a k b, c k b -> a c b")


# ------------------------------------------- einops x Generic and Python carriers


class SubGeneric(Generic):
    pass


@pytest.mark.parametrize("call", sorted(EINOPS_CALLS))
def test_einops_on_a_generic_subclass(call):
    fn, names = EINOPS_CALLS[call]
    other = [v * 0.5 for v in VALUES]
    a, b = Tensor(SubGeneric(VALUES), 0, LAYOUT), Tensor(SubGeneric(other), 0, LAYOUT)
    with sw.profile() as prof:
        y = fn(a, b)
    r = fn(plain("Generic"), plain("Generic", other))
    assert logical(y) == logical(r)
    # the dispatching class is the subclass; Generic ops make Generic results
    assert prof.events()[0].carrier_type is SubGeneric
    assert [e.name for e in prof.events()] == names
    if call == "rearrange":
        assert y.carrier is a.carrier
    else:
        assert type(y.carrier) is Generic


@pytest.mark.parametrize("call", sorted(EINOPS_CALLS))
def test_einops_on_a_carrier_without_operations(call):
    fn, _ = EINOPS_CALLS[call]
    a = Tensor(ListCarrier(VALUES, dtype=DType.Floating), 0, LAYOUT)
    message = "Carrier class does not support operation 'rearrange'"
    with pytest.raises(NotImplementedError, match=exact(message)):
        fn(a, a)


class MatmulOnlyCarrier(ListCarrier):
    """A Python carrier with the Generic views, reduce and matmul, but no
    batched_matmul: it refuses other names the way the base does."""

    TABLE = {
        "rearrange": RearrangeOperation,
        "reduce": GenericReduceSumOperation,
        "matmul": GenericMatmulOperation,
    }

    def new_like(self, values, *, mutable=True):
        return MatmulOnlyCarrier(values, mutable=mutable, dtype=self.kind)

    def allocate_like(self, size, *, mutable=True, dtype=None, empty=False):
        return MatmulOnlyCarrier([0.0] * size, mutable=mutable, dtype=dtype or self.kind)

    def _dispatch_op(self, name):
        if name not in self.TABLE:
            raise NotImplementedError(f"Carrier class does not support operation {name!r}")
        return self.TABLE[name]()


def test_einsum_on_a_python_carrier_with_matmul_only():
    other = [v * 0.5 for v in VALUES]
    a = Tensor(MatmulOnlyCarrier(VALUES, dtype=DType.Floating), 0, LAYOUT)
    b = Tensor(MatmulOnlyCarrier(other, dtype=DType.Floating), 0, LAYOUT)
    fn, names = EINOPS_CALLS["einsum"]
    with sw.profile() as prof:
        y = fn(a, b)
    assert [e.name for e in prof.events()] == names
    assert {e.carrier_type for e in prof.events()} == {MatmulOnlyCarrier}
    assert type(y.carrier) is MatmulOnlyCarrier
    assert logical(y) == logical(fn(plain("Generic"), plain("Generic", other)))
    y.backward(Tensor(MatmulOnlyCarrier([1.0] * y.size()), 0, y.layout))
    assert len(logical(a.grad)) == len(VALUES)
    # batched einsum dispatches batched_matmul on the left operand's carrier
    # and reports the carrier's refusal unchanged
    message = "Carrier class does not support operation 'batched_matmul'"
    with pytest.raises(NotImplementedError, match=exact(message)):
        sw.einsum(a, b, "a k b, c k b -> a c b")


# ------------------------------------------------- friendly.sum over einops


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("layout", "offset"),
    [
        (L([5], [1]), 0),
        (L([3, 4], [4, 1]), 2),
        (L([2, 3, 2], [12, 1, 3]), 1),
        (L([4, 4], [1, 5]), 0),
        (L([1, 6, 1], [0, 1, 0]), 0),
    ],
)
def test_friendly_sum_is_the_scalar_reduce(kind, layout, offset):
    import strideweave.friendly as F

    values = [((7 * i) % 11) * 0.37 - 1.3 for i in range(layout.cosize + offset)]

    def make():
        carrier = CPU(0).new_like(values) if kind == "CPU" else Generic(list(values))
        return Tensor(carrier, offset, layout)

    a, b = make(), make()
    command = " ".join("abc"[: len(layout.shape)]) + " -> 1"
    with sw.profile() as prof:
        s = F.sum(a)
    t = sw.reduce(b, command)
    assert [e.name for e in prof.events()] == ["rearrange", "reduce"]
    assert repr(s.layout) == repr(t.layout) == "1:1"
    assert s[0] == t[0]
    assert type(s.autograd_ctx) is type(t.autograd_ctx)
    sw.mul(s, 1.5).backward()
    sw.mul(t, 1.5).backward()
    assert logical(a.grad) == logical(b.grad) == [1.5] * a.size()


@pytest.mark.parametrize("kind", KINDS)
def test_friendly_sum_and_mean_on_evictable(kind):
    import strideweave.friendly as F

    a, p = hierarchy(kind), plain(kind)
    s, t = F.mean(a), F.mean(p)
    assert type(s.carrier) is Evictable
    assert s[0] == t[0]
    s.backward()
    t.backward()
    assert type(a.grad.carrier) is Evictable
    assert logical(a.grad) == logical(p.grad)
    a.carrier.evict()
    with pytest.raises(RuntimeError, match=exact(EVICTED)):
        F.sum(a)
