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
    carrier = CPU(len(values) + offset).new_like([0.0] * offset + list(values))
    return Tensor(carrier, offset, L(shape, stride))


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
import os  # noqa: E402

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
    wanted = [reference_softmax([1, 2, 3]), reference_softmax([1000, 0, -1000])]
    for row, want in zip(got, wanted, strict=True):
        assert row == pytest.approx(want, abs=1e-7)
    logs = rows(nn.log_softmax(x))
    assert logs[1] == pytest.approx([0.0, -1000.0, -2000.0])
    assert all(math.isfinite(v) for v in logs[1])
    column_wise = [0.0, 1 / (1 + math.exp(-2)), 1.0]
    assert rows(nn.softmax(x, dim=0))[0] == pytest.approx(column_wise, abs=1e-7)
    assert nn.softmax(x).layout == x.layout
    assert rows(nn.Softmax()(F.tensor([0.0, 0.0]))) == [0.5, 0.5]
    halves = nn.LogSoftmax(0)(F.tensor([[0.0], [0.0]]))
    assert F.to_list(halves) == pytest.approx([math.log(0.5)] * 2)
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


# ------------------------------------------------------- saving and loading

import safetensors.numpy as stnp  # noqa: E402
import strideweave as sw  # noqa: E402
from strideweave import DType, FileBacked, Module  # noqa: E402


def test_save_a_tensor_and_read_it_with_safetensors(tmp_path):
    path = tmp_path / "t.safetensors"
    t = cpu([1, 2, 3, 4, 5, 6], (2, 3), (1, 2))  # column-major [[1, 3, 5], [2, 4, 6]]
    sw.save(t, path)
    read = stnp.load_file(str(path))
    assert list(read) == ["tensor"]
    assert read["tensor"].dtype == np.float32
    assert read["tensor"].tolist() == [[1, 3, 5], [2, 4, 6]]
    back = sw.load(path)
    assert isinstance(back, Tensor) and back.tolist() == t.tolist()
    assert back.layout == L([2, 3], [3, 1]) and type(back.carrier) is CPU


def test_safetensors_files_load(tmp_path):
    path = tmp_path / "np.safetensors"
    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64": np.array([0.1, 0.2]),
        "f16": np.array([1.5, -2.0], dtype=np.float16),
        "i64": np.array([[1], [-7]], dtype=np.int64),
        "i32": np.array([3], dtype=np.int32),
        "u8": np.array([255, 0, 7], dtype=np.uint8),
        "b": np.array([True, False]),
        "scalar": np.array(2.5, dtype=np.float32),
    }
    stnp.save_file(arrays, str(path))
    got = sw.load(path)
    assert set(got) == set(arrays)
    for name, array in arrays.items():
        assert got[name].shape == (array.shape or ())
        assert np.array_equal(np.asarray(got[name].numpy()), array)
    assert got["f32"].dtype() == DType.Float32 and got["f16"].dtype() == DType.Float32
    assert got["i64"].dtype() == DType.Int32 and got["b"].dtype() == DType.Bool
    assert got["f64"].dtype() == DType.Floating and type(got["f64"].carrier) is Generic
    assert got["f64"].tolist() == [0.1, 0.2]
    assert got["scalar"].item() == 2.5


def test_a_dict_and_carriers_round_trip(tmp_path):
    path = tmp_path / "d.safetensors"
    nested = Tensor(CPU(8).new_like(range(8)), 0, L([2, [2, 2]], [1, [2, 4]]))
    values = {
        "cpu": cpu([1.5, -2.0], (2,), (1,)),
        "hier": nested,
        "gen": Tensor(Generic([0.25, 0.5], dtype=DType.Floating), 0, L([2], [1])),
        "ints": Tensor(CPU(3, dtype=DType.Int32).new_like([1, -2, 3]), 0, L([3], [1])),
        "flags": Tensor(CPU(2, dtype=DType.Bool).new_like([True, False]), 0, L([2], [1])),
    }
    sw.save(values, path)
    read = stnp.load_file(str(path))
    assert read["hier"].shape == (2, 4) and read["hier"].tolist() == nested.tolist()
    assert read["gen"].dtype == np.float64 and read["ints"].dtype == np.int32
    back = sw.load(path)
    assert {k: v.tolist() for k, v in back.items()} == {k: v.tolist() for k, v in values.items()}


