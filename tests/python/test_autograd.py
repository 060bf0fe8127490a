"""Autograd (reference §3.2, §3.6, §4): grad mode, graph recording, the
reverse pass rules one by one, gradient accumulation, version checks and
every documented error."""

import threading

import pytest
import strideweave as sw
from helpers_ops import L, build, holes, logical, ones_like
from strideweave import CPU, DType, Generic, Operation, Tensor


def vec(values, kind="Generic", dtype=None):
    return build(kind, L([len(values)], [1]), 0, lambda p: values[p], dtype)


def scalar(value, kind="Generic"):
    return build(kind, L([1], [1]), 0, lambda p: value)


KINDS = ["Generic", "CPU"]


# --------------------------------------------------------------- grad mode


def test_grad_mode_switches():
    assert sw.is_grad_enabled() is True
    sw.set_grad_enabled(False)
    assert sw.is_grad_enabled() is False
    sw.set_grad_enabled(1)
    assert sw.is_grad_enabled() is True
    sw.set_grad_enabled(0)
    assert sw.is_grad_enabled() is False
    sw.set_grad_enabled([1])
    assert sw.is_grad_enabled() is True
    with pytest.raises(TypeError):
        sw.set_grad_enabled()


def test_no_grad_nests_and_restores():
    with sw.no_grad() as value:
        assert value is None and not sw.is_grad_enabled()
        with sw.no_grad():
            assert not sw.is_grad_enabled()
        assert not sw.is_grad_enabled()
    assert sw.is_grad_enabled()
    with pytest.raises(KeyError):
        with sw.no_grad():
            raise KeyError("x")
    assert sw.is_grad_enabled()
    sw.set_grad_enabled(False)
    with sw.no_grad():
        pass
    assert not sw.is_grad_enabled()
    sw.set_grad_enabled(True)


@pytest.mark.threads
def test_grad_mode_is_thread_local():
    results = {}
    started = threading.Event()
    release = threading.Event()

    def worker():
        results["initial"] = sw.is_grad_enabled()
        sw.set_grad_enabled(False)
        started.set()
        release.wait()
        results["after"] = sw.is_grad_enabled()
        x = vec([1.0])
        results["ctx"] = sw.exp(x).autograd_ctx

    with sw.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        assert not sw.is_grad_enabled()
    assert sw.is_grad_enabled()
    release.set()
    t.join()
    assert results == {"initial": True, "after": False, "ctx": None}
    assert sw.exp(vec([1.0])).autograd_ctx is not None


def test_no_grad_results_are_leaves():
    x = vec([2.0])
    with sw.no_grad():
        y = sw.mul(x, 3)
    assert y.autograd_ctx is None
    z = sw.mul(y, y)
    z.backward()
    assert logical(y.grad) == [12.0] and x.grad is None


# ---------------------------------------------------------- tensor state


def test_autograd_ctx_property():
    x = vec([1.0])
    op = Operation()
    x.autograd_ctx = op
    assert x.autograd_ctx is op
    x.autograd_ctx = None
    assert x.autograd_ctx is None
    with pytest.raises(TypeError):
        x.autograd_ctx = 5
    i = vec([1], "CPU", DType.Int32)
    with pytest.raises(
        RuntimeError, match="^autograd_ctx is not available for non-differentiable tensors$"
    ):
        i.autograd_ctx = op
    i.autograd_ctx = None
    a = vec([1], dtype=DType.Any)
    with pytest.raises(RuntimeError):
        a.autograd_ctx = op
    del x.autograd_ctx
    assert x.autograd_ctx is None


def test_autograd_ctx_non_differentiable_check_comes_first():
    # Any value, an Operation or not, meets the reference's RuntimeError on
    # a non-differentiable tensor (COMPATIBILITY entry 28).
    msg = "^autograd_ctx is not available for non-differentiable tensors$"
    for t in (vec([1, 2], dtype=DType.Any), vec([1], "CPU", DType.Int32)):
        for value in (object(), 5, "op", Operation()):
            with pytest.raises(RuntimeError, match=msg):
                t.autograd_ctx = value
            assert t.autograd_ctx is None
        t.autograd_ctx = None
    x = vec([1.0])
    with pytest.raises(TypeError, match="^autograd_ctx must be an Operation or None$"):
        x.autograd_ctx = object()
    assert x.autograd_ctx is None


