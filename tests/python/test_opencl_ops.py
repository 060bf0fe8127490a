"""Operations on OpenCL tensors, against the CPU carrier.

Every computing built-in runs on OpenCL through an OpenCL C kernel generated
from the operation and its operands' iteration plan, compiled once per
specialisation. These tests run each operation on random compact, strided,
hierarchical and broadcast (stride-0) layouts with offsets, on OpenCL and on
CPU, and require the same result layout and dtype and the same values
(exactly for Int32, within float tolerances for Float32); gradients of a
backward over OpenCL tensors must be OpenCL tensors equal to the CPU ones.

Tests that need a runtime skip with the reason when there is none, and fail
instead when STRIDEWEAVE_REQUIRE_OPENCL is set (CI).

Checklist (what is built, and its tests):

- The capability set: OpenCL declares exactly the CPU's plans (sealed, a
  shipped backend): ``test_capability_set_is_the_cpus``.
- Elementwise binary ops (add, sub, elementwise_mul, div) on Float32, Int32
  and mixed operands whose layouts differ: ``test_binary_against_cpu``.
- Scalar ops (mul, pow, the fixed pow exponents included):
  ``test_scalar_against_cpu``.
- Activations (exp, relu, sigmoid, tanh, gelu, silu, softplus, elu,
  leaky_relu): ``test_activation_against_cpu``.
- reduce over the second mode: ``test_reduce_against_cpu``; long summed
  modes (the two-pass parallel form) against CPU and exact sums,
  deterministic, with Int32 range checks and injected failures:
  ``test_reduce_long_rows``, ``test_reduce_is_deterministic``,
  ``test_reduce_long_rows_int32_range``, ``test_reduce_long_rows_failures``.
- matmul and batched_matmul (tiled kernel, edges not multiples of the
  tile): ``test_matmul_against_cpu``, ``test_batched_matmul_against_cpu``,
  ``test_matmul_large_tiles``.
- Int32 overflow reported as the CPU reports it:
  ``test_int32_overflow_is_reported``.
- Gradients of every operation equal the CPU ones, on OpenCL:
  ``test_gradients_against_cpu``, ``test_matmul_gradients_against_cpu``;
  gradients of composed expressions (every activation family, the four
  binary ops, mul and pow by a scalar, matmul, reduce over short and long
  rows) against central finite differences of the same expression in
  float64 on the host: ``test_gradients_against_finite_differences``.
- An operation made with define_operation runs through its reference and
  VJP on the device: ``test_defined_operation_runs_through_its_reference``.
- Refusals: Bool, mixed carriers, wrong modes, unknown operations:
  ``test_refusals``.
- Asynchronous launch, one compile per specialisation, views compile
  nothing: ``test_kernel_cache_and_async``.
- Failure injection at compile and launch leaves no result and no change:
  ``test_injected_failures``.
- Gradient accumulation into .grad uses the device scatter:
  ``test_grad_accumulates_on_device``.
"""

import math

import numpy as np
import pytest
import strideweave as sw
from helpers_opencl import need_runtime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strideweave import CPU, DType, OpenCL, Tensor, _native

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def L(shape, stride):
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(list(stride)))


# ------------------------------------------------------------ layouts


@st.composite
def mode_shapes(draw, rank):
    """Top-level modes, each a leaf extent or a nested pair of extents."""
    modes = []
    for _ in range(rank):
        if draw(st.booleans()):
            modes.append([draw(st.integers(1, 3)), draw(st.integers(1, 3))])
        else:
            modes.append(draw(st.integers(1, 5)))
    return modes


@st.composite
def layout_of(draw, modes, broadcast=True):
    """A random layout of the given top-level modes: compact, strided (a
    leaf order and gaps), permuted leaves, or (if broadcast) with stride-0
    leaves; and an offset."""
    leaves = []
    for m in modes:
        leaves.extend(m if isinstance(m, list) else [m])
    kinds = ["compact", "strided", "hierarchical"] + (["broadcast"] if broadcast else [])
    kind = draw(st.sampled_from(kinds))
    order = list(range(len(leaves)))
    if kind in ("strided", "hierarchical"):
        order = draw(st.permutations(order))
    strides = [0] * len(leaves)
    step = 1
    for i in order:
        strides[i] = step
        step *= leaves[i] * (draw(st.integers(1, 2)) if kind == "strided" else 1)
    if kind == "broadcast":
        for i in range(len(leaves)):
            if draw(st.booleans()):
                strides[i] = 0
    shape, stride, k = [], [], 0
    for m in modes:
        if isinstance(m, list):
            shape.append(list(m))
            stride.append(strides[k : k + len(m)])
            k += len(m)
        else:
            shape.append(m)
            stride.append(strides[k])
            k += 1
    return L(shape, stride), draw(st.integers(0, 3))


