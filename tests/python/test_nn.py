"""strideweave.nn (reference §18): Linear, the activation modules, MSELoss,
SGD and nn.init, with their validation messages, finite-difference
gradients and a training run that lowers the loss."""

import math
import random
import subprocess
import sys

import pytest
import strideweave as sw
import strideweave.friendly as F
import strideweave.nn as nn
from helpers_ops import L
from strideweave.nn import init

ACTIVATIONS = {
    "ReLU": sw.relu,
    "Sigmoid": sw.sigmoid,
    "Tanh": sw.tanh,
    "GELU": sw.gelu,
    "SiLU": sw.silu,
    "Softplus": sw.softplus,
    "ELU": sw.elu,
    "LeakyReLU": sw.leaky_relu,
}


def test_exports():
    assert nn.__all__ == [
        "ELU",
        "GELU",
        "SGD",
        "LeakyReLU",
        "Linear",
        "MSELoss",
        "ReLU",
        "SiLU",
        "Sigmoid",
        "Softplus",
        "Tanh",
        "Adam",
    ]
    assert nn.__doc__ and init.__doc__
    assert init.__all__ == ["fill_", "kaiming_uniform_"]
    assert "init" not in nn.__all__ and nn.init is init
    for name in nn.__all__:
        assert getattr(nn, name).__doc__


def test_submodules_are_not_imported_by_the_package():
    code = (
        "import sys, strideweave; "
        "print('strideweave.nn' in sys.modules, 'strideweave.friendly' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ----------------------------------------------------------------- Linear


def test_linear_parameters_and_initialisation_order():
    layer = nn.Linear(3, 2, rng=random.Random(7))
    assert isinstance(layer, sw.Module)
    assert layer.in_features == 3 and layer.out_features == 2
    w, b = layer.weight, layer.bias
    assert isinstance(w, sw.Parameter) and isinstance(b, sw.Parameter)
    assert isinstance(w.carrier, sw.CPU) and w.dtype() == sw.DType.Float32
    assert w.layout == F.column_major(2, 3) and w.offset == 0 and w.carrier.size() == 6
    assert b.layout == F.column_major(2, 1) and b.carrier.size() == 2
    assert layer.parameters() == (w, b)
    assert [n for n, _ in layer.get_named_parameters()] == ["weight", "bias"]
    rng = random.Random(7)
    bound = 1 / math.sqrt(3)
    expected = [rng.uniform(-bound, bound) for _ in range(8)]
    got = F.to_list(w) + F.to_list(b)
    assert got == pytest.approx(expected, rel=1e-6, abs=1e-7)
    assert all(abs(v) <= bound for v in got)


def test_linear_without_bias_and_name():
    layer = nn.Linear(2, 4, bias=False, rng=random.Random(0), name="proj")
    assert layer.bias is None and layer.parameters() == (layer.weight,)
    assert layer.name == "proj"
    root = sw.Module()
    root.layer = layer
    assert [n for n, _ in root.get_named_parameters()] == ["proj.weight"]


def test_linear_default_rng_is_fresh():
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    assert F.to_list(a.weight) != F.to_list(b.weight)


@pytest.mark.parametrize(("i", "o"), [(0, 1), (1, 0), (-1, 2), (2, -3)])
def test_linear_rejects_non_positive_features(i, o):
    with pytest.raises(ValueError, match="^in_features and out_features must be positive$"):
        nn.Linear(i, o)


def test_linear_forward_values_and_layout():
    layer = nn.Linear(3, 2, rng=random.Random(1))
    x = F.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.0, 0.0, 2.0], [4.0, -2.0, 1.0]])
    y = layer(x)
    assert y.layout == F.column_major(4, 2)
    for n in range(4):
        for o in range(2):
            expected = sum(x[n, k] * layer.weight[o, k] for k in range(3)) + layer.bias[o, 0]
            assert y[n, o] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    plain = nn.Linear(3, 2, bias=False, rng=random.Random(1))
    assert F.to_list(plain(x)) == pytest.approx(
        [sum(x[n, k] * plain.weight[o, k] for k in range(3)) for o in range(2) for n in range(4)],
        rel=1e-5,
    )


