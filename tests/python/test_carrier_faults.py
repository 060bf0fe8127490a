"""Fault injection over carrier and tensor construction: every call through
the binding survives an allocation failure inside the C library with a clean
MemoryError and no leak."""

import array
import gc
import os
from pathlib import Path

import pytest
from helpers_carriers import L, ListCarrier, flat
from strideweave import CPU, Carrier, DType, FileBacked, Generic, Tensor, _native


def temp_files():
    return set(Path(os.environ["TMPDIR"]).iterdir())


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    # The library reads TMPDIR for each temporary file it creates.
    monkeypatch.setenv("TMPDIR", str(tmp_path))


BUF = array.array("f", [1.0, 2.0, 3.0])
LAYOUT = L([2, 2], [1, 2])
SRC = Tensor(CPU(0).new_like([1, 2, 3, 4]), 0, LAYOUT)
GSRC = Tensor(Generic([1, 2, 3, 4]), 0, LAYOUT)


def scatter_cpu():
    dst = CPU(4)
    dst.scatter(SRC, Tensor(dst, 0, flat(4)), LAYOUT)
    return dst


def scatter_generic():
    dst = Generic([0] * 4)
    dst.scatter(GSRC, Tensor(dst, 0, flat(4)), LAYOUT)
    return dst


def file_new_like():
    return FileBacked().new_like([1.0, None, 2.0])


CALLS = {
    "Carrier": Carrier,
    "python carrier": lambda: ListCarrier([1, 2]),
    "CPU": lambda: CPU(16),
    "CPU empty": lambda: CPU(16, empty=True, dtype=DType.Int32),
    "CPU pointer": lambda: CPU(3, BUF.buffer_info()[0]),
    "CPU new_like": lambda: CPU(1).new_like([1, None, 3]),
    "CPU allocate_like": lambda: CPU(1).allocate_like(8, dtype=DType.Bool),
    "Generic": lambda: Generic([1, 2, 3]),
    "Generic tuple": lambda: Generic((1, 2), mutable=False, dtype=DType.Any),
    "Generic new_like": lambda: Generic([1]).new_like([1, None]),
    "Generic allocate_like": lambda: Generic([1]).allocate_like(3),
    "FileBacked": FileBacked,
    "FileBacked new_like": file_new_like,
    "FileBacked allocate_like": lambda: FileBacked().allocate_like(3),
    "Tensor CPU": lambda: Tensor(CPU(4), 0, LAYOUT),
    "Tensor Generic": lambda: Tensor(Generic([0] * 4), 0, LAYOUT),
    "Tensor python": lambda: Tensor(ListCarrier([0] * 4), 0, LAYOUT),
    "Tensor view": lambda: Tensor(SRC.carrier, 1, flat(3)),
    "Tensor read": lambda: Tensor(SRC.carrier, 0, LAYOUT)[1, 1],
    "Tensor write": lambda: Tensor(GSRC.carrier, 0, LAYOUT).__setitem__((1, 1), 4),
    "scatter CPU": scatter_cpu,
    "scatter Generic": scatter_generic,
    "error path": lambda: Tensor(CPU(1), 0, LAYOUT),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_allocation_failures_are_clean(name):
    call = CALLS[name]
    gc.collect()
    base = _native._debug_live_allocs()
    files = temp_files()
    for n in range(200):
        failed = False
        _native._debug_fail_alloc_after(n)
        try:
            result = call()
        except MemoryError:
            # Checked after the except block, once the traceback (and the
            # frames holding half-built objects) is gone.
            failed = True
            result = None
        except ValueError:
            result = None  # the "error path" call fails on purpose
        finally:
            _native._debug_fail_alloc_after(-1)
        del result
        gc.collect()
        assert _native._debug_live_allocs() == base, f"leak after failure {n}"
        assert temp_files() == files, f"file left after failure {n}"
        if failed:
            continue
        assert n > 0, "the call allocated nothing"
        assert temp_files() == files
        return
    raise AssertionError(f"{name} still failed after 200 allocations")
