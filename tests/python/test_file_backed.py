"""The FileBacked carrier (reference §9, with the issue's file naming):
temporary and named files, values in the file, clean-up, what a dying
process leaves behind, and OSError paths through the library's I/O fault
hook."""

import errno
import gc
import os
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import strideweave as sw
from helpers_carriers import flat
from strideweave import CPU, Carrier, DType, FileBacked, Tensor, _native
from strideweave.carriers.move import CpuToFileBackedMoveOperation

DTYPE_MSG = r"^FileBacked dtype must be DType.Floating, DType.Float32, or DType.Int32$"


@pytest.fixture(autouse=True)
def no_io_faults():
    yield
    _native._debug_fail_io_after(-1)


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    # The binding reads TMPDIR for each FileBacked it creates.
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))


def temp_dir():
    return Path(os.environ["TMPDIR"])


def cpu_floats(n):
    """A Float32 CPU tensor holding 0, 1, ..., n - 1."""
    c = CPU(n, dtype=DType.Float32)
    for i in range(n):
        c[i] = i
    return Tensor(c, 0, flat(n))


# --------------------------------------------------------- temporaries


def test_temporary_file():
    f = FileBacked()
    assert isinstance(f, Carrier)
    assert isinstance(f.path, Path)
    # No name in the file system: the path names the directory it lives in.
    assert f.path.is_absolute() and f.path.parent == temp_dir()
    assert f.path.name.startswith(f"strideweave-{os.getpid()}-")
    assert not f.path.exists() and list(temp_dir().iterdir()) == []
    assert f.size() == 0 and f.dtype() is DType.Floating
    assert f.is_mutable() and f.version == 0
    assert FileBacked().path != f.path


def test_temporary_file_is_removed_on_release():
    f = FileBacked()
    f._allocate(2)
    path = f.path
    f.release()
    assert not path.exists()
    assert f.path == path
    assert f.size() == 0 and f.is_released()
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        f[0]
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        f.get_value(0)
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        f.set_value(0, 1.0)
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        f._allocate(3)


def test_temporary_file_is_removed_on_collection():
    f = FileBacked()
    path = f.path
    del f
    gc.collect()
    assert not path.exists()


def test_temporary_files_are_removed_at_exit():
    code = (
        "import strideweave as sw\n"
        "keep = [sw.FileBacked() for _ in range(3)]\n"
        "keep[0]._allocate(10)\n"
        "print('\\n'.join(str(f.path) for f in keep))\n"
    )
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(out) == 3
    for name in out:
        assert Path(name).parent == temp_dir()
        assert not Path(name).exists()
    assert list(temp_dir().iterdir()) == []


@pytest.mark.parametrize(
    "death",
    ["os._exit(0)", "os.kill(os.getpid(), signal.SIGKILL)", "os.kill(os.getpid(), signal.SIGSEGV)"],
)
def test_temporaries_go_however_the_process_ends(death):
    code = (
        "import os, signal, strideweave as sw\n"
        "keep = [sw.FileBacked(), sw.FileBacked(dtype=sw.DType.Int32)]\n"
        "keep[0]._allocate(1000)\n"
        "keep[0][999] = 1.5\n"
        "keep.append(keep[0].allocate_like(10))\n"
        "print('made', flush=True)\n" + death + "\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True
    )
    assert done.stdout == "made\n", done.stderr
    assert done.returncode != 0 or death == "os._exit(0)"
    assert list(temp_dir().iterdir()) == []