def test_linear_input_validation():
    layer = nn.Linear(2, 3, rng=random.Random(0))
    msg = "^tensor must be a flat two-mode tensor$"
    with pytest.raises(ValueError, match=msg):
        layer(F.zeros(4))
    with pytest.raises(ValueError, match=msg):
        layer(F.zeros(4, 2, 1))
    with pytest.raises(ValueError, match=msg):
        layer(sw.Tensor(sw.CPU(8), 0, L([[2, 2], 2], [[1, 2], 4])))
    with pytest.raises(ValueError, match="^tensor has 3 input features, expected 2$"):
        layer(F.zeros(4, 3))
    generic = sw.Tensor(sw.Generic([0.0] * 8), 0, F.column_major(4, 2))
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        layer(generic)
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        layer([[1.0, 2.0]])


def test_linear_accepts_row_major_flat_inputs():
    layer = nn.Linear(2, 1, rng=random.Random(0))
    x = F.tensor([1.0, 2.0, 3.0, 4.0], layout=F.row_major(2, 2))
    y = layer(x)
    assert y.layout == F.column_major(2, 1)
    expected = x[1, 0] * layer.weight[0, 0] + x[1, 1] * layer.weight[0, 1] + layer.bias[0, 0]
    assert y[1, 0] == pytest.approx(expected, rel=1e-6)


def _numeric_gradient(loss_of, tensor, h=1e-2):
    """Central differences of loss_of() over every logical element of tensor."""
    grads = []
    for i in range(tensor.size()):
        old = tensor[i]
        with sw.no_grad():
            tensor[i] = old + h
            up = loss_of()
            tensor[i] = old - h
            down = loss_of()
            tensor[i] = old
        grads.append((up - down) / (2 * h))
    return grads


def test_linear_and_mse_gradients_match_finite_differences():
    rng = random.Random(3)
    layer = nn.Linear(3, 2, rng=rng)
    x = F.rand(5, 3, rng=rng)
    target = F.randn(5, 2, rng=rng)
    loss_fn = nn.MSELoss()

    def loss_value():
        return F.item(loss_fn(layer(x), target))

    loss = loss_fn(layer(x), target)
    loss.backward()
    for tensor in (layer.weight, layer.bias, x, target):
        analytic = F.to_list(tensor.grad)
        numeric = _numeric_gradient(loss_value, tensor)
        assert analytic == pytest.approx(numeric, rel=2e-2, abs=2e-3)


def test_bias_gradient_sums_the_upstream_gradient_over_the_batch():
    layer = nn.Linear(2, 3, rng=random.Random(0))
    x = F.rand(4, 2, rng=random.Random(1))
    y = layer(x)
    upstream = F.randn(4, 3, rng=random.Random(2))
    y.backward(upstream)
    for o in range(3):
        expected = sum(upstream[n, o] for n in range(4))
        assert layer.bias.grad[o, 0] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert layer.bias.grad.layout == layer.bias.layout


# ------------------------------------------------------------ activations


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_modules_wrap_their_functional_op(name):
    cls = getattr(nn, name)
    module = cls()
    assert isinstance(module, sw.Module) and module.parameters() == ()
    assert cls(name="act").name == "act"
    with pytest.raises(TypeError):
        cls(1)
    x = F.tensor([[-1.5, 0.25], [2.0, -0.5]])
    y = module(x)
    ref = ACTIVATIONS[name](x)
    assert y.layout == x.layout
    assert F.to_list(y) == F.to_list(ref)
    assert type(y.autograd_ctx) is type(ref.autograd_ctx)
    # Any carrier and layout the op accepts: a one-mode Generic tensor.
    g = sw.Tensor(sw.Generic([-1.0, 0.5, 2.0]), 0, L([3], [1]))
    gy = module(g)
    assert isinstance(gy.carrier, sw.Generic)
    assert [gy[i] for i in range(3)] == [ACTIVATIONS[name](g)[i] for i in range(3)]
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        module([1.0])


# ---------------------------------------------------------------- MSELoss


