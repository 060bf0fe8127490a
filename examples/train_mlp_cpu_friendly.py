"""Train a small MLP on sin(x) with the friendly helpers and strideweave.nn.

The task: 64 points x_i = -pi + 2*pi*i/63 with targets sin(x_i), fitted by
Linear(1, 16) -> Tanh -> Linear(16, 1) under mean squared error and plain
SGD, full batch, weights drawn from random.Random(0). The same model, data
and loop built from the raw primitives is examples/train_mlp_cpu.py; both
give exactly the same losses, and so does the C program examples/train_mlp.c.

Usage: python examples/train_mlp_cpu_friendly.py [EPOCHS] [--lr LR] [--log-every N]
"""

from __future__ import annotations

import argparse
import math
import random
import time

import strideweave as sw
import strideweave.friendly as F
import strideweave.nn as nn

POINTS = 64


class MLP(sw.Module):
    """Linear(1, 16) -> Tanh -> Linear(16, 1), both layers from one rng."""

    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__()
        rng = random.Random(0) if rng is None else rng
        self.hidden = nn.Linear(1, 16, rng=rng)
        self.activation = nn.Tanh()
        self.output = nn.Linear(16, 1, rng=rng)

    def forward(self, x: sw.Tensor) -> sw.Tensor:
        return self.output(self.activation(self.hidden(x)))


def make_data() -> tuple[sw.Tensor, sw.Tensor]:
    """The inputs and targets as [64, 1] column-major CPU tensors."""
    xs = [-math.pi + 2 * math.pi * i / (POINTS - 1) for i in range(POINTS)]
    x = F.tensor([[v] for v in xs])
    target = F.tensor([[math.sin(v)] for v in xs])
    return x, target


def train(epochs: int = 2000, lr: float = 0.05, log_every: int | None = 200) -> list[float]:
    """Runs the training loop and returns the loss of every epoch."""
    x, target = make_data()
    model = MLP()
    loss_fn = nn.MSELoss()
    opt = nn.SGD(model.parameters(), lr=lr)
    losses: list[float] = []
    start = last = time.perf_counter()
    last_epoch = 0
    for epoch in range(1, epochs + 1):
        loss = loss_fn(model(x), target)
        losses.append(F.item(loss))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log_every is not None and (epoch % log_every == 0 or epoch == epochs):
            now = time.perf_counter()
            rate = (epoch - last_epoch) / max(now - last, 1e-9)
            print(f"epoch {epoch:5d}  loss {losses[-1]:.6f}  {rate:8.0f} steps/s", flush=True)
            last, last_epoch = now, epoch
    if log_every is not None and epochs > 0:
        elapsed = time.perf_counter() - start
        print(f"final loss {losses[-1]:.6f} after {epochs} epochs in {elapsed:.2f} s")
    return losses


def main(epochs: int = 2000, lr: float = 0.05, log_every: int | None = 200) -> float:
    """Trains the model and returns the final loss."""
    losses = train(epochs, lr, log_every)
    return losses[-1] if losses else math.nan


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("epochs", nargs="?", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--log-every", type=int, default=200)
    args = parser.parse_args()
    main(args.epochs, args.lr, args.log_every if args.log_every > 0 else None)
