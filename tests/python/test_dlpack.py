"""DLPack export: Tensor.__dlpack__, Tensor.__dlpack_device__ and dlpack_info.

The consumers are real: NumPy's ``np.from_dlpack`` and PyTorch's
``torch.from_dlpack``. The managed tensor itself is read with ctypes, from
the structure layout the DLPack standard fixes.
"""

import array
import ctypes
import gc
import os
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest
import strideweave
from helpers_carriers import L, ListCarrier, flat
from hypothesis import given
from hypothesis import strategies as st
from strideweave import CPU, Carrier, DType, FileBacked, Generic, Tensor

# ------------------------------------------------------------ ctypes view


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]

READ_ONLY = 1 << 0
K_DL_INT, K_DL_FLOAT = 0, 2

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype = ctypes.c_int
_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The names a consumer gives the capsules it takes; the capsule keeps the
# pointer, so these objects live as long as the module.
USED = {b"dltensor": b"used_dltensor", b"dltensor_versioned": b"used_dltensor_versioned"}


def capsule_name(capsule):
    return _get_name(capsule).decode()


def managed(capsule):
    """The managed tensor of an unconsumed capsule (legacy or versioned)."""
    name = _get_name(capsule)
    address = _get_pointer(capsule, name)
    kind = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    return kind.from_address(address)


def fields(capsule):
    """(ndim, shape, strides, byte_offset, data, device, dtype) of a capsule."""
    dl = managed(capsule).dl_tensor
    shape = tuple(dl.shape[i] for i in range(dl.ndim)) if dl.shape else ()
    strides = tuple(dl.strides[i] for i in range(dl.ndim)) if dl.strides else ()
    return {
        "ndim": dl.ndim,
        "shape": shape,
        "strides": strides,
        "byte_offset": dl.byte_offset,
        "data": dl.data or 0,
        "device": (dl.device.device_type, dl.device.device_id),
        "dtype": (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes),
    }


def consume(capsule):
    """Does what a consumer does: renames the capsule and takes the managed
    tensor, whose deleter it must call. Returns a function that calls it
    (through ctypes, which releases the GIL around the call)."""
    name = _get_name(capsule)
    m = managed(capsule)
    assert _set_name(capsule, USED[name]) == 0
    kind = type(m)
    pointer = ctypes.cast(ctypes.addressof(m), ctypes.POINTER(kind))
    return lambda: m.deleter(pointer)