def slot_values(layout, offset, rng, dtype):
    """Per-slot values (holes 0): the same storage for CPU and OpenCL."""
    n = offset + layout.cosize
    if dtype == DType.Int32:
        return [int(v) for v in rng.integers(-6, 7, size=n)]
    return [float(v) for v in rng.uniform(-2.0, 2.0, size=n)]


def pair(layout, offset, values, dtype=DType.Float32):
    """The same tensor on CPU and on OpenCL."""
    c = Tensor(CPU(0, dtype=dtype).new_like(values), offset, layout)
    o = Tensor(OpenCL(0, dtype=dtype).new_like(values), offset, layout)
    return c, o


def logical(t):
    """The logical values of a tensor, read back through a move to CPU for
    OpenCL (which also synchronises)."""
    if isinstance(t.carrier, OpenCL):
        host = sw.move(t, CPU(t.carrier.size(), dtype=t.carrier.dtype()))
        return [host[i] for i in range(t.layout.size)]
    return [t[i] for i in range(t.layout.size)]


def agree(cpu, ocl, rtol=1e-5, atol=1e-6):
    assert type(ocl.carrier) is OpenCL
    assert ocl.layout == cpu.layout
    assert ocl.carrier.dtype() == cpu.carrier.dtype()
    want, got = logical(cpu), logical(ocl)
    if cpu.carrier.dtype() == DType.Int32:
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---------------------------------------------------------- capability


def test_capability_set_is_the_cpus():
    from strideweave.carriers import operation_capability as oc

    ours = oc.capabilities_for_carrier_class(OpenCL)
    assert ours == oc.capabilities_for_carrier_class(CPU)
    assert {c.operation for c in ours} >= {"add", "reduce_sum", "matmul", "relu"}
    with pytest.raises(TypeError, match="shipped backend|sealed"):
        oc.register_operation_capabilities(OpenCL, ())


# ---------------------------------------------------------- elementwise

BINARY = ["add", "sub", "elementwise_mul", "div"]
DTYPES = [DType.Float32, DType.Int32]


@SETTINGS
@given(data=st.data())
def test_binary_against_cpu(data):
    need_runtime()
    name = data.draw(st.sampled_from(BINARY))
    modes = data.draw(mode_shapes(data.draw(st.integers(1, 3))))
    la, oa = data.draw(layout_of(modes))
    lb, ob = data.draw(layout_of(modes))
    da, db = data.draw(st.sampled_from(DTYPES)), data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    va, vb = slot_values(la, oa, rng, da), slot_values(lb, ob, rng, db)
    if name == "div":
        vb = [v if v != 0 else 3 for v in vb]
        vb = [v if abs(v) > 0.1 else 0.5 for v in vb]
    ca, xa = pair(la, oa, va, da)
    cb, xb = pair(lb, ob, vb, db)
    f = getattr(sw, name)
    agree(f(ca, cb), f(xa, xb))


@SETTINGS
@given(data=st.data())
def test_scalar_against_cpu(data):
    need_runtime()
    modes = data.draw(mode_shapes(data.draw(st.integers(1, 3))))
    layout, offset = data.draw(layout_of(modes))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    values = slot_values(layout, offset, rng, dtype)
    if data.draw(st.booleans()):
        scalar = data.draw(st.sampled_from([0, 1, 2, 3, 0.5, -1, 1.5, 2.25, 3.0]))
        values = [abs(v) + 0.25 for v in values] if dtype == DType.Float32 else values
        f = sw.pow
    else:
        scalar = data.draw(st.sampled_from([2, -3, 0.5, -1.25, 0]))
        f = sw.mul
    c, o = pair(layout, offset, values, dtype)
    agree(f(c, scalar), f(o, scalar), rtol=1e-5)


ACTIVATIONS = ["exp", "relu", "sigmoid", "tanh", "gelu", "silu", "softplus", "elu", "leaky_relu"]


@SETTINGS
@given(data=st.data())
def test_activation_against_cpu(data):
    need_runtime()
    name = data.draw(st.sampled_from(ACTIVATIONS))
    modes = data.draw(mode_shapes(data.draw(st.integers(1, 3))))
    layout, offset = data.draw(layout_of(modes))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    c, o = pair(layout, offset, slot_values(layout, offset, rng, dtype), dtype)
    f = getattr(sw, name)
    agree(f(c), f(o), rtol=2e-5, atol=1e-6)


