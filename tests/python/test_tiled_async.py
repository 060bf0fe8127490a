"""TiledEvictable: asynchronous residency, projection and scatter
(later-api.md sections 8.5 to 8.7, with the handles of 6.2).

Checklist: 8.5 ``promote_async``/``evict_async`` handles
``test_residency_handles``, validation ``test_residency_async_errors``,
conflicts and disjoint requests ``test_conflicting_requests``, release
while pending ``test_release_while_pending``, the pending count after a
dropped handle ``test_pending_falls_back``, rollback and retry
``test_failed_request_rolls_back``; 8.6 projection values and layout
``test_project_values``, validation ``test_project_errors``, destinations
``test_project_destinations``, pending behaviour ``test_project_pending``,
the node and backward ``test_project_autograd``, overlapping projections
``test_overlapping_projections_sum``, ``_implicit_zero_like`` and
``allocate_like(empty=True)`` ``test_implicit_zero_like``, the saved-version check
``test_project_mutated_source``; 8.7 scatter ``test_scatter_replace_and_add``,
validation ``test_scatter_errors``, gradients ``test_scatter_gradients``.
"""

from __future__ import annotations

import threading

import pytest
import strideweave as sw
from strideweave import _native
from strideweave.carriers.tiled_evictable import (
    AwaitProjection,
    AwaitResidency,
    TiledEvictable,
    TileSelection,
    TileSet,
)
from strideweave.carriers.tiled_evictable.projection import project, scatter
from test_tiled_evictable import compact, filled

F32 = sw.DType.Float32


def grid6x4(secondary=None):
    """A 3x2 grid of 2x2 tiles over a 6x4 array holding its slot numbers."""
    q = secondary if secondary is not None else sw.FileBacked(dtype=F32)
    t = TiledEvictable(filled(24), q, (3, 2), (2, 2))
    return t, sw.Tensor(t, 0, compact([6, 4]))


class held:
    """The move executor takes no queued work inside the block."""

    def __enter__(self):
        _native._debug_move_hold(True)

    def __exit__(self, *exc):
        _native._debug_move_hold(False)


def test_residency_handles():
    t, _ = grid6x4()
    h = t.evict_async(t.valid_tiles)
    assert type(h) is AwaitResidency
    assert h.wait() is None and h.done and h.wait() is None
    assert t.secondary_tiles == t.valid_tiles and t.primary_tiles == TileSet()
    h = t.promote_async(TileSelection([[2, 0], [1]]))
    assert h.wait() is None
    assert t.primary_tiles == TileSet([(0, 1), (2, 1)])
    assert [t[i] for i in (0, 23)] == [0.0, 23.0]
    assert t.version == 0
    with pytest.raises(TypeError, match="created by the framework|cannot create"):
        AwaitResidency()
    assert not hasattr(h, "__await__")


def test_residency_async_errors():
    t, _ = grid6x4()
    with pytest.raises(TypeError, match="TileSet or a TileSelection"):
        t.promote_async([(0, 0)])
    with pytest.raises(ValueError, match="outside"):
        t.evict_async(TileSet([(3, 0)]))
    assert t._pending_requests == 0
    t.release()
    with pytest.raises(RuntimeError, match="released"):
        t.promote_async(TileSet([(0, 0)]))


@pytest.mark.threads
def test_conflicting_requests():
    t, _ = grid6x4()
    with held():
        h = t.evict_async(TileSet([(0, 0), (1, 0)]))
        assert not h.done and t._pending_requests == 1
        for call in (
            lambda: t.promote_async(TileSet([(1, 0)])),
            lambda: t.evict(TileSet([(0, 0)])),
        ):
            with pytest.raises(RuntimeError, match="pending.*conflict"):
                call()
        other = t.evict_async(TileSet([(2, 1)]))
        assert t._pending_requests == 2
    assert h.wait() is None and other.wait() is None
    assert t.secondary_tiles == TileSet([(0, 0), (1, 0), (2, 1)])
    _native._move_wait_idle()
    assert t._pending_requests == 0