def test_mse_value_layout_and_implicit_backward():
    p = F.tensor([[1.0, 2.0], [3.0, 4.0]])
    t = F.tensor([[0.0, 2.0], [1.0, 8.0]])
    loss = nn.MSELoss()(p, t)
    assert loss.layout == sw.Layout(sw.Shape(1), sw.Stride(1))
    assert F.item(loss) == pytest.approx((1 + 0 + 4 + 16) / 4)
    loss.backward()
    assert F.to_list(p.grad) == pytest.approx([0.5, 1.0, 0.0, -2.0])
    # The target is an operation input too, so a leaf target gets a gradient.
    assert F.to_list(t.grad) == pytest.approx([-0.5, -1.0, 0.0, 2.0])


def test_mse_on_generic():
    layout = F.column_major(2, 1)
    p = sw.Tensor(sw.Generic([1.0, 3.0]), 0, layout)
    t = sw.Tensor(sw.Generic([0.0, 1.0]), 0, layout)
    loss = nn.MSELoss()(p, t)
    assert isinstance(loss.carrier, sw.Generic) and F.item(loss) == 2.5
    loss.backward()
    assert F.to_list(p.grad) == [1.0, 2.0]


def test_mse_validation():
    loss = nn.MSELoss()
    with pytest.raises(ValueError, match="^prediction must be a flat two-mode tensor$"):
        loss(F.zeros(3), F.zeros(3))
    nested = sw.Tensor(sw.CPU(4), 0, L([[2, 2], 1], [[1, 2], 4]))
    with pytest.raises(ValueError, match="^prediction must be a flat two-mode tensor$"):
        loss(nested, nested)
    with pytest.raises(ValueError, match="^prediction and target layouts must match$"):
        loss(F.zeros(2, 3), F.zeros(3, 2))
    with pytest.raises(ValueError, match="^prediction and target layouts must match$"):
        loss(F.zeros(2, 3), F.tensor(list(range(6)), layout=F.row_major(2, 3)))
    generic = sw.Tensor(sw.Generic([0.0] * 6), 0, F.column_major(2, 3))
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        loss(F.zeros(2, 3), generic)
    with pytest.raises(TypeError, match="^prediction must be a Tensor$"):
        loss(1.0, F.zeros(2, 3))
    with pytest.raises(TypeError, match="^target must be a Tensor$"):
        loss(F.zeros(2, 3), 1.0)


# -------------------------------------------------------------------- SGD


def test_sgd_validation():
    p = F.zeros(2)
    for lr in (0, -0.1, 0.0):
        with pytest.raises(ValueError, match="^lr must be positive$"):
            nn.SGD([p], lr=lr)
    with pytest.raises(TypeError, match="^SGD parameters must be Tensors$"):
        nn.SGD([p, 1.0], lr=0.1)
    opt = nn.SGD(iter([p]), lr=1)
    assert opt.lr == 1.0 and isinstance(opt.lr, float)
    opt.lr = 0.5
    assert opt.lr == 0.5


def test_sgd_step_updates_in_place_and_bumps_versions():
    w = F.tensor([[1.0, 2.0], [3.0, 4.0]])
    carrier = w.carrier
    F.sum(w * 2.0).backward()
    opt = nn.SGD([w], lr=0.25)
    before = w.version
    opt.step()
    assert w.carrier is carrier
    assert F.to_list(w) == [0.5, 2.5, 1.5, 3.5]
    assert w.version > before
    assert F.to_list(w.grad) == [2.0] * 4  # step leaves gradients alone
    opt.step()  # the same gradient again
    assert F.to_list(w) == [0.0, 2.0, 1.0, 3.0]


def test_sgd_computes_in_double_then_stores_float32():
    w = F.tensor([1.0])
    F.sum(w * 0.3).backward()
    nn.SGD([w], lr=0.1).step()
    g = w.grad[0]
    import struct

    expected = struct.unpack("f", struct.pack("f", 1.0 - 0.1 * g))[0]
    assert w[0] == expected


def test_sgd_writes_through_the_parameter_layout():
    carrier = sw.CPU(10)
    w = sw.Parameter(carrier, 1, L([2, 2], [1, 4]))
    for i in range(4):
        w[i] = float(i + 1)
    F.sum(w).backward()
    nn.SGD([w], lr=1.0).step()
    assert F.to_list(w) == [0.0, 1.0, 2.0, 3.0]
    assert [carrier[i] for i in (0, 3, 4, 7, 8, 9)] == [0.0] * 6


