"""BlockDevice and BlockDeviceCarrier (later API, section 9), rule by rule.

Most tests run on scripted devices (``_native._blockdev_scripted``): memory
whose read and write calls follow scripts of ("interrupt", 0),
("progress", n), ("zero", 0) and ("error", errno) steps, so that every
retry and fault path runs without a device. One test runs on a real block
device: the one STRIDEWEAVE_BLOCK_DEVICE names, or a loop device it makes
when it runs as root and losetup works; otherwise it is skipped, saying why.

Checklist (rule -> test):

9.1 Exports
  importable from the top level, strideweave.carriers, .block_device  -> test_exports
  move classes in strideweave.operation.__all__                        -> test_exports
  BlockDevice is not a Carrier; BlockDeviceCarrier is final            -> test_exports
  BlockDeviceCarrier() raises TE "use BlockDevice.allocate"             -> test_direct_construction
9.2 BlockDevice(path)
  str or PathLike, __fspath__ once, bytes refused, errors propagate    -> test_path_*
  embedded NUL raises VE before opening                                -> test_path_embedded_nul
  path kept exactly as given                                           -> test_path_kept_as_given
  regular file refused unwritten; missing path ENOENT with filename    -> test_regular_file_refused,
                                                                          test_missing_path
  geometry properties, allocation_alignment == physical; no I/O       -> test_geometry
  test geometry validation messages                                    -> test_scripted_geometry
  allocate validation (bools, dtype, size, overflow, __index__ first)  -> test_allocate_validation,
                                                                          test_index_runs_before_the_lock
  lowest aligned free offset, whole physical blocks                    -> test_placement
  reuse lowest first, merging of freed ranges                          -> test_reuse_and_merge
  size 0: offset 0, extent 0, nothing reserved                         -> test_size_zero
  MemoryError "no aligned extent", atomic, freed space reusable        -> test_no_aligned_extent
  empty=False zero-fills; failure: OSError, faulted, no carrier        -> test_zero_fill*
  close: "Carrier object exists" while objects live, even released     -> test_close_rules
  close after collection; repeated close; allocate after close         -> test_close_rules
  close error: OSError, still closed, second close does nothing        -> test_close_error
  context manager: returns itself, closes, keeps the body's exception  -> test_context_manager*
9.3 BlockDeviceCarrier
  device (strong), offsets, size, dtype                                -> test_carrier_properties
  32-bit values; new_like None -> 0.0                                  -> test_values_are_float32,
                                                                          test_like_factories
  one device call per write; version rises as the transfer starts      -> test_write_version_rules
  bounds and mutability before any I/O                                 -> test_checks_before_io
  __float__ outside the device lock; new_like materializes outside     -> test_float_reenters_device
  fault model (EIO, zero progress) faults the whole device             -> test_fault_*
  release idempotent, no I/O, also when faulted; what stays            -> test_release_*
  allocate_like/new_like after release use the same device             -> test_like_factories
  collection frees the extent                             -> test_collection_frees_extent
  release waits for a transfer in progress                -> test_release_waits_for_transfer
  storage only: capabilities, plans, dispatch_op, scatter, DLPack      -> test_storage_only
  supports_storage_dtype exactly {Float32}; TE for a non-DType        -> test_storage_dtypes
  one lock per device                                                  -> test_one_lock_per_device
9.4 Movement and policy
  dispatch_move of the exact pairs                                     -> test_dispatch_pairs
  one transfer of the whole span, holes, layout, offset, beyond span   -> test_bulk_move_*
  destination version +1; scalar access never used; retries           -> test_bulk_move_*
  fixed destination: "too small" before I/O, size 0 included           -> test_destination_too_small
  terminal failure: faults, source kept, prefix visible, CPU version   -> test_move_failure_*
  faulted carrier: RE "faulted" before any I/O                         -> test_move_from_faulted
  pinned-class fragments, dtype fragment                               -> test_move_pins_and_dtype
  autograd CPU -> block -> CPU                                         -> test_autograd_chain
  protected registry pairs, argument checks first, context manager     -> test_protected_pairs
  a different class named BlockDeviceCarrier is unaffected             -> test_same_name_other_class
  unsupported pairs NIE "block-device carrier pair", sw.move too       -> test_unsupported_pairs
  direct forward of other operations NIE "exact built-in"              -> test_direct_forward
  Evictable refusal after the Carrier type checks                      -> test_not_an_evictable_tier
9.5 Native handle (through BlockDevice's private methods)
  preflight messages, no I/O on failure, zero-length at the end        -> test_raw_preflight
  retries of interrupts and short progress                             -> test_raw_retries
  close exactly once; closed handle refuses transfers                  -> test_close_rules
  scripted I/O counts and bad steps                                    -> test_script_steps
9.6 Real device                                                        -> test_real_block_device
"""

import gc
import os
import pathlib
import shutil
import stat
import subprocess
import threading

