"""Operation throughput and call overhead beside NumPy and PyTorch.

Runs StrideWeave's CPU operations and the peers on the same data in one
process and prints the ratios (ours / peer, higher is better for
throughput; lower is better for per-call time). The speed floors that the
project tracks:

* Float32 add, mul and relu on 4M compact elements, on a transposed view
  and on a hierarchical tiled layout: at least 0.8x NumPy;
* matmul 1024x1024 Float32: at least 0.25x NumPy;
* add, mul, relu, exp and a sum over one mode at 1e6, 4e6 and 1.6e7
  elements, at 1 and 2 threads (``sw.set_num_threads``) beside NumPy and
  PyTorch at 1 and 2 threads (``torch.set_num_threads``): add / relu /
  sum at 4e6 were 0.53x PyTorch on two cores when the kernels ran on one;
* exp, tanh, sigmoid, gelu and silu on 4M compact Float32 elements: at
  least 1.0x PyTorch where possible (ours on one thread; PyTorch on its
  default threads), printed with the ULP bound of our function;
* gelu and its backward (``torch.ops.aten.gelu_backward`` beside the
  backward of our recorded gelu) at 1e5, 1e6 and 4e6 elements, both
  frameworks at 1 and then 2 threads, the four candidates timed in turn,
  each after a pause (so that no peer's spinning workers slow it) and one
  untimed call (that wakes its own idle workers): at least 1.0x PyTorch;
* the cost curves: add from 1e3 to 1.6e7 elements and matmul from 64 to
  4096, beside both peers, with the fraction of the machine's memory
  bandwidth and FLOP/s that ours reaches (``SW_PEAK_GBS``,
  ``SW_PEAK_GFLOPS``; 52 GB/s and 478 GFLOP/s here). Peers that keep
  their worker threads spinning after a call (OpenMP, OpenBLAS) can slow
  the candidate that runs next for a moment: a lone outlier row is that;
* the Python cost of ``sw.add`` on two 4-element tensors without grad:
  at most 1.2x NumPy's ``np.add`` on the same arrays;
* the same call with autograd on (differentiable Float32 inputs, grad
  mode on): at most 0.8x PyTorch's ``torch.add`` on tensors with
  ``requires_grad=True``, the two timed alternately in one process.

Timing never decides a test; this is a report.
"""

from __future__ import annotations

import os
import time
from functools import partial

import numpy as np
import strideweave as sw

try:  # PyTorch is an optional peer.
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

N = 2048  # 2048 x 2048 = 4M elements

# The machine's limits the scaling tables compare with (the development
# machine: 2 cores with AVX-512 at about 4.1 GHz, 32 float32 FMA lanes per
# cycle each; both cores streaming from memory). Override with the
# environment variables SW_PEAK_GFLOPS and SW_PEAK_GBS elsewhere.
PEAK_GFLOPS = float(os.environ.get("SW_PEAK_GFLOPS", 478))
PEAK_GBS = float(os.environ.get("SW_PEAK_GBS", 52))


def best(fn, repeat=7, number=3):
    """Best time of one call in seconds.

    Each round first lets the threads of whatever ran before go idle
    (OpenMP's workers poll for milliseconds after a call, as ours do, and on
    two cores a polling peer halves the next candidate's second thread),
    then makes `number` untimed calls, which wake the candidate's own
    workers and warm the caches (after a pause the first few calls of every
    candidate are slow), and then times `number` calls.
    """
    times = []
    for _ in range(repeat):
        time.sleep(0.005)
        for _ in range(number):
            fn()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def wrap(array: np.ndarray, layout: sw.Layout) -> sw.Tensor:
    """A tensor over a NumPy array's memory (no copy)."""
    carrier = sw.CPU(array.size, array.ctypes.data)
    return sw.Tensor(carrier, 0, layout)


def layout(shape, stride) -> sw.Layout:
    return sw.Layout(sw.Shape(shape), sw.Stride(stride))


