"""Data-parallel training of the sin(x) MLP on several processes with MPI.

The task, model and initialisation of examples/train_mlp_cpu.py: 64 points,
Linear(1, 16) -> Tanh -> Linear(16, 1), SGD. Each process trains on its
shard of the points (strideweave.distributed.shard); DistributedDataParallel
averages the gradients after every backward pass, so every process takes
the same step, the one a single process would take on the whole batch when
the shards have equal sizes. The loss printed is the mean over processes.

Run on one machine with two processes (add --oversubscribe where there are
fewer cores than processes; as root, Open MPI also wants
--allow-run-as-root):

    mpirun -n 2 python examples/train_ddp.py

On a cluster, the same program with a host file: mpirun -n 8 --hostfile hosts
python examples/train_ddp.py. Alone (python examples/train_ddp.py) it is a job
of one process.

Usage: python examples/train_ddp.py [--epochs N] [--lr LR] [--log-every N]
"""

from __future__ import annotations

import argparse
import math
import random
import time

import strideweave as sw
import strideweave.distributed as dist
import strideweave.friendly as F
import strideweave.nn as nn

POINTS = 64


class MLP(sw.Module):
    """Linear(1, 16) -> Tanh -> Linear(16, 1), both layers from one rng."""

    def __init__(self) -> None:
        super().__init__()
        rng = random.Random(0)
        self.hidden = nn.Linear(1, 16, rng=rng)
        self.activation = nn.Tanh()
        self.output = nn.Linear(16, 1, rng=rng)

    def forward(self, x: sw.Tensor) -> sw.Tensor:
        return self.output(self.activation(self.hidden(x)))


def main(epochs: int, lr: float, log_every: int) -> float:
    dist.init()
    rank, world = dist.rank(), dist.world_size()
    xs = [-math.pi + 2 * math.pi * i / (POINTS - 1) for i in range(POINTS)]
    mine = dist.shard(xs)
    x = F.tensor([[v] for v in mine])
    target = F.tensor([[math.sin(v)] for v in mine])
    x.requires_grad_(False)
    target.requires_grad_(False)

    model = dist.DistributedDataParallel(MLP())
    opt = nn.SGD(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    mean_loss = F.tensor([0.0])
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        opt.zero_grad()
        loss = loss_fn(model(x), target)
        loss.backward()  # gradients averaged over the processes here
        opt.step()
        if epoch % log_every == 0 or epoch == epochs:
            mean_loss.set(0, loss.item())
            dist.all_reduce(mean_loss, "mean")
            if rank == 0:
                print(f"epoch {epoch:5d}  loss {mean_loss[0]:.6f}", flush=True)
    if rank == 0:
        elapsed = time.perf_counter() - start
        print(
            f"final loss {mean_loss[0]:.6f} after {epochs} epochs on {world} "
            f"process(es) in {elapsed:.2f} s"
        )
    return float(mean_loss[0])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--log-every", type=int, default=200)
    args = parser.parse_args()
    main(args.epochs, args.lr, max(1, args.log_every))
