"""Derives the polynomial coefficients of src/op/kernels/vmath_body.h.

Each approximation is a polynomial fitted by weighted least squares on
Chebyshev nodes (close to the minimax fit for smooth functions), in double,
against the function computed with the math module in double. The weight
makes the error relative to the final result of the function the polynomial
feeds. Coefficients are then rounded to float one at a time, lowest order
first, refitting the remaining ones after each rounding so that the later
coefficients absorb the rounding of the earlier ones. The script prints the
C initialisers and the largest weighted error of each fit (in units of
2**-24, the half-ULP scale of float) with the rounded coefficients; gelu's and
tanh's 32-interval tables come out as the declarations of vmath_body.h.

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


def fit(
    t: np.ndarray, target: np.ndarray, weight: np.ndarray, degree: int, c0: float | None = None
):
    """Float coefficients c[0..degree] of sum c[k] t**k, greedily rounded;
    c0, when given, is the constant term (the rest are fitted around it)."""
    coeffs: list[float] = [] if c0 is None else [c0]
    resid = target.copy() if c0 is None else target - c0
    for k in range(len(coeffs), degree + 1):
        powers = np.stack([t**j for j in range(k, degree + 1)], axis=1)
        sol, *_ = np.linalg.lstsq(powers * weight[:, None], resid * weight, rcond=None)
        c = f32(sol[0])
        coeffs.append(c)
        resid = resid - c * t**k
    err = np.max(np.abs(resid * weight)) / 2.0**-24
    return coeffs, err


def cfloat(v: float) -> str:
    """v as a C float literal."""
    return f"{v:.9g}f" if v != int(v) else f"{v:.1f}f"


def show(name: str, coeffs: list[float], err: float) -> None:
    body = ", ".join(cfloat(c) for c in coeffs)
    print(f"/* {name}: max weighted error {err:.4f} x 2^-24 */")
    print(f"{{{body}}}")


def exp_fit() -> None:
    # e^r = 1 + r + r^2 P(r) on |r| <= ln2/2 (with slack for the rounding of n).
    r = nodes(-0.3467, 0.3467)
    target = (np.exp(r) - 1 - r) / r**2
    weight = r**2 / np.exp(r)
    show("exp P(r), degree 5", *fit(r, target, weight, 5))


# tanh's range a = |x| <= TANH_MAX is cut into 32 intervals, uniform in
# g(a) = a (s + t a) with t = -s/(2 TANH_MAX) (g levels off at the clamp):
# interval j holds the a with round(g(a)) = j, g(TANH_MAX) = 31.45.
TANH_MAX = 9.015625  # tanh rounds to 1 from 9.01091
TANH_S = f32(62.9 / TANH_MAX)
TANH_T = f32(-TANH_S / (2 * TANH_MAX))


def tanh_intervals() -> list[tuple[float, float]]:
    s, t = TANH_S, TANH_T

    def ginv(j: float) -> float:
        return (-s + math.sqrt(max(0.0, s * s + 4 * t * j))) / (2 * t)

    return [(0.0 if j == 0 else ginv(j - 0.5), min(TANH_MAX, ginv(j + 0.5))) for j in range(32)]


def ulp_of(v: np.ndarray) -> np.ndarray:
    """The spacing of floats in the binade of |v| (normal v)."""
    return 2.0 ** (np.floor(np.log2(np.abs(v))) - 23)


def tanh_centre(lo: float, hi: float) -> float:
    """The float c in [lo, hi] with tanh(c) within 0.005 x 2^-24 of a float
    (the constant term) for which the rounding of p in tanh(a) = c0 + u p
    (half an ULP of p ~ tanh'(a), times |u|) costs the fewest ULP of the
    result over the interval: the centre is nearer the low end, where the
    result is smaller, on the first intervals."""
    a = np.linspace(lo, hi, 201)
    ta = np.tanh(a)
    best, best_cost = lo, math.inf
    for v in np.linspace(lo, hi, 4001):
        c = f32(v)
        tc = math.tanh(c)
        if abs(f32(tc) - tc) / tc > 0.005 * 2.0**-24:
            continue
        u = a - c
        keep = u != 0
        p = (ta[keep] - tc) / u[keep]
        cost = float(np.max(np.abs(u[keep]) * ulp_of(p) / 2 / ulp_of(ta[keep])))
        if cost < best_cost:
            best, best_cost = c, cost
    return best


def tanh_fit() -> None:
    """A degree-5 polynomial in u = a - c per interval, relative error,
    c from tanh_centre; the interval widened by 0.1% for the rounding of
    the index. The first
    interval has c = 0 and is a + a (c2 a + ... + c5 a^4): its u^1 entry is
    0, as vm_tanh adds u itself there."""
    rows: list[tuple[float, list[float]]] = []
    worst = 0.0
    for j, (lo, hi) in enumerate(tanh_intervals()):
        w = hi - lo
        a = nodes(max(0.0, lo - 0.001 * w), hi + 0.001 * w if j < 31 else hi, 800)
        target = np.tanh(a)
        if j == 0:
            coeffs, err = fit(a, (target - a) / a**2, a**2 / target, 3)
            c, coeffs = 0.0, [0.0, 0.0, *coeffs]
        else:
            c = tanh_centre(lo, hi)
            coeffs, err = fit(a - c, target, 1 / target, 5, c0=f32(math.tanh(c)))
        worst = max(worst, err)
        rows.append((c, coeffs))
    print(f"/* tanh index: s = {TANH_S:.9g}f, t = {TANH_T:.9g}f */")
    print(f"/* tanh(c + u), degree 5: max error {worst:.4f} x 2^-24 */")
    print("static const float vm_tanh_c[32] = {")
    print(", ".join(cfloat(c) for c, _ in rows) + "};")
    print("static const float vm_tanh_t[6 * 32] = {")
    for k in range(6):
        print(f"/* u^{k} */")
        end = "," if k < 5 else "};"
        print(", ".join(cfloat(co[k]) for _, co in rows) + end)


def log1p_fit() -> None:
    # log(1+f) = f - f^2/2 + f^3 Q(f) on f in [sqrt(2)/2 - 1, sqrt(2) - 1].
    f = nodes(math.sqrt(0.5) - 1 - 1e-3, math.sqrt(2) - 1 + 1e-3)
    target = (np.log1p(f) - f + f * f / 2) / f**3
    weight = np.abs(f**3 / np.log1p(f))
    show("log1p Q(f), degree 8", *fit(f, target, weight, 8))


def exp_short_fit() -> None:
    # e^r - 1 = r + r^2 P(r) on |r| <= ln2/2 with slack, P of degree 4, for
    # gelu (weighted relative to e^r, which multiplies the result).
    r = nodes(-0.3467, 0.3467)
    target = (np.exp(r) - 1 - r) / r**2
    weight = r**2 / np.exp(r)
    show("exp P(r), degree 4 (gelu)", *fit(r, target, weight, 4))


def gelu_q(v: float) -> float:
    """Q(a) = erfc(a/sqrt 2)/2 = Phi(-a), in double."""
    return 0.5 * math.erfc(v / math.sqrt(2))


def gelu_phi(v: float) -> float:
    """The normal density phi(a) = e^(-a^2/2)/sqrt(2 pi), in double."""
    return math.exp(-v * v / 2) / math.sqrt(2 * math.pi)


# gelu's near range a = |x| <= GELU_NEAR is cut into 32 intervals, uniform
# in a (a + GELU_B): interval j holds the a with round(s a (a + b)) = j.
GELU_NEAR = 8.0
GELU_FAR = 15.0
GELU_B = 2.0
GELU_S = f32((32 - 0.51) / (GELU_NEAR * (GELU_NEAR + GELU_B)))


def gelu_intervals() -> list[tuple[float, float]]:
    edges = []
    for j in range(32):
        t0, t1 = max(0.0, (j - 0.5) / GELU_S), (j + 0.5) / GELU_S
        lo = (-GELU_B + math.sqrt(GELU_B**2 + 4 * t0)) / 2
        hi = min(GELU_NEAR, (-GELU_B + math.sqrt(GELU_B**2 + 4 * t1)) / 2)
        edges.append((lo, hi))
    return edges


def gelu_table(name: str, fn, scale, degree: int = 7) -> None:
    """A degree-`degree` polynomial in u = a - c per interval for fn, with
    error relative to scale(a). The centre c is the point near the middle
    of the interval where fn(c) is closest to a float (so that the constant
    term is fn(c) almost exactly); the interval is widened by 0.1% for the
    rounding of the index. K(a) on the first interval has c = 0 and no
    constant term (K(0) = 0, and u = a is exact)."""
    rows: list[tuple[float, list[float]]] = []
    worst = 0.0
    for j, (lo, hi) in enumerate(gelu_intervals()):
        w = hi - lo
        a = nodes(max(0.0, lo - 0.001 * w), hi + 0.001 * w, 600)
        target = np.array([fn(v) for v in a])
        weight = 1 / np.array([scale(v) for v in a])
        if j == 0 and name == "K":
            coeffs, err = fit(a, target / a, a * weight, degree - 1)
            c, coeffs = 0.0, [0.0, *coeffs]
        else:
            cands = [f32(v) for v in np.linspace(lo + 0.4 * w, lo + 0.6 * w, 2001)]
            c = min(cands, key=lambda v: abs(f32(fn(v)) - fn(v)) / scale(v))
            coeffs, err = fit(a - c, target, weight, degree, c0=f32(fn(c)))
        worst = max(worst, err)
        rows.append((c, coeffs))
    lname = name.lower()
    print(f"/* gelu {name}(c + u), degree {degree}: max error {worst:.4f} x 2^-24 */")
    print(f"static const float vm_gelu_{lname}c[32] = {{")
    print(", ".join(cfloat(c) for c, _ in rows) + "};")
    print(f"static const float vm_gelu_{lname}[{degree + 1} * 32] = {{")
    for k in range(degree + 1):
        print(f"/* u^{k} */")
        end = "," if k < degree else "};"
        print(", ".join(cfloat(co[k]) for _, co in rows) + end)


def gelu_fit() -> None:
    print(f"/* gelu index: s = {GELU_S:.9g}f, s b = {f32(GELU_S * GELU_B):.9g}f */")
    # K(a) = a Q(a), relative.
    gelu_table("K", lambda v: v * gelu_q(v), lambda v: v * gelu_q(v))
    # D(a) = Q(a) - a phi(a), relative to the larger of Q(a) and |D(a)| (D
    # has a zero at a = 0.7518, where only that absolute accuracy is
    # possible).
    gelu_table(
        "D",
        lambda v: gelu_q(v) - v * gelu_phi(v),
        lambda v: max(gelu_q(v), abs(gelu_q(v) - v * gelu_phi(v))),
    )
    # Beyond the near range (a in [8, 15], x < -8 only): K(a) = phi(a)
    # R(v) and -D(a) = a phi(a) S(v) with v = 1/a^2, R = a Q/phi (1 - v + 3 v^2
    # ...) and S = 1 - v R, both times 1/sqrt(2 pi); relative.
    v = nodes(1 / (GELU_FAR * 1.001) ** 2, 1 / (GELU_NEAR * 0.999) ** 2, 400)
    a = 1 / np.sqrt(v)
    rr = np.array([x * gelu_q(x) / gelu_phi(x) for x in a]) / math.sqrt(2 * math.pi)
    show("gelu far R(v), degree 4", *fit(v, rr, 1 / rr, 4))
    ss = (1 - v * rr * math.sqrt(2 * math.pi)) / math.sqrt(2 * math.pi)
    show("gelu far S(v), degree 4", *fit(v, ss, 1 / ss, 4))


if __name__ == "__main__":
    exp_fit()
    tanh_fit()
    log1p_fit()
    exp_short_fit()
    gelu_fit()
