"""Tensor (reference §3.1-§3.3, without autograd and operators):
construction, identity, views, element access and subclasses."""

import gc
import weakref

import pytest
from helpers_carriers import L, ListCarrier, flat
from strideweave import CPU, DType, FileBacked, Generic, Layout, Shape, Stride, Tensor

KEY_MSG = r"^Tensor indices must be integers or tuples/lists of integers$"
DOMAIN_MSG = r"^Key is not in domain of shape$"


class Indexy:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def grid():
    """A 2x3 row-major tensor over Generic holding 0..5."""
    c = Generic(list(range(6)))
    return c, Tensor(c, 0, L([2, 3], [3, 1]))


# ---------------------------------------------------------- construction


def test_construction_and_identity():
    c = CPU(8)
    layout = L([2, 2], [1, 2])
    t = Tensor(c, 2, layout)
    assert t.carrier is c and t.layout is layout and t.offset == 2
    k = Tensor(carrier=c, offset=1, layout=layout)
    assert k.carrier is c and k.offset == 1
    assert Tensor(c, layout=layout, offset=0).offset == 0


def test_offset_conversion():
    c = CPU(4)
    assert Tensor(c, True, flat(1)).offset == 1
    assert type(Tensor(c, True, flat(1)).offset) is int
    assert Tensor(c, Indexy(2), flat(1)).offset == 2
    for bad in (1.0, "1", None):
        with pytest.raises(TypeError, match="offset"):
            Tensor(c, bad, flat(1))


def test_offset_must_be_non_negative():
    for bad in (-1, -(2**80)):
        with pytest.raises(ValueError, match=r"^Tensor offset must be non-negative$"):
            Tensor(CPU(4), bad, flat(1))


def test_storage_check_uses_cosize():
    holes = L([2], [3])  # size 2, cosize 4
    assert holes.cosize == 4
    Tensor(CPU(4), 0, holes)
    for size, offset in ((3, 0), (4, 1), (2, 3), (4, 5)):
        with pytest.raises(ValueError, match=r"^Tensor storage exceeds carrier size$"):
            Tensor(CPU(size), offset, holes)
    with pytest.raises(ValueError, match=r"^Tensor storage exceeds carrier size$"):
        Tensor(CPU(4), 2**70, flat(1))
    Tensor(CPU(4), 3, flat(1))
    with pytest.raises(ValueError, match=r"^Tensor storage exceeds carrier size$"):
        Tensor(CPU(4), 4, flat(1))


def test_argument_types():
    with pytest.raises(TypeError, match=r"^carrier must be a Carrier"):
        Tensor([1, 2], 0, flat(1))
    with pytest.raises(TypeError, match=r"^carrier must be a Carrier"):
        Tensor(None, 0, flat(1))
    with pytest.raises(TypeError, match=r"^layout must be a Layout"):
        Tensor(CPU(2), 0, Shape(2))
    with pytest.raises(TypeError, match=r"^layout must be a Layout"):
        Tensor(CPU(2), 0, "2:1")
    with pytest.raises(TypeError):
        Tensor(CPU(2), 0)
    with pytest.raises(TypeError):
        Tensor(CPU(2), 0, flat(1), 3)


def test_init_twice():
    t = Tensor(CPU(2), 0, flat(1))
    with pytest.raises(RuntimeError, match="must not be called twice"):
        t.__init__(CPU(2), 0, flat(2))
    assert t.size() == 1


# ------------------------------------------------------------ attributes


def test_no_dict_and_read_only_properties():
    t = Tensor(CPU(2), 0, flat(2))
    with pytest.raises(AttributeError):
        t.data = 1
    for name in ("carrier", "offset", "layout", "version"):
        with pytest.raises(AttributeError):
            setattr(t, name, None)
    assert not hasattr(t, "__dict__")


