"""move(tensor, destination), MoveOperation and the move registry
(reference §16, interop-movement specification: move, dispatch, registry,
copy hook, pins, autograd across the move, failure safety)."""

import gc

import pytest
import strideweave as sw
import strideweave.functional
from helpers_carriers import L, ListCarrier, flat
from helpers_ops import build
from hypothesis import given, settings
from hypothesis import strategies as st
from strideweave import CPU, Carrier, DType, FileBacked, Generic, Tensor, _native
from strideweave.carriers.move import (
    CpuToFileBackedMoveOperation,
    ElementwiseMoveOperation,
    FileBackedToCpuMoveOperation,
    MoveOperation,
    dispatch_move,
    register_move_operation,
    registered_move_operation,
    unregister_move_operation,
)
from test_layout_properties import nonempty_layouts


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))


@pytest.fixture(autouse=True)
def no_faults():
    yield
    _native._debug_fail_io_after(-1)
    _native._debug_fail_alloc_after(-1)


def cpu_tensor(values, layout=None, offset=0, dtype=DType.Float32):
    c = CPU(len(values), dtype=dtype)
    for i, v in enumerate(values):
        c[i] = v
    return Tensor(c, offset, layout if layout is not None else flat(len(values) - offset))


def file_tensor(values, layout=None, dtype=DType.Float32):
    f = FileBacked(dtype=dtype)
    f._allocate(len(values))
    for i, v in enumerate(values):
        f[i] = v
    return Tensor(f, 0, layout if layout is not None else flat(len(values)))


def logical(t):
    return [t[i] for i in range(t.size())]


def file_values(f):
    return [f[i] for i in range(f.size())]


class MyCPU(CPU):
    pass


class MyGeneric(Generic):
    pass


# ------------------------------------------------------------ names


def test_names_and_homes():
    assert sw.move is strideweave.functional.move is strideweave.operation.move
    assert sw.MoveOperation is MoveOperation
    assert sw.ElementwiseMoveOperation is ElementwiseMoveOperation
    assert sw.CpuToFileBackedMoveOperation is CpuToFileBackedMoveOperation
    assert sw.FileBackedToCpuMoveOperation is FileBackedToCpuMoveOperation
    for cls in (
        MoveOperation,
        ElementwiseMoveOperation,
        CpuToFileBackedMoveOperation,
        FileBackedToCpuMoveOperation,
    ):
        assert cls.__module__ == "strideweave.carriers.move"
        assert issubclass(cls, sw.Operation)
    assert not hasattr(sw, "dispatch_move")
    assert "move" in strideweave.functional.__all__


def test_class_pins():
    assert MoveOperation.source_class is None and MoveOperation.destination_class is None
    assert ElementwiseMoveOperation.source_class is None
    assert ElementwiseMoveOperation.destination_class is None
    assert CpuToFileBackedMoveOperation.source_class is CPU
    assert CpuToFileBackedMoveOperation.destination_class is FileBacked
    assert FileBackedToCpuMoveOperation.source_class is FileBacked
    assert FileBackedToCpuMoveOperation.destination_class is CPU


# ------------------------------------------------------------ move basics


def test_move_fills_destination_and_releases_source():
    t = cpu_tensor([1.0, 2.0, 3.0])
    source = t.carrier
    dest = CPU(3)
    m = sw.move(t, dest)
    assert m.carrier is dest
    assert m.offset == 0
    assert m.layout is t.layout
    assert logical(m) == [1.0, 2.0, 3.0]
    assert source.is_released()
    with pytest.raises(RuntimeError, match="Carrier is released"):
        t[0]


def test_move_from_an_offset_starts_at_zero():
    t = cpu_tensor([9.0, 9.0, 1.0, 2.0], flat(2), offset=2)
    m = sw.move(t, FileBacked(dtype=DType.Float32))
    assert m.offset == 0 and logical(m) == [1.0, 2.0]
    assert m.carrier.size() == 2


def test_move_by_keyword():
    t = cpu_tensor([1.0])
    m = sw.move(tensor=t, destination=CPU(1))
    assert logical(m) == [1.0]


def test_destination_larger_than_needed():
    t = cpu_tensor([1.0, 2.0])
    dest = CPU(5)
    dest[4] = 7.0
    m = sw.move(t, dest)
    assert logical(m) == [1.0, 2.0] and dest[4] == 7.0


