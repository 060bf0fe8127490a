"""The error of gelu and of its gradient, ours beside PyTorch's, over float32.

Measures StrideWeave's ``gelu`` (and the gradient its backward computes)
and PyTorch's ``torch.nn.functional.gelu`` (exact erf form) and
``torch.ops.aten.gelu_backward`` over every float32 bit pattern (or every
k-th one, and the infinities, zeros and NaN: ``--stride k``), with the
metric of tests/c/vmath_ulp.h: the
error ``|y - f(x)| / ulp`` against f computed in double, ulp the spacing
of floats in the binade of |f(x)| (2**-149 below 2**-126); for the
gradient, in the binade of max(|gelu'(x)|, Phi(x)), since gelu'(x) =
Phi(x) + x phi(x) crosses zero at x = -0.7518. Results below 2**-126 are
counted apart (subnormal results). A NaN must come out for a NaN
reference only, and infinities must match: the results that do not are
counted apart too (PyTorch's gelu overflows to inf from x = 2**127 on,
where gelu(x) = x, and gives NaN at both infinities).

The reference here is computed with PyTorch's float64 erfc and exp (a few
units of 2**-52, far below the float errors measured); run over our own
results it reproduces the bounds that the C harness (``make test-ulp``)
measures. docs/VMATH.md has the numbers.

Run: python bench/bench_vmath_ulp.py [--stride K]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import strideweave as sw
import torch

CHUNK = 1 << 22
SQRT1_2 = 0.70710678118654752440
INV_SQRT_2PI = 0.39894228040143267794
# The regions reported apart: where PyTorch's erf-based gelu is accurate
# and where it is not (upper ends open), and then all inputs.
REGIONS = ((0.0, math.inf), (-3.0, 0.0), (-math.inf, -3.0))
SPECIALS = (math.inf, -math.inf, 0.0, -0.0, math.nan)


def references(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """gelu(x), gelu'(x) and the scale of gelu' (max(|gelu'|, Phi)) in
    double, with the limits at +-inf."""
    xd = x.double()
    phi_cdf = 0.5 * torch.special.erfc(-xd * SQRT1_2)
    gelu = xd * phi_cdf
    grad = phi_cdf + xd * torch.exp(-0.5 * xd * xd) * INV_SQRT_2PI
    gelu[torch.isneginf(xd)] = -0.0
    grad[torch.isneginf(xd)] = 0.0
    grad[torch.isposinf(xd)] = 1.0
    return gelu, grad, torch.maximum(grad.abs(), phi_cdf)


def errors(y: torch.Tensor, ref: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """|y - ref| in ULP of scale, as vu_err_at in tests/c/vmath_ulp.h:
    ulp = 2^(e - 23) for |scale| in [2^e, 2^(e + 1)), 2^-149 below 2^-126;
    0 for NaN against NaN, infinity for a wrong NaN or infinity."""
    yd = y.double()
    e = (scale.view(torch.int64) >> 52) & 0x7FF  # biased exponent
    ulp = ((e - 23).clamp(min=1023 - 149) << 52).view(torch.float64)
    err = (yd - ref).abs() / ulp
    special = ~torch.isfinite(err) | torch.isinf(yd) | torch.isinf(ref.float())
    if special.any():
        i = special.nonzero().flatten()
        ys, rs = yd[i], ref[i]
        cr = rs.float().double()
        fix = torch.where(torch.isinf(cr) | torch.isinf(ys), (ys != cr).double(), err[i])
        both_nan = torch.isnan(ys) & torch.isnan(rs)
        fix = torch.where(both_nan, 0.0, fix)
        fix = torch.where(torch.isnan(ys) != torch.isnan(rs), 1.0, fix)
        wrong = (fix == 1.0) & (
            torch.isinf(cr) | torch.isinf(ys) | torch.isnan(ys) | torch.isnan(rs)
        )
        err[i] = torch.where(
            wrong, math.inf, torch.where(torch.isinf(cr) | torch.isinf(ys) | both_nan, 0.0, fix)
        )
    return err


class Worst:
    """Per region: the largest finite error over normal results and over
    subnormal ones (|scale| < 2^-126), with where; and how many results are
    a wrong NaN or infinity."""

    def __init__(self) -> None:
        n = len(REGIONS)
        self.max = torch.zeros(2 * n, dtype=torch.float64)
        self.at = [math.nan] * (2 * n)
        self.wrong = [0] * n
        self.wrong_x: list[list[float]] = [[] for _ in range(n)]

    def add(self, x: torch.Tensor, err: torch.Tensor, sub: torch.Tensor, region: torch.Tensor):
        bad = torch.isinf(err)
        if bad.any():
            for r in range(len(REGIONS)):
                xs = x[bad & (region == r)]
                if xs.numel():
                    self.wrong[r] += xs.numel()
                    self.wrong_x[r] = sorted({*self.wrong_x[r], float(xs.min()), float(xs.max())})
        slot = region * 2 + sub.long()
        e = torch.where(bad | (region < 0), 0.0, err)
        m = torch.zeros_like(self.max).scatter_reduce_(0, slot.clamp(min=0), e, "amax")
        for k in (m > self.max).nonzero().flatten().tolist():
            i = int(((slot == k) & (e == m[k])).nonzero()[0])
            self.max[k], self.at[k] = m[k], float(x[i])

    def line(self, rows: list[int]) -> str:
        """The worst of the given regions."""
        n = max(rows, key=lambda r: float(self.max[2 * r]))
        s = max(rows, key=lambda r: float(self.max[2 * r + 1]))
        text = (
            f"max {float(self.max[2 * n]):12.4f} ULP at x = {self.at[2 * n]!r:>22}; "
            f"subnormal results {float(self.max[2 * s + 1]):12.4f}"
        )
        wrong = sum(self.wrong[r] for r in rows)
        if wrong:
            xs = sorted(v for r in rows for v in self.wrong_x[r])
            text += f"; {wrong} wrong NaN/inf results (x from {xs[0]!r} to {xs[-1]!r})"
        return text


def ours(x: np.ndarray, ones: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lay = sw.Layout(sw.Shape([x.size]), sw.Stride([1]))
    xt = sw.Tensor(sw.CPU(x.size, x.ctypes.data), 0, lay)
    gt = sw.Tensor(sw.CPU(ones.size, ones.ctypes.data), 0, lay)
    y = sw.gelu(xt)
    dy = y.autograd_ctx.backward(gt)[0]
    return np.from_dlpack(y).copy(), np.from_dlpack(dy).copy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stride", type=int, default=1, help="every k-th bit pattern")
    args = parser.parse_args()
    k = max(1, args.stride)
    keys = ("gelu  ours", "gelu  torch", "gelu' ours", "gelu' torch")
    worst = {key: Worst() for key in keys}
    t0 = time.perf_counter()
    count = 0
    for start in range(0, 1 << 32, CHUNK * k):
        bits = np.arange(start, min(start + CHUNK * k, 1 << 32), k, dtype=np.uint64)
        x = bits.astype(np.uint32).view(np.float32)
        if start == 0:  # the special values the stride skips
            sp = np.array(SPECIALS, dtype=np.float32)
            x = np.concatenate([x, sp[sp.view(np.uint32) % k != 0]])
        ones = np.ones_like(x)
        count += x.size
        xt = torch.from_numpy(x)
        region = torch.full(xt.shape, -1, dtype=torch.int64)  # NaN: no region
        for r, (lo, hi) in enumerate(REGIONS):
            region[(xt >= lo) & (xt < hi)] = r
        region[xt == math.inf] = 0
        gelu, grad, gscale = references(xt)
        y, dy = ours(x, ones)
        with torch.no_grad():
            ty = torch.nn.functional.gelu(xt)
            tdy = torch.ops.aten.gelu_backward(torch.from_numpy(ones), xt)
        for key, out, ref, scale in (
            ("gelu  ours", torch.from_numpy(y), gelu, gelu),
            ("gelu  torch", ty, gelu, gelu),
            ("gelu' ours", torch.from_numpy(dy), grad, gscale),
            ("gelu' torch", tdy, grad, gscale),
        ):
            a = scale.abs()
            sub = (a < 2.0**-126) & (a > 0)
            worst[key].add(xt, errors(out, ref, scale), sub, region)
    print(
        f"{count} float32 inputs (every {k}th bit pattern) in {time.perf_counter() - t0:.0f} s; "
        f"PyTorch {torch.__version__}"
    )
    for name, rows in (
        ("all inputs", [0, 1, 2]),
        ("x >= 0", [0]),
        ("-3 <= x < 0", [1]),
        ("x < -3", [2]),
    ):
        print(f"{name}:")
        for key in keys:
            print(f"  {key:11} {worst[key].line(rows)}")


if __name__ == "__main__":
    main()