def test_simple_methods():
    c = CPU(12, dtype=DType.Int32)
    t = Tensor(c, 1, L([2, [2, 2]], [1, [2, 4]]))
    assert t.size() == 8 == t.layout.shape.logical_size
    assert t.is_mutable()
    assert t.dtype() is DType.Int32
    assert t.is_differentiable() is False
    assert t.carrier_type() is CPU
    assert Tensor(CPU(1, mutable=False), 0, flat(1)).is_mutable() is False
    assert Tensor(Generic([1]), 0, flat(1)).is_differentiable() is True
    assert Tensor(Generic([1], dtype=DType.Any), 0, flat(1)).is_differentiable() is False
    assert Tensor(CPU(1), 0, flat(1)).is_differentiable() is True


def test_version_is_the_carriers():
    c = CPU(4)
    a = Tensor(c, 0, flat(2))
    b = Tensor(c, 2, flat(2))
    a[0] = 1.0
    assert a.version == b.version == c.version == 1
    b[1] = 2.0
    c[0] = 3.0
    assert a.version == b.version == 3


def test_equality_and_hash_by_identity():
    c = CPU(2)
    a, b = Tensor(c, 0, flat(2)), Tensor(c, 0, flat(2))
    assert a == a and a != b
    assert len({a, b, a}) == 2
    assert hash(a) == hash(a)


def test_no_len_and_accidental_iteration():
    _, t = grid()
    with pytest.raises(TypeError):
        len(t)
    assert not hasattr(type(t), "__iter__")
    # Iteration ends at the first read outside the domain, an IndexError
    # (a ValueError too, as the reference raised).
    assert list(t) == [0, 3, 1, 4, 2, 5]
    with pytest.raises(ValueError, match=DOMAIN_MSG):
        t[6]


def test_weak_references():
    t = Tensor(CPU(1), 0, flat(1))
    assert weakref.ref(t)() is t


# --------------------------------------------------------- element access


def test_int_keys_are_logical_indices():
    _, t = grid()
    # colexicographic: the first mode runs fastest
    assert [t[i] for i in range(6)] == [0, 3, 1, 4, 2, 5]
    assert t[True] == t[1]


def test_coordinate_keys():
    _, t = grid()
    assert t[1, 2] == 5 == t[[1, 2]] == t[(1, 2)]
    assert t[1] == 3
    assert t[[1]] == 3 == t[1, 0]
    assert t[1, 2, 3] == t[1, 2]
    assert t[()] == 0
    assert t[True, True] == 4


def test_nested_coordinates():
    c = Generic(list(range(8)))
    t = Tensor(c, 0, L([2, [2, 2]], [1, [2, 4]]))
    assert t[1, [1, 1]] == 7
    assert t[1, (0, 1)] == 5
    assert t[1, 3] == 7  # an int for a nested mode is its logical index
    assert t[[1, [1, 1]]] == 7


def test_keys_outside_the_domain():
    _, t = grid()
    for key in (-1, 6, (2, 0), (0, 3), (-1, 0), 2**80, (2**80, 0)):
        with pytest.raises(ValueError, match=DOMAIN_MSG):
            t[key]
        with pytest.raises(ValueError, match=DOMAIN_MSG):
            t[key] = 0


@pytest.mark.parametrize(
    "key", [1.0, "1", None, Ellipsis, [1, "x"], (1, 2.0), (1, [None]), Indexy(1), {0: 1}]
)
def test_bad_keys(key):
    _, t = grid()
    with pytest.raises(TypeError, match=KEY_MSG):
        t[key]
    with pytest.raises(TypeError, match=KEY_MSG):
        t[key] = 0


def test_a_tuple_for_a_leaf_mode_is_refused():
    _, t = grid()
    with pytest.raises(TypeError):
        t[(1, 1), 0]


@pytest.mark.parametrize("key", [slice(None), (0, slice(1, 2)), [1, [slice(None)]]])
def test_slices_route_to_view_and_are_refused_in_assignments(key):
    # A slice anywhere asks for a view (test_functional.py covers views); the
    # key then follows view's rules, so these keys of the wrong length fail
    # there or succeed as views.
    c, t = grid()
    try:
        v = t[key]
    except ValueError as e:
        assert str(e) == "View keys must include exactly one key per top-level mode"
    else:
        assert v.carrier is c
    with pytest.raises(TypeError, match=KEY_MSG):
        t[key] = 0


