"""What a PyTorch user reaches for first: printing, the attributes people type,
scalars beside + - * /, elementwise operations on mixed layouts, and element
reads outside the domain (additions beyond the reference)."""

import numpy as np
import pytest
import strideweave as sw
import strideweave.nn as nn
from strideweave import (
    CPU,
    Evictable,
    FileBacked,
    Generic,
    Layout,
    Module,
    Parameter,
    Shape,
    Stride,
    Tensor,
)
from strideweave.tensor import TensorIndexError


def L(shape, stride):
    return Layout(Shape(*shape), Stride(*stride))


def cpu(values, shape, stride, offset=0):
    return Tensor(CPU(len(values)).new_like(values), offset, L(shape, stride))


def gen(values, shape, stride):
    return Tensor(Generic(list(values)), 0, L(shape, stride))


COL = cpu([1, 2, 3, 4, 5, 6], (2, 3), (1, 2))  # [[1, 3, 5], [2, 4, 6]]


# --------------------------------------------------------------- printing


def test_repr_compact():
    assert repr(COL) == (
        "Tensor([[1., 3., 5.],\n        [2., 4., 6.]], "
        "dtype=Float32, carrier=CPU, layout=(2,3):(1,2))"
    )
    assert str(COL) == "[[1., 3., 5.],\n [2., 4., 6.]]"


def test_repr_strided_and_fractions():
    t = cpu([1, 2, 3, 4, 5], (2,), (2,), offset=1)
    assert repr(t) == "Tensor([2., 4.], dtype=Float32, carrier=CPU, layout=2:2)"
    assert str(COL / 4) == "[[0.2500, 0.7500, 1.2500],\n [0.5000, 1.0000, 1.5000]]"


def test_repr_hierarchical():
    t = cpu(list(range(12)), ([2, 2], 3), ([1, 2], 4))
    assert repr(t) == (
        "Tensor([[ 0.,  4.,  8.],\n        [ 1.,  5.,  9.],\n        [ 2.,  6., 10.],\n"
        "        [ 3.,  7., 11.]], dtype=Float32, carrier=CPU, layout=((2,2),3):((1,2),4), "
        "hierarchical: values by top-level modes (4, 3))"
    )


def test_repr_broadcast():
    t = cpu([7], (2, 3), (0, 0))
    assert repr(t) == (
        "Tensor([[7., 7., 7.],\n        [7., 7., 7.]], "
        "dtype=Float32, carrier=CPU, layout=(2,3):(0,0))"
    )


def test_repr_abbreviates_large_tensors():
    t = Tensor(CPU(2000), 0, L((2000,), (1,)))
    assert (
        repr(t)
        == "Tensor([0., 0., 0., ..., 0., 0., 0.], dtype=Float32, carrier=CPU, layout=2000:1)"
    )
    assert str(Tensor(CPU(1000), 0, L((1000,), (1,)))).count("0.") == 1000


def test_repr_released_evicted_generic_file(tmp_path):
    c = CPU(2).new_like([1, 2])
    t = Tensor(c, 0, L((2,), (1,)))
    c.release()
    assert repr(t) == "Tensor(<released>, dtype=Float32, carrier=CPU, layout=2:1)"
    assert str(t) == "<released>"
    assert repr(c) == "CPU(size=0, dtype=Float32, released)"
    e = Evictable(CPU(3).new_like([1, 2, 3]), CPU(3))
    te = Tensor(e, 0, L((3,), (1,)))
    assert repr(te) == "Tensor([1., 2., 3.], dtype=Float32, carrier=Evictable, layout=3:1)"
    e.evict()
    assert repr(te) == "Tensor(<evicted>, dtype=Float32, carrier=Evictable, layout=3:1)"
    assert e.is_evicted()  # printing did not promote
    assert repr(e) == "Evictable(size=3, dtype=Float32, evicted)"
    g = Generic(["a", None, 3])
    assert repr(Tensor(g, 0, L((3,), (1,)))) == (
        "Tensor([ 'a', None,    3], dtype=Floating, carrier=Generic, layout=3:1)"
    )
    f = FileBacked().new_like([1.5, 2.5])
    assert repr(Tensor(f, 0, L((2,), (1,)))) == (
        "Tensor([1.5000, 2.5000], dtype=Floating, carrier=FileBacked, layout=2:1)"
    )
    assert repr(f) == "FileBacked(size=2, dtype=Floating)"


