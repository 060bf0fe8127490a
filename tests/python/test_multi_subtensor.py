"""Multi-subtensor tensors (later-api section 10), rule by rule.

Checklist: each rule of section 10 and the test that checks it.

10.1 The representation
  - private TensorRepresentation and Subtensor; primary is subtensor 0:
    test_representation_is_private_and_primary_is_subtensor_0
  - carrier, offset, layout and carrier_type() read subtensor 0; no separate
    fields: test_accessors_read_subtensor_0
  - dtype() is the logical dtype, size() subtensor 0's logical size:
    test_dtype_is_logical_and_size_is_subtensor_0s
10.2 Storage schema
  - a simple dtype has one plane: test_simple_dtype_has_one_plane
  - a CompoundDType has its simple_types in order:
    test_compound_dtype_planes_in_order, test_compound_dtype_rules,
    test_compound_dtype_is_an_interned_value
  - a DTypeCategory has no schema: no dtype here is a category
    (COMPATIBILITY.md 135): test_every_dtype_member_has_one_plane
  - n subtensors, n - 1 adjacent layouts, each of its plane's dtype:
    test_schema_subtensor_count, test_schema_adjacent_count,
    test_schema_plane_dtype
10.3 Universal validation
  - carrier dtype identical to the storage dtype: test_carrier_dtype_identical
  - one exact carrier class: test_one_exact_carrier_class
  - integer, non-negative offsets: test_offsets_integer_and_non_negative
  - placement inside the carrier: test_placement_inside_carrier
  - adjacent shape and reach: test_adjacent_layout_shape,
    test_adjacent_layout_reach
  - schema before universal rules: test_schema_rules_come_first
10.4 Dtype-provided rules: not built (COMPATIBILITY.md 135).
10.5 Ownership and versions
  - strong references, no automatic release: test_representation_holds_carriers
  - version token over unique carriers in order:
    test_version_token_pairs_unique_carriers, test_version_token_follows_writes
10.6 Accepted views
  - permute: test_permute_changes_the_c0_domain
  - slices of normalized start 0: test_slice_with_start_0,
    test_slice_with_another_start_is_refused, test_integer_key_0_removes_a_mode
  - the later planes shared, same carriers and token:
    test_views_share_the_later_planes
  - reshape and the other reshaping views: not in this project
    (COMPATIBILITY.md 136); the slice view's backward: compound dtypes are not
    differentiable (COMPATIBILITY.md 137): test_views_record_no_graph
10.7 Rejected entry points, before any effect (one test each):
  indexing test_rejects_indexing; element assignment test_rejects_mutation;
  arithmetic test_rejects_arithmetic, test_rejects_scalar_arithmetic;
  functional operations test_rejects_functional_operations; rearrange
  test_rejects_rearrange; move test_rejects_move; move_async
  test_rejects_move_async; backward test_rejects_backward; __dlpack__
  test_rejects_dlpack; __dlpack_device__ test_rejects_dlpack_device; carrier
  scatter test_rejects_scatter (as source and as target); Evictable lowering
  test_rejects_evictable_lowering; operation definitions
  test_rejects_defined_operations
10.8 Public construction
  - Tensor(carrier, offset, layout) builds one subtensor; its errors:
    test_public_constructor_builds_one_subtensor
  - only Tensor._from_representation builds several:
    test_from_representation_is_the_way_in
Also: printing does not read elements (test_repr_names_the_subtensors) and
detach keeps the representation (test_detach_keeps_the_representation).
"""

import pickle

import pytest
import strideweave as sw
from strideweave import CPU, DType, Evictable, FileBacked, Layout, Shape, Stride, Tensor
from strideweave.carriers.compound_dtype import CompoundDType
from strideweave.core._representation import Subtensor, TensorRepresentation

F32 = DType.Float32
GRID = Layout(Shape([2, 3]), Stride([1, 2]))  # the value plane, 2x3
PER_ROW = Layout(Shape([2, 3]), Stride([1, 0]))  # each row's scale
SCALES = Layout.leaf(2, 1)