def test_grad_property():
    x = vec([1.0])
    assert x.grad is None
    g = vec([5.0])
    x.grad = g
    assert x.grad is g
    x.grad = None
    assert x.grad is None
    with pytest.raises(TypeError):
        x.grad = [1.0]
    for t in (vec([1], "CPU", DType.Int32), vec([1], dtype=DType.Any)):
        with pytest.raises(
            RuntimeError, match="^grad is not available for non-differentiable tensors$"
        ):
            _ = t.grad
        with pytest.raises(
            RuntimeError, match="^grad is not available for non-differentiable tensors$"
        ):
            t.grad = g
        with pytest.raises(
            RuntimeError, match="^grad is not available for non-differentiable tensors$"
        ):
            t.grad = "x"
        t.grad = None


def test_retain_grad_errors():
    with pytest.raises(
        RuntimeError, match="^retain_grad is not available for non-differentiable tensors$"
    ):
        vec([1], dtype=DType.Any).retain_grad()
    with pytest.raises(TypeError):
        vec([1.0]).retain_grad(True, False)
    vec([1.0]).retain_grad(retain=False)


# ------------------------------------------------------------ backward API


def test_backward_errors():
    for t in (vec([1], "CPU", DType.Int32), vec([1], dtype=DType.Any)):
        with pytest.raises(
            RuntimeError, match="^backward is not available for non-differentiable tensors$"
        ):
            t.backward()
        with pytest.raises(RuntimeError, match="non-differentiable"):
            t.backward("not a tensor")
    x = vec([1.0, 2.0])
    with pytest.raises(
        ValueError, match="^Tensor.backward requires a gradient for non-scalar tensors$"
    ):
        x.backward()
    with pytest.raises(TypeError, match="^Tensor.backward requires a Tensor gradient$"):
        x.backward([1.0, 1.0])
    with pytest.raises(TypeError, match="^Tensor.backward requires a Tensor gradient$"):
        x.backward(gradient=1.0)
    with pytest.raises(ValueError, match="^Tensor gradient layout must match tensor layout$"):
        x.backward(vec([1.0]))
    with pytest.raises(TypeError):
        x.backward(vec([1.0, 1.0]), vec([1.0, 1.0]))


@pytest.mark.parametrize(
    "layout,ok",
    [
        (L([1], [1]), True),
        (L([1], [0]), True),
        (L([1], [7]), True),
        (L(1, 1), True),
        (L([1, 1], [1, 1]), False),
        (L([[1]], [[1]]), False),
    ],
)
def test_implicit_gradient_for_exact_scalars(layout, ok):
    x = build("Generic", layout, 0, lambda p: 3.0)
    y = sw.mul(x, x)
    if ok:
        y.backward()
        assert logical(x.grad) == [6.0]
    else:
        with pytest.raises(ValueError, match="requires a gradient for non-scalar tensors"):
            y.backward()


@pytest.mark.parametrize("kind", KINDS)
def test_implicit_gradient_uses_the_tensor_carrier(kind):
    x = scalar(2.0, kind)
    x.backward()
    assert logical(x.grad) == [1.0]
    assert type(x.grad.carrier) is type(x.carrier)


def test_explicit_gradient_carrier_and_dtype_are_not_checked():
    g = scalar(2.0, "Generic")
    g.backward(vec([1], "CPU", DType.Int32))
    assert logical(g.grad) == [1.0] and type(g.grad.carrier) is Generic
    x = scalar(2.0, "CPU")
    x.backward(vec([3], "CPU", DType.Int32))
    assert logical(x.grad) == [3.0] and x.grad.dtype() is DType.Float32
    # CPU backward kernels take CPU gradients only (reference §4.6).
    y = sw.mul(x, 3)
    with pytest.raises(TypeError, match="^gradient must be backed by a CPU carrier$"):
        y.backward(scalar(1.0, "Generic"))


def test_cpu_leaf_gets_a_cpu_grad_from_a_generic_gradient():
    x = scalar(2.0, "CPU")
    x.backward(scalar(3.0, "Generic"))
    assert logical(x.grad) == [3.0] and type(x.grad.carrier) is CPU


# ------------------------------------------------------ .grad accumulation