def test_repr_parameter_and_modules():
    p = Parameter(CPU(2), 0, L((2,), (1,)), name="w")
    assert repr(p) == "Parameter([0., 0.], dtype=Float32, carrier=CPU, layout=2:1, name='w')"
    m = Module()
    m.fc = nn.Linear(2, 3)
    m.act = nn.ReLU()
    m.inner = Module()
    m.inner.fc = nn.Linear(3, 1, bias=False)
    assert repr(m) == (
        "Module(\n  (fc): Linear(in_features=2, out_features=3, bias=True)\n  (act): ReLU()\n"
        "  (inner): Module(\n    (fc): Linear(in_features=3, out_features=1, bias=False)\n  )\n)"
    )
    assert repr(Module()) == "Module()"


# --------------------------------------------------------------- attributes


def test_attributes():
    h = cpu(list(range(12)), ([2, 2], 3), ([1, 2], 4))
    assert h.shape == (4, 3) and h.ndim == 2 and h.numel() == 12 == h.size()
    assert COL.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
    assert h.tolist()[3] == [3.0, 7.0, 11.0]
    assert cpu([2.5], (1,), (1,)).item() == 2.5
    with pytest.raises(ValueError, match="^item requires a tensor with exactly one element$"):
        COL.item()
    t = COL.T
    assert t.carrier is COL.carrier and repr(t.layout) == "(3,2):(2,1)"
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    with pytest.raises(ValueError, match="^T requires a two-mode tensor$"):
        _ = cpu([1, 2], (2,), (1,)).T


def test_numpy_zero_copy_and_copies():
    c = CPU(6).new_like([1, 2, 3, 4, 5, 6])
    t = Tensor(c, 0, L((2, 3), (1, 2)))
    a = t.numpy()
    assert a.dtype == np.float32 and a.tolist() == t.tolist()
    c[0] = 10.0
    assert a[0, 0] == 10.0  # shared through DLPack
    g = gen([1.0, 2.0], (2,), (1,)).numpy()
    assert g.dtype == np.float64 and g.tolist() == [1.0, 2.0]
    h = cpu(list(range(8)), ([2, 2], 2), ([1, 2], 4)).numpy()
    assert h.shape == (4, 2) and h.tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_clone_and_detach():
    x = cpu([1, 2], (1, 2), (1, 1))
    c = x.clone()
    assert c.carrier is not x.carrier and c.tolist() == [[1.0, 2.0]] and c.layout == x.layout
    y = x * 3
    d = y.detach()
    assert d.autograd_ctx is None and d.carrier is y.carrier and y.autograd_ctx is not None
    sw.reduce(x.clone()).backward()  # clone is differentiable
    assert x.grad.tolist() == [[1.0, 1.0]]


# --------------------------------------------------------------- scalars


@pytest.mark.parametrize("make", [cpu, gen])
def test_scalars_on_either_side(make):
    x = make([1.0, 2.0, 4.0], (3,), (1,))
    assert (x + 1).tolist() == [2.0, 3.0, 5.0]
    assert (1 + x).tolist() == [2.0, 3.0, 5.0]
    assert (x - 1).tolist() == [0.0, 1.0, 3.0]
    assert (1 - x).tolist() == [0.0, -1.0, -3.0]
    assert (x * 2).tolist() == (2 * x).tolist() == [2.0, 4.0, 8.0]
    assert (x / 2).tolist() == [0.5, 1.0, 2.0]
    assert (2 / x).tolist() == [2.0, 1.0, 0.5]
    assert (x + 1).autograd_ctx._operation_name == "add"
    assert (2 / x).autograd_ctx._operation_name == "div"