def gate(words):
    return f"Multi-subtensor Tensor {words}"


@pytest.fixture
def mx():
    return CompoundDType("mx", [F32, F32])


@pytest.fixture
def planes():
    values = CPU(0).new_like([float(i) for i in range(6)])
    scales = CPU(0).new_like([0.5, 2.0])
    return values, scales


def representation(mx, values, scales, *, adjacent=PER_ROW, offsets=(0, 0)):
    return TensorRepresentation(
        mx,
        [
            Subtensor(F32, values, offsets[0], GRID),
            Subtensor(F32, scales, offsets[1], SCALES),
        ],
        [adjacent],
    )


@pytest.fixture
def multi(mx, planes):
    return Tensor._from_representation(representation(mx, *planes))


def snapshot(*carriers):
    return [(c.version, c.is_released(), c.size()) for c in carriers]


# ------------------------------------------------------------------ 10.1


def test_representation_is_private_and_primary_is_subtensor_0(multi, planes):
    rep = multi._representation
    assert isinstance(rep, TensorRepresentation)
    assert rep.primary is rep.subtensors[0]
    assert rep.primary.carrier is planes[0]
    assert rep.subtensors[1].carrier is planes[1]
    assert rep.subtensors[1].placement_layout == SCALES
    assert rep.adjacent_layouts == (PER_ROW,)
    assert "TensorRepresentation" not in sw.__all__


def test_accessors_read_subtensor_0(multi, planes):
    rep = multi._representation
    assert multi.carrier is planes[0] is rep.primary.carrier
    assert multi.offset == 0 == rep.primary.offset
    assert multi.layout == GRID == rep.primary.placement_layout
    assert multi.carrier_type() is CPU
    assert multi.shape == (2, 3)


def test_dtype_is_logical_and_size_is_subtensor_0s(multi, mx):
    assert multi.dtype() is mx
    assert multi.size() == 6
    assert multi.numel() == 6
    assert not multi.is_differentiable()


# ------------------------------------------------------------------ 10.2


def test_simple_dtype_has_one_plane(planes):
    rep = TensorRepresentation(F32, [Subtensor(F32, planes[0], 0, GRID)], [])
    t = Tensor._from_representation(rep)
    assert t.dtype() is F32
    assert len(t._representation.subtensors) == 1
    assert t[1] == 1.0  # a simple tensor is not refused anywhere


def test_every_dtype_member_has_one_plane():
    for d in DType:
        with pytest.raises(ValueError, match=f"DType '{d.value}' requires 1 subtensors, got 0"):
            TensorRepresentation(d, [], [])


def test_compound_dtype_planes_in_order():
    d = CompoundDType("q", [DType.Float32, DType.Int32, DType.Bool])
    assert d.simple_types == (DType.Float32, DType.Int32, DType.Bool)
    assert d.name == "q"
    assert repr(d) == "CompoundDType('q', (DType.Float32, DType.Int32, DType.Bool))"


def test_compound_dtype_rules():
    with pytest.raises(ValueError, match="at least 2 planes and at most 16, got 1"):
        CompoundDType("one", [F32])
    with pytest.raises(ValueError, match="got 17"):
        CompoundDType("many", [F32] * 17)
    with pytest.raises(ValueError, match="name must not be empty"):
        CompoundDType("", [F32, F32])
    with pytest.raises(TypeError, match="name must be a str"):
        CompoundDType(1, [F32, F32])
    with pytest.raises(TypeError, match="plane 1 must be a DType member"):
        CompoundDType("x", [F32, "Float32"])
    with pytest.raises(TypeError):
        CompoundDType("x", 3)


def test_compound_dtype_is_an_interned_value(mx):
    assert CompoundDType("mx", (F32, F32)) is mx
    assert CompoundDType("mx", [F32, DType.Int32]) is not mx
    assert pickle.loads(pickle.dumps(mx)) is mx
    with pytest.raises(AttributeError, match="immutable"):
        mx.name = "other"
    with pytest.raises(AttributeError, match="immutable"):
        del mx._name