def test_empty_filebacked_grows_to_cosize():
    layout = L([2, 2], [1, 3])  # cosize 5, size 4
    t = cpu_tensor([1.0, 2.0, 0.0, 3.0, 4.0], layout)
    f = FileBacked(dtype=DType.Float32)
    m = sw.move(t, f)
    assert f.size() == layout.cosize == 5
    assert logical(m) == [1.0, 2.0, 3.0, 4.0]


def test_broadcast_view_moves_without_materialising():
    # two elements over six coordinates
    layout = L([2, 3], [1, 0])
    t = cpu_tensor([5.0, 6.0], layout)
    assert layout.cosize == 2 and layout.size == 6
    dest = CPU(2)
    m = sw.move(t, dest)
    assert m.layout == layout and m.layout.stride == layout.stride
    assert logical(m) == [5.0, 6.0] * 3
    f = FileBacked(dtype=DType.Float32)
    m2 = sw.move(m, f)
    assert f.size() == 2 and logical(m2) == [5.0, 6.0] * 3


def test_int32_move_is_not_differentiable():
    t = cpu_tensor([1, 2], dtype=DType.Int32)
    m = sw.move(t, FileBacked(dtype=DType.Int32))
    assert logical(m) == [1, 2]
    assert not m.is_differentiable() and m.autograd_ctx is None


def test_generic_to_filebacked_and_back():
    t = Tensor(Generic([1.5, 2.5]), 0, flat(2))
    f = FileBacked()
    m = sw.move(t, f)
    assert logical(m) == [1.5, 2.5] and t.carrier.is_released()
    back = sw.move(m, Generic([0.0, 0.0]))
    assert logical(back) == [1.5, 2.5] and f.is_released()


# ------------------------------------------------------------ validation


def test_tensor_must_be_a_tensor():
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        sw.move([1.0], CPU(1))
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        ElementwiseMoveOperation().forward(None, CPU(1))


def check_untouched(t, dest, values, dest_version):
    assert not t.carrier.is_released()
    assert logical(t) == values
    assert dest.is_released() or dest.version == dest_version


def test_source_released():
    t = cpu_tensor([1.0])
    t.carrier.release()
    with pytest.raises(RuntimeError, match="^tensor carrier is released$"):
        sw.move(t, "not a carrier")


def test_source_owned():
    t = cpu_tensor([1.0])
    token = t.carrier._claim_ownership()
    with pytest.raises(
        RuntimeError,
        match="^tensor carrier is owned by another carrier object and cannot be moved directly$",
    ):
        sw.move(t, "not a carrier")
    # Under owner access the move is allowed.
    t.carrier._begin_owner_access(token)
    try:
        m = sw.move(t, CPU(1))
    finally:
        t.carrier._end_owner_access(token)
    assert logical(m) == [1.0] and t.carrier.is_released()


def test_destination_not_a_carrier():
    t = cpu_tensor([1.0])
    for bad in (CPU, None, 3, [1.0]):
        with pytest.raises(TypeError, match="^destination must be a Carrier instance$"):
            sw.move(t, bad)
    check_untouched(t, CPU(1), [1.0], 0)


def test_destination_is_own_carrier():
    t = cpu_tensor([1.0])
    with pytest.raises(ValueError, match="^destination must not be the tensor's own carrier$"):
        sw.move(t, t.carrier)
    assert not t.carrier.is_released()


def test_destination_released():
    t = cpu_tensor([1.0])
    dest = CPU(1)
    dest.release()
    with pytest.raises(RuntimeError, match="^destination carrier is released$"):
        sw.move(t, dest)
    check_untouched(t, dest, [1.0], 0)


def test_destination_immutable():
    t = cpu_tensor([1.0])
    dest = CPU(1, mutable=False)
    with pytest.raises(RuntimeError, match="^destination carrier must be mutable$"):
        sw.move(t, dest)
    check_untouched(t, dest, [1.0], 0)
    owned = CPU(1)
    owned._claim_ownership()
    with pytest.raises(RuntimeError, match="^destination carrier must be mutable$"):
        sw.move(t, owned)


