"""strideweave.distributed: collectives and data-parallel training on MPI.

Jobs run as subprocesses under ``mpirun`` (1, 2 and 3 processes on
loopback, oversubscribed on small machines), never in the test process, so
that MPI never starts inside pytest. Without MPI (a build without it, or no
``mpirun``) these tests are skipped with the reason, unless
STRIDEWEAVE_REQUIRE_MPI is set (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import strideweave.distributed as dist
import strideweave.friendly as F

ROOT = Path(__file__).resolve().parents[2]
MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")


def _need_mpi() -> None:
    missing = None
    if not dist.is_available():
        missing = "StrideWeave was built without MPI"
    elif MPIRUN is None:
        missing = "no mpirun/mpiexec on PATH"
    if missing:
        if os.environ.get("STRIDEWEAVE_REQUIRE_MPI"):
            pytest.fail(f"{missing} (STRIDEWEAVE_REQUIRE_MPI is set)")
        pytest.skip(missing)


def mpi_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        OMPI_MCA_btl_vader_single_copy_mechanism="none",
        OMPI_MCA_btl="self,vader",
        PYTHONUNBUFFERED="1",
    )
    if "ASAN_OPTIONS" in env:
        # Open MPI's threads free their signal stacks in a way ASan rejects
        # (see tests/c/meson.build): ASan keeps none for MPI jobs.
        env["ASAN_OPTIONS"] += ":use_sigaltstack=0"
    return env


def run_job(
    n: int, script: str, tmp_path: Path, *args: str, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Runs `script` (Python source) on n processes; returns the finished job."""
    _need_mpi()
    path = tmp_path / f"job_{n}.py"
    path.write_text(textwrap.dedent(script))
    assert MPIRUN is not None
    cmd = [MPIRUN, "-n", str(n), sys.executable, str(path), *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env(), cwd=tmp_path
    )


def assert_ok(job: subprocess.CompletedProcess[str], n: int) -> None:
    out = job.stdout + job.stderr
    assert job.returncode == 0, out
    for r in range(n):
        assert f"OK {r}" in job.stdout, out


# ----------------------------------------------------- without a job