def test_schema_subtensor_count(mx, planes):
    with pytest.raises(ValueError, match="requires 2 subtensors"):
        TensorRepresentation(mx, [Subtensor(F32, planes[0], 0, GRID)], [PER_ROW])


def test_schema_adjacent_count(mx, planes):
    subs = [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, planes[1], 0, SCALES)]
    with pytest.raises(ValueError, match="requires 1 adjacent layouts"):
        TensorRepresentation(mx, subs, [])


def test_schema_plane_dtype(planes):
    ints = CPU(0).new_like([1, 2], dtype=DType.Int32)
    mixed = CompoundDType("mixed", [F32, DType.Int32])
    TensorRepresentation(
        mixed,
        [Subtensor(F32, planes[0], 0, GRID), Subtensor(DType.Int32, ints, 0, SCALES)],
        [PER_ROW],
    )
    with pytest.raises(ValueError, match="subtensor 1 must use storage dtype Int32, not Float32"):
        TensorRepresentation(
            mixed,
            [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, planes[1], 0, SCALES)],
            [PER_ROW],
        )
    with pytest.raises(ValueError, match="subtensor 0 must use storage dtype Float32"):
        TensorRepresentation(
            mixed,
            [Subtensor(DType.Int32, ints, 0, GRID), Subtensor(DType.Int32, ints, 0, SCALES)],
            [PER_ROW],
        )


# ------------------------------------------------------------------ 10.3


def test_carrier_dtype_identical(mx, planes):
    ints = CPU(0).new_like([1, 2], dtype=DType.Int32)
    subs = [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, ints, 0, SCALES)]
    with pytest.raises(ValueError, match="carrier dtype must be identical"):
        TensorRepresentation(mx, subs, [PER_ROW])


def test_one_exact_carrier_class(mx, planes, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    filed = FileBacked(dtype=F32).new_like([0.5, 2.0])
    subs = [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, filed, 0, SCALES)]
    with pytest.raises(TypeError, match="one exact class"):
        TensorRepresentation(mx, subs, [PER_ROW])

    class MyCPU(CPU):
        pass

    sub_cpu = MyCPU(2)
    subs = [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, sub_cpu, 0, SCALES)]
    with pytest.raises(TypeError, match="one exact class"):
        TensorRepresentation(mx, subs, [PER_ROW])
    filed.release()


def test_offsets_integer_and_non_negative(mx, planes):
    with pytest.raises(ValueError, match="offset must be non-negative"):
        representation(mx, *planes, offsets=(0, -1))
    with pytest.raises(ValueError, match="offset must be non-negative"):
        representation(mx, *planes, offsets=(0.0, 0))
    with pytest.raises(ValueError, match="offset must be non-negative"):
        representation(mx, *planes, offsets=("0", 0))


def test_placement_inside_carrier(mx, planes):
    with pytest.raises(ValueError, match="placement storage exceeds carrier size"):
        representation(mx, *planes, offsets=(0, 1))
    with pytest.raises(ValueError, match="subtensor 0 placement storage exceeds carrier size"):
        representation(mx, CPU(5), planes[1])


def test_adjacent_layout_shape(mx, planes):
    with pytest.raises(ValueError, match="source placement shape"):
        representation(mx, *planes, adjacent=Layout(Shape([3, 2]), Stride([1, 0])))


def test_adjacent_layout_reach(mx, planes):
    too_far = Layout(Shape([2, 3]), Stride([1, 1]))
    with pytest.raises(ValueError, match="outside level 1 shape cardinality 2"):
        representation(mx, *planes, adjacent=too_far)
    # The level is the next placement's size, not its carrier's.
    with pytest.raises(ValueError, match="outside level 1 shape cardinality 2"):
        representation(mx, planes[0], CPU(8), adjacent=too_far)


def test_schema_rules_come_first(mx, planes):
    ints = CPU(0).new_like([1, 2], dtype=DType.Int32)
    subs = [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, ints, -1, SCALES)]
    with pytest.raises(ValueError, match="requires 1 adjacent layouts"):
        TensorRepresentation(mx, subs, [])


