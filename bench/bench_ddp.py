"""Data-parallel training and allreduce bandwidth on MPI, beside MPI and PyTorch.

Run it plainly (``python bench/bench_ddp.py``): it starts the jobs itself with
mpirun (1 and 2 processes on this machine, loopback shared memory) and prints

1. the allreduce of a 64 MiB Float32 tensor across 2 processes, ours
   (strideweave.distributed.all_reduce) against MPI's own MPI_Allreduce on a
   contiguous buffer of the same size (through mpi4py, when installed),
   alternating in the same processes; the ratio is our layer's overhead;
2. training steps of the 784-256-10 MLP (ReLU, MSE, SGD) on a global batch
   of 128: one process with every core, against two processes with one core
   each under DistributedDataParallel, and PyTorch's DistributedDataParallel
   (gloo backend) in the same two processes, alternating.

Worker mode (``--worker``) is what mpirun runs.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 20
REPEATS = 5


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        OMPI_MCA_btl="self,vader",
        PYTHONUNBUFFERED="1",
    )
    return e


def best(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# ------------------------------------------------------------ the workers


def bandwidth(size_mib: float) -> None:
    import strideweave.distributed as dist
    import strideweave.friendly as F

    try:
        from mpi4py import MPI
    except ImportError:
        MPI = None
    import numpy as np

    dist.init()
    rank, world = dist.rank(), dist.world_size()
    n = int(size_mib * (1 << 20)) // 4
    ours = F.zeros(n)
    theirs = np.ones(n, dtype=np.float32)
    comm = MPI.COMM_WORLD.Dup() if MPI is not None else None

    def run_ours():
        dist.all_reduce(ours, "sum")

    def run_theirs():
        comm.Allreduce(MPI.IN_PLACE, theirs, op=MPI.SUM)

    run_ours()
    if comm is not None:
        run_theirs()
    t_ours = t_theirs = float("inf")
    for _ in range(2 * REPEATS):
        dist.barrier()
        t_ours = min(t_ours, best(run_ours, 1))
        if comm is not None:
            comm.Barrier()
            t_theirs = min(t_theirs, best(run_theirs, 1))
    # Bus bandwidth, as MPI benchmarks count it: 2 (p - 1) / p of the bytes.
    bus = 2 * (world - 1) / world * n * 4
    if rank == 0:
        line = f"allreduce {size_mib:g} MiB, {world} processes: ours {t_ours * 1e3:7.2f} ms"
        line += f" ({bus / t_ours / 1e9:5.2f} GB/s)"
        if comm is not None:
            line += (
                f"  MPI_Allreduce {t_theirs * 1e3:7.2f} ms ({bus / t_theirs / 1e9:5.2f} GB/s)"
                f"  ours/MPI bandwidth {t_theirs / t_ours:4.2f}x (floor 0.8x)"
            )
        else:
            line += "  (install mpi4py for MPI's own figure)"
        print(line, flush=True)
    dist.finalize()


def training(batch: int) -> None:
    import strideweave as sw
    import strideweave.distributed as dist
    import strideweave.friendly as F
    import strideweave.nn as nn

    dist.init()
    rank, world = dist.rank(), dist.world_size()
    threads = max(1, (os.cpu_count() or 1) // world)
    sw.set_num_threads(threads)
    local = batch // world

    class MLP(sw.Module):
        def __init__(self, rng):
            super().__init__()
            self.first = nn.Linear(784, 256, rng=rng)
            self.act = nn.ReLU()
            self.second = nn.Linear(256, 10, rng=rng)

        def forward(self, x):
            return self.second(self.act(self.first(x)))

    rng = random.Random(1 + rank)
    x = F.rand(local, 784, rng=rng)
    target = F.rand(local, 10, rng=rng)
    x.requires_grad_(False)
    target.requires_grad_(False)
    model = dist.DistributedDataParallel(MLP(random.Random(0)))
    opt = nn.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()

    def run_ours():
        for _ in range(STEPS):
            loss = loss_fn(model(x), target)
            F.item(loss)
            opt.zero_grad()
            loss.backward()
            opt.step()

    run_theirs = None
    try:
        import torch
        import torch.distributed as tdist

        torch.set_num_threads(threads)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        tdist.init_process_group("gloo", rank=rank, world_size=world)
        tmodel = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Sequential(
                torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
            )
        )
        tx, tt = torch.rand(local, 784), torch.rand(local, 10)
        topt = torch.optim.SGD(tmodel.parameters(), lr=0.01)
        tloss = torch.nn.MSELoss()

        def run_theirs():
            for _ in range(STEPS):
                loss = tloss(tmodel(tx), tt)
                loss.item()
                topt.zero_grad()
                loss.backward()
                topt.step()
    except Exception as error:  # noqa: BLE001 - the report says why
        if rank == 0:
            print(f"  (PyTorch DDP unavailable: {error})")

    run_ours()
    if run_theirs:
        run_theirs()
    t_ours = t_theirs = float("inf")
    for _ in range(REPEATS):
        dist.barrier()
        t_ours = min(t_ours, best(run_ours, 1) / STEPS)
        if run_theirs:
            dist.barrier()
            t_theirs = min(t_theirs, best(run_theirs, 1) / STEPS)
    if rank == 0:
        line = (
            f"MLP 784-256-10, global batch {batch}, {world} process(es) x {threads} thread(s):"
            f" ours {t_ours * 1e3:7.3f} ms/step ({batch / t_ours:8.0f} samples/s)"
        )
        if run_theirs:
            line += (
                f"  PyTorch DDP {t_theirs * 1e3:7.3f} ms/step"
                f"  ours/PyTorch {t_theirs / t_ours:4.2f}x"
            )
        print(line, flush=True)
    model.close()
    dist.finalize()


# ------------------------------------------------------------ the driver


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=["bandwidth", "training"])
    parser.add_argument("--size-mib", type=float, default=64)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    if args.worker == "bandwidth":
        bandwidth(args.size_mib)
        return 0
    if args.worker == "training":
        training(args.batch)
        return 0
    import strideweave.distributed as dist

    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not dist.is_available() or mpirun is None:
        print("bench_ddp: needs StrideWeave built with MPI and mpirun on PATH")
        return 1
    me = os.path.abspath(__file__)
    jobs = [
        (2, ["--worker", "bandwidth", "--size-mib", str(args.size_mib)]),
        (1, ["--worker", "training", "--batch", str(args.batch)]),
        (2, ["--worker", "training", "--batch", str(args.batch)]),
    ]
    for n, worker in jobs:
        done = subprocess.run(
            [mpirun, "-n", str(n), sys.executable, me, *worker],
            env=env(),
            cwd=ROOT,
            text=True,
            capture_output=True,
        )
        sys.stdout.write(done.stdout)
        if done.returncode:
            sys.stdout.write(done.stderr)
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