def test_sgd_works_on_generic_one_mode_parameters():
    w = sw.Parameter(sw.Generic([1.0, 2.0, 3.0]), 0, L([3], [1]))
    F.sum(w).backward()
    nn.SGD([w], lr=0.5).step()
    assert F.to_list(w) == [0.5, 1.5, 2.5]


def test_sgd_skips_parameters_without_gradients_and_zero_grad():
    a, b = F.tensor([1.0]), F.tensor([1.0])
    F.sum(a * 3.0).backward()
    opt = nn.SGD([a, b], lr=0.1)
    vb = b.version
    opt.step()
    assert b[0] == 1.0 and b.version == vb
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_gradients_accumulate_until_zero_grad():
    w = F.tensor([1.0, 1.0])
    opt = nn.SGD([w], lr=0.1)
    F.sum(w * 2.0).backward()
    F.sum(w * 3.0).backward()
    assert F.to_list(w.grad) == [5.0, 5.0]
    opt.zero_grad()
    F.sum(w * 2.0).backward()
    assert F.to_list(w.grad) == [2.0, 2.0]


def test_graph_built_before_a_step_cannot_backward_after_it():
    w = F.tensor([1.0, 2.0])
    loss = F.sum(sw.elementwise_mul(w, w))
    second = F.sum(sw.elementwise_mul(w, w))
    loss.backward()
    nn.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified in-place"):
        second.backward()


def test_sgd_rejects_non_differentiable_parameters():
    w = F.tensor([1, 2], dtype=sw.DType.Int32)
    opt = nn.SGD([w], lr=0.1)
    with pytest.raises(RuntimeError):
        opt.step()


def test_failed_step_changes_nothing():
    a = F.tensor([1.0])
    frozen = sw.Tensor(sw.CPU(1, mutable=False), 0, L([1], [1]))
    F.sum(a).backward()
    frozen.grad = F.tensor([1.0])
    opt = nn.SGD([a, frozen], lr=0.5)
    with pytest.raises(RuntimeError, match="^Carrier is not mutable$"):
        opt.step()
    assert a[0] == 1.0
    # A gradient whose size differs from its parameter's is refused before
    # any parameter is written.
    c = F.tensor([1.0, 2.0, 3.0])
    c.grad = F.tensor([1.0, 1.0])
    opt = nn.SGD([a, c], lr=0.5)
    with pytest.raises(ValueError, match="^gradient size must match parameter size$"):
        opt.step()
    assert a[0] == 1.0 and F.to_list(c) == [1.0, 2.0, 3.0]
    # Released storage, of a parameter or of its gradient, likewise.
    for released in ("parameter", "gradient"):
        d = F.tensor([1.0, 2.0])
        d.grad = F.tensor([1.0, 1.0])
        (d if released == "parameter" else d.grad).carrier.release()
        opt = nn.SGD([a, d], lr=0.5)
        with pytest.raises(RuntimeError, match="^Carrier is released$"):
            opt.step()
        assert a[0] == 1.0


# ------------------------------------------------------------------- init


def test_fill():
    t = F.zeros(2, 3)
    init.fill_(t, 1.5)
    assert F.to_list(t) == [1.5] * 6
    view = sw.Tensor(t.carrier, 1, L([2], [2]))
    init.fill_(view, -1.0)
    assert [t.carrier[i] for i in range(6)] == [1.5, -1.0, 1.5, -1.0, 1.5, 1.5]
    with pytest.raises(TypeError, match="^parameter must be a Tensor$"):
        init.fill_([0.0], 1.0)


def test_kaiming_uniform():
    t = F.zeros(3, 2)
    init.kaiming_uniform_(t, 4, rng=random.Random(9))
    rng = random.Random(9)
    assert F.to_list(t) == pytest.approx([rng.uniform(-0.5, 0.5) for _ in range(6)], rel=1e-6)
    for bad in (0, -3):
        with pytest.raises(ValueError, match="^fan_in must be positive$"):
            init.kaiming_uniform_(t, bad, rng=random.Random(0))
    with pytest.raises(TypeError):
        init.kaiming_uniform_(t, 4)  # rng is a required keyword
    with pytest.raises(TypeError):
        init.kaiming_uniform_(t, 4, random.Random(0))
    with pytest.raises(TypeError, match="^parameter must be a Tensor$"):
        init.kaiming_uniform_(None, 4, rng=random.Random(0))