def test_values_of_the_wrong_kind(mx, planes):
    with pytest.raises(TypeError, match="logical_dtype must be a DType or a CompoundDType"):
        TensorRepresentation("mx", [], [])
    with pytest.raises(TypeError, match="subtensor 1 carrier must be a Carrier"):
        TensorRepresentation(
            mx, [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, [], 0, SCALES)], [PER_ROW]
        )
    with pytest.raises(TypeError, match="subtensor 0 storage_dtype must be a DType"):
        TensorRepresentation(
            mx, [Subtensor(mx, planes[0], 0, GRID), Subtensor(F32, planes[1], 0, SCALES)], [PER_ROW]
        )
    with pytest.raises(TypeError, match="placement_layout must be a Layout"):
        TensorRepresentation(
            mx,
            [Subtensor(F32, planes[0], 0, "2:1"), Subtensor(F32, planes[1], 0, SCALES)],
            [PER_ROW],
        )
    with pytest.raises(TypeError, match="adjacent layout 0 must be a Layout"):
        TensorRepresentation(
            mx,
            [Subtensor(F32, planes[0], 0, GRID), Subtensor(F32, planes[1], 0, SCALES)],
            ["(2,3):(1,0)"],
        )


# ------------------------------------------------------------------ 10.5


def test_representation_holds_carriers(mx):
    t = Tensor._from_representation(
        representation(mx, CPU(0).new_like([1.0] * 6), CPU(0).new_like([3.0, 4.0]))
    )
    scales = t._representation.subtensors[1].carrier
    assert not scales.is_released()
    assert scales[1] == 4.0  # still alive without any other holder
    del t
    assert not scales.is_released()  # nothing releases it


def test_version_token_pairs_unique_carriers(mx, multi, planes):
    assert multi._version_token() == ((id(planes[0]), 0), (id(planes[1]), 0))
    both = CPU(8)
    shared = Tensor._from_representation(
        TensorRepresentation(
            mx, [Subtensor(F32, both, 0, GRID), Subtensor(F32, both, 6, SCALES)], [PER_ROW]
        )
    )
    assert shared._version_token() == ((id(both), 0),)
    # Order of first appearance.
    first_scales = Tensor._from_representation(
        TensorRepresentation(
            mx, [Subtensor(F32, both, 0, GRID), Subtensor(F32, planes[1], 0, SCALES)], [PER_ROW]
        )
    )
    assert [c for c, _ in first_scales._version_token()] == [id(both), id(planes[1])]


def test_version_token_follows_writes(multi, planes):
    planes[1][0] = 9.0
    assert multi._version_token()[1] == (id(planes[1]), planes[1].version)
    assert multi.version == planes[0].version


# ------------------------------------------------------------------ 10.6


def test_permute_changes_the_c0_domain(multi, planes):
    p = multi.permute(1, 0) if hasattr(multi, "permute") else sw.permute(multi, 1, 0)
    rep = p._representation
    assert p.layout == Layout(Shape([3, 2]), Stride([2, 1]))
    assert rep.adjacent_layouts == (Layout(Shape([3, 2]), Stride([0, 1])),)
    assert p.dtype() is multi.dtype()
    assert multi.T.layout == p.layout


def test_slice_with_start_0(multi):
    v = multi[:, 0:2]
    assert v.layout == Layout(Shape([2, 2]), Stride([1, 2]))
    assert v._representation.adjacent_layouts == (Layout(Shape([2, 2]), Stride([1, 0])),)
    assert v.offset == 0
    assert multi[:1, :].layout == Layout(Shape([1, 3]), Stride([1, 2]))


def test_slice_with_another_start_is_refused(multi, planes):
    before = snapshot(*planes)
    with pytest.raises(NotImplementedError, match="normalized start 0"):
        multi[1:, :]
    with pytest.raises(NotImplementedError, match="normalized start 0"):
        multi[:, -1:]
    assert snapshot(*planes) == before