def test_destination_dtype():
    t = cpu_tensor([1.0])
    for dest in (Generic([0.0]), CPU(1, dtype=DType.Int32), FileBacked()):
        with pytest.raises(TypeError, match="^destination dtype must match the tensor dtype$"):
            sw.move(t, dest)
        check_untouched(t, dest, [1.0], 0)


def test_destination_too_small():
    t = cpu_tensor([1.0, 2.0, 3.0], L([2], [2]))  # cosize 3
    dest = CPU(2)
    with pytest.raises(
        ValueError, match="^destination carrier is too small for the tensor layout$"
    ):
        sw.move(t, dest)
    check_untouched(t, dest, [1.0, 3.0], 0)
    assert logical(sw.move(t, CPU(3))) == [1.0, 3.0]


def test_validation_order():
    t = cpu_tensor([1.0])
    released = CPU(1)
    released.release()
    # own carrier comes before released/immutable/dtype
    with pytest.raises(ValueError):
        sw.move(t, t.carrier)
    # released destination before immutability and dtype
    with pytest.raises(RuntimeError, match="released"):
        sw.move(t, released)
    frozen = CPU(1, mutable=False, dtype=DType.Int32)
    with pytest.raises(RuntimeError, match="must be mutable"):
        sw.move(t, frozen)
    # dtype before size
    with pytest.raises(TypeError, match="dtype"):
        sw.move(t, CPU(0, dtype=DType.Int32))
    # pins before size
    with pytest.raises(TypeError, match="requires a FileBacked destination"):
        CpuToFileBackedMoveOperation().forward(t, CPU(0))


def test_pinned_classes_refuse_other_pairs():
    g = Tensor(Generic([1.0]), 0, flat(1))
    with pytest.raises(TypeError, match="^CpuToFileBackedMoveOperation requires a CPU source$"):
        CpuToFileBackedMoveOperation().forward(g, FileBacked())
    assert not g.carrier.is_released()
    t = cpu_tensor([1.0])
    with pytest.raises(
        TypeError, match="^CpuToFileBackedMoveOperation requires a FileBacked destination$"
    ):
        CpuToFileBackedMoveOperation().forward(t, CPU(1))
    with pytest.raises(
        TypeError, match="^FileBackedToCpuMoveOperation requires a FileBacked source$"
    ):
        FileBackedToCpuMoveOperation().forward(t, CPU(1))
    # exact classes: a subclass does not satisfy a pin
    s = Tensor(MyCPU(1), 0, flat(1))
    with pytest.raises(TypeError, match="requires a CPU source"):
        CpuToFileBackedMoveOperation().forward(s, FileBacked(dtype=DType.Float32))
    assert not t.carrier.is_released() and not s.carrier.is_released()


# ------------------------------------------------------------ routes


def test_cpu_to_filebacked_bulk_copies_span_and_keeps_version():
    layout = L([2], [2])  # a hole at 1
    t = cpu_tensor([1.0, 42.0, 2.0], layout)
    f = FileBacked(dtype=DType.Float32)
    m = sw.move(t, f)
    assert type(m.autograd_ctx) is CpuToFileBackedMoveOperation
    assert logical(m) == [1.0, 2.0]
    assert file_values(f) == [1.0, 42.0, 2.0]  # the hole travels too
    assert f.version == 0


def test_filebacked_to_cpu_bulk_keeps_version():
    t = file_tensor([1.0, 2.0, 3.0])
    dest = CPU(3)
    m = sw.move(t, dest)
    assert type(m.autograd_ctx) is FileBackedToCpuMoveOperation
    assert logical(m) == [1.0, 2.0, 3.0] and dest.version == 0
    assert t.carrier.is_released()


