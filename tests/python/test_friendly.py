"""strideweave.friendly (reference §19): layout builders, CPU factories,
scalar reductions and value extraction, with their validation messages."""

import inspect
import math
import random

import pytest
import strideweave as sw
import strideweave.friendly as F
from helpers_ops import L
from hypothesis import given, settings
from hypothesis import strategies as st

DTYPE_MSG = "CPU dtype must be"


def test_exports_are_plain_functions_with_docstrings():
    assert F.__all__ == [
        "arange",
        "column_major",
        "full",
        "item",
        "mean",
        "ones",
        "rand",
        "randn",
        "row_major",
        "sum",
        "tensor",
        "to_list",
        "zeros",
    ]
    assert F.__doc__
    for name in F.__all__:
        fn = getattr(F, name)
        assert inspect.isfunction(fn)
        for section in ("Args:", "Returns:", "Examples:"):
            assert section in fn.__doc__, (name, section)


# ---------------------------------------------------------------- layouts


def test_column_and_row_major():
    assert F.column_major(2, 3, 4) == L([2, 3, 4], [1, 2, 6])
    assert F.row_major(2, 3, 4) == L([2, 3, 4], [12, 4, 1])
    assert F.column_major(5) == sw.Layout(sw.Shape(5), sw.Stride(1))
    assert F.row_major(3, 1) == L([3, 1], [1, 1])
    assert F.column_major(True, 2) == L([1, 2], [1, 1])


@pytest.mark.parametrize("builder", [F.column_major, F.row_major])
def test_layout_builder_validation(builder):
    with pytest.raises(ValueError, match="^at least one extent is required$"):
        builder()
    for bad in (0, -1, 2.0, "3", None):
        with pytest.raises(ValueError, match="^extents must be positive integers$"):
            builder(2, bad)


# -------------------------------------------------------------- factories


def test_tensor_from_nested_lists_is_column_major():
    t = F.tensor([[1, 2, 3], [4, 5, 6]])
    assert t.layout == L([2, 3], [1, 2])
    assert isinstance(t.carrier, sw.CPU) and t.dtype() == sw.DType.Float32
    assert t.carrier.size() == 6 and t.offset == 0
    for i in range(2):
        for j in range(3):
            assert t[i, j] == float([[1, 2, 3], [4, 5, 6]][i][j])
    assert F.to_list(F.tensor([[1, 2], [3, 4]])) == [1.0, 3.0, 2.0, 4.0]


def test_tensor_three_levels_and_tuples():
    values = (((1, 2), (3, 4), (5, 6)), ((7, 8), (9, 10), (11, 12)))
    t = F.tensor(values)
    assert t.layout == F.column_major(2, 3, 2)
    for i in range(2):
        for j in range(3):
            for k in range(2):
                assert t[i, j, k] == values[i][j][k]


def test_tensor_flat_list():
    t = F.tensor([0.5, 1.5, 2.5])
    assert t.layout == F.column_major(3)
    assert F.to_list(t) == [0.5, 1.5, 2.5]


def test_tensor_with_layout_uses_logical_order_and_cosize():
    layout = L([2, 3], [3, 1])  # row-major
    t = F.tensor([1, 2, 3, 4, 5, 6], layout=layout)
    assert t.layout == layout and t.carrier.size() == 6
    assert F.to_list(t) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert t[1, 0] == 2.0
    holes = L([2, 3], [1, 4])  # cosize 10
    t = F.tensor(range(6), layout=holes)
    assert t.carrier.size() == 10
    assert [t.carrier[i] for i in range(10)] == [0, 1, 0, 0, 2, 3, 0, 0, 4, 5]


def test_tensor_with_layout_length_must_match():
    msg = "^values length must equal the layout logical size$"
    with pytest.raises(ValueError, match=msg):
        F.tensor([1.0, 2.0], layout=F.column_major(3))
    with pytest.raises(ValueError, match=msg):
        F.tensor([1.0, 2.0, 3.0, 4.0], layout=F.column_major(3))


@pytest.mark.parametrize(
    ("values", "msg"),
    [
        (1.0, "values must be a non-empty list or tuple"),
        ("ab", "values must be a non-empty list or tuple"),
        ([], "values must be a non-empty list or tuple"),
        ((), "values must be a non-empty list or tuple"),
        ([[]], "values must not contain empty levels"),
        ([[[]], [[]]], "values must not contain empty levels"),
        ([[1, 2], [3]], "values must be rectangular across every level"),
        ([[1, 2], 3], "values must be rectangular across every level"),
        ([1, [2]], "values must be rectangular across every level"),
        ([[1, [2]], [3, 4]], "values must be rectangular across every level"),
        ([[[1], [2]], [[3], [4, 5]]], "values must be rectangular across every level"),
    ],
)
def test_tensor_malformed_nesting(values, msg):
    with pytest.raises(ValueError, match=f"^{msg}$"):
        F.tensor(values)


