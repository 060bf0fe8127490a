"""The OpenCL carrier, on whatever OpenCL runtime is installed (PoCL in CI).

Tests that need a runtime skip with the reason when there is none, and fail
instead when STRIDEWEAVE_REQUIRE_OPENCL is set (CI). The validation tests run
without a runtime.

Checklist: the accelerator requirements of the movement specification and of
the carrier contract (Metal's, with OpenCL in its place), and their tests.

- Class final, subclassing refused: ``test_final_class``.
- Exported at the top level, from strideweave.carriers and
  strideweave.carriers.opencl: ``test_exports``.
- Imports without the runtime; construction without it raises RuntimeError
  with an install hint; opencl_devices() is empty:
  ``test_missing_runtime_in_a_fresh_process``.
- Validation before the runtime loads (TypeError size, ValueError negative
  size, TypeError dtype, ValueError unsupported dtype "OpenCL ..."):
  ``test_validation_before_the_runtime``.
- supports_storage_dtype without the runtime and on an uninitialised
  instance, exactly {Float32, Int32, Bool}: ``test_supports_storage_dtype``.
- Storage zero-initialised unless empty; synchronised reads:
  ``test_zero_initialised_and_reads``.
- A scalar write bumps the version by one, published only after the device
  confirms; a failure leaves value and version: ``test_scalar_write_rule``,
  ``test_failed_write_is_not_published``.
- Common checks (index range, float index, int32 range, integer, immutable):
  ``test_common_checks``.
- Factories (dtype override, immutable, empty, after release) and release:
  ``test_factories_and_release``.
- Scatter synchronised, version once, atomic on a bad index or value:
  ``test_scatter``.
- DLPack export refused with BufferError: ``test_dlpack_refused``.
- Exact bulk pairs CPU->OpenCL, OpenCL->CPU, OpenCL->OpenCL,
  FileBacked->OpenCL and OpenCL->FileBacked registered eagerly, not for
  subclasses (a CPU subclass falls back to the elementwise copy):
  ``test_registered_pairs``.
- A move copies the exact physical span with holes, keeps the layout
  (stride 0 included), does not bump the destination version, releases the
  source; fresh OpenCL tails are zero, CPU tails untouched; the same through
  a file, whose version a move keeps:
  ``test_move_round_trip_over_random_layouts``, ``test_move_tails``; large
  moves (chunked host copies) and reused device memory (zeroed, tails
  kept): ``test_large_moves_keep_every_chunk``,
  ``test_reused_device_memory_is_overwritten``.
- move_async returns a handle completed on the executor, also to and from
  a file, whose read and write wait for the device on the executor:
  ``test_move_async``, ``test_file_moves_are_asynchronous``.
- Synchronisation failure at any stage (enqueue, map, wait) is atomic, for
  the file pairs too, and so is a failed disk read or write:
  ``test_move_failure_is_atomic``, ``test_file_move_io_failure_is_atomic``.
- Backward through the exact inverse pair, fresh CPU gradient:
  ``test_move_backward``.
- OpenCL+CPU and OpenCL+FileBacked are Evictable hierarchies (both pairs
  have exact moves both ways); a pair with only the elementwise move (OpenCL
  with a CPU subclass) is refused before any tier is claimed:
  ``test_evictable_tiers``.
- Profiling records move.submit and move.complete for one logical move:
  ``test_profiled_move``; the completion's interval covers the device work
  (it contains the moment a held device is let go, and starts before the
  submission's device commands were enqueued), the profiler exits without
  waiting for the device and gets the completion later, once however often
  the move is waited for, and a failed wait records a failed completion:
  ``test_profiled_move_covers_the_device_work``,
  ``test_profiled_move_failure``.
- Structural views (permute, rearrange) share the storage and compile
  nothing: ``test_layout_views_share_storage``.

Operations on OpenCL tensors (generated kernels, their cache, autograd) are
tested in test_opencl_ops.py, TiledEvictable with OpenCL tiers in
test_tiled_opencl.py. Two devices (PoCL makes two of the CPU): moves
between them through the host, atomic at every stage, tiers on both, and
operations refused across them (ValueError, as PyTorch refuses operands on
two devices): ``test_two_devices_in_a_fresh_process``.
"""

import os
import subprocess
import sys
import threading