import pytest
import strideweave as sw
from helpers_carriers import L, flat
from strideweave import CPU, DType, FileBacked, Generic, Tensor, _native
from strideweave.carriers.move import (
    BlockDeviceToCpuMoveOperation,
    CpuToBlockDeviceMoveOperation,
    CpuToFileBackedMoveOperation,
    ElementwiseMoveOperation,
    MoveOperation,
    dispatch_move,
    register_move_operation,
    registered_move_operation,
    unregister_move_operation,
)
from strideweave.carriers.operation_capability import UnsupportedOperationPlan
from strideweave.carriers.operation_policy import resolve_operation_plan

BlockDevice = sw.BlockDevice
BlockDeviceCarrier = sw.BlockDeviceCarrier
EIO = 5


def scripted(capacity=4096, logical=4, physical=16, **kw):
    return _native._blockdev_scripted(capacity, logical, physical, **kw)


def calls(dev):
    reads, writes, _ = dev._attempts()
    return reads + writes


def cpu_tensor(values, layout=None, offset=0):
    c = CPU(len(values))
    for i, v in enumerate(values):
        c[i] = v
    return Tensor(c, offset, layout if layout is not None else flat(len(values) - offset))


def logical(t):
    return [t[i] for i in range(t.size())]


def collect():
    gc.collect()
    gc.collect()


# ------------------------------------------------------------ 9.1 exports


def test_exports():
    import strideweave.carriers as carriers
    import strideweave.carriers.block_device as bd
    import strideweave.carriers.block_device.carrier as impl

    for name in ("BlockDevice", "BlockDeviceCarrier"):
        obj = getattr(sw, name)
        assert getattr(carriers, name) is obj is getattr(bd, name) is getattr(impl, name)
    for name in ("CpuToBlockDeviceMoveOperation", "BlockDeviceToCpuMoveOperation"):
        assert name in sw.operation.__all__
        assert getattr(sw.operation, name) is getattr(sw, name)
    assert not issubclass(BlockDevice, sw.Carrier)
    assert issubclass(BlockDeviceCarrier, sw.Carrier)
    with pytest.raises(TypeError):
        type("Sub", (BlockDeviceCarrier,), {})


def test_direct_construction():
    with pytest.raises(TypeError, match="use BlockDevice.allocate"):
        BlockDeviceCarrier()
    with pytest.raises(TypeError, match="not safe"):
        sw.Carrier.__new__(BlockDeviceCarrier)


# ------------------------------------------------------------ 9.2 paths


class Fspath:
    def __init__(self, value):
        self.value = value
        self.calls = 0

    def __fspath__(self):
        self.calls += 1
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


def test_path_fspath_called_once(tmp_path):
    p = Fspath(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError):
        BlockDevice(p)
    assert p.calls == 1


def test_path_bytes_refused(tmp_path):
    p = Fspath(os.fsencode(tmp_path / "missing"))
    with pytest.raises(TypeError, match="string filesystem representation"):
        BlockDevice(p)
    with pytest.raises(TypeError, match="string filesystem representation"):
        BlockDevice(os.fsencode(tmp_path / "missing"))
    with pytest.raises(TypeError):
        BlockDevice(3)


def test_path_fspath_error_propagates():
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        BlockDevice(Fspath(Boom()))


def test_path_embedded_nul(tmp_path):
    target = tmp_path / "x"
    with pytest.raises(ValueError, match="embedded NUL"):
        BlockDevice(str(target) + "\0y")
    assert not target.exists()


def test_path_kept_as_given():
    p = Fspath("dev/../whatever")
    dev = scripted(path=p)
    assert dev.path is p
    assert scripted(path="a//b").path == "a//b"


def test_regular_file_refused(tmp_path):
    f = tmp_path / "regular"
    f.write_bytes(b"keep me")
    before = f.stat()
    with pytest.raises(ValueError, match="not a block device"):
        BlockDevice(f)
    after = f.stat()
    assert f.read_bytes() == b"keep me"
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_missing_path(tmp_path):
    missing = tmp_path / "none"
    with pytest.raises(OSError) as info:
        BlockDevice(missing)
    assert info.value.errno == 2
    assert info.value.filename == missing


# ------------------------------------------------------------ 9.2 geometry


def test_geometry():
    dev = scripted(8192, 512, 4096)
    assert dev.capacity_bytes == 8192
    assert dev.logical_block_size == 512
    assert dev.physical_block_size == 4096
    assert dev.allocation_alignment == 4096
    assert not dev.is_closed() and not dev.is_faulted()
    assert calls(dev) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 1, 1), "capacity must be positive"),
        ((8, 0, 1), "logical block size must be positive"),
        ((8, 1, 0), "physical block size must be positive"),
        ((10, 4, 4), "capacity must be a multiple"),
        ((16, 4, 6), "physical block size must be a multiple"),
    ],
)
def test_scripted_geometry(args, message):
    with pytest.raises(ValueError, match=message):
        _native._blockdev_scripted(*args)