def elementwise_rows():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(N * N, dtype=np.float32)
    b = rng.standard_normal(N * N, dtype=np.float32)
    compact = layout([N * N], [1])
    transposed = layout([N, N], [N, 1])  # column-major view of row-major data
    tile = 32
    tiled = layout([[tile, N // tile], [tile, N // tile]], [[N, N * tile], [1, tile]])
    views = {
        "compact": (compact, a, b),
        "transposed": (transposed, a.reshape(N, N).T, b.reshape(N, N).T),
        "tiled": (
            tiled,
            np.lib.stride_tricks.as_strided(
                a, (tile, N // tile, tile, N // tile), (N * 4, N * tile * 4, 4, tile * 4)
            ),
            np.lib.stride_tricks.as_strided(
                b, (tile, N // tile, tile, N // tile), (N * 4, N * tile * 4, 4, tile * 4)
            ),
        ),
    }
    rows = []
    with sw.no_grad():
        for name, (lay, na, nb) in views.items():
            ta, tb = wrap(a, lay), wrap(b, lay)
            ops = {
                "add": (partial(sw.add, ta, tb), partial(np.add, na, nb)),
                "mul": (
                    partial(sw.elementwise_mul, ta, tb),
                    partial(np.multiply, na, nb),
                ),
                "relu": (partial(sw.relu, ta), partial(np.maximum, na, 0)),
            }
            for op, (ours, peer) in ops.items():
                t_ours, t_np = best(ours), best(peer)
                rows.append((op, name, t_ours, t_np, t_np / t_ours))
    return rows


THREAD_SIZES = (1_000_000, 4_000_000, 16_000_000)


def _sum_shape(n):
    """A near-square (rows, cols) of n elements for the sum over mode 1."""
    r = int(round(n**0.5))
    while n % r:
        r -= 1
    return r, n // r


def thread_rows():
    """Per op and size: ours at 1 and 2 threads, NumPy, PyTorch at 1 and 2."""
    rng = np.random.default_rng(2)
    rows = []
    before = sw.get_num_threads()
    tbefore = torch.get_num_threads() if torch is not None else None
    for n in THREAD_SIZES:
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        flat = layout([n], [1])
        r, c = _sum_shape(n)
        # Mode 0 contiguous, summed over mode 1 (as np.sum(axis=0) of the
        # (c, r) row-major array): a column sum of a column-major matrix.
        cols = layout([r, c], [1, r])
        ta, tb, ts = wrap(a, flat), wrap(b, flat), wrap(a, cols)
        na2 = a.reshape(c, r)
        ops = {
            "add": (partial(sw.add, ta, tb), partial(np.add, a, b)),
            "mul": (partial(sw.elementwise_mul, ta, tb), partial(np.multiply, a, b)),
            "relu": (partial(sw.relu, ta), partial(np.maximum, a, 0)),
            "exp": (partial(sw.exp, ta), partial(np.exp, a)),
            "sum": (partial(sw.reduce, ts), partial(np.sum, na2, axis=0)),
        }
        peers = {}
        if torch is not None:
            xa, xb = torch.from_numpy(a), torch.from_numpy(b)
            xs = xa.view(c, r)
            peers = {
                "add": partial(torch.add, xa, xb),
                "mul": partial(torch.mul, xa, xb),
                "relu": partial(torch.relu, xa),
                "exp": partial(torch.exp, xa),
                "sum": partial(torch.sum, xs, 0),
            }
        reps = 7 if n < 10_000_000 else 5
        number = 3 if n < 10_000_000 else 1
        with sw.no_grad():
            for op, (ours, peer) in ops.items():
                t = {}
                for k in (1, 2):
                    sw.set_num_threads(k)
                    t[f"ours{k}"] = best(ours, reps, number)
                t["numpy"] = best(peer, reps, number)
                if op in peers:
                    with torch.no_grad():
                        for k in (1, 2):
                            torch.set_num_threads(k)
                            t[f"torch{k}"] = best(peers[op], reps, number)
                rows.append((op, n, t))
    sw.set_num_threads(before)
    if tbefore is not None:
        torch.set_num_threads(tbefore)
    return rows


# Bytes each op moves per element (Float32 operands and result), for the
# bandwidth columns: reads and writes, the sum reading only.
BYTES_PER_ELEMENT = {"add": 12, "mul": 12, "relu": 8, "exp": 8, "sum": 4}


def print_thread_rows(rows):
    print(
        f"\n{'op':5} {'n':>10} {'ours 1t':>9} {'ours 2t':>9} {'numpy':>9} {'torch 1t':>9} "
        f"{'torch 2t':>9}   (ms)  {'2t/1t':>6} {'vs np':>6} {'vs torch 2t':>11} "
        f"{'GB/s 2t':>8} {'of peak':>8}"
    )
    for op, n, t in rows:
        tt1 = t.get("torch1")
        tt2 = t.get("torch2")

        def ms(x):
            return f"{x * 1e3:9.3f}" if x is not None else f"{'-':>9}"

        vs_torch = f"{tt2 / t['ours2']:10.2f}x" if tt2 is not None else f"{'-':>11}"
        gbs = BYTES_PER_ELEMENT[op] * n / t["ours2"] / 1e9
        print(
            f"{op:5} {n:10.1e} {ms(t['ours1'])} {ms(t['ours2'])} {ms(t['numpy'])} {ms(tt1)} "
            f"{ms(tt2)}        {t['ours1'] / t['ours2']:5.2f}x {t['numpy'] / t['ours2']:5.2f}x "
            f"{vs_torch} {gbs:8.1f} {gbs / PEAK_GBS:8.2f}"
        )
    print(
        "(ratios: 2t/1t is our speed-up; vs np and vs torch 2t are peer time / ours at 2t;"
        " GB/s of the memory's peak: sizes the caches hold pass it)"
    )


# The largest error over all float32 inputs, in ULP, of each activation
# (src/op/kernels/vmath.h, docs/VMATH.md); gelu's gradient in ULP of
# max(|gelu'(x)|, Phi(x)).
GELU_ULP = 1.43
GELU_GRAD_ULP = 2.25
ULP_BOUND = {"exp": 0.61, "tanh": 0.71, "sigmoid": 2.41, "gelu": GELU_ULP, "silu": 3.40}


def activation_rows_at(n: int):
    """The vectorised activations on n elements beside NumPy formulas and
    PyTorch: (op, n, ours s, numpy s, torch s or None) per op."""
    rng = np.random.default_rng(2)
    a = (rng.standard_normal(n, dtype=np.float32) * 3).astype(np.float32)
    ta = wrap(a, layout([n], [1]))
    peers = {
        "exp": partial(np.exp, a),
        "tanh": partial(np.tanh, a),
        "sigmoid": lambda: 1 / (1 + np.exp(-a)),
        # NumPy has no erf: the tanh form of gelu stands in for it.
        "gelu": lambda: 0.5 * a * (1 + np.tanh(0.7978846 * (a + 0.044715 * a**3))),
        "silu": lambda: a / (1 + np.exp(-a)),
    }
    ours = {op: partial(getattr(sw, op), ta) for op in peers}
    torch_fns = {}
    if torch is not None:
        xt = torch.from_numpy(a)
        f = torch.nn.functional
        torch_fns = {
            "exp": partial(torch.exp, xt),
            "tanh": partial(torch.tanh, xt),
            "sigmoid": partial(torch.sigmoid, xt),
            "gelu": partial(f.gelu, xt),
            "silu": partial(f.silu, xt),
        }
    rows = []
    with sw.no_grad():
        for op in ours:
            t_ours, t_np = best(ours[op]), best(peers[op])
            t_torch = best(torch_fns[op]) if torch_fns else None
            rows.append((op, n, t_ours, t_np, t_torch))
    return rows


def activation_rows():
    return activation_rows_at(4_000_000) + activation_rows_at(1_000_000)


GELU_SIZES = (100_000, 1_000_000, 4_000_000)


def _sw_no_grad(fn, *args):
    with sw.no_grad():
        return fn(*args)


def _torch_no_grad(fn, *args):
    with torch.no_grad():
        return fn(*args)


def gelu_rows(rounds: int = 21):
    """gelu forward and backward, ours beside PyTorch, at 1 and 2 threads:
    (n, threads, {candidate: [seconds per call, one per round]})."""
    rng = np.random.default_rng(5)
    rows = []
    before = sw.get_num_threads()
    tbefore = torch.get_num_threads()
    for n in GELU_SIZES:
        a = (rng.standard_normal(n, dtype=np.float32) * 3).astype(np.float32)
        g = rng.standard_normal(n, dtype=np.float32)
        lay = layout([n], [1])
        ta, tg = wrap(a, lay), wrap(g, lay)
        op = sw.gelu(ta).autograd_ctx  # recorded: its backward is ours
        xa, xg = torch.from_numpy(a), torch.from_numpy(g)
        number = max(1, 1_000_000 // n)

        cands = {
            "ours": partial(_sw_no_grad, sw.gelu, ta),
            "torch": partial(_torch_no_grad, torch.nn.functional.gelu, xa),
            "ours bwd": partial(op.backward, tg),
            "torch bwd": partial(torch.ops.aten.gelu_backward, xg, xa),
        }
        for k in (1, 2):
            sw.set_num_threads(k)
            torch.set_num_threads(k)
            times = {c: [] for c in cands}
            for _ in range(rounds):
                for c, fn in cands.items():
                    time.sleep(0.01)
                    fn()  # wakes the candidate's idle workers
                    times[c].append(best(fn, repeat=3, number=number))
            rows.append((n, k, times))
    sw.set_num_threads(before)
    torch.set_num_threads(tbefore)
    return rows


def print_gelu_rows(rows):
    print(
        f"\ngelu beside PyTorch (best of the rounds, ms; ratio = torch / ours, median ratio in "
        f"brackets; ULP bounds {GELU_ULP} forward, {GELU_GRAD_ULP} gradient)"
    )
    print(
        f"{'n':>8} {'thr':>3} {'ours':>8} {'torch':>8} {'ratio':>14}   "
        f"{'ours bwd':>8} {'torch bwd':>9} {'ratio':>14}"
    )
    for n, k, t in rows:
        b = {c: min(v) for c, v in t.items()}
        m = {c: float(np.median(v)) for c, v in t.items()}
        f = f"{b['torch'] / b['ours']:5.2f}x ({m['torch'] / m['ours']:4.2f}x)"
        bw = f"{b['torch bwd'] / b['ours bwd']:5.2f}x ({m['torch bwd'] / m['ours bwd']:4.2f}x)"
        print(
            f"{n:8d} {k:3d} {b['ours'] * 1e3:8.3f} {b['torch'] * 1e3:8.3f} {f:>14}   "
            f"{b['ours bwd'] * 1e3:8.3f} {b['torch bwd'] * 1e3:9.3f} {bw:>14}"
        )


def matmul_row():
    rng = np.random.default_rng(1)
    m = 1024
    a = rng.standard_normal((m, m), dtype=np.float32)
    b = rng.standard_normal((m, m), dtype=np.float32)
    col = layout([m, m], [m, 1])  # a[i, k] of a row-major array
    ta, tb = wrap(a, col), wrap(b, col)
    with sw.no_grad():
        t_ours = best(lambda: sw.matmul(ta, tb), repeat=5, number=2)
    t_np = best(lambda: a @ b.T, repeat=5, number=2)
    return t_ours, t_np


SCALE_SIZES = (1_000, 10_000, 100_000, 1_000_000, 4_000_000, 16_000_000)
MATMUL_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)


def scaling_rows():
    """add at 1e3..1.6e7 and matmul at 64..4096, ours beside the peers
    (every framework on its default threads), with what ours reaches of
    the machine: bandwidth for add (12 bytes an element: two reads and a
    write), FLOP/s for matmul."""
    rng = np.random.default_rng(4)
    add = []
    for n in SCALE_SIZES:
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        ta, tb = wrap(a, layout([n], [1])), wrap(b, layout([n], [1]))
        number = max(1, 200_000 // n)
        with sw.no_grad():
            t_ours = best(partial(sw.add, ta, tb), 7, number)
        t_np = best(partial(np.add, a, b), 7, number)
        t_torch = None
        if torch is not None:
            xa, xb = torch.from_numpy(a), torch.from_numpy(b)
            t_torch = best(partial(torch.add, xa, xb), 7, number)
        add.append((n, t_ours, t_np, t_torch, 12 * n / t_ours / 1e9))
    mm = []
    for m in MATMUL_SIZES:
        a = rng.standard_normal((m, m), dtype=np.float32)
        b = rng.standard_normal((m, m), dtype=np.float32)
        rows = layout([m, m], [m, 1])  # a[i, k] of a row-major array
        ta, tb = wrap(a, rows), wrap(b, rows)
        repeat, number = (3, 1) if m >= 2048 else (5, max(1, 2_000_000 // m**2))
        with sw.no_grad():
            t_ours = best(partial(sw.matmul, ta, tb), repeat, number)
        t_np = best(partial(np.matmul, a, b.T), repeat, number)
        t_torch = None
        if torch is not None:
            xa, xb = torch.from_numpy(a), torch.from_numpy(b)
            t_torch = best(partial(torch.matmul, xa, xb.T), repeat, number)
        mm.append((m, t_ours, t_np, t_torch, 2 * m**3 / t_ours / 1e9))
    return add, mm


def print_scaling(add, mm):
    def ms(t):
        return f"{t * 1e3:10.4f}" if t is not None else f"{'-':>10}"

    def ratio(peer, ours):
        return f"{peer / ours:8.2f}x" if peer is not None else f"{'-':>9}"

    print(
        f"\nadd: the cost curve (peak: {PEAK_GBS:.0f} GB/s from memory; "
        "sizes the caches hold pass it)"
    )
    print(
        f"{'n':>10} {'ours ms':>10} {'numpy ms':>10} {'torch ms':>10} "
        f"{'vs numpy':>9} {'vs torch':>9} {'GB/s':>7} {'of peak':>8}"
    )
    for n, t, tn, tt, gbs in add:
        print(
            f"{n:10d} {ms(t)} {ms(tn)} {ms(tt)} {ratio(tn, t)} {ratio(tt, t)} "
            f"{gbs:7.1f} {gbs / PEAK_GBS:8.2f}"
        )
    print(f"\nmatmul n x n x n: the cost curve (peak {PEAK_GFLOPS:.0f} GFLOP/s)")
    print(
        f"{'n':>10} {'ours ms':>10} {'numpy ms':>10} {'torch ms':>10} "
        f"{'vs numpy':>9} {'vs torch':>9} {'GFLOP/s':>8} {'of peak':>8}"
    )
    for m, t, tn, tt, gf in mm:
        print(
            f"{m:10d} {ms(t)} {ms(tn)} {ms(tt)} {ratio(tn, t)} {ratio(tt, t)} "
            f"{gf:8.1f} {gf / PEAK_GFLOPS:8.2f}"
        )


def call_overhead():
    a = sw.CPU(4)
    b = sw.CPU(4)
    lay = layout([4], [1])
    ta, tb = sw.Tensor(a, 0, lay), sw.Tensor(b, 0, lay)
    na, nb = np.ones(4, np.float32), np.ones(4, np.float32)
    n = 20000
    with sw.no_grad():
        ours = best(lambda: [sw.add(ta, tb) for _ in range(n)], repeat=5, number=1) / n
    peer = best(lambda: [np.add(na, nb) for _ in range(n)], repeat=5, number=1) / n
    tpeer = None
    if torch is not None:
        xa, xb = torch.ones(4), torch.ones(4)
        with torch.no_grad():
            tpeer = best(lambda: [torch.add(xa, xb) for _ in range(n)], repeat=5, number=1) / n
    return ours, peer, tpeer


def autograd_overhead():
    """sw.add recording its context beside torch.add with requires_grad,
    timed alternately so that both see the same machine load."""
    lay = layout([4], [1])
    ta, tb = sw.Tensor(sw.CPU(4), 0, lay), sw.Tensor(sw.CPU(4), 0, lay)
    xa, xb = torch.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
    n = 20000
    ours, peer = [], []
    for _ in range(7):
        ours.append(best(lambda: [sw.add(ta, tb) for _ in range(n)], repeat=1, number=1))
        peer.append(best(lambda: [torch.add(xa, xb) for _ in range(n)], repeat=1, number=1))
    return min(ours) / n, min(peer) / n


def main():
    print("StrideWeave operations beside NumPy", np.__version__, end="")
    print(f" and PyTorch {torch.__version__}" if torch is not None else "")
    print(f"\n{'op':6} {'layout':11} {'ours ms':>9} {'numpy ms':>9} {'ours/numpy':>11}")
    for op, name, t_ours, t_np, ratio in elementwise_rows():
        print(f"{op:6} {name:11} {t_ours * 1e3:9.3f} {t_np * 1e3:9.3f} {ratio:11.2f}x")
    print_thread_rows(thread_rows())
    print(
        f"\n{'op':8} {'n':>8} {'ours ms':>9} {'numpy ms':>9} {'torch ms':>9} "
        f"{'ours/numpy':>11} {'ours/torch':>11} {'ULP bound':>10} {'GB/s':>7}"
    )
    for op, n, t_ours, t_np, t_torch in activation_rows():
        torch_ms = f"{t_torch * 1e3:9.3f}" if t_torch else f"{'-':>9}"
        ratio = f"{t_torch / t_ours:10.2f}x" if t_torch else f"{'-':>11}"
        print(
            f"{op:8} {n:8d} {t_ours * 1e3:9.3f} {t_np * 1e3:9.3f} {torch_ms} "
            f"{t_np / t_ours:10.2f}x {ratio} {ULP_BOUND[op]:10.2f} {8 * n / t_ours / 1e9:7.1f}"
        )
    if torch is not None:
        print_gelu_rows(gelu_rows())
    print_scaling(*scaling_rows())
    t_ours, t_np = matmul_row()
    print(
        f"\nmatmul 1024x1024 float32: ours {t_ours * 1e3:.2f} ms, numpy "
        f"{t_np * 1e3:.2f} ms, ours/numpy {t_np / t_ours:.2f}x (floor 0.25x)"
    )
    ours, peer, tpeer = call_overhead()
    line = f"\nsw.add on 4 elements, grad off: {ours * 1e6:.2f} us/call, numpy {peer * 1e6:.2f}"
    if tpeer is not None:
        line += f", torch {tpeer * 1e6:.2f}"
    print(line + f" us/call; ours/numpy {ours / peer:.2f}x (goal <= 1.2x)")
    if torch is not None:
        ours, peer = autograd_overhead()
        print(
            f"sw.add on 4 elements, autograd on: {ours * 1e6:.2f} us/call, torch "
            f"(requires_grad) {peer * 1e6:.2f} us/call; ours/torch {ours / peer:.2f}x "
            "(goal <= 0.8x)"
        )


if __name__ == "__main__":
    main()