@pytest.mark.parametrize("make", [cpu, gen])
def test_scalar_gradients(make):
    x = make([1.0, 2.0], (1, 2), (1, 1))
    y = sw.reduce((1 - x) * (x / 2 + 2 / x) + 3)
    y.backward()
    # d/dx (1 - x)(x/2 + 2/x) = -(x/2 + 2/x) + (1 - x)(1/2 - 2/x**2)
    expect = [-(v / 2 + 2 / v) + (1 - v) * (0.5 - 2 / v**2) for v in (1.0, 2.0)]
    np.testing.assert_allclose(np.array(x.grad.tolist()).ravel(), expect, rtol=1e-6)


def test_scalar_errors():
    x = cpu([1.0], (1,), (1,))
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        x + "a"
    with pytest.raises(TypeError, match="unsupported operand"):
        "a" - x
    with pytest.raises(TypeError, match="unsupported operand"):
        1 @ x
    with pytest.raises(TypeError, match="^lhs must be a Tensor$"):
        sw.add(1, x)
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        sw.add(x, 1)  # the functional form keeps the reference's rule


# --------------------------------------------------------------- mixed layouts


@pytest.mark.parametrize("make", [cpu, gen])
@pytest.mark.parametrize("name", ["add", "sub", "elementwise_mul", "div"])
def test_mixed_layouts(make, name):
    vals = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    col = make(vals, (2, 3), (1, 2))
    row = make(vals, (2, 3), (3, 1))
    fn = getattr(sw, name)
    ref = getattr(
        np, {"add": "add", "sub": "subtract", "elementwise_mul": "multiply", "div": "divide"}[name]
    )
    a, b = np.array(col.tolist()), np.array(row.tolist())
    r = fn(col, row)
    assert r.layout == col.layout  # the first operand's layout: compact
    np.testing.assert_allclose(r.tolist(), ref(a, b))
    # a transposed view (not compact) first: compact column-major result
    assert fn(row, col).layout == row.layout  # row-major is compact too
    # a transposed view first, (3,2):(2,1), is compact: kept
    s = fn(col.T, row.T)
    assert repr(s.layout) == "(3,2):(2,1)"
    np.testing.assert_allclose(s.tolist(), ref(a.T, b.T))
    # a strided view with holes first: compact column-major result
    holes = make([1.0, 0, 2.0, 0, 3.0, 0], (3,), (2,))
    flat = make([10.0, 20.0, 30.0], (3,), (1,))
    h = fn(holes, flat)
    assert repr(h.layout) == "3:1"
    np.testing.assert_allclose(
        h.tolist(), ref(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0]))
    )


@pytest.mark.parametrize("make", [cpu, gen])
def test_hierarchical_plus_flat_and_gradients(make):
    h = make([float(i) for i in range(12)], ([2, 2], 3), ([1, 2], 4))
    f = make([float(i) for i in range(12)], (4, 3), (3, 1))
    r = h + f
    assert r.layout == h.layout
    np.testing.assert_allclose(r.tolist(), np.array(h.tolist()) + np.array(f.tolist()))
    y = h * f
    y.backward(Tensor(y.carrier.new_like([1.0] * 12), 0, y.layout))
    assert h.grad.layout == h.layout and f.grad.layout == f.layout
    np.testing.assert_allclose(h.grad.tolist(), f.tolist())
    np.testing.assert_allclose(f.grad.tolist(), h.tolist())


def test_two_carrier_instances_and_errors():
    a = cpu([1.0, 2.0], (2,), (1,))
    b = cpu([3.0, 4.0], (2,), (1,))
    assert a.carrier is not b.carrier and (a + b).tolist() == [4.0, 6.0]
    with pytest.raises(ValueError, match="^Tensor layouts must match$"):
        a + cpu([1.0, 2.0], (1, 2), (1, 1))  # another rank
    with pytest.raises(ValueError, match="^Tensor layouts must match$"):
        cpu([1.0] * 6, (2, 3), (1, 2)) + cpu([1.0] * 6, (3, 2), (1, 3))
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        a + gen([1.0, 2.0], (2,), (1,))


