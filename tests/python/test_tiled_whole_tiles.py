"""Projections and scatters of a TiledEvictable against NumPy, on a CPU and an
OpenCL primary (later-api.md sections 8.6 and 8.7).

A projection, a scatter (replace or add) and their backward passes copy whole
tiles (a memcpy per run on CPU, device copies on OpenCL) when the tensors are
laid out as the array and the compact densely; other layouts go value by
value. Both must give NumPy's gather and scatter of the same selection, for
random geometries of rank 1 to 3, selections and values; cotangents of a
scatter are dense tensors or TiledEvictable tensors of the same geometry.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import strideweave as sw
from helpers_opencl import need_runtime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strideweave import CPU, OpenCL, Tensor
from strideweave.carriers.tiled_evictable import TiledEvictable, TileSelection
from strideweave.carriers.tiled_evictable.projection import project, scatter

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def layout(shape, row_major=False):
    """Column-major over shape (the array's own order), or row-major."""
    strides, step = [0] * len(shape), 1
    for k in reversed(range(len(shape))) if row_major else range(len(shape)):
        strides[k] = step
        step *= shape[k]
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(strides))


def carrier(kind, values):
    vals = [float(v) for v in np.asarray(values).ravel(order="F")]
    return (CPU if kind == "cpu" else OpenCL)(0).new_like(vals)


def on(kind, array, row_major=False):
    """A tensor of the kind's class holding array (logical order)."""
    lay = layout(array.shape, row_major)
    flat = np.zeros(lay.cosize, dtype=np.float32)
    for i, v in enumerate(array.ravel(order="F")):
        flat[lay(i)] = v
    return Tensor(carrier(kind, flat), 0, lay)


def read(t, shape):
    """A tensor's logical values as a NumPy array of shape (column-major)."""
    if isinstance(t.carrier, OpenCL):
        t = sw.move(t, CPU(t.carrier.size()))
    flat = [t[i] for i in range(t.layout.size)]
    return np.array(flat, dtype=np.float32).reshape(shape, order="F")


def tiled(kind, array, grid, tile):
    t = TiledEvictable(carrier(kind, array), CPU(array.size), grid, tile)
    return Tensor(t, 0, layout(array.shape))


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    grid = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    tile = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    per_axis = [
        draw(st.lists(st.integers(0, g - 1), min_size=1, max_size=g, unique=True)) for g in grid
    ]
    seed = draw(st.integers(0, 2**31 - 1))
    return grid, tile, per_axis, seed


def setup(case):
    grid, tile, per_axis, seed = case
    rng = np.random.default_rng(seed)
    extent = tuple(g * t for g, t in zip(grid, tile, strict=True))
    index = [
        np.concatenate([np.arange(c * t, (c + 1) * t) for c in axis])
        for axis, t in zip(per_axis, tile, strict=True)
    ]
    cshape = tuple(len(i) for i in index)

    def values(shape):
        return rng.integers(-50, 50, size=shape).astype(np.float32) / 4

    return grid, tile, TileSelection(per_axis), np.ix_(*index), extent, cshape, values


KINDS = ["cpu", "opencl"]


def need(kind):
    if kind == "opencl":
        need_runtime()


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(case=cases(), row_major=st.booleans())
def test_project_and_scatter(kind, case, row_major):
    need(kind)
    grid, tile, sel, ix, extent, cshape, values = setup(case)
    xa, ca = values(extent), values(cshape)
    x = tiled(kind, xa, grid, tile)
    assert np.array_equal(read(project(x, sel).wait(), cshape), xa[ix])
    c = on(kind, ca, row_major)  # row-major: the value-by-value path
    replaced = scatter(c, x, sel).wait()
    assert np.array_equal(read(project(replaced, sel).wait(), cshape), ca)
    added = scatter(c, x, sel, reduction="add").wait()
    assert np.array_equal(read(project(added, sel).wait(), cshape), xa[ix] + ca)
    for r in (replaced, added):  # selected tiles valid and dirty, no others
        assert r.carrier.valid_tiles == r.carrier.dirty_tiles == sel.tile_set
        assert r.carrier.version == 1
    assert np.array_equal(read(x, extent), xa)  # the template is unchanged


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(case=cases())
def test_project_backward(kind, case):
    need(kind)
    grid, tile, sel, ix, extent, cshape, values = setup(case)
    x = tiled(kind, values(extent), grid, tile)
    x.requires_grad = True
    ga = values(cshape)
    project(x, sel).wait().backward(on(kind, ga))
    want = np.zeros(extent, dtype=np.float32)
    want[ix] = ga
    assert isinstance(x.grad.carrier, TiledEvictable)
    assert np.array_equal(read(x.grad, extent), want)


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(case=cases(), add=st.booleans(), tiled_cotangent=st.booleans(), row_major=st.booleans())
def test_scatter_backward(kind, case, add, tiled_cotangent, row_major):
    need(kind)
    grid, tile, sel, ix, extent, cshape, values = setup(case)
    x = tiled(kind, values(extent), grid, tile)
    y = on(kind, values(cshape), row_major)
    x.requires_grad = y.requires_grad = True
    ha = values(extent)
    h = tiled(kind, ha, grid, tile) if tiled_cotangent else on(kind, ha)
    scatter(y, x, sel, reduction="add" if add else "replace").wait().backward(h)
    assert np.array_equal(read(y.grad, cshape), ha[ix])
    want = ha.copy()
    if not add:
        want[ix] = 0.0
    assert np.array_equal(read(x.grad, extent), want)
    assert np.array_equal(read(h, extent), ha)  # the cotangent is unchanged