def test_script_steps():
    with pytest.raises(ValueError, match="unknown script step"):
        scripted(read_script=[("later", 0)])
    with pytest.raises(TypeError, match="pairs"):
        scripted(write_script=[1])
    with pytest.raises(ValueError, match="EINTR"):
        scripted(write_script=[("error", 4)])
    dev = scripted(write_script=[("interrupt", 0), ("progress", 8)], close_error=0)
    dev.allocate(4)
    reads, writes, closes = dev._attempts()
    assert (reads, writes, closes) == (0, 3, 0)


# ------------------------------------------------------------ 9.2 allocate


def test_allocate_validation():
    dev = scripted()
    with pytest.raises(TypeError, match="^mutable must be a bool$"):
        dev.allocate(1, mutable=1)
    with pytest.raises(TypeError, match="^empty must be a bool$"):
        dev.allocate(1, empty=None)
    with pytest.raises(TypeError, match="dtype must be a DType"):
        dev.allocate(1, dtype="Float32")
    with pytest.raises(ValueError, match="BlockDeviceCarrier.*dtype must be DType.Float32"):
        dev.allocate(1, dtype=DType.Int32)
    with pytest.raises(ValueError, match="size must be non-negative"):
        dev.allocate(-1)
    with pytest.raises(OverflowError, match="byte length overflows"):
        dev.allocate(2**62)
    with pytest.raises(OverflowError, match="byte length overflows"):
        dev.allocate(2**80)
    with pytest.raises(TypeError):
        dev.allocate(1.0)
    assert calls(dev) == 0 and dev._carrier_count() == 0
    c = dev.allocate(2, mutable=False, dtype=DType.Float32, empty=True)
    assert c.size() == 2 and c.dtype() is DType.Float32


def test_index_runs_before_the_lock():
    dev = scripted()
    inner = []

    class Size:
        def __index__(self):
            inner.append(dev.allocate(1))
            return 2

    c = dev.allocate(Size())
    assert c.size() == 2 and len(inner) == 1
    assert inner[0].device_offset_bytes == 0 and c.device_offset_bytes == 16


def test_placement():
    dev = scripted(4096, 4, 16)
    a = dev.allocate(1)
    b = dev.allocate(5)
    c = dev.allocate(4)
    assert (a.device_offset_bytes, a.extent_bytes) == (0, 16)
    assert (b.device_offset_bytes, b.extent_bytes) == (16, 32)
    assert (c.device_offset_bytes, c.extent_bytes) == (48, 16)
    for x in (a, b, c):
        assert x.device_offset_bytes % dev.allocation_alignment == 0


def test_reuse_and_merge():
    dev = scripted(4096, 4, 16)
    a, b, c, d = (dev.allocate(4) for _ in range(4))
    b.release()
    c.release()
    assert b.extent_bytes == 0
    merged = dev.allocate(8)
    assert merged.device_offset_bytes == 16
    a.release()
    small = dev.allocate(1)
    assert small.device_offset_bytes == 0
    assert d.device_offset_bytes == 48


def test_size_zero():
    dev = scripted(64, 4, 16)
    z = dev.allocate(0)
    assert (z.size(), z.device_offset_bytes, z.extent_bytes) == (0, 0, 0)
    assert calls(dev) == 0
    full = dev.allocate(16)
    assert full.device_offset_bytes == 0


def test_no_aligned_extent():
    dev = scripted(64, 4, 16)
    a = dev.allocate(8)
    b = dev.allocate(4)
    before = calls(dev)
    with pytest.raises(MemoryError, match="no aligned extent"):
        dev.allocate(5)
    assert calls(dev) == before and dev._carrier_count() == 2
    c = dev.allocate(4)
    assert c.device_offset_bytes == 48
    a.release()
    assert dev.allocate(8).device_offset_bytes == 0
    assert b.device_offset_bytes == 32


def test_zero_fill():
    dev = scripted(64, 4, 16)
    dev._write_bytes(0, b"\x01" * 64)
    kept = dev.allocate(4, empty=True)
    assert kept.get_value(0) != 0.0
    zeroed = dev.allocate(4)
    assert [zeroed.get_value(i) for i in range(4)] == [0.0] * 4


def test_zero_fill_failure():
    dev = scripted(64, 4, 16, write_script=[("error", EIO)])
    with pytest.raises(OSError) as info:
        dev.allocate(4)
    assert info.value.errno == EIO
    assert dev.is_faulted() and dev._carrier_count() == 0
    with pytest.raises(RuntimeError, match="faulted"):
        dev.allocate(1)


# ------------------------------------------------------------ 9.2 close


