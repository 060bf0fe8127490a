"""TiledEvictable with an OpenCL primary tier (later-api.md section 8 with
the OpenCL carrier of section 11 as a tier), against the same carrier with a
CPU primary.

Tests that need a runtime skip with the reason when there is none, and fail
instead when STRIDEWEAVE_REQUIRE_OPENCL is set (CI).

Checklist (what is built, and its tests):

- Construction over OpenCL+CPU, OpenCL+OpenCL and CPU+OpenCL; tier
  ownership, initial residency, storage dtypes; an empty OpenCL primary grows
  to the extent; release: ``test_construction_and_release``.
- OpenCL with FileBacked (either order) moves tiles through a host copy of
  each tile (the pair has exact bulk moves both ways); an empty FileBacked
  tier grows: ``test_filebacked_tiers``. A pair with only the elementwise
  move (OpenCL with a CPU subclass) is refused with RuntimeError "exact registered
  move operation" before any tier is claimed or grown, as for Evictable
  (11.9): ``test_elementwise_tier_is_refused``.
- Promote and evict move tiles through the bulk moves' device writes, reads
  and copies (the tiers' versions do not move, as they would element by
  element), over geometries of rank 1 to 4, for Float32, Int32 and Bool, over
  a CPU or a FileBacked secondary, with the same values as a CPU primary:
  ``test_residency_against_cpu``,
  ``test_residency_of_bool_tiles``, ``test_tiles_between_two_devices_tiers``.
- A failing tier transfer (enqueue or wait, promote or evict, blocking or
  asynchronous, over a CPU or a FileBacked secondary; a failed disk read or
  write) rolls the whole request back, and it can be retried:
  ``test_failed_transfer_rolls_back``, ``test_failed_disk_io_rolls_back``.
- The direct operations (add, elementwise_mul, mul, relu, reduce_sum,
  matmul) run OpenCL kernels and return OpenCL tensors equal to the CPU
  primary's, with one outer node and gradients as TiledEvictable tensors over
  OpenCL equal to the CPU ones: ``test_direct_operations_against_cpu``,
  ``test_direct_gradients_against_cpu``.
- project onto a fresh OpenCL carrier, onto a given or an empty growable
  OpenCL destination (a CPU destination is refused: the destination must be
  of the primary's exact class), with a permutation inside tiles, and its
  backward; scatter replace and add and their gradients, all equal to the
  CPU primary's: ``test_project_against_cpu``,
  ``test_project_destinations``, ``test_scatter_against_cpu``.
- Tile work on OpenCL tiers runs on the move executor: handles are pending
  while the device is held: ``test_tile_work_is_asynchronous``.
"""

from __future__ import annotations

import numpy as np
import pytest
import strideweave as sw
from helpers_opencl import device_held, need_runtime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strideweave import CPU, DType, FileBacked, OpenCL, Tensor, _native
from strideweave.carriers.tiled_evictable import TiledEvictable, TileSelection, TileSet
from strideweave.carriers.tiled_evictable.projection import project, scatter

F32, I32 = DType.Float32, DType.Int32


def compact(shape):
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(strides))


def twins(grid, tile, vals, dtype=F32, file=False):
    """The same TiledEvictable with a CPU and with an OpenCL primary (CPU
    secondaries, or for the OpenCL one a growing FileBacked when file),
    holding vals."""
    n = len(vals)
    cpu = TiledEvictable(CPU(0, dtype=dtype).new_like(vals), CPU(n, dtype=dtype), grid, tile)
    secondary = FileBacked(dtype=dtype) if file else CPU(n, dtype=dtype)
    ocl = TiledEvictable(OpenCL(0, dtype=dtype).new_like(vals), secondary, grid, tile)
    return cpu, ocl


def logical(t):
    """A tensor's logical values (an OpenCL one read back through a move)."""
    if isinstance(t.carrier, OpenCL):
        host = sw.move(t, CPU(t.carrier.size(), dtype=t.carrier.dtype()))
        return [host[i] for i in range(t.layout.size)]
    return [t[i] for i in range(t.layout.size)]


def agree(want, got, exact=False):
    if exact:
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def state(t):
    return (t.primary_tiles, t.secondary_tiles, t.valid_tiles, t.dirty_tiles, t.version)


# --------------------------------------------------------- construction


