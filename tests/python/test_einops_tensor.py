"""Tensor-level rearrange, reduce and einsum by layout command (reference §13.7
and the string forms of §12.5-§12.6): values against NumPy on compact,
strided and hierarchical layouts, result layouts, views, recorded graphs,
errors, batched einsum, and gradients against finite differences.

The oracle: a layout's logical order is colexicographic over its leaves, so
the logical values of a tensor, reshaped (Fortran order) to the sizes of the
pieces a command binds, form an array with one axis per piece; every command
is then a numpy.einsum over piece letters, flattened in Fortran order.
"""

import math

import numpy as np
import pytest
import strideweave as sw
import strideweave.einops as E
from helpers_ops import L, array, build, logical, ones_like
from hypothesis import given, settings
from hypothesis import strategies as st

KINDS = ["Generic", "CPU"]
TOL = {"Generic": 1e-9, "CPU": 2e-4}
EXAMPLES = min(60, settings().max_examples)


def tensor(kind, layout, offset=0, seed=0):
    rng = np.random.default_rng(seed)
    table = {}

    def value(p):
        if p not in table:
            table[p] = float(np.float32(rng.uniform(-2.0, 2.0)))
        return table[p]

    return build(kind, layout, offset, value)


def pieces(t, letters, sizes):
    """t's logical values as an array with one axis per piece letter."""
    shape = [sizes[c] for c in letters]
    return array(t).reshape(shape, order="F") if shape else array(t).reshape(())


def expect(expr, operands, sizes):
    """numpy.einsum over piece letters, flattened in logical order."""
    ins, out = expr.split("->")
    arrays = [pieces(t, s, sizes) for t, s in zip(operands, ins.split(","), strict=True)]
    return np.einsum(expr, *arrays).flatten(order="F")


def close(kind, got, want):
    np.testing.assert_allclose(array(got), want, rtol=TOL[kind] * 10, atol=TOL[kind] * 10)


# ----------------------------------------------------------------- fixed cases