def test_tensor_dtypes_and_value_errors():
    t = F.tensor([[1, 2]], dtype=sw.DType.Int32)
    assert t.dtype() == sw.DType.Int32 and F.to_list(t) == [1, 2]
    with pytest.raises(TypeError, match="^CPU value must be an integer$"):
        F.tensor([1.5], dtype=sw.DType.Int32)
    with pytest.raises(TypeError, match="^CPU value must be an integer$"):
        F.tensor([1.0, 2.5], layout=F.column_major(2), dtype=sw.DType.Int32)
    with pytest.raises(TypeError):
        F.tensor(["a"])
    # None is a value error, not a hole.
    with pytest.raises(TypeError, match="^CPU value must be a number$"):
        F.tensor([[1.0], [None]])
    with pytest.raises(TypeError, match="^CPU value must be a number$"):
        F.tensor([1.0, None], layout=F.column_major(2))
    with pytest.raises(TypeError, match="^CPU value must be an integer$"):
        F.tensor([None], dtype=sw.DType.Int32)
    with pytest.raises(TypeError, match="^CPU value must be a number$"):
        F.full(2, value=None)
    for bad in (sw.DType.Any, sw.DType.Floating, "float32"):
        with pytest.raises(ValueError, match=DTYPE_MSG):
            F.tensor([1], dtype=bad)
        with pytest.raises(ValueError, match=DTYPE_MSG):
            F.zeros(2, dtype=bad)
        with pytest.raises(ValueError, match=DTYPE_MSG):
            F.full(2, value=1, dtype=bad)


def test_full_zeros_ones():
    t = F.full(2, 3, value=2.5)
    assert t.layout == F.column_major(2, 3) and F.to_list(t) == [2.5] * 6
    with pytest.raises(TypeError):
        F.full(2, 3)  # value is a required keyword
    z = F.zeros(3, 2)
    assert z.layout == F.column_major(3, 2) and F.to_list(z) == [0.0] * 6
    o = F.ones(2)
    assert F.to_list(o) == [1.0, 1.0] and isinstance(F.to_list(o)[0], float)
    oi = F.ones(2, 2, dtype=sw.DType.Int32)
    assert F.to_list(oi) == [1] * 4 and isinstance(F.to_list(oi)[0], int)
    zi = F.zeros(2, dtype=sw.DType.Int32)
    assert F.to_list(zi) == [0, 0]
    with pytest.raises(ValueError, match="^extents must be positive integers$"):
        F.zeros(0)
    with pytest.raises(ValueError, match="^at least one extent is required$"):
        F.ones()
    with pytest.raises(TypeError, match="^CPU value must be an integer$"):
        F.full(2, value=0.5, dtype=sw.DType.Int32)


def test_factories_are_fresh_independent_tensors():
    a, b = F.zeros(2), F.zeros(2)
    assert a.carrier is not b.carrier
    a[0] = 1.0
    assert b[0] == 0.0


def test_arange():
    t = F.arange(4)
    assert t.layout == F.column_major(4)
    assert F.to_list(t) == [0.0, 1.0, 2.0, 3.0]
    ti = F.arange(3, dtype=sw.DType.Int32)
    assert F.to_list(ti) == [0, 1, 2] and ti.dtype() == sw.DType.Int32
    for bad in (0, -2, 2.0):
        with pytest.raises(ValueError, match="^extents must be positive integers$"):
            F.arange(bad)


def test_rand_and_randn_follow_the_rng_in_logical_order():
    t = F.rand(2, 3, rng=random.Random(5))
    rng = random.Random(5)
    expected = [rng.random() for _ in range(6)]
    assert F.to_list(t) == pytest.approx(expected, rel=1e-6)
    assert all(0.0 <= v < 1.0 for v in F.to_list(t))
    n = F.randn(3, 2, rng=random.Random(5))
    rng = random.Random(5)
    expected = [rng.gauss(0.0, 1.0) for _ in range(6)]
    assert F.to_list(n) == pytest.approx(expected, rel=1e-6)
    assert n.layout == F.column_major(3, 2) and n.dtype() == sw.DType.Float32
    assert F.rand(4).layout == F.column_major(4)
    with pytest.raises(ValueError, match="^extents must be positive integers$"):
        F.randn(0)


