"""Finite-difference gradient checks for every differentiable operation on
Generic and CPU (Hypothesis draws layouts, offsets and values), and
CPU/Generic agreement of values and gradients within per-operation
tolerances (reference §4.6, §12.4)."""

import math

import numpy as np
import pytest
import strideweave as sw
from helpers_ops import L, build, logical, same_values, slots
from hypothesis import given, settings
from hypothesis import strategies as st
from strideweave import Node, Tree

EXAMPLES = min(40, settings().max_examples)


@st.composite
def layouts(draw, min_rank=1, max_rank=3, rank=None):
    """An injective layout (compact, padded, row-major or nested) and an offset."""
    rank = rank or draw(st.integers(min_rank, max_rank))
    modes = []
    for _ in range(rank):
        if draw(st.booleans()) and draw(st.booleans()):
            modes.append([draw(st.integers(1, 3)), draw(st.integers(1, 3))])
        else:
            modes.append(draw(st.integers(1, 4)))
    leaves = [e for m in modes for e in (m if isinstance(m, list) else [m])]
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


def away_from_zero(v, margin=0.1):
    return v if abs(v) >= margin else math.copysign(margin, v if v else 1.0)


def make(kind, layout, offset, seed, lo=-2.0, hi=2.0, margin=0.0):
    rng = np.random.default_rng(seed)
    table = {}

    def value(p):
        if p not in table:
            v = float(rng.uniform(lo, hi))
            table[p] = away_from_zero(v, margin) if margin else v
        return table[p]

    return build(kind, layout, offset, value)


def upstream(kind, layout, seed):
    rng = np.random.default_rng(seed + 7)
    return build(kind, layout, 0, lambda p: float(rng.uniform(-1.0, 1.0)))


def weighted_sum(y, g):
    return sum(float(a) * float(b) for a, b in zip(logical(y), logical(g), strict=True))


def check_gradients(kind, fn, inputs, seed, rtol, atol, h):
    """Backward against central differences of sum(g * fn(inputs))."""
    for x in inputs:
        x.grad = None
    y = fn(*inputs)
    g = upstream(kind, y.layout, seed)
    y.backward(g)
    for x in inputs:
        analytic = logical(x.grad)
        for i, p in enumerate(slots(x.layout, x.offset)):
            old = x.carrier[p]
            with sw.no_grad():
                x.carrier[p] = old + h
                plus = weighted_sum(fn(*inputs), g)
                x.carrier[p] = old - h
                minus = weighted_sum(fn(*inputs), g)
                x.carrier[p] = old
            # The perturbation actually stored (float32 for CPU).
            step = _stored(kind, old + h) - _stored(kind, old - h)
            numeric = (plus - minus) / step
            assert analytic[i] == pytest.approx(numeric, rel=rtol, abs=atol), (i, p)


def _stored(kind, value):
    return float(np.float32(value)) if kind == "CPU" else value


# Per kind: (finite-difference step, rtol, atol).
FD = {"Generic": (1e-6, 1e-5, 1e-6), "CPU": (1e-2, 3e-2, 3e-3)}

UNARY = ["exp", "relu", "sigmoid", "tanh", "gelu", "silu", "softplus", "elu", "leaky_relu"]
KINK = {"relu", "leaky_relu", "elu"}


@pytest.mark.parametrize("kind", ["Generic", "CPU"])
@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=EXAMPLES)
@given(case=layouts(), seed=st.integers(0, 2**16))
def test_unary_gradients(kind, name, case, seed):
    layout, offset = case
    x = make(kind, layout, offset, seed, margin=0.1 if name in KINK else 0.0)
    check_gradients(kind, getattr(sw, name), [x], seed, *FD[kind][1:], FD[kind][0])


@pytest.mark.parametrize("kind", ["Generic", "CPU"])
@pytest.mark.parametrize("name", ["add", "sub", "elementwise_mul", "div"])
@settings(max_examples=EXAMPLES)
@given(case=layouts(), seed=st.integers(0, 2**16))
def test_binary_gradients(kind, name, case, seed):
    layout, offset = case
    a = make(kind, layout, offset, seed)
    b = make(kind, layout, 0, seed + 1, margin=0.5 if name == "div" else 0.0)
    check_gradients(kind, getattr(sw, name), [a, b], seed, *FD[kind][1:], FD[kind][0])


@pytest.mark.parametrize("kind", ["Generic", "CPU"])
@settings(max_examples=EXAMPLES)
@given(
    case=layouts(),
    seed=st.integers(0, 2**16),
    scalar=st.sampled_from([2, -0.5, 3.25, True]),
    exponent=st.sampled_from([2, 3, 0.5, -1.5, 1]),
)
def test_scalar_gradients(kind, case, seed, scalar, exponent):
    layout, offset = case
    x = make(kind, layout, offset, seed)
    check_gradients(kind, lambda t: sw.mul(t, scalar), [x], seed, *FD[kind][1:], FD[kind][0])
    x = make(kind, layout, offset, seed, 0.5, 2.0)
    check_gradients(kind, lambda t: sw.pow(t, exponent), [x], seed, *FD[kind][1:], FD[kind][0])
    x = make(kind, layout, offset, seed)
    check_gradients(kind, sw.neg, [x], seed, *FD[kind][1:], FD[kind][0])


