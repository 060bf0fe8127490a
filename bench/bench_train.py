"""Training-step speed of the sin(x) MLP beside the same model in PyTorch.

The model, data and loop of examples/train_mlp_cpu_friendly.py
(Linear(1, 16) -> Tanh -> Linear(16, 1), 64 points, full batch, float32,
MSE loss, SGD with lr 0.05), timed step by step in one process next to the
same model written with torch.nn. A step is forward, reading the loss as a
Python float, zero_grad, backward and the optimizer step, in both. At this
size per-operation overhead dominates, so the ratio measures the cost of the
Python layers and the binding rather than the kernels. The goal is at least
1.0x PyTorch's steps per second.

With the C program built (build/bench/examples/train_mlp, which ``make
bench`` builds with the release options), its steps per second are reported
too.

Timing never decides a test; this is a report.
"""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = 500
REPEATS = 7


def load_example():
    path = ROOT / "examples" / "train_mlp_cpu_friendly.py"
    spec = importlib.util.spec_from_file_location("train_mlp_cpu_friendly", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def strideweave_runner():
    import strideweave.friendly as F
    import strideweave.nn as nn

    example = load_example()
    x, target = example.make_data()
    model = example.MLP()
    loss_fn = nn.MSELoss()
    opt = nn.SGD(model.parameters(), lr=0.05)

    def run(steps: int) -> float:
        loss_value = math.nan
        for _ in range(steps):
            loss = loss_fn(model(x), target)
            loss_value = F.item(loss)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss_value

    return run


def torch_runner():
    import torch

    xs = [-math.pi + 2 * math.pi * i / 63 for i in range(64)]
    x = torch.tensor([[v] for v in xs], dtype=torch.float32)
    target = torch.sin(x)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def run(steps: int) -> float:
        loss_value = math.nan
        for _ in range(steps):
            loss = loss_fn(model(x), target)
            loss_value = loss.item()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss_value

    return run


def steps_per_second(runs: dict) -> dict[str, float]:
    """Best steps/s of each runner over interleaved repeats."""
    best = {name: 0.0 for name in runs}
    for run in runs.values():
        run(50)  # warm-up
    for _ in range(REPEATS):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run(STEPS)
            best[name] = max(best[name], STEPS / (time.perf_counter() - t0))
    return best


def c_program_rate() -> float | None:
    program = ROOT / "build" / "bench" / "examples" / "train_mlp"
    if not program.exists():
        return None
    rates = []
    for _ in range(3):
        out = subprocess.run([str(program), "2000", "2000"], capture_output=True, text=True)
        match = re.search(r"\((\d+) steps/s\)", out.stdout)
        if out.returncode == 0 and match:
            rates.append(float(match.group(1)))
    return max(rates) if rates else None


def main() -> None:
    runs = {"strideweave (friendly + nn)": strideweave_runner()}
    try:
        import torch

        runs[f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads)"] = torch_runner()
    except ImportError:  # pragma: no cover - depends on the environment
        torch = None
    rates = steps_per_second(runs)
    print(f"MLP 1-16-1 on 64 points, full batch, float32: best of {REPEATS} x {STEPS} steps")
    width = max(len(name) for name in rates)
    for name, rate in rates.items():
        print(f"  {name:<{width}}  {rate:9.0f} steps/s  {1e6 / rate:7.1f} us/step")
    names = list(rates)
    if len(names) == 2:
        ratio = rates[names[0]] / rates[names[1]]
        print(f"  ratio strideweave / PyTorch: {ratio:.2f}x (goal >= 1.0x)")
    c_rate = c_program_rate()
    if c_rate is not None:
        print(f"  C program examples/train_mlp (release build): {c_rate:9.0f} steps/s")


if __name__ == "__main__":
    main()