def test_forked_child_leaves_the_parents_files(tmp_path):
    code = (
        "import os, sys, strideweave as sw\n"
        "t = sw.FileBacked()\n"
        "t._allocate(3)\n"
        "t[2] = 4.5\n"
        "n = sw.FileBacked(sys.argv[1])\n"
        "n._allocate(1)\n"
        "before = sorted(os.listdir(os.environ['TMPDIR']))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    t.release()\n"
        "    n.release()\n"
        "    sys.exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status), t[2], t.size(), n.size())\n"
        "print(before == sorted(os.listdir(os.environ['TMPDIR'])))\n"
    )
    named = tmp_path / "kept.bin"
    out = subprocess.run(
        [sys.executable, "-c", code, str(named)],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["0", "4.5", "3", "1", "True"]
    assert named.stat().st_size == 8
    assert list(temp_dir().iterdir()) == []


# --------------------------------------------------------- named files


def test_named_file_is_kept(tmp_path):
    path = tmp_path / "values.bin"
    f = FileBacked(path, dtype=DType.Int32)
    assert f.path == path and path.exists()
    f._allocate(2)
    f[1] = -7
    f.release()
    assert path.read_bytes() == struct.pack("=2i", 0, -7)
    g = FileBacked(str(tmp_path / "other.bin"))
    del g
    gc.collect()
    assert (tmp_path / "other.bin").exists()
    assert FileBacked(os.fsencode(tmp_path / "bytes.bin")).path == tmp_path / "bytes.bin"


def test_second_init_is_refused_and_creates_nothing(tmp_path):
    f = FileBacked(tmp_path / "first.bin", dtype=DType.Int32)
    f._allocate(1)
    f[0] = 7
    with pytest.raises(RuntimeError, match=r"^FileBacked.__init__\(\) must not be called twice$"):
        f.__init__(tmp_path / "second.bin")
    with pytest.raises(RuntimeError, match=r"^FileBacked.__init__\(\) must not be called twice$"):
        f.__init__()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.bin", "tmp"]
    assert list(temp_dir().iterdir()) == []
    assert f.path == tmp_path / "first.bin" and f.dtype() is DType.Int32 and f[0] == 7
    t = FileBacked()
    with pytest.raises(RuntimeError):
        t.__init__(tmp_path / "third.bin")
    assert not (tmp_path / "third.bin").exists() and t.size() == 0


def test_relative_name_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = FileBacked("rel.bin", dtype=DType.Int32)
    g = FileBacked(b"moved.bin", dtype=DType.Float32)
    assert f.path == tmp_path / "rel.bin" and f.path.is_absolute()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert f.path == tmp_path / "rel.bin"
    f._allocate(2)
    f[1] = 5
    assert (tmp_path / "rel.bin").read_bytes() == struct.pack("=2i", 0, 5)
    m = sw.move(cpu_floats(3), g)
    assert [m[i] for i in range(3)] == [0.0, 1.0, 2.0]
    assert (tmp_path / "moved.bin").read_bytes() == struct.pack("=3f", 0.0, 1.0, 2.0)
    assert list(elsewhere.iterdir()) == []


def test_temporary_directory_is_read_at_construction(tmp_path, monkeypatch):
    first = temp_dir()
    f = FileBacked()
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("TMPDIR", str(other))
    assert f.allocate_like(1).path.parent == first
    assert f.new_like([1.0]).path.parent == first
    assert FileBacked().path.parent == other
    monkeypatch.chdir(other)
    monkeypatch.setenv("TMPDIR", "relative")
    (other / "relative").mkdir()
    assert FileBacked().path.parent == other / "relative"
    monkeypatch.delenv("TMPDIR")
    assert FileBacked().path.parent == Path("/tmp")


def test_tmpdir_changes_on_other_threads():
    # os.environ writes while other threads make temporaries: the binding
    # reads TMPDIR with the GIL held (under AddressSanitizer a read without
    # it is a use after free).
    dirs = [str(temp_dir()), str(temp_dir().parent)]
    seen = set()
    errors = []

    def make():
        try:
            for _ in range(300):
                seen.add(str(FileBacked().path.parent))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=make) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(3000):
        os.environ["TMPDIR"] = dirs[i % 2] + "/" * (i % 7)
    for t in threads:
        t.join()
    os.environ["TMPDIR"] = dirs[0]
    assert errors == [] and seen <= set(dirs)


def test_named_file_must_not_exist(tmp_path):
    path = tmp_path / "taken.bin"
    path.write_bytes(b"12345678")
    with pytest.raises(FileExistsError) as info:
        FileBacked(path)
    assert info.value.errno == errno.EEXIST
    assert str(path) in str(info.value)
    assert path.read_bytes() == b"12345678"