@pytest.mark.parametrize("kind", ["Generic", "CPU"])
@settings(max_examples=EXAMPLES)
@given(lhs=layouts(rank=2), rhs_mode0=layouts(rank=1), seed=st.integers(0, 2**16))
def test_contraction_gradients(kind, lhs, rhs_mode0, seed):
    layout, offset = lhs
    x = make(kind, layout, offset, seed)
    check_gradients(kind, sw.reduce, [x], seed, *FD[kind][1:], FD[kind][0])
    k = layout[1].size
    n = rhs_mode0[0].size
    rhs = L([n, k], [k, 1])
    b = make(kind, rhs, rhs_mode0[1], seed + 3)
    check_gradients(kind, sw.matmul, [x, b], seed, *FD[kind][1:], FD[kind][0])


@pytest.mark.parametrize("kind", ["Generic", "CPU"])
@settings(max_examples=EXAMPLES)
@given(case=layouts(min_rank=2), seed=st.integers(0, 2**16), data=st.data())
def test_layout_op_gradients(kind, case, seed, data):
    layout, offset = case
    x = make(kind, layout, offset, seed)
    rank = len(layout)
    order = data.draw(st.permutations(range(rank)))
    check_gradients(kind, lambda t: sw.permute(t, *order), [x], seed, *FD[kind][1:], FD[kind][0])
    leaves = len(layout.flatten())
    ids = data.draw(st.permutations(range(leaves)))
    output = Tree(*[Node.id(k) for k in ids])
    check_gradients(kind, lambda t: sw.rearrange(t, output), [x], seed, *FD[kind][1:], FD[kind][0])
    key = []
    for m in range(rank):
        mode = layout[m]
        if mode.is_leaf and mode.size > 1 and data.draw(st.booleans()):
            start = data.draw(st.integers(0, mode.size - 1))
            key.append(slice(start, data.draw(st.integers(start + 1, mode.size))))
        elif data.draw(st.booleans()):
            key.append(data.draw(st.integers(0, mode.size - 1)))
        else:
            key.append(slice(None))
    key = tuple(key)
    check_gradients(kind, lambda t: sw.view(t, key), [x], seed, *FD[kind][1:], FD[kind][0])


# ------------------------------------------------------ CPU and Generic agree

# Per operation: (rtol, atol) between CPU (float32) and Generic (double).
AGREE = {name: (1e-5, 1e-6) for name in UNARY}
AGREE.update({"exp": (1e-5, 1e-6), "gelu": (1e-5, 1e-6), "softplus": (1e-5, 1e-6)})
BINARY_AGREE = (1e-5, 1e-6)
CONTRACTION_AGREE = (1e-4, 1e-4)


def agree(cpu_tensor, generic_tensor, rtol, atol):
    np.testing.assert_allclose(
        [float(v) for v in logical(cpu_tensor)],
        [float(v) for v in logical(generic_tensor)],
        rtol=rtol,
        atol=atol,
    )


def run_both(fn, cpu_inputs, seed, rtol, atol):
    generic_inputs = [same_values("Generic", t) for t in cpu_inputs]
    yc, yg = fn(*cpu_inputs), fn(*generic_inputs)
    assert yc.layout == yg.layout
    agree(yc, yg, rtol, atol)
    gc_ = upstream("CPU", yc.layout, seed)
    yc.backward(gc_)
    yg.backward(same_values("Generic", gc_))
    for c, g in zip(cpu_inputs, generic_inputs, strict=True):
        agree(c.grad, g.grad, rtol, atol)


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=EXAMPLES)
@given(case=layouts(), seed=st.integers(0, 2**16))
def test_cpu_generic_agree_unary(name, case, seed):
    layout, offset = case
    x = make("CPU", layout, offset, seed, -4.0, 4.0, margin=1e-3 if name in KINK else 0.0)
    run_both(getattr(sw, name), [x], seed, *AGREE[name])


@pytest.mark.parametrize("name", ["add", "sub", "elementwise_mul", "div"])
@settings(max_examples=EXAMPLES)
@given(case=layouts(), seed=st.integers(0, 2**16))
def test_cpu_generic_agree_binary(name, case, seed):
    layout, offset = case
    a = make("CPU", layout, offset, seed)
    b = make("CPU", layout, 1, seed + 1, margin=0.5 if name == "div" else 0.0)
    run_both(getattr(sw, name), [a, b], seed, *BINARY_AGREE)


@settings(max_examples=EXAMPLES)
@given(
    case=layouts(rank=2),
    seed=st.integers(0, 2**16),
    scalar=st.sampled_from([2, -0.5, 3.25]),
    exponent=st.sampled_from([2, 3, 0.5, -1.5]),
)
def test_cpu_generic_agree_scalar_and_contractions(case, seed, scalar, exponent):
    layout, offset = case
    x = make("CPU", layout, offset, seed, 0.5, 2.0)
    run_both(lambda t: sw.mul(t, scalar), [x], seed, *BINARY_AGREE)
    x = make("CPU", layout, offset, seed, 0.5, 2.0)
    run_both(lambda t: sw.pow(t, exponent), [x], seed, 2e-5, 1e-5)
    x = make("CPU", layout, offset, seed)
    run_both(sw.reduce, [x], seed, *CONTRACTION_AGREE)
    a = make("CPU", layout, offset, seed)
    b = make("CPU", L([3, layout[1].size], [1, 3]), 0, seed + 5)
    run_both(sw.matmul, [a, b], seed, *CONTRACTION_AGREE)