# ------------------------------------------------------------- reductions


def test_sum_is_an_exact_scalar_with_implicit_backward():
    t = F.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    s = F.sum(t)
    assert s.layout == sw.Layout(sw.Shape(1), sw.Stride(1))
    assert F.item(s) == 21.0
    s.backward()
    assert F.to_list(t.grad) == [1.0] * 6
    assert t.grad.layout == t.layout


def test_sum_on_generic_and_more_modes():
    g = sw.Tensor(sw.Generic([1.0, 2.0, 3.0, 4.0]), 0, F.column_major(2, 2))
    s = F.sum(g)
    assert isinstance(s.carrier, sw.Generic) and F.item(s) == 10.0
    t = F.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])
    assert F.item(F.sum(t)) == 36.0
    one = F.tensor([7.0])
    assert F.item(F.sum(one)) == 7.0
    strided = sw.Tensor(F.arange(8).carrier, 1, L([2, 2], [1, 4]))
    assert F.item(F.sum(strided)) == 1.0 + 2.0 + 5.0 + 6.0


def test_sum_validation():
    msg = "^tensor must be a flat tensor with integer modes$"
    nested = sw.Tensor(sw.CPU(4), 0, L([[2, 2]], [[1, 2]]))
    with pytest.raises(ValueError, match=msg):
        F.sum(nested)
    empty = sw.Tensor(sw.CPU(1), 0, sw.Layout.empty())
    with pytest.raises(ValueError, match=msg):
        F.sum(empty)
    wide = sw.Tensor(sw.CPU(1), 0, L([1] * 27, [1] * 27))
    with pytest.raises(ValueError, match="^tensor has too many modes to reduce$"):
        F.sum(wide)
    ok = sw.Tensor(sw.CPU(1), 0, L([1] * 26, [1] * 26))
    assert F.item(F.sum(ok)) == 0.0
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        F.sum([1.0])


def test_mean():
    t = F.tensor([[1.0, 2.0], [3.0, 6.0]])
    m = F.mean(t)
    assert m.layout == sw.Layout(sw.Shape(1), sw.Stride(1))
    assert F.item(m) == 3.0
    m.backward()
    assert F.to_list(t.grad) == [0.25] * 4
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        F.mean(3.0)


def test_item_and_to_list():
    assert F.item(F.full(1, 1, value=4.5)) == 4.5
    view = sw.Tensor(F.arange(5).carrier, 3, L([1], [1]))
    assert F.item(view) == 3.0
    with pytest.raises(ValueError, match="^item requires a tensor with exactly one element$"):
        F.item(F.zeros(2))
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        F.item(1.0)
    g = sw.Tensor(sw.Generic(["a", "b", "c"], dtype=sw.DType.Any), 0, L([3], [1]))
    assert F.to_list(g) == ["a", "b", "c"]
    strided = sw.Tensor(F.arange(6).carrier, 1, L([2, 2], [2, 1]))
    assert F.to_list(strided) == [1.0, 3.0, 2.0, 4.0]
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        F.to_list([1])


def test_values_are_float32():
    t = F.tensor([0.1])
    assert F.item(t) == 0.10000000149011612
    assert not math.isclose(F.item(t), 0.1, rel_tol=0, abs_tol=0)


# ---------------------------------------------------------- properties


@st.composite
def nested_values(draw):
    extents = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    total = 1
    for extent in extents:
        total *= extent
    flat = draw(st.lists(st.integers(-1000, 1000), min_size=total, max_size=total))

    def build(level, base, stride):
        if level == len(extents):
            return flat[base]
        inner = stride // extents[level]
        return [build(level + 1, base + j * inner, inner) for j in range(extents[level])]

    return extents, build(0, 0, total)


def lookup(values, coords):
    for c in coords:
        values = values[c]
    return values


@given(nested_values())
@settings(max_examples=min(100, settings().max_examples))
def test_nested_lists_round_trip(case):
    extents, values = case
    t = F.tensor(values)
    assert t.layout == F.column_major(*extents)
    flat = F.to_list(t)
    # Logical order is first index fastest.
    for i, value in enumerate(flat):
        coords, rest = [], i
        for extent in extents:
            coords.append(rest % extent)
            rest //= extent
        assert value == lookup(values, coords)
        assert t[tuple(coords)] == value
    again = F.tensor(flat, layout=F.row_major(*extents))
    assert F.to_list(again) == flat
    assert F.item(F.sum(t)) == sum(flat)
