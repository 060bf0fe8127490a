"""DLPack export cost beside the tensor size.

Export never copies: ``__dlpack__`` makes one small allocation (the managed
tensor with its shape and stride arrays) and a capsule, so its cost must
not depend on how many elements the tensor has. This prints, for a tensor
of 16 and of 16M Float32 elements (a hierarchical 3-mode layout, so the
shape and stride arrays are not trivial):

* ``__dlpack__`` plus dropping the unconsumed capsule (legacy and
  versioned);
* ``np.from_dlpack(t)``, a full round trip through a real consumer, and
  ``torch.from_dlpack(t)`` when PyTorch is installed;

and the ratio of the large to the small case (about 1.0 is the goal).

Timing never decides a test; this is a report.
"""

from __future__ import annotations

import gc
import time

import numpy as np
import strideweave as sw

try:  # PyTorch is an optional consumer.
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

SMALL = 16
LARGE = 16 * 1024 * 1024


def best(fn, repeat=7, number=2000):
    """Best time of one call in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def tensor(n: int) -> sw.Tensor:
    """A Float32 CPU tensor of n elements with layout (4,(2,n/8)):(1,(4,8))."""
    layout = sw.Layout(sw.Shape([4, [2, n // 8]]), sw.Stride([1, [4, 8]]))
    return sw.Tensor(sw.CPU(n), 0, layout)


def export_legacy(t: sw.Tensor):
    return lambda: t.__dlpack__()


def export_versioned(t: sw.Tensor):
    return lambda: t.__dlpack__(max_version=(1, 0))


def numpy_import(t: sw.Tensor):
    return lambda: np.from_dlpack(t)


def torch_import(t: sw.Tensor):
    return lambda: torch.from_dlpack(t)


def main() -> None:
    small, large = tensor(SMALL), tensor(LARGE)
    rows = [
        ("__dlpack__() + drop", export_legacy),
        ("__dlpack__(max_version=(1, 0)) + drop", export_versioned),
        ("np.from_dlpack(t)", numpy_import),
    ]
    if torch is not None:
        rows.append(("torch.from_dlpack(t)", torch_import))
    gc.collect()
    print(f"DLPack export, Float32, {SMALL} vs {LARGE} elements (best per call)")
    print(f"{'call':40s} {'16 el (us)':>11s} {'16M el (us)':>12s} {'ratio':>7s}")
    for name, make in rows:
        t_small = best(make(small))
        t_large = best(make(large))
        print(f"{name:40s} {t_small * 1e6:11.3f} {t_large * 1e6:12.3f} {t_large / t_small:7.2f}")
    if torch is None:
        print("(PyTorch not installed: torch.from_dlpack skipped)")


if __name__ == "__main__":
    main()