@pytest.mark.threads
def test_disjoint_requests_from_threads():
    t = TiledEvictable(filled(64), sw.CPU(64), (8,), (8,))
    errors = []

    def work(k):
        try:
            for _ in range(20):
                t.evict_async(TileSet([(k,)])).wait()
                t.promote_async(TileSet([(k,)])).wait()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert [t[i] for i in range(64)] == [float(i) for i in range(64)]


@pytest.mark.threads
def test_release_while_pending():
    t, _ = grid6x4()
    with held():
        h = t.evict_async(TileSet([(0, 0)]))
        with pytest.raises(RuntimeError, match="pending.*wait"):
            t.release()
        assert not t.is_released()
    h.wait()
    _native._move_wait_idle()
    t.release()
    assert t.is_released()


def test_pending_falls_back():
    t, _ = grid6x4()
    with held():
        t.evict_async(TileSet([(0, 0)]))  # the handle is dropped at once
        assert t._pending_requests == 1
    _native._move_wait_idle()
    assert t._pending_requests == 0
    assert t.tile_state((0, 0)).location == "secondary"


def test_failed_request_rolls_back():
    t, _ = grid6x4()
    before = (t.primary_tiles, t.secondary_tiles, t.dirty_tiles, t.version)
    _native._debug_fail_io_after(0)
    try:
        h = t.evict_async(t.valid_tiles)
        with pytest.raises(OSError) as first:
            h.wait()
        with pytest.raises(OSError) as second:
            h.wait()
        assert first.value is second.value
    finally:
        _native._debug_fail_io_after(-1)
    _native._move_wait_idle()
    assert (t.primary_tiles, t.secondary_tiles, t.dirty_tiles, t.version) == before
    assert not t.is_released() and t._pending_requests == 0
    t.evict_async(t.valid_tiles).wait()
    assert t.secondary_tiles == t.valid_tiles
    assert [t[i] for i in range(24)] == [float(i) for i in range(24)]


# ---------------------------------------------------------------- project


def test_project_values():
    t, x = grid6x4()
    t.evict(t.valid_tiles)
    v0 = t.version
    h = project(x, TileSelection([[2, 0], [1]]))
    assert type(h) is AwaitProjection
    y = h.wait()
    assert h.wait() is y
    assert type(y.carrier) is sw.CPU
    assert y.shape == (4, 2) and y.layout == compact([4, 2])
    # Compact (0, 0) is source (4, 2) = slot 16; (2, 1) is source (0, 3) = 18.
    assert y.tolist() == [[16.0, 22.0], [17.0, 23.0], [12.0, 18.0], [13.0, 19.0]]
    assert t.version == v0 and x.carrier is t
    assert t.primary_tiles == TileSet([(0, 1), (2, 1)])


def test_project_errors():
    t, x = grid6x4()
    sel = TileSelection([[0], [0]])
    with pytest.raises(TypeError, match="Tensor"):
        project("x", sel)
    with pytest.raises(TypeError, match="TiledEvictable"):
        project(sw.Tensor(filled(4), 0, compact([4])), TileSelection([[0]]))
    with pytest.raises(TypeError, match="TileSelection"):
        project(x, [[0], [0]])
    with pytest.raises(ValueError, match="rank"):
        project(x, TileSelection([[0]]))
    with pytest.raises(ValueError, match="outside the grid"):
        project(x, TileSelection([[3], [0]]))
    rows = sw.Tensor(t, 0, sw.Layout(sw.Shape([6, 4]), sw.Stride([4, 1])))
    with pytest.raises(ValueError, match="tile footprints"):
        project(rows, sel)
    t.release()
    with pytest.raises(RuntimeError, match="released"):
        project(x, sel)