@pytest.mark.parametrize("kind", KINDS)
def test_first_gradient_is_a_detached_copy(kind):
    x = build(kind, L([2, 2], [1, 3]), 1, lambda p: float(p))
    g = build(kind, x.layout, 0, lambda p: 1.0)
    x.backward(g)
    assert x.grad is not g and x.grad.carrier is not g.carrier
    assert x.grad.layout == x.layout and x.grad.offset == 0
    assert x.grad.carrier.size() == x.layout.cosize
    assert all(v == (None if kind == "Generic" else 0.0) for v in holes(x.grad))
    g[0] = 10.0
    assert logical(x.grad) == [1.0, 1.0, 1.0, 1.0]
    grad = x.grad
    x.backward(ones_like(x))
    assert x.grad is grad and logical(grad) == [2.0, 2.0, 2.0, 2.0]


def test_repeated_backward_accumulates():
    x = vec([1.0, 2.0])
    y = sw.mul(x, x)
    for n in range(1, 4):
        y.backward(ones_like(y))
        assert logical(x.grad) == [2.0 * n, 4.0 * n]


def test_leaves_and_retained_non_leaves():
    x = vec([3.0])
    y = sw.mul(x, 2)
    z = sw.mul(y, y)
    z.backward()
    assert y.grad is None and z.grad is None and logical(x.grad) == [24.0]
    y.retain_grad()
    z.retain_grad()
    z.backward()
    assert logical(y.grad) == [12.0] and logical(z.grad) == [1.0]
    y.retain_grad(False)
    y.grad = None
    z.backward()
    assert y.grad is None and logical(x.grad) == [72.0]


# ------------------------------------------------------------ graph shapes


@pytest.mark.parametrize("kind", KINDS)
def test_add_same_input_twice(kind):
    x = vec([1.0, 2.0], kind)
    y = sw.add(x, x)
    y.backward(ones_like(y))
    assert logical(x.grad) == [2.0, 2.0]


@pytest.mark.parametrize("kind", KINDS)
def test_diamond(kind):
    x = vec([2.0], kind)
    a = sw.mul(x, 3)
    b = sw.exp(x)
    c = sw.mul(a, b)
    d = sw.add(c, a)
    calls = []

    class Spy(Operation):
        def _forward(self, t):
            return sw.mul(t, 1)

        def backward(self, gradient):
            calls.append(gradient[0])
            return [gradient]

    e = Spy().forward(d)
    e.backward()
    import math

    expected = 3 * math.exp(2) + 6 * math.exp(2) + 3
    assert x.grad[0] == pytest.approx(expected, rel=1e-6)
    assert calls == [1.0]


def test_each_operation_runs_once_with_the_summed_gradient():
    counts = {}

    class Counting(Operation):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def _forward(self, *inputs):
            return sw.add(inputs[0], inputs[-1]) if len(inputs) > 1 else sw.mul(inputs[0], 1)

        def backward(self, gradient):
            counts[self.name] = counts.get(self.name, 0) + 1
            return [gradient] * len(self.inputs())

    x = vec([1.0])
    shared = Counting("shared").forward(x)
    left = Counting("left").forward(shared)
    right = Counting("right").forward(shared)
    top = Counting("top").forward(left, right)
    top.backward()
    assert counts == {"shared": 1, "left": 1, "right": 1, "top": 1}
    assert logical(x.grad) == [2.0]


def test_doubling_chain_is_linear():
    x = vec([1.0])
    t = x
    for _ in range(60):
        t = sw.add(t, t)
    t.backward()
    assert x.grad[0] == 2.0**60


@pytest.mark.parametrize("kind", KINDS)
def test_deep_chain(kind):
    x = vec([1.0], kind)
    t = x
    for _ in range(3000):
        t = sw.mul(t, 1)
    t.backward()
    assert logical(x.grad) == [1.0]
    del t


def test_very_deep_chain_without_recursion():
    x = vec([1.0], "CPU")
    t = x
    for _ in range(100_000):
        t = sw.add(t, x)
    t.backward()
    assert logical(x.grad) == [100_001.0]
    del t


