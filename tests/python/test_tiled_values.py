"""TiledEvictable's value types (later-api.md section 8.2).

Checklist: TileSelection (``test_selection_values``,
``test_selection_errors``, ``test_selection_grid``), TileSet
(``test_tile_set_values``, ``test_tile_set_errors``), ResidencyPlan
(``test_residency_plan``), ResidencyPolicy (``test_residency_policy``),
immutability and hashing (``test_frozen_and_hashable``).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strideweave.carriers.tiled_evictable import (
    ResidencyPlan,
    ResidencyPolicy,
    TileSelection,
    TileSet,
)


def test_selection_values():
    s = TileSelection(iter([iter([7, 2]), [4, 9]]))
    assert s.per_axis == ((7, 2), (4, 9))
    assert s.rank == 2 and s.compact_grid_shape == (2, 2)
    assert s.coordinates == ((7, 4), (2, 4), (7, 9), (2, 9))
    assert s.tile_set == TileSet([(7, 4), (2, 4), (7, 9), (2, 9)])
    assert repr(TileSelection([[2, 7], [4]])) == "TileSelection(per_axis=((2, 7), (4,)))"


@pytest.mark.parametrize(
    ("arg", "exc", "match"),
    [
        (None, TypeError, "per_axis must be a finite iterable"),
        (3, TypeError, "per_axis must be a finite iterable"),
        (object(), TypeError, "per_axis must be a finite iterable"),
        ([3], TypeError, r"per_axis\[0\] must be a finite iterable"),
        ([], ValueError, "axis|at least one"),
        ([[1], []], ValueError, "axis|at least one"),
        ([[1.0]], TypeError, "tile coordinates must be integers"),
        ([[float("inf")]], TypeError, "tile coordinates must be integers"),
        ([["1"]], TypeError, "tile coordinates must be integers"),
        ([[True]], TypeError, "tile coordinates must be integers"),
        ([[None]], TypeError, "tile coordinates must be integers"),
        ([[-1]], ValueError, "non-negative"),
        ([[1, 1]], ValueError, "duplicate"),
    ],
)
def test_selection_errors(arg, exc, match):
    with pytest.raises(exc, match=match):
        TileSelection(arg)


def test_selection_grid():
    s = TileSelection([[0, 2], [1]])
    s._validate_grid_shape((3, 2))
    with pytest.raises(ValueError, match="rank"):
        s._validate_grid_shape((3,))
    with pytest.raises(ValueError, match="outside"):
        s._validate_grid_shape((2, 2))


def test_tile_set_values():
    assert TileSet([(0, 1), (1, 0), (0, 0)]).coordinates == ((0, 0), (1, 0), (0, 1))
    assert TileSet().coordinates == () and len(TileSet()) == 0
    assert repr(TileSet([(1,)])).startswith("TileSet(coordinates=")
    TileSet()._validate_grid_shape((1, 2, 3))  # the empty set fits any grid
    t = TileSet([(1, 1)])
    with pytest.raises(ValueError, match="rank"):
        t._validate_grid_shape((2,))
    with pytest.raises(ValueError, match="outside"):
        t._validate_grid_shape((1, 2))
    assert (1, 1) in t and list(t) == [(1, 1)]


@pytest.mark.parametrize(
    ("arg", "exc", "match"),
    [
        (None, TypeError, "coordinates must be a finite iterable"),
        (5, TypeError, "coordinates must be a finite iterable"),
        ([5], TypeError, r"coordinates\[0\] must be a finite iterable"),
        ([(True, 0)], TypeError, "components must be integers"),
        ([(float("nan"),)], TypeError, "components must be integers"),
        ([(-1, 0)], ValueError, "non-negative"),
        ([(0,), (0, 1)], ValueError, "same rank"),
        ([(0, 1), (0, 1)], ValueError, "duplicate"),
    ],
)
def test_tile_set_errors(arg, exc, match):
    with pytest.raises(exc, match=match):
        TileSet(arg)


def test_residency_plan():
    a = TileSet([(0,)])
    plan = ResidencyPlan(promote=a)
    assert plan.promote is a and plan.retain == TileSet() and plan.evict == TileSet()
    for field in ("promote", "retain", "evict"):
        with pytest.raises(TypeError, match=f"{field} must be a TileSet"):
            ResidencyPlan(**{field: [(0,)]})
    with pytest.raises(ValueError, match="must be disjoint"):
        ResidencyPlan(promote=a, evict=TileSet([(0,)]))
    with pytest.raises(ValueError, match="must be disjoint"):
        ResidencyPlan(retain=a, evict=a)


def test_residency_policy():
    class All:
        def plan(self, required, purpose):
            return ResidencyPlan(promote=required)

    assert isinstance(All(), ResidencyPolicy)
    assert not isinstance(object(), ResidencyPolicy)


def test_frozen_and_hashable():
    s = TileSelection([[1]])
    t = TileSet([(1,)])
    p = ResidencyPlan()
    for value, field in ((s, "per_axis"), (t, "coordinates"), (p, "promote")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, None)
    assert hash(s) == hash(TileSelection([[1]])) and s == TileSelection([[1]])
    assert hash(t) == hash(TileSet([(1,)]))
    assert len({p, ResidencyPlan()}) == 1


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), unique=True))
def test_tile_set_order_law(coords):
    # Sorted by reversed tuple whatever the input order; a permutation of
    # the input gives the same set.
    t = TileSet(coords)
    assert list(t.coordinates) == sorted(set(coords), key=lambda c: c[::-1])
    assert TileSet(reversed(coords)) == t


@given(
    st.lists(
        st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True), min_size=1, max_size=3
    )
)
def test_selection_product_law(axes):
    s = TileSelection(axes)
    n = 1
    for a in axes:
        n *= len(a)
    assert len(s.coordinates) == n == len(s.tile_set)
    # First axis fastest: consecutive coordinates differ first on axis 0.
    assert s.coordinates[0] == tuple(a[0] for a in axes)