def test_construction_and_release(runtime):
    vals = [float(i) for i in range(24)]
    p, q = OpenCL(0).new_like(vals), CPU(24)
    t = TiledEvictable(p, q, (3, 2), (2, 2))
    assert t.primary is p and t.secondary is q and p.is_owned() and q.is_owned()
    assert t.primary_tiles == t.valid_tiles and len(t.valid_tiles) == 6
    assert [t[i] for i in range(24)] == vals
    assert {d for d in (F32, I32, DType.Bool) if t.supports_storage_dtype(d)} == {
        F32,
        I32,
        DType.Bool,
    }
    assert not t.supports_storage_dtype(DType.Floating)
    # An empty OpenCL primary grows to the extent: the experts stay on the
    # host until promoted.
    empty = OpenCL(0)
    held = TiledEvictable(empty, CPU(0).new_like(vals), (3, 2), (2, 2))
    assert empty.size() == 24 and held.primary_tiles == TileSet()
    assert held.secondary_tiles == held.valid_tiles
    assert [held[i] for i in range(24)] == vals
    # OpenCL on both tiers (one device), and OpenCL as the secondary.
    for a, b in (
        (OpenCL(0).new_like(vals), OpenCL(24)),
        (CPU(0).new_like(vals), OpenCL(24)),
    ):
        u = TiledEvictable(a, b, (3, 2), (2, 2))
        u.evict(u.valid_tiles)
        u.promote(TileSet([(2, 1), (0, 0)]))
        assert [u[i] for i in range(24)] == vals
    with pytest.raises(ValueError, match="grow"):
        TiledEvictable(OpenCL(0), CPU(0), (3, 2), (2, 2))
    assert t.release() is None and t.release() is None
    assert p.is_released() and q.is_released() and not p.is_owned() and not q.is_owned()
    with pytest.raises(RuntimeError, match="released"):
        t.promote(TileSet([(0, 0)]))


def test_filebacked_tiers(runtime):
    vals = [float(i) for i in range(48)]
    fb = FileBacked(dtype=F32)
    t = TiledEvictable(OpenCL(0).new_like(vals), fb, (3, 2), (2, 4))
    assert fb.size() == 48 and t.primary_tiles == t.valid_tiles  # grown
    t[1] = -1.0
    vals[1] = -1.0
    t.evict(t.valid_tiles)
    assert [fb[i] for i in range(48)] == vals  # the evicted tiles are in the file
    t.promote(TileSet([(2, 1), (0, 0)]))
    assert [t[i] for i in range(48)] == vals
    assert t.primary.version == 1  # the tiles moved in bulk
    # The file as the primary, experts on the device as the secondary.
    dev = OpenCL(0).new_like(vals)
    u = TiledEvictable(FileBacked(dtype=F32), dev, (3, 2), (2, 4))
    assert u.secondary_tiles == u.valid_tiles
    u.promote(TileSet([(1, 0)]))
    u[8] = 5.0
    vals[8] = 5.0
    u.evict(u.valid_tiles)
    assert [u[i] for i in range(48)] == vals and dev.version == 0


class HostCPU(CPU):
    """Not CPU itself: its moves with OpenCL are the elementwise copy."""


def test_elementwise_tier_is_refused(runtime):
    for device_first in (True, False):
        dev, gen = OpenCL(4), HostCPU(4)
        tiers = (dev, gen) if device_first else (gen, dev)
        with pytest.raises(RuntimeError, match="exact registered move operation"):
            TiledEvictable(*tiers, (2,), (2,))
        assert not dev.is_owned() and not gen.is_owned()
        dev[0] = 1.0  # neither tier was claimed
    empty = OpenCL(0)
    with pytest.raises(RuntimeError, match=r"exact registered move operation for \(OpenCL, "):
        TiledEvictable(empty, HostCPU(4), (2,), (2,))
    assert empty.size() == 0, "the empty OpenCL tier was not grown"


# ------------------------------------------------------------ residency

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def geometries(draw):
    rank = draw(st.integers(1, 4))
    grid = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    tile = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    size = int(np.prod(grid) * np.prod(tile))
    if size > 300:  # element reads below stay quick
        tile = (1,) * rank
    return grid, tile