class Exporter:
    """Hands one capsule to every consumer call, to try consuming it twice."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


# ------------------------------------------------------------- helpers


def seq_tensor(n, layout, offset=0, dtype=None):
    c = CPU(n, dtype=dtype)
    for i in range(n):
        c[i] = i + 1
    return Tensor(c, offset, layout)


def logical(t):
    return [t[i] for i in range(t.size())]


# ------------------------------------------------------- capsule kinds


def test_legacy_capsule_by_default():
    t = seq_tensor(6, L([2, 3], [1, 2]))
    cap = t.__dlpack__()
    assert capsule_name(cap) == "dltensor"
    assert type(managed(cap)) is DLManagedTensor


@pytest.mark.parametrize("max_version", [None, (0, 0), (0, 9), [0, 5]])
def test_legacy_for_major_zero(max_version):
    t = seq_tensor(6, L([2, 3], [1, 2]))
    assert capsule_name(t.__dlpack__(max_version=max_version)) == "dltensor"


@pytest.mark.parametrize("max_version", [(1, 0), [1, 0], (1, 3), (2, 0), (7, 99), (1, 2**70)])
def test_versioned_capsule_caps_at_1_0(max_version):
    t = seq_tensor(6, L([2, 3], [1, 2]))
    cap = t.__dlpack__(max_version=max_version)
    assert capsule_name(cap) == "dltensor_versioned"
    m = managed(cap)
    assert (m.version.major, m.version.minor) == (1, 0)
    assert m.flags == 0


def test_signature():
    t = seq_tensor(2, flat(2))
    # stream is positional or keyword; the rest are keyword-only.
    assert capsule_name(t.__dlpack__(None)) == "dltensor"
    assert capsule_name(t.__dlpack__(stream=None)) == "dltensor"
    with pytest.raises(TypeError):
        t.__dlpack__(None, (1, 0))
    with pytest.raises(TypeError):
        t.__dlpack__(bogus=1)
    with pytest.raises(TypeError):
        t.__dlpack_device__(None)


@pytest.mark.parametrize("stream", [None, 0, 1, -1, "stream", object(), 2**80])
def test_stream_is_ignored(stream):
    t = seq_tensor(6, L([2, 3], [1, 2]), offset=0)
    plain = fields(t.__dlpack__())
    assert fields(t.__dlpack__(stream)) == plain
    assert fields(t.__dlpack__(stream=stream, max_version=(1, 0))) == plain


# ------------------------------------------------------------- arguments


@pytest.mark.parametrize("copy", [True, 1, 2.5, "yes", [0]])
def test_truthy_copy_is_refused(copy):
    t = seq_tensor(2, flat(2))
    with pytest.raises(BufferError, match=r"^DLPack copy exports are not supported$"):
        t.__dlpack__(copy=copy)


@pytest.mark.parametrize("copy", [None, False, 0, "", []])
def test_falsy_copy_aliases(copy):
    t = seq_tensor(2, flat(2))
    cap = t.__dlpack__(copy=copy)
    assert fields(cap)["data"] == t.carrier.pointer()


def test_copy_truth_errors_propagate():
    class Bad:
        def __bool__(self):
            raise ZeroDivisionError("no truth")

    with pytest.raises(ZeroDivisionError, match="no truth"):
        seq_tensor(2, flat(2)).__dlpack__(copy=Bad())


@pytest.mark.parametrize("dl_device", [(1, 0), [1, 0]])
def test_own_device_is_accepted(dl_device):
    t = seq_tensor(4, flat(4))
    cap = t.__dlpack__(dl_device=dl_device)
    assert fields(cap)["device"] == (1, 0)
    assert fields(cap)["data"] == t.carrier.pointer()
    assert np.from_dlpack(t, device="cpu").tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize("dl_device", [(2, 0), (1, 1), [0, 0], (1, 2**70), (-(2**70), 0)])
def test_other_devices_are_refused(dl_device):
    with pytest.raises(
        BufferError, match=r"^DLPack cross-device exports are not supported for this tensor$"
    ):
        seq_tensor(4, flat(4)).__dlpack__(dl_device=dl_device)


@pytest.mark.parametrize("dl_device", [1, "10", {1: 0}, (x for x in (1, 0)), 1.0])
def test_dl_device_must_be_a_tuple_or_list(dl_device):
    with pytest.raises(TypeError, match=r"^DLPack dl_device must be a tuple or list$"):
        seq_tensor(4, flat(4)).__dlpack__(dl_device=dl_device)


@pytest.mark.parametrize("dl_device", [(), (1,), [1, 0, 0]])
def test_dl_device_must_have_two_elements(dl_device):
    with pytest.raises(ValueError, match=r"^DLPack dl_device must have two elements$"):
        seq_tensor(4, flat(4)).__dlpack__(dl_device=dl_device)


@pytest.mark.parametrize("max_version", [1, "10", {1: 0}, 1.0, b"10"])
def test_max_version_must_be_a_tuple_or_list(max_version):
    with pytest.raises(TypeError, match=r"^DLPack max_version must be a tuple or list$"):
        seq_tensor(4, flat(4)).__dlpack__(max_version=max_version)


@pytest.mark.parametrize("max_version", [(), (1,), [1, 0, 0]])
def test_max_version_must_have_two_elements(max_version):
    with pytest.raises(ValueError, match=r"^DLPack max_version must have two elements$"):
        seq_tensor(4, flat(4)).__dlpack__(max_version=max_version)


@pytest.mark.parametrize("max_version", [(-1, 0), (1, -1), [0, -5], (-(2**70), 0)])
def test_max_version_must_be_non_negative(max_version):
    with pytest.raises(ValueError, match=r"^DLPack max_version elements must be non-negative$"):
        seq_tensor(4, flat(4)).__dlpack__(max_version=max_version)


def test_non_integer_elements_fail_with_type_error():
    # The specification leaves this failure open; it is a TypeError here.
    t = seq_tensor(4, flat(4))
    with pytest.raises(TypeError):
        t.__dlpack__(max_version=(1.0, 0))
    with pytest.raises(TypeError):
        t.__dlpack__(dl_device=("cpu", 0))


def test_check_order():
    g = Tensor(Generic([1.0, 2.0]), 0, flat(2))
    b = Tensor(CPU(2, dtype=DType.Bool), 0, flat(2))
    # copy first, even on a carrier that cannot export.
    with pytest.raises(BufferError, match="copy exports"):
        g.__dlpack__(copy=True, dl_device="x", max_version="x")
    # Then the carrier, before the device.
    with pytest.raises(BufferError, match="not supported for this carrier"):
        g.__dlpack__(dl_device="x", max_version="x")
    # The device before the dtype.
    with pytest.raises(TypeError, match="dl_device must be a tuple or list"):
        b.__dlpack__(dl_device="x", max_version="x")
    with pytest.raises(BufferError, match="cross-device"):
        b.__dlpack__(dl_device=(2, 0))
    # The dtype before the version ceiling.
    with pytest.raises(BufferError, match="only Float32 and Int32"):
        b.__dlpack__(max_version="x")


def test_failed_exports_keep_no_reference():
    t = seq_tensor(4, flat(4))
    b = Tensor(CPU(2, dtype=DType.Bool), 0, flat(2))
    g = Tensor(Generic([1.0]), 0, flat(1))
    calls = [
        (t, {"copy": True}),
        (t, {"dl_device": "x"}),
        (t, {"dl_device": (1,)}),
        (t, {"dl_device": (2, 0)}),
        (t, {"max_version": "x"}),
        (t, {"max_version": (1,)}),
        (t, {"max_version": (-1, 0)}),
        (t, {"max_version": (1.5, 0)}),
        (b, {}),
        (g, {"max_version": (1, 0)}),
    ]
    before = [sys.getrefcount(x) for x in (t, b, g)]
    failures = 0
    for x, kwargs in calls:
        try:
            x.__dlpack__(**kwargs)
        except (BufferError, TypeError, ValueError):
            failures += 1
    del x  # the loop variable still refers to the last tensor
    assert failures == len(calls)
    assert [sys.getrefcount(x) for x in (t, b, g)] == before


# ------------------------------------------------------------- dtypes


def test_float32_and_int32_codes():
    f = seq_tensor(3, flat(3))
    i = seq_tensor(3, flat(3), dtype=DType.Int32)
    assert fields(f.__dlpack__())["dtype"] == (K_DL_FLOAT, 32, 1)
    assert fields(i.__dlpack__(max_version=(1, 0)))["dtype"] == (K_DL_INT, 32, 1)
    a = np.from_dlpack(i)
    assert a.dtype == np.int32
    assert a.tolist() == [1, 2, 3]
    assert np.from_dlpack(f).dtype == np.float32


def test_bool_has_a_device_but_no_export():
    b = Tensor(CPU(4, dtype=DType.Bool), 0, flat(4))
    assert b.__dlpack_device__() == (1, 0)
    for kwargs in ({}, {"max_version": (1, 0)}):
        with pytest.raises(
            BufferError, match=r"^DLPack export supports only Float32 and Int32 tensors$"
        ):
            b.__dlpack__(**kwargs)
    with pytest.raises(BufferError, match="only Float32 and Int32"):
        np.from_dlpack(b)


# --------------------------------------------------------- non-exporting


def _non_exporting():
    return [
        ("Generic", Tensor(Generic([1.0, 2.0]), 0, flat(2))),
        ("Generic Any", Tensor(Generic([1, "a"], dtype=DType.Any), 0, flat(2))),
        ("FileBacked", Tensor(_file(DType.Float32, 2), 0, flat(2))),
        ("Carrier subclass", Tensor(ListCarrier([1.0, 2.0], dtype=DType.Float32), 0, flat(2))),
    ]


def _file(dtype, n):
    f = FileBacked(dtype=dtype)
    f._allocate(n)
    return f


@pytest.mark.parametrize("index", range(4))
def test_non_exporting_carriers(index):
    name, t = _non_exporting()[index]
    version = t.carrier.version
    message = r"^DLPack is not supported for this carrier$"
    with pytest.raises(BufferError, match=message):
        t.__dlpack_device__()
    for kwargs in ({}, {"max_version": (1, 0)}, {"dl_device": (1, 0)}):
        with pytest.raises(BufferError, match=message):
            t.__dlpack__(**kwargs)
    with pytest.raises(BufferError, match=message):
        np.from_dlpack(t)
    assert t.carrier.version == version


def test_released_cpu_carrier():
    t = seq_tensor(4, flat(4))
    t.carrier.release()
    message = r"^DLPack data pointer must be non-null$"
    with pytest.raises(BufferError, match=message):
        t.__dlpack_device__()
    with pytest.raises(BufferError, match=message):
        t.__dlpack__()
    with pytest.raises(BufferError, match=message):
        t.__dlpack__(max_version=(1, 0))


# ------------------------------------------------ shape, strides, offset


LAYOUT_CASES = [
    # (shape, stride, offset, carrier size, numpy shape, element strides)
    ([2, 3], [1, 2], 0, 6, (2, 3), (1, 2)),
    ([2, 3], [3, 1], 0, 6, (2, 3), (3, 1)),
    ([2, [3, 4]], [1, [2, 6]], 0, 24, (2, 3, 4), (1, 2, 6)),
    ([[2, 2], 3], [[1, 4], 8], 1, 24, (2, 2, 3), (1, 4, 8)),
    ([2, 3], [1, 2], 2, 10, (2, 3), (1, 2)),
    ([5], [2], 3, 12, (5,), (2,)),
    ([3, 2], [0, 1], 0, 2, (3, 2), (0, 1)),
    ([2, [2, 3]], [0, [1, 0]], 4, 6, (2, 2, 3), (0, 1, 0)),
]


@pytest.mark.parametrize("case", LAYOUT_CASES)
@pytest.mark.parametrize("dtype", [DType.Float32, DType.Int32])
def test_leaf_modes_offset_and_values(case, dtype):
    shape, stride, offset, size, np_shape, el_strides = case
    t = seq_tensor(size, L(shape, stride), offset, dtype=dtype)
    for kwargs in ({}, {"max_version": (1, 0)}):
        f = fields(t.__dlpack__(**kwargs))
        assert f["ndim"] == len(np_shape)
        assert f["shape"] == np_shape
        assert f["strides"] == el_strides
        assert f["byte_offset"] == offset * 4
        assert f["data"] == t.carrier.pointer()
        assert f["device"] == (1, 0)
    a = np.from_dlpack(t)
    assert a.shape == np_shape
    assert a.strides == tuple(4 * s for s in el_strides)
    # NumPy enumerates row-major, the layout colexicographically.
    assert a.flatten(order="F").tolist() == logical(t)
    assert a.ctypes.data == t.carrier.pointer() + 4 * offset


@st.composite
def nested_tensors(draw):
    """A Float32 or Int32 CPU tensor over a random nested layout (strides
    may be 0 or overlap) at a random offset, with its leaf modes."""
    n = draw(st.integers(1, 5))
    extents = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    strides = draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
    shape, stride, i = [], [], 0
    while i < n:
        # Group the next leaves into a nested mode now and then.
        k = draw(st.integers(1, min(3, n - i)))
        if k == 1:
            shape.append(extents[i])
            stride.append(strides[i])
        else:
            shape.append(extents[i : i + k])
            stride.append(strides[i : i + k])
        i += k
    layout = L(shape, stride)
    offset = draw(st.integers(0, 5))
    dtype = draw(st.sampled_from([DType.Float32, DType.Int32]))
    t = seq_tensor(offset + layout.cosize, layout, offset, dtype=dtype)
    return t, tuple(extents), tuple(strides)


@given(nested_tensors())
def test_random_layouts_through_numpy(case):
    t, extents, strides = case
    a = np.from_dlpack(t)
    assert a.shape == extents
    assert a.strides == tuple(4 * s for s in strides)
    assert a.flatten(order="F").tolist() == logical(t)
    f = fields(t.__dlpack__(max_version=(1, 0)))
    assert f["byte_offset"] == 4 * t.offset and f["data"] == t.carrier.pointer()


def test_hook_failure_without_a_failure_channel():
    # _is_mutable has no failure channel in the library: its exception is
    # raised after the export, whose managed tensor is then freed.
    class Flaky(BufferCarrier):
        def _is_mutable(self):
            raise ArithmeticError("undecided")

    t = Tensor(Flaky([1.0, 2.0]), 0, flat(2))
    before = sys.getrefcount(t)
    with pytest.raises(ArithmeticError, match="^undecided$"):
        t.__dlpack__(max_version=(1, 0))
    gc.collect()
    assert sys.getrefcount(t) == before


def test_reference_examples():
    a = np.from_dlpack(seq_tensor(6, L([2, 3], [1, 2])))
    assert a.shape == (2, 3) and a.strides == (4, 8)
    b = np.from_dlpack(seq_tensor(24, L([2, [3, 4]], [1, [2, 6]])))
    assert b.shape == (2, 3, 4) and b.strides == (4, 8, 24)
    c = np.from_dlpack(seq_tensor(8, flat(4), offset=2))
    assert c.tolist() == [3, 4, 5, 6]


def test_scalar_layout_has_no_shape_arrays():
    t = seq_tensor(5, L([], []), offset=4)
    f = fields(t.__dlpack__())
    assert f["ndim"] == 0 and f["shape"] == () and f["strides"] == ()
    assert f["byte_offset"] == 16
    a = np.from_dlpack(t)
    assert a.shape == () and float(a) == 5.0


def test_broadcast_view_reads_one_element():
    c = CPU(2)
    c[0], c[1] = 7.0, 8.0
    t = Tensor(c, 0, L([3, 2], [0, 1]))
    a = np.from_dlpack(t)
    assert a.strides == (0, 4)
    assert a.tolist() == [[7.0, 8.0]] * 3
    c[1] = 9.0
    assert a[:, 1].tolist() == [9.0, 9.0, 9.0]


def test_writes_through_the_alias_are_visible():
    t = seq_tensor(10, L([2, 3], [1, 2]), offset=2)
    version = t.carrier.version
    a = np.from_dlpack(t)
    assert a.flags.writeable
    a[1, 2] = 100.0
    assert t[1, 2] == 100.0
    assert t.carrier[2 + 1 + 4] == 100.0
    # A foreign write goes around every carrier entry point.
    assert t.carrier.version == version


# ------------------------------------------------------------ read-only


def test_mutable_tensor_exports_writable():
    t = seq_tensor(4, flat(4))
    assert managed(t.__dlpack__(max_version=(1, 0))).flags == 0
    assert np.from_dlpack(t).flags.writeable


def test_immutable_carrier_exports_read_only():
    c = CPU(4, mutable=False)
    t = Tensor(c, 0, flat(4))
    assert not t.is_mutable()
    assert managed(t.__dlpack__(max_version=(1, 0))).flags == READ_ONLY
    a = np.from_dlpack(t)  # NumPy asks for a versioned capsule
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 1.0


def test_owned_carrier_exports_read_only():
    c = CPU(4)
    t = Tensor(c, 0, flat(4))
    token = c._claim_ownership()
    try:
        assert not t.is_mutable()
        assert managed(t.__dlpack__(max_version=(1, 0))).flags == READ_ONLY
        assert not np.from_dlpack(t).flags.writeable
        c._begin_owner_access(token)
        try:
            # The owner itself sees a mutable tensor.
            assert managed(t.__dlpack__(max_version=(1, 0))).flags == 0
        finally:
            c._end_owner_access(token)
    finally:
        c._relinquish_ownership(token)
    assert managed(t.__dlpack__(max_version=(1, 0))).flags == 0


def test_legacy_export_loses_the_read_only_signal():
    c = CPU(4, mutable=False)
    t = Tensor(c, 0, flat(4))
    cap = t.__dlpack__()
    # A legacy managed tensor has no flags word to carry the signal.
    assert capsule_name(cap) == "dltensor" and type(managed(cap)) is DLManagedTensor
    # NumPy 2 cannot tell either, and so makes every import of a legacy
    # capsule read-only, a mutable tensor's too.
    assert not np.from_dlpack(Exporter(cap)).flags.writeable
    mutable = seq_tensor(4, flat(4))
    assert not np.from_dlpack(Exporter(mutable.__dlpack__())).flags.writeable


def test_the_flag_is_advisory():
    # A consumer that writes anyway changes the storage and nothing else.
    c = CPU(2, mutable=False)
    t = Tensor(c, 0, flat(2))
    cap = t.__dlpack__(max_version=(1, 0))
    assert managed(cap).flags == READ_ONLY
    (ctypes.c_float * 2).from_address(fields(cap)["data"])[0] = 5.0
    assert c[0] == 5.0 and c.version == 0 and t[0] == 5.0


# ------------------------------------------------- versions and autograd


def test_export_changes_neither_versions_nor_gradients():
    x = seq_tensor(3, flat(3))
    y = strideweave.elementwise_mul(x, x)
    ctx = y.autograd_ctx
    x_version, y_version = x.carrier.version, y.carrier.version
    for kwargs in ({}, {"max_version": (1, 0)}):
        for t in (x, y):
            cap = t.__dlpack__(**kwargs)
            del cap
    np.from_dlpack(y)
    assert (x.carrier.version, y.carrier.version) == (x_version, y_version)
    assert y.autograd_ctx is ctx
    assert x.grad is None and y.grad is None
    y.backward(seq_tensor(3, flat(3)))
    assert [x.grad[i] for i in range(3)] == [2.0, 8.0, 18.0]
    # A gradient exports under the same rules.
    g = np.from_dlpack(x.grad)
    assert g.tolist() == [2.0, 8.0, 18.0]


def test_foreign_write_is_missed_by_backward():
    x = seq_tensor(3, flat(3))
    y = strideweave.elementwise_mul(x, x)
    version = x.carrier.version
    a = np.from_dlpack(x)
    a[:] = [10.0, 20.0, 30.0]
    assert x.carrier.version == version
    ones = Tensor(CPU(3), 0, flat(3))
    for i in range(3):
        ones.carrier[i] = 1.0
    y.backward(ones)  # no saved-version error
    assert [x.grad[i] for i in range(3)] == [20.0, 40.0, 60.0]


# ------------------------------------------------------------ lifetime


def test_capsule_keeps_the_tensor_alive():
    t = seq_tensor(4, flat(4))
    tref, cref = weakref.ref(t), weakref.ref(t.carrier)
    cap = t.__dlpack__()
    del t
    gc.collect()
    assert tref() is not None and cref() is not None
    del cap  # unconsumed: the capsule's destructor runs the deleter
    gc.collect()
    assert tref() is None and cref() is None


def test_consumer_array_outlives_the_producer():
    def make():
        return seq_tensor(4, flat(4))

    t = make()
    tref = weakref.ref(t)
    a = np.from_dlpack(t)
    del t
    gc.collect()
    assert tref() is not None
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0]
    del a
    gc.collect()
    assert tref() is None


def test_temporary_expression():
    a = np.from_dlpack(seq_tensor(3, flat(3)) * 2)
    gc.collect()
    assert a.tolist() == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_consumed_capsule_deleter_runs_once(max_version):
    t = seq_tensor(4, flat(4))
    tref = weakref.ref(t)
    cap = t.__dlpack__(max_version=max_version)
    del t
    deleter = consume(cap)
    assert capsule_name(cap).startswith("used_")
    del cap  # consumed: the capsule's destructor does nothing
    gc.collect()
    assert tref() is not None
    deleter()  # called without the GIL (ctypes releases it)
    gc.collect()
    assert tref() is None


@pytest.mark.threads
def test_deleter_on_another_thread():
    t = seq_tensor(4, flat(4))
    tref = weakref.ref(t)
    caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]
    del t
    deleters = [consume(c) for c in caps]
    threads = [threading.Thread(target=d) for d in deleters]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    del caps
    gc.collect()
    assert tref() is None


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_numpy_refuses_a_consumed_capsule(max_version):
    t = seq_tensor(4, flat(4))
    exporter = Exporter(t.__dlpack__(max_version=max_version))
    a = np.from_dlpack(exporter)
    with pytest.raises(ValueError):
        np.from_dlpack(exporter)
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_release_while_exported():
    t = seq_tensor(4, flat(4))
    cap = t.__dlpack__()
    a = np.from_dlpack(t)
    t.carrier.release()  # succeeds: the capsule keeps objects, not storage
    assert t.carrier.is_released() and t.carrier.pointer() == 0
    assert fields(cap)["data"] != 0  # now dangling; never read it
    del a, cap
    gc.collect()


def test_many_exports_free_everything():
    t = seq_tensor(4, flat(4))
    for _ in range(200):
        np.from_dlpack(t)
        t.__dlpack__(max_version=(1, 0))
    gc.collect()
    assert sys.getrefcount(t) == 2


SHUTDOWN_SCRIPT = """
import ctypes, numpy as np
from strideweave import CPU, Tensor, Layout, Shape, Stride
t = Tensor(CPU(4), 0, Layout(Shape(4), Stride(1)))
# Torn down with the interpreter: capsules, a NumPy alias, the tensor.
kept = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0)), np.from_dlpack(t)]
if {late}:
    # A consumer that calls the deleter after the interpreter is gone:
    # glibc's __cxa_atexit runs func(arg) at process exit, after
    # finalization. The deleter must not touch Python then.
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    rename = ctypes.pythonapi.PyCapsule_SetName
    rename.argtypes = [ctypes.py_object, ctypes.c_char_p]
    used = {{b"dltensor": b"used_dltensor", b"dltensor_versioned": b"used_dltensor_versioned"}}
    libc = ctypes.CDLL(None)
    for version in (None, (1, 0)):
        cap = t.__dlpack__(max_version=version)
        name = b"dltensor_versioned" if version else b"dltensor"
        m = get(cap, name)
        # The deleter follows the 48-byte DLTensor and manager_ctx in a
        # legacy managed tensor, and the version and manager_ctx in a
        # versioned one.
        words = ctypes.cast(m, ctypes.POINTER(ctypes.c_void_p))
        deleter = words[7] if not version else words[2]
        assert rename(cap, used[name]) == 0
        assert libc.__cxa_atexit(ctypes.c_void_p(deleter), ctypes.c_void_p(m), None) == 0
        kept.append(cap)