def test_named_file_errors_are_os_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        FileBacked(tmp_path / "missing" / "x.bin")
    with pytest.raises(TypeError):
        FileBacked(42)
    with pytest.raises(ValueError):
        FileBacked("bad\0name")


def test_arguments():
    with pytest.raises(TypeError):
        FileBacked(None, True)
    with pytest.raises(TypeError, match=r"^FileBacked dtype must be a DType$"):
        FileBacked(dtype="Floating")
    with pytest.raises(TypeError, match=r"^FileBacked dtype must be a DType$"):
        FileBacked(dtype=None)
    for bad in (DType.Any, DType.Bool):
        with pytest.raises(ValueError, match=DTYPE_MSG):
            FileBacked(dtype=bad)
    assert FileBacked(mutable=0).is_mutable() is False


# ------------------------------------------------------------- values


@pytest.mark.parametrize(
    "dtype, fmt, values, expected",
    [
        (DType.Floating, "d", [0.1, -2, True], [0.1, -2.0, 1.0]),
        (DType.Float32, "f", [0.1, 3, 1e40], [0.10000000149011612, 3.0, float("inf")]),
        (DType.Int32, "i", [5, -(2**31), True], [5, -(2**31), 1]),
    ],
)
def test_values_in_the_file(dtype, fmt, values, expected, tmp_path):
    f = FileBacked(tmp_path / "values.bin", dtype=dtype)
    f._allocate(len(values))
    for i, v in enumerate(values):
        f[i] = v
    assert list(f) == expected
    assert f.version == len(values)
    assert f.path.read_bytes() == struct.pack("=" + fmt * len(values), *expected)
    assert [type(v) for v in f] == [type(v) for v in expected]


def test_get_value_range():
    f = FileBacked()
    f._allocate(2)
    for bad in (-1, 2, 2**70):
        with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
            f.get_value(bad)
    with pytest.raises(TypeError):
        f.get_value(0.0)


def test_set_value_checks():
    f = FileBacked(dtype=DType.Int32)
    f._allocate(1)
    f.set_value(0, 3)
    assert f[0] == 3 and f.version == 1
    with pytest.raises(TypeError, match=r"^FileBacked value must be an integer$"):
        f.set_value(0, 1.5)
    with pytest.raises(TypeError, match=r"^FileBacked value must be an integer$"):
        f[0] = "x"
    with pytest.raises(OverflowError, match=r"^FileBacked value is out of int32 range$"):
        f[0] = 2**31
    with pytest.raises(OverflowError, match=r"^FileBacked value is out of int32 range$"):
        f[0] = -(2**80)
    d = FileBacked()
    d._allocate(1)
    for bad in ("1.0", None, object()):
        with pytest.raises(TypeError, match=r"^FileBacked value must be a number$"):
            d[0] = bad
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        d.set_value(1, 0.0)
    frozen = FileBacked(mutable=False)
    frozen._allocate(1)
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        frozen.set_value(0, 1.0)
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        frozen[0] = 1.0
    assert f.version == 1 and d.version == 0 and frozen.version == 0


def test_size_follows_the_file(tmp_path):
    path = tmp_path / "grow.bin"
    f = FileBacked(path, dtype=DType.Float32)
    with open(path, "ab") as out:
        out.write(struct.pack("=3f", 1.0, 2.0, 3.0))
    assert f.size() == 3 and f[2] == 3.0
    os.truncate(path, 6)
    assert f.size() == 1
    with pytest.raises(IndexError):
        f[1]


# ------------------------------------------------------------ resizing


def test_allocate(tmp_path):
    f = FileBacked(tmp_path / "a.bin")
    f._allocate(4)
    f[3] = 2.0
    assert f.size() == 4 and f.path.stat().st_size == 32
    f._allocate(2)
    assert list(f) == [0.0, 0.0]
    f._allocate(3)
    assert list(f) == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"^FileBacked allocation size must be non-negative$"):
        f._allocate(-1)
    with pytest.raises(TypeError):
        f._allocate(1.0)