@pytest.mark.threads
@pytest.mark.parametrize("kind", KINDS)
def test_whole_tile_paths_from_threads(kind):
    # Four threads project, scatter (add), back-propagate, evict and
    # promote their own tiles of one array at once.
    need(kind)
    grid, tile = (8,), (16,)
    xa = np.arange(128, dtype=np.float32)
    x = tiled(kind, xa, grid, tile)
    errors = []

    def work(k):
        try:
            sel = TileSelection([[k, k + 4]])
            ix = np.ix_(
                np.concatenate(
                    [np.arange(16 * k, 16 * k + 16), np.arange(16 * k + 64, 16 * k + 80)]
                )
            )
            for _ in range(5):
                y = project(x, sel).wait().detach()
                y = Tensor(y.carrier, 0, y.layout)
                y.requires_grad = True
                r = scatter(y, x, sel, reduction="add").wait()
                assert np.array_equal(read(project(r, sel).wait(), (32,)), 2 * xa[ix])
                r.backward(tiled(kind, xa, grid, tile))
                assert np.array_equal(read(y.grad, (32,)), xa[ix])
                x.carrier.evict(sel.tile_set)
                x.carrier.promote(sel.tile_set)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert np.array_equal(read(x, (128,)), xa)


def release_round(kind, x, xa, sel):
    """Two threads scatter and back-propagate through sel while the
    compact and the dense cotangent they read are released; the errors."""
    n = 4 * 4096
    c = on(kind, np.ones(n, dtype=np.float32))
    y = on(kind, np.ones(n, dtype=np.float32))
    y.requires_grad = True
    h = on(kind, xa)
    stop, errors, rounds = threading.Event(), [], [threading.Event(), threading.Event()]

    def loop(step, ran):
        try:
            while not stop.is_set():
                step()
                ran.set()
        except RuntimeError as e:
            errors.append(e)
        ran.set()

    steps = (
        lambda: scatter(c, x, sel).wait(),
        lambda: scatter(y, x, sel).wait().backward(h),
    )
    threads = [threading.Thread(target=loop, args=a) for a in zip(steps, rounds, strict=True)]
    for th in threads:
        th.start()
    for ran in rounds:  # each thread is copying by now
        ran.wait(10)
    c.carrier.release()
    h.carrier.release()
    stop.set()
    for th in threads:
        th.join()
    return errors


@pytest.mark.threads
@pytest.mark.parametrize("kind", KINDS)
def test_release_under_whole_tile_copies(kind):
    # A scatter's compact and a backward's dense cotangent are released
    # while other threads copy their tiles: each call either completes or
    # says the carrier is released, and nothing reads freed memory (the
    # sanitizer passes run this).
    need(kind)
    xa = np.arange(8 * 4096, dtype=np.float32)
    x = tiled(kind, xa, (8,), (4096,))
    sel = TileSelection([[1, 3, 5, 7]])
    for _ in range(3):
        for e in release_round(kind, x, xa, sel):
            assert "released" in str(e), repr(e)
    assert np.array_equal(read(x, (8 * 4096,)), xa)


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(case=cases())
def test_gradients_accumulate_into_a_tiled_grad(kind, case):
    # The second gradient is added to the first and written back over the
    # whole tiled grad in one block; the grad tensor stays the same one.
    need(kind)
    grid, tile, sel, ix, extent, cshape, values = setup(case)
    x = tiled(kind, values(extent), grid, tile)
    x.requires_grad = True
    g1, g2 = values(cshape), values(cshape)
    project(x, sel).wait().backward(on(kind, g1))
    first = x.grad
    version = first.carrier.version
    project(x, sel).wait().backward(on(kind, g2))
    want = np.zeros(extent, dtype=np.float32)
    want[ix] = g1 + g2
    assert x.grad is first and np.array_equal(read(x.grad, extent), want)
    assert first.carrier.version == version + 1
    assert first.carrier.primary_tiles == first.carrier.valid_tiles


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(case=cases(), tiled_source=st.booleans(), row_major=st.booleans())
def test_scatter_over_a_whole_tiled_array(kind, case, tiled_source, row_major):
    # carrier.scatter of a whole array: in one block when the source and
    # the mapping are the array's own order, value by value otherwise.
    need(kind)
    grid, tile, _, _, extent, _, values = setup(case)
    target, sa = tiled(kind, values(extent), grid, tile), values(extent)
    target.carrier.evict(target.carrier.valid_tiles)
    src = tiled(kind, sa, grid, tile) if tiled_source else on(kind, sa)
    version = target.carrier.version
    target.carrier.scatter(src, target, layout(extent, row_major))
    want = sa
    if row_major:  # logical i of src lands at the row-major slot of i
        want = np.zeros(extent, dtype=np.float32)
        lay = layout(extent, True)
        flat = want.reshape(-1, order="F")
        for i, v in enumerate(sa.ravel(order="F")):
            flat[lay(i)] = v
        want = flat.reshape(extent, order="F")
    assert np.array_equal(read(target, extent), want)
    assert np.array_equal(read(src, extent), sa)
    if not row_major:
        assert target.carrier.version == version + 1
        assert target.carrier.primary_tiles == target.carrier.valid_tiles
        assert target.carrier.dirty_tiles == target.carrier.valid_tiles