def test_activation_extremes(runtime):
    values = [-100.0, -20.0, -1e-30, -0.0, 0.0, 1e-30, 20.0, 100.0, math.inf, -math.inf]
    layout = L([len(values)], [1])
    c, o = pair(layout, 0, values)
    for name in ACTIVATIONS:
        f = getattr(sw, name)
        agree(f(c), f(o), rtol=2e-5, atol=1e-30)


# ------------------------------------------------------------- reduce


@SETTINGS
@given(data=st.data())
def test_reduce_against_cpu(data):
    need_runtime()
    modes = data.draw(mode_shapes(2))
    layout, offset = data.draw(layout_of(modes))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    c, o = pair(layout, offset, slot_values(layout, offset, rng, dtype), dtype)
    agree(sw.reduce(c), sw.reduce(o), rtol=1e-5, atol=1e-5)


def test_reduce_huge_broadcast(runtime):
    # The summed mode is a broadcast of 2**40: the sum is a product.
    layout = L([3, 2**40], [1, 0])
    c, o = pair(layout, 0, [1.0, 2.0, 3.0])
    agree(sw.reduce(c), sw.reduce(o), rtol=1e-6)
    ci, oi = pair(layout, 0, [0, 1, 0], DType.Int32)
    for t in (ci, oi):
        with pytest.raises(OverflowError, match="integer accumulation overflowed"):
            sw.reduce(t)


# A summed mode of more than 4096 elements runs the two-pass reduction:
# fixed parts summed by work groups, then each row's partials in order.
LONG_ROWS = [
    # One row of 4097 (two parts, the second of one element); three
    # strided rows of 70000 (18 parts, the last short, most of its lanes
    # empty); a hierarchical summed mode with permuted strides; a summed
    # mode with a broadcast leaf; one row of 300000 (parts longer than
    # 4096, at an offset).
    (L([1, 4097], [0, 1]), 0),
    (L([3, 70000], [1, 3]), 2),
    (L([2, [100, 60]], [6000, [1, 100]]), 1),
    (L([2, [5000, 3]], [1, [2, 0]]), 0),
    (L([1, 300000], [0, 1]), 3),
]


def exact_row_sums(layout, offset, slots):
    """Each row's sum over the second mode, in float64 on the host."""
    rows = layout[0].size
    index = np.array([offset + layout(i) for i in range(layout.size)])
    return slots[index].reshape(-1, rows).sum(axis=0)