def test_operations_without_gradient_are_visited():
    calls = []

    class NoGrad(Operation):
        def _forward(self, x):
            return sw.mul(x, 1)

        def backward(self, gradient):
            calls.append("nograd")
            return [None]

    class Tail(Operation):
        def _forward(self, x):
            return sw.mul(x, 1)

        def backward(self, gradient):
            calls.append("tail")
            return [gradient]

    x = vec([1.0])
    y = Tail().forward(x)
    z = NoGrad().forward(y)
    w = sw.add(z, y)
    w.backward()
    assert calls == ["nograd", "tail"] or calls == ["tail", "nograd"][::-1]
    assert logical(x.grad) == [1.0]


def test_mixed_non_differentiable_inputs():
    a = vec([2], dtype=DType.Any)
    x = vec([3.0])
    y = sw.elementwise_mul(x, a)
    assert y.autograd_ctx.inputs() == (x, a)
    y.backward()
    assert logical(x.grad) == [2.0]
    with pytest.raises(RuntimeError):
        _ = a.grad


# ---------------------------------------------------------------- versions


@pytest.mark.parametrize("kind", KINDS)
def test_in_place_write_after_forward(kind):
    x = build(kind, L([2, 2], [1, 2]), 0, float)
    y = sw.elementwise_mul(x, x)
    x[0, 0] = 10.0
    with pytest.raises(
        RuntimeError,
        match=r"^A tensor needed for gradient computation was modified in-place: "
        r"expected version 0, got version 1$",
    ):
        y.backward(ones_like(y))


def test_write_through_another_view_invalidates():
    base = build("Generic", L([4], [1]), 0, float)
    v = base[1:3]
    y = sw.mul(v, v)
    base[0] = 5.0  # outside the view, same carrier
    with pytest.raises(RuntimeError, match="modified in-place"):
        y.backward(ones_like(y))
    base.carrier[3] = 1.0
    with pytest.raises(RuntimeError, match="expected version 0, got version 2"):
        y.backward(ones_like(y))


def test_versions_recorded_at_forward_time():
    x = vec([1.0])
    x[0] = 2.0
    y = sw.exp(x)
    assert y.autograd_ctx.input_versions() == (1,)
    y.backward()
    assert x.grad[0] == pytest.approx(7.38905609893065)


# -------------------------------------------------------- per-op gradients


