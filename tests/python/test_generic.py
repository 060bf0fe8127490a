"""The Generic carrier (reference §7): aliasing, immutability, dtypes,
factories, scatter, and garbage collection of the Python store."""

import gc
import weakref

import pytest
from helpers_carriers import L, flat
from strideweave import CPU, Carrier, DType, Generic, Tensor, _native


class Seq:
    """A sized, indexable, assignable sequence that is not a list."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __setitem__(self, i, v):
        self.items[i] = v


class ReadOnlySeq:
    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


# ------------------------------------------------------------ storage


def test_mutable_list_is_an_alias():
    values = [1.0, 2.0, 3.0]
    g = Generic(values)
    assert isinstance(g, Carrier)
    g[0] = 10.0
    assert values[0] == 10.0
    values[2] = "x"
    assert g[2] == "x"
    values.append(4)
    assert g.size() == 4


def test_mutable_any_assignable_sequence_is_an_alias():
    s = Seq([1, 2])
    g = Generic(s)
    g[1] = 5
    assert s.items == [1, 5]


@pytest.mark.parametrize(
    "values, expected",
    [
        ((1, 2), [1, 2]),
        (range(3), [0, 1, 2]),
        ("ab", ["a", "b"]),
        (ReadOnlySeq([4, 5]), [4, 5]),
    ],
)
def test_mutable_copies_everything_else(values, expected):
    g = Generic(values)
    assert list(g) == expected
    g[0] = "new"
    assert g[0] == "new"


def test_mutable_dict_is_an_alias():
    d = {0: "a", 1: "b"}
    g = Generic(d)
    g[1] = "c"
    assert d == {0: "a", 1: "c"}


def test_iterators_are_consumed():
    it = iter([1, 2, 3])
    g = Generic(it)
    assert list(g) == [1, 2, 3]
    assert list(it) == []
    gen = (i * i for i in range(3))
    assert list(Generic(gen, mutable=False)) == [0, 1, 4]


def test_immutable_uses_sized_indexables_directly():
    values = [1, 2]
    g = Generic(values, mutable=False)
    values[0] = 9
    assert g[0] == 9
    assert list(Generic((1, 2), mutable=False)) == [1, 2]
    assert list(Generic(range(2, 5), mutable=False)) == [2, 3, 4]
    assert list(Generic("xyz", mutable=False)) == ["x", "y", "z"]
    assert Generic({0: "a", 1: "b"}, mutable=False)[1] == "b"
    r = ReadOnlySeq([3])
    r.items.append(4)
    assert Generic(r, mutable=False).size() == 2


def test_immutable_writes_are_refused():
    g = Generic([1, 2], mutable=False)
    assert not g.is_mutable()
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        g[0] = 3
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        g.set_value(0, 3)
    assert g.version == 0


def test_values_must_be_iterable():
    for bad in (5, None, 1.5, object()):
        with pytest.raises(TypeError, match=r"^Generic requires an iterable object$"):
            Generic(bad)


def test_mutable_is_normalised_and_keyword_only():
    assert Generic([1], mutable=0).is_mutable() is False
    assert Generic([1], mutable="yes").is_mutable() is True
    with pytest.raises(TypeError):
        Generic([1], True)
    with pytest.raises(TypeError):
        Generic([1], True, DType.Any)


@pytest.mark.parametrize("dtype", ["Floating", None, 1, float])
def test_dtype_must_be_a_dtype(dtype):
    with pytest.raises(TypeError, match=r"^Generic dtype must be a DType$"):
        Generic([], dtype=dtype)


def test_values_are_not_checked_against_the_dtype():
    g = Generic([1, "two", None, [3]])
    assert g.dtype() is DType.Floating
    assert list(g) == [1, "two", None, [3]]


# ------------------------------------------------------------ access


def test_size():
    assert Generic([]).size() == 0
    assert Generic("abc", mutable=False).size() == 3


def test_get_value_follows_python_indexing():
    g = Generic([1, 2, 3])
    assert g.get_value(-1) == 3
    assert g.get_value(0) == 1
    with pytest.raises(IndexError):
        g.get_value(3)
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        g[-1]
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        g[3]


def test_set_value_follows_python_indexing():
    values = [1, 2, 3]
    g = Generic(values)
    g.set_value(-1, "last")
    assert values == [1, 2, "last"] and g.version == 1
    g.set_value(0, "first")
    assert g.version == 2
    with pytest.raises(IndexError):
        g.set_value(5, 0)
    assert g.version == 2


def test_set_value_needs_an_assignable_store():
    g = Generic(ReadOnlySeq([1]), mutable=False)
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        g.set_value(0, 2)


def test_errors_from_the_store_propagate():
    class Angry(Seq):
        def __getitem__(self, i):
            raise LookupError("nope")

    g = Generic(Angry([1, 2]))
    with pytest.raises(LookupError, match="nope"):
        g[0]
    with pytest.raises(LookupError, match="nope"):
        Tensor(g, 0, flat(2))[1]

    class Unsized(Seq):
        def __len__(self):
            raise ArithmeticError("len")

    g = Generic(Unsized([1]))
    with pytest.raises(ArithmeticError, match="len"):
        g.size()
    with pytest.raises(ArithmeticError, match="len"):
        Tensor(g, 0, flat(1))


def test_release():
    values = [1, 2]
    g = Generic(values)
    ref = weakref.ref(g)
    g.release()
    assert g.is_released() and g.version == 0
    for call in (
        g.size,
        lambda: g[0],
        lambda: g.get_value(0),
        lambda: g.set_value(0, 1),
    ):
        with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
            call()
    assert values == [1, 2]
    assert ref() is g


def test_dlpack_is_not_supported():
    with pytest.raises(BufferError, match=r"^DLPack is not supported for this carrier$"):
        Generic([1]).dlpack_info()


# ---------------------------------------------------------- factories


def test_new_like():
    g = Generic([], dtype=DType.Any)
    values = [1, None, "x"]
    r = g.new_like(values)
    assert type(r) is Generic and list(r) == [1, None, "x"]
    assert r.dtype() is DType.Any and r.is_mutable() and r.version == 0
    assert g.new_like((1,), dtype=DType.Floating).dtype() is DType.Floating
    assert not g.new_like([1], mutable=False).is_mutable()
    marker = object()
    assert g.new_like([marker])[0] is marker
    with pytest.raises(TypeError, match=r"^Generic dtype must be a DType$"):
        g.new_like([1], dtype="Any")
    with pytest.raises(ValueError, match=r"^Generic dtype must be DType.Any or DType.Floating$"):
        g.new_like([1], dtype=DType.Int32)


def test_new_like_after_release():
    g = Generic([1])
    g.release()
    assert list(g.new_like([2, 3])) == [2, 3]


def test_new_like_only_for_exact_generic():
    class Sub(Generic):
        pass

    with pytest.raises(
        NotImplementedError,
        match=r"^Generic carrier factory only supports exact Generic carriers$",
    ):
        Sub([1]).new_like([2])


def test_allocate_like():
    class Sub(Generic):
        pass

    g = Sub([1], dtype=DType.Any)
    r = g.allocate_like(3)
    assert type(r) is Generic
    assert list(r) == [None, None, None]
    assert r.dtype() is DType.Any
    assert g.allocate_like(2, dtype=DType.Floating, empty=True).size() == 2
    assert not g.allocate_like(1, mutable=False).is_mutable()
    assert g.allocate_like(True).size() == 1
    with pytest.raises(ValueError, match=r"^Generic allocation size must be non-negative$"):
        g.allocate_like(-1)
    with pytest.raises(TypeError):
        g.allocate_like(1.0)
    with pytest.raises(TypeError, match=r"^Generic dtype must be a DType$"):
        g.allocate_like(1, dtype="Any")


# ------------------------------------------------------------ scatter


def test_scatter_bumps_once_per_element():
    values = [0] * 6
    g = Generic(values)
    onto = Tensor(g, 1, L([3], [2]))  # its layout is ignored; the offset counts
    src = Tensor(Generic(["a", "b", "c", "d"]), 0, L([2, 2], [2, 1]))
    g.scatter(src, onto, L([2, 2], [1, 2]))
    assert values == [0, "a", "c", "b", "d", 0]
    assert g.version == 4
    g.scatter(Tensor(Generic(["z"]), 0, flat(1)), onto, flat(1), mapping_offset=4)
    assert values[5] == "z" and g.version == 5


def test_scatter_from_other_carriers():
    g = Generic([None, None])
    src = Tensor(CPU(0, dtype=DType.Int32).new_like([4, 5]), 0, flat(2))
    g.scatter(src, Tensor(g, 0, flat(2)), flat(2))
    assert list(g) == [4, 5]


def test_scatter_checks_in_order():
    g = Generic([0, 0, 0])
    onto = Tensor(g, 0, flat(3))
    src = Tensor(Generic([1, 2]), 0, flat(2))
    frozen = Generic([0, 0, 0], mutable=False)
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        frozen.scatter(None, None, None)
    with pytest.raises(TypeError, match=r"^to_scatter must be a Tensor$"):
        g.scatter([1, 2], onto, flat(2))
    with pytest.raises(TypeError, match=r"^scatter_onto must be a Tensor$"):
        g.scatter(src, g, flat(2))
    with pytest.raises(TypeError, match=r"^mapping must be a Layout$"):
        g.scatter(src, onto, None)
    with pytest.raises(ValueError, match=r"^scatter_onto must be backed by this carrier$"):
        g.scatter(src, Tensor(Generic([0, 0, 0]), 0, flat(3)), flat(2))
    with pytest.raises(ValueError, match=r"^mapping shape must match to_scatter layout shape$"):
        g.scatter(src, onto, flat(3))
    with pytest.raises(TypeError):
        g.scatter(src, onto, flat(2), 1.0)
    with pytest.raises(ValueError, match=r"^mapping_offset must be non-negative$"):
        g.scatter(src, onto, flat(2), -1)
    with pytest.raises(ValueError, match=r"^scatter mapping exceeds destination carrier size$"):
        g.scatter(src, onto, flat(2), 2)
    assert g.version == 0 and list(g) == [0, 0, 0]


# --------------------------------------------------------------- GC


def test_generic_holding_a_list_that_holds_it_is_collected():
    gc.collect()
    base = _native._debug_live_allocs()
    values = []
    g = Generic(values)
    values.append(g)
    ref = weakref.ref(g)
    del g, values
    gc.collect()
    assert ref() is None
    assert _native._debug_live_allocs() == base


def test_subclass_cycle_through_its_dict_is_collected():
    class Sub(Generic):
        pass

    g = Sub([1])
    g.me = g
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None


def test_store_is_visited_by_the_collector():
    values = [1]
    g = Generic(values)
    assert any(r is values for r in gc.get_referents(g))


def test_subclass_state_survives_through_a_tensor():
    class Tagged(Generic):
        def __init__(self, values, tag):
            super().__init__(values, dtype=DType.Any)
            self.tag = tag

    g = Tagged([1, 2], "keep")
    ref = weakref.ref(g)
    t = Tensor(g, 0, flat(2))
    del g
    gc.collect()
    assert t.carrier.tag == "keep" and t[1] == 2
    del t
    gc.collect()
    assert ref() is None


def test_element_references_are_balanced():
    marker = object()
    g = Generic([marker])
    before = len(gc.get_referrers(marker))
    for _ in range(100):
        assert g[0] is marker
        assert Tensor(g, 0, flat(1))[0] is marker
    t = Tensor(g, 0, flat(1))
    for _ in range(100):
        t[0] = marker
    assert len(gc.get_referrers(marker)) == before
    import sys

    count = sys.getrefcount(marker)
    for _ in range(100):
        g[0]
        g.get_value(0)
        g.new_like([marker])
    gc.collect()
    assert sys.getrefcount(marker) == count
