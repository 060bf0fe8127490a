"""Conveniences beyond the reference, continued: Python's indexing rules
beside the reference's, softmax and cross-entropy, saving and loading,
copies from foreign arrays, reopening raw files, pickling, and profiling
backward passes."""

import numpy as np
import pytest
from strideweave import CPU, Generic, Layout, Shape, Stride, Tensor
from strideweave.tensor import TensorIndexError


def L(shape, stride):
    return Layout(Shape(*shape), Stride(*stride))


def cpu(values, shape, stride, offset=0):
    return Tensor(CPU(len(values) + offset).new_like([0.0] * offset + list(values)), offset, L(shape, stride))


# ------------------------------------------------- Python's indexing rules

ROW = cpu([0, 1, 2, 3, 4, 5], (2, 3), (3, 1))  # [[0, 1, 2], [3, 4, 5]]


def test_negative_coordinates_count_from_the_end():
    assert ROW.get((-1, -1)) == 5.0 == ROW.get([1, 2])
    assert ROW.get((0, -3)) == 0.0
    assert ROW.get(-1) == ROW[5] == 5.0  # an int is a logical index
    assert ROW.get(-6) == ROW[0]
    assert ROW.get([-1]) == ROW[1, 0]  # missing trailing coordinates are 0
    nested = Tensor(Generic(list(range(8))), 0, L([2, [2, 2]], [1, [2, 4]]))
    assert nested.get((-1, (-1, -1))) == 7 == nested[1, [1, 1]]
    assert nested.get((1, -1)) == nested[1, 3]  # a nested mode's int wraps by its size


def test_the_offset_counts():
    t = cpu([7.0, 8.0], (2,), (1,), offset=3)
    assert t.get(-1) == 8.0
    t.set(-2, 1.5)
    assert t.carrier[3] == 1.5


@pytest.mark.parametrize("key", [(-3, 0), (0, -4), (2, 0), -7, 6, -(2**80), 2**80, (0, -(2**70))])
def test_outside_stays_outside(key):
    with pytest.raises(TensorIndexError, match="^Key is not in domain of shape$"):
        ROW.get(key)
    with pytest.raises(IndexError):
        ROW.set(key, 0.0)


def test_extra_coordinates_are_refused():
    with pytest.raises(TensorIndexError, match="^Key has 3 coordinates for 2 modes$"):
        ROW.get([1, 2, 99])
    with pytest.raises(ValueError, match="^Key has 3 coordinates for 2 modes$"):
        ROW.set((0, 0, 0), 1.0)
    nested = Tensor(Generic(list(range(8))), 0, L([2, [2, 2]], [1, [2, 4]]))
    with pytest.raises(IndexError, match="^Key has 3 coordinates for 2 modes$"):
        nested.get((0, (0, 0, 0)))
    # t[key] keeps the reference's rules.
    assert ROW[1, 2, 99] == ROW[1, 2]
    with pytest.raises(ValueError, match="^Key is not in domain of shape$"):
        ROW[-1]