print("ok")
"""


@pytest.mark.parametrize("late", [False, True])
def test_interpreter_shutdown_with_outstanding_exports(late):
    if late and (not sys.platform.startswith("linux") or not _has_cxa_atexit()):
        pytest.skip("needs glibc's __cxa_atexit")
    script = SHUTDOWN_SCRIPT.format(late=late)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert r.stderr == ""


def _has_cxa_atexit():
    try:
        return hasattr(ctypes.CDLL(None), "__cxa_atexit")
    except OSError:
        return False


# ------------------------------------------------------ dlpack_info hook


class BufferCarrier(Carrier):
    """A Python carrier over an array.array of float32 that opts into DLPack."""

    def __init__(self, values, *, info=None, mutable=True):
        super().__init__()
        self.buf = array.array("f", values)
        self.info = info
        self.mutable = mutable
        self.calls = 0

    def size(self):
        return len(self.buf)

    def dtype(self):
        return DType.Float32

    def get_value(self, index):
        return self.buf[index]

    def set_value(self, index, value):
        self.buf[index] = value

    def _is_mutable(self):
        return self.mutable

    def dlpack_info(self):
        self.calls += 1
        if self.info is not None:
            return self.info(self)
        return {"pointer": self.buf.buffer_info()[0], "device_type": 1, "device_id": 0}


def test_custom_carrier_exports_through_its_hook():
    c = BufferCarrier([1, 2, 3, 4, 5, 6])
    t = Tensor(c, 1, L([2, 2], [1, 2]))
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.tolist() == [[2.0, 4.0], [3.0, 5.0]]
    a[0, 0] = 50.0
    assert c.buf[1] == 50.0
    assert c.calls >= 2
    c.mutable = False
    assert managed(t.__dlpack__(max_version=(1, 0))).flags == READ_ONLY


def test_custom_carrier_with_extra_keys_and_a_mapping():
    c = BufferCarrier(
        [1, 2],
        info=lambda s: [
            ("pointer", s.buf.buffer_info()[0]),
            ("device_type", 1),
            ("device_id", 0),
            ("note", "ignored"),
        ],
    )
    assert np.from_dlpack(Tensor(c, 0, flat(2))).tolist() == [1.0, 2.0]


def test_foreign_device_is_reported_verbatim():
    c = BufferCarrier(
        [1, 2, 3],
        info=lambda s: {"pointer": s.buf.buffer_info()[0], "device_type": 2, "device_id": 3},
    )
    t = Tensor(c, 0, flat(3))
    assert t.__dlpack_device__() == (2, 3)
    cap = t.__dlpack__(dl_device=(2, 3), max_version=(1, 0))
    assert fields(cap)["device"] == (2, 3)
    with pytest.raises(BufferError, match="cross-device"):
        t.__dlpack__(dl_device=(1, 0))


def test_hook_result_must_be_a_dict():
    for bad in (5, None, "ab", [1, 2]):
        c = BufferCarrier([1.0], info=lambda s, bad=bad: bad)
        t = Tensor(c, 0, flat(1))
        with pytest.raises(TypeError, match=r"dlpack_info\(\) must return a dict"):
            t.__dlpack_device__()
        with pytest.raises(TypeError, match=r"dlpack_info\(\) must return a dict"):
            t.__dlpack__()


@pytest.mark.parametrize("missing", ["pointer", "device_type", "device_id"])
def test_hook_result_needs_every_key(missing):
    def info(s):
        d = {"pointer": s.buf.buffer_info()[0], "device_type": 1, "device_id": 0}
        del d[missing]
        return d

    t = Tensor(BufferCarrier([1.0], info=info), 0, flat(1))
    with pytest.raises(KeyError) as e:
        t.__dlpack__()
    assert e.value.args == (missing,)
    with pytest.raises(KeyError):
        t.__dlpack_device__()


def test_hook_exceptions_propagate_unchanged():
    class Unplugged(Exception):
        pass

    def info(s):
        raise Unplugged("gone")

    t = Tensor(BufferCarrier([1.0], info=info), 0, flat(1))
    with pytest.raises(Unplugged, match="^gone$"):
        t.__dlpack__()
    with pytest.raises(Unplugged, match="^gone$"):
        t.__dlpack_device__()


def test_hook_null_pointer_is_refused():
    t = Tensor(
        BufferCarrier([1.0], info=lambda s: {"pointer": 0, "device_type": 1, "device_id": 0}),
        0,
        flat(1),
    )
    with pytest.raises(BufferError, match=r"^DLPack data pointer must be non-null$"):
        t.__dlpack__()
    with pytest.raises(BufferError, match=r"^DLPack data pointer must be non-null$"):
        t.__dlpack_device__()


def test_carrier_check_precedes_dtype():
    # A Bool Python carrier without the hook reports the carrier failure.
    t = Tensor(ListCarrier([True], dtype=DType.Bool), 0, flat(1))
    with pytest.raises(BufferError, match="not supported for this carrier"):
        t.__dlpack__()


def test_custom_carrier_capsule_keeps_it_alive():
    c = BufferCarrier([1.0, 2.0])
    t = Tensor(c, 0, flat(2))
    cref = weakref.ref(c)
    a = np.from_dlpack(t)
    del c, t
    gc.collect()
    assert cref() is not None and a.tolist() == [1.0, 2.0]
    del a
    gc.collect()
    assert cref() is None


class PlainCPU(CPU):
    pass


class RefusingCPU(CPU):
    def dlpack_info(self):
        raise BufferError("this CPU subclass keeps its memory")


class AddressCPU(CPU):
    """Reports the device of its choice over its own buffer."""

    def dlpack_info(self):
        info = super().dlpack_info()
        info["device_id"] = 0 if self.size() < 100 else 5
        return info


def test_subclasses_of_builtin_carriers_use_their_hook():
    plain = Tensor(PlainCPU(3), 0, flat(3))
    assert plain.__dlpack_device__() == (1, 0)
    assert np.from_dlpack(plain).tolist() == [0.0, 0.0, 0.0]
    refusing = Tensor(RefusingCPU(3), 0, flat(3))
    for call in (refusing.__dlpack__, refusing.__dlpack_device__):
        with pytest.raises(BufferError, match="^this CPU subclass keeps its memory$"):
            call()
    big = Tensor(AddressCPU(200), 0, flat(200))
    assert big.__dlpack_device__() == (1, 5)
    with pytest.raises(BufferError, match="cross-device"):
        np.from_dlpack(big, device="cpu")  # asks for dl_device (1, 0)
    assert fields(big.__dlpack__(dl_device=(1, 5)))["device"] == (1, 5)


def test_subclass_hook_results_are_validated():
    class Bad(CPU):
        def dlpack_info(self):
            return 5

    class Missing(CPU):
        def dlpack_info(self):
            return {"pointer": self.pointer(), "device_type": 1}

    with pytest.raises(TypeError, match=r"dlpack_info\(\) must return a dict"):
        Tensor(Bad(1), 0, flat(1)).__dlpack__()
    with pytest.raises(KeyError):
        Tensor(Missing(1), 0, flat(1)).__dlpack_device__()


def test_a_generic_subclass_may_opt_in_and_then_meets_the_dtype_check():
    buf = array.array("d", [1.0, 2.0])

    class Opting(Generic):
        def dlpack_info(self):
            return {"pointer": buf.buffer_info()[0], "device_type": 1, "device_id": 0}

    t = Tensor(Opting([1.0, 2.0]), 0, flat(2))
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="only Float32 and Int32"):
        t.__dlpack__()


def test_builtin_dlpack_info():
    c = CPU(2)
    assert c.dlpack_info() == {"pointer": c.pointer(), "device_type": 1, "device_id": 0}
    for carrier in (Carrier(), Generic([1.0]), FileBacked()):
        with pytest.raises(BufferError, match=r"^DLPack is not supported for this carrier$"):
            carrier.dlpack_info()


# ------------------------------------------------------------- no import


def test_no_import_path():
    import strideweave.carriers
    import strideweave.functional
    import strideweave.tensor

    for module in (strideweave, strideweave.carriers, strideweave.functional, strideweave.tensor):
        assert not any("dlpack" in name.lower() for name in dir(module))
    assert not hasattr(Tensor, "from_dlpack")
    cap = seq_tensor(2, flat(2)).__dlpack__()
    for carrier_type in (CPU, Generic):
        with pytest.raises((TypeError, ValueError)):
            carrier_type(cap)


# --------------------------------------------------------------- PyTorch


def test_torch_consumer():
    torch = pytest.importorskip("torch")
    t = seq_tensor(10, L([2, 3], [1, 2]), offset=2)
    x = torch.from_dlpack(t)
    assert x.dtype == torch.float32
    assert tuple(x.shape) == (2, 3) and x.stride() == (1, 2)
    # PyTorch honours byte_offset: it becomes the storage offset.
    assert x.storage_offset() == 2
    assert x.data_ptr() == t.carrier.pointer() + 8
    assert x.t().flatten().tolist() == logical(t)
    x[1, 2] = -1.0
    assert t[1, 2] == -1.0
    i = torch.from_dlpack(seq_tensor(3, flat(3), dtype=DType.Int32))
    assert i.dtype == torch.int32 and i.tolist() == [1, 2, 3]


def test_torch_nested_and_broadcast_layouts():
    torch = pytest.importorskip("torch")
    t = seq_tensor(24, L([2, [3, 4]], [1, [2, 6]]))
    x = torch.from_dlpack(t)
    assert tuple(x.shape) == (2, 3, 4) and x.stride() == (1, 2, 6)
    b = seq_tensor(2, L([3, 2], [0, 1]))
    y = torch.from_dlpack(b)
    assert y.stride() == (0, 1) and y.tolist() == [[1.0, 2.0]] * 3


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_torch_refuses_a_consumed_capsule(max_version):
    torch = pytest.importorskip("torch")
    t = seq_tensor(4, flat(4))
    cap = t.__dlpack__(max_version=max_version)
    x = torch.from_dlpack(cap)
    with pytest.raises(RuntimeError, match="consumed only once"):
        torch.from_dlpack(cap)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_torch_lifetime():
    torch = pytest.importorskip("torch")
    t = seq_tensor(4, flat(4))
    tref = weakref.ref(t)
    x = torch.from_dlpack(t)
    del t
    gc.collect()
    assert tref() is not None and x.tolist() == [1.0, 2.0, 3.0, 4.0]
    del x
    gc.collect()
    assert tref() is None


def test_torch_ignores_the_read_only_flag():
    torch = pytest.importorskip("torch")
    t = Tensor(CPU(2, mutable=False), 0, flat(2))
    # Known consumer defect: PyTorch asks for a versioned capsule, which
    # carries the read-only flag, but imports a writable tensor anyway.
    x = torch.from_dlpack(t)
    x[0] = 3.0
    assert t[0] == 3.0


# ------------------------------------------------- the C header beside dlpack


HEADER_FIRST = """
#include <strideweave/dlpack.h>
#include <dlpack/dlpack.h>
int main(void) {
    DLDevice d = {kDLROCM, 0};
    DLManagedTensorVersioned m;
    m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    return d.device_id + (int)(m.flags - 1) + (DLPACK_MAJOR_VERSION - 1);
}
"""


def _compile(tmp_path, source, *include_dirs):
    import shutil
    from pathlib import Path

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    root = Path(__file__).resolve().parents[2]
    src = tmp_path / "t.c"
    src.write_text(source)
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{root / 'include'}"]
    flags += [f"-I{d}" for d in include_dirs]
    # The compiler runs without a sanitizer runtime the test run preloads.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run(
        [cc, *flags, str(src), "-o", str(tmp_path / "t")], capture_output=True, text=True, env=env
    )


def test_c_header_alone_declares_the_whole_standard(tmp_path):
    # Without the standard's header on the path, ours stands in for all of
    # it, enumerators included (a later #include of it is skipped).
    source = HEADER_FIRST.replace("#include <dlpack/dlpack.h>\n", "")
    run = _compile(tmp_path, source)
    assert run.returncode == 0, run.stderr


def test_c_header_before_the_standard_one(tmp_path):
    # With the standard's header on the path (PyTorch ships one), ours
    # includes it: whichever comes first, the standard's declarations win.
    torch = pytest.importorskip("torch")
    from pathlib import Path

    official = Path(torch.__file__).parent / "include" / "ATen" / "dlpack.h"
    if not official.exists():
        pytest.skip("this PyTorch ships no dlpack.h")
    inc = tmp_path / "inc" / "dlpack"
    inc.mkdir(parents=True)
    (inc / "dlpack.h").write_text(official.read_text())
    newer = "    DLDevice e = {kDLMAIA, 0};\n    (void)e;\n"
    source = HEADER_FIRST.replace(
        "    DLManagedTensorVersioned m;", newer + "    DLManagedTensorVersioned m;"
    )
    run = _compile(tmp_path, source, tmp_path / "inc")
    assert run.returncode == 0, run.stderr
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    assert subprocess.run([str(tmp_path / "t")], env=env).returncode == 0