@SETTINGS
@given(geometries(), st.sampled_from([F32, I32]), st.booleans(), st.data())
def test_residency_against_cpu(geometry, dtype, file, data):
    need_runtime()
    grid, tile = geometry
    n = int(np.prod(grid) * np.prod(tile))
    rng = np.random.default_rng(n)
    vals = (
        [int(v) for v in rng.integers(-99, 99, size=n)]
        if dtype == I32
        else [float(np.float32(v)) for v in rng.uniform(-9, 9, size=n)]
    )
    cpu, ocl = twins(grid, tile, vals, dtype, file)
    coords = list(cpu.valid_tiles.coordinates)
    for _ in range(3):
        chosen = data.draw(st.lists(st.sampled_from(coords), unique=True, max_size=len(coords)))
        tiles = TileSet(chosen)
        if data.draw(st.booleans()):
            cpu.evict(tiles)
            ocl.evict(tiles)
        else:
            cpu.promote(tiles)
            ocl.promote(tiles)
        assert state(ocl) == state(cpu)
    # Writes make tiles dirty; evicting them carries the new values. (An
    # element write into an Int32 TiledEvictable is refused today whatever
    # its tiers, with TypeError "<primary> value must be an integer";
    # Float32 covers the rule.)
    writes = 0
    if dtype == F32:
        k = data.draw(st.integers(0, n - 1))
        vals[k] = 7.5
        cpu[k] = ocl[k] = 7.5
        writes = 1
    cpu.evict(cpu.valid_tiles)
    ocl.evict(ocl.valid_tiles)
    assert state(ocl) == state(cpu)
    assert [ocl[i] for i in range(n)] == [cpu[i] for i in range(n)] == vals
    # Every tile moved in bulk: element writes into the tier would each
    # have raised its version.
    assert ocl.primary.version == writes


def test_residency_of_bool_tiles(runtime):
    vals = [i % 3 == 0 for i in range(16)]
    p = OpenCL(0, dtype=DType.Bool).new_like(vals)
    t = TiledEvictable(p, CPU(16, dtype=DType.Bool), (2, 2), (2, 2))
    t.evict(t.valid_tiles)
    t.promote(TileSet([(1, 1)]))
    assert [bool(t[i]) for i in range(16)] == vals
    z = t._implicit_zero_like()
    z.promote(z.valid_tiles)
    assert [bool(z[i]) for i in range(16)] == [False] * 16


def test_tiles_between_two_devices_tiers(runtime):
    # Two OpenCL tiers on one device copy tiles on the device.
    vals = [float(i) for i in range(36)]
    p, q = OpenCL(0).new_like(vals), OpenCL(36)
    t = TiledEvictable(p, q, (3, 3), (2, 2))
    t.evict(TileSet([(1, 1), (2, 0)]))
    t[0] = -1.0
    t.evict(t.valid_tiles)
    t.promote(TileSet([(0, 0), (1, 1)]))
    assert [t[i] for i in range(36)] == [-1.0] + vals[1:]
    assert q.version == 0


@pytest.mark.parametrize("stage", ["enqueue", "wait"])
@pytest.mark.parametrize("evict", [True, False])
@pytest.mark.parametrize("asynchronous", [True, False])
@pytest.mark.parametrize("file", [False, True])
def test_failed_transfer_rolls_back(runtime, no_faults, stage, evict, asynchronous, file):
    vals = [float(i) for i in range(24)]
    secondary = FileBacked(dtype=F32) if file else CPU(24)
    t = TiledEvictable(OpenCL(0).new_like(vals), secondary, (3, 2), (2, 2))
    t.evict(TileSet([(0, 0), (2, 1)]))
    t[2] = -2.0  # tile (1, 0): dirty
    vals[2] = -2.0
    tiles = t.valid_tiles
    before = state(t)
    # The second tile's transfer fails: the first one's is undone too.
    _native._debug_opencl_fail(stage, 1)
    if asynchronous:
        h = t.evict_async(tiles) if evict else t.promote_async(tiles)
        with pytest.raises(RuntimeError, match="injected") as first:
            h.wait()
        with pytest.raises(RuntimeError) as second:
            h.wait()
        assert first.value is second.value
        _native._move_wait_idle()
        assert t._pending_requests == 0
    else:
        with pytest.raises(RuntimeError, match="injected"):
            (t.evict if evict else t.promote)(tiles)
    assert state(t) == before
    assert [t[i] for i in range(24)] == vals
    assert not t.is_released() and t.primary.is_owned()
    (t.evict if evict else t.promote)(tiles)  # the request can be retried
    assert [t[i] for i in range(24)] == vals
    assert (t.secondary_tiles if evict else t.primary_tiles) == tiles