def test_writes():
    c, t = grid()
    t[1, 2] = "x"
    assert c[5] == "x"
    t[0] = None
    assert c[0] is None
    assert t.version == 2
    with pytest.raises(TypeError):
        del t[0]


def test_writes_through_carrier_rules():
    t = Tensor(CPU(2, mutable=False), 0, flat(2))
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        t[0] = 1.0
    i = Tensor(CPU(2, dtype=DType.Int32), 0, flat(2))
    with pytest.raises(TypeError, match=r"^CPU value must be an integer$"):
        i[0] = 1.5
    with pytest.raises(OverflowError, match=r"^CPU value is out of int32 range$"):
        i[1] = 2**40
    with pytest.raises(TypeError, match=r"^CPU value must be a number$"):
        Tensor(CPU(1), 0, flat(1))[0] = "one"
    f = Tensor(CPU(1), 0, flat(1))
    f[0] = 0.1
    assert f[0] == 0.10000000149011612
    b = Tensor(CPU(1, dtype=DType.Bool), 0, flat(1))
    b[0] = 3
    assert b[0] is True


def test_released_carriers():
    c = CPU(2)
    t = Tensor(c, 0, flat(2))
    c.release()
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        t[0]
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        t[0] = 1.0
    assert t.carrier is c and t.size() == 2


def test_views_share_a_carrier():
    c = CPU(6)
    rows = Tensor(c, 0, L([2, 3], [3, 1]))
    cols = Tensor(c, 0, L([3, 2], [1, 3]))
    tail = Tensor(c, 3, flat(3))
    rows[1, 0] = 7.0
    assert cols[0, 1] == 7.0 and tail[0] == 7.0
    tail[2] = 9.0
    assert rows[1, 2] == 9.0 == cols[2, 1]
    assert rows.carrier is cols.carrier is tail.carrier is c
    assert rows.version == cols.version == tail.version == 2


def test_every_carrier_kind():
    f = FileBacked()
    f._allocate(4)
    for carrier in (CPU(4), Generic([0, 0, 0, 0]), f, ListCarrier([0, 0, 0, 0])):
        t = Tensor(carrier, 1, L([3], [1]))
        t[2] = 5
        assert carrier[3] == 5
        assert t.version == 1


# ------------------------------------------------------------ subclasses


def test_tensor_subclass_has_a_dict():
    class Named(Tensor):
        def __init__(self, carrier, name):
            super().__init__(carrier, 0, flat(carrier.size()))
            self.name = name

    t = Named(CPU(2), "w")
    assert t.name == "w" and t.size() == 2
    t.extra = 1
    assert t.__dict__ == {"name": "w", "extra": 1}
    t[1] = 2.0
    assert t[1] == 2.0


def test_tensor_subclass_that_skips_init():
    class Broken(Tensor):
        def __init__(self):
            pass

    t = Broken()
    for call in (t.size, lambda: t.carrier, lambda: t[0], t.dtype):
        with pytest.raises(
            TypeError, match=r"^Tensor.__init__\(\) must be called when overriding __init__$"
        ):
            call()


def test_tensor_subclass_cycle_is_collected():
    class Node(Tensor):
        pass

    t = Node(CPU(1), 0, flat(1))
    t.me = t
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is None


class TaggedCPU(CPU):
    def __init__(self, n, tag):
        super().__init__(n)
        self.tag = tag


class TaggedGeneric(Generic):
    def __init__(self, values, tag):
        super().__init__(values)
        self.tag = tag