# --------------------------------------------------------------- training


class TinyNet(sw.Module):
    def __init__(self):
        super().__init__()
        rng = random.Random(4)
        self.first = nn.Linear(2, 8, rng=rng)
        self.act = nn.SiLU()
        self.second = nn.Linear(8, 1, rng=rng)

    def forward(self, x):
        return self.second(self.act(self.first(x)))


def test_tiny_training_run_lowers_the_loss():
    rng = random.Random(11)
    rows = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(16)]
    x = F.tensor(rows)
    target = F.tensor([[0.5 * a - b] for a, b in rows])
    model = TinyNet()
    assert [n for n, _ in model.get_named_parameters()] == [
        "first.weight",
        "first.bias",
        "second.weight",
        "second.bias",
    ]
    opt = nn.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(60):
        loss = loss_fn(model(x), target)
        losses.append(F.item(loss))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert losses[-1] < 0.5 * losses[0]
    assert all(math.isfinite(v) for v in losses)


def test_training_step_survives_allocation_failures():
    """Every allocation of a training step may fail: a clean MemoryError,
    no leak, and parameters changed only by a step that completed."""
    import gc

    from strideweave import _native

    rng = random.Random(5)
    x = F.rand(4, 2, rng=rng)
    target = F.rand(4, 1, rng=rng)
    model = TinyNet()
    opt = nn.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()

    def step():
        loss = loss_fn(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def reset():
        opt.zero_grad()
        x.grad = None
        target.grad = None

    def live():
        # Reference counting frees a failed step; collect only if it did not.
        count = _native._debug_live_allocs()
        if count != base:
            gc.collect()
            count = _native._debug_live_allocs()
        return count

    step()
    reset()
    gc.collect()
    base = _native._debug_live_allocs()
    for n in range(2000):
        before = [F.to_list(p) for p in model.parameters()]
        _native._debug_fail_alloc_after(n)
        try:
            step()
            failed = False
        except MemoryError:
            failed = True
        finally:
            _native._debug_fail_alloc_after(-1)
        reset()
        assert live() == base, f"leak after failure {n}"
        if failed:
            assert [F.to_list(p) for p in model.parameters()] == before
            continue
        assert n > 0
        assert [F.to_list(p) for p in model.parameters()] != before
        return
    raise AssertionError("the step still failed after 2000 allocations")


def test_sgd_step_on_cpu_is_one_write_per_parameter():
    # One library call over the whole parameter: the version rises once,
    # not once per element as element writes did.
    w = F.tensor([[1.0, 2.0], [3.0, 4.0]])
    F.sum(w * 2.0).backward()
    before = w.version
    nn.SGD([w], lr=0.25).step()
    assert w.version == before + 1
    assert F.to_list(w) == [0.5, 2.5, 1.5, 3.5]


def test_sgd_step_with_a_gradient_of_another_layout():
    # The gradient's strides and offset differ from the parameter's: the
    # step pairs elements by logical position.
    w = sw.Parameter(sw.CPU(4), 0, L([2, 2], [1, 2]))
    for i in range(4):
        w[i] = float(i)
    g = sw.Tensor(sw.CPU(6), 2, L([2, 2], [2, 1]))
    for i in range(4):
        g[i] = float(10 * (i + 1))
    w.grad = g
    nn.SGD([w], lr=0.1).step()
    assert F.to_list(w) == pytest.approx([-1.0, -1.0, -1.0, -1.0])


def test_sgd_step_of_a_large_parameter():
    # Large enough for the step to run without the GIL.
    n = 1 << 20
    w = F.ones(n)
    w.grad = F.ones(n)
    nn.SGD([w], lr=0.5).step()
    assert w[0] == 0.5 and w[n - 1] == 0.5


def test_axpy_errors():
    from strideweave._native import _axpy

    x = F.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="^y must be a Tensor$"):
        _axpy(1.0, 1.0, x)
    with pytest.raises(TypeError, match="^x must be a Tensor$"):
        _axpy(x, 1.0, None)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        _axpy(x, 1.0)
    with pytest.raises(TypeError):
        _axpy(x, "one", x)
    with pytest.raises(TypeError, match="axpy needs Float32 tensors"):
        _axpy(F.tensor([1, 2], dtype=sw.DType.Int32), 1.0, x)
    with pytest.raises(ValueError, match="axpy operands must have the same shape"):
        _axpy(x, 1.0, F.tensor([1.0, 2.0, 3.0]))
    y = F.tensor([1.0, 2.0])
    y.carrier.release()
    with pytest.raises(RuntimeError, match="Carrier is released"):
        _axpy(y, 1.0, x)
    assert F.to_list(x) == [1.0, 2.0]


