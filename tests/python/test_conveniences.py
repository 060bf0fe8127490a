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