@pytest.mark.parametrize(
    "make",
    [lambda: TaggedCPU(3, "cpu"), lambda: TaggedGeneric([0.0, 0.0, 0.0], "generic")],
    ids=["CPU", "Generic"],
)
def test_carrier_subclass_state_survives_in_a_tensor(make):
    carrier = make()
    tag = carrier.tag
    carrier.more = [1, 2]
    ref = weakref.ref(carrier)
    t = Tensor(carrier, 0, flat(3))
    view = Tensor(carrier, 1, flat(2))
    del carrier
    gc.collect()
    assert ref() is t.carrier is view.carrier
    assert t.carrier.tag == tag and t.carrier.more == [1, 2]
    t[2] = 4.0
    assert view[1] == 4.0
    del t
    gc.collect()
    assert view.carrier.tag == tag
    del view
    gc.collect()
    assert ref() is None


def test_layouts_are_shared_not_copied():
    layout = Layout(Shape([2, 2]), Stride([2, 1]))
    a = Tensor(CPU(4), 0, layout)
    b = Tensor(Generic([0] * 4), 0, layout)
    assert a.layout is b.layout is layout


# ------------------------------------------------- an operation's result


def operands():
    layout = L([4], [1])
    a, b = Tensor(CPU(4), 0, layout), Tensor(CPU(4), 0, layout)
    for i in range(4):
        a[i], b[i] = float(i), 10.0 * i
    return a, b


def test_result_carrier_and_layout_are_made_once():
    import strideweave as sw

    a, b = operands()
    r = sw.add(a, b)
    # Before either object exists: the carrier's type, and another call.
    assert r.carrier_type() is CPU
    s = sw.add(r, a)
    c = r.carrier
    assert type(c) is CPU and r.carrier is c and c.size() == 4
    assert r.layout is r.layout and r.layout == a.layout and r.layout is not a.layout
    assert [s[i] for i in range(4)] == [12.0 * i for i in range(4)]
    c[0] = 5.0  # the object is the result's storage
    assert r[0] == 5.0 and r.version == c.version


@pytest.mark.parametrize("first", ["result", "view"])
def test_result_and_its_view_share_one_carrier_object(first):
    import strideweave as sw

    a, b = operands()
    r = sw.add(a, b)
    v = r[1:3]
    c = r.carrier if first == "result" else v.carrier
    assert r.carrier is c and v.carrier is c
    del r
    gc.collect()
    assert v.carrier is c and v[0] == 11.0
    c.release()
    with pytest.raises(RuntimeError, match="^Carrier is released$"):
        v[0]


def test_results_make_no_carrier_object_until_asked():
    import strideweave as sw

    a, b = operands()

    def cpu_objects():
        return sum(1 for o in gc.get_objects() if type(o) is CPU)

    before = cpu_objects()
    results = [sw.add(a, b) for _ in range(50)]
    assert cpu_objects() == before
    carriers = [r.carrier for r in results]
    assert cpu_objects() == before + 50
    assert len({id(c) for c in carriers}) == 50


def test_results_make_one_python_object_each():
    import tracemalloc

    import strideweave as sw

    a, b = operands()
    results = [None] * 100
    for i in range(3):  # warm the caches the first calls fill
        results[i] = sw.add(a, b)
    results[:] = [None] * 100
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(100):
            results[i] = sw.add(a, b)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    here = [tracemalloc.Filter(True, __file__)]
    grown = sum(
        s.count_diff
        for s in after.filter_traces(here).compare_to(before.filter_traces(here), "filename")
    )
    # The Tensor object alone (before: the carrier and Layout objects too).
    assert grown <= 110
    weak = weakref.ref(results[0])
    del results
    gc.collect()
    assert weak() is None


def test_a_result_in_a_cycle_without_its_carrier_object_is_collected():
    import strideweave as sw

    a, b = operands()
    r = sw.add(a, b)  # recorded: its context holds a and b
    s = sw.add(r, r)
    s.autograd_ctx.ctx["cycle"] = s  # a cycle through the library's context
    weak = weakref.ref(s)
    del s
    gc.collect()
    assert weak() is None
    assert r.carrier.size() == 4
