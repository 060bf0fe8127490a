"""Shape and Stride: construction, element rules, protocol and helpers."""

import copy
import pickle

import pytest
from strideweave.layout import Layout, Shape, Stride

# ------------------------------------------------------------ construction


def test_construction_forms():
    assert Shape().top_level == ()
    assert Shape(5).top_level == (5,)
    assert Shape(5) == Shape([5])
    assert Shape(1, 2, [3, 4]) == Shape([1, 2, [3, 4]])
    assert Shape((2, (3, 4))).top_level == (2, (3, 4))
    assert Shape([2, [3, [4]]]).top_level == (2, (3, (4,)))
    assert Shape(range(1, 4)).top_level == (1, 2, 3)
    assert Shape(x for x in (2, 3)).top_level == (2, 3)
    assert Stride(0) == Stride([0])
    assert Stride(1, [10, 100]).top_level == (1, (10, 100))


def test_bool_counts_as_int():
    assert Shape(True).top_level == (1,)
    assert Stride([False, True]).top_level == (0, 1)


def test_shape_elements_collapse_or_nest():
    assert Shape([Shape(3), 4]).top_level == (3, 4)
    assert Shape([2, Shape(3, 4)]).top_level == (2, (3, 4))
    assert Shape([2, Shape([[3, 4]])]).top_level == (2, ((3, 4),))
    assert Shape(Shape(2, [3, 4])) == Shape(2, [3, 4])
    assert Shape(list(Shape(2, [3, 4]))) == Shape(2, [3, 4])
    assert Stride([Stride(3), Stride(4, 5)]).top_level == (3, (4, 5))


def test_empty_nested_levels():
    s = Shape([2, []])
    assert s.top_level == (2, ())
    assert len(s) == 2
    assert s.size == 2


def test_numpy_like_index_objects():
    class Idx:
        def __init__(self, v):
            self.v = v

        def __index__(self):
            return self.v

    assert Shape([Idx(2), [Idx(3)]]).top_level == (2, (3,))


@pytest.mark.parametrize("bad", [0, -1, -(2**70)])
def test_shape_value_errors(bad):
    with pytest.raises(ValueError, match="^Dimension shape must not be less than 1$"):
        Shape(bad)
    with pytest.raises(ValueError, match="^Dimension shape must not be less than 1$"):
        Shape([2, [3, bad]])


@pytest.mark.parametrize("bad", [-1, -(2**70)])
def test_stride_value_errors(bad):
    with pytest.raises(ValueError, match="^Stride value must not be negative$"):
        Stride(bad)
    with pytest.raises(ValueError, match="^Stride value must not be negative$"):
        Stride([1, [bad]])


LAYOUT = Layout(Shape(2), Stride(1))


@pytest.mark.parametrize("bad", [2.0, None, "a", object(), LAYOUT])
def test_element_errors(bad):
    with pytest.raises(
        ValueError, match="^Shape contains an element that is not an integer or a iterable$"
    ):
        Shape([2, bad])
    with pytest.raises(
        ValueError, match="^Stride contains an element that is not an integer or a iterable$"
    ):
        Stride(1, [2, bad])


@pytest.mark.parametrize("bad", [2.0, "a", b"ab", None, LAYOUT])
def test_single_argument_type_errors(bad):
    with pytest.raises(TypeError):
        Shape(bad)
    with pytest.raises(TypeError):
        Stride(bad)


def test_sizes_must_fit_64_bits():
    with pytest.raises(ValueError):
        Shape(2**63)
    with pytest.raises(ValueError):
        Shape([2**32, 2**32])
    with pytest.raises(ValueError):
        Stride(2**64)
    assert Shape(2**62, 1).size == 2**62
    assert Stride(2**63 - 1).top_level == (2**63 - 1,)


def test_size_overflow_at_exactly_int64_max():
    # 2**63 - 1 is itself a valid size; a product past it is refused.
    assert Shape([2**63 - 1, 1]).size == 2**63 - 1
    assert Shape([7, 1317624576693539401]).size == 2**63 - 1
    msg = "^Shape size overflows 64-bit integers$"
    for bad in ([2**63 - 1, 2**63 - 1], [2**63 - 1, 2], [2, 2**63 - 1], [3, [2**62, 1]]):
        with pytest.raises(ValueError, match=msg):
            Shape(bad)
    assert Stride([2**63 - 1, 2**63 - 1]).top_level == (2**63 - 1, 2**63 - 1)