def test_integer_key_0_removes_a_mode(multi):
    v = multi[0, :]
    assert v.shape == (3,)
    assert v._representation.adjacent_layouts == (Layout(Shape([3]), Stride([0])),)
    with pytest.raises(NotImplementedError, match="normalized start 0"):
        multi[1, :]


def test_views_share_the_later_planes(multi, planes):
    for v in (sw.permute(multi, 1, 0), multi[:, 0:2]):
        rep = v._representation
        assert rep.subtensors[1].carrier is planes[1]
        assert rep.subtensors[1].placement_layout == SCALES
        assert v._version_token() == multi._version_token()


def test_views_record_no_graph(multi):
    assert sw.permute(multi, 1, 0).autograd_ctx is None
    assert multi[:, 0:1].autograd_ctx is None


# ------------------------------------------------------------------ 10.7


def test_rejects_indexing(multi, planes):
    before = snapshot(*planes)
    with pytest.raises(NotImplementedError, match=gate("indexing")):
        multi[0]
    with pytest.raises(NotImplementedError, match=gate("indexing")):
        multi[(1, 2)]
    with pytest.raises(NotImplementedError, match=gate("indexing")):
        multi.tolist()
    assert snapshot(*planes) == before


def test_rejects_mutation(multi, planes):
    before = snapshot(*planes)
    with pytest.raises(NotImplementedError, match=gate("mutation")):
        multi[0] = 1.0
    with pytest.raises(NotImplementedError, match=gate("mutation")):
        multi[(0, 1)] = "not even a number"  # refused before conversion
    assert snapshot(*planes) == before


def test_rejects_arithmetic(multi, planes):
    before = snapshot(*planes)
    plain = Tensor(CPU(6), 0, GRID)
    for run in (
        lambda: multi + multi,
        lambda: plain * multi,
        lambda: multi @ multi,
        lambda: -multi,
    ):
        with pytest.raises(NotImplementedError, match=gate("operation execution")):
            run()
    assert snapshot(*planes) == before


def test_rejects_scalar_arithmetic(multi, planes):
    made = []

    class Watch(CPU):
        def new_like(self, *args, **kwargs):  # the scalar's constant
            made.append(args)
            return super().new_like(*args, **kwargs)

    before = snapshot(*planes)
    for run in (lambda: multi + 1, lambda: 2 - multi, lambda: multi / 2.0, lambda: multi.clone()):
        with pytest.raises(NotImplementedError, match=gate("operation execution")):
            run()
    assert snapshot(*planes) == before and made == []


def test_rejects_functional_operations(multi, planes):
    before = snapshot(*planes)
    for run in (
        lambda: sw.functional.relu(multi),
        lambda: sw.functional.exp(multi),
        lambda: sw.functional.reduce(multi, "a b -> a"),
        lambda: sw.functional.einsum(multi, multi, "a b, c b -> a c"),
    ):
        with pytest.raises(NotImplementedError, match=gate("operation execution")):
            run()
    assert snapshot(*planes) == before


def test_rejects_rearrange(multi, planes):
    before = snapshot(*planes)
    with pytest.raises(NotImplementedError, match=gate("operation execution")):
        sw.rearrange(multi, "a b -> b a")
    assert snapshot(*planes) == before


def test_rejects_move(multi, planes):
    dest = CPU(0)
    before = snapshot(*planes, dest)
    with pytest.raises(NotImplementedError, match=gate("operation execution")):
        sw.move(multi, dest)
    assert snapshot(*planes, dest) == before


def test_rejects_move_async(multi, planes):
    dest = CPU(0)
    before = snapshot(*planes, dest)
    with pytest.raises(NotImplementedError, match=gate("operation execution")):
        sw.move_async(multi, dest)
    assert snapshot(*planes, dest) == before


def test_rejects_backward(multi, planes):
    before = snapshot(*planes)
    with pytest.raises(NotImplementedError, match=gate("backward")):
        multi.backward()
    with pytest.raises(NotImplementedError, match=gate("backward")):
        multi.backward(Tensor(CPU(6), 0, GRID))
    plain = Tensor(CPU(6), 0, GRID)
    with pytest.raises(NotImplementedError, match=gate("backward")):
        plain.backward(multi)
    assert snapshot(*planes) == before