# (command, lhs layout, lhs offset, rhs layout or None, einsum over pieces,
#  piece sizes, expected result layout)
REARRANGE = [
    ("a b -> b a", L([2, 3], [1, 2]), 0, "ab->ba", "(3,2):(2,1)"),
    ("a b -> b a", L([2, 3], [3, 1]), 1, "ab->ba", "(3,2):(1,3)"),
    ("a b c -> c (b a)", L([2, 3, 2], [1, 4, 20]), 3, "abc->cba", "(2,(3,2)):(20,(4,1))"),
    ("a (b c) -> (c a) b", L([2, [3, 4]], [1, [2, 6]]), 0, "abc->cab", "((4,2),3):((6,1),2)"),
    ("x y -> y x", L([[2, 3], 4], [[1, 2], 6]), 2, "xy->yx", "(4,(2,3)):(6,(1,2))"),
    ("a (b c) -> a c", L([2, [1, 4]], [1, [2, 2]]), 0, "abc->ac", "(2,4):(1,2)"),
    ("1 a -> a 1", L([1, 5], [7, 2]), 0, "za->a", "(5,1):(2,0)"),
    ("a b -> (a b)", L([3, 2], [2, 1]), 0, "ab->ab", "((3,2)):((2,1))"),
]
REARRANGE_SIZES = [
    {"a": 2, "b": 3},
    {"a": 2, "b": 3},
    {"a": 2, "b": 3, "c": 2},
    {"a": 2, "b": 3, "c": 4},
    {"x": 6, "y": 4},
    {"a": 2, "b": 1, "c": 4},
    {"z": 1, "a": 5},
    {"a": 3, "b": 2},
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", range(len(REARRANGE)))
def test_rearrange_cases(kind, case):
    command, layout, offset, expr, want_layout = REARRANGE[case]
    x = tensor(kind, layout, offset, case)
    y = E.rearrange(x, command)
    assert str(y.layout) == want_layout
    assert y.carrier is x.carrier and y.offset == x.offset, "a view, no copy"
    assert type(y.autograd_ctx) is sw.RearrangeOperation
    close(kind, y, expect(expr, [x], REARRANGE_SIZES[case]))
    # The functional string form is the same operation.
    z = sw.rearrange(x, command)
    assert z.layout == y.layout and z.carrier is x.carrier


REDUCE = [
    ("a b -> a", L([2, 3], [1, 2]), 0, "ab->a", {"a": 2, "b": 3}, "2:1"),
    ("a b -> b", L([2, 3], [3, 1]), 4, "ab->b", {"a": 2, "b": 3}, "3:1"),
    (
        "a (c d) b -> a c",
        L([2, [3, 4], 5], [1, [2, 6], 24]),
        0,
        "acdb->ac",
        {"a": 2, "c": 3, "d": 4, "b": 5},
        "(2,3):(1,2)",
    ),
    (
        "a (c d) b -> (a c)",
        L([2, [3, 4], 5], [1, [2, 6], 24]),
        1,
        "acdb->ac",
        {"a": 2, "c": 3, "d": 4, "b": 5},
        "((2,3)):((1,2))",
    ),
    ("a b -> 1", L([2, 3], [1, 2]), 0, "ab->", {"a": 2, "b": 3}, "1:1"),
    (
        "a b c -> c a",
        L([2, 3, 4], [12, 4, 1]),
        5,
        "abc->ca",
        {"a": 2, "b": 3, "c": 4},
        "(4,2):(1,4)",
    ),
    ("1 a b -> b", L([1, 3, 4], [5, 1, 3]), 0, "zab->b", {"z": 1, "a": 3, "b": 4}, "4:1"),
    ("x y -> x", L([[2, 3], 4], [[4, 8], 1]), 0, "xy->x", {"x": 6, "y": 4}, "((2,3)):((1,2))"),
    ("a b -> b 1", L([3, 2], [2, 1]), 0, "ab->b", {"a": 3, "b": 2}, "(2,1):(1,2)"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", range(len(REDUCE)))
def test_reduce_cases(kind, case):
    command, layout, offset, expr, sizes, want_layout = REDUCE[case]
    x = tensor(kind, layout, offset, case)
    y = E.reduce(x, command)
    assert str(y.layout) == want_layout
    assert y.carrier is not x.carrier and type(y.carrier) is type(x.carrier)
    assert y.autograd_ctx.inputs()[0].autograd_ctx is not None, "through a rearrange"
    close(kind, y, expect(expr, [x], sizes))
    z = sw.reduce(x, command)
    assert z.layout == y.layout
    close(kind, z, array(y))


def test_reduce_layout_rules():
    x = tensor("Generic", L([2, 3, 4], [1, 2, 6]))
    y = sw.reduce(x, "a b c -> a b")
    assert y.layout == sw.Layout(sw.Shape([2, 3]), sw.Stride([1, 2]))
    y = sw.reduce(x, "a b c -> (a c)")
    assert y.layout == sw.Layout(sw.Shape([[2, 4]]), sw.Stride([[1, 2]]))
    y = sw.reduce(x, "a b c -> 1")
    assert y.layout == sw.Layout(sw.Shape(1), sw.Stride(1))
    y.backward()  # an exact scalar: implicit backward works
    assert logical(x.grad) == [1.0] * 24


def test_reduce_ctx_is_the_carriers_reduce():
    g = tensor("Generic", L([2, 3], [1, 2]))
    assert type(sw.reduce(g, "a b -> a").autograd_ctx) is sw.GenericReduceSumOperation
    c = tensor("CPU", L([2, 3], [1, 2]))
    ctx = sw.reduce(c, "a b -> a").autograd_ctx
    assert type(ctx).__name__ == "_CPUReduceSumOperation"
    assert type(ctx.inputs()[0].autograd_ctx) is sw.RearrangeOperation


EINSUM = [
    ("a b, c b -> a c", L([2, 3], [1, 2]), 0, L([4, 3], [1, 4]), "ab,cb->ac", "(2,4):(1,2)"),
    ("a b, c b -> (c a)", L([2, 3], [3, 1]), 1, L([4, 3], [3, 1]), "ab,cb->ca", "((4,2)):((2,1))"),
    ("b, b -> 1", L([3], [1]), 0, L([3], [2]), "b,b->", "1:0"),
    (
        "a (b k), c k -> a b c",
        L([2, [3, 4]], [1, [2, 6]]),
        0,
        L([5, 4], [1, 5]),
        "abk,ck->abc",
        "(2,3,5):(1,2,6)",
    ),
    (
        "a (b k), c k -> (a b) c",
        L([2, [3, 4]], [12, [4, 1]]),
        2,
        L([5, 4], [4, 1]),
        "abk,ck->abc",
        "((2,3),5):((1,2),6)",
    ),
    (
        "a b c, d c b -> a d",
        L([2, 3, 4], [1, 2, 6]),
        0,
        L([5, 4, 3], [1, 5, 20]),
        "abc,dcb->ad",
        "(2,5):(1,2)",
    ),
    ("a b, b -> a", L([2, 3], [1, 2]), 0, L([3], [1]), "ab,b->a", "2:1"),
    ("k, c k -> c", L([4], [2]), 1, L([3, 4], [4, 1]), "k,ck->c", "3:1"),
    (
        "x k, y k -> y x",
        L([[2, 3], 4], [[1, 2], 6]),
        0,
        L([5, 4], [4, 1]),
        "xk,yk->yx",
        "(5,(2,3)):(6,(1,2))",
    ),
    (
        "1 a k, k c 1 -> c a",
        L([1, 2, 3], [9, 1, 2]),
        0,
        L([3, 4, 1], [4, 1, 7]),
        "zak,kcw->ca",
        "(4,2):(2,1)",
    ),
    # batched
    (
        "b i k, b j k -> b i j",
        L([2, 3, 4], [1, 2, 6]),
        0,
        L([2, 5, 4], [1, 2, 10]),
        "bik,bjk->bij",
        "(2,3,5):(15,1,3)",
    ),
    (
        "b (i k), j k b -> (i j) b",
        L([2, [3, 4]], [12, [4, 1]]),
        1,
        L([5, 4, 2], [8, 2, 1]),
        "bik,jkb->ijb",
        "((3,5),2):((1,3),15)",
    ),
    ("a b, c b -> a b c", L([2, 3], [1, 2]), 0, L([4, 3], [1, 4]), "ab,cb->abc", "(2,3,4):(1,8,2)"),
    ("b k, b k -> b", L([3, 4], [4, 1]), 0, L([3, 4], [1, 3]), "bk,bk->b", "3:1"),
]
EINSUM_SIZES = {"a": 2, "b": 3, "c": 4, "d": 5, "k": 4, "i": 3, "j": 5, "x": 6, "y": 5}
EINSUM_SIZE_FIX = {
    2: {"b": 3},
    3: {"b": 3, "c": 5},
    4: {"b": 3, "c": 5},
    5: {"b": 3, "c": 4},
    6: {"b": 3},
    7: {"c": 3},
    9: {"z": 1, "w": 1, "k": 3},
    10: {"b": 2},
    11: {"b": 2},
    13: {"b": 3},
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", range(len(EINSUM)))
def test_einsum_cases(kind, case):
    command, lhs, offset, rhs, expr, want_layout = EINSUM[case]
    sizes = dict(EINSUM_SIZES, **EINSUM_SIZE_FIX.get(case, {}))
    a = tensor(kind, lhs, offset, case)
    b = tensor(kind, rhs, 0, case + 100)
    y = E.einsum(a, b, command)
    assert str(y.layout) == want_layout
    assert type(y.autograd_ctx) is sw.RearrangeOperation
    product = y.autograd_ctx.inputs()[0]
    batched = bool(E.parse_einsum(command).batch_symbols)
    name = "BatchedMatmulOperation" if batched else "MatmulOperation"
    prefix = "_CPU" if kind == "CPU" else kind
    assert type(product.autograd_ctx).__name__ == prefix + name
    close(kind, y, expect(expr, [a, b], sizes))
    z = sw.einsum(a, b, command)
    assert z.layout == y.layout
    close(kind, z, array(y))


def test_einsum_reference_layouts():
    a = tensor("Generic", L([2, 3], [1, 2]))
    b = tensor("Generic", L([4, 3], [1, 4]))
    assert sw.einsum(a, b, "a b, c b -> (c a)").layout == sw.Layout(
        sw.Shape([[4, 2]]), sw.Stride([[2, 1]])
    )
    v = tensor("Generic", L([3], [1]))
    assert sw.einsum(v, v, "b, b -> 1").layout == sw.Layout(sw.Shape(1), sw.Stride(0))
    ctx = sw.einsum(a, b, "a b, c b -> a c").autograd_ctx
    assert type(ctx.inputs()[0].autograd_ctx) is sw.GenericMatmulOperation


# ------------------------------------------------------------------ Hypothesis


@st.composite
def layout_for(draw, extents):
    """An injective layout whose pieces have these extents: each piece is a
    flat mode or split into two leaves, strides permuted with gaps."""
    modes = []
    for e in extents:
        split = [d for d in range(2, e) if e % d == 0]
        if split and draw(st.booleans()):
            d = draw(st.sampled_from(split))
            modes.append([d, e // d])
        else:
            modes.append(e)
    leaves = [x for m in modes for x in (m if isinstance(m, list) else [m])]
    order = draw(st.permutations(range(len(leaves))))
    gap = draw(st.sampled_from([1, 1, 2]))
    strides = [0] * len(leaves)
    acc = 1
    for k in order:
        strides[k] = acc
        acc *= leaves[k] * gap
    it = iter(strides)
    stride = [[next(it) for _ in m] if isinstance(m, list) else next(it) for m in modes]
    return L(modes, stride), draw(st.integers(0, 2))


def grouped(draw, symbols):
    """The symbols in a random order, some adjacent ones parenthesized."""
    order = list(draw(st.permutations(symbols)))
    parts, i = [], 0
    while i < len(order):
        n = draw(st.integers(1, min(2, len(order) - i)))
        chunk = order[i : i + n]
        parts.append(chunk[0] if n == 1 else "(" + " ".join(chunk) + ")")
        i += n
    return " ".join(parts), "".join(order)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_rearrange_matches_numpy(kind, data):
    n = data.draw(st.integers(1, 4))
    syms = "pqrs"[:n]
    sizes = {c: data.draw(st.integers(1, 4)) for c in syms}
    layout, offset = data.draw(layout_for([sizes[c] for c in syms]))
    x = tensor(kind, layout, offset, data.draw(st.integers(0, 999)))
    out, letters = grouped(data.draw, list(syms))
    y = sw.rearrange(x, " ".join(syms) + " -> " + out)
    assert y.carrier is x.carrier and y.offset == x.offset
    close(kind, y, expect(f"{syms}->{letters}", [x], sizes))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_reduce_matches_numpy(kind, data):
    n = data.draw(st.integers(1, 4))
    syms = "pqrs"[:n]
    sizes = {c: data.draw(st.integers(1, 4)) for c in syms}
    layout, offset = data.draw(layout_for([sizes[c] for c in syms]))
    x = tensor(kind, layout, offset, data.draw(st.integers(0, 999)))
    keep = data.draw(st.lists(st.sampled_from(list(syms)), unique=True, max_size=n - 1))
    out, letters = grouped(data.draw, keep) if keep else ("1", "")
    y = sw.reduce(x, " ".join(syms) + " -> " + out)
    close(kind, y, expect(f"{syms}->{letters}", [x], sizes))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_einsum_matches_numpy(kind, data):
    pool = "pqrst"
    lhs = data.draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=3))
    rhs = data.draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=3))
    shared = [c for c in lhs if c in rhs]
    if not shared:
        rhs.append(lhs[0])
        shared = [lhs[0]]
    only = [c for c in lhs + rhs if c not in shared]
    batch = data.draw(st.lists(st.sampled_from(shared), unique=True))
    sizes = {c: data.draw(st.integers(1, 4)) for c in set(lhs + rhs)}
    la, oa = data.draw(layout_for([sizes[c] for c in lhs]))
    lb, _ = data.draw(layout_for([sizes[c] for c in rhs]))
    a = tensor(kind, la, oa, data.draw(st.integers(0, 999)))
    b = tensor(kind, lb, 0, data.draw(st.integers(0, 999)))
    out_syms = only + batch
    out, letters = grouped(data.draw, out_syms) if out_syms else ("1", "")
    command = f"{' '.join(lhs)}, {' '.join(rhs)} -> {out}"
    y = sw.einsum(a, b, command)
    assert E.parse_einsum(command).batch_symbols == tuple(c for c in lhs if c in batch)
    close(kind, y, expect(f"{''.join(lhs)},{''.join(rhs)}->{letters}", [a, b], sizes))


# -------------------------------------------------------------- batched einsum


@pytest.mark.parametrize("kind", KINDS)
def test_batched_einsum_against_numpy(kind):
    rng = np.random.default_rng(5)
    nb, m, n, k = (3, 17, 9, 33) if kind == "CPU" else (2, 4, 3, 5)
    a = build(kind, L([nb, m, k], [m * k, k, 1]), 0, lambda p: float(rng.uniform(-1, 1)))
    b = build(kind, L([nb, n, k], [1, nb, nb * n]), 0, lambda p: float(rng.uniform(-1, 1)))
    y = sw.einsum(a, b, "b i k, b j k -> b i j")
    want = np.einsum(
        "bik,bjk->bij",
        array(a).reshape(nb, m, k, order="F"),
        array(b).reshape(nb, n, k, order="F"),
    )
    assert y.layout == L([nb, m, n], [m * n, 1, m])
    np.testing.assert_allclose(array(y), want.flatten(order="F"), rtol=1e-4, atol=1e-4)
    # The batch symbol may sit anywhere in either operand.
    y2 = sw.einsum(a, b, "b i k, b j k -> i (j b)")
    np.testing.assert_allclose(
        array(y2), want.transpose(1, 2, 0).flatten(order="F"), rtol=1e-4, atol=1e-4
    )


def test_batched_matmul_operation_rules():
    a = tensor("CPU", L([2, 3, 4], [1, 2, 6]))
    two = tensor("CPU", L([2, 3], [1, 2]))
    op = a.carrier.dispatch_op("batched_matmul")
    assert type(op).__name__ == "_CPUBatchedMatmulOperation"
    with pytest.raises(ValueError, match="^lhs must have a three-mode layout$"):
        op.forward(two, a)
    with pytest.raises(ValueError, match="^rhs must have a three-mode layout$"):
        op.forward(a, two)
    with pytest.raises(ValueError, match="^Matmul inner dimensions must match$"):
        op.forward(a, tensor("CPU", L([2, 2, 4], [1, 2, 4])))
    with pytest.raises(ValueError, match="^Matmul batch dimensions must match$"):
        op.forward(a, tensor("CPU", L([2, 3, 3], [1, 2, 6])))
    g = tensor("Generic", L([2, 3, 4], [1, 2, 6]))
    gop = g.carrier.dispatch_op("batched_matmul")
    assert type(gop).__name__ == "GenericBatchedMatmulOperation"
    r = gop.forward(g, g)
    assert r.layout == L([2, 2, 4], [1, 2, 4])
    assert gop.ctx["output_layout"] == r.layout


# ---------------------------------------------------------------------- errors


def test_description_must_be_a_str():
    x = tensor("Generic", L([2, 3], [1, 2]))
    for call in (
        lambda d: E.rearrange(x, d),
        lambda d: E.reduce(x, d),
        lambda d: E.einsum(x, x, d),
        lambda d: sw.reduce(x, d),
        lambda d: sw.einsum(x, x, d),
    ):
        for bad in (None, 3, b"a -> a"):
            with pytest.raises(TypeError) as info:
                call(bad)
            assert str(info.value) == "description must be a str"
    # The description is checked before the operands.
    with pytest.raises(TypeError, match="^description must be a str$"):
        sw.einsum(None, None, 1)


def test_functional_overloads():
    x = tensor("Generic", L([2, 3], [1, 2]))
    with pytest.raises(TypeError) as info:
        sw.rearrange(x, "a b -> b a", sw.Tree(sw.Node.Leaf, sw.Node.Leaf))
    assert str(info.value) == "String rearrange descriptions do not accept an explicit selection"
    assert sw.rearrange(x, "a b -> b a", None).layout == L([3, 2], [2, 1])
    assert sw.rearrange(x, output="a b -> b a").layout == L([3, 2], [2, 1])
    assert sw.reduce(x, description="a b -> b").layout == L([3], [1])
    assert sw.einsum(lhs=x, rhs=x, description="a b, c b -> a c").layout == L([2, 2], [1, 2])
    with pytest.raises(TypeError, match="^description must be a str$"):
        sw.reduce(x, None)


def test_parse_errors_come_before_tensor_checks():
    with pytest.raises(ValueError, match="^Rearrange command must contain one '->' arrow$"):
        E.rearrange(None, "a b")
    with pytest.raises(ValueError, match="^Reduce command must omit at least one dimension$"):
        sw.reduce(None, "a b -> a b")
    with pytest.raises(ValueError, match="^Contraction command must include at least one shared"):
        sw.einsum(None, None, "a b, c d -> a c")


def test_tensor_errors():
    x = tensor("Generic", L([2, 3], [1, 2]))
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        E.rearrange([1, 2], "a -> a")
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        E.reduce(None, "a b -> a")
    with pytest.raises(TypeError, match="^lhs must be a Tensor$"):
        E.einsum(None, x, "a b, c b -> a c")
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        E.einsum(x, 1, "a b, c b -> a c")
    with pytest.raises(ValueError, match="^layout and tree profile do not match$"):
        E.rearrange(x, "a (b c) -> a b c")
    with pytest.raises(ValueError, match="^Layout rearrange ids must include every extracted"):
        E.rearrange(x, "a b -> a")
    with pytest.raises(ValueError, match="^Layout rearrange ids must include every extracted"):
        E.rearrange(x, "1 a -> a")
    with pytest.raises(ValueError, match="^Einsum shared dimension 'b' has mismatched logical"):
        E.einsum(x, tensor("Generic", L([4, 5], [1, 4])), "a b, c b -> a c")
    with pytest.raises(ValueError, match="^Einsum shared dimension 'b' has mismatched logical"):
        E.einsum(x, tensor("Generic", L([4, 2], [1, 4])), "b a, b c -> a b c")
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        E.einsum(x, tensor("CPU", L([4, 3], [1, 4])), "a b, c b -> a c")
    with pytest.raises(ValueError, match="^layout and tree profile do not match$"):
        E.einsum(x, x, "a b c, c -> a b")
    # A literal 1 in reduce is summed over whatever its size.
    y = E.reduce(x, "1 b -> b")
    assert logical(y) == pytest.approx(
        [sum(x[i, j] for i in range(2)) for j in range(3)], rel=1e-12
    )
    # Failed calls leave nothing behind in the spec caches' consistency.
    assert E.parse_rearrange("a b -> a") is E.parse_rearrange("a b -> a")


def test_released_carrier_fails_like_the_tree_form():
    x = tensor("CPU", L([2, 3], [1, 2]))
    x.carrier.release()
    with pytest.raises(Exception) as tree_form:
        sw.rearrange(x, sw.Tree(sw.Node.id(1), sw.Node.id(0)))
    for call in (
        lambda: E.rearrange(x, "a b -> b a"),
        lambda: E.reduce(x, "a b -> a"),
        lambda: E.einsum(x, x, "a b, c b -> a c"),
    ):
        with pytest.raises(type(tree_form.value)) as info:
            call()
        assert str(info.value) == str(tree_form.value)


# ------------------------------------------------------------------- gradients

FD = {"Generic": (1e-6, 1e-5, 1e-6), "CPU": (1e-2, 3e-2, 3e-3)}


def check_gradients(kind, fn, inputs, seed):
    h, rtol, atol = FD[kind]
    for x in inputs:
        x.grad = None
    y = fn(*inputs)
    g = tensor(kind, y.layout, 0, seed + 7)
    y.backward(g)

    def weighted():
        return sum(a * b for a, b in zip(array(fn(*inputs)), array(g), strict=True))

    for x in inputs:
        analytic = logical(x.grad)
        for i in range(x.layout.size):
            p = x.offset + x.layout.index(i)
            old = x.carrier[p]
            with sw.no_grad():
                x.carrier[p] = old + h
                plus = weighted()
                x.carrier[p] = old - h
                minus = weighted()
                x.carrier[p] = old
            stored = (lambda v: float(np.float32(v))) if kind == "CPU" else (lambda v: v)
            numeric = (plus - minus) / (stored(old + h) - stored(old - h))
            assert analytic[i] == pytest.approx(numeric, rel=rtol, abs=atol), (i, p)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("command", "layout", "offset"),
    [
        ("a b -> b a", L([2, 3], [1, 2]), 0),
        ("a (b c) -> (c a) b", L([2, [3, 2]], [1, [2, 6]]), 1),
        ("a b c -> c 1 (b a)", L([2, 3, 2], [6, 2, 1]), 0),
    ],
)
def test_rearrange_gradients(kind, command, layout, offset):
    x = tensor(kind, layout, offset, 1)
    check_gradients(kind, lambda t: sw.rearrange(t, command), [x], 3)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("command", "layout", "offset"),
    [
        ("a b -> a", L([2, 3], [1, 2]), 0),
        ("a (c d) b -> (a c)", L([2, [3, 2], 2], [1, [2, 6], 12]), 2),
        ("a b c -> c a", L([2, 3, 2], [6, 2, 1]), 0),
        ("a b -> 1", L([[2, 2], 3], [[1, 2], 4]), 0),
    ],
)
def test_reduce_gradients(kind, command, layout, offset):
    x = tensor(kind, layout, offset, 2)
    check_gradients(kind, lambda t: sw.reduce(t, command), [x], 4)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("command", "lhs", "rhs"),
    [
        ("a b, c b -> a c", L([2, 3], [1, 2]), L([4, 3], [3, 1])),
        ("a (b k), c k -> (c a) b", L([2, [3, 2]], [1, [2, 6]]), L([3, 2], [1, 3])),
        ("b, b -> 1", L([3], [2]), L([3], [1])),
        ("b i k, b j k -> b i j", L([2, 3, 2], [1, 2, 6]), L([2, 2, 2], [4, 2, 1])),
        ("k (b i), j k b -> (i j) b", L([2, [2, 3]], [6, [3, 1]]), L([2, 2, 2], [1, 2, 4])),
        ("a b, c b -> a b c", L([2, 3], [1, 2]), L([2, 3], [3, 1])),
    ],
)
def test_einsum_gradients(kind, command, lhs, rhs):
    a = tensor(kind, lhs, 1, 5)
    b = tensor(kind, rhs, 0, 6)
    check_gradients(kind, lambda x, y: sw.einsum(x, y, command), [a, b], 7)


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_chain_through_all_three(kind):
    x = tensor(kind, L([2, 3], [1, 2]), 0, 11)
    w = tensor(kind, L([4, 3], [3, 1]), 0, 12)
    t = sw.rearrange(x, "a b -> b a")
    y = sw.einsum(t, w, "b a, c b -> (c a)")
    s = sw.reduce(y, "(c a) -> 1")
    s.backward()
    want_x = [sum(w[c, b] for c in range(4)) for b in range(3) for _ in range(2)]
    assert logical(x.grad) == pytest.approx(want_x, rel=1e-5)
    want_w = [x[0, b] + x[1, b] for b in range(3) for _ in range(4)]
    assert logical(w.grad) == pytest.approx(want_w, rel=1e-5)
    assert math.isclose(float(ones_like(s)[0]), 1.0)