def test_no_keyword_arguments():
    with pytest.raises(TypeError):
        Shape(items=[1])


def test_recursive_list_is_refused():
    a: list = [1]
    a.append(a)
    with pytest.raises(RecursionError):
        Shape(a)


# ------------------------------------------------------------- attributes


def test_depth_size_is_int():
    assert Shape().depth == 1
    assert Shape(2, 3).depth == 1
    assert Shape([2, [3, [4]]]).depth == 3
    assert Shape(2, [3, 4]).logical_size == 24
    assert Shape(2, [3, 4]).size == 24
    assert Shape().size == 1
    assert Shape().is_int
    assert Shape(4).is_int
    assert not Shape(2, 3).is_int
    assert not Shape([[4]]).is_int
    assert Stride(4).is_int and not Stride(1, 2).is_int
    assert not hasattr(Stride(1), "size")
    assert not hasattr(Stride(1), "logical_size")


def test_int_conversion():
    assert int(Shape(7)) == 7
    assert int(Stride([0])) == 0
    with pytest.raises(ValueError, match="^Shape can not be represented as a integer$"):
        int(Shape(2, 3))
    with pytest.raises(ValueError, match="^Stride can not be represented as a integer$"):
        int(Stride([[1]]))
    with pytest.raises(IndexError):
        int(Shape())


def test_immutable():
    s = Shape(2, 3)
    with pytest.raises(AttributeError):
        s.top_level = (1,)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.depth = 4  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.anything = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        Shape.extra = 1  # type: ignore[attr-defined]


# ------------------------------------------------------------- protocol


def test_len_getitem_slices():
    s = Shape(2, [3, 4], 5)
    assert len(s) == 3
    assert s[0] == Shape(2)
    assert s[1] == Shape(3, 4)
    assert s[-1] == Shape(5)
    assert s[1:] == Shape([[3, 4], 5])
    assert s[::-1].top_level == (5, (3, 4), 2)
    assert s[5:] == Shape()
    with pytest.raises(IndexError):
        s[3]
    with pytest.raises(IndexError):
        s[-4]
    with pytest.raises(TypeError):
        s["a"]  # type: ignore[call-overload]
    assert [x.top_level for x in s] == [(2,), (3, 4), (5,)]
    st = Stride(1, [2, 6])
    assert st[1] == Stride(2, 6) and isinstance(st[1], Stride)


def test_equality_and_hash():
    assert Shape(2, [3, 4]) == Shape([2, [3, 4]])
    assert Shape(2, [3, 4]) != Shape(2, 3, 4)
    assert Shape(2, 3) != Stride(2, 3)
    assert Shape(2) != 2
    assert (Shape(2) == (2,)) is False
    with pytest.raises(TypeError):
        hash(Shape(2))
    with pytest.raises(TypeError):
        hash(Stride(2))
    assert Shape.__hash__ is None


def test_repr_str():
    assert repr(Shape(2, [3, 4])) == "Shape<(2, (3, 4))>"
    assert str(Shape(2, [3, 4])) == "Shape<(2, (3, 4))>"
    assert repr(Shape(5)) == "Shape<(5,)>"
    assert repr(Shape()) == "Shape<()>"
    assert repr(Stride(1, [10, 100])) == "Stride<(1, (10, 100))>"


def test_copy_and_pickle():
    s = Shape(2, [3, 4])
    assert copy.copy(s) == s
    assert copy.deepcopy(s) == s
    assert pickle.loads(pickle.dumps(s)) == s
    assert pickle.loads(pickle.dumps(Stride(5))) == Stride(5)
    assert pickle.loads(pickle.dumps(Shape())) == Shape()


# -------------------------------------------------------------- helpers


def test_concat_append():
    assert Shape.concat(Shape(2), Shape(3, [4, 5])) == Shape(2, 3, [4, 5])
    assert Shape.append(Shape(2), Shape(3)) == Shape(2, 3)
    assert Shape.append(Shape(2), Shape()) == Shape(2)
    assert Shape.append(Shape(2), Shape(3, 4)) == Shape(2, [3, 4])
    assert Shape.append(Shape(2), Shape([[3]])) == Shape(2, [[3]])
    assert Stride.concat(Stride(1), Stride(2)) == Stride(1, 2)
    assert Stride.append(Stride(1), Stride(2, 3)) == Stride(1, [2, 3])
    with pytest.raises(TypeError):
        Shape.concat(Shape(1), Stride(1))  # type: ignore[arg-type]