def test_bulk_transfer_larger_than_one_piece():
    n = 3 * 1024 * 1024  # 12 MiB of float32: two 8 MiB pieces
    c = CPU(n)
    c[0], c[n // 2], c[n - 1] = 1.0, 2.0, 3.0
    t = Tensor(c, 0, flat(n))
    f = FileBacked(dtype=DType.Float32)
    m = sw.move(t, f)
    assert (m[0], m[n // 2], m[n - 1]) == (1.0, 2.0, 3.0)
    back = sw.move(m, CPU(n))
    assert (back[0], back[n // 2], back[n - 1], back[5]) == (1.0, 2.0, 3.0, 0.0)


def test_elementwise_fallback_bumps_destination_per_element():
    t = cpu_tensor([1.0, 2.0, 3.0])
    dest = CPU(3)
    m = sw.move(t, dest)
    assert type(m.autograd_ctx) is ElementwiseMoveOperation
    assert dest.version == 3


def test_elementwise_leaves_holes():
    t = cpu_tensor([1.0, 0.0, 2.0], L([2], [2]))
    dest = CPU(3)
    dest[1] = 9.0
    sw.move(t, dest)
    assert list(dest) == [1.0, 9.0, 2.0]


def test_subclassed_carriers_use_the_fallback():
    s = Tensor(MyCPU(2), 0, flat(2))
    s.carrier[1] = 4.0
    f = FileBacked(dtype=DType.Float32)
    m = sw.move(s, f)
    assert type(m.autograd_ctx) is ElementwiseMoveOperation
    assert f.version == 2 and logical(m) == [0.0, 4.0]
    assert s.carrier.is_released()


def test_python_carrier_source_and_destination():
    src = ListCarrier([1.0, 2.0], dtype=DType.Floating)
    t = Tensor(src, 0, flat(2))
    dest = ListCarrier([None, None], dtype=DType.Floating)
    m = sw.move(t, dest)
    assert dest.values == [1.0, 2.0] and m.carrier is dest
    assert src.is_released() and src.release_calls == 1
    back = sw.move(m, Generic([0.0, 0.0]))
    assert logical(back) == [1.0, 2.0]


def test_failing_element_write_keeps_source():
    t = Tensor(Generic(["not a number"], dtype=DType.Floating), 0, flat(1))
    f = FileBacked()
    with pytest.raises(TypeError):  # the FileBacked write rejects the value
        sw.move(t, f)
    assert not t.carrier.is_released() and t[0] == "not a number"
    assert f.version == 0


# ------------------------------------------------------------ registry


def test_builtin_registry_entries():
    assert dispatch_move(CPU, FileBacked) is CpuToFileBackedMoveOperation
    assert dispatch_move(FileBacked, CPU) is FileBackedToCpuMoveOperation
    for pair in [(CPU, CPU), (Generic, Generic), (FileBacked, FileBacked), (Generic, CPU)]:
        assert dispatch_move(*pair) is ElementwiseMoveOperation
    assert dispatch_move(MyCPU, FileBacked) is ElementwiseMoveOperation
    assert dispatch_move(FileBacked, MyCPU) is ElementwiseMoveOperation


class RecordingMove(MoveOperation):
    calls = []

    def _copy(self, tensor, destination, output, element_count):
        RecordingMove.calls.append(
            (self, tensor, destination, output, element_count, tensor.carrier.is_released())
        )
        for i in range(tensor.size()):
            output[i] = tensor[i]


def test_register_dispatch_unregister():
    assert register_move_operation(MyGeneric, Generic, RecordingMove) is None
    try:
        assert dispatch_move(MyGeneric, Generic) is RecordingMove
        assert dispatch_move(Generic, Generic) is ElementwiseMoveOperation
        assert dispatch_move(Generic, MyGeneric) is ElementwiseMoveOperation

        class Deeper(MyGeneric):
            pass

        assert dispatch_move(Deeper, Generic) is ElementwiseMoveOperation
        with pytest.raises(KeyError):
            unregister_move_operation(Deeper, Generic)
    finally:
        assert unregister_move_operation(MyGeneric, Generic) is RecordingMove
    with pytest.raises(KeyError) as info:
        unregister_move_operation(MyGeneric, Generic)
    assert info.value.args == ("no move operation is registered for (MyGeneric, Generic)",)
    assert dispatch_move(MyGeneric, Generic) is ElementwiseMoveOperation


def test_register_refuses_duplicates_and_keeps_entry():
    with pytest.raises(
        ValueError, match=r"^a move operation is already registered for \(CPU, FileBacked\)$"
    ):
        register_move_operation(CPU, FileBacked, RecordingMove)
    assert dispatch_move(CPU, FileBacked) is CpuToFileBackedMoveOperation
    with registered_move_operation(MyGeneric, Generic, RecordingMove):
        with pytest.raises(ValueError, match=r"\(MyGeneric, Generic\)"):
            register_move_operation(MyGeneric, Generic, ElementwiseMoveOperation)
        assert dispatch_move(MyGeneric, Generic) is RecordingMove


def test_register_argument_checks():
    with pytest.raises(TypeError, match="^source_class must be a Carrier subclass$"):
        register_move_operation(CPU(1), FileBacked, RecordingMove)
    with pytest.raises(TypeError, match="^source_class must be a Carrier subclass$"):
        register_move_operation(int, FileBacked, RecordingMove)
    with pytest.raises(TypeError, match="^destination_class must be a Carrier subclass$"):
        register_move_operation(CPU, "FileBacked", RecordingMove)
    with pytest.raises(TypeError, match="^operation_class must be a MoveOperation subclass$"):
        register_move_operation(MyGeneric, Generic, sw.Operation)
    with pytest.raises(TypeError, match="^operation_class must be a MoveOperation subclass$"):
        register_move_operation(MyGeneric, Generic, RecordingMove())
    with pytest.raises(TypeError, match="^operation_class must be a MoveOperation subclass$"):
        with registered_move_operation(MyGeneric, Generic, object):
            pass
    assert dispatch_move(MyGeneric, Generic) is ElementwiseMoveOperation


def test_unregister_builtin_and_restore():
    assert unregister_move_operation(CPU, FileBacked) is CpuToFileBackedMoveOperation
    try:
        assert dispatch_move(CPU, FileBacked) is ElementwiseMoveOperation
        t = cpu_tensor([1.0, 2.0])
        f = FileBacked(dtype=DType.Float32)
        m = sw.move(t, f)
        assert type(m.autograd_ctx) is ElementwiseMoveOperation and f.version == 2
    finally:
        register_move_operation(CPU, FileBacked, CpuToFileBackedMoveOperation)
    assert dispatch_move(CPU, FileBacked) is CpuToFileBackedMoveOperation


def test_registered_context_manager_normal_and_raising_exit():
    with registered_move_operation(MyGeneric, Generic, RecordingMove) as cls:
        assert cls is RecordingMove
        assert dispatch_move(MyGeneric, Generic) is RecordingMove
    assert dispatch_move(MyGeneric, Generic) is ElementwiseMoveOperation
    with pytest.raises(LookupError, match="from the block"):
        with registered_move_operation(MyGeneric, Generic, RecordingMove):
            raise LookupError("from the block")
    assert dispatch_move(MyGeneric, Generic) is ElementwiseMoveOperation


def test_registered_operation_runs_through_move():
    RecordingMove.calls.clear()
    layout = L([2], [2])  # cosize 3
    t = Tensor(MyGeneric([1.0, 0.0, 2.0]), 0, layout)
    dest = Generic([0.0, 0.0, 0.0])
    with registered_move_operation(MyGeneric, Generic, RecordingMove):
        m = sw.move(t, dest)
    [(op, tensor, destination, output, count, released)] = RecordingMove.calls
    assert tensor is t and destination is dest and output is m
    assert output.carrier is dest and output.offset == 0 and output.layout is layout
    assert count == 3  # the cosize, not the size
    assert released is False  # the source goes only after _copy returned
    assert t.carrier.is_released()
    assert m.autograd_ctx is op and type(op) is RecordingMove
    assert logical(m) == [1.0, 2.0]


# ------------------------------------------------------------ MoveOperation


def test_base_copy_is_not_implemented():
    t = cpu_tensor([1.0])
    with pytest.raises(NotImplementedError, match="MoveOperation._copy must be implemented"):
        MoveOperation().forward(t, CPU(1))
    assert not t.carrier.is_released()
    with pytest.raises(NotImplementedError):
        MoveOperation()._copy(t, CPU(1), t, 1)


def test_copy_runs_only_after_validation():
    RecordingMove.calls.clear()
    t = cpu_tensor([1.0])
    with pytest.raises(TypeError):
        RecordingMove().forward(t, CPU(1, dtype=DType.Int32))
    with pytest.raises(ValueError):
        RecordingMove().forward(t, CPU(0))
    assert RecordingMove.calls == []


def test_subclass_pins():
    class CpuOnly(MoveOperation):
        source_class = CPU

        def _copy(self, tensor, destination, output, element_count):
            for i in range(tensor.size()):
                output[i] = tensor[i]

    g = Tensor(Generic([1.0]), 0, flat(1))
    with pytest.raises(TypeError, match="^CpuOnly requires a CPU source$"):
        CpuOnly().forward(g, Generic([0.0]))
    assert not g.carrier.is_released()
    m = CpuOnly().forward(cpu_tensor([3.0]), FileBacked(dtype=DType.Float32))
    assert logical(m) == [3.0]

    class ToGeneric(ElementwiseMoveOperation):
        destination_class = Generic

    with pytest.raises(TypeError, match="^ToGeneric requires a Generic destination$"):
        ToGeneric().forward(cpu_tensor([1.0]), CPU(1))

    class BadPin(MoveOperation):
        source_class = 3

    with pytest.raises(TypeError, match="^source_class must be a Carrier subclass$"):
        BadPin()


def test_inherited_native_copy_and_super():
    class Counting(CpuToFileBackedMoveOperation):
        seen = []

        def _copy(self, tensor, destination, output, element_count):
            Counting.seen.append(element_count)
            super()._copy(tensor, destination, output, element_count)

    class Plain(FileBackedToCpuMoveOperation):
        pass

    t = cpu_tensor([1.0, 2.0])
    m = Counting().forward(t, FileBacked(dtype=DType.Float32))
    assert Counting.seen == [2] and logical(m) == [1.0, 2.0]
    back = Plain().forward(m, CPU(2))
    assert logical(back) == [1.0, 2.0] and back.carrier.version == 0


def test_direct_copy_of_builtin_classes():
    t = cpu_tensor([1.0, 2.0])
    dest = CPU(2)
    out = Tensor(dest, 0, t.layout)
    assert ElementwiseMoveOperation()._copy(t, dest, out, 2) is None
    assert list(dest) == [1.0, 2.0] and not t.carrier.is_released()
    with pytest.raises(TypeError, match="destination must be a Carrier instance"):
        ElementwiseMoveOperation()._copy(t, None, out, 2)


def test_lowered_execution_records_nothing():
    t = cpu_tensor([1.0, 2.0])
    op = ElementwiseMoveOperation()
    m = sw.carriers.operation_helpers.execute_lowered_operation(op, t, CPU(2))
    assert m.autograd_ctx is None and op.inputs() == ()
    assert logical(m) == [1.0, 2.0] and t.carrier.is_released()
    m2 = ElementwiseMoveOperation()._forward(m, CPU(2))
    assert m2.autograd_ctx is None and logical(m2) == [1.0, 2.0]


def test_move_is_not_dispatched():
    op = ElementwiseMoveOperation()
    sw.move(cpu_tensor([1.0]), CPU(1))
    assert op._operation_name is None and op._dispatch_carrier_class is None


# ------------------------------------------------------------ autograd


def test_autograd_records_one_move_node():
    x = cpu_tensor([1.0, 2.0, 3.0])
    y = sw.mul(x, 2.0)
    m = sw.move(y, FileBacked(dtype=DType.Float32))
    node = m.autograd_ctx
    assert type(node) is CpuToFileBackedMoveOperation
    assert node.inputs() == (y,)
    with sw.no_grad():
        z = sw.move(cpu_tensor([1.0]), CPU(1))
    assert z.autograd_ctx is None


def test_gradient_returns_to_source_class():
    x = cpu_tensor([1.0, 2.0, 3.0])
    y = sw.mul(x, 2.0)
    m = sw.move(y, FileBacked(dtype=DType.Float32))
    g = file_tensor([10.0, 20.0, 30.0])
    (grad,) = m.autograd_ctx.backward(g)
    assert type(grad.carrier) is CPU
    assert grad.autograd_ctx is None and grad.offset == 0
    assert grad.carrier.version == 0 and grad.carrier is not y.carrier
    assert logical(grad) == [10.0, 20.0, 30.0]
    m.backward(g)
    assert type(x.grad.carrier) is CPU and logical(x.grad) == [20.0, 40.0, 60.0]


def test_gradient_into_python_source_class():
    src = ListCarrier([1.0, 2.0], dtype=DType.Floating)
    t = Tensor(src, 0, flat(2))
    m = sw.move(t, Generic([0.0, 0.0]))
    (grad,) = m.autograd_ctx.backward(Tensor(Generic([5.0, 6.0]), 0, flat(2)))
    assert type(grad.carrier) is ListCarrier and logical(grad) == [5.0, 6.0]


def test_broadcast_source_gets_injective_gradient():
    layout = L([2, 3], [1, 0])
    t = cpu_tensor([1.0, 2.0], layout)
    m = sw.move(t, CPU(2))
    g = cpu_tensor([float(i) for i in range(6)], L([2, 3], [1, 2]))
    (grad,) = m.autograd_ctx.backward(g)
    assert grad.layout == L([2, 3], [1, 2])
    assert logical(grad) == [float(i) for i in range(6)]


def test_cotangent_checks():
    t = cpu_tensor([1.0, 2.0, 3.0])
    m = sw.move(t, CPU(3))
    node = m.autograd_ctx
    with pytest.raises(TypeError, match="^gradient must be a Tensor$"):
        node.backward([1.0, 2.0, 3.0])
    released = cpu_tensor([1.0, 2.0, 3.0])
    released.carrier.release()
    with pytest.raises(RuntimeError, match="^gradient carrier is released$"):
        node.backward(released)
    with pytest.raises(ValueError, match="^gradient shape must match the moved tensor's shape$"):
        node.backward(cpu_tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="^move backward requires an injective gradient Layout$"):
        node.backward(cpu_tensor([1.0], L([3], [0])))


def test_one_way_route_rejected_before_work():
    # The reverse pair (FileBacked, MyCPU) resolves to an operation pinned to
    # another source class: no gradient could come back.
    class Back(MoveOperation):
        source_class = Generic

        def _copy(self, tensor, destination, output, element_count):
            raise AssertionError("never runs")

    t = Tensor(MyCPU(2), 0, flat(2))
    f = FileBacked(dtype=DType.Float32)
    with registered_move_operation(FileBacked, MyCPU, Back):
        with pytest.raises(TypeError, match="^Back requires a Generic source$"):
            sw.move(t, f)
        assert not t.carrier.is_released() and f.size() == 0
        with sw.no_grad():
            m = sw.move(t, f)  # no gradient, no reverse route needed
    assert logical(m) == [0.0, 0.0]


# ------------------------------------------------------------ failure safety


class Exploding(MoveOperation):
    def _copy(self, tensor, destination, output, element_count):
        output[0] = tensor[0]  # a partial write first
        raise LookupError("copy failed")


def test_failing_copy_hook_keeps_everything():
    t = Tensor(MyGeneric([1.0, 2.0]), 0, flat(2))
    dest = Generic([0.0, 0.0])
    with registered_move_operation(MyGeneric, Generic, Exploding):
        with pytest.raises(LookupError, match="^copy failed$"):
            sw.move(t, dest)
    assert not t.carrier.is_released() and logical(t) == [1.0, 2.0]
    # The hook wrote one element before failing: one version step says so.
    assert t.carrier.version == 0 and dest.version == 1
    # the source is still usable
    assert logical(sw.move(t, Generic([0.0, 0.0]))) == [1.0, 2.0]


def test_failing_copy_into_growing_destination_restores_size():
    class ExplodingFromCPU(Exploding):
        pass

    t = Tensor(MyCPU(2), 0, flat(2))
    f = FileBacked(dtype=DType.Float32)
    with registered_move_operation(MyCPU, FileBacked, ExplodingFromCPU):
        with pytest.raises(LookupError):
            sw.move(t, f)
    assert f.size() == 0 and f.version == 1 and not f.is_released()
    assert not t.carrier.is_released()


@pytest.mark.parametrize("fail_after", [0, 1, 2])
def test_io_failure_cpu_to_filebacked(fail_after):
    n = 3 * 1024 * 1024  # two pieces
    c = CPU(n)
    c[n - 1] = 5.0
    t = Tensor(c, 0, flat(n))
    f = FileBacked(dtype=DType.Float32)
    _native._debug_fail_io_after(fail_after)
    with pytest.raises(OSError):
        sw.move(t, f)
    _native._debug_fail_io_after(-1)
    assert not c.is_released() and c.version == 1 and t[n - 1] == 5.0
    # Only a failure after the first piece landed leaves the file partly
    # written: one version step then.
    assert f.version == (1 if fail_after == 2 else 0) and not f.is_released()
    m = sw.move(t, f)
    assert m[n - 1] == 5.0


def test_io_failure_filebacked_to_cpu():
    t = file_tensor([1.0, 2.0])
    dest = CPU(2)
    _native._debug_fail_io_after(0)
    with pytest.raises(OSError):
        sw.move(t, dest)
    _native._debug_fail_io_after(-1)
    assert not t.carrier.is_released() and logical(t) == [1.0, 2.0]
    # A failed read may have filled part of the memory: the version says so.
    assert dest.version == 1
    assert logical(sw.move(t, dest)) == [1.0, 2.0]


@pytest.mark.parametrize("kind", ["elementwise", "to_file", "grad"])
def test_allocation_failures(kind):
    def call():
        if kind == "to_file":
            t = cpu_tensor([1.0, 2.0])
            return t, sw.move(t, FileBacked(dtype=DType.Float32))
        t = sw.mul(cpu_tensor([1.0, 2.0]), 1.0) if kind == "grad" else cpu_tensor([1.0, 2.0])
        return t, sw.move(t, CPU(2))

    gc.collect()
    base = _native._debug_live_allocs()
    for n in range(200):
        t = None
        _native._debug_fail_alloc_after(n)
        try:
            t, result = call()
        except MemoryError:
            result = None
        finally:
            _native._debug_fail_alloc_after(-1)
        if result is None:
            gc.collect()
            assert _native._debug_live_allocs() == base, f"leak after failure {n}"
            continue
        assert logical(result) == [1.0, 2.0] and t.carrier.is_released()
        del t, result
        gc.collect()
        assert _native._debug_live_allocs() == base
        return
    raise AssertionError("still failing after 200 allocations")


def test_allocation_failure_keeps_source():
    t = cpu_tensor([1.0, 2.0])
    y = sw.mul(t, 1.0)
    dest = CPU(2)
    for n in range(50):
        _native._debug_fail_alloc_after(n)
        try:
            m = sw.move(y, dest)
        except MemoryError:
            _native._debug_fail_alloc_after(-1)
            assert not y.carrier.is_released() and logical(y) == [1.0, 2.0]
            assert dest.version == 0
            continue
        finally:
            _native._debug_fail_alloc_after(-1)
        assert logical(m) == [1.0, 2.0]
        return
    raise AssertionError("still failing")


def test_base_carrier_subclass_without_hooks():
    class Bare(Carrier):
        def __init__(self, values):
            super().__init__()
            self.v = list(values)

        def size(self):
            return len(self.v)

        def dtype(self):
            return DType.Floating

        def get_value(self, index):
            return self.v[index]

        def set_value(self, index, value):
            self.v[index] = value

        def _is_mutable(self):
            return True

    t = Tensor(Bare([1.0, 2.0]), 0, flat(2))
    message = "^move has no reverse route: Bare carrier does not support allocation$"
    with pytest.raises(NotImplementedError, match=message):
        sw.move(t, Generic([0.0, 0.0]))
    with pytest.raises(NotImplementedError, match=message):
        sw.move_async(t, Generic([0.0, 0.0]))
    with pytest.raises(ValueError, match="too small"):  # earlier checks first
        sw.move(t, Generic([0.0]))
    assert not t.carrier.is_released()
    with sw.no_grad():
        m = sw.move(t, Generic([0.0, 0.0]))
    assert logical(m) == [1.0, 2.0]
    dest = Bare([0.0, 0.0])
    m2 = sw.move(m, dest)
    assert dest.v == [1.0, 2.0] and m2.carrier is dest


# ------------------------------------------------------------ properties


@settings(deadline=None)
@given(layout=nonempty_layouts(max_size=64), offset=st.integers(0, 3))
def test_round_trips_keep_logical_values_and_layout(layout, offset):
    def value(p):
        return float(p % 97 + 1)

    t = build("CPU", layout, offset, value, DType.Float32)
    expected = logical(t)
    f = FileBacked(dtype=DType.Float32)
    on_file = sw.move(t, f)
    assert on_file.layout is layout and on_file.offset == 0
    assert f.size() == layout.cosize and logical(on_file) == expected
    back = sw.move(on_file, CPU(layout.cosize))
    assert logical(back) == expected and f.is_released()
    again = sw.move(back, CPU(layout.cosize + 2))  # the elementwise fallback
    assert logical(again) == expected
    g = build("Generic", layout, offset, value)
    via_generic = sw.move(g, FileBacked())
    assert logical(via_generic) == expected