# ------------------------------------------------------------ fault injection

FAULT_CALLS = {
    "rearrange": lambda a, b: sw.rearrange(a, "a b -> b a"),
    "reduce": lambda a, b: sw.reduce(a, "a b -> b"),
    "einsum": lambda a, b: sw.einsum(a, b, "a b, c b -> c a"),
    "batched": lambda a, b: sw.einsum(a, b, "a b, c b -> a b c"),
    "backward": lambda a, b: sw.reduce(
        sw.einsum(a, b, "a b, c b -> a b c"), "a b c -> 1"
    ).backward(),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(FAULT_CALLS))
def test_allocation_failures_are_clean(kind, name):
    import gc

    from strideweave import _native

    call = FAULT_CALLS[name]

    def fresh():
        return tensor(kind, L([2, 3], [1, 2]), 1, 0), tensor(kind, L([4, 3], [3, 1]), 0, 1)

    call(*fresh())  # the commands are compiled and cached before counting
    gc.collect()
    base = _native._debug_live_allocs()
    for n in range(600):
        a, b = fresh()
        failed = False
        _native._debug_fail_alloc_after(n)
        try:
            result = call(a, b)
        except MemoryError:
            failed = True
            result = None
        finally:
            _native._debug_fail_alloc_after(-1)
        del result, a, b
        gc.collect()
        assert _native._debug_live_allocs() == base, f"leak after failure {n}"
        if not failed:
            assert n > 0
            return
    raise AssertionError(f"{name} still failed after 600 allocations")


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=min(30, settings().max_examples), deadline=None)
@given(data=st.data())
def test_einsum_gradients_match_numpy(kind, data):
    """dL/dlhs = einsum(out, rhs -> lhs) and dL/drhs = einsum(out, lhs -> rhs)
    for L = sum(g * einsum(lhs, rhs)), batch symbols included."""
    pool = "pqrs"
    lhs = data.draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=3))
    rhs = data.draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=3))
    shared = [c for c in lhs if c in rhs]
    if not shared:
        rhs.append(lhs[0])
        shared = [lhs[0]]
    batch = data.draw(st.lists(st.sampled_from(shared), unique=True))
    out_syms = [c for c in lhs + rhs if c not in shared] + batch
    sizes = {c: data.draw(st.integers(1, 3)) for c in set(lhs + rhs)}
    la, oa = data.draw(layout_for([sizes[c] for c in lhs]))
    lb, ob = data.draw(layout_for([sizes[c] for c in rhs]))
    a = tensor(kind, la, oa, data.draw(st.integers(0, 999)))
    b = tensor(kind, lb, ob, data.draw(st.integers(0, 999)))
    out, letters = grouped(data.draw, out_syms) if out_syms else ("1", "")
    y = sw.einsum(a, b, f"{' '.join(lhs)}, {' '.join(rhs)} -> {out}")
    g = tensor(kind, y.layout, 0, 3)
    y.backward(g)
    ls, rs = "".join(lhs), "".join(rhs)
    ga = pieces(g, letters, sizes)
    want_a = np.einsum(f"{letters},{rs}->{ls}", ga, pieces(b, rs, sizes))
    want_b = np.einsum(f"{letters},{ls}->{rs}", ga, pieces(a, ls, sizes))
    close(kind, a.grad, want_a.flatten(order="F"))
    close(kind, b.grad, want_b.flatten(order="F"))