def test_close_rules():
    dev = scripted()
    c = dev.allocate(2)
    c.release()
    with pytest.raises(RuntimeError, match="Carrier object exists"):
        dev.close()
    assert not dev.is_closed()
    del c
    collect()
    dev.close()
    assert dev.is_closed()
    dev.close()
    assert dev._attempts()[2] == 1
    with pytest.raises(RuntimeError, match="closed"):
        dev.allocate(1)
    with pytest.raises(RuntimeError, match="handle is closed"):
        dev._read_bytes(0, 4)


def test_close_waits_for_collection_of_cycles():
    dev = scripted()
    c = dev.allocate(1)
    cycle = [c]
    cycle.append(cycle)
    del c, cycle
    collect()
    dev.close()


def test_close_error():
    dev = scripted(close_error=EIO)
    with pytest.raises(OSError) as info:
        dev.close()
    assert info.value.errno == EIO
    assert dev.is_closed()
    dev.close()
    assert dev._attempts()[2] == 1


def test_destruction_closes_once():
    dev = scripted()
    c = dev.allocate(1)
    assert c.device is dev
    del dev
    collect()
    # The carrier keeps its device object alive and open.
    assert not c.device.is_closed()
    c.set_value(0, 2.0)
    assert c.get_value(0) == 2.0


def test_context_manager():
    with scripted() as dev:
        assert isinstance(dev, BlockDevice)
        assert not dev.is_closed()
    assert dev.is_closed()
    with pytest.raises(KeyError):
        with scripted() as dev2:
            raise KeyError("body")
    assert dev2.is_closed()


def test_context_manager_close_error_chains():
    with pytest.raises(OSError) as info:
        with scripted(close_error=EIO):
            raise KeyError("body")
    assert isinstance(info.value.__context__, KeyError)


# ------------------------------------------------------------ 9.3 carriers


def test_carrier_properties():
    dev = scripted()
    c = dev.allocate(3)
    assert c.device is dev
    del dev
    collect()
    assert isinstance(c.device, BlockDevice) and not c.device.is_closed()
    assert c.size() == 3 and c.dtype() is DType.Float32
    assert (c.device_offset_bytes, c.extent_bytes) == (0, 16)


def test_values_are_float32():
    c = scripted().allocate(2)
    c.set_value(0, 1.1)
    assert c.get_value(0) == pytest.approx(1.100000023841858, abs=0)
    c[1] = 3
    assert c[1] == 3.0
    with pytest.raises(TypeError):
        c.set_value(0, "x")


def test_write_version_rules():
    dev = scripted(write_script=[("progress", 16), ("progress", 4), ("error", EIO)])
    c = dev.allocate(2)
    assert c.version == 0
    writes = dev._attempts()[1]
    c.set_value(0, 1.0)
    assert dev._attempts()[1] == writes + 1 and c.version == 1
    with pytest.raises(OSError):
        c.set_value(1, 2.0)
    assert c.version == 2


def test_failed_first_write_leaves_version_one():
    dev = scripted(write_script=[("error", EIO)])
    c = dev.allocate(2, empty=True)
    with pytest.raises(OSError, match="Input/output error"):
        c.set_value(0, 1.0)
    assert c.version == 1


def test_checks_before_io():
    dev = scripted()
    c = dev.allocate(2)
    frozen = dev.allocate(2, mutable=False)
    before = calls(dev)
    with pytest.raises(IndexError, match="out of range"):
        c.set_value(-1, 0.0)
    with pytest.raises(IndexError, match="out of range"):
        c.set_value(2, 0.0)
    with pytest.raises(IndexError, match="out of range"):
        c.get_value(2)
    with pytest.raises(RuntimeError, match="not mutable"):
        frozen.set_value(0, 1.0)
    assert calls(dev) == before


def test_float_reenters_device():
    dev = scripted()
    c = dev.allocate(2)

    class Value:
        def __float__(self):
            return c.get_value(1) + 2.0

    c.set_value(1, 5.0)
    c.set_value(0, Value())
    assert c.get_value(0) == 7.0

    class Made:
        def __float__(self):
            dev.allocate(1)
            return 4.0

    n = c.new_like([Made(), None])
    assert list(n) == [4.0, 0.0]


def test_fault_by_io_error():
    dev = scripted(write_script=[("progress", 16), ("progress", 16), ("error", EIO)])
    a = dev.allocate(2)
    b = dev.allocate(2)
    with pytest.raises(OSError) as info:
        a.set_value(0, 1.0)
    assert info.value.errno == EIO and "Input/output error" in str(info.value)
    assert dev.is_faulted()
    before = calls(dev)
    for f in (lambda: a.get_value(0), lambda: b.get_value(1), lambda: b.set_value(0, 1.0)):
        with pytest.raises(RuntimeError, match="faulted"):
            f()
    with pytest.raises(RuntimeError, match="faulted"):
        dev.allocate(1)
    assert calls(dev) == before
    assert a.size() == 2 and b.extent_bytes == 16 and dev.capacity_bytes == 4096


