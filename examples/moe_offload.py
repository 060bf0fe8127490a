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
   squared error against a hidden teacher into the compact weights;
3. writes the updated experts back into the TiledEvictable (an SGD step),
   which marks their tiles dirty.

Tokens lie in a few random directions (a basis of ``--rank`` vectors), so
that each expert can learn its teacher's map on them from the few tokens it
is routed; the teacher is kept as its map on that basis (D x rank per
expert). A least-recently-used ``ResidencyPolicy`` keeps at most
``--resident`` experts in the primary tier: when a projection needs more,
it evicts the experts used longest ago (dirty ones are written back to the
file), and the memory of an evicted expert goes back to the system. The
experts' initial weights are written into the array one at a time, so the
whole model is never in memory at once: the process's peak resident memory
stays near its size after start-up plus the resident experts and one
batch's gathered experts, which it prints.

The same model with every weight in one CPU tensor is trained in a second
process on the same data (``--dense`` runs that model alone), and the
losses must agree.

Run: python examples/moe_offload.py [--steps N] [--experts E] [--dim D]
                                    [--resident R] [--quiet] [--dense]
"""

from __future__ import annotations

import argparse
import array
import json
import random
import resource
import subprocess
import sys
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


def experts_init(rng, experts, dim):
    """Each expert's initial weight in turn, a compact (dim, dim) array."""
    for _ in range(experts):
        yield array.array("f", (rng.gauss(0.0, 0.02) for _ in range(dim * dim)))


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def parse_args(argv=None):
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
    ap.add_argument("--dense", action="store_true", help="train the all-in-memory model alone")
    return ap.parse_args(argv)


def train(args):
    """Trains one model (the offloaded one, or with --dense the one in a CPU
    tensor); returns its losses, the policy (None for --dense) and the
    profiler."""
    E, D, B, K, R = args.experts, args.dim, args.tokens, args.top_k, args.rank
    rng = random.Random(0)
    policy = None
    if args.dense:
        start = array.array("f")
        for values in experts_init(rng, E, D):
            start.extend(values)
        home = F.tensor(start).carrier  # one bulk copy of the array's buffer
        del start
    else:
        # Expert e is slots [e*D*D, (e+1)*D*D) of the (D, D, E) array,
        # column-major. The primary starts as zeros nobody has touched (no
        # memory yet); each expert's weights are written into its tile and
        # the tile is evicted to the file at once.
        policy = LeastRecentlyUsed(args.resident, D * D * 4)
        home = TiledEvictable(
            sw.CPU(D * D * E),
            sw.FileBacked(dtype=sw.DType.Float32),
            (1, 1, E),
            (D, D, 1),
            residency_policy=policy,
        )
        policy.carrier = home
        for e, values in enumerate(experts_init(rng, E, D)):
            w0 = sw.Tensor(F.tensor(values).carrier, 0, layout(D, D))
            home.scatter(w0, sw.Tensor(home, e * D * D, layout(D, D)), layout(D, D))
            home.evict(TileSet([(0, 0, e)]))
        full = sw.Tensor(home, 0, layout(D, D, E))
    # Expert e's teacher as its map on the token basis, a (D, R) matrix at
    # slot e*R*D (matmul(a, b) multiplies a by b transposed).
    teach = F.tensor(array.array("f", (rng.gauss(0.0, 0.05) for _ in range(R * D * E)))).carrier
    basis = [[rng.gauss(0.0, 1.0 / D**0.5) for _ in range(D)] for _ in range(R)]

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
            if not args.dense:
                # The batch's experts, gathered (promoted from the file as
                # the policy plans), as a leaf whose gradient the step
                # computes.
                g = project(full, TileSelection([[0], [0], chosen])).wait()
            loss = 0.0
            for j, e in enumerate(chosen):
                # Expert e's weight as a leaf: its slice of the compact
                # gathered tensor, or of the one CPU tensor.
                w = (
                    expert_view(home, e)
                    if args.dense
                    else sw.Tensor(g.carrier, j * D * D, layout(D, D))
                )
                ts = tokens[e]
                xe = cpu_tensor([x[t * D + i] for i in range(D) for t in ts], len(ts), D)
                ze = cpu_tensor([z[t][k] for k in range(R) for t in ts], len(ts), R)
                out = sw.matmul(xe, w)
                with sw.no_grad():
                    target = sw.matmul(ze, sw.Tensor(teach, e * R * D, layout(D, R)))
                    diff = sw.sub(out, target)
                    scale = 1.0 / (B * K)  # the mean over token-expert pairs
                    sq = sw.einops.reduce(sw.elementwise_mul(diff, diff), "a b -> a")
                    loss += sum(sq.tolist()) * scale
                    cot = sw.mul(diff, 2.0 * scale)
                out.backward(cot)
                # SGD on the expert, written back where it lives.
                with sw.no_grad():
                    new = sw.sub(w, sw.mul(w.grad, args.lr))
                    home.scatter(new, expert_view(home, e), layout(D, D))
            # This batch's gathered experts go before the next ones come.
            g = w = None
            losses.append(loss)
            if not args.quiet and (step % max(1, args.steps // 10) == 0 or step == args.steps - 1):
                rate = (step + 1) / (time.perf_counter() - t0)
                print(
                    f"step {step:4d}  loss {loss:.6f}  "
                    f"resident {len(home.primary_tiles.coordinates):3d}/{E}  "
                    f"read {policy.read / 2**20:7.1f} MiB  "
                    f"written {policy.written / 2**20:6.1f} MiB  "
                    f"{rate:5.2f} steps/s"
                )
    return losses, policy, prof


def main():
    args = parse_args()
    if args.dense:
        losses, _, _ = train(args)
        print(json.dumps(losses))
        return
    E, D, B, K = args.experts, args.dim, args.tokens, args.top_k
    F.tensor(array.array("f", [0.0]))  # NumPy, which copies array buffers, loads
    start_mib = peak_mib()
    losses, policy, prof = train(args)
    peak = peak_mib()
    # The same model in one CPU tensor, in a process of its own (so that
    # its memory is not this one's), on the same data.
    argv = [sys.executable, __file__, "--dense", "--quiet"]
    for name in ("steps", "experts", "dim", "tokens", "top_k", "resident", "lr", "rank"):
        argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    run = subprocess.run(argv, capture_output=True, text=True, check=True)
    dense = json.loads(run.stdout.splitlines()[-1])
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, dense, strict=True))
    mib = D * D * 4 / 2**20
    print(f"first loss {losses[0]:.6f}, last loss {losses[-1]:.6f}")
    print(f"largest relative difference from the all-in-memory model: {worst:.1e}")
    print(f"most experts resident: {args.resident} of {E} allowed by the policy")
    print(
        f"peak resident memory of the process: {peak:.0f} MiB ({start_mib:.0f} MiB "
        f"at start-up; resident experts {args.resident * mib:.1f} MiB, one batch's "
        f"gathered experts at most {min(E, B * K) * mib:.1f} MiB; the whole model "
        f"{E * mib:.1f} MiB)"
    )
    if not args.quiet:
        print(prof.table())
    assert worst < 1e-4, worst
    assert losses[-1] < losses[0]


if __name__ == "__main__":
    main()
