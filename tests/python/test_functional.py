"""Functional operations (reference §12, §3.3-§3.4, §11.4-§11.5): every
operation on Generic and CPU, on compact, strided, hierarchical, offset and
broadcast layouts, checked against NumPy; result layouts, storage and dtypes;
operators; every documented error."""

import math

import numpy as np
import pytest
import strideweave as sw
from helpers_ops import (
    BINARY,
    CARRIERS,
    LAYOUTS,
    TOL,
    UNARY,
    L,
    array,
    build,
    holes,
    logical,
    random_tensor,
)
from strideweave import (
    CPU,
    DType,
    FileBacked,
    Generic,
    Node,
    Tensor,
    Tree,
)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def check_elementwise_result(y, x, kind):
    """§12.2: the input's layout, offset 0, fresh storage of cosize slots."""
    assert y.layout == x.layout
    assert y.offset == 0
    assert y.carrier is not x.carrier
    assert y.carrier.size() == x.layout.cosize
    assert type(y.carrier) is (CPU if kind == "CPU" else Generic)
    assert y.is_mutable()
    hole = None if kind == "Generic" else 0.0
    assert all(v == hole for v in holes(y))


# --------------------------------------------------------------- arithmetic


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("layout_name", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_elementwise(kind, layout_name, name, rng):
    layout, offset = LAYOUTS[layout_name]
    a = random_tensor(kind, layout, offset, rng, 0.5, 2.0)
    b = random_tensor(kind, layout, offset, rng, 0.5, 2.0)
    y = getattr(sw, name)(a, b)
    check_elementwise_result(y, a, kind)
    np.testing.assert_allclose(array(y), BINARY[name](array(a), array(b)), **TOL[kind])
    assert y.autograd_ctx._operation_name == name


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("layout_name", sorted(LAYOUTS))
@pytest.mark.parametrize("scalar", [3, -0.5, True])
def test_scalar_mul(kind, layout_name, scalar, rng):
    layout, offset = LAYOUTS[layout_name]
    x = random_tensor(kind, layout, offset, rng)
    y = sw.mul(x, scalar)
    check_elementwise_result(y, x, kind)
    np.testing.assert_allclose(array(y), array(x) * float(scalar), **TOL[kind])
    ctx = y.autograd_ctx.ctx
    if kind == "Generic":
        assert ctx["scalar"] is scalar
    else:
        assert ctx["scalar"] == float(np.float32(scalar)) and type(ctx["scalar"]) is float


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("layout_name", sorted(LAYOUTS))
def test_neg_is_mul_by_minus_one(kind, layout_name, rng):
    layout, offset = LAYOUTS[layout_name]
    x = random_tensor(kind, layout, offset, rng)
    y = sw.neg(x)
    check_elementwise_result(y, x, kind)
    np.testing.assert_allclose(array(y), -array(x), **TOL[kind])
    op = y.autograd_ctx
    assert op._operation_name == "mul" and op.ctx["scalar"] == -1
    assert array(-x).tolist() == array(y).tolist()


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("layout_name", sorted(LAYOUTS))
@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1.5, 0])
def test_pow(kind, layout_name, exponent, rng):
    layout, offset = LAYOUTS[layout_name]
    x = random_tensor(kind, layout, offset, rng, 0.25, 2.0)
    y = sw.pow(x, exponent)
    check_elementwise_result(y, x, kind)
    np.testing.assert_allclose(array(y), array(x) ** exponent, **TOL[kind])
    assert y.autograd_ctx.ctx["exponent"] == exponent


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("layout_name", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(kind, layout_name, name, rng):
    layout, offset = LAYOUTS[layout_name]
    x = random_tensor(kind, layout, offset, rng, -3.0, 3.0)
    y = getattr(sw, name)(x)
    check_elementwise_result(y, x, kind)
    np.testing.assert_allclose(array(y), UNARY[name][0](array(x)), **TOL[kind])
    assert y.autograd_ctx._operation_name == name


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values(kind, name):
    values = [0.0, -0.0, 1e-8, -1e-8, 30.0, -30.0, 80.0, -80.0]
    x = build(kind, L([len(values)], [1]), 0, lambda p: values[p])
    y = getattr(sw, name)(x)
    expected = UNARY[name][0](np.array(values))
    np.testing.assert_allclose(array(y), expected, rtol=1e-5, atol=1e-6)


def test_generic_python_semantics():
    ints = Tensor(Generic([1, 2, 3, 4], dtype=DType.Any), 0, L([4], [1]))
    assert logical(sw.pow(ints, 3)) == [1, 8, 27, 64]
    assert all(type(v) is int for v in logical(sw.pow(ints, 3)))
    assert logical(sw.add(ints, ints)) == [2, 4, 6, 8]
    assert all(type(v) is int for v in logical(sw.mul(ints, 2)))
    assert all(type(v) is float for v in logical(sw.div(ints, ints)))
    x = Tensor(Generic([-1.5, 2, 0.0]), 0, L([3], [1]))
    r = logical(sw.relu(x))
    assert r == [0, 2, 0] and type(r[0]) is int and type(r[1]) is int
    assert [type(v) for v in logical(sw.elu(x))] == [float, float, float]
    assert [type(v) for v in logical(sw.leaky_relu(x))] == [float, float, float]
    assert logical(sw.sigmoid(Tensor(Generic([0.0]), 0, L([1], [1])))) == [0.5]
    with pytest.raises(OverflowError, match="math range error"):
        sw.exp(Tensor(Generic([1000.0]), 0, L([1], [1])))
    with pytest.raises(ZeroDivisionError):
        sw.div(ints, Tensor(Generic([0, 1, 1, 1], dtype=DType.Any), 0, L([4], [1])))
    # Python objects of any kind take part in Python arithmetic.
    s = Tensor(Generic(["a", "b"], dtype=DType.Any), 0, L([2], [1]))
    assert logical(sw.add(s, s)) == ["aa", "bb"]
    assert logical(sw.mul(s, 3)) == ["aaa", "bbb"]


def test_cpu_float32_arithmetic():
    x = build("CPU", L([1], [1]), 0, lambda p: 0.1)
    assert sw.add(x, x)[0] == float(np.float32(0.1) + np.float32(0.1))
    assert sw.div(x, x)[0] == 1.0
    inf = sw.div(x, build("CPU", L([1], [1]), 0, lambda p: 0.0))
    assert inf[0] == math.inf


# ------------------------------------------------------------- contractions


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("layout_name", sorted(LAYOUTS))
def test_reduce(kind, layout_name, rng):
    layout, offset = LAYOUTS[layout_name]
    x = random_tensor(kind, layout, offset, rng)
    y = sw.reduce(x)
    m = layout[0].size
    values = array(x).reshape(-1, m)  # logical index i + m*j
    np.testing.assert_allclose(array(y), values.sum(axis=0), **TOL[kind])
    assert y.offset == 0 and y.dtype() == x.dtype()
    assert y.autograd_ctx.ctx["output_layout"] is y.layout


def test_reduce_output_layouts():
    x = build("Generic", L([[2, 2], 3], [[1, 2], 4]), 0, float)
    assert sw.reduce(x).layout == L([2, 2], [1, 2])
    x = build("Generic", L([5, 3], [3, 1]), 0, float)
    assert sw.reduce(x).layout == L([5], [1])
    x = build("Generic", L([1, 4], [1, 1]), 0, float)
    assert sw.reduce(x).layout == L([1], [1])


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize(
    "lhs_layout,rhs_layout",
    [
        (L([2, 3], [1, 2]), L([4, 3], [1, 4])),
        (L([2, 3], [3, 1]), L([4, 3], [3, 1])),
        (L([[2, 2], 3], [[1, 2], 4]), L([[2, 1], 3], [[1, 2], 2])),
        (L([3, [2, 2]], [1, [3, 6]]), L([2, [2, 2]], [0, [1, 2]])),
        (L([5, 7], [1, 5]), L([6, 7], [7, 1])),
    ],
)
def test_matmul(kind, lhs_layout, rhs_layout, rng):
    a = random_tensor(kind, lhs_layout, 0, rng)
    b = random_tensor(kind, rhs_layout, 1, rng)
    y = sw.matmul(a, b)
    m, k, n = lhs_layout[0].size, lhs_layout[1].size, rhs_layout[0].size
    am = array(a).reshape(k, m).T
    bm = array(b).reshape(k, n).T
    expected = am @ bm.T
    np.testing.assert_allclose(array(y).reshape(n, m).T, expected, **TOL[kind])
    assert y.autograd_ctx.ctx["output_layout"] is y.layout
    assert (a @ b).layout == y.layout


def test_matmul_output_layouts():
    a = build("Generic", L([2, 3], [1, 2]), 0, float)
    b = build("Generic", L([4, 3], [1, 4]), 0, float)
    assert sw.matmul(a, b).layout == L([2, 4], [1, 2])
    a = build("Generic", L([[2, 2], 3], [[1, 2], 4]), 0, float)
    b = build("Generic", L([[2, 1], 3], [[1, 2], 2]), 0, float)
    assert sw.matmul(a, b).layout == L([[2, 2], [2, 1]], [[1, 2], [4, 8]])


# ------------------------------------------------------------- dtype rules


def generic(values, dtype):
    return Tensor(Generic(values, dtype=dtype), 0, L([len(values)], [1]))


def cpu(values, dtype):
    return Tensor(CPU(0, dtype=dtype).new_like(values), 0, L([len(values)], [1]))


F, A = DType.Floating, DType.Any


@pytest.mark.parametrize(
    "name,lhs,rhs,result",
    [
        (name, lhs, rhs, F if F in (lhs, rhs) else A)
        for name in ("add", "sub", "elementwise_mul")
        for lhs in (F, A)
        for rhs in (F, A)
    ]
    + [("div", lhs, rhs, F) for lhs in (F, A) for rhs in (F, A)],
)
def test_generic_binary_dtypes(name, lhs, rhs, result):
    assert getattr(sw, name)(generic([1, 2], lhs), generic([3, 4], rhs)).dtype() is result


def test_generic_matmul_dtype():
    for lhs in (F, A):
        for rhs in (F, A):
            a = Tensor(Generic([1, 2], dtype=lhs), 0, L([1, 2], [1, 1]))
            b = Tensor(Generic([1, 2], dtype=rhs), 0, L([1, 2], [1, 1]))
            assert sw.matmul(a, b).dtype() is (F if F in (lhs, rhs) else A)


@pytest.mark.parametrize(
    "dtype,scalar,mul_result,pow_result",
    [
        (F, 2, F, F),
        (F, 2.0, F, F),
        (A, 2, A, A),
        (A, 0, A, A),
        (A, -1, A, F),
        (A, 2.0, F, F),
        (A, True, F, F),
        (A, 1.5, F, F),
    ],
)
def test_generic_scalar_dtypes(dtype, scalar, mul_result, pow_result):
    t = generic([1, 2], dtype)
    assert sw.mul(t, scalar).dtype() is mul_result
    assert sw.pow(t, scalar).dtype() is pow_result


@pytest.mark.parametrize("dtype", [F, A])
def test_generic_unary_dtypes(dtype):
    t = generic([1.0, -2.0], dtype)
    for name in UNARY:
        expected = dtype if name == "relu" else F
        assert getattr(sw, name)(t).dtype() is expected
    m = Tensor(Generic([1, 2], dtype=dtype), 0, L([1, 2], [1, 1]))
    assert sw.reduce(m).dtype() is dtype


I32, F32 = DType.Int32, DType.Float32


def test_cpu_dtypes():
    i = cpu([1, 2], I32)
    f = cpu([1, 2], F32)
    for name in ("add", "sub", "elementwise_mul"):
        assert getattr(sw, name)(i, i).dtype() is I32
        assert getattr(sw, name)(i, f).dtype() is F32
        assert getattr(sw, name)(f, i).dtype() is F32
    assert sw.div(i, i).dtype() is F32
    assert sw.mul(i, 2).dtype() is I32
    assert sw.mul(i, True).dtype() is F32 and sw.mul(cpu([3], I32), True)[0] == 3.0
    assert sw.mul(i, 2.0).dtype() is F32
    assert sw.mul(f, 2).dtype() is F32
    assert sw.pow(i, 2).dtype() is I32 and sw.pow(i, 2.0).dtype() is I32
    assert sw.pow(i, -1).dtype() is F32 and sw.pow(i, 0.5).dtype() is F32
    for name in UNARY:
        assert getattr(sw, name)(i).dtype() is (I32 if name == "relu" else F32)
        assert getattr(sw, name)(f).dtype() is F32
    m = Tensor(CPU(0, dtype=I32).new_like([1, 2]), 0, L([1, 2], [1, 1]))
    assert sw.reduce(m).dtype() is I32
    assert sw.matmul(m, m).dtype() is I32


def test_cpu_int32_exact_and_checked():
    big = cpu([2**31 - 1, -(2**31) + 1], I32)
    assert logical(sw.relu(big)) == [2**31 - 1, 0]
    assert logical(sw.pow(cpu([2], I32), 30)) == [2**30]
    assert logical(sw.pow(cpu([3], I32), 2**24 - 1 - (2**24 - 1) + 19)) == [3**19]
    with pytest.raises(OverflowError, match="^CPU Int32 operation result is out of int32 range$"):
        sw.pow(cpu([3], I32), 40)
    with pytest.raises(OverflowError, match="^CPU Int32 operation result is out of int32 range$"):
        sw.add(big, big)
    m = Tensor(CPU(0, dtype=I32).new_like([2**30, 2**30]), 0, L([1, 2], [1, 1]))
    with pytest.raises(OverflowError, match="^CPU integer accumulation overflowed$"):
        sw.reduce(m)
    with pytest.raises(OverflowError, match="^CPU integer accumulation overflowed$"):
        sw.matmul(m, m)


@pytest.mark.parametrize("carrier", [lambda: CPU(1), lambda: Generic([0.0])])
def test_result_size_overflow_is_named(carrier):
    # Two broadcast (2**32, 1) operands over one element: the 2**32 x 2**32
    # product has 2**64 elements, which no layout holds.
    t = Tensor(carrier(), 0, L([2**32, 1], [0, 0]))
    msg = (
        r"^matmul result size overflows 64-bit integers \(the extents are 4294967296,4294967296\)$"
    )
    with pytest.raises(ValueError, match=msg):
        sw.matmul(t, t)
    with pytest.raises(ValueError, match=msg):
        sw.einsum(t, t, "i k, j k -> i j")
    b = Tensor(carrier(), 0, L([2**32, 1, 1], [0, 0, 0]))
    with pytest.raises(
        ValueError,
        match=r"^batched matmul result size overflows 64-bit integers "
        r"\(the extents are 4294967296,4294967296,1\)$",
    ):
        sw.einsum(b, b, "i k b, j k b -> i j b")


def test_int_results_never_get_a_context():
    assert sw.add(cpu([1], I32), cpu([1], I32)).autograd_ctx is None
    assert sw.add(generic([1], A), generic([1], A)).autograd_ctx is None
    assert sw.add(generic([1], F), generic([1], A)).autograd_ctx is not None


# ------------------------------------------------------------- layout ops


@pytest.mark.parametrize("kind", CARRIERS)
def test_view_examples(kind):
    x = build(kind, L([5, 10], [1, 5]), 0, float)
    v = sw.view(x, (2, slice(2, 5)))
    assert v.layout == L([3], [5]) and v.offset == x.layout.index([2, 2])
    assert v.carrier is x.carrier
    assert logical(v) == [12.0, 17.0, 22.0]
    ctx = v.autograd_ctx.ctx
    assert ctx["mapping_layout"] == v.layout and ctx["output_layout"] == v.layout
    assert ctx["mapping_offset"] == 12
    y = build(kind, L([10, [2, 3]], [1, [10, 20]]), 0, float)
    v = sw.view(y, (0, slice(None)))
    assert v.layout == L([[2, 3]], [[10, 20]]) and v.offset == 0
    assert x[2, 2:5].layout == L([3], [5])
    assert x[:, 0].layout == L([5], [1])
    assert x[-3:, 1].layout == L([3], [1]) and x[-3:, 1].offset == 7
    assert x[1, 3].__class__ is float  # no slice: element access


@pytest.mark.parametrize("kind", CARRIERS)
def test_view_removes_every_mode_and_nested_int_keys(kind):
    x = build(kind, L([[2, 3], 4], [[1, 2], 6]), 0, float)
    v = sw.view(x, (4, 1))
    assert v.layout == sw.Layout.empty() and v.size() == 1
    assert v.offset == x.layout.index([[0, 2], 1]) and v[0] == float(v.offset)
    single = build(kind, L([[5], 2], [[1], 5]), 0, float)
    assert sw.view(single, (slice(1, 3), 0)).layout == L([2], [1])
    assert sw.view(x, slice(None, None, 1)).layout == x.layout if len(x.layout) == 1 else True


@pytest.mark.parametrize(
    "key,message",
    [
        ((0,), "View keys must include exactly one key per top-level mode"),
        ((0, 1, 2), "View keys must include exactly one key per top-level mode"),
        ((slice(0, 4, 2), 0), "View slices do not support steps"),
        ((slice(3, 3), 0), "View slices must be non-empty"),
        ((slice(4, 1), 0), "View slices must be non-empty"),
        ((5, 0), "View integer key is out of domain"),
        ((-1, 0), "View integer key is out of domain"),
        ((0, slice(0, 1)), "Only whole slices are supported for non-leaf modes"),
    ],
)
def test_view_errors(key, message):
    x = build("Generic", L([5, [2, 3]], [1, [5, 10]]), 0, float)
    with pytest.raises(ValueError, match=f"^{message}$"):
        sw.view(x, key)


def test_view_type_errors():
    x = build("Generic", L([5, 2], [1, 5]), 0, float)
    with pytest.raises(TypeError, match="^View key must be an integer or slice$"):
        sw.view(x, (1.5, 0))
    with pytest.raises(TypeError, match="^View key must be an integer or slice$"):
        sw.view(x, ([1], 0))
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        sw.view(None, 0)
    assert sw.view(x, (True, 0)).offset == 1
    # A list key is one key (the reference wraps it as a 1-tuple).
    with pytest.raises(ValueError, match="exactly one key"):
        sw.view(x, [0, 0])


@pytest.mark.parametrize("kind", CARRIERS)
def test_permute(kind):
    x = build(kind, L([2, 3, 4], [1, 2, 6]), 0, float)
    for order in ((2, 0, 1), [2, 0, 1]):
        p = sw.permute(x, order) if isinstance(order, list) else sw.permute(x, *order)
        assert p.layout == L([4, 2, 3], [6, 1, 2]) and p.carrier is x.carrier
        assert p[3, 1, 2] == x[1, 2, 3]
        assert p.autograd_ctx.ctx["order"] == (2, 0, 1)
        assert p.autograd_ctx.ctx["output_layout"] == p.layout
    with pytest.raises(TypeError, match="^Permutation dimensions must be integers$"):
        sw.permute(x, 0, 1, True)
    with pytest.raises(TypeError, match="^Permutation dimensions must be integers$"):
        sw.permute(x, [0, 1, 2.0])
    with pytest.raises(ValueError, match="^Permutation dimensions must reorder every layout mode$"):
        sw.permute(x, 0, 1)
    with pytest.raises(ValueError, match="^Permutation dimensions must reorder every layout mode$"):
        sw.permute(x, 0, 0, 1)
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        sw.permute(5, 0)


@pytest.mark.parametrize("kind", CARRIERS)
def test_rearrange(kind):
    x = build(kind, L([2, 3, 4], [1, 2, 6]), 2, float)
    r = sw.rearrange(x, Tree(Node.id(2), Node.id(0), Node.id(1)))
    assert r.layout == L([4, 2, 3], [6, 1, 2]) and r.offset == 2 and r.carrier is x.carrier
    ctx = r.autograd_ctx.ctx
    assert ctx["output"] == Tree(Node.id(2), Node.id(0), Node.id(1))
    assert ctx["selection"] == Tree(Node.Leaf, Node.Leaf, Node.Leaf)
    assert ctx["output_layout"] == r.layout
    y = build(kind, L([1, [2, 3]], [5, [7, 14]]), 0, float)
    r = sw.rearrange(y, Tree(Node.id(1), Node.id(0)), Tree(1, 1))
    assert r.layout == L([[2, 3], 1], [[7, 14], 5])
    assert r.autograd_ctx.ctx["selection"] == Tree(1, 1)
    z = build(kind, L([2, 3], [1, 2]), 0, float)
    assert sw.rearrange(z, Tree(Node.id(1), Node.Leaf, Node.id(0))).layout == L(
        [3, 1, 2], [2, 0, 1]
    )
    nested = build(kind, L([[2, 2], 3], [[1, 2], 4]), 0, float)
    r = sw.rearrange(nested, Tree(Node.id(2), Tree(Node.id(0), Node.id(1))))
    assert r.autograd_ctx.ctx["selection"] == Tree(Tree(Node.Leaf, Node.Leaf), Node.Leaf)


def test_rearrange_errors():
    x = build("Generic", L([2, 3], [1, 2]), 0, float)
    with pytest.raises(TypeError, match="^output must be a Tree$"):
        sw.rearrange(x, (Node.id(0), Node.id(1)))
    with pytest.raises(TypeError, match="^selection must be a Tree or None$"):
        sw.rearrange(x, Tree(Node.id(0), Node.id(1)), (1, 1))
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        sw.rearrange(1, Tree(Node.id(0)))
    with pytest.raises(ValueError, match="must not be duplicated"):
        sw.rearrange(x, Tree(Node.id(0), Node.id(0)))
    with pytest.raises(ValueError, match="must include every extracted layout"):
        sw.rearrange(x, Tree(Node.id(0)))
    with pytest.raises(ValueError, match="out of range"):
        sw.rearrange(x, Tree(Node.id(0), Node.id(1), Node.id(5)))
    with pytest.raises(
        TypeError, match="^String rearrange descriptions do not accept an explicit selection$"
    ):
        sw.rearrange(x, "a b -> b a", Tree(1, 1))
    # A str output is a layout command (strideweave.einops).
    assert sw.rearrange(x, "a b -> b a").layout == L([3, 2], [2, 1])


def test_views_share_the_version():
    x = build("CPU", L([2, 3], [1, 2]), 0, float)
    v = x[1, :]
    x[1, 1] = 9.0
    assert v[1] == 9.0 and v.version == x.version == x.carrier.version


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("name", ["add", "sub", "elementwise_mul", "div", "matmul"])
def test_binary_dispatch_errors(name):
    fn = getattr(sw, name)
    x = build("Generic", L([1, 2], [1, 1]), 0, float)
    c = build("CPU", L([1, 2], [1, 1]), 0, float)
    with pytest.raises(TypeError, match="^lhs must be a Tensor$"):
        fn(1, x)
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        fn(x, 1)
    with pytest.raises(TypeError, match="^lhs must be a Tensor$"):
        fn(None, None)
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        fn(x, c)

    class Sub(Generic):
        pass

    s = Tensor(Sub([1.0, 2.0]), 0, x.layout)
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        fn(x, s)


@pytest.mark.parametrize("kind", CARRIERS)
@pytest.mark.parametrize("name", ["add", "sub", "elementwise_mul", "div"])
def test_layouts_must_match(kind, name):
    # Layouts of one shape combine (test_usability); other shapes do not.
    a = build(kind, L([2, 3], [1, 2]), 0, float)
    b = build(kind, L([3, 2], [1, 3]), 0, float)
    with pytest.raises(ValueError, match="^Tensor layouts must match$"):
        getattr(sw, name)(a, b)


@pytest.mark.parametrize("kind", CARRIERS)
def test_two_mode_errors(kind):
    three = build(kind, L([2, 3, 1], [1, 2, 6]), 0, float)
    two = build(kind, L([2, 3], [1, 2]), 0, float)
    with pytest.raises(ValueError, match="^tensor must have a two-mode layout$"):
        sw.reduce(three)
    with pytest.raises(ValueError, match="^lhs must have a two-mode layout$"):
        sw.matmul(three, three)
    with pytest.raises(ValueError, match="^rhs must have a two-mode layout$"):
        sw.matmul(two, three)
    other = build(kind, L([2, 4], [1, 2]), 0, float)
    with pytest.raises(ValueError, match="^Matmul inner dimensions must match$"):
        sw.matmul(two, other)


@pytest.mark.parametrize(
    "name",
    [
        "exp",
        "relu",
        "sigmoid",
        "tanh",
        "gelu",
        "silu",
        "softplus",
        "elu",
        "leaky_relu",
        "neg",
        "reduce",
    ],
)
def test_unary_dispatch_errors(name):
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        getattr(sw, name)([1.0])


@pytest.mark.parametrize("kind", CARRIERS)
def test_scalar_errors(kind):
    x = build(kind, L([2], [1]), 0, float)
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        sw.mul(2, x)
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        sw.pow(2, 2)
    for bad in ("2", None, [1], object()):
        with pytest.raises(TypeError, match="^scalar must be a numerical scalar$"):
            sw.mul(x, bad)
        with pytest.raises(TypeError, match="^exponent must be a numerical scalar$"):
            sw.pow(x, bad)
    with pytest.raises(TypeError, match="^exponent must be a numerical scalar$"):
        sw.pow(x, x)
    # mul with a Tensor scalar is elementwise_mul.
    assert sw.mul(x, x).autograd_ctx._operation_name == "elementwise_mul"


def test_reduce_and_einsum_descriptions():
    x = build("Generic", L([2, 3], [1, 2]), 0, float)
    for bad in (None, 1, Tree(1)):
        with pytest.raises(TypeError, match="^description must be a str$"):
            sw.reduce(x, bad)
        with pytest.raises(TypeError, match="^description must be a str$"):
            sw.einsum(x, x, bad)
    # Strings are layout commands (strideweave.einops).
    assert sw.reduce(x, "a b -> a").layout == L([2], [1])
    assert sw.einsum(x, x, "a b, c b -> a c").layout == L([2, 2], [1, 2])


@pytest.mark.parametrize("name", ["relu", "add", "view"])
def test_released_carriers(name):
    x = build("CPU", L([2], [1]), 0, float)
    g = build("Generic", L([2], [1]), 0, float)
    x.carrier.release()
    g.carrier.release()
    if name == "relu":
        with pytest.raises(RuntimeError, match="^tensor carrier is released$"):
            sw.relu(x)
        with pytest.raises(RuntimeError, match="^tensor carrier is released$"):
            sw.relu(g)
    elif name == "add":
        with pytest.raises(RuntimeError, match="^lhs carrier is released$"):
            sw.add(x, x)
        with pytest.raises(RuntimeError, match="^lhs carrier is released$"):
            sw.add(g, g)
    else:
        # view has no released-carrier check of its own (reference §12.6):
        # making the view tensor meets the released carrier's size.
        for t in (x, g):
            with pytest.raises(ValueError, match="^Tensor storage exceeds carrier size$"):
                sw.view(t, slice(0, 1))


def test_file_backed_tensors_fail_at_dispatch():
    f = FileBacked()
    f._allocate(2)
    t = Tensor(f, 0, L([2], [1]))
    with pytest.raises(
        NotImplementedError, match="^Carrier class does not support operation 'relu'$"
    ):
        sw.relu(t)
    f.release()


def test_keyword_arguments_and_arity():
    x = build("Generic", L([2], [1]), 0, float)
    assert sw.add(lhs=x, rhs=x)[0] == 0.0
    assert sw.mul(x, scalar=2)[1] == 2.0
    assert sw.relu(tensor=x)[1] == 1.0
    assert sw.rearrange(x, output=Tree(Node.id(0)), selection=None).layout == x.layout
    with pytest.raises(TypeError):
        sw.add(x)
    with pytest.raises(TypeError):
        sw.add(x, x, x)
    with pytest.raises(TypeError):
        sw.add(x, y=x)
    with pytest.raises(TypeError):
        sw.add(x, lhs=x)


# --------------------------------------------------------------- operators


@pytest.mark.parametrize("kind", CARRIERS)
def test_operators(kind, rng):
    layout, offset = LAYOUTS["hierarchical"]
    a = random_tensor(kind, layout, offset, rng, 0.5, 2.0)
    b = random_tensor(kind, layout, offset, rng, 0.5, 2.0)
    tol = TOL[kind]
    np.testing.assert_allclose(array(a + b), array(a) + array(b), **tol)
    np.testing.assert_allclose(array(a - b), array(a) - array(b), **tol)
    np.testing.assert_allclose(array(a * b), array(a) * array(b), **tol)
    np.testing.assert_allclose(array(a * 3), array(a) * 3, **tol)
    np.testing.assert_allclose(array(3 * a), array(a) * 3, **tol)
    np.testing.assert_allclose(array(a / b), array(a) / array(b), **tol)
    np.testing.assert_allclose(array(a**2), array(a) ** 2, **tol)
    np.testing.assert_allclose(array(-a), -array(a), **tol)
    assert (a @ a).layout == sw.matmul(a, a).layout
    assert (3 * a).autograd_ctx._operation_name == "mul"


def test_operator_errors():
    # Numbers beside + - / are scalars now (test_usability); other operands
    # keep the reference's errors.
    x = build("Generic", L([2], [1]), 0, float)
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        x + "a"
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        x / None
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        x - [1]
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        x @ 1
    with pytest.raises(TypeError, match="unsupported operand"):
        None + x
    with pytest.raises(TypeError, match="unsupported operand"):
        None - x
    with pytest.raises(TypeError, match="unsupported operand"):
        1 @ x
    with pytest.raises(TypeError, match="unsupported operand"):
        2**x
    with pytest.raises(TypeError):
        pow(x, 2, 3)
    with pytest.raises(TypeError, match="^scalar must be a numerical scalar$"):
        x * "a"
    with pytest.raises(TypeError, match="^exponent must be a numerical scalar$"):
        x**x
    for name in ("__rpow__", "__rmatmul__"):
        assert not hasattr(Tensor, name)
    assert hasattr(Tensor, "__rmul__")


# ---------------------------------------------------------- module surface


def test_functional_module():
    import strideweave.functional as F
    import strideweave.operation as O

    assert F.__all__ == sorted(F.__all__)
    for name in F.__all__:
        assert getattr(F, name) is getattr(sw, name) is getattr(O, name)
        doc = getattr(F, name).__doc__
        assert "Returns:" in doc and "Examples:" in doc, name
        if name not in ("is_grad_enabled", "no_grad"):
            assert "Args:" in doc, name


def test_large_cpu_tensors_round_trip():
    n = 1 << 16
    c = CPU(n)
    x = Tensor(c, 0, L([n], [1]))
    for i in range(0, n, 4099):
        c[i] = float(i)
    y = sw.add(x, x)
    assert all(y[i] == 2.0 * i for i in range(0, n, 4099))
    z = sw.relu(sw.neg(y))
    assert z[4099] == 0.0