def test_fault_by_zero_progress():
    dev = scripted(4096, 1, 16, write_script=[("progress", 2), ("zero", 0)])
    c = dev.allocate(2, empty=True)
    with pytest.raises(RuntimeError, match="completed 2 of 4 bytes"):
        c.set_value(0, 1.0)
    assert dev.is_faulted()
    with pytest.raises(RuntimeError, match="faulted"):
        c.get_value(1)


def test_fault_by_read_error():
    dev = scripted(read_script=[("interrupt", 0), ("error", EIO)])
    c = dev.allocate(1)
    with pytest.raises(OSError):
        c.get_value(0)
    assert dev.is_faulted()


def test_release_rules():
    dev = scripted()
    c = dev.allocate(3, mutable=False)
    before = calls(dev)
    c.release()
    c.release()
    assert calls(dev) == before
    assert (c.size(), c.device_offset_bytes, c.extent_bytes) == (0, 0, 0)
    assert c.device is dev and c.dtype() is DType.Float32
    assert c.supports_storage_dtype(DType.Float32)
    with pytest.raises(RuntimeError, match="released"):
        c.get_value(0)
    assert c.allocate_like(1).device is dev


def test_release_on_faulted_device():
    dev = scripted(write_script=[("progress", 16), ("error", EIO)])
    c = dev.allocate(1)
    with pytest.raises(OSError):
        c.set_value(0, 1.0)
    before = calls(dev)
    c.release()
    assert calls(dev) == before and c.size() == 0


def test_like_factories():
    dev = scripted(4096, 4, 16)
    c = dev.allocate(1)
    c.release()
    a = c.allocate_like(3, mutable=False)
    assert a.device is dev and a.size() == 3 and a.device_offset_bytes == 0
    with pytest.raises(RuntimeError, match="not mutable"):
        a.set_value(0, 1.0)
    n = c.new_like([1.1, None, 2])
    assert n.device is dev and list(n) == [pytest.approx(1.1, rel=1e-7), 0.0, 2.0]
    assert n.version == 0
    with pytest.raises(ValueError, match="dtype must be DType.Float32"):
        c.new_like([1.0], dtype=DType.Int32)
    with pytest.raises(ValueError, match="size must be non-negative"):
        c.allocate_like(-1)


def test_collection_frees_extent():
    dev = scripted(64, 4, 16)
    c = dev.allocate(16)
    with pytest.raises(MemoryError):
        dev.allocate(1)
    del c
    collect()
    assert dev.allocate(16).device_offset_bytes == 0


def test_release_waits_for_transfer():
    # A value whose conversion blocks holds no lock; the transfer itself
    # holds the device's lock, which release takes too. The order is
    # observed through the extent: once release returns, the extent is
    # free, and a transfer that started before it completed.
    dev = scripted()
    c = dev.allocate(4)
    done = []

    def writer():
        for i in range(200):
            try:
                c.set_value(i % 4, float(i))
                done.append(i)
            except RuntimeError:
                break

    t = threading.Thread(target=writer)
    t.start()
    c.release()
    t.join()
    assert c.extent_bytes == 0
    assert dev.allocate(4).device_offset_bytes == 0


def test_one_lock_per_device():
    dev = scripted(1 << 16, 4, 16)
    carriers = [dev.allocate(64) for _ in range(4)]

    def work(c, k):
        for i in range(64):
            c.set_value(i, float(k * 100 + i))

    threads = [threading.Thread(target=work, args=(c, k)) for k, c in enumerate(carriers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, c in enumerate(carriers):
        assert [c.get_value(i) for i in range(64)] == [float(k * 100 + i) for i in range(64)]


def test_storage_only():
    c = scripted().allocate(2)
    assert c.operation_capabilities() == ()
    plan = resolve_operation_plan("add", DType.Float32, DType.Float32)
    with pytest.raises(UnsupportedOperationPlan):
        c.require_operation_plan(plan)
    with pytest.raises(NotImplementedError, match="add"):
        c.dispatch_op("add")
    with pytest.raises(NotImplementedError, match="view"):
        c.dispatch_op("view")
    with pytest.raises(TypeError):
        c.dispatch_op(1)
    with pytest.raises(NotImplementedError, match="scatter"):
        c.scatter(None, None, None)
    with pytest.raises(BufferError, match="not supported"):
        c.dlpack_info()


def test_storage_dtypes():
    c = scripted().allocate(1)
    assert {d for d in DType if c.supports_storage_dtype(d)} == {DType.Float32}
    with pytest.raises(TypeError, match="storage dtype must be a DType"):
        c.supports_storage_dtype("Float32")


# ------------------------------------------------------------ 9.4 moves


def test_dispatch_pairs():
    assert dispatch_move(CPU, BlockDeviceCarrier) is CpuToBlockDeviceMoveOperation
    assert dispatch_move(BlockDeviceCarrier, CPU) is BlockDeviceToCpuMoveOperation
    assert CpuToBlockDeviceMoveOperation.source_class is CPU
    assert BlockDeviceToCpuMoveOperation.source_class is BlockDeviceCarrier


def test_bulk_move_to_block():
    dev = scripted(4096, 4, 16)
    dst = dev.allocate(6)
    t = cpu_tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], L([2, 2], [1, 3]), offset=1)
    writes = dev._attempts()[1]
    m = sw.move(t, dst)
    assert dev._attempts()[1] == writes + 1
    assert m.carrier is dst and m.offset == 0 and m.layout == t.layout
    assert dst.version == 1
    assert [dst.get_value(i) for i in range(6)] == [2.0, 3.0, 4.0, 5.0, 6.0, 0.0]
    assert logical(m) == [2.0, 3.0, 5.0, 6.0]
    assert t.carrier.size() == 0


