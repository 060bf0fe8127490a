"""Derives the polynomial coefficients of src/op/kernels/vmath_body.h.

Each approximation is a polynomial fitted by weighted least squares on
Chebyshev nodes (close to the minimax fit for smooth functions), in double,
against the function computed with the math module in double. The weight
makes the error relative to the final result of the function the polynomial
feeds. Coefficients are then rounded to float one at a time, lowest order
first, refitting the remaining ones after each rounding so that the later
coefficients absorb the rounding of the earlier ones. The script prints the
C initialisers and the largest weighted error of each fit (in units of
2**-24, the half-ULP scale of float) with the rounded coefficients.

Run: python tools/vmath_fit.py
"""

from __future__ import annotations

import math

import numpy as np


def f32(v: float) -> float:
    return float(np.float32(v))


def nodes(lo: float, hi: float, m: int = 2000) -> np.ndarray:
    k = np.arange(m)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / m)


def fit(t: np.ndarray, target: np.ndarray, weight: np.ndarray, degree: int):
    """Float coefficients c[0..degree] of sum c[k] t**k, greedily rounded."""
    coeffs: list[float] = []
    resid = target.copy()
    for k in range(degree + 1):
        powers = np.stack([t**j for j in range(k, degree + 1)], axis=1)
        sol, *_ = np.linalg.lstsq(powers * weight[:, None], resid * weight, rcond=None)
        c = f32(sol[0])
        coeffs.append(c)
        resid = resid - c * t**k
    err = np.max(np.abs(resid * weight)) / 2.0**-24
    return coeffs, err


def show(name: str, coeffs: list[float], err: float) -> None:
    body = ", ".join(f"{c:.9g}f" for c in coeffs)
    print(f"/* {name}: max weighted error {err:.4f} x 2^-24 */")
    print(f"{{{body}}}")


def exp_fit() -> None:
    # e^r = 1 + r + r^2 P(r) on |r| <= ln2/2 (with slack for the rounding of n).
    r = nodes(-0.3467, 0.3467)
    target = (np.exp(r) - 1 - r) / r**2
    weight = r**2 / np.exp(r)
    show("exp P(r), degree 5", *fit(r, target, weight, 5))


def tanh_fit() -> None:
    # tanh(x) = x + x^3 P(x^2) on |x| <= 0.5625.
    x = nodes(1e-4, 0.5625)
    target = (np.tanh(x) - x) / x**3
    weight = x**3 / np.tanh(x)
    show("tanh P(x^2), degree 4", *fit(x * x, target, weight, 4))


def log1p_fit() -> None:
    # log(1+f) = f - f^2/2 + f^3 Q(f) on f in [sqrt(2)/2 - 1, sqrt(2) - 1].
    f = nodes(math.sqrt(0.5) - 1 - 1e-3, math.sqrt(2) - 1 + 1e-3)
    target = (np.log1p(f) - f + f * f / 2) / f**3
    weight = np.abs(f**3 / np.log1p(f))
    show("log1p Q(f), degree 8", *fit(f, target, weight, 8))


def phi(x: np.ndarray) -> np.ndarray:
    return np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])


def gelu_small_fit() -> None:
    # gelu(x) = x/2 + x^2 P(x^2) on |x| <= 0.5, weighted by the negative side.
    x = nodes(1e-4, 0.5)
    target = (phi(x) - 0.5) / x
    weight = x / phi(-x)
    show("gelu small P(x^2), degree 3", *fit(x * x, target, weight, 3))


GELU_EDGES = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0]


def gelu_tail_fit(degree: int) -> None:
    # h(a) = erfc(a/sqrt2)/2 = exp(-a^2/2) H(a); H on each interval as a
    # polynomial in u = a - c, c the interval's midpoint.
    rows = []
    worst = 0.0
    for lo, hi in zip(GELU_EDGES[:-1], GELU_EDGES[1:], strict=True):
        c = (lo + hi) / 2
        a = nodes(lo, hi)
        target = np.array([0.5 * math.erfc(v / math.sqrt(2)) * math.exp(v * v / 2) for v in a])
        coeffs, err = fit(a - c, target, 1 / target, degree)
        worst = max(worst, err)
        rows.append((c, coeffs))
    print(f"/* gelu H(a - c), degree {degree}: max relative error {worst:.4f} x 2^-24 */")
    print("centres", [c for c, _ in rows])
    for k in range(degree + 1):
        print("{" + ", ".join(f"{co[k]:.9g}f" for _, co in rows) + "},")


if __name__ == "__main__":
    exp_fit()
    tanh_fit()
    log1p_fit()
    gelu_small_fit()
    gelu_tail_fit(9)