def test_allocate_like():
    f = FileBacked(dtype=DType.Int32)
    r = f.allocate_like(3)
    assert type(r) is FileBacked and r.dtype() is DType.Int32
    assert list(r) == [0, 0, 0] and r.path != f.path
    assert f.allocate_like(2, dtype=DType.Float32, empty=True).dtype() is DType.Float32
    assert not f.allocate_like(1, mutable=False).is_mutable()
    with pytest.raises(ValueError, match=r"^FileBacked allocation size must be non-negative$"):
        f.allocate_like(-1)
    with pytest.raises(TypeError, match=r"^FileBacked dtype must be a DType$"):
        f.allocate_like(1, dtype="Int32")
    with pytest.raises(ValueError, match=DTYPE_MSG):
        f.allocate_like(1, dtype=DType.Any)


def test_new_like():
    f = FileBacked(dtype=DType.Float32)
    r = f.new_like([1, None, 2.5])
    assert type(r) is FileBacked and r.dtype() is DType.Float32
    assert list(r) == [1.0, 0.0, 2.5] and r.version == 0
    i = f.new_like(range(3000), dtype=DType.Int32, mutable=False)
    assert i.size() == 3000 and i[2999] == 2999 and not i.is_mutable()
    with pytest.raises(TypeError, match=r"^FileBacked value must be an integer$"):
        f.new_like([0.5], dtype=DType.Int32)
    with pytest.raises(TypeError, match=r"^FileBacked value must be a number$"):
        f.new_like(["x"])


def test_factories_only_for_exact_file_backed():
    class Sub(FileBacked):
        pass

    s = Sub()
    with pytest.raises(
        NotImplementedError,
        match=r"^FileBacked carrier factory only supports exact FileBacked carriers$",
    ):
        s.new_like([1])
    assert type(s.allocate_like(1)) is FileBacked


def test_scatter_and_dlpack_are_not_supported():
    f = FileBacked()
    with pytest.raises(NotImplementedError, match=r"^FileBacked carriers do not support scatter$"):
        f.scatter(None, None, None)
    with pytest.raises(BufferError, match=r"^DLPack is not supported for this carrier$"):
        f.dlpack_info()


def test_tensor_over_a_file():
    f = FileBacked()
    f._allocate(6)
    t = Tensor(f, 0, flat(6))
    assert t.is_differentiable() and t.dtype() is DType.Floating
    t[4] = 1.25
    assert f[4] == 1.25 and t.version == 1
    i = FileBacked(dtype=DType.Int32)
    i._allocate(1)
    assert not Tensor(i, 0, flat(1)).is_differentiable()


# ---------------------------------------------- moves into named files


def test_move_publishes_a_named_file_when_complete(tmp_path):
    path = tmp_path / "out.bin"
    seen = []

    class Watching(CpuToFileBackedMoveOperation):
        def _copy(self, tensor, destination, output, element_count):
            super()._copy(tensor, destination, output, element_count)
            # Every value is written, but the move has not committed yet.
            seen.append((path.stat().st_size, sorted(p.name for p in tmp_path.iterdir())))
            seen.append(destination.size())

    f = FileBacked(path, dtype=DType.Float32)
    m = Watching().forward(cpu_floats(5), f)
    assert seen == [(0, ["out.bin", "tmp"]), 5]
    assert path.read_bytes() == struct.pack("=5f", 0, 1, 2, 3, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "tmp"]
    assert m.carrier is f and f.path == path and f.size() == 5
    f[4] = -1.0
    assert path.read_bytes()[16:] == struct.pack("=f", -1.0)
    m = sw.move(cpu_floats(3 << 20), FileBacked(tmp_path / "big.bin", dtype=DType.Float32))
    assert (tmp_path / "big.bin").stat().st_size == 12 << 20
    assert m[(3 << 20) - 1] == (3 << 20) - 1


@pytest.mark.parametrize("allowed", range(4))
def test_failed_move_leaves_the_name_empty(tmp_path, allowed):
    path = tmp_path / "out.bin"
    f = FileBacked(path, dtype=DType.Float32)
    t = cpu_floats(3 << 20)  # two bulk chunks
    _native._debug_fail_io_after(allowed)  # the stage, a chunk, the commit
    with pytest.raises(OSError):
        sw.move(t, f)
    _native._debug_fail_io_after(-1)
    assert path.stat().st_size == 0 and f.size() == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "tmp"]
    assert not t.carrier.is_released()
    sw.move(t, f)
    assert path.stat().st_size == 12 << 20