def test_calls_before_init_are_refused():
    # No init in this process: nothing here starts MPI.
    t = F.tensor([1.0])
    if dist.is_initialized():
        pytest.skip("distributed is initialised in this process")
    expected = RuntimeError if dist.is_available() else NotImplementedError
    with pytest.raises(expected, match="init|without MPI"):
        dist.all_reduce(t)
    with pytest.raises(expected):
        dist.rank()
    with pytest.raises(expected):
        dist.barrier()
    with pytest.raises(TypeError, match="needs a Tensor"):
        dist.all_reduce([1.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown reduction 'avg'"):
        dist.all_reduce(t, "avg")
    with pytest.raises(TypeError, match="op must be one of"):
        dist.all_reduce(t, 0)  # type: ignore[arg-type]
    dist.finalize()  # a no-op before init


def test_shard_is_deterministic_and_disjoint():
    data = list(range(11))
    shards = [dist.shard(data, r, 3) for r in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8]]
    assert sorted(sum(shards, [])) == data
    assert dist.shard("abcdef", 1, 2) == ["b", "d", "f"]
    with pytest.raises(ValueError, match="rank 3 and world 3"):
        dist.shard(data, 3, 3)
    with pytest.raises(ValueError):
        dist.shard(data, 0, 0)


# ----------------------------------------------------- collectives

COLLECTIVES = """
import strideweave as sw
import strideweave.distributed as dist
import strideweave.friendly as F

dist.init()
r, n = dist.rank(), dist.world_size()

# all_reduce: sum over a transposed view (staged) and a compact tensor.
a = F.tensor([[float(r + 1), 2.0 * (r + 1), 3.0], [4.0, 5.0, float(r)]])
at = a.T
dist.all_reduce(at, "sum")
s = n * (n + 1) // 2
assert a.tolist() == [[s, 2.0 * s, 3.0 * n], [4.0 * n, 5.0 * n, n * (n - 1) / 2]], a.tolist()
m = F.tensor([float(r), 10.0])
dist.all_reduce(m, "mean")
assert abs(m[0] - (n - 1) / 2) < 1e-6 and m[1] == 10.0
mx = F.tensor([float(r), -float(r)])
dist.all_reduce(mx, "max")
assert mx.tolist() == [n - 1.0, 0.0]
dist.all_reduce(mx, "min")
assert mx.tolist() == [n - 1.0, 0.0]

# broadcast from the last rank.
b = F.tensor([float(r)] * 4)
v0 = b.version
assert dist.broadcast(b, n - 1) is b
assert b.version == (v0 if r == n - 1 else v0 + 1)
assert b.tolist() == [n - 1.0] * 4

# all_gather: (world, *shape), rank order.
g = dist.all_gather(F.tensor([[float(r), float(r) + 0.5]]))
assert g.layout.size == 2 * n
assert [g[k, 0, 1] for k in range(n)] == [k + 0.5 for k in range(n)]

# reduce_scatter: rank r gets the sum of every process's row r.
rows = F.tensor([[float(k * 10 + j) * (r + 1) for j in range(3)] for k in range(n)])
part = dist.reduce_scatter(rows, "sum")
assert [part[j] for j in range(3)] == [float(r * 10 + j) * s for j in range(3)], part

# asynchronous forms: completions with done/wait, the same outcome twice.
big = F.tensor([float(r + 1)] * 100000)
h = dist.all_reduce(big, "sum", async_op=True)
assert isinstance(h, dist.AwaitCollective)
assert h.wait() is big and h.wait() is big and h.done
assert big[99999] == s
hg = dist.all_gather(F.tensor([float(r)]), async_op=True)
gathered = hg.wait()
assert [gathered[k, 0] for k in range(n)] == [float(k) for k in range(n)]
assert dist.barrier(async_op=True).wait() is None
dist.barrier()

# a mismatch fails everywhere with every process's call.
if n > 1:
    bad = F.tensor([0.0] * (3 if r == 0 else 4))
    try:
        dist.all_reduce(bad)
    except ValueError as e:
        text = str(e)
        assert "the processes disagree" in text, text
        assert "rank 0: all_reduce(Float32 3, sum)" in text, text
    else:
        raise AssertionError("no error")

# refusals at submission, before any communication.
try:
    ints = sw.Tensor(sw.CPU(2, dtype=sw.DType.Int32), 0, sw.Layout(sw.Shape(2), sw.Stride(1)))
    dist.all_reduce(ints, "mean")
except TypeError as e:
    assert "mean needs a Float32 tensor" in str(e)
else:
    raise AssertionError("Int32 mean accepted")
try:
    dist.broadcast(F.tensor([1.0]), n)
except ValueError as e:
    assert "is not a rank" in str(e)
else:
    raise AssertionError("bad root accepted")
print(f"OK {r}", flush=True)
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_collectives(n, tmp_path):
    assert_ok(run_job(n, COLLECTIVES, tmp_path), n)


# ----------------------------------------------------- data-parallel training

TRAIN = """
import json, random, sys
import strideweave.distributed as dist
import strideweave.friendly as F
import strideweave.nn as nn
from strideweave.core.module import Module

BATCH, STEPS = 12, 6

class Net(Module):
    def __init__(self):
        super().__init__()
        rng = random.Random(1)
        self.a = nn.Linear(8, 16, rng=rng)
        self.act = nn.Tanh()
        self.b = nn.Linear(16, 4, rng=rng)
    def forward(self, x):
        return self.b(self.act(self.a(x)))

def data():
    rng = random.Random(7)
    xs = [[rng.uniform(-1, 1) for _ in range(8)] for _ in range(BATCH)]
    ys = [[rng.uniform(-1, 1) for _ in range(4)] for _ in range(BATCH)]
    return xs, ys

def train(ddp):
    xs, ys = data()
    if ddp:
        dist.init()
        r, n = dist.rank(), dist.world_size()
        xs, ys = dist.shard(xs, r, n), dist.shard(ys, r, n)
    x, y = F.tensor(xs), F.tensor(ys)
    x.requires_grad_(False)
    model = Net()
    if ddp and dist.rank() != 0:
        # Different starting values: the broadcast must replace them.
        for p in model.parameters():
            for i in range(p.numel()):
                p.set(i, 0.25)
    net = dist.DistributedDataParallel(model, bucket_cap_mb=0.0005) if ddp else model
    opt = nn.SGD(net.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        if ddp:
            global_loss = F.tensor([loss.item()])
            dist.all_reduce(global_loss, "mean")
            losses.append(global_loss[0])
        else:
            losses.append(loss.item())
    params = [[p.get(i) for i in range(p.numel())] for p in model.parameters()]
    return losses, params

if __name__ == "__main__":
    losses, params = train(ddp=True)
    out = {"losses": losses, "params": params}
    with open(f"rank{dist.rank()}.json", "w") as f:
        json.dump(out, f)
    print(f"OK {dist.rank()}", flush=True)
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_data_parallel_equals_one_process_on_the_whole_batch(n, tmp_path):
    job = run_job(n, TRAIN, tmp_path)
    assert_ok(job, n)
    # The same training alone on the whole batch, in this process (no MPI).
    namespace: dict[str, object] = {"__name__": "reference"}
    exec(compile(TRAIN, "train", "exec"), namespace)  # noqa: S102 - our own script
    losses, params = namespace["train"](False)  # type: ignore[operator]
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(n)]
    for res in results:
        # Every process holds the same parameters, bit for bit.
        assert res["params"] == results[0]["params"]
        assert res["losses"] == pytest.approx(losses, rel=2e-5, abs=1e-6)
        for mine, ref in zip(res["params"], params, strict=True):
            assert mine == pytest.approx(ref, rel=2e-5, abs=1e-6)
    assert losses[-1] < losses[0]


def test_no_sync_and_unused_parameters(tmp_path):
    script = """
    import strideweave.distributed as dist
    import strideweave.friendly as F
    import strideweave.nn as nn
    from strideweave.core.module import Module

    dist.init()
    r, n = dist.rank(), dist.world_size()

    class Two(Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2)
        def forward(self, x, use_b=True):
            y = self.a(x)
            return self.b(y) if use_b else y

    net = dist.DistributedDataParallel(Two())
    x = F.tensor([[1.0, float(r)]])
    # no_sync: local gradients, no communication.
    with net.no_sync():
        F.sum(net(x)).backward()
    local = net.module.a.weight.grad.tolist()
    # A pass that leaves b out: the next forward names it.
    for p in net.parameters():
        p.grad = None
    F.sum(net(x, use_b=False)).backward()
    try:
        net(x)
    except RuntimeError as e:
        assert "b.weight" in str(e) and "b.bias" in str(e), e
    else:
        raise AssertionError("unused parameters not reported")
    net.reset()
    for p in net.parameters():
        p.grad = None
    F.sum(net(x)).backward()
    assert net.module.a.weight.grad.tolist() != local or n == 1
    net.close()
    print(f"OK {r}", flush=True)
    """
    assert_ok(run_job(2, script, tmp_path), 2)


# ----------------------------------------------------- failures


def test_a_failing_rank_stops_the_whole_job(tmp_path):
    script = """
    import time
    import strideweave.distributed as dist
    import strideweave.friendly as F

    dist.init()
    if dist.rank() == 1:
        raise ValueError("boom on purpose")
    dist.all_reduce(F.tensor([1.0]))  # would wait for rank 1 for ever
    time.sleep(60)
    """
    start = time.monotonic()
    job = run_job(2, script, tmp_path, timeout=120)
    took = time.monotonic() - start
    out = job.stdout + job.stderr
    assert job.returncode != 0, out
    assert "[rank 1]" in out and "ValueError: boom on purpose" in out, out
    assert took < 60, f"the job took {took:.0f} s to stop"


def test_a_collective_times_out_with_a_clear_error(tmp_path):
    script = """
    import time
    import strideweave.distributed as dist

    dist.init(timeout=1)
    me = dist.rank()
    if me == 0:
        try:
            dist.barrier()
        except RuntimeError as e:
            assert "barrier did not complete within 1 s" in str(e), e
            print("TIMEOUT", flush=True)
    else:
        time.sleep(4)
        dist.barrier()
    dist.finalize()
    print(f"OK {me}", flush=True)
    """
    job = run_job(2, script, tmp_path)
    assert_ok(job, 2)
    assert "TIMEOUT" in job.stdout


# ----------------------------------------------------- examples


def test_train_ddp_example(tmp_path):
    _need_mpi()
    assert MPIRUN is not None
    job = subprocess.run(
        [
            MPIRUN,
            "-n",
            "2",
            sys.executable,
            str(ROOT / "examples" / "train_ddp.py"),
            "--epochs",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=mpi_env(),
    )
    assert job.returncode == 0, job.stdout + job.stderr
    assert "final loss" in job.stdout


def test_reference_training_runs_without_mpi():
    # The single-process reference of the equality test trains by itself.
    namespace: dict[str, object] = {"__name__": "reference"}
    exec(compile(TRAIN, "train", "exec"), namespace)  # noqa: S102 - our own script
    losses, _ = namespace["train"](False)  # type: ignore[operator]
    assert len(losses) == 6 and losses[-1] < losses[0]