@pytest.mark.parametrize(("layout", "offset"), LONG_ROWS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_long_rows(runtime, layout, offset, dtype):
    rng = np.random.default_rng(7)
    values = slot_values(layout, offset, rng, dtype)
    c, o = pair(layout, offset, values, dtype)
    agree(sw.reduce(c), sw.reduce(o), rtol=1e-5, atol=1e-3)
    got = logical(sw.reduce(o))  # (a move to CPU releases what it reads)
    want = exact_row_sums(layout, offset, np.asarray(values, dtype=np.float64))
    if dtype == DType.Int32:
        assert got == [int(v) for v in want]
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


def test_reduce_is_deterministic(runtime):
    # The parts and the order of every addition are fixed: the same sum,
    # bit for bit, on every run (values of mixed signs and magnitudes, so
    # that another order would round differently).
    n = 1 << 20
    layout = L([1, n], [0, 1])
    rng = np.random.default_rng(11)
    values = (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).tolist()
    _, o = pair(layout, 0, values)
    r = sw.reduce(o)
    launched = _native._opencl_kernel_stats()[2]
    first = logical(r)
    r = sw.reduce(o)
    assert _native._opencl_kernel_stats()[2] == launched + 2  # two passes
    assert logical(r) == first
    for _ in range(5):
        assert logical(sw.reduce(o)) == first
    want = math.fsum(float(np.float32(v)) for v in values)
    assert first[0] == pytest.approx(want, rel=1e-4, abs=1e-3)


def test_reduce_long_rows_int32_range(runtime):
    big = 2**20
    # 5000 elements of 2**20: every part fits int32, the sum does not.
    c, o = pair(L([1, 5000], [0, 1]), 0, [big] * 5000, DType.Int32)
    for t in (c, o):
        with pytest.raises(OverflowError, match="integer accumulation overflowed"):
            sw.reduce(t)
    # Parts out of int32 range whose sum is in range: exact, as on CPU.
    values = [2**30] * 4096 + [-(2**30)] * 4096 + [5]
    c, o = pair(L([1, 8193], [0, 1]), 0, values, DType.Int32)
    agree(sw.reduce(c), sw.reduce(o))
    assert logical(sw.reduce(o)) == [5]
    # A broadcast leaf multiplies an in-range sum out of range.
    c, o = pair(L([1, [4097, 2**20]], [0, [1, 0]]), 0, [1] * 4097, DType.Int32)
    for t in (c, o):
        with pytest.raises(OverflowError, match="integer accumulation overflowed"):
            sw.reduce(t)


@pytest.mark.parametrize(
    ("stage", "after", "n"),
    [("enqueue", 0, 12305), ("enqueue", 1, 12306), ("compile", 0, 12307), ("compile", 1, 16389)],
)
def test_reduce_long_rows_failures(runtime, no_faults, stage, after, n):
    # Either pass failing (to launch, or to compile: each n is a shape no
    # other test uses) raises and leaves the operand as it was; the next
    # call works.
    layout = L([1, n], [0, 1])
    _, o = pair(layout, 0, [1.0] * n)
    version = o.carrier.version
    _native._debug_opencl_fail(stage, after)
    with pytest.raises(RuntimeError, match="injected"):
        sw.reduce(o)
    assert o.carrier.version == version and list(o.carrier)[:3] == [1.0] * 3
    assert logical(sw.reduce(o)) == [float(n)]


# ------------------------------------------------------------- matmul


@st.composite
def matmul_operands(draw, batched):
    m, n, k = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    bsz = draw(st.integers(1, 3))

    def modes(rows):
        out = [rows, k] + ([bsz] if batched else [])
        # A nested mode where an extent factors.
        return [[2, e // 2] if e % 2 == 0 and e > 2 and draw(st.booleans()) else e for e in out]

    return draw(layout_of(modes(m))), draw(layout_of(modes(n)))


@SETTINGS
@given(data=st.data())
def test_matmul_against_cpu(data):
    need_runtime()
    (la, oa), (lb, ob) = data.draw(matmul_operands(False))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    ca, xa = pair(la, oa, slot_values(la, oa, rng, dtype), dtype)
    cb, xb = pair(lb, ob, slot_values(lb, ob, rng, dtype), dtype)
    agree(sw.matmul(ca, cb), sw.matmul(xa, xb), rtol=1e-5, atol=1e-5)


@SETTINGS
@given(data=st.data())
def test_batched_matmul_against_cpu(data):
    need_runtime()
    (la, oa), (lb, ob) = data.draw(matmul_operands(True))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    ca, xa = pair(la, oa, slot_values(la, oa, rng, dtype), dtype)
    cb, xb = pair(lb, ob, slot_values(lb, ob, rng, dtype), dtype)
    got = xa.carrier.dispatch_op("batched_matmul").forward(xa, xb)
    want = ca.carrier.dispatch_op("batched_matmul").forward(ca, cb)
    agree(want, got, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", ["vector", "tiled"])
def test_matmul_large_tiles(runtime, monkeypatch, kernel):
    # Both Float32 kernels (the vector one of CPU devices, the tiled one of
    # GPUs): extents past one block and not multiples of it, a transposed
    # (row-major) lhs and a strided rhs; the larger product is packed
    # first (with an Int32 rhs converted on the way), and batched.
    monkeypatch.setenv("STRIDEWEAVE_OPENCL_GEMM", kernel)
    rng = np.random.default_rng(7)
    for m, n, k, batch, rhs in [
        (130, 70, 45, 1, DType.Float32),
        (160, 130, 128, 1, DType.Int32),
        (40, 33, 64, 35, DType.Float32),
    ]:
        bat = [batch] if batch > 1 else []
        la = L([m, k, *bat], [k, 1, *([m * k] if bat else [])])
        lb = L([n, k, *bat], [1, 2 * n, *([2 * n * k] if bat else [])])
        ca, xa = pair(la, 0, slot_values(la, 0, rng, DType.Float32))
        cb, xb = pair(lb, 0, slot_values(lb, 0, rng, rhs), rhs)
        if bat:
            want = ca.carrier.dispatch_op("batched_matmul").forward(ca, cb)
            got = xa.carrier.dispatch_op("batched_matmul").forward(xa, xb)
        else:
            want, got = sw.matmul(ca, cb), sw.matmul(xa, xb)
        agree(want, got, rtol=1e-4, atol=1e-4)


def test_int32_overflow_is_reported(runtime):
    big = 2**30
    layout = L([2], [1])
    for values, f in [
        ([big, big], lambda t: sw.add(t, t)),
        ([big, -big], lambda t: sw.sub(t, sw.mul(t, -1))),
        ([big, 3], lambda t: sw.elementwise_mul(t, t)),
        ([big, 1], lambda t: sw.mul(t, 4)),
        ([big, 1], lambda t: sw.mul(t, 2**40)),
        ([3, 1], lambda t: sw.pow(t, 40)),
        ([big, big], lambda t: sw.reduce(sw.Tensor(t.carrier, 0, L([1, 2], [2, 1])))),
    ]:
        c, o = pair(layout, 0, values, DType.Int32)
        with pytest.raises(OverflowError, match="out of int32 range|overflowed"):
            f(c)
        with pytest.raises(OverflowError, match="out of int32 range|overflowed"):
            f(o)
    a = L([1, 2], [1, 1])
    c, o = pair(a, 0, [big, big], DType.Int32)
    for t in (c, o):
        with pytest.raises(OverflowError, match="overflowed"):
            sw.matmul(t, t)
    # In range stays exact, including pow of -1, 0 and 1 by a huge exponent.
    c, o = pair(L([4], [1]), 0, [-1, 1, 0, 2], DType.Int32)
    agree(sw.pow(c, 30), sw.pow(o, 30))
    c, o = pair(L([3], [1]), 0, [-1, 1, 0], DType.Int32)
    agree(sw.pow(c, 2**20 + 1), sw.pow(o, 2**20 + 1))


# ---------------------------------------------------------- gradients


def backward_both(f, cpu_args, ocl_args, rng):
    rc, ro = f(*cpu_args), f(*ocl_args)
    g = slot_values(rc.layout, 0, rng, DType.Float32)
    gc, go = pair(rc.layout, 0, g)
    rc.backward(gc)
    ro.backward(go)
    for c, o in zip(cpu_args, ocl_args, strict=True):
        assert o.grad is not None and type(o.grad.carrier) is OpenCL
        assert o.grad.layout == c.grad.layout
        np.testing.assert_allclose(logical(o.grad), logical(c.grad), rtol=1e-4, atol=1e-5)


UNARY_GRADS = {
    **{name: getattr(sw, name) for name in ACTIVATIONS},
    "mul": lambda t: sw.mul(t, -1.5),
    "pow": lambda t: sw.pow(t, 2.5),
    "pow2": lambda t: sw.pow(t, 3),
}


@SETTINGS
@given(data=st.data())
def test_gradients_against_cpu(data):
    need_runtime()
    name = data.draw(st.sampled_from(sorted(UNARY_GRADS) + BINARY + ["reduce"]))
    rank = 2 if name == "reduce" else data.draw(st.integers(1, 3))
    modes = data.draw(mode_shapes(rank))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    # Injective layouts (no broadcast): each leaf's gradient is one value.
    la, oa = data.draw(layout_of(modes, broadcast=False))
    va = [abs(v) + 0.5 for v in slot_values(la, oa, rng, DType.Float32)]
    ca, xa = pair(la, oa, va)
    if name in BINARY:
        lb, ob = data.draw(layout_of(modes, broadcast=False))
        vb = [abs(v) + 0.5 for v in slot_values(lb, ob, rng, DType.Float32)]
        cb, xb = pair(lb, ob, vb)
        backward_both(getattr(sw, name), (ca, cb), (xa, xb), rng)
    elif name == "reduce":
        backward_both(sw.reduce, (ca,), (xa,), rng)
    else:
        backward_both(UNARY_GRADS[name], (ca,), (xa,), rng)


@pytest.mark.parametrize("batched", [False, True])
def test_matmul_gradients_against_cpu(runtime, batched):
    rng = np.random.default_rng(3)
    if batched:
        la, lb = L([3, 4, 2], [1, 3, 12]), L([5, 4, 2], [4, 1, 20])
    else:
        la, lb = L([3, 4], [4, 1]), L([[2, 3], 4], [[1, 2], 6])
    ca, xa = pair(la, 0, slot_values(la, 0, rng, DType.Float32))
    cb, xb = pair(lb, 0, slot_values(lb, 0, rng, DType.Float32))

    def f(a, b):
        if batched:
            return a.carrier.dispatch_op("batched_matmul").forward(a, b)
        return sw.matmul(a, b)

    backward_both(f, (ca, cb), (xa, xb), rng)


# -------------------------------------- gradients by finite differences


def host_matrix(layout, offset, slots):
    """A rank-2 tensor's logical values as an (m, k) float64 array."""
    vals = np.array([slots[offset + layout(i)] for i in range(layout.size)], dtype=np.float64)
    return vals.reshape(-1, layout[0].size).T


def host_logical(t):
    """An OpenCL tensor's logical values as an array of its mode extents
    (rank 1 or 2), through a move to CPU."""
    vals = np.asarray(logical(t), dtype=np.float64)
    if len(t.layout) == 1:
        return vals
    return vals.reshape(-1, t.layout[0].size).T


def np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


def np_gelu(x):
    from math import erf, sqrt

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / sqrt(2.0)))


# name: (device expression, the same in float64 on the host, operands as
# (layout, offset, positive)); every expression ends in a reduce or a
# matmul of two-mode tensors, so the output is small.
FD_CASES = {
    "reduce(tanh(a) * a)": (
        lambda a: sw.reduce(sw.elementwise_mul(sw.tanh(a), a)),
        lambda a: (np.tanh(a) * a).sum(axis=1),
        [(L([3, 5], [5, 1]), 2, False)],
    ),
    "reduce(sigmoid(a + b) / b)": (
        lambda a, b: sw.reduce(sw.div(sw.sigmoid(sw.add(a, b)), b)),
        lambda a, b: (np_sigmoid(a + b) / b).sum(axis=1),
        [(L([4, 3], [1, 4]), 0, False), (L([4, [3]], [3, [1]]), 1, True)],
    ),
    "reduce(matmul(exp(0.5 a), b ** 2))": (
        lambda a, b: sw.reduce(sw.matmul(sw.exp(sw.mul(a, 0.5)), sw.pow(b, 2.0))),
        lambda a, b: (np.exp(0.5 * a) @ (b**2).T).sum(axis=1),
        [(L([3, 4], [4, 1]), 0, False), (L([[2, 2], 4], [[1, 8], 2]), 1, False)],
    ),
    "reduce(silu(a) - softplus(-1.5 b) + gelu(a - b))": (
        lambda a, b: sw.reduce(
            sw.add(sw.sub(sw.silu(a), sw.softplus(sw.mul(b, -1.5))), sw.gelu(sw.sub(a, b)))
        ),
        lambda a, b: (a * np_sigmoid(a) - np_softplus(-1.5 * b) + np_gelu(a - b)).sum(axis=1),
        [(L([2, 5], [1, 2]), 0, False), (L([2, 5], [5, 1]), 3, False)],
    ),
    # A long summed mode: the forward runs the two-pass reduction.
    "reduce(tanh(a)) over 4500": (
        lambda a: sw.reduce(sw.tanh(a)),
        lambda a: np.tanh(a).sum(axis=1),
        [(L([2, 4500], [1, 2]), 0, False)],
    ),
}


@pytest.mark.parametrize("name", sorted(FD_CASES))
def test_gradients_against_finite_differences(runtime, name):
    device_f, host_f, specs = FD_CASES[name]
    rng = np.random.default_rng(5)
    dev_args, host_args = [], []
    for layout, offset, positive in specs:
        v = rng.uniform(-1.5, 1.5, size=offset + layout.cosize)
        if positive:
            v = np.abs(v) + 0.5
        v = v.astype(np.float32).astype(np.float64)  # what the device holds
        host_args.append(host_matrix(layout, offset, v))
        dev_args.append(Tensor(OpenCL(0).new_like(v.tolist()), offset, layout))
    out = device_f(*dev_args)
    np.testing.assert_allclose(
        host_logical(device_f(*dev_args)), host_f(*host_args), rtol=1e-4, atol=1e-4
    )
    g_slots = rng.uniform(-1.0, 1.0, size=out.layout.cosize).astype(np.float32)
    g = Tensor(OpenCL(0).new_like(g_slots.tolist()), 0, out.layout)
    g_logical = np.array([g_slots[out.layout(i)] for i in range(out.layout.size)], dtype=np.float64)
    out.backward(g)

    def loss(args):
        return float(np.dot(g_logical, host_f(*args).reshape(-1, order="F")))

    h = 1e-6
    for k, t in enumerate(dev_args):
        assert type(t.grad.carrier) is OpenCL and t.grad.layout == t.layout
        got = host_logical(t.grad)
        want = np.zeros_like(host_args[k])
        # Every element of the small operands; 40 of the long one.
        cells = [(r, c) for r in range(want.shape[0]) for c in range(want.shape[1])]
        if len(cells) > 40:
            cells = [cells[i] for i in rng.choice(len(cells), 40, replace=False)]
        for r, c in cells:
            up = [a.copy() for a in host_args]
            down = [a.copy() for a in host_args]
            up[k][r, c] += h
            down[k][r, c] -= h
            want[r, c] = (loss(up) - loss(down)) / (2 * h)
            assert got[r, c] == pytest.approx(want[r, c], rel=2e-3, abs=2e-4), (name, k, r, c)


def test_grad_accumulates_on_device(runtime):
    layout = L([2, 3], [3, 1])
    c, o = pair(layout, 0, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    for t, side in ((c, 0), (o, 1)):
        sw.add(sw.exp(t), sw.mul(t, 2.0)).backward(pair(layout, 0, [1.0] * 6)[side])
        sw.mul(t, 3.0).backward(pair(layout, 0, [1.0] * 6)[side])
    assert type(o.grad.carrier) is OpenCL
    np.testing.assert_allclose(logical(o.grad), logical(c.grad), rtol=1e-6)


# ------------------------------------------------------------ refusals


def test_defined_operation_runs_through_its_reference(runtime):
    # An operation made with define_operation runs on OpenCL tensors
    # through its reference (built-in operations, so OpenCL kernels), and
    # back-propagates through its VJP, on the device; no kernel pack is
    # needed (packs serve definition-backed carriers, which OpenCL is not).
    import strideweave.functional as F
    from strideweave.carriers.operation_policy import (
        Arithmetic,
        OperandPlan,
        OperandRole,
        OperationPlan,
    )
    from strideweave.operation_definition import (
        OperandKind,
        OperandSpec,
        OperationSchema,
        OptionSpec,
        ResolvedInvocation,
        ResultSpec,
        define_operation,
    )

    def resolve(call):
        (x,) = call.operands
        plan = OperationPlan(
            call.definition.name,
            (OperandPlan(OperandRole.TENSOR, x.dtype(), x.dtype()),),
            Arithmetic.BINARY32,
            None,
            None,
            DType.Float32,
        )
        return ResolvedInvocation(call, plan, (ResultSpec(x.dtype(), x.layout.shape, x.layout),))

    def reference(inv):
        return F.tanh(F.mul(inv.operands[0], inv.options["factor"]))

    def vjp(ctx, cot):
        (c,) = cot
        x = ctx.invocation.operands[0]
        t = F.tanh(F.mul(x, ctx.invocation.options["factor"]))
        one_minus = F.sub(F.pow(t, 0.0), F.elementwise_mul(t, t))  # 1 - tanh^2
        return (F.mul(F.elementwise_mul(c, one_minus), ctx.invocation.options["factor"]),)

    schema = OperationSchema(
        [OperandSpec("x", OperandKind.TENSOR, True)], [OptionSpec("factor", 2.0)]
    )
    scaled_tanh = define_operation("opencl_test.scaled_tanh", schema, resolve, reference, vjp)
    vals = [-1.0, -0.25, 0.5, 1.5]
    x = Tensor(OpenCL(0).new_like(vals), 0, L([4], [1]))
    x.requires_grad = True
    y = scaled_tanh(x, factor=0.5)
    assert type(y.carrier) is OpenCL
    np.testing.assert_allclose(host_logical(y), np.tanh(0.5 * np.array(vals)), rtol=1e-5)
    y.backward(Tensor(OpenCL(0).new_like([1.0] * 4), 0, L([4], [1])))
    assert type(x.grad.carrier) is OpenCL
    want = 0.5 * (1 - np.tanh(0.5 * np.array(vals)) ** 2)
    np.testing.assert_allclose(host_logical(x.grad), want, rtol=1e-5)


def test_refusals(runtime):
    layout = L([2], [1])
    f32 = Tensor(OpenCL(2), 0, layout)
    b = Tensor(OpenCL(2, dtype=DType.Bool), 0, layout)
    with pytest.raises(TypeError, match="OpenCL operations do not compute on Bool"):
        sw.add(b, b)
    with pytest.raises(TypeError, match="Tensor backing carriers must match"):
        sw.add(f32, Tensor(CPU(2), 0, layout))
    with pytest.raises(TypeError, match="rhs must be backed by an OpenCL carrier"):
        f32.carrier.dispatch_op("add").forward(f32, Tensor(CPU(2), 0, layout))
    with pytest.raises(ValueError, match="Tensor layouts must match"):
        sw.add(f32, Tensor(OpenCL(3), 0, L([3], [1])))
    with pytest.raises(ValueError, match="two-mode layout"):
        sw.reduce(f32)
    with pytest.raises(ValueError, match="lhs must have a two-mode layout"):
        sw.matmul(f32, f32)
    two = Tensor(OpenCL(6), 0, L([2, 3], [1, 2]))
    with pytest.raises(ValueError, match="Matmul inner dimensions must match"):
        sw.matmul(two, Tensor(OpenCL(4), 0, L([2, 2], [1, 2])))
    with pytest.raises(TypeError, match="scalar must be a numerical scalar"):
        f32.carrier.dispatch_op("mul").forward(f32, f32)
    released = Tensor(OpenCL(2), 0, layout)
    released.carrier.release()
    with pytest.raises(RuntimeError, match="carrier is released"):
        sw.exp(released)
    with pytest.raises(NotImplementedError, match="OpenCL carrier does not support operation"):
        f32.carrier.dispatch_op("no_such_operation")


# --------------------------------------------- cache, asynchrony, faults


def test_kernel_cache_and_async(runtime):
    layout = L([3, 5], [5, 1])  # a specialisation no other test uses
    o = Tensor(OpenCL(0).new_like([float(i) for i in range(15)]), 0, layout)
    sw.tanh(o)
    entries, compiled, launched = _native._opencl_kernel_stats()
    r = sw.tanh(o)
    after = _native._opencl_kernel_stats()
    assert after[1] == compiled  # the same specialisation: no compile
    assert after[2] == launched + 1
    assert r[14] == pytest.approx(math.tanh(14.0))
    # Other extents and strides are another specialisation.
    sw.tanh(Tensor(o.carrier, 0, L([3, 4], [1, 4])))
    assert _native._opencl_kernel_stats()[1] == compiled + 1
    # Layout operations are views: nothing is compiled or launched.
    before = _native._opencl_kernel_stats()
    p = sw.permute(o, [1, 0])
    assert p.carrier is o.carrier
    assert _native._opencl_kernel_stats()[1:] == before[1:]
    # The launch returns before the device has run: a large exp submits
    # in much less time than it takes to complete.
    n = 1 << 22
    big = Tensor(OpenCL(n), 0, L([n], [1]))
    sw.exp(big)  # compiled and warmed
    big.carrier.synchronize()
    import time

    t0 = time.perf_counter()
    e = sw.exp(big)
    submit = time.perf_counter() - t0
    e.carrier.synchronize()
    total = time.perf_counter() - t0
    assert submit <= total
    assert e[n - 1] == 1.0


def test_injected_failures(runtime, no_faults):
    layout = L([4], [1])
    o = Tensor(OpenCL(0).new_like([1.0, 2.0, 3.0, 4.0]), 0, layout)
    before = list(o.carrier)
    # A specialisation no other test compiles: the compile fails.
    wide = Tensor(OpenCL(0).new_like([float(i) for i in range(32)]), 1, L([7], [5]))
    compiled = _native._opencl_kernel_stats()[1]
    _native._debug_opencl_fail("compile", 0)
    with pytest.raises(RuntimeError, match="kernel compilation failed \\(injected\\)"):
        sw.softplus(wide)
    assert _native._opencl_kernel_stats()[1] == compiled
    # And works once the hook is spent.
    assert sw.softplus(wide)[6] == pytest.approx(math.log1p(math.exp(31.0)) - 0.0, rel=1e-6)
    _native._debug_opencl_fail("enqueue", 0)
    with pytest.raises(RuntimeError, match="kernel launch failed \\(injected\\)"):
        sw.add(o, o)
    assert list(o.carrier) == before
    # A device scatter (the .grad copy) that fails at its wait changes
    # nothing and keeps the version.
    src = Tensor(OpenCL(0).new_like([9.0, 9.0, 9.0, 9.0]), 0, layout)
    v = o.carrier.version
    _native._debug_opencl_fail("wait", 0)
    with pytest.raises(RuntimeError, match="injected"):
        o.carrier.scatter(src, o, layout)
    assert list(o.carrier) == before and o.carrier.version == v
    o.carrier.scatter(src, o, layout)
    assert list(o.carrier) == [9.0] * 4 and o.carrier.version == v + 1
