"""Benchmark: the OpenCL carrier's moves, beside memcpy.

What is measured:

* ``move(cpu_tensor, OpenCL(n))`` then ``move(opencl_tensor, CPU(n))`` of a
  float32 tensor (256 MiB by default): the round trip's bandwidth (bytes
  moved one way over the time of both moves) against one memcpy of the
  same bytes between two CPU buffers (NumPy's ``copyto``, or ctypes'
  ``memmove`` without NumPy). On PoCL a device buffer is host memory, so a
  round trip is two copies and its ratio to one memcpy is about 0.5 at
  best; on a GPU it is bounded by the bus.
* each direction's own bandwidth, and the submission time of
  ``move_async`` (the host returns before the device copy completes).

The device is the default one (``STRIDEWEAVE_OPENCL_DEVICE`` selects
another). Operations on OpenCL carriers are not built yet, so matmul and
elementwise add are not timed here. Timing never decides a test.

Usage: python bench/bench_opencl.py [size_in_MiB]  (default 256)
"""

from __future__ import annotations

import ctypes
import sys
import time

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


def memcpy_seconds(nbytes: int) -> float:
    try:
        import numpy as np

        a = np.ones(nbytes // 4, dtype=np.float32)
        b = np.empty_like(a)
        return best(lambda: np.copyto(b, a))
    except ImportError:
        a = ctypes.create_string_buffer(nbytes)
        b = ctypes.create_string_buffer(nbytes)
        return best(lambda: ctypes.memmove(b, a, nbytes))


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

    up_times, down_times, submit_times = [], [], []
    for _ in range(3):
        src = Tensor(CPU(n), 0, layout)
        dev = OpenCL(n, empty=True)
        host = CPU(n, empty=True)
        t0 = time.perf_counter()
        handle = sw.move_async(src, dev)
        t1 = time.perf_counter()
        on_device = handle.wait()
        t2 = time.perf_counter()
        sw.move(on_device, host)
        t3 = time.perf_counter()
        submit_times.append(t1 - t0)
        up_times.append(t2 - t0)
        down_times.append(t3 - t2)
    up, down = min(up_times), min(down_times)
    copy = memcpy_seconds(nbytes)
    gbs = nbytes / 1e9
    print(f"size: {size_mib} MiB of float32")
    print(f"memcpy:            {gbs / copy:8.2f} GB/s")
    submit_ms = min(submit_times) * 1e3
    print(f"CPU -> OpenCL:     {gbs / up:8.2f} GB/s  (move_async submits in {submit_ms:.2f} ms)")
    print(f"OpenCL -> CPU:     {gbs / down:8.2f} GB/s")
    ratio = copy / (up + down)
    print(f"round trip:    {gbs / (up + down):8.2f} GB/s  ratio to memcpy {ratio:.2f} (target 0.5)")


if __name__ == "__main__":
    main()