def test_rejects_dlpack(multi, planes):
    before = snapshot(*planes)
    with pytest.raises(NotImplementedError, match=gate("DLPack export")):
        multi.__dlpack__()
    with pytest.raises(NotImplementedError, match=gate("DLPack export")):
        multi.__dlpack__(dl_device="bad")  # refused before the arguments
    assert snapshot(*planes) == before


def test_rejects_dlpack_device(multi, planes):
    before = snapshot(*planes)
    with pytest.raises(NotImplementedError, match=gate("DLPack export")):
        multi.__dlpack_device__()
    assert snapshot(*planes) == before


def test_rejects_scatter(multi, planes):
    target = CPU(6)
    onto = Tensor(target, 0, GRID)
    before = snapshot(*planes, target)
    with pytest.raises(NotImplementedError, match=gate("scatter")):
        target.scatter(multi, onto, GRID)
    with pytest.raises(NotImplementedError, match=gate("scatter")):
        planes[0].scatter(onto, multi, GRID)
    assert snapshot(*planes, target) == before


def test_rejects_evictable_lowering(mx):
    hot = [CPU(0).new_like([1.0] * 6), CPU(0).new_like([1.0, 2.0])]
    tiers = [Evictable(hot[0], CPU(0)), Evictable(hot[1], CPU(0))]
    t = Tensor._from_representation(
        TensorRepresentation(
            mx, [Subtensor(F32, tiers[0], 0, GRID), Subtensor(F32, tiers[1], 0, SCALES)], [PER_ROW]
        )
    )
    before = snapshot(*hot)
    with pytest.raises(NotImplementedError, match=gate("Evictable operation lowering")):
        sw.permute(t, 1, 0)
    with pytest.raises(NotImplementedError, match=gate("Evictable operation lowering")):
        t[:, 0:1]
    with pytest.raises(NotImplementedError, match=gate("operation execution")):
        sw.relu(t)
    assert snapshot(*hot) == before
    assert not tiers[0].is_evicted()


def test_rejects_defined_operations(multi, planes):
    from strideweave.operation_definition import _operation_definition

    before = snapshot(*planes)
    add = _operation_definition("add")
    with pytest.raises(NotImplementedError, match=gate("operation execution")):
        add(multi, multi)
    assert snapshot(*planes) == before


# ------------------------------------------------------------------ 10.8


def test_public_constructor_builds_one_subtensor(planes):
    t = Tensor(planes[0], 0, GRID)
    assert len(t._representation.subtensors) == 1
    assert t._representation.logical_dtype is F32
    assert t._version_token() == ((id(planes[0]), planes[0].version),)
    with pytest.raises(TypeError, match="offset must be an integer"):
        Tensor(planes[0], 0.0, GRID)
    with pytest.raises(ValueError, match="offset must be non-negative"):
        Tensor(planes[0], -1, GRID)
    with pytest.raises(ValueError, match="exceeds carrier size"):
        Tensor(planes[1], 0, GRID)


def test_from_representation_is_the_way_in(mx, planes):
    rep = representation(mx, *planes)
    t = Tensor._from_representation(rep)
    assert type(t) is Tensor
    assert t._representation.logical_dtype is mx
    with pytest.raises(AttributeError):
        rep.logical_dtype = F32  # frozen
    with pytest.raises(AttributeError):
        Tensor._from_representation(object())


# ---------------------------------------------------------------- misc


def test_repr_names_the_subtensors(multi):
    assert repr(multi).startswith("Tensor(<2 subtensors>, dtype=mx, carrier=CPU")
    assert str(multi) == "<2 subtensors>"


def test_detach_keeps_the_representation(multi, planes):
    d = multi.detach()
    assert d is not multi
    assert d.dtype() is multi.dtype()
    assert d._version_token() == multi._version_token()
    assert d._representation.subtensors[1].carrier is planes[1]