def test_bulk_move_stride_zero_and_back():
    dev = scripted(4096, 4, 16)
    dst = dev.allocate(3)
    t = cpu_tensor([9.0], L([3], [0]))
    m = sw.move(t, dst)
    assert m.layout == L([3], [0]) and logical(m) == [9.0, 9.0, 9.0]
    back_dst = CPU(2)
    back = sw.move(m, back_dst)
    assert back_dst.version == 1
    assert logical(back) == [9.0, 9.0, 9.0]
    assert back_dst[1] == 0.0


def test_bulk_move_never_uses_scalar_access():
    dev = scripted(4096, 4, 16)
    dst = dev.allocate(4)
    # The exact class's methods are C functions the library never calls
    # for a bulk move; the attempt counts prove one transfer each way.
    m = sw.move(cpu_tensor([1.0, 2.0, 3.0, 4.0]), dst)
    reads, writes, _ = dev._attempts()
    sw.move(m, CPU(4))
    r2, w2, _ = dev._attempts()
    assert (r2 - reads, w2 - writes) == (1, 0)


def test_bulk_move_retries():
    dev = scripted(
        4096,
        4,
        16,
        write_script=[("progress", 16), ("interrupt", 0), ("progress", 4), ("progress", 4)],
        read_script=[("interrupt", 0), ("progress", 8)],
    )
    dst = dev.allocate(4)
    m = sw.move(cpu_tensor([1.0, 2.0, 3.0, 4.0]), dst)
    assert logical(m) == [1.0, 2.0, 3.0, 4.0]
    back = sw.move(m, CPU(4))
    assert logical(back) == [1.0, 2.0, 3.0, 4.0]
    assert not dev.is_faulted()