# --------------------------------------------------------------- element access


def test_out_of_range_is_an_index_error():
    t = cpu([1.0, 2.0, 3.0], (3,), (1,))
    assert issubclass(TensorIndexError, IndexError) and issubclass(TensorIndexError, ValueError)
    with pytest.raises(IndexError, match="^Key is not in domain of shape$"):
        t[3]
    with pytest.raises(TensorIndexError, match="^Key is not in domain of shape$"):
        COL[2, 0]
    assert list(t) == [1.0, 2.0, 3.0]
    assert [v for v in COL] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    with pytest.raises(TypeError, match="^Tensor indices must be integers"):
        t[1.0]


# ---------------------------------------------------------- requires_grad


def test_requires_grad_makes_a_constant():
    import strideweave.friendly as F

    x = F.tensor([[1.0, 2.0], [3.0, 4.0]])
    w = F.tensor([[1.0, -1.0], [0.5, 2.0]])
    assert x.requires_grad is True and x.is_differentiable()
    assert x.requires_grad_(False) is x
    assert x.requires_grad is False and not x.is_differentiable()
    y = sw.matmul(x, w)
    loss = F.sum(sw.elementwise_mul(y, y))
    loss.backward()
    assert w.grad is not None
    with pytest.raises(RuntimeError, match="grad is not available"):
        _ = x.grad
    # the same step with x taking part gives w the same gradient
    x2 = F.tensor([[1.0, 2.0], [3.0, 4.0]])
    w2 = F.tensor([[1.0, -1.0], [0.5, 2.0]])
    y2 = sw.matmul(x2, w2)
    F.sum(sw.elementwise_mul(y2, y2)).backward()
    assert w.grad.tolist() == w2.grad.tolist() and x2.grad is not None
    # computed from constants alone: a constant; under no_grad: a leaf
    assert sw.relu(x).requires_grad is False and sw.relu(x).autograd_ctx is None
    with sw.no_grad():
        assert sw.relu(x).requires_grad is True
    x.requires_grad = True
    assert x.is_differentiable()


def test_requires_grad_errors():
    import strideweave.friendly as F

    x = F.tensor([1.0, 2.0])
    y = sw.relu(x)
    with pytest.raises(RuntimeError, match="only be changed on a leaf tensor"):
        y.requires_grad = False
    with pytest.raises(TypeError, match="^requires_grad must be a bool$"):
        x.requires_grad = 1
    with pytest.raises(TypeError, match="^requires_grad must be a bool$"):
        x.requires_grad_(None)
    with pytest.raises(TypeError, match="takes one optional argument 'requires_grad'"):
        x.requires_grad_(True, False)
    with pytest.raises(TypeError):
        del x.requires_grad
    ints = Tensor(CPU(2, dtype=sw.DType.Int32), 0, Layout(Shape(2), Stride(1)))
    with pytest.raises(RuntimeError, match="differentiable dtype"):
        ints.requires_grad_()
    assert ints.requires_grad_(False).requires_grad is False
    assert x.requires_grad is True  # refusals change nothing


def test_linear_training_with_constant_inputs():
    import random

    import strideweave.friendly as F

    rng = random.Random(0)
    model = nn.Linear(3, 2, rng=random.Random(1))
    other = nn.Linear(3, 2, rng=random.Random(1))
    xs = [[rng.uniform(-1, 1) for _ in range(3)] for _ in range(4)]
    ts = [[rng.uniform(-1, 1) for _ in range(2)] for _ in range(4)]
    for m, constant in ((model, True), (other, False)):
        x, t = F.tensor(xs), F.tensor(ts)
        if constant:
            x.requires_grad_(False)
            t.requires_grad_(False)
        loss = nn.MSELoss()(m(x), t)
        loss.backward()
    assert model.weight.grad.tolist() == other.weight.grad.tolist()
    assert model.bias.grad.tolist() == other.bias.grad.tolist()