def test_load_file_backed_reads_nothing_until_used(tmp_path):
    path = tmp_path / "big.safetensors"
    arrays = {
        "w": np.arange(12, dtype=np.float32).reshape(3, 4),
        "ids": np.array([[5, -6]], dtype=np.int32),
        "half": np.array([1.5, -2.0], dtype=np.float16),
        "scalar": np.array(2.5, dtype=np.float32),
    }
    stnp.save_file(arrays, str(path))
    got = sw.load(path, file_backed=True)
    for name in ("w", "ids", "scalar"):
        carrier = got[name].carrier
        assert type(carrier) is FileBacked and not carrier.is_mutable()
        assert carrier.path == path
        assert np.array_equal(np.asarray(got[name].numpy()), arrays[name])
    assert got["w"].dtype() == DType.Float32 and got["ids"].dtype() == DType.Int32
    assert got["w"].layout == L([3, 4], [4, 1])
    # a dtype that needs converting is read into memory, as without the flag
    assert type(got["half"].carrier) is CPU and got["half"].tolist() == [1.5, -2.0]
    with pytest.raises(RuntimeError):
        got["w"].carrier[0] = 1.0  # read-only windows
    # moving reads the values from the file
    moved = sw.move(got["w"], CPU(12))
    assert moved.tolist() == arrays["w"].tolist()
    assert path.stat().st_size > 0 and stnp.load_file(str(path))["w"].tolist() == moved.tolist()
    # the file is unchanged and loads as before
    assert sw.load(path)["ids"].tolist() == [[5, -6]]
    with pytest.raises(TypeError, match="^file_backed must be a bool$"):
        sw.load(path, file_backed=1)


def test_load_file_backed_of_a_saved_tensor(tmp_path):
    path = tmp_path / "t.safetensors"
    t = cpu([1, 2, 3, 4, 5, 6], (2, 3), (1, 2))
    sw.save(t, path)
    back = sw.load(path, file_backed=True)
    assert isinstance(back, Tensor) and type(back.carrier) is FileBacked
    assert back.tolist() == t.tolist()


def test_save_errors(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match="^save takes a Tensor, a dict of Tensors or a Module$"):
        sw.save([1.0], path)
    with pytest.raises(TypeError, match="^save: dict keys must be strings$"):
        sw.save({1: cpu([1.0], (1,), (1,))}, path)
    with pytest.raises(TypeError, match="^save: the value of 'a' is not a Tensor$"):
        sw.save({"a": 1.0}, path)
    anything = Tensor(Generic(["x"], dtype=DType.Any), 0, L([1], [1]))
    with pytest.raises(TypeError, match="^cannot save a tensor of dtype Any"):
        sw.save(anything, path)
    released = cpu([1.0], (1,), (1,))
    released.carrier.release()
    with pytest.raises(RuntimeError):
        sw.save(released, path)
    assert list(tmp_path.iterdir()) == []  # nothing half-written


@pytest.mark.parametrize(
    "content, why",
    [
        (b"abc", "shorter than its header length"),
        ((10**6).to_bytes(8, "little") + b"{}", "the header length passes the end"),
        ((4).to_bytes(8, "little") + b"[1] ", "the header is not a JSON object"),
        ((2).to_bytes(8, "little") + b"{x", "the header is not JSON"),
        (
            (20).to_bytes(8, "little") + b'{"a": {"dtype": 1}} ',
            "entry 'a' lacks dtype, shape or data_offsets",
        ),
    ],
)
def test_load_refuses_other_files(tmp_path, content, why):
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"is not a safetensors file: {why}"):
        sw.load(path)


def test_load_refuses_bad_entries(tmp_path):
    path = tmp_path / "e.safetensors"
    stnp.save_file({"a": np.zeros((2,), dtype=np.complex64)}, str(path))
    with pytest.raises(ValueError, match="entry 'a' has dtype 'C64'; supported"):
        sw.load(path)
    stnp.save_file({"a": np.zeros((0, 2), dtype=np.float32)}, str(path))
    with pytest.raises(ValueError, match=r"entry 'a' has an empty mode \(0, 2\)"):
        sw.load(path)
    stnp.save_file({"a": np.array([2**40], dtype=np.int64)}, str(path))
    with pytest.raises(ValueError, match="outside Int32"):
        sw.load(path)
    header = b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}'
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    with pytest.raises(ValueError, match="data_offsets that do not fit"):
        sw.load(path)


