"""Benchmark: prefetching experts with ``project`` against blocking promotion.

A mixture-of-experts layer keeps 64 experts of 256 x 256 Float32 (16 MiB)
in a TiledEvictable over a CPU primary and a FileBacked secondary, one
tile per expert. Each batch routes to 4 experts and multiplies a
(tokens, 256) input by each, 1024 tokens by default: then a batch's
compute (about 3.3 ms on two cores) is comparable to reading its experts
from the disk (about 2.8 ms), which is what prefetching can hide. With 256
tokens the compute is 0.8 ms and the reads dominate, so at most about
0.8 ms of each batch can be hidden. Two loops over the same batches,
alternating:

* blocking: promote the batch's experts, gather them with ``project`` and
  wait, compute, evict them;
* prefetch: the batch's gather was started one batch earlier (``project``
  returns at once and gathers in the background), so the loop starts the
  next batch's gather, computes the current one, and evicts the experts
  the next batch does not need while that gather runs.

With ``--cold`` the file's pages are dropped from the page cache before
every batch (``posix_fadvise(DONTNEED)``), so each promotion reads the
disk, as when the experts do not fit in memory; without it the file tier
is the page cache. The ratio is blocking time over prefetch time (goal:
at least 1.5 when tiles come from the file tier). Timing never decides a
test; this is not run by the test suite.

Usage: python bench/bench_tiled.py [--cold] [--tokens N] [batches]
(defaults: 40 batches of 1024 tokens)
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

EXPERTS, D, TOKENS, K = 64, 256, 1024, 4


def layout(*shape):
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(strides))


def build(directory):
    size = D * D * EXPERTS
    rng = random.Random(1)
    values = [rng.uniform(-0.01, 0.01) for _ in range(D * D)] * EXPERTS
    secondary = sw.FileBacked(os.path.join(directory, "experts.f32"), dtype=sw.DType.Float32)
    weights = TiledEvictable(sw.CPU(size).new_like(values), secondary, (1, 1, EXPERTS), (D, D, 1))
    weights.evict(weights.valid_tiles)
    return weights, secondary, sw.Tensor(weights, 0, layout(D, D, EXPERTS))


def drop_cache(secondary):
    fd = os.open(secondary.path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def compute(gathered, x, n):
    out = None
    for j in range(n):
        w = sw.Tensor(gathered.carrier, j * D * D, layout(D, D))
        y = sw.matmul(x, w)
        out = y if out is None else sw.add(out, y)
    return out


def tiles(experts):
    return TileSet((0, 0, e) for e in experts)


def blocking(weights, secondary, full, x, routes, cold):
    start = time.perf_counter()
    for experts in routes:
        if cold:
            drop_cache(secondary)
        weights.promote(tiles(experts))
        g = project(full, TileSelection([[0], [0], experts])).wait()
        compute(g, x, len(experts))
        weights.evict(tiles(experts))
    return time.perf_counter() - start


def prefetch(weights, secondary, full, x, routes, cold):
    start = time.perf_counter()
    if cold:
        drop_cache(secondary)
    pending = project(full, TileSelection([[0], [0], routes[0]]))
    for b, experts in enumerate(routes):
        g = pending.wait()
        nxt = routes[b + 1] if b + 1 < len(routes) else None
        if nxt is not None:
            if cold:
                drop_cache(secondary)
            pending = project(full, TileSelection([[0], [0], nxt]))
        compute(g, x, len(experts))
        # Other tiles than the gather in flight: evicted while it runs.
        done = [e for e in experts if nxt is None or e not in nxt]
        if done:
            weights.evict(tiles(done))
    return time.perf_counter() - start


def main():
    argv = sys.argv[1:]
    cold = "--cold" in argv
    argv = [a for a in argv if a != "--cold"]
    tokens = TOKENS
    if "--tokens" in argv:
        at = argv.index("--tokens")
        tokens = int(argv[at + 1])
        del argv[at : at + 2]
    args = argv
    batches = int(args[0]) if args else 40
    rng = random.Random(2)
    routes = [sorted(rng.sample(range(EXPERTS), K)) for _ in range(batches)]
    directory = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(__file__)))
    weights, secondary, full = build(directory)
    x = sw.Tensor(sw.CPU(tokens * D).new_like([0.5] * (tokens * D)), 0, layout(tokens, D))
    times = {"blocking": [], "prefetch": []}
    for _ in range(3):
        for name, fn in (("blocking", blocking), ("prefetch", prefetch)):
            times[name].append(fn(weights, secondary, full, x, routes, cold))
    tb, tp = min(times["blocking"]), min(times["prefetch"])
    tier = "disk (page cache dropped)" if cold else "page cache"
    print(
        f"{batches} batches of {tokens} tokens, {K} experts of {D}x{D} each, "
        f"from the file tier via the {tier}"
    )
    print(f"blocking {tb / batches * 1e3:.2f} ms/batch, prefetch {tp / batches * 1e3:.2f} ms/batch")
    print(f"speed-up of prefetching: {tb / tp:.2f}x")
    weights.release()
    shutil.rmtree(directory)


if __name__ == "__main__":
    main()
