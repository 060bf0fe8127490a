"""Training steps at the sizes users run, beside the same models in PyTorch.

Two models, float32, MSE loss, SGD (lr 0.01), a step being forward,
reading the loss as a Python float, zero_grad, backward and the optimizer
step in both frameworks:

* MLP 784-256-10 (Linear, ReLU, Linear), batch 128;
* one Linear 4096x4096, batch 256.

The floor the project tracks is 0.9x PyTorch's steps per second for both.
The two frameworks run alternately in one process, best of REPEATS runs of
STEPS steps each, with the thread counts each uses by default (both: all
cores). Timing never decides a test; this is a report.

Every Float32 tensor of ours is differentiable by default, as the
reference defines, so unless told otherwise our backward also computes
the gradients of the input batch and of the target (into their .grad),
which PyTorch skips for tensors without requires_grad: for the Linear
layer that is a third GEMM (G . W) beside the two PyTorch does. The main
column marks the batch and the target as constants
(``requires_grad_(False)``), which is PyTorch's default for data, so both
do the same work; the "differentiable data" column compares our default
with PyTorch computing the same gradients (requires_grad on both).

Measured on the 2-vCPU AVX-512 development machine, shared with other
work (best of several runs; ours/torch, then ours/torch doing the same
work):

    two threads   MLP 0.35x before, 0.74x / 0.93x after;
                  Linear 0.29x before, 0.80x / 1.07x after
    one thread    MLP 0.52-0.56x before, 0.79-0.81x / 1.01-1.03x after;
                  Linear 0.41-0.53x before, 0.71-0.80x / 1.04-1.09x after

A profile of our Linear step after: 77% of the samples in the GEMM
micro-kernel and 12% packing its operands; the step is the three GEMMs.
"""

from __future__ import annotations

import random
import time

import strideweave as sw
import strideweave.friendly as F
import strideweave.nn as nn

try:
    import torch
except ImportError:  # the report then has our column only
    torch = None

REPEATS = 5


class MLP(sw.Module):
    def __init__(self, sizes, rng):
        super().__init__()
        self.first = nn.Linear(sizes[0], sizes[1], rng=rng)
        self.act = nn.ReLU()
        self.second = nn.Linear(sizes[1], sizes[2], rng=rng)

    def forward(self, x):
        return self.second(self.act(self.first(x)))


def ours(model, batch, n_in, n_out, steps, constant_data=True):
    rng = random.Random(1)
    x = F.rand(batch, n_in, rng=rng)
    target = F.rand(batch, n_out, rng=rng)
    if constant_data:  # as PyTorch's data tensors are by default
        x.requires_grad_(False)
        target.requires_grad_(False)
    loss_fn = nn.MSELoss()
    opt = nn.SGD(model.parameters(), lr=0.01)

    def run():
        for _ in range(steps):
            loss = loss_fn(model(x), target)
            F.item(loss)
            opt.zero_grad()
            loss.backward()
            opt.step()

    return run


def theirs(model, batch, n_in, n_out, steps, same_work=False):
    x = torch.rand(batch, n_in, requires_grad=same_work)
    target = torch.rand(batch, n_out, requires_grad=same_work)
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def run():
        for _ in range(steps):
            loss = loss_fn(model(x), target)
            loss.item()
            opt.zero_grad()
            loss.backward()
            opt.step()

    return run


def best(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def row(name, make_ours, make_theirs, steps):
    run_ours, run_diff = make_ours(True), make_ours(False)
    if torch is None:
        run_ours()
        t_ours = best(run_ours) / steps
        print(f"{name:28} ours {t_ours * 1e3:8.3f} ms/step")
        return
    run_theirs, run_same = make_theirs(False), make_theirs(True)
    for run in (run_ours, run_theirs, run_diff, run_same):  # warm up all
        run()
    # Alternate the candidates so that a disturbance hits all alike.
    t_ours = t_theirs = t_diff = t_same = float("inf")
    for _ in range(REPEATS):
        t_ours = min(t_ours, best(run_ours, 1) / steps)
        t_theirs = min(t_theirs, best(run_theirs, 1) / steps)
        t_diff = min(t_diff, best(run_diff, 1) / steps)
        t_same = min(t_same, best(run_same, 1) / steps)
    print(
        f"{name:28} ours {t_ours * 1e3:8.3f} ms/step  torch {t_theirs * 1e3:8.3f} ms/step"
        f"  ours/torch {t_theirs / t_ours:5.2f}x (floor 0.9x)"
        f"  differentiable data: ours {t_diff * 1e3:8.3f}, torch {t_same * 1e3:8.3f} ms/step,"
        f" {t_same / t_diff:5.2f}x"
    )


def main():
    print(f"StrideWeave training steps, {sw.get_num_threads()} threads", end="")
    print(f"; PyTorch {torch.__version__}, {torch.get_num_threads()} threads" if torch else "")
    rng = random.Random(0)
    row(
        "MLP 784-256-10, batch 128",
        lambda constant: ours(MLP((784, 256, 10), rng), 128, 784, 10, 20, constant),
        lambda same: theirs(
            torch.nn.Sequential(
                torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
            ),
            128,
            784,
            10,
            20,
            same,
        ),
        20,
    )
    row(
        "Linear 4096x4096, batch 256",
        lambda constant: ours(nn.Linear(4096, 4096, rng=rng), 256, 4096, 4096, 3, constant),
        lambda same: theirs(torch.nn.Linear(4096, 4096), 256, 4096, 4096, 3, same),
        3,
    )


if __name__ == "__main__":
    main()
