"""Benchmark: the OpenCL carrier's moves, beside memcpy.

What is measured:

* ``move(cpu_tensor, OpenCL(n))`` then ``move(opencl_tensor, CPU(n))`` of a
  float32 tensor (256 MiB by default): the round trip's bandwidth (bytes
  moved one way over the time of both moves) against one memcpy of the
  same bytes between two CPU buffers (NumPy's ``copyto``, or ctypes'
  ``memmove`` without NumPy). On PoCL a device buffer is host memory, so a
  round trip is two copies and its ratio to one memcpy is about 0.5 at
  best; on a GPU it is bounded by the bus. Each repeat moves a fresh
  source into fresh carriers, as a program would. Two sources: one whose
  values were written (``written``, what a program moves), and one that was
  never written (``untouched``: zero pages, which read faster than memory).
* each direction's own bandwidth, and the submission time of
  ``move_async`` (the host returns before the device copy completes).
* ``reduce`` of a 1 x 4M float32 tensor (a sum over all elements) on
  OpenCL against the CPU carrier.

* ``matmul`` of two 1024 x 1024 float32 tensors on OpenCL (the generated
  kernel, waited for with ``synchronize``) against the same call on CPU
  tensors (our blocked GEMM), and elementwise ``add`` of 4M float32
  elements the same way; the OpenCL time includes allocating the result
  buffer, as the CPU's does. The two carriers' calls alternate, and their
  operands hold written values (a never-written CPU carrier is zero pages,
  which would flatter the CPU side). Kernels are compiled (and cached) by a
  first call outside the timing.

The device is the default one (``STRIDEWEAVE_OPENCL_DEVICE`` selects
another). Timing never decides a test.

Usage: python bench/bench_opencl.py [size_in_MiB [repeats]]  (256, 5)
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable

import strideweave as sw
from strideweave import CPU, Layout, OpenCL, Shape, Stride, Tensor

MiB = 1 << 20


def best(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def memcpy_fn(nbytes: int) -> Callable[[], object]:
    """One memcpy of nbytes between two CPU buffers already written."""
    try:
        import numpy as np

        a = np.ones(nbytes // 4, dtype=np.float32)
        b = np.ones_like(a)
        return lambda: np.copyto(b, a)
    except ImportError:
        a = ctypes.create_string_buffer(b"\1" * nbytes, nbytes)
        b = ctypes.create_string_buffer(nbytes)
        return lambda: ctypes.memmove(b, a, nbytes)


def written_cpu(n: int, layout: Layout) -> Tensor:
    """A CPU tensor of n float32 values that were written: a new carrier's
    storage is zero pages until written, and those read faster than memory,
    so a benchmark over them measures less than a program's data costs."""
    src = Tensor(CPU(n), 0, layout)
    try:
        import numpy as np

        np.from_dlpack(src)[:] = 1.5  # the CPU storage, written in place
    except ImportError:
        src = sw.exp(src)  # a result: storage the kernel wrote (ones)
    return src