def test_killed_move_leaves_the_name_empty(tmp_path):
    # A move into a named file is SIGKILLed after writing half of its
    # values; a pipe says when. The name holds the empty file reserved at
    # construction, and nothing else is left beside it.
    code = (
        "import sys, strideweave as sw\n"
        "from strideweave.carriers.move import CpuToFileBackedMoveOperation\n"
        "class Halfway(CpuToFileBackedMoveOperation):\n"
        "    def _copy(self, tensor, destination, output, element_count):\n"
        "        super()._copy(tensor, destination, output, element_count // 2)\n"
        "        print('half', destination.size(), flush=True)\n"
        "        sys.stdin.readline()\n"
        "n = 3 << 20\n"
        "c = sw.CPU(n, dtype=sw.DType.Float32)\n"
        "c[n - 1] = 1.0\n"
        "t = sw.Tensor(c, 0, sw.Layout(sw.Shape([n]), sw.Stride([1])))\n"
        "Halfway().forward(t, sw.FileBacked(sys.argv[1], dtype=sw.DType.Float32))\n"
        "print('done', flush=True)\n"
    )
    path = tmp_path / "out.bin"
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        env=dict(os.environ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = child.stdout.readline()
        assert line == f"half {3 << 20}\n", child.stderr.read() if not line else line
        assert path.stat().st_size == 0
        child.kill()
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdin.close()
        child.stdout.close()
        child.stderr.close()
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "tmp"]
    assert list(temp_dir().iterdir()) == []


# ---------------------------------------------------------- I/O faults


def test_failed_write_leaves_the_value():
    f = FileBacked()
    f._allocate(2)
    f[1] = 3.0
    _native._debug_fail_io_after(0)
    with pytest.raises(OSError) as info:
        f[1] = 4.0
    assert info.value.errno == errno.ENOSPC
    with pytest.raises(OSError):
        f.set_value(0, 4.0)
    _native._debug_fail_io_after(-1)
    assert list(f) == [0.0, 3.0] and f.version == 1


def test_failed_read():
    f = FileBacked()
    f._allocate(1)
    _native._debug_fail_io_after(0)
    with pytest.raises(OSError):
        f[0]
    with pytest.raises(OSError):
        Tensor(f, 0, flat(1))[0]


def test_failed_resize_leaves_the_size():
    f = FileBacked()
    f._allocate(2)
    _native._debug_fail_io_after(0)
    with pytest.raises(OSError):
        f._allocate(5)
    _native._debug_fail_io_after(-1)
    assert f.size() == 2


def test_failed_creation_leaves_no_file():
    _native._debug_fail_io_after(0)
    with pytest.raises(OSError):
        FileBacked(temp_dir() / "never.bin")
    with pytest.raises(OSError):
        FileBacked()
    _native._debug_fail_io_after(-1)
    assert list(temp_dir().iterdir()) == []


@pytest.mark.parametrize("allowed", range(4))
def test_failed_factories_leave_no_file(allowed):
    gc.collect()
    before = set(temp_dir().iterdir())
    live = _native._debug_live_allocs()
    f = FileBacked()
    f._allocate(2)
    _native._debug_fail_io_after(allowed)
    try:
        f.new_like([1.0] * 2000)
        f.allocate_like(10)
    except OSError:
        pass
    _native._debug_fail_io_after(-1)
    del f
    gc.collect()
    assert set(temp_dir().iterdir()) == before
    assert _native._debug_live_allocs() == live


def test_memory_does_not_grow_with_the_file():
    f = FileBacked(dtype=DType.Float32)
    live = _native._debug_live_allocs()
    f._allocate(1 << 24)  # 64 MiB on disk, sparse
    assert f.size() == 1 << 24
    assert _native._debug_live_allocs() == live
    f[(1 << 24) - 1] = 1.0
    assert f[(1 << 24) - 1] == 1.0
