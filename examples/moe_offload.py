"""Training a mixture-of-experts layer whose experts live in a file.

The weights of the experts (by default 64 experts of 256 x 256 Float32,
16 MiB) are one TiledEvictable array of shape (D, D, experts), one tile per
expert, over a CPU primary tier (where experts are computed on) and a
FileBacked secondary tier (where they are kept). A router sends each token
of a batch to its top-k experts. Each step:

1. gathers the batch's experts into one compact CPU tensor with
   ``project`` (the tiles are promoted from the file first, as the
   residency policy plans);
2. runs each expert's tokens through its weight and back-propagates the
   squared error against a hidden teacher layer into the compact weights;
3. writes the updated experts back into the TiledEvictable (an SGD step),
   which marks their tiles dirty.

Tokens lie in a few random directions, so that each expert can learn its
teacher's map on them from the few tokens it is routed. A
least-recently-used ``ResidencyPolicy`` keeps at most ``--resident``
experts in the primary tier: when a projection needs more, it evicts the
experts used longest ago (dirty ones are written back to the file). The
same model with every weight in one CPU tensor is trained beside it, and
the losses must agree.

Run: python examples/moe_offload.py [--steps N] [--experts E] [--dim D]
                                    [--resident R] [--quiet]
"""

from __future__ import annotations

import argparse
import array
import random
import resource
import time

import strideweave as sw
import strideweave.friendly as F
from strideweave.carriers.tiled_evictable import (
    ResidencyPlan,
    TiledEvictable,
    TileSelection,
    TileSet,
)
from strideweave.carriers.tiled_evictable.projection import project


def layout(*shape):
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return sw.Layout(sw.Shape(list(shape)), sw.Stride(strides))


def cpu_tensor(values, *shape):
    return sw.Tensor(sw.CPU(len(values)).new_like(values), 0, layout(*shape))


class LeastRecentlyUsed:
    """Keeps at most `capacity` tiles primary, evicting the least recently
    required ones; counts the bytes read from and written to the file."""

    def __init__(self, capacity, tile_bytes):
        self.capacity, self.tile_bytes = capacity, tile_bytes
        self.carrier = None
        self.clock, self.used = 0, {}
        self.read = self.written = 0

    def plan(self, required, purpose):
        self.clock += 1
        for c in required.coordinates:
            self.used[c] = self.clock
        resident = set(self.carrier.primary_tiles.coordinates)
        need = set(required.coordinates)
        room = self.capacity - len(need)
        victims = sorted(resident - need, key=lambda c: self.used.get(c, 0))
        evict = victims[: max(0, len(victims) - room)]
        self.read += len(need - resident) * self.tile_bytes
        self.written += sum(self.carrier.tile_state(c).dirty for c in evict) * self.tile_bytes
        return ResidencyPlan(promote=required, evict=TileSet(evict))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--resident", type=int, default=24)
    ap.add_argument("--lr", type=float, default=4.0)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    E, D, B, K = args.experts, args.dim, args.tokens, args.top_k
    rng = random.Random(0)
    # Values made one at a time into compact arrays: a list of 4M Python
    # floats would take far more memory than the weights.
    start_w = array.array("f", (rng.gauss(0.0, 0.02) for _ in range(D * D * E)))
    teacher = array.array("f", (rng.gauss(0.0, 0.05) for _ in range(D * D * E)))
    # Tokens lie in a few directions, so that an expert can learn its
    # teacher's map on them from the few tokens it is routed.
    basis = [[rng.gauss(0.0, 1.0 / D**0.5) for _ in range(D)] for _ in range(args.rank)]
    # Expert e is slots [e*D*D, (e+1)*D*D) of the (D, D, E) array, column-major.
    policy = LeastRecentlyUsed(args.resident, D * D * 4)
    weights = TiledEvictable(
        F.tensor(start_w).carrier,  # one bulk copy of the array's buffer
        sw.FileBacked(dtype=sw.DType.Float32),
        (1, 1, E),
        (D, D, 1),
        residency_policy=policy,
    )
    policy.carrier = weights
    weights.evict(weights.valid_tiles)  # every expert now lives in the file
    full = sw.Tensor(weights, 0, layout(D, D, E))
    # The same model in one CPU tensor.
    dense = F.tensor(start_w).carrier
    teach = F.tensor(teacher).carrier

    def expert_view(carrier, e):
        return sw.Tensor(carrier, e * D * D, layout(D, D))

    t0 = time.perf_counter()
    losses = []
    with sw.profile() as prof:
        for step in range(args.steps):
            z = [[rng.uniform(-1.0, 1.0) for _ in basis] for _ in range(B)]
            x = [
                sum(zk * b[i] for zk, b in zip(zt, basis, strict=True))
                for zt in z
                for i in range(D)
            ]
            routes = [rng.sample(range(E), K) for _ in range(B)]
            chosen = sorted({e for r in routes for e in r})
            tokens = {e: [t for t in range(B) if e in routes[t]] for e in chosen}
            # The batch's experts, gathered (promoted from the file as the
            # policy plans), as a leaf whose gradient the step computes.
            g = project(full, TileSelection([[0], [0], chosen])).wait()
            loss = [0.0, 0.0]
            for model in (0, 1):
                for j, e in enumerate(chosen):
                    # Expert e's weight as a leaf: its slice of the compact
                    # gathered tensor, or of the one CPU tensor.
                    w = (
                        sw.Tensor(g.carrier, j * D * D, layout(D, D))
                        if model == 0
                        else expert_view(dense, e)
                    )
                    ts = tokens[e]
                    xe = cpu_tensor([x[t * D + i] for i in range(D) for t in ts], len(ts), D)
                    out = sw.matmul(xe, w)
                    with sw.no_grad():
                        target = sw.matmul(xe, expert_view(teach, e))
                        diff = sw.sub(out, target)
                        scale = 1.0 / (B * K)  # the mean over token-expert pairs
                        sq = sw.einops.reduce(sw.elementwise_mul(diff, diff), "a b -> a")
                        loss[model] += sum(sq.tolist()) * scale
                        cot = sw.mul(diff, 2.0 * scale)
                    out.backward(cot)
                    # SGD on the expert, written back where it lives.
                    with sw.no_grad():
                        new = sw.sub(w, sw.mul(w.grad, args.lr))
                        home = weights if model == 0 else dense
                        home.scatter(new, expert_view(home, e), layout(D, D))
            losses.append(loss)
            if not args.quiet and (step % max(1, args.steps // 10) == 0 or step == args.steps - 1):
                rate = (step + 1) / (time.perf_counter() - t0)
                print(
                    f"step {step:4d}  loss {loss[0]:.6f} (all in memory {loss[1]:.6f})  "
                    f"resident {len(weights.primary_tiles.coordinates):3d}/{E}  "
                    f"read {policy.read / 2**20:7.1f} MiB  "
                    f"written {policy.written / 2**20:6.1f} MiB  "
                    f"{rate:5.2f} steps/s"
                )
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in losses)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"first loss {losses[0][0]:.6f}, last loss {losses[-1][0]:.6f}")
    print(f"largest relative difference from the all-in-memory model: {worst:.1e}")
    print(f"most experts resident: {args.resident} of {E} allowed by the policy")
    print(f"peak resident memory of the process: {peak:.0f} MiB")
    if not args.quiet:
        print(prof.table())
    assert worst < 1e-4, worst
    assert losses[-1][0] < losses[0][0]


if __name__ == "__main__":
    main()