# --------------------------------------------------------- module state


class Net(Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(2, 3)
        self.second = nn.Linear(3, 1, bias=False)

    def forward(self, x):
        return self.second(self.first(x))


def test_state_dict_round_trip_through_a_file(tmp_path):
    a, b = Net(), Net()
    names = ["first.weight", "first.bias", "second.weight"]
    assert [n for n, _ in a.named_parameters()] == names
    state = a.state_dict()
    assert list(state) == names
    assert state["first.weight"].carrier is a.first.weight.carrier
    assert state["first.weight"].autograd_ctx is None
    path = tmp_path / "net.safetensors"
    sw.save(a, path)
    assert sorted(stnp.load_file(str(path))) == sorted(names)
    before = b.first.weight.carrier
    assert b.load_state_dict(sw.load(path)) == ([], [])
    assert b.first.weight.carrier is before
    for name in names:
        assert b.state_dict()[name].tolist() == state[name].tolist()


def test_load_state_dict_errors_change_nothing():
    a, b = Net(), Net()
    original = b.first.weight.tolist()
    state = a.state_dict()
    partial = {k: v for k, v in state.items() if k != "first.bias"}
    with pytest.raises(KeyError, match=r"missing keys \['first.bias'\]"):
        b.load_state_dict(partial)
    with pytest.raises(KeyError, match=r"unexpected keys \['extra'\]"):
        b.load_state_dict({**state, "extra": state["first.bias"]})
    wrong = {**state, "second.weight": cpu([0.0] * 3, (3, 1), (1, 3))}
    mis_shaped = r"'second.weight' has shape \(3, 1\) in the state but \(1, 3\)"
    with pytest.raises(ValueError, match=mis_shaped):
        b.load_state_dict(wrong)
    with pytest.raises(TypeError, match="the value of 'first.bias' is not a Tensor"):
        b.load_state_dict({**state, "first.bias": [0.0]})
    with pytest.raises(TypeError, match="needs a mapping"):
        b.load_state_dict([1])
    assert b.first.weight.tolist() == original
    assert b.load_state_dict(partial, strict=False) == (["first.bias"], [])
    assert b.first.weight.tolist() == state["first.weight"].tolist()


def test_train_and_eval():
    net = Net()
    assert net.training and net.first.training
    assert net.eval() is net
    assert not net.training and not net.first.training
    net.train()
    assert net.first.training
    net.first.training = False
    assert not net.first.training and net.training


# ------------------------------------------------------ foreign arrays in


def test_friendly_tensor_copies_arrays():
    import array

    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = F.tensor(a)
    assert t.shape == (2, 3) and t.dtype() == DType.Float32
    assert t.tolist() == a.tolist() and t.layout == L([2, 3], [1, 2])
    a[0, 0] = 99  # a copy
    assert t[0, 0] == 0.0
    assert F.tensor(np.arange(4, dtype=np.int64)).dtype() == DType.Int32
    assert F.tensor(np.array([True, False])).tolist() == [True, False]
    assert F.tensor(np.asfortranarray(np.ones((2, 2)))[::1, ::-1]).tolist() == [[1.0, 1.0]] * 2
    assert F.tensor(array.array("i", [1, 2, 3])).tolist() == [1, 2, 3]
    assert F.tensor(array.array("d", [0.5])).dtype() == DType.Float32
    assert F.tensor(np.float32(2.5)).item() == 2.5
    assert F.tensor(np.arange(3, dtype=np.float32)[::2]).tolist() == [0.0, 2.0]
    assert F.tensor(np.array([1.7, 2.2]), dtype=DType.Int32).tolist() == [1, 2]


def test_friendly_tensor_takes_dlpack_objects():
    class OnlyDLPack:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    t = F.tensor(OnlyDLPack(np.arange(4, dtype=np.float32).reshape(2, 2)))
    assert t.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    src = F.tensor([[1.0, 2.0]])
    copy = F.tensor(src)  # a strideweave tensor is an array object too
    assert copy.tolist() == src.tolist() and copy.carrier is not src.carrier


def test_friendly_tensor_array_errors():
    with pytest.raises(TypeError, match="layout cannot be given with an array"):
        F.tensor(np.zeros(2), layout=F.column_major(2))
    with pytest.raises(ValueError, match="outside Int32"):
        F.tensor(np.array([2**40]))
    with pytest.raises(ValueError, match="modes have at least one element"):
        F.tensor(np.zeros((0, 2)))
    with pytest.raises(TypeError, match="cannot copy an array of dtype complex"):
        F.tensor(np.zeros(2, dtype=np.complex64))
    with pytest.raises(ValueError, match="or an array"):
        F.tensor(object())


# ---------------------------------------------------------------- pickling

import copy  # noqa: E402
import pickle  # noqa: E402


def round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


def test_values_pickle():
    for obj in (Shape(2, [3, 4]), Stride(1, [2, 6]), L([2, [3, 4]], [1, [2, 6]]), DType.Int32):
        assert round_trip(obj) == obj


def test_tensors_pickle_by_value_and_keep_sharing():
    c = CPU(5).new_like([0.0, 1, 2, 3, 4])
    a, b = Tensor(c, 1, L([2, 2], [2, 1])), Tensor(c, 0, L([5], [1]))
    a2, b2 = round_trip((a, b))
    assert a2.tolist() == a.tolist() and a2.offset == 1 and a2.layout == a.layout
    assert a2.carrier is b2.carrier and a2.carrier is not c
    a2[0, 0] = 9.0
    assert b2[1] == 9.0 and b[1] == 1.0
    ints = Tensor(CPU(2, dtype=DType.Int32).new_like([1, -2]), 0, L([2], [1]))
    assert round_trip(ints).tolist() == [1, -2] and round_trip(ints).dtype() == DType.Int32
    frozen = Tensor(CPU(1).new_like([1.5], mutable=False), 0, L([1], [1]))
    assert not round_trip(frozen).is_mutable() and round_trip(frozen).item() == 1.5
    g = Tensor(Generic(["x", 2], dtype=DType.Any), 0, L([2], [1]))
    assert round_trip(g).tolist() == ["x", 2] and round_trip(g).dtype() == DType.Any
    c.release()
    with pytest.raises(RuntimeError):
        pickle.dumps(a)
    with pytest.raises(TypeError):
        pickle.dumps(Tensor(FileBacked(dtype=DType.Float32).new_like([1.0]), 0, L([1], [1])))


def test_modules_pickle_and_deepcopy():
    net = Net()
    net.first.weight.name = None
    for clone in (round_trip(net), copy.deepcopy(net)):
        assert type(clone) is Net and clone.first is not net.first
        assert [n for n, _ in clone.named_parameters()] == [n for n, _ in net.named_parameters()]
        for (_, p), (_, q) in zip(clone.named_parameters(), net.named_parameters(), strict=True):
            assert type(p) is type(q) and p.tolist() == q.tolist() and p.carrier is not q.carrier
        assert clone.parameters()[0] is clone.first.weight
        x = F.ones(4, 2)
        assert clone(x).tolist() == net(x).tolist()


# ---------------------------------------------------------------- profiler


def test_profiler_table_units():
    t = cpu([1.0, 2.0], (2,), (1,))
    with sw.profile() as prof:
        sw.exp(t)
        sw.exp(t)
    (row,) = prof.key_averages()
    default = prof.table().splitlines()
    assert "Total (ns)" in default[0] and prof.table(unit="ns") == prof.table()
    for unit, scale in (("us", 1e3), ("ms", 1e6), ("s", 1e9)):
        lines = prof.table(unit=unit).splitlines()
        assert f"Total ({unit})" in lines[0] and f"Max ({unit})" in lines[0]
        cells = lines[2].split()
        assert cells[-5] == f"{row.total_time_ns / scale:.3f}"
        assert cells[-3] == f"{row.mean_time_ns / scale:.3f}"
    with pytest.raises(ValueError, match="^unit must be 'ns', 'us', 'ms' or 's'$"):
        prof.table(unit="minutes")


# ------------------------------------------------------- FileBacked.open


def test_file_backed_open_reads_an_existing_file(tmp_path):
    path = tmp_path / "raw.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    c = FileBacked.open(path, dtype=DType.Float32)
    assert type(c) is FileBacked and c.size() == 6 and not c.is_mutable()
    assert c.path == path and Tensor(c, 0, L([2, 3], [3, 1])).tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(RuntimeError):
        c[0] = 1.0
    c.release()
    assert path.exists() and path.stat().st_size == 24
    doubles = tmp_path / "f64.bin"
    np.array([0.5, 1.5]).tofile(doubles)
    assert FileBacked.open(str(doubles))[1] == 1.5  # Floating by default
    ints = tmp_path / "i32.bin"
    np.array([7, -1], dtype=np.int32).tofile(ints)
    assert FileBacked.open(os.fsencode(ints), dtype=DType.Int32).get_value(1) == -1


def test_file_backed_open_mutable_writes_the_file(tmp_path):
    path = tmp_path / "raw.bin"
    np.zeros(2, dtype=np.float32).tofile(path)
    c = FileBacked.open(path, dtype=DType.Float32, mutable=True)
    c[1] = 2.5
    c.release()
    assert np.fromfile(path, dtype=np.float32).tolist() == [0.0, 2.5]


def test_file_backed_open_a_window(tmp_path):
    path = tmp_path / "container.bin"
    path.write_bytes(b"head" + np.array([1.5, -2.0, 4.0], dtype=np.float32).tobytes() + b"ta")
    w = FileBacked.open(path, dtype=DType.Float32, offset=4, size=3)
    assert w.size() == 3 and [w[i] for i in range(3)] == [1.5, -2.0, 4.0]
    with pytest.raises(IndexError):
        w[3]
    with pytest.raises(ValueError, match="fixed size"):
        w._allocate(4)
    assert FileBacked.open(path, dtype=DType.Float32, size=1).size() == 1  # from byte 0
    m = FileBacked.open(path, dtype=DType.Float32, offset=8, size=1, mutable=True)
    m[0] = 9.0
    m.release()
    raw = path.read_bytes()
    assert raw[:8] == b"head" + np.float32(1.5).tobytes() and raw[-2:] == b"ta"
    assert np.frombuffer(raw[8:12], dtype=np.float32)[0] == 9.0
    with pytest.raises(ValueError, match="pass its end"):
        FileBacked.open(path, dtype=DType.Float32, offset=8, size=3)
    with pytest.raises(ValueError, match="not a multiple of 4 after the window's offset"):
        FileBacked.open(path, dtype=DType.Float32, offset=4)
    with pytest.raises(ValueError, match="^FileBacked.open offset must be non-negative$"):
        FileBacked.open(path, dtype=DType.Float32, offset=-1, size=1)
    with pytest.raises(ValueError, match="^FileBacked.open size must be non-negative$"):
        FileBacked.open(path, dtype=DType.Float32, offset=0, size=-1)
    with pytest.raises(TypeError, match="^FileBacked.open offset must be an int$"):
        FileBacked.open(path, dtype=DType.Float32, offset=1.0)
    with pytest.raises(TypeError, match="^FileBacked.open size must be an int$"):
        FileBacked.open(path, dtype=DType.Float32, size=True)
    assert len(path.read_bytes()) == 18  # refusals change nothing


def test_file_backed_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="FileBacked cannot open"):
        FileBacked.open(tmp_path / "missing.bin")
    with pytest.raises(ValueError, match="not a regular file"):
        FileBacked.open(tmp_path)
    odd = tmp_path / "odd.bin"
    odd.write_bytes(bytes(6))
    with pytest.raises(ValueError, match="holds 6 bytes, not a multiple of 4"):
        FileBacked.open(odd, dtype=DType.Float32)
    assert odd.exists()  # a refused open removes nothing
    with pytest.raises(ValueError, match="FileBacked dtype must be"):
        FileBacked.open(odd, dtype=DType.Bool)
    with pytest.raises(TypeError, match="FileBacked dtype must be a DType"):
        FileBacked.open(odd, dtype="Float32")
    with pytest.raises(TypeError):
        FileBacked.open(odd, DType.Float32)  # dtype is keyword-only
    with pytest.raises(ValueError, match="embedded null byte"):
        FileBacked.open("a\0b")
