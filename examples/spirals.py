"""Classify two interleaved spirals with a small MLP and cross-entropy.

The data: N points per class on two spirals that wind around each other,
r = t, angle = t + class * pi for t in [0.5, 3.5 * pi), with a little noise
from random.Random(0). The model: Linear(2, 32) -> Tanh -> Linear(32, 32)
-> Tanh -> Linear(32, 2), trained with nn.CrossEntropyLoss and Adam on the
full batch. Progress lines show the loss and the training accuracy; the
last line is the final accuracy.

Usage: python examples/spirals.py [EPOCHS] [--points N] [--lr LR] [--log-every K]
"""

from __future__ import annotations

import argparse
import math
import random

import strideweave as sw
import strideweave.friendly as F
import strideweave.nn as nn


class Classifier(sw.Module):
    """Two hidden Tanh layers of ``width`` and a two-class output."""

    def __init__(self, width: int = 32, rng: random.Random | None = None) -> None:
        super().__init__()
        rng = random.Random(1) if rng is None else rng
        self.layer1 = nn.Linear(2, width, rng=rng)
        self.act1 = nn.Tanh()
        self.layer2 = nn.Linear(width, width, rng=rng)
        self.act2 = nn.Tanh()
        self.out = nn.Linear(width, 2, rng=rng)

    def forward(self, x: sw.Tensor) -> sw.Tensor:
        return self.out(self.act2(self.layer2(self.act1(self.layer1(x)))))


def make_data(points: int = 200, seed: int = 0) -> tuple[sw.Tensor, sw.Tensor, list[int]]:
    """The [2*points, 2] inputs, the class index per row, and the labels."""
    rng = random.Random(seed)
    rows: list[list[float]] = []
    labels: list[int] = []
    for label in (0, 1):
        for i in range(points):
            t = 0.5 + 3.5 * math.pi * i / points
            angle = t + label * math.pi
            r = t / (3.5 * math.pi)
            rows.append(
                [r * math.cos(angle) + rng.gauss(0, 0.01), r * math.sin(angle) + rng.gauss(0, 0.01)]
            )
            labels.append(label)
    return F.tensor(rows), F.tensor([float(v) for v in labels]), labels


def accuracy(model: Classifier, x: sw.Tensor, labels: list[int]) -> float:
    """The fraction of rows whose larger logit is the label."""
    with sw.no_grad():
        logits = model(x).tolist()
    right = sum(
        1 for row, label in zip(logits, labels, strict=True) if (row[1] > row[0]) == (label == 1)
    )
    return right / len(labels)


def train(
    epochs: int = 600, points: int = 200, lr: float = 0.01, log_every: int | None = 100
) -> tuple[list[float], float]:
    """Trains; returns the loss of every epoch and the final accuracy."""
    x, target, labels = make_data(points)
    model = Classifier()
    loss_fn = nn.CrossEntropyLoss()
    opt = nn.Adam(model.parameters(), lr=lr)
    losses: list[float] = []
    for epoch in range(1, epochs + 1):
        loss = loss_fn(model(x), target)
        losses.append(F.item(loss))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log_every is not None and (epoch % log_every == 0 or epoch == epochs):
            acc = accuracy(model, x, labels)
            print(f"epoch {epoch:5d}  loss {losses[-1]:.4f}  accuracy {acc:6.1%}", flush=True)
    final = accuracy(model, x, labels)
    if log_every is not None:
        print(f"final accuracy {final:.1%} after {epochs} epochs")
    return losses, final


def main(argv: list[str] | None = None) -> float:
    """Parses the command line, trains, and returns the final accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("epochs", nargs="?", type=int, default=600)
    parser.add_argument("--points", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--log-every", type=int, default=100)
    args = parser.parse_args(argv)
    _, final = train(args.epochs, args.points, args.lr, args.log_every)
    return final


if __name__ == "__main__":
    main()
