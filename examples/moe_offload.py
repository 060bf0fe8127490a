"""A mixture-of-experts layer whose experts live in a file.

The weights of eight experts, each a 32 x 64 matrix, are one TiledEvictable
array of shape (32, 64, 8): one tile per expert, over a CPU primary tier
(where experts are computed on) and a FileBacked secondary tier (where they
are kept). A router picks two experts for each of two tokens a batch; for each batch the layer
promotes the chosen experts, gathers them into one compact CPU tensor with
``project``, runs each expert's tokens through it, and evicts the experts the
next batch does not need, while the next batch's experts are already being
promoted in the background. At most four experts are resident at any time.

The outputs are checked against the same layer computed with every expert
in memory.

Run: python examples/moe_offload.py
"""

from __future__ import annotations

import random

import strideweave as sw
from strideweave.carriers.tiled_evictable import TiledEvictable, TileSelection, TileSet
from strideweave.carriers.tiled_evictable.projection import project

EXPERTS, D_OUT, D_IN, TOKENS, TOP_K, BATCHES = 8, 32, 64, 2, 2, 6


def layout(*shape):
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(strides))


def cpu_tensor(values, *shape):
    return sw.Tensor(sw.CPU(len(values)).new_like(values), 0, layout(*shape))


def main():
    rng = random.Random(7)
    size = D_OUT * D_IN * EXPERTS
    w = [rng.gauss(0.0, 0.1) for _ in range(size)]
    # Expert e's weight is slots [e * D_OUT * D_IN, (e + 1) * D_OUT * D_IN)
    # of the column-major (D_OUT, D_IN, EXPERTS) array.
    weights = TiledEvictable(
        sw.CPU(size).new_like(w),
        sw.FileBacked(dtype=sw.DType.Float32),
        (1, 1, EXPERTS),
        (D_OUT, D_IN, 1),
    )
    weights.evict(weights.valid_tiles)  # every expert now lives in the file
    full = sw.Tensor(weights, 0, layout(D_OUT, D_IN, EXPERTS))

    def tile(e):
        return (0, 0, e)

    batches = []
    for _ in range(BATCHES):
        x = [rng.uniform(-1.0, 1.0) for _ in range(TOKENS * D_IN)]
        route = [rng.sample(range(EXPERTS), TOP_K) for _ in range(TOKENS)]
        batches.append((x, route))

    def experts_of(b):
        return sorted({e for r in batches[b][1] for e in r})

    pending = weights.promote_async(TileSet(tile(e) for e in experts_of(0)))
    worst, most_resident = 0.0, 0
    for b, (x, route) in enumerate(batches):
        chosen = experts_of(b)
        pending.wait()
        gathered = project(full, TileSelection([[0], [0], chosen])).wait()
        resident = len(weights.primary_tiles.coordinates)
        most_resident = max(most_resident, resident)
        # Evict what the next batch does not need, then start promoting it.
        nxt = set(experts_of(b + 1)) if b + 1 < BATCHES else set()
        done = [tile(e) for e in chosen if e not in nxt]
        if done:
            weights.evict(TileSet(done))
        missing = [tile(e) for e in nxt if weights.tile_state(tile(e)).location != "primary"]
        pending = weights.promote_async(TileSet(missing))
        # Each expert's tokens through its compact weight (a view of the
        # gathered tensor: expert j at offset j * D_OUT * D_IN).
        out = [[0.0] * D_OUT for _ in range(TOKENS)]
        for j, e in enumerate(chosen):
            tokens = [t for t in range(TOKENS) if e in route[t]]
            xs = [x[t * D_IN + i] for i in range(D_IN) for t in tokens]
            xe = cpu_tensor(xs, len(tokens), D_IN)
            we = sw.Tensor(gathered.carrier, j * D_OUT * D_IN, layout(D_OUT, D_IN))
            ye = sw.matmul(xe, we).tolist()
            for row, t in zip(ye, tokens, strict=True):
                for o in range(D_OUT):
                    out[t][o] += row[o] / TOP_K
        # The reference: every expert in memory.
        for t in range(TOKENS):
            for o in range(D_OUT):
                ref = 0.0
                for e in route[t]:
                    base = e * D_OUT * D_IN
                    ref += sum(w[base + o + D_OUT * i] * x[t * D_IN + i] for i in range(D_IN))
                worst = max(worst, abs(out[t][o] - ref / TOP_K))
        print(f"batch {b}: experts {chosen}, {resident} resident while gathered")
    pending.wait()
    print(f"most experts resident at once: {most_resident} of {EXPERTS}")
    print(f"largest difference from the all-in-memory layer: {worst:.1e}")
    assert worst < 1e-4


if __name__ == "__main__":
    main()