def test_project_destinations():
    t, x = grid6x4()
    sel = TileSelection([[1], [1]])
    with pytest.raises(TypeError, match="TiledEvictable"):
        project(x, sel, t)
    with pytest.raises(TypeError, match="dtype"):
        project(x, sel, sw.CPU(4, dtype=sw.DType.Int32))
    with pytest.raises(ValueError, match="less than the compact size"):
        project(x, sel, sw.CPU(3))
    with pytest.raises(RuntimeError, match="mutable"):
        project(x, sel, sw.CPU(4, mutable=False))
    with pytest.raises(TypeError, match="Carrier"):
        project(x, sel, "somewhere")
    dst = sw.CPU(4)
    y = project(x, sel, dst).wait()
    assert y.carrier is dst and y.tolist() == [[14.0, 20.0], [15.0, 21.0]]
    # An empty growable destination of the primary's class.
    f = TiledEvictable(sw.FileBacked(dtype=F32), filled(24), (3, 2), (2, 2))
    fx = sw.Tensor(f, 0, compact([6, 4]))
    grow = sw.FileBacked(dtype=F32)
    y = project(fx, sel, grow).wait()
    assert y.carrier is grow and grow.size() == 4


@pytest.mark.threads
def test_project_pending():
    t, x = grid6x4()
    with held():
        h = project(x, TileSelection([[1], [0]]))
        assert not h.done and not isinstance(h, sw.Tensor)
        with pytest.raises(TypeError):
            sw.add(h, h)
        with pytest.raises(RuntimeError, match="wait|pending"):
            t.release()
        with pytest.raises(RuntimeError, match="pinned|pending|wait"):
            t[2] = 1.0
        t[0] = 5.0  # an unselected tile
        assert t[2] == 2.0
    assert h.wait().tolist() == [[2.0, 8.0], [3.0, 9.0]]
    _native._move_wait_idle()
    t[2] = 1.0


def test_project_autograd():
    t, x = grid6x4()
    t.evict(t.valid_tiles)
    y = project(x, TileSelection([[2, 0], [1]])).wait()
    node = y.autograd_ctx
    assert type(node).__name__ == "_ProjectionOperation"
    assert node.inputs() == (x,) and node.inputs()[0] is x
    z = sw.relu(y)
    assert type(z.autograd_ctx).__name__ != "_ProjectionOperation"
    z.backward(sw.Tensor(sw.CPU(8).new_like([1.0] * 8), 0, compact([4, 2])))
    g = x.grad
    assert type(g.carrier) is TiledEvictable and g.layout == x.layout
    assert g.carrier.grid_shape == (3, 2)
    assert g.carrier.primary_tiles == TileSet([(0, 1), (2, 1)])
    assert g.carrier.valid_tiles == t.valid_tiles
    assert g.carrier.tile_state((1, 0)).location == "implicit"
    assert [g[i] for i in (16, 18, 0)] == [1.0, 1.0, 0.0]


def test_overlapping_projections_sum():
    t, x = grid6x4()
    a = project(x, TileSelection([[0, 1], [0]])).wait()
    b = project(x, TileSelection([[1], [0]])).wait()
    a.backward(sw.Tensor(sw.CPU(8).new_like([1.0] * 8), 0, compact([4, 2])))
    b.backward(sw.Tensor(sw.CPU(4).new_like([1.0] * 4), 0, compact([2, 2])))
    g = x.grad
    assert g[0] == 1.0 and g[2] == 2.0 and g[12] == 0.0


def test_implicit_zero_like():
    t, _ = grid6x4()
    z = t._implicit_zero_like()
    assert z.valid_tiles == t.valid_tiles and z.primary_tiles == TileSet()
    assert all(z.tile_state(c).location == "implicit" for c in z.valid_tiles.coordinates)
    assert z[7] == 0.0
    z.promote(TileSet([(1, 0)]))
    assert z.version == 0 and z.tile_state((1, 0)).location == "primary" and z[2] == 0.0
    empty = t.allocate_like(24, empty=True)
    assert empty.valid_tiles == TileSet()