@pytest.mark.parametrize("evict", [True, False])
def test_failed_disk_io_rolls_back(runtime, evict):
    # The FileBacked secondary's read (promote) or write (evict) of the
    # second tile fails: the first tile's transfer is undone too.
    vals = [float(i) for i in range(24)]
    t = TiledEvictable(OpenCL(0).new_like(vals), FileBacked(dtype=F32), (3, 2), (2, 2))
    if not evict:
        t.evict(t.valid_tiles)
    tiles = TileSet([(0, 0), (1, 1)])
    before = state(t)
    _native._debug_fail_io_after(1)
    try:
        with pytest.raises(OSError, match="FileBacked"):
            (t.evict if evict else t.promote)(tiles)
    finally:
        _native._debug_fail_io_after(-1)
    assert state(t) == before
    assert [t[i] for i in range(24)] == vals
    (t.evict if evict else t.promote)(tiles)
    assert [t[i] for i in range(24)] == vals
    held = t.secondary_tiles if evict else t.primary_tiles
    assert set(tiles.coordinates) <= set(held.coordinates)


# --------------------------------------------------- direct operations

OPERATIONS = {
    "relu": lambda x, y: sw.relu(x),
    "add": lambda x, y: sw.add(x, y),
    "elementwise_mul": lambda x, y: sw.elementwise_mul(x, y),
    "mul": lambda x, y: sw.mul(x, 2.5),
    "matmul": lambda x, y: sw.matmul(x, y),
    "reduce_sum": lambda x, y: sw.reduce(x),
}


def operands(kind, dtype=F32):
    """x and y over a 2x2 grid of 2x2 tiles, part of each evicted."""
    rng = np.random.default_rng(3)
    if dtype == I32:
        a, b = ([int(v) for v in rng.integers(-5, 6, size=16)] for _ in range(2))
    else:
        a, b = ([float(np.float32(v)) for v in rng.uniform(-2, 2, size=16)] for _ in range(2))
    out = []
    for vals in (a, b):
        c, o = twins((2, 2), (2, 2), vals, dtype)
        t = c if kind == "cpu" else o
        t.evict(TileSet([(1, 0), (0, 1)]))
        out.append(sw.Tensor(t, 0, compact([4, 4])))
    return out


@pytest.mark.parametrize("name", sorted(OPERATIONS))
@pytest.mark.parametrize("dtype", [F32, I32])
def test_direct_operations_against_cpu(runtime, name, dtype):
    want = OPERATIONS[name](*operands("cpu", dtype))
    x, y = operands("ocl", dtype)
    got = OPERATIONS[name](x, y)
    assert type(got.carrier) is OpenCL, "the result is on the primary's class"
    assert got.layout == want.layout and got.offset == 0
    assert got.carrier.size() == got.layout.cosize
    assert got.carrier.dtype() == want.carrier.dtype()
    agree(logical(want), logical(got), exact=dtype == I32)
    if dtype == F32:
        node = got.autograd_ctx
        assert node._dispatch_carrier_class is TiledEvictable
        assert node.inputs()[0] is x
    assert x.carrier.version == 0 and x.carrier.secondary_tiles == TileSet()
    names = {c.operation for c in x.carrier.operation_capabilities()}
    assert names == {"add", "elementwise_mul", "mul", "relu", "reduce_sum", "matmul"}
    with pytest.raises((NotImplementedError, TypeError)):
        sw.exp(x)


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_direct_gradients_against_cpu(runtime, name):
    grads = {}
    for kind in ("cpu", "ocl"):
        x, y = operands(kind)
        out = OPERATIONS[name](x, y)
        ones = (CPU(0) if kind == "cpu" else OpenCL(0)).new_like([1.0] * out.carrier.size())
        g = Tensor(ones, 0, out.layout)
        out.backward(g)
        gx = x.grad
        assert type(gx.carrier) is TiledEvictable and gx.layout == x.layout
        assert gx.carrier.valid_tiles == x.carrier.valid_tiles
        primary = type(gx.carrier.primary)
        assert primary is (CPU if kind == "cpu" else OpenCL)
        grads[kind] = [gx[i] for i in range(16)]
        if name in ("add", "elementwise_mul", "matmul"):
            grads[kind] += [y.grad[i] for i in range(16)]
        assert x.carrier.version == 0
    agree(grads["cpu"], grads["ocl"])


# -------------------------------------------------- project and scatter