def test_destination_too_small():
    dev = scripted()
    small = dev.allocate(2)
    empty = dev.allocate(0)
    before = calls(dev)
    for dst in (small, empty):
        t = cpu_tensor([1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="too small"):
            sw.move(t, dst)
        assert t.carrier.size() == 3
    assert calls(dev) == before


def test_move_failure_to_block():
    dev = scripted(4096, 1, 16, write_script=[("progress", 4), ("error", EIO)])
    dst = dev.allocate(2, empty=True)
    t = cpu_tensor([7.0, 8.0])
    with pytest.raises(OSError) as info:
        sw.move(t, dst)
    assert info.value.errno == EIO
    assert dev.is_faulted() and t.carrier.size() == 2 and logical(t) == [7.0, 8.0]
    assert dst.version == 1
    dev2 = scripted(4096, 1, 16, write_script=[("progress", 4), ("zero", 0)])
    dst2 = dev2.allocate(2, empty=True)
    t2 = cpu_tensor([7.0, 8.0])
    with pytest.raises(RuntimeError, match="completed 4 of 8 bytes"):
        sw.move(t2, dst2)
    assert dev2.is_faulted() and t2.carrier.size() == 2 and dst2.version == 1


def test_move_failure_to_cpu_keeps_the_prefix():
    dev = scripted(4096, 1, 16, read_script=[("progress", 4), ("error", EIO)])
    src = dev.allocate(2)
    src.set_value(0, 7.0)
    src.set_value(1, 8.0)
    t = Tensor(src, 0, flat(2))
    out = CPU(2)
    with pytest.raises(OSError):
        sw.move(t, out)
    assert out.version == 1 and out[0] == 7.0 and out[1] == 0.0
    assert src.size() == 2 and not src.is_released() and dev.is_faulted()


def test_move_from_faulted():
    dev = scripted(write_script=[("progress", 16), ("error", EIO)])
    src = dev.allocate(2)
    with pytest.raises(OSError):
        src.set_value(0, 1.0)
    before = calls(dev)
    out = CPU(2)
    with pytest.raises(RuntimeError, match="faulted"):
        sw.move(Tensor(src, 0, flat(2)), out)
    assert calls(dev) == before and out.version == 0


def test_move_to_faulted():
    dev = scripted(write_script=[("progress", 16), ("progress", 16), ("error", EIO)])
    dst = dev.allocate(2)
    other = dev.allocate(2)
    with pytest.raises(OSError):
        other.set_value(0, 1.0)
    t = cpu_tensor([1.0, 2.0])
    before = calls(dev)
    with pytest.raises(RuntimeError, match="faulted"):
        sw.move(t, dst)
    assert calls(dev) == before and t.carrier.size() == 2


def test_move_pins_and_dtype():
    dev = scripted()
    blk = dev.allocate(4)
    with pytest.raises(TypeError, match="requires a BlockDeviceCarrier source"):
        BlockDeviceToCpuMoveOperation().forward(cpu_tensor([1.0]), CPU(1))
    with pytest.raises(TypeError, match="requires a CPU source"):
        CpuToBlockDeviceMoveOperation().forward(Tensor(blk, 0, flat(1)), CPU(1))
    ints = CPU(2, dtype=DType.Int32)
    with pytest.raises(TypeError, match="dtype must match"):
        sw.move(Tensor(ints, 0, flat(2)), blk)


def test_autograd_chain():
    x = cpu_tensor([1.0, 2.0, 3.0])
    y = sw.mul(x, 2.0)
    dev = scripted()
    on_dev = sw.move(y, dev.allocate(3))
    assert type(on_dev.autograd_ctx) is CpuToBlockDeviceMoveOperation
    home = sw.move(on_dev, CPU(3))
    assert type(home.autograd_ctx) is BlockDeviceToCpuMoveOperation
    home.backward(cpu_tensor([1.0, 1.0, 1.0]))
    assert type(x.grad.carrier) is CPU
    assert logical(x.grad) == [2.0, 2.0, 2.0]


def test_protected_pairs():
    for pair in (
        (CPU, BlockDeviceCarrier),
        (BlockDeviceCarrier, CPU),
        (Generic, BlockDeviceCarrier),
    ):
        with pytest.raises(ValueError, match="protected built-ins"):
            register_move_operation(*pair, ElementwiseMoveOperation)
        with pytest.raises(ValueError, match="protected built-ins"):
            unregister_move_operation(*pair)
    with pytest.raises(TypeError, match="source_class"):
        register_move_operation(1, BlockDeviceCarrier, ElementwiseMoveOperation)
    with pytest.raises(TypeError, match="destination_class"):
        unregister_move_operation(BlockDeviceCarrier, 1)
    with pytest.raises(TypeError, match="operation_class"):
        register_move_operation(CPU, BlockDeviceCarrier, int)
    entered = []
    with pytest.raises(ValueError, match="protected built-ins"):
        with registered_move_operation(CPU, BlockDeviceCarrier, ElementwiseMoveOperation):
            entered.append(1)
    assert entered == []
    assert dispatch_move(CPU, BlockDeviceCarrier) is CpuToBlockDeviceMoveOperation


def test_same_name_other_class():
    Other = type("BlockDeviceCarrier", (sw.Carrier,), {})
    with registered_move_operation(CPU, Other, ElementwiseMoveOperation):
        assert dispatch_move(CPU, Other) is ElementwiseMoveOperation
    assert dispatch_move(Other, CPU) is ElementwiseMoveOperation


def test_unsupported_pairs(tmp_path):
    for pair in (
        (Generic, BlockDeviceCarrier),
        (BlockDeviceCarrier, FileBacked),
        (BlockDeviceCarrier, BlockDeviceCarrier),
    ):
        with pytest.raises(NotImplementedError, match="block-device carrier pair"):
            dispatch_move(*pair)
    dev = scripted()
    blk = dev.allocate(2)
    other = dev.allocate(2)
    g = Tensor(Generic([1.0, 2.0]), 0, flat(2))
    before = calls(dev)
    with pytest.raises(NotImplementedError, match="block-device carrier pair"):
        sw.move(g, blk)
    with pytest.raises(NotImplementedError, match="block-device carrier pair"):
        sw.move(Tensor(blk, 0, flat(2)), other)
    f = FileBacked(dtype=DType.Float32)
    with pytest.raises(NotImplementedError, match="block-device carrier pair"):
        sw.move(Tensor(blk, 0, flat(2)), f)
    assert g.carrier.size() == 2 and blk.size() == 2 and calls(dev) == before


def test_direct_forward():
    dev = scripted()
    blk = dev.allocate(2)
    t = cpu_tensor([1.0, 2.0])

    class Pinned(MoveOperation):
        source_class = CPU
        destination_class = BlockDeviceCarrier

    class Sub(CpuToBlockDeviceMoveOperation):
        pass

    for op in (MoveOperation(), ElementwiseMoveOperation(), Pinned(), Sub()):
        with pytest.raises(NotImplementedError, match="exact built-in"):
            op.forward(t, blk)
    with pytest.raises(TypeError, match="FileBacked destination"):
        CpuToFileBackedMoveOperation().forward(t, blk)
    with pytest.raises(NotImplementedError, match="exact built-in"):
        ElementwiseMoveOperation().forward(Tensor(blk, 0, flat(2)), CPU(2))
    assert t.carrier.size() == 2 and blk.version == 0


def test_not_an_evictable_tier():
    blk = scripted().allocate(2)
    with pytest.raises(TypeError, match="primary must be a Carrier"):
        sw.Evictable(1, blk)
    with pytest.raises(TypeError, match="secondary must be a Carrier"):
        sw.Evictable(blk, 1)
    with pytest.raises(TypeError, match="not a supported Evictable tier"):
        sw.Evictable(CPU(2), blk)
    with pytest.raises(TypeError, match="not a supported Evictable tier"):
        sw.Evictable(blk, blk)
    blk.release()
    with pytest.raises(TypeError, match="not a supported Evictable tier"):
        sw.Evictable(blk, CPU(2))


# ------------------------------------------------------------ 9.5 raw handle


def test_raw_preflight():
    dev = scripted(64, 4, 16)
    with pytest.raises(ValueError, match="byte_offset must be non-negative"):
        dev._read_bytes(-1, 4)
    with pytest.raises(ValueError, match="byte_count must be non-negative"):
        dev._read_bytes(0, -4)
    with pytest.raises(ValueError, match="byte range exceeds"):
        dev._read_bytes(60, 8)
    with pytest.raises(ValueError, match="byte range exceeds"):
        dev._write_bytes(63, b"ab")
    with pytest.raises(OverflowError, match="byte endpoint overflows Index"):
        dev._read_bytes(2**63 - 1, 2)
    with pytest.raises(ValueError, match="byte range exceeds"):
        dev._zero_fill(0, 65)
    assert dev._read_bytes(64, 0) == b""
    assert calls(dev) == 0 and not dev.is_faulted()


def test_raw_retries():
    dev = scripted(
        64,
        4,
        16,
        write_script=[("interrupt", 0), ("progress", 1), ("progress", 2)],
        read_script=[("progress", 3), ("interrupt", 0)],
    )
    dev._write_bytes(8, b"abcd")
    assert dev._read_bytes(8, 4) == b"abcd"
    reads, writes, _ = dev._attempts()
    assert writes == 4 and reads == 3


def test_raw_unaligned_keeps_neighbours():
    dev = scripted(4096, 512, 512)
    dev._write_bytes(0, bytes(range(256)) * 4)
    dev._write_bytes(510, b"XYZW")
    data = dev._read_bytes(0, 1024)
    expected = bytearray(bytes(range(256)) * 4)
    expected[510:514] = b"XYZW"
    assert data == bytes(expected)


# ------------------------------------------------------------ 9.6 real device


@pytest.fixture
def real_device(tmp_path):
    path = os.environ.get("STRIDEWEAVE_BLOCK_DEVICE")
    if path:
        if not os.path.isabs(path) or not os.environ.get("STRIDEWEAVE_BLOCK_DEVICE_CAPACITY"):
            pytest.skip("STRIDEWEAVE_BLOCK_DEVICE must be absolute, with its capacity set")
        if not stat.S_ISBLK(os.stat(path).st_mode):
            pytest.skip(f"{path} is not a block special file")
        yield path, int(os.environ["STRIDEWEAVE_BLOCK_DEVICE_CAPACITY"])
        return
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("no STRIDEWEAVE_BLOCK_DEVICE, and not root: cannot make a loop device")
    losetup = shutil.which("losetup")
    if losetup is None:
        pytest.skip("no STRIDEWEAVE_BLOCK_DEVICE, and losetup is not installed")
    backing = tmp_path / "loop.img"
    with open(backing, "wb") as f:
        f.truncate(1 << 20)
    made = subprocess.run(
        [losetup, "-f", "--show", str(backing)], capture_output=True, text=True, timeout=30
    )
    if made.returncode != 0:
        pytest.skip(f"losetup cannot make a loop device: {made.stderr.strip()}")
    device = made.stdout.strip()
    try:
        yield device, 1 << 20
    finally:
        subprocess.run([losetup, "-d", device], capture_output=True, timeout=30)


def test_real_block_device(real_device):
    path, capacity = real_device
    with BlockDevice(pathlib.Path(path)) as dev:
        assert dev.capacity_bytes == capacity
        assert dev.logical_block_size > 0 and dev.physical_block_size >= dev.logical_block_size
        c = dev.allocate(300)
        assert c.extent_bytes % dev.physical_block_size == 0
        c.set_value(5, 1.1)
        assert c.get_value(5) == pytest.approx(1.1, rel=1e-7) and c.get_value(4) == 0.0
        m = sw.move(cpu_tensor([float(i) for i in range(10)]), dev.allocate(10))
        assert logical(sw.move(m, CPU(10))) == [float(i) for i in range(10)]
        del c, m
        collect()