def _adam_reference(p, grads, lr, betas, eps, weight_decay):
    """Adam by the formula, in NumPy float64, one gradient per step."""
    import numpy as np

    p = np.array(p, dtype=np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, start=1):
        g = np.array(g, dtype=np.float64) + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return p


@pytest.mark.parametrize("carrier", ["cpu", "generic"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adam_matches_a_numpy_reference(carrier, weight_decay):
    rng = random.Random(7)
    start = [rng.uniform(-1, 1) for _ in range(6)]
    grads = [[rng.uniform(-2, 2) for _ in range(6)] for _ in range(4)]
    if carrier == "cpu":
        w = F.tensor(start)
    else:
        w = sw.Parameter(sw.Generic(list(start)), 0, L([6], [1]))
    opt = nn.Adam([w], lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=weight_decay)
    for g in grads:
        if carrier == "cpu":
            w.grad = F.tensor(g)
        else:
            w.grad = sw.Tensor(sw.Generic(list(g)), 0, L([6], [1]))
        opt.step()
    got = [w[i] for i in range(6)]
    assert got == pytest.approx(
        list(_adam_reference(start, grads, 0.05, (0.8, 0.99), 1e-6, weight_decay)),
        rel=1e-5,
        abs=1e-6,
    )


def test_adam_matches_torch():
    torch = pytest.importorskip("torch")
    w = F.tensor([[0.5, -1.0], [2.0, 0.25]])
    tw = torch.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    opt = nn.Adam([w], lr=0.1, weight_decay=0.01)
    topt = torch.optim.Adam([tw], lr=0.1, weight_decay=0.01)
    for k in range(5):
        w.grad = F.tensor([[1.0 * k, -2.0], [0.5, 3.0 - k]])
        tw.grad = torch.tensor([[1.0 * k, -2.0], [0.5, 3.0 - k]])
        opt.step()
        topt.step()
    got = [w[i] for i in range(4)]
    want = tw.detach().T.reshape(-1).tolist()  # column-major like F.tensor
    assert got == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_adam_steps_once_per_parameter_and_keeps_state():
    a, b = F.tensor([1.0, 2.0]), F.tensor([3.0])
    opt = nn.Adam([a, b], lr=0.1)
    a.grad = F.tensor([1.0, 1.0])
    va = a.version
    opt.step()  # b has no gradient: untouched
    assert a.version == va + 1 and b[0] == 3.0
    assert opt._steps == [1, 0]
    b.grad = F.tensor([1.0])
    opt.step()
    assert opt._steps == [2, 1]
    assert b[0] == pytest.approx(2.9)
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_adam_validation_and_failed_steps():
    p = F.zeros(2)
    with pytest.raises(TypeError, match="^Adam parameters must be Tensors$"):
        nn.Adam([p, 1.0])
    for kwargs, message in [
        ({"lr": 0}, "^lr must be positive$"),
        ({"betas": (1.0, 0.9)}, r"^betas must be in \[0, 1\)$"),
        ({"betas": (0.9, -0.1)}, r"^betas must be in \[0, 1\)$"),
        ({"eps": -1e-8}, "^eps must be non-negative$"),
        ({"weight_decay": -1}, "^weight_decay must be non-negative$"),
    ]:
        with pytest.raises(ValueError, match=message):
            nn.Adam([p], **kwargs)
    a, b = F.tensor([1.0]), F.tensor([1.0, 2.0])
    a.grad = F.tensor([1.0])
    b.grad = F.tensor([1.0])  # wrong size: nothing is written
    opt = nn.Adam([a, b], lr=0.1)
    with pytest.raises(ValueError, match="^gradient size must match parameter size$"):
        opt.step()
    assert a[0] == 1.0 and opt._steps == [0, 0]
