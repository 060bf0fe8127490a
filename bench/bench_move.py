"""Benchmark: move a float32 tensor CPU -> FileBacked -> CPU, beside dd.

What is measured, like with like (no root, so the page cache cannot be
dropped):

* write: ``move(cpu_tensor, FileBacked())`` -- a bulk write of the whole
  span into a fresh temporary file, without fsync -- against
  ``dd if=/dev/zero of=<file in the same directory> bs=8M`` (also without
  fsync). Both end with the data in the page cache. The fsync'd dd rate
  (``conv=fdatasync``) is printed too, for reference.
* read: ``move(file_tensor, CPU(empty=True))`` of the file just written
  against dd reading the file it just wrote, from the page cache, two ways:
  ``bs=<whole size>`` reads everything into one fresh buffer, which like
  the move has to fault in (and the kernel to zero) every page of a new
  tensor-sized allocation -- the like-with-like baseline the ratio uses;
  ``bs=8M`` reuses one small cache-hot buffer, an upper bound no move into
  fresh memory can reach (printed for reference).
* memory: the process's peak resident set (VmHWM) before and during the
  two moves. The source is released when its move commits, so the peak
  should exceed one tensor by at most a few MiB of working memory.

The ratios are StrideWeave's bandwidth over dd's (target: at least 0.7).
Timing never decides a test; this is not run by the test suite.

Usage: python bench/bench_move.py [size_in_MiB]  (default 1024)
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import tempfile
import time

import strideweave as sw
from strideweave import CPU, DType, FileBacked, Layout, Shape, Stride, Tensor

MiB = 1 << 20


def status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def reset_peak() -> None:
    # Writing 5 to clear_refs resets VmHWM to the current VmRSS (Linux).
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def dd_rate(args: list[str]) -> float:
    """Bytes per second that dd reports for one run."""
    out = subprocess.run(
        ["dd", *args], check=True, capture_output=True, text=True, env={"LC_ALL": "C"}
    ).stderr
    m = re.search(r"(\d+) bytes .* copied, ([0-9.]+) s", out)
    if not m:
        raise RuntimeError(f"cannot read dd's output: {out!r}")
    return int(m.group(1)) / float(m.group(2))


def best(values: list[float]) -> float:
    return max(values)


def main() -> None:
    size_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    nbytes = size_mib * MiB
    n = nbytes // 4
    layout = Layout(Shape(n), Stride(1))
    workdir = tempfile.mkdtemp(prefix="sw-bench-move-")
    os.environ["TMPDIR"] = workdir
    ddfile = os.path.join(workdir, "dd.bin")
    count = str(nbytes // (8 * MiB))
    runs = 5

    dd_write, dd_read, dd_read_small = [], [], []
    sw_write, sw_read, peaks = [], [], []
    # dd and the moves alternate, so that both see the same machine load.
    for _ in range(runs):
        dd_write.append(dd_rate(["if=/dev/zero", f"of={ddfile}", "bs=8M", f"count={count}"]))
        dd_read.append(dd_rate([f"if={ddfile}", "of=/dev/null", f"bs={nbytes}", "count=1"]))
        dd_read_small.append(dd_rate([f"if={ddfile}", "of=/dev/null", "bs=8M"]))
        os.remove(ddfile)

        src = CPU(n)
        ctypes.memset(src.pointer(), 1, nbytes)  # real pages, like dd's buffer
        t = Tensor(src, 0, layout)
        rss_one = status_kib("VmRSS")
        reset_peak()
        with sw.no_grad():
            start = time.perf_counter()
            on_file = sw.move(t, FileBacked(dtype=DType.Float32))
            sw_write.append(nbytes / (time.perf_counter() - start))
            dest = CPU(n, empty=True)
            start = time.perf_counter()
            back = sw.move(on_file, dest)
            sw_read.append(nbytes / (time.perf_counter() - start))
        peaks.append((status_kib("VmHWM") - rss_one) / 1024)
        assert back[n - 1] != 0.0
        del t, src, on_file, back, dest
    dd_write_sync = [
        dd_rate(["if=/dev/zero", f"of={ddfile}", "bs=8M", f"count={count}", "conv=fdatasync"])
    ]
    os.remove(ddfile)

    w, r = best(sw_write), best(sw_read)
    dw, dr = best(dd_write), best(dd_read)
    print(f"move benchmark: {size_mib} MiB float32 tensor, best of {runs}, files in {workdir}")
    print(
        f"  CPU -> FileBacked  {w / MiB:9.1f} MiB/s   dd write {dw / MiB:9.1f} MiB/s   "
        f"ratio {w / dw:5.2f}"
    )
    print(
        f"  FileBacked -> CPU  {r / MiB:9.1f} MiB/s   dd read  {dr / MiB:9.1f} MiB/s   "
        f"ratio {r / dr:5.2f}"
    )
    print(
        f"  (dd write with fdatasync: {best(dd_write_sync) / MiB:.1f} MiB/s; "
        f"dd read into a reused 8 MiB buffer: {best(dd_read_small) / MiB:.1f} MiB/s)"
    )
    print(
        f"  peak resident memory during both moves beyond the resident source "
        f"({size_mib} MiB): {max(peaks):+.1f} MiB"
    )
    os.rmdir(workdir)


if __name__ == "__main__":
    main()