def test_project_against_cpu(runtime):
    vals = [float(i) for i in range(24)]
    sel = TileSelection([[2, 0], [1]])
    # The array's own layout, and one with a permutation inside each tile.
    own = compact([6, 4])
    permuted = sw.Layout(sw.Shape([[2, 3], [2, 2]]), sw.Stride([[6, 2], [1, 12]]))
    for layout in (own, permuted):
        results = {}
        for kind, t in zip(("cpu", "ocl"), twins((3, 2), (2, 2), vals), strict=True):
            t.evict(t.valid_tiles)
            x = Tensor(t, 0, layout)
            y = project(x, sel).wait()
            assert type(y.carrier) is (CPU if kind == "cpu" else OpenCL)
            assert y.layout == compact([4, 2])
            assert t.primary_tiles == TileSet([(0, 1), (2, 1)]) and t.version == 0
            z = sw.relu(y)
            ones = type(y.carrier)(0).new_like([1.0] * 8)
            z.backward(Tensor(ones, 0, compact([4, 2])))
            g = x.grad
            assert type(g.carrier.primary) is type(y.carrier)
            assert g.carrier.tile_state((1, 0)).location == "implicit"
            results[kind] = (logical(y), [g[i] for i in range(24)], g.carrier.primary_tiles)
        assert results["ocl"] == results["cpu"]


def test_project_destinations(runtime):
    vals = [float(i) for i in range(24)]
    t = TiledEvictable(OpenCL(0).new_like(vals), CPU(24), (3, 2), (2, 2))
    x = Tensor(t, 0, compact([6, 4]))
    sel = TileSelection([[1], [1]])
    dst = OpenCL(4)
    y = project(x, sel, dst).wait()
    assert y.carrier is dst and logical(y) == [14.0, 15.0, 20.0, 21.0]
    grow = OpenCL(0)
    y = project(x, sel, grow).wait()
    assert y.carrier is grow and grow.size() == 4 and logical(y) == [14.0, 15.0, 20.0, 21.0]
    with pytest.raises(TypeError, match="primary tier's exact class"):
        project(x, sel, CPU(4))
    with pytest.raises(ValueError, match="less than the compact size"):
        project(x, sel, OpenCL(3))
    with pytest.raises(TypeError, match="dtype"):
        project(x, sel, OpenCL(4, dtype=I32))
    with pytest.raises(RuntimeError, match="mutable"):
        project(x, sel, OpenCL(4, mutable=False))


def test_scatter_against_cpu(runtime):
    vals = [float(i) for i in range(24)]
    sel = TileSelection([[2, 0], [1]])
    results = {}
    for kind, t in zip(("cpu", "ocl"), twins((3, 2), (2, 2), vals), strict=True):
        x = Tensor(t, 0, compact([6, 4]))
        y = project(x, sel).wait().detach()
        y = sw.mul(Tensor(y.carrier, 0, y.layout), 1.0).detach()
        replaced = scatter(y, x, sel).wait()
        c = replaced.carrier
        assert type(c.primary) is (CPU if kind == "cpu" else OpenCL)
        assert c.version == 1 and c.valid_tiles == c.dirty_tiles == c.primary_tiles == sel.tile_set
        added = scatter(y, x, sel, reduction="add").wait()
        assert t.version == 0
        y.requires_grad = True
        r = scatter(y, x, sel).wait()
        ones = type(y.carrier)(0).new_like([1.0] * 24)
        r.backward(Tensor(ones, 0, x.layout))
        results[kind] = (
            logical(project(replaced, sel).wait()),
            [added[i] for i in range(24) if added.carrier.tile_state(_tile_of(i)).valid],
            logical(y.grad),
            [x.grad[i] for i in range(24)],
        )
    assert results["ocl"] == results["cpu"]


def _tile_of(i):
    """The (3, 2) grid coordinate of slot i of a 6x4 array of 2x2 tiles."""
    return ((i % 6) // 2, (i // 6) // 2)


# ---------------------------------------------------------- asynchrony


def test_tile_work_is_asynchronous(runtime):
    vals = [float(i) for i in range(24)]
    t = TiledEvictable(OpenCL(0).new_like(vals), CPU(24), (3, 2), (2, 2))
    x = Tensor(t, 0, compact([6, 4]))
    dst = OpenCL(4)
    with device_held():
        h = t.evict_async(TileSet([(0, 0), (1, 1)]))
        assert not h.done, "the transfer waits for the held device on the executor"
    h.wait()
    assert t.secondary_tiles == TileSet([(0, 0), (1, 1)])
    with device_held():
        p = project(x, TileSelection([[1], [1]]), dst)
        assert not p.done
    assert p.wait().carrier is dst and logical(p.wait()) == [14.0, 15.0, 20.0, 21.0]
    _native._move_wait_idle()
    assert t._pending_requests == 0
