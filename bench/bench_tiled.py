"""Benchmark: prefetching experts with ``project`` against blocking promotion.

A mixture-of-experts layer keeps 64 experts of 256 x 256 Float32 (16 MiB)
in a TiledEvictable over a CPU primary and a FileBacked secondary, one
tile per expert. Each batch routes to 4 experts and multiplies a
(tokens, 256) input by each. Two loops over the same batches,
alternating:

* blocking: promote the batch's experts, gather them with ``project`` and
  wait, compute, evict them;
* prefetch: the batch's gather was started one batch earlier (``project``
  returns at once and gathers in the background), so the loop starts the
  next batch's gather, computes the current one, and evicts the experts
  the next batch does not need while that gather runs.

Prefetching can hide at most the shorter of a batch's compute and its
transfer, so its speed-up is largest where the two are equal: the
benchmark runs several batch sizes (256 to 2048 tokens; a batch's compute
grows with its tokens, its transfer does not) and prints the speed-up of
each, or of one size with ``--tokens N``.

With ``--cold`` the file's pages are dropped from the page cache before
every batch (``posix_fadvise(DONTNEED)``), so each promotion reads the
disk, as when the experts do not fit in memory; without it the file tier
is the page cache. Dropping the pages stands in for memory that never held
them, so its own time is not counted in either loop. The ratio is
blocking time over prefetch time (goal: at least 1.5 when tiles come from
the file tier). Timing never decides a test; this is not run by the test
suite.

With ``--device opencl`` the primary tier, the input and the computation
are on the default OpenCL device (experts promoted from the file onto the
device, gathered by device copies, multiplied by OpenCL kernels; each
batch waits for its result). On PoCL the device is this machine's cores.

The transfer is not free for the processor: reading a tile from the file
and mapping the primary's pages under it (its memory went back to the
system when it was evicted) takes about 0.9 ms of processor time per MiB
in the kernel. When the computation runs on every core, the background
gather takes that time from it; ``--threads 1`` computes on one thread
and leaves the other cores to the transfers.

Usage: python bench/bench_tiled.py [--cold] [--tokens N] [--threads T]
[--device opencl] [batches] (defaults: 40 batches at each of 256, 512, 768, 1024 and 2048
tokens, on the default number of threads)
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time

import strideweave as sw
from strideweave.carriers.tiled_evictable import TiledEvictable, TileSelection, TileSet
from strideweave.carriers.tiled_evictable.projection import project

EXPERTS, D, K = 64, 256, 4
TOKENS = (256, 512, 768, 1024, 2048)


def layout(*shape):
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(strides))


def build(directory, device):
    rng = random.Random(1)
    values = [rng.uniform(-0.01, 0.01) for _ in range(D * D)] * EXPERTS
    secondary = sw.FileBacked(os.path.join(directory, "experts.f32"), dtype=sw.DType.Float32)
    weights = TiledEvictable(device(0).new_like(values), secondary, (1, 1, EXPERTS), (D, D, 1))
    weights.evict(weights.valid_tiles)
    return weights, secondary, sw.Tensor(weights, 0, layout(D, D, EXPERTS))


def drop_cache(secondary):
    """Drops the file's pages from the page cache; returns the seconds it
    took, which the loops do not count."""
    start = time.perf_counter()
    fd = os.open(secondary.path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return time.perf_counter() - start


def compute(gathered, x, n):
    out = None
    for j in range(n):
        w = sw.Tensor(gathered.carrier, j * D * D, layout(D, D))
        y = sw.matmul(x, w)
        out = y if out is None else sw.add(out, y)
    wait = getattr(out.carrier, "synchronize", None)
    if wait is not None:  # a device computes asynchronously
        wait()
    return out


def tiles(experts):
    return TileSet((0, 0, e) for e in experts)


def blocking(weights, secondary, full, x, routes, cold):
    start, dropping = time.perf_counter(), 0.0
    for experts in routes:
        if cold:
            dropping += drop_cache(secondary)
        weights.promote(tiles(experts))
        g = project(full, TileSelection([[0], [0], experts])).wait()
        compute(g, x, len(experts))
        weights.evict(tiles(experts))
    return time.perf_counter() - start - dropping


def prefetch(weights, secondary, full, x, routes, cold):
    start, dropping = time.perf_counter(), 0.0
    if cold:
        dropping += drop_cache(secondary)
    pending = project(full, TileSelection([[0], [0], routes[0]]))
    for b, experts in enumerate(routes):
        g = pending.wait()
        nxt = routes[b + 1] if b + 1 < len(routes) else None
        if nxt is not None:
            if cold:
                dropping += drop_cache(secondary)
            pending = project(full, TileSelection([[0], [0], nxt]))
        compute(g, x, len(experts))
        # Other tiles than the gather in flight: evicted while it runs.
        done = [e for e in experts if nxt is None or e not in nxt]
        if done:
            weights.evict(tiles(done))
    return time.perf_counter() - start - dropping


def main():
    argv = sys.argv[1:]
    if "--threads" in argv:
        at = argv.index("--threads")
        sw.set_num_threads(int(argv[at + 1]))
        del argv[at : at + 2]
    cold = "--cold" in argv
    argv = [a for a in argv if a != "--cold"]
    sizes = TOKENS
    if "--tokens" in argv:
        at = argv.index("--tokens")
        sizes = (int(argv[at + 1]),)
        del argv[at : at + 2]
    device = sw.CPU
    if "--device" in argv:
        at = argv.index("--device")
        if argv[at + 1] != "opencl":
            sys.exit("--device takes opencl")
        device = sw.OpenCL
        del argv[at : at + 2]
    batches = int(argv[0]) if argv else 40
    rng = random.Random(2)
    routes = [sorted(rng.sample(range(EXPERTS), K)) for _ in range(batches)]
    directory = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(__file__)))
    weights, secondary, full = build(directory, device)
    tier = "disk (page cache dropped)" if cold else "page cache"
    threads = sw.get_num_threads()
    where = "OpenCL" if device is sw.OpenCL else f"{threads} thread{'' if threads == 1 else 's'}"
    print(
        f"{batches} batches, {K} experts of {D}x{D} each, from the file tier via the {tier}, "
        f"computing on {where}"
    )
    for tokens in sizes:
        x = sw.Tensor(device(0).new_like([0.5] * (tokens * D)), 0, layout(tokens, D))
        times = {"blocking": [], "prefetch": []}
        for _ in range(5):
            for name, fn in (("blocking", blocking), ("prefetch", prefetch)):
                times[name].append(fn(weights, secondary, full, x, routes, cold))
        tb, tp = min(times["blocking"]), min(times["prefetch"])
        print(
            f"{tokens:5d} tokens: blocking {tb / batches * 1e3:6.2f} ms/batch, "
            f"prefetch {tp / batches * 1e3:6.2f} ms/batch, speed-up {tb / tp:.2f}x"
        )
    weights.release()
    shutil.rmtree(directory)


if __name__ == "__main__":
    main()