import pytest
import strideweave as sw
import strideweave.friendly as F
from helpers_opencl import device_held, devices
from hypothesis import given, settings
from hypothesis import strategies as st
from strideweave import CPU, DType, Evictable, FileBacked, Generic, OpenCL, Tensor, _native


def L(shape, stride):
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(list(stride)))


def values(t):
    return [t[i] for i in range(t.layout.size)]


# ----------------------------------------------------- without a runtime


def test_exports():
    import strideweave.carriers.opencl as mod

    assert sw.OpenCL is sw.carriers.OpenCL is mod.OpenCL
    assert sw.opencl_devices is mod.opencl_devices
    assert "OpenCL" in sw.carriers.__all__


def test_final_class():
    with pytest.raises(TypeError, match="closed carrier implementation"):

        class Sub(OpenCL):  # noqa: F841 (never made)
            pass


def test_validation_before_the_runtime():
    with pytest.raises(TypeError):
        OpenCL(1.5)
    with pytest.raises(ValueError, match="^OpenCL size must be non-negative$"):
        OpenCL(-1)
    with pytest.raises(TypeError, match="^OpenCL dtype must be a DType$"):
        OpenCL(2, dtype="Float32")
    with pytest.raises(ValueError, match="^OpenCL dtype must be"):
        OpenCL(2, dtype=DType.Floating)
    with pytest.raises(ValueError, match="^OpenCL dtype must be"):
        OpenCL(2, dtype=DType.Any)


def test_supports_storage_dtype():
    bare = OpenCL.__new__(OpenCL)
    got = {d for d in DType if bare.supports_storage_dtype(d)}
    assert got == {DType.Float32, DType.Int32, DType.Bool}
    with pytest.raises(TypeError, match="storage dtype must be a DType"):
        bare.supports_storage_dtype("Float32")