@pytest.mark.parametrize("kind", KINDS)
def test_view_gradient_scatters(kind):
    x = build(kind, L([3, 4], [1, 3]), 0, float)
    v = x[1, 1:3]
    v.backward(ones_like(v))
    expected = [0.0] * 12
    for j in (1, 2):
        expected[1 + 3 * j] = 1.0
    assert logical(x.grad) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_permute_and_rearrange_gradients(kind):
    x = build(kind, L([2, 3], [1, 2]), 0, float)
    p = sw.permute(x, 1, 0)
    g = build(kind, p.layout, 0, lambda q: float(q))
    p.backward(g)
    assert [x.grad[i, j] for i in range(2) for j in range(3)] == [
        g[j, i] for i in range(2) for j in range(3)
    ]
    y = build(kind, L([2, 3], [1, 2]), 0, float)
    r = sw.rearrange(y, sw.Tree(sw.Node.id(1), sw.Node.Leaf, sw.Node.id(0)))
    gr = build(kind, r.layout, 0, lambda q: float(q) + 1)
    r.backward(gr)
    assert [y.grad[i, j] for i in range(2) for j in range(3)] == [
        gr[j, 0, i] for i in range(2) for j in range(3)
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_reduce_and_matmul_gradients(kind):
    x = build(kind, L([2, 3], [1, 2]), 0, float)
    r = sw.reduce(x)
    r.backward(build(kind, r.layout, 0, lambda p: [10.0, 20.0][p]))
    assert [x.grad[i, j] for i in range(2) for j in range(3)] == [10.0] * 3 + [20.0] * 3
    a = build(kind, L([2, 3], [1, 2]), 0, lambda p: p + 1.0)
    b = build(kind, L([2, 3], [3, 1]), 0, lambda p: p - 2.0)
    m = sw.matmul(a, b)
    g = build(kind, m.layout, 0, lambda p: p + 0.5)
    m.backward(g)
    for i in range(2):
        for k in range(3):
            assert a.grad[i, k] == pytest.approx(sum(g[i, j] * b[j, k] for j in range(2)))
            assert b.grad[i, k] == pytest.approx(sum(g[j, i] * a[j, k] for j in range(2)))


def test_cpu_backward_needs_cpu_gradients():
    x = vec([1.0], "CPU")
    op = sw.CPU(1).dispatch_op("exp")
    y = op.forward(x)
    with pytest.raises(TypeError, match="^gradient must be backed by a CPU carrier$"):
        op.backward(vec([1.0], "Generic"))
    (gx,) = op.backward(ones_like(y))
    assert gx.dtype() is DType.Float32


# ---------------------------------------------------- backwards_traversal


def test_backwards_traversal():
    x = vec([2.0])
    y = sw.mul(x, 3)
    y.retain_grad()
    Tensor.backwards_traversal(vec([1.0]), y.autograd_ctx)
    assert logical(x.grad) == [3.0] and y.grad is None
    Tensor.backwards_traversal(vec([1.0]), None)
    Tensor.backwards_traversal(gradient=vec([2.0]), operation=y.autograd_ctx)
    assert logical(x.grad) == [9.0]
    with pytest.raises(TypeError):
        Tensor.backwards_traversal(vec([1.0]), "op")
    with pytest.raises(TypeError, match="^Tensor.backward requires a Tensor gradient$"):
        Tensor.backwards_traversal(1.0, y.autograd_ctx)


GRADIENT_SIZE_CASES = {
    "add": (1, lambda x, y: x + y),
    "sub": (1, lambda x, y: x - y),
    "mul": (1, lambda x, y: x * 3),
    "neg": (1, lambda x, y: -x),
    "elementwise_mul": (1, lambda x, y: x * y),
    "div": (1, lambda x, y: x / y),
    "pow": (1, lambda x, y: x**2),
    **{
        name: (1, lambda x, y, name=name: getattr(sw, name)(x))
        for name in (
            "exp",
            "relu",
            "sigmoid",
            "tanh",
            "gelu",
            "silu",
            "softplus",
            "elu",
            "leaky_relu",
        )
    },
    "reduce": (2, lambda x, y: sw.functional.reduce(x, "i j -> i")),
    "matmul": (2, lambda x, y: x @ y),
    "batched_matmul": (3, lambda x, y: sw.einsum(x, y, "i k b, j k b -> i j b")),
}

WRONG_GRADIENTS = [
    L([7], [1]),
    L([1], [1]),
    L([2, 3], [1, 2]),
    L([3, 2], [1, 3]),
    L([2, 2, 3], [1, 2, 4]),
    L([2, 2, 2, 2], [1, 2, 4, 8]),
]


@pytest.mark.parametrize("name", sorted(GRADIENT_SIZE_CASES))
def test_backwards_traversal_gradient_of_the_wrong_size(name):
    # Generic refuses a gradient that does not fit the result with the CPU
    # kernels' own errors (it read what it needed of an oversized one).
    modes, f = GRADIENT_SIZE_CASES[name]
    layout = {1: L([2], [1]), 2: L([2, 2], [1, 2]), 3: L([2, 2, 1], [1, 2, 4])}[modes]
    outcomes = {}
    for kind in KINDS:
        x = build(kind, layout, 0, lambda p: 1.0 + p)
        y = build(kind, layout, 0, lambda p: 2.0 + p)
        r = f(x, y)
        op = r.autograd_ctx
        if name == "batched_matmul":
            op = op.inputs()[0].autograd_ctx
        assert op is not None
        got = []
        for gl in WRONG_GRADIENTS:
            if gl.shape.logical_size == r.size() and modes == 1:
                continue
            g = build(kind, gl, 0, lambda p: 1.0)
            try:
                Tensor.backwards_traversal(g, op)
                got.append(None)
            except Exception as e:
                got.append((type(e), str(e)))
        outcomes[kind] = got
    assert None not in outcomes["CPU"]
    assert outcomes["Generic"] == outcomes["CPU"]
    assert any("elements but" in m or "gemm:" in m for _, m in outcomes["Generic"])


def test_graph_survives_dropping_intermediates():
    x = vec([2.0])
    y = sw.exp(sw.mul(sw.add(x, x), 2))
    import gc

    gc.collect()
    y.backward()
    import math

    assert x.grad[0] == pytest.approx(4 * math.exp(8))