def test_set_writes_and_checks():
    t = cpu([0.0] * 6, (2, 3), (3, 1))
    t.set((-1, -1), 2.5)
    assert t.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 2.5]]
    assert t.version == 1
    with pytest.raises(TypeError, match="^Tensor indices must be integers"):
        t.get(1.0)
    with pytest.raises(TypeError, match="^Tensor indices must be integers"):
        t.get((slice(None), 0))
    with pytest.raises(TypeError):
        t.set(0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        t.set(0, "x")
    t.carrier.release()
    with pytest.raises(RuntimeError):
        t.get(0)


# ------------------------------------------------- softmax and cross-entropy

import math  # noqa: E402

import strideweave.friendly as F  # noqa: E402
import strideweave.nn as nn  # noqa: E402


def rows(t):
    return t.tolist()


def leaf(values):
    t = F.tensor(values)
    t.retain_grad()
    return t


def reference_softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


def test_softmax_values_and_stability():
    x = F.tensor([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    got = rows(nn.softmax(x))
    for row, want in zip(got, [reference_softmax([1, 2, 3]), reference_softmax([1000, 0, -1000])]):
        assert row == pytest.approx(want, abs=1e-7)
    logs = rows(nn.log_softmax(x))
    assert logs[1] == pytest.approx([0.0, -1000.0, -2000.0])
    assert all(math.isfinite(v) for v in logs[1])
    assert rows(nn.softmax(x, dim=0))[0] == pytest.approx([0.0, 1 / (1 + math.exp(-2)), 1.0], abs=1e-7)
    assert nn.softmax(x).layout == x.layout
    assert rows(nn.Softmax()(F.tensor([0.0, 0.0]))) == [0.5, 0.5]
    assert F.to_list(nn.LogSoftmax(0)(F.tensor([[0.0], [0.0]]))) == pytest.approx([math.log(0.5)] * 2)
    assert repr(nn.Softmax(1)) == "Softmax(dim=1)"


def finite_difference(f, x, h=1e-2):
    """d f(x) / d x per logical element by central differences."""
    out = []
    for i in range(x.size()):
        v = x[i]
        x[i] = v + h
        up = f()
        x[i] = v - h
        down = f()
        x[i] = v
        out.append((up - down) / (2 * h))
    return out


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_gradients(fn, dim):
    x = leaf([[0.5, -1.0, 2.0], [0.25, 0.0, 1.5]])
    w = F.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    op = getattr(nn, fn)

    def value():
        return F.item(F.sum(op(x, dim) * w))

    F.sum(op(x, dim) * w).backward()
    want = finite_difference(value, x)
    got = [x.grad[i] for i in range(x.size())]
    assert got == pytest.approx(want, abs=2e-3)


def test_softmax_errors():
    with pytest.raises(TypeError, match="^input must be a Tensor$"):
        nn.softmax([1.0])
    with pytest.raises(TypeError, match="^dim must be an int$"):
        nn.softmax(F.tensor([1.0]), dim=1.0)
    with pytest.raises(ValueError, match="^dim 2 is out of range for a 2-mode tensor$"):
        nn.softmax(F.tensor([[1.0]]), dim=2)
    with pytest.raises(ValueError, match="^softmax needs a tensor of one or two flat modes$"):
        nn.softmax(F.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="^softmax needs a tensor of one or two flat modes$"):
        nn.softmax(Tensor(CPU(8), 0, L([2, [2, 2]], [1, [2, 4]])))
    with pytest.raises(TypeError, match="^softmax input must be a CPU Float32 tensor$"):
        nn.softmax(Tensor(Generic([1.0, 2.0]), 0, L([2], [1])))


def test_cross_entropy_values():
    x = F.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    l0 = math.log(math.exp(1) + math.exp(2) + math.exp(3)) - 3
    loss = nn.CrossEntropyLoss()(x, F.tensor([2.0, 1.0]))
    assert loss.layout == L([1], [1])
    assert loss.item() == pytest.approx((l0 + math.log(3)) / 2)
    assert nn.cross_entropy(x, F.tensor([2.0, 1.0]), "sum").item() == pytest.approx(
        l0 + math.log(3), rel=1e-6
    )
    soft = F.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    assert nn.cross_entropy(x, soft).item() == pytest.approx(loss.item())
    targets = Tensor(CPU(2, dtype=sw_dtype().Int32).new_like([2, 1]), 0, L([2], [1]))
    assert nn.cross_entropy(x, targets).item() == pytest.approx(loss.item())
    big = F.tensor([[1e4, -1e4]])
    assert nn.cross_entropy(big, F.tensor([0.0])).item() == 0.0
    assert nn.cross_entropy(big, F.tensor([1.0])).item() == pytest.approx(2e4)
    assert repr(nn.CrossEntropyLoss("sum")) == "CrossEntropyLoss(reduction='sum')"


def sw_dtype():
    from strideweave import DType

    return DType


@pytest.mark.parametrize("soft", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_gradients(soft, reduction):
    x = leaf([[0.5, -1.0, 2.0], [0.25, 0.0, 1.5]])
    target = F.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]) if soft else F.tensor([1.0, 2.0])

    def value():
        return F.item(nn.cross_entropy(x, target, reduction))

    (nn.cross_entropy(x, target, reduction) * 3.0).backward()
    want = [3.0 * v for v in finite_difference(value, x)]
    assert [x.grad[i] for i in range(x.size())] == pytest.approx(want, abs=2e-3)


def test_cross_entropy_errors():
    x = F.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    with pytest.raises(IndexError, match=r"^cross_entropy target 3 is outside \[0, 3\)$"):
        nn.cross_entropy(x, F.tensor([3.0, 0.0]))
    with pytest.raises(IndexError, match=r"^cross_entropy target -1 is outside \[0, 3\)$"):
        nn.cross_entropy(x, F.tensor([-1.0, 0.0]))
    with pytest.raises(ValueError, match="^cross_entropy target 0.5 is not a class index$"):
        nn.cross_entropy(x, F.tensor([0.5, 0.0]))
    with pytest.raises(ValueError, match="^cross_entropy target must hold one class index"):
        nn.cross_entropy(x, F.tensor([0.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="^cross_entropy logits must have two modes"):
        nn.cross_entropy(F.tensor([1.0, 2.0]), F.tensor([0.0, 0.0]))
    with pytest.raises(ValueError, match="^reduction must be 'mean' or 'sum'$"):
        nn.CrossEntropyLoss("none")
    with pytest.raises(ValueError, match="^reduction must be 'mean' or 'sum'$"):
        nn.cross_entropy(x, F.tensor([0.0, 0.0]), "max")
    with pytest.raises(TypeError, match="^target must be a Tensor$"):
        nn.cross_entropy(x, [0, 1])
    with pytest.raises(TypeError, match="^logits must be a Tensor$"):
        nn.cross_entropy([[0.0]], F.tensor([0.0]))
    with pytest.raises(TypeError, match="^cross_entropy target must be a CPU Float32 or Int32"):
        nn.cross_entropy(x, Tensor(Generic([0.0, 1.0]), 0, L([2], [1])))
