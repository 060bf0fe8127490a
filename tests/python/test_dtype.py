"""DType: identity tags, their order, and which carriers take which."""

import pytest
from helpers_carriers import ListCarrier, flat
from strideweave import CPU, DType, FileBacked, Generic, Tensor, _native
from strideweave.carriers.dtype import DType as DTypeFromModule


def test_members_values_and_order():
    assert [(d.name, d.value) for d in DType] == [
        ("Any", "Any"),
        ("Floating", "Floating"),
        ("Float32", "Float32"),
        ("Int32", "Int32"),
        ("Bool", "Bool"),
    ]


def test_identity_and_hashing():
    assert DTypeFromModule is DType
    assert DType("Int32") is DType.Int32
    assert DType["Float32"] is DType.Float32
    assert len({DType.Any, DType.Any, DType.Bool}) == 2
    assert {DType.Floating: 1}[DType.Floating] == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda d: CPU(1, dtype=d),
        lambda d: Generic([0.0], dtype=d),
        lambda d: ListCarrier([0.0], dtype=d),
    ],
    ids=["CPU", "Generic", "Python"],
)
def test_carriers_return_the_members_themselves(make):
    for d in DType:
        try:
            carrier = make(d)
        except ValueError:
            continue
        assert carrier.dtype() is d
        assert Tensor(carrier, 0, flat(1)).dtype() is d


def test_only_floating_and_float32_are_differentiable():
    expected = {
        DType.Any: False,
        DType.Floating: True,
        DType.Float32: True,
        DType.Int32: False,
        DType.Bool: False,
    }
    for d, differentiable in expected.items():
        t = Tensor(ListCarrier([0], dtype=d), 0, flat(1))
        assert t.is_differentiable() is differentiable


def test_allowed_dtypes_per_carrier():
    for d in (DType.Float32, DType.Int32, DType.Bool):
        assert CPU(1, dtype=d).dtype() is d
    assert CPU(1).dtype() is DType.Float32
    assert CPU(1, dtype=None).dtype() is DType.Float32
    for d in (DType.Any, DType.Floating):
        with pytest.raises(
            ValueError, match=r"^CPU dtype must be DType.Float32, DType.Int32 or DType.Bool$"
        ):
            CPU(1, dtype=d)
    for d in (DType.Any, DType.Floating):
        assert Generic([], dtype=d).dtype() is d
    assert Generic([]).dtype() is DType.Floating
    for d in (DType.Float32, DType.Int32, DType.Bool):
        with pytest.raises(
            ValueError, match=r"^Generic dtype must be DType.Any or DType.Floating$"
        ):
            Generic([], dtype=d)
    for d in (DType.Floating, DType.Float32, DType.Int32):
        assert FileBacked(dtype=d).dtype() is d
    assert FileBacked().dtype() is DType.Floating
    for d in (DType.Any, DType.Bool):
        with pytest.raises(
            ValueError,
            match=r"^FileBacked dtype must be DType.Floating, DType.Float32, or DType.Int32$",
        ):
            FileBacked(dtype=d)


def test_bool_is_stored_by_cpu():
    c = CPU(3, dtype=DType.Bool)
    c[0] = True
    c[1] = 0
    c[2] = 2.5
    assert list(c) == [True, False, True]
    assert all(type(v) is bool for v in c)


def test_register_dtype_needs_a_class():
    with pytest.raises(TypeError):
        _native._register_dtype(42)
    with pytest.raises(AttributeError):
        _native._register_dtype(int)
    # A failed registration leaves the registered enum in place.
    assert CPU(1).dtype() is DType.Float32