def test_project_mutated_source():
    t, x = grid6x4()
    y = project(x, TileSelection([[0], [0]])).wait()
    t[0] = 9.0
    with pytest.raises(RuntimeError, match="modified in-place|version"):
        y.backward(sw.Tensor(sw.CPU(4).new_like([1.0] * 4), 0, compact([2, 2])))


def test_projection_failure_restores_residency():
    t, x = grid6x4()
    t.evict(t.valid_tiles)
    _native._debug_fail_io_after(0)
    try:
        h = project(x, TileSelection([[0], [0]]))
        with pytest.raises(OSError) as first:
            h.wait()
        with pytest.raises(OSError) as second:
            h.wait()
        assert first.value is second.value
    finally:
        _native._debug_fail_io_after(-1)
    _native._move_wait_idle()
    assert t.valid_tiles == t.secondary_tiles and not t.is_released()


# ---------------------------------------------------------------- scatter


def test_scatter_replace_and_add():
    t, x = grid6x4()
    sel = TileSelection([[2, 0], [1]])
    y = project(x, sel).wait()
    h = scatter(y, x, sel)
    assert type(h) is sw.AwaitMove
    r = h.wait()
    c = r.carrier
    assert type(c) is TiledEvictable and c is not t
    assert r.layout == x.layout and r.offset == 0 and c.version == 1
    assert c.valid_tiles == sel.tile_set == c.dirty_tiles
    assert c.primary_tiles == sel.tile_set
    with pytest.raises(RuntimeError, match="invalid"):
        c[0]
    assert project(r, sel).wait().tolist() == y.tolist()
    added = scatter(y, x, sel, reduction="add").wait()
    assert added[16] == 32.0 and added[18] == 36.0
    assert t.version == 0 and x[16] == 16.0
    zero = t.allocate_like(24)
    zt = sw.Tensor(zero, 0, x.layout)
    assert scatter(y, zt, sel, reduction="add").wait()[16] == 16.0


def test_scatter_errors():
    t, x = grid6x4()
    sel = TileSelection([[0], [0]])
    y = project(x, sel).wait()
    with pytest.raises(ValueError, match="reduction"):
        scatter(y, x, sel, reduction="overwrite")
    with pytest.raises(TypeError, match="compact"):
        scatter("y", x, sel)
    with pytest.raises(TypeError, match="TiledEvictable"):
        scatter(y, y, sel)
    with pytest.raises(TypeError, match="primary tier"):
        scatter(x, x, sel)
    with pytest.raises(TypeError, match="dtype"):
        scatter(sw.Tensor(sw.CPU(4, dtype=sw.DType.Int32), 0, compact([2, 2])), x, sel)
    with pytest.raises(ValueError, match="compact shape"):
        scatter(sw.Tensor(filled(8), 0, compact([2, 4])), x, sel)
    with pytest.raises(ValueError, match="outside"):
        scatter(y, x, TileSelection([[5], [0]]))
    empty = sw.Tensor(t.allocate_like(24, empty=True), 0, x.layout)
    with pytest.raises(RuntimeError, match="invalid"):
        scatter(y, empty, sel, reduction="add")


def test_scatter_gradients():
    t, x = grid6x4()
    sel = TileSelection([[0], [0]])
    y = project(x, sel).wait().detach()
    y = sw.Tensor(y.carrier, 0, y.layout)
    r = scatter(y, x, sel).wait()
    assert type(r.autograd_ctx).__name__ == "_ScatterOperation"
    r.backward(sw.Tensor(sw.CPU(24).new_like([1.0] * 24), 0, x.layout))
    assert y.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    g = x.grad
    assert g[0] == 0.0 and g[2] == 1.0
    assert g.carrier.tile_state((0, 0)).location == "implicit"