def paired(
    cpu: Callable[[], object], dev: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """Best times of cpu and dev, called alternately so that both see the
    same machine (a shared one varies from second to second)."""
    cpu(), dev()  # compiles and caches the kernels outside the timing
    cpu_times, dev_times = [], []
    for _ in range(repeats):
        for fn, times in ((cpu, cpu_times), (dev, dev_times)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(cpu_times), min(dev_times)


def bench_ops() -> None:
    """matmul 1024, add and reduce at 4M, OpenCL against CPU (ratio = CPU
    time over OpenCL time: above 1 means OpenCL is faster). The operands
    hold written values on both carriers."""
    n = 1024
    mat = Layout(Shape([n, n]), Stride([1, n]))
    a_cpu, b_cpu = written_cpu(n * n, mat), written_cpu(n * n, mat)
    a_dev = sw.move(written_cpu(n * n, mat), OpenCL(n * n))  # a move releases its source
    b_dev = sw.move(written_cpu(n * n, mat), OpenCL(n * n))
    cpu_t, dev_t = paired(
        lambda: sw.matmul(a_cpu, b_cpu),
        lambda: sw.matmul(a_dev, b_dev).carrier.synchronize(),
        5,
    )
    flops = 2 * n**3
    print(
        f"matmul {n}:  CPU {cpu_t * 1e3:7.2f} ms ({flops / cpu_t / 1e9:5.1f} GFLOP/s)  "
        f"OpenCL {dev_t * 1e3:7.2f} ms ({flops / dev_t / 1e9:5.1f} GFLOP/s)  "
        f"ratio {cpu_t / dev_t:.2f} (target 0.5)"
    )
    m = 1 << 22
    vec = Layout(Shape([m]), Stride([1]))
    x_cpu = written_cpu(m, vec)
    x_dev = sw.move(written_cpu(m, vec), OpenCL(m))
    cpu_t, dev_t = paired(
        lambda: sw.add(x_cpu, x_cpu), lambda: sw.add(x_dev, x_dev).carrier.synchronize(), 20
    )
    print(
        f"add 4M:       CPU {cpu_t * 1e3:7.3f} ms  OpenCL {dev_t * 1e3:7.3f} ms  "
        f"ratio {cpu_t / dev_t:.2f} (target 0.5)"
    )
    row = Layout(Shape([1, m]), Stride([0, 1]))
    r_cpu, r_dev = Tensor(x_cpu.carrier, 0, row), Tensor(x_dev.carrier, 0, row)
    cpu_t, dev_t = paired(
        lambda: sw.reduce(r_cpu), lambda: sw.reduce(r_dev).carrier.synchronize(), 20
    )
    print(
        f"reduce 4M:    CPU {cpu_t * 1e3:7.3f} ms  OpenCL {dev_t * 1e3:7.3f} ms  "
        f"ratio {cpu_t / dev_t:.2f}"
    )


def main() -> None:
    size_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    devices = sw.opencl_devices()
    if not devices:
        print("no OpenCL runtime: install ocl-icd-libopencl1 and pocl-opencl-icd")
        return
    default = next(d for d in devices if d["default"])
    print(f"device: {default['platform']} / {default['name']} ({default['type']})")
    n = size_mib * MiB // 4
    nbytes = n * 4
    layout = Layout(Shape([n]), Stride([1]))
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5

    def source(written: bool) -> Tensor:
        return written_cpu(n, layout) if written else Tensor(CPU(n), 0, layout)

    memcpy = memcpy_fn(nbytes)
    copies: list[float] = []
    gbs = nbytes / 1e9
    # The memcpy and the two sources alternate, so that all three see the
    # same machine (a shared one varies from second to second).
    times: dict[bool, tuple[list[float], list[float], list[float]]] = {
        True: ([], [], []),
        False: ([], [], []),
    }
    for _ in range(repeats):
        c0 = time.perf_counter()
        memcpy()
        copies.append(time.perf_counter() - c0)
        for written in (True, False):
            src = source(written)
            dev = OpenCL(n, empty=True)
            host = CPU(n, empty=True)
            t0 = time.perf_counter()
            handle = sw.move_async(src, dev)
            t1 = time.perf_counter()
            on_device = handle.wait()
            t2 = time.perf_counter()
            sw.move(on_device, host)
            t3 = time.perf_counter()
            submit, up, down = times[written]
            submit.append(t1 - t0)
            up.append(t2 - t0)
            down.append(t3 - t2)
    copy = min(copies)
    print(f"size: {size_mib} MiB of float32, best of {repeats}")
    print(f"memcpy:            {gbs / copy:8.2f} GB/s")
    for written in (True, False):
        submit, up_t, down_t = times[written]
        up, down = min(up_t), min(down_t)
        trip = min(u + d for u, d in zip(up_t, down_t, strict=True))
        name = "written" if written else "untouched"
        print(f"{name} source:")
        submit_ms = min(submit) * 1e3
        print(
            f"  CPU -> OpenCL:   {gbs / up:8.2f} GB/s  (move_async submits in {submit_ms:.2f} ms)"
        )
        print(f"  OpenCL -> CPU:   {gbs / down:8.2f} GB/s")
        print(
            f"  round trip:  {gbs / trip:8.2f} GB/s  ratio to memcpy {copy / trip:.2f} (target 0.5)"
        )
    bench_ops()


if __name__ == "__main__":
    main()
