"""Layout command strings beside NumPy and PyTorch.

Runs StrideWeave's string-described operations and the peers on the same
data in one process and prints the ratios. The goals the project tracks:

* the batched contraction ``einsum("b i k, b j k -> b i j")`` at b=16,
  i=j=k=256 in Float32: at least 0.5x the speed of ``numpy.einsum``
  (ours runs one batched GEMM);
* a cached ``rearrange(t, "a b -> b a")`` call from Python: at most 2 us
  a call (no grad, like the call-overhead goal of bench_ops.py; the time
  with grad recording is printed beside it).

Timing never decides a test; this is a report.
"""

from __future__ import annotations

import time

import numpy as np
import strideweave as sw

try:  # PyTorch is an optional peer.
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None


def best(fn, repeat=5, number=1):
    """Best time of one call in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def wrap(array: np.ndarray) -> sw.Tensor:
    """A tensor over a C-ordered NumPy array's memory (no copy), with the
    array's axes as its modes in the same order."""
    strides = [s // array.itemsize for s in array.strides]
    layout = sw.Layout(sw.Shape(list(array.shape)), sw.Stride(strides))
    return sw.Tensor(sw.CPU(array.size, array.ctypes.data), 0, layout)


def values(t: sw.Tensor, shape) -> np.ndarray:
    """t's logical values as an array of the given mode extents."""
    carrier = np.ctypeslib.as_array(
        (np.ctypeslib.ctypes.c_float * t.carrier.size()).from_address(t.carrier.pointer())
    )
    index = [t.offset + t.layout.index(i) for i in range(t.layout.size)]
    return carrier[index].reshape(shape, order="F")


def batched_contraction(b=16, n=256):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((b, n, n), dtype=np.float32)
    c = rng.standard_normal((b, n, n), dtype=np.float32)
    ta, tc = wrap(a), wrap(c)
    command = "b i k, b j k -> b i j"
    with sw.no_grad():
        result = sw.einsum(ta, tc, command)
        t_ours = best(lambda: sw.einsum(ta, tc, command), repeat=5, number=2)
    want = np.einsum("bik,bjk->bij", a, c)
    error = float(np.max(np.abs(values(result, want.shape) - want)))
    t_np = best(lambda: np.einsum("bik,bjk->bij", a, c), repeat=3)
    t_npo = best(lambda: np.einsum("bik,bjk->bij", a, c, optimize=True), repeat=5, number=2)
    t_torch = None
    if torch is not None:
        xa, xc = torch.from_numpy(a), torch.from_numpy(c)
        with torch.no_grad():
            t_torch = best(lambda: torch.einsum("bik,bjk->bij", xa, xc), repeat=5, number=2)
    return t_ours, t_np, t_npo, t_torch, error


def cached_rearrange():
    t = sw.Tensor(sw.CPU(6), 0, sw.Layout(sw.Shape([2, 3]), sw.Stride([1, 2])))
    n = 50000
    sw.rearrange(t, "a b -> b a")  # compiled and cached once

    def loop():
        for _ in range(n):
            sw.rearrange(t, "a b -> b a")

    with sw.no_grad():
        ours = best(loop) / n
    ours_grad = best(loop) / n
    na = np.ones((2, 3), np.float32)
    peer = best(lambda: [na.transpose(1, 0) for _ in range(n)]) / n
    tpeer = None
    if torch is not None:
        xa = torch.ones(2, 3)
        tpeer = best(lambda: [xa.permute(1, 0) for _ in range(n)]) / n
    return ours, ours_grad, peer, tpeer


def main():
    print("StrideWeave layout commands beside NumPy", np.__version__, end="")
    print(f" and PyTorch {torch.__version__}" if torch is not None else "")
    t_ours, t_np, t_npo, t_torch, error = batched_contraction()
    print('\neinsum("b i k, b j k -> b i j"), b=16, i=j=k=256, float32:')
    print(f"  ours                     {t_ours * 1e3:9.2f} ms   (max |error| {error:.2e})")
    print(
        f"  numpy.einsum             {t_np * 1e3:9.2f} ms   ours/numpy "
        f"{t_np / t_ours:.2f}x (goal >= 0.5x)"
    )
    print(f"  numpy.einsum(optimize)   {t_npo * 1e3:9.2f} ms   ours/numpy {t_npo / t_ours:.2f}x")
    if t_torch is not None:
        print(
            f"  torch.einsum             {t_torch * 1e3:9.2f} ms   ours/torch "
            f"{t_torch / t_ours:.2f}x"
        )
    ours, ours_grad, peer, tpeer = cached_rearrange()
    line = (
        f'\ncached sw.rearrange(t, "a b -> b a"): {ours * 1e6:.2f} us/call without grad '
        f"(goal <= 2), {ours_grad * 1e6:.2f} with grad; numpy transpose {peer * 1e6:.2f}"
    )
    if tpeer is not None:
        line += f", torch permute {tpeer * 1e6:.2f}"
    print(line + " us/call")


if __name__ == "__main__":
    main()