def test_missing_runtime_in_a_fresh_process():
    code = (
        "import strideweave as sw\n"
        "assert sw.opencl_devices() == []\n"
        "try:\n"
        "    sw.OpenCL(2)\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
        "c = sw.OpenCL.__new__(sw.OpenCL)\n"
        "assert not hasattr(c, '_storage')\n"
        "try:\n"
        "    sw.OpenCL(-1)\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    env = dict(os.environ, STRIDEWEAVE_OPENCL_LIBRARY="/nonexistent/libOpenCL.so.1")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    first, second = out.splitlines()
    assert first.startswith("OpenCL runtime is not available: ")
    assert "apt-get install ocl-icd-libopencl1 pocl-opencl-icd" in first
    assert second == "OpenCL size must be non-negative"


# ----------------------------------------------------------- storage


def test_zero_initialised_and_reads(runtime):
    for dtype, zero in ((DType.Float32, 0.0), (DType.Int32, 0), (DType.Bool, False)):
        c = OpenCL(5, dtype=dtype)
        assert c.size() == 5 and c.dtype() is dtype and list(c) == [zero] * 5
    assert OpenCL(3, empty=True).size() == 3
    assert OpenCL(0).size() == 0
    d = runtime[0]
    assert {"index", "platform", "name", "type", "global_memory", "default"} <= set(d)
    assert OpenCL(1, device=d["index"]).device == d["index"]
    with pytest.raises(ValueError, match="out of range"):
        OpenCL(1, device=len(runtime))


def test_scalar_write_rule(runtime):
    c = OpenCL(3)
    alias = Tensor(c, 0, L([3], [1]))
    c[1] = 2.5
    assert c.version == 1 and c[1] == 2.5 and alias[1] == 2.5
    c.set_value(2, 4)
    assert c.version == 2 and list(c) == [0.0, 2.5, 4.0]


def test_failed_write_is_not_published(runtime, no_faults):
    c = OpenCL(2, dtype=DType.Int32)
    c[0] = 7
    for stage, after in (("wait", 0), ("enqueue", 1)):
        _native._debug_opencl_fail(stage, after)
        with pytest.raises(RuntimeError, match=r"^OpenCL write failed \(injected\)$"):
            c[0] = 9
        assert c[0] == 7 and c.version == 1


def test_common_checks(runtime):
    c = OpenCL(2, dtype=DType.Int32)
    with pytest.raises(IndexError, match="^Carrier index out of range$"):
        c[2]
    with pytest.raises(TypeError):
        c[0.5]
    with pytest.raises(OverflowError, match="out of int32 range"):
        c[0] = 2**31
    with pytest.raises(TypeError, match="must be an integer"):
        c[0] = 1.5
    frozen = OpenCL(1, mutable=False)
    with pytest.raises(RuntimeError, match="^Carrier is not mutable$"):
        frozen[0] = 1.0
    assert c.version == 0 and frozen.version == 0


def test_factories_and_release(runtime):
    c = OpenCL(2)
    a = c.allocate_like(3, dtype=DType.Int32, mutable=False)
    assert type(a) is OpenCL and a.dtype() is DType.Int32 and list(a) == [0, 0, 0]
    with pytest.raises(RuntimeError, match="^Carrier is not mutable$"):
        a[0] = 1
    n = c.new_like([1, None, 2.5])
    assert type(n) is OpenCL and list(n) == [1.0, 0.0, 2.5] and n.version == 0
    assert c.allocate_like(2, empty=True).size() == 2
    c.release()
    assert c.size() == 0 and c.supports_storage_dtype(DType.Int32)
    with pytest.raises(RuntimeError, match="^Carrier is released$"):
        c[0]
    assert list(c.new_like([3.0])) == [3.0]
    assert c.allocate_like(1).size() == 1


def test_scatter(runtime, no_faults):
    c = OpenCL(6)
    onto = Tensor(c, 1, L([5], [1]))
    src = Tensor(CPU(2).new_like([1.5, -3.0]), 0, L([2], [1]))
    c.scatter(src, onto, L([2], [3]))
    assert list(c) == [0.0, 1.5, 0.0, 0.0, -3.0, 0.0] and c.version == 1
    with pytest.raises(IndexError, match="^Carrier index out of range$"):
        c.scatter(src, onto, L([2], [9]))
    bad = Tensor(Generic([1.0, "x"]), 0, L([2], [1]))
    with pytest.raises(TypeError, match="real number"):
        c.scatter(bad, onto, L([2], [1]))
    _native._debug_opencl_fail("wait", 0)
    with pytest.raises(RuntimeError, match="injected"):
        c.scatter(src, onto, L([2], [1]))
    assert list(c) == [0.0, 1.5, 0.0, 0.0, -3.0, 0.0] and c.version == 1


def test_dlpack_refused(runtime):
    c = OpenCL(2)
    with pytest.raises(BufferError, match="DLPack is not supported"):
        c.dlpack_info()
    with pytest.raises(BufferError, match="DLPack is not supported"):
        Tensor(c, 0, L([2], [1])).__dlpack__()


# ------------------------------------------------------------- moves


class HostCPU(CPU):
    """Not CPU itself: its moves with OpenCL are the elementwise copy."""


def file_of(vals):
    """A FileBacked Float32 carrier holding vals."""
    fb = FileBacked(dtype=DType.Float32)
    fb._allocate(len(vals))
    for i, v in enumerate(vals):
        fb[i] = float(v)
    return fb


def cpu(vals, layout=None, offset=0):
    c = CPU(0).new_like([float(v) for v in vals])
    return Tensor(c, offset, layout or L([len(vals)], [1]))


def test_registered_pairs(runtime):
    # The exact pairs copy in bulk: the destination's version stays 0 (an
    # elementwise copy would bump it once per element).
    t = cpu([1, 2, 3])
    dev = OpenCL(3)
    m = sw.move(t, dev)
    assert dev.version == 0 and list(dev) == [1.0, 2.0, 3.0]
    back = CPU(3)
    sw.move(m, back)
    assert back.version == 0 and list(back) == [1.0, 2.0, 3.0]
    other = OpenCL(3)
    sw.move(Tensor(OpenCL(0).new_like([4.0, 5.0, 6.0]), 0, L([3], [1])), other)
    assert other.version == 0 and list(other) == [4.0, 5.0, 6.0]

    fb = file_of([1, 2, 3])
    dev = OpenCL(3)
    m = sw.move(Tensor(fb, 0, L([3], [1])), dev)
    assert dev.version == 0 and list(dev) == [1.0, 2.0, 3.0] and fb.is_released()
    out = file_of([9, 9, 9, 9])
    version = out.version
    sw.move(m, out)
    assert out.version == version and list(out) == [1.0, 2.0, 3.0, 9.0]

    src = Tensor(HostCPU(3), 0, L([3], [1]))
    dev = OpenCL(3)
    sw.move(src, dev)
    assert dev.version == 3  # not the CPU pair: element by element


@st.composite
def layouts(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    stride = [draw(st.integers(0, 5)) for _ in range(rank)]
    return shape, stride, draw(st.integers(0, 3))


@settings(max_examples=40, deadline=None)
@given(layouts())
def test_move_round_trip_over_random_layouts(spec):
    if not devices():
        pytest.skip("no OpenCL runtime")
    shape, stride, offset = spec
    layout = L(shape, stride)
    n = offset + layout.cosize
    src = cpu(range(n), layout, offset)
    want = values(src)
    dev = OpenCL(layout.cosize + 2)
    m = sw.move(src, dev)
    assert src.carrier.size() == 0  # released
    assert m.layout == layout and m.offset == 0 and m.carrier is dev
    assert values(m) == want and dev.version == 0
    assert list(dev)[: layout.cosize] == [float(offset + i) for i in range(layout.cosize)]
    assert list(dev)[layout.cosize :] == [0.0, 0.0]
    dev2 = OpenCL(layout.cosize)
    m2 = sw.move(m, dev2)
    host = CPU(layout.cosize)
    m3 = sw.move(m2, host)
    assert values(m3) == want and m3.layout == layout and host.version == 0
    # Through a file: an empty one grows to the span, a larger one keeps
    # its tail, and neither's version moves.
    grown = FileBacked(dtype=DType.Float32)
    f1 = sw.move(sw.move(m3, OpenCL(layout.cosize)), grown)
    assert grown.size() == layout.cosize and values(f1) == want and grown.version == 0
    dev3 = OpenCL(layout.cosize + 1)
    m4 = sw.move(f1, dev3)
    assert values(m4) == want and dev3.version == 0 and list(dev3)[-1] == 0.0
    wide = file_of([5.0] * (layout.cosize + 1))
    version = wide.version
    f2 = sw.move(m4, wide)
    assert values(f2) == want and wide.version == version and wide[layout.cosize] == 5.0


def test_move_tails(runtime):
    dev = OpenCL(5)
    sw.move(cpu([1, 2]), dev)
    assert list(dev) == [1.0, 2.0, 0.0, 0.0, 0.0]
    host = CPU(0).new_like([9.0, 9.0, 9.0, 9.0])
    sw.move(Tensor(OpenCL(0).new_like([1.0, 2.0]), 0, L([2], [1])), host)
    assert list(host) == [1.0, 2.0, 9.0, 9.0]


def test_move_async(runtime):
    n = 1 << 20
    src = Tensor(CPU(n), 0, L([n], [1]))
    src.carrier[n - 1] = 5.0
    handle = sw.move_async(src, OpenCL(n))
    moved = handle.wait()
    assert handle.done and moved.carrier[n - 1] == 5.0
    assert handle.wait() is moved
    back = sw.move_async(moved, CPU(n)).wait()
    assert back.carrier[n - 1] == 5.0


@pytest.mark.parametrize("to_file", [True, False])
def test_file_moves_are_asynchronous(runtime, to_file):
    # The file is read or written on the move executor once the device has
    # mapped the buffer: while the device is held, the move is pending.
    src = Tensor(
        OpenCL(0).new_like([1.0, 2.0, 3.0]) if to_file else file_of([1, 2, 3]), 0, L([3], [1])
    )
    dst = FileBacked(dtype=DType.Float32) if to_file else OpenCL(3)
    with device_held():
        handle = sw.move_async(src, dst)
        assert not handle.done
    moved = handle.wait()
    assert moved.carrier is dst and list(dst) == [1.0, 2.0, 3.0]
    assert src.carrier.is_released()


def test_large_moves_keep_every_chunk(runtime):
    # 10 MiB from an offset: the copy to CPU memory runs in 4 MiB chunks
    # over the thread pool, the last one partial.
    n = (10 << 20) // 4 + 5
    src = Tensor(F.arange(n).carrier, 3, L([n - 3], [1]))
    dev = sw.move(src, OpenCL(n))
    back = sw.move(dev, CPU(n - 3))
    chunk = (4 << 20) // 4
    for i in (0, 1, chunk - 1, chunk, chunk + 1, 2 * chunk, n - 5, n - 4):
        assert back[i] == float(i + 3)


def test_reused_device_memory_is_overwritten(runtime):
    # Released buffers of 2 MiB and more keep their memory for the next
    # buffer of that size: a new carrier still reads zero, and a move's
    # fresh buffer still carries the destination's own tail.
    n = 1 << 20
    for _ in range(2):
        sw.move(sw.move(F.full(n, value=7.0), OpenCL(n)), CPU(n))
    dev = OpenCL(n)
    assert dev[0] == 0.0 and dev[n - 1] == 0.0
    moved = sw.move(F.full(n - 8, value=2.0), dev)
    assert moved.carrier is dev and dev[n - 9] == 2.0
    assert [dev[i] for i in range(n - 8, n)] == [0.0] * 8


@pytest.mark.parametrize(
    ("direction", "stage", "after"),
    [
        ("to_device", "enqueue", 0),
        ("to_device", "wait", 0),
        ("to_host", "map", 0),
        ("to_host", "wait", 0),
        ("device_to_device", "enqueue", 0),
        ("device_to_device", "wait", 0),
        ("file_to_device", "map", 0),
        ("file_to_device", "wait", 0),
        ("device_to_file", "map", 0),
        ("device_to_file", "wait", 0),
    ],
)
def test_move_failure_is_atomic(runtime, no_faults, direction, stage, after):
    host = CPU(0).new_like([0.0, 1.0, 2.0])
    dev = OpenCL(0).new_like([-1.0, -2.0, -3.0])
    dev2 = OpenCL(0).new_like([7.0, 8.0, 9.0])
    fb = file_of([4, 5, 6])
    src, dst = {
        "to_device": (host, dev),
        "to_host": (dev, host),
        "device_to_device": (dev, dev2),
        "file_to_device": (fb, dev),
        "device_to_file": (dev, fb),
    }[direction]
    carriers = (host, dev, dev2, fb)
    before = [list(c) for c in carriers]
    versions = [c.version for c in carriers]
    t = Tensor(src, 0, L([3], [1]))
    _native._debug_opencl_fail(stage, after)
    handle = sw.move_async(t, dst)
    with pytest.raises(RuntimeError, match="injected"):
        handle.wait()
    assert src.size() == 3  # not released
    assert [list(c) for c in carriers] == before
    assert [c.version for c in carriers] == versions
    assert sw.move(t, dst).carrier is dst  # usable again


@pytest.mark.parametrize(("to_file", "grow"), [(True, True), (True, False), (False, False)])
def test_file_move_io_failure_is_atomic(runtime, to_file, grow):
    # The disk read (into the device's fresh buffer) or write (from the
    # mapped source) fails on the move executor: the source stays, and the
    # destination keeps its values and version (an empty file is not grown).
    dev = OpenCL(0).new_like([-1.0, -2.0, -3.0])
    fb = FileBacked(dtype=DType.Float32) if grow else file_of([4, 5, 6])
    src, dst = (dev, fb) if to_file else (fb, dev)
    want, before, version = list(src), list(dst), dst.version
    t = Tensor(src, 0, L([3], [1]))
    _native._debug_fail_io_after(0)
    try:
        with pytest.raises(OSError, match="FileBacked"):
            sw.move_async(t, dst).wait()
    finally:
        _native._debug_fail_io_after(-1)
    assert src.size() == 3 and not src.is_released()
    assert list(dst) == before and dst.version == version
    assert list(sw.move(t, dst).carrier)[:3] == want


@pytest.mark.parametrize("stage", ["enqueue", "map", "wait"])
def test_large_upload_is_whole_or_nothing(runtime, no_faults, stage):
    # A 5 MiB upload from an offset: a failure at every successive point
    # of that stage leaves the destination as it was, and the first move
    # that gets through delivers every value.
    import array

    m = (5 << 20) // 4 + 3
    src = array.array("f", range(m + 2))
    t = Tensor(CPU(len(src), src.buffer_info()[0]), 2, L([m], [1]))
    dst = OpenCL(m)
    version = dst.version
    for after in range(8):
        _native._debug_opencl_fail(stage, after)
        try:
            sw.move(t, dst)
            break
        except RuntimeError as e:
            assert "injected" in str(e)
            assert (dst[0], dst[m // 2], dst[m - 1], dst.version) == (0.0, 0.0, 0.0, version)
            assert t.carrier.size() == m + 2  # the source is not released
    else:
        pytest.fail(f"every {stage} failed")
    _native._debug_opencl_fail("none", 0)
    out = array.array("f", bytes(4 * m))
    sw.move(Tensor(dst, 0, L([m], [1])), CPU(m, out.buffer_info()[0]))
    assert out == array.array("f", range(2, m + 2))


TWO_DEVICES = """
import strideweave as sw
from strideweave import Evictable, OpenCL, Tensor, _native
from strideweave.carriers.tiled_evictable import TiledEvictable, TileSet

def L(n):
    return sw.Layout(sw.Shape([n]), sw.Stride([1]))

assert len(sw.opencl_devices()) == 2
# A move between devices: the span with its offset into a fresh buffer of
# the other device, whose tail stays; asynchronous; the version kept.
a = OpenCL(0, device=0).new_like([1.0, 2.0, 3.0, 4.0])
b = OpenCL(5, device=1)
m = sw.move(Tensor(a, 1, L(3)), b)
assert list(b) == [2.0, 3.0, 4.0, 0.0, 0.0] and b.version == 0 and a.is_released()
c = OpenCL(0, device=0).new_like([9.0] * 6)
assert sw.move_async(m, c).wait().carrier is c
assert list(c) == [2.0, 3.0, 4.0, 9.0, 9.0, 9.0] and c.version == 0
# A failure at each stage leaves both carriers as they were.
for stage in ("map", "enqueue", "wait"):
    src = OpenCL(0, device=0).new_like([5.0, 6.0])
    dst = OpenCL(0, device=1).new_like([7.0, 8.0])
    _native._debug_opencl_fail(stage, 0)
    try:
        sw.move(Tensor(src, 0, L(2)), dst)
        raise AssertionError(stage + " did not fail")
    except RuntimeError as e:
        assert "injected" in str(e)
    _native._debug_opencl_fail("none", 0)
    assert (list(src), list(dst), dst.version) == ([5.0, 6.0], [7.0, 8.0], 0)
    assert not src.is_released()
# Operations need their operands on one device.
x0 = Tensor(OpenCL(0, device=0).new_like([1.0]), 0, L(1))
x1 = Tensor(OpenCL(0, device=1).new_like([1.0]), 0, L(1))
try:
    sw.add(x0, x1)
    raise AssertionError("add across devices")
except ValueError as e:
    assert str(e) == "rhs is on OpenCL device 1, the other operands on device 0"
# Tiers on two devices move tiles in bulk, staged through the host.
t = TiledEvictable(
    OpenCL(0, device=0).new_like([float(i) for i in range(8)]), OpenCL(8, device=1), (4,), (2,)
)
t.evict(t.valid_tiles)
t.promote(TileSet([(1,)]))
t[0] = -1.0
t.evict(t.valid_tiles)
assert [t[i] for i in range(8)] == [-1.0] + [float(i) for i in range(1, 8)]
assert (t.primary.version, t.secondary.version) == (1, 0)
ev = Evictable(OpenCL(0, device=0).new_like([1.0, 2.0]), OpenCL(0, device=1))
ev.evict()
ev.promote()
assert list(ev) == [1.0, 2.0]
print("ok")
"""


def test_two_devices_in_a_fresh_process(runtime):
    # PoCL makes two devices of the CPU when asked (POCL_DEVICES), each
    # with its own context: moves between them go through the host.
    if not any(d["platform"] == "Portable Computing Language" for d in runtime):
        pytest.skip("two devices are made with PoCL's POCL_DEVICES")
    env = dict(os.environ, POCL_DEVICES="pthread pthread")
    env.pop("STRIDEWEAVE_OPENCL_DEVICE", None)
    out = subprocess.run(
        [sys.executable, "-c", TWO_DEVICES], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_move_backward(runtime):
    x = cpu([1.0, 2.0, 3.0])
    y = sw.mul(x, 2.0)
    m = sw.move(y, OpenCL(3))
    g = Tensor(OpenCL(0).new_like([10.0, 20.0, 30.0]), 0, L([3], [1]))
    (grad,) = m.autograd_ctx.backward(g)
    assert type(grad.carrier) is CPU and values(grad) == [10.0, 20.0, 30.0]
    assert g.carrier.size() == 3  # the caller's gradient carrier stays live
    m.backward(g)
    assert type(x.grad.carrier) is CPU and values(x.grad) == [20.0, 40.0, 60.0]


def test_evictable_tiers(runtime):
    ev = Evictable(OpenCL(0).new_like([1.0, 2.0]), CPU(2))
    ev.evict()
    ev.promote()
    assert list(ev) == [1.0, 2.0]
    for device_primary in (True, False):
        vals = [3.0, 4.0]
        dev, fb = OpenCL(0).new_like(vals), FileBacked(dtype=DType.Float32)
        ev = Evictable(dev, fb) if device_primary else Evictable(file_of(vals), OpenCL(0))
        ev.evict()
        ev.promote()
        assert list(ev) == vals
    host, dev = HostCPU(2), OpenCL(2)
    with pytest.raises(RuntimeError, match="exact registered move operation"):
        Evictable(dev, host)
    dev[0] = 1.0  # neither tier was claimed
    host[0] = 1.0


def test_profiled_move(runtime):
    with sw.profile() as prof:
        sw.move(cpu([1.0, 2.0]), OpenCL(2))
    submit, complete = prof.events()
    assert (submit.name, complete.name) == ("move.submit", "move.complete")
    assert complete.parent_id == submit.id and submit.carrier_type is CPU


@pytest.mark.parametrize("to_device", [True, False])
def test_profiled_move_covers_the_device_work(runtime, to_device):
    host, dev = CPU(0).new_like([1.0, 2.0, 3.0]), OpenCL(0).new_like([4.0, 5.0, 6.0])
    src, dst = (host, OpenCL(3)) if to_device else (dev, CPU(3))
    t = Tensor(src, 0, L([3], [1]))
    with device_held() as held:
        with sw.profile(record_shapes=True) as prof:
            h = sw.move_async(t, dst)
        # The profiler exited while the copy cannot run: it did not wait.
        assert not h.done
        (submit,) = prof.events()
        assert submit.name == "move.submit" and submit.succeeded
        released = held.release()
    assert values(h.wait()) == values(h.wait())
    events = prof.events()
    assert events is prof.events()
    sub, com = events
    assert sub == submit and com.name == "move.complete" and com.parent_id == sub.id
    assert com.succeeded and com.thread_id != threading.get_ident()
    assert (com.carrier_type, com.input_shapes, com.implementation_type) == (
        sub.carrier_type,
        sub.input_shapes,
        sub.implementation_type,
    )
    # The copy could not start before the release: the completion spans it.
    assert com.start_time_ns <= released <= com.start_time_ns + com.duration_ns
    # Its device commands were enqueued inside the submission, after the
    # completion's start.
    assert sub.start_time_ns <= com.start_time_ns <= sub.start_time_ns + sub.duration_ns
    assert {(r.name, r.count) for r in prof.key_averages()} == {
        ("move.submit", 1),
        ("move.complete", 1),
    }


def test_profiled_move_failure(runtime, no_faults):
    t, dst = cpu([1.0, 2.0]), OpenCL(2)
    with sw.profile() as prof:
        _native._debug_opencl_fail("wait", 0)
        h = sw.move_async(t, dst)
    with pytest.raises(RuntimeError, match="injected"):
        h.wait()
    sub, com = prof.events()
    assert sub.succeeded and not com.succeeded and com.parent_id == sub.id


def test_layout_views_share_storage(runtime):
    c = OpenCL(0).new_like([float(i) for i in range(6)])
    t = Tensor(c, 0, L([2, 3], [1, 2]))
    p = sw.permute(t, [1, 0])
    assert p.carrier is c and values(p) == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    r = sw.rearrange(t, "a b -> b a")
    assert r.carrier is c and values(r) == values(p)
    c[2] = 9.0
    assert values(p)[1] == 9.0  # a view, not a copy
    # Computing operations run kernels (tests/python/test_opencl_ops.py).
    assert values(sw.add(p, p)) == [0.0, 18.0, 8.0, 2.0, 6.0, 10.0]
