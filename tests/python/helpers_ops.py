"""Shared helpers for the operation, functional and autograd tests.

Tensors are built from per-slot values: every physical slot a layout reaches
gets a value, the slots it skips (holes) stay None (Generic) or 0 (CPU), so
broadcast (stride-0) layouts see consistent logical values. Logical values
are read back through ``t[i]``, the tensor's own logical indexing.
"""

import math

import numpy as np
from strideweave import CPU, DType, Generic, Layout, Shape, Stride, Tensor


def L(shape, stride):
    """A Layout from nested lists: L([2, 3], [3, 1])."""
    return Layout(Shape(shape), Stride(stride))


# name -> (layout, offset): the layout families every operation is run on.
LAYOUTS = {
    "compact": (L([2, 3], [1, 2]), 0),
    "strided": (L([2, 3], [4, 1]), 0),
    "hierarchical": (L([[2, 2], 3], [[1, 2], 4]), 0),
    "offset": (L([2, 3], [1, 2]), 3),
    "broadcast": (L([2, 3], [1, 0]), 0),
}

CARRIERS = ["Generic", "CPU"]


def slots(layout, offset):
    """The physical indices a layout reaches, in logical order."""
    return [offset + layout.index(i) for i in range(layout.size)]


def build(kind, layout, offset, values_of_slot, dtype=None):
    """A tensor whose slot p (reached by the layout) holds values_of_slot(p)."""
    n = offset + layout.cosize
    used = set(slots(layout, offset))
    values = [values_of_slot(p) if p in used else None for p in range(n)]
    if kind == "Generic":
        carrier = Generic(values, dtype=dtype or DType.Floating)
    else:
        carrier = CPU(0, dtype=dtype).new_like(values)
    return Tensor(carrier, offset, layout)


def random_tensor(kind, layout, offset, rng, lo=-2.0, hi=2.0, dtype=None):
    """A tensor of uniform random values in [lo, hi]."""
    table = {}

    def value(p):
        if p not in table:
            table[p] = float(rng.uniform(lo, hi))
        return table[p]

    return build(kind, layout, offset, value, dtype)


def like(kind, t, values_of_slot, dtype=None):
    """A tensor of another carrier kind with t's layout and offset."""
    return build(kind, t.layout, t.offset, values_of_slot, dtype)


def same_values(kind, t, dtype=None):
    """t's values in a fresh tensor of carrier kind (same layout, offset)."""
    table = {t.offset + t.layout.index(i): t[i] for i in range(t.size())}
    return build(kind, t.layout, t.offset, table.__getitem__, dtype)


def logical(t):
    """The logical values of t as a list."""
    return [t[i] for i in range(t.size())]


def array(t):
    """The logical values of t as a float64 array."""
    return np.array([float(v) for v in logical(t)], dtype=np.float64)


def carrier_kind(t):
    return "CPU" if isinstance(t.carrier, CPU) else "Generic"


def ones_like(t, kind=None):
    """A gradient of ones with t's layout (offset 0, fresh storage)."""
    kind = kind or carrier_kind(t)
    return build(kind, t.layout, 0, lambda p: 1.0)


def holes(t):
    """The carrier values of t's storage at the slots its layout skips."""
    used = set(slots(t.layout, t.offset))
    return [t.carrier[p] for p in range(t.carrier.size()) if p not in used]


# ----------------------------------------------------------- references


def np_sigmoid(x):
    return np.where(
        x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x)))
    )


def np_gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def np_gelu_grad(x):
    erf = np.vectorize(math.erf)
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


# name -> (forward, derivative) for the activations and exp.
UNARY = {
    "exp": (np.exp, np.exp),
    "relu": (lambda x: np.maximum(x, 0), lambda x: (x > 0).astype(float)),
    "sigmoid": (np_sigmoid, lambda x: np_sigmoid(x) * (1 - np_sigmoid(x))),
    "tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "gelu": (np_gelu, np_gelu_grad),
    "silu": (
        lambda x: x * np_sigmoid(x),
        lambda x: np_sigmoid(x) + x * np_sigmoid(x) * (1 - np_sigmoid(x)),
    ),
    "softplus": (lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0), np_sigmoid),
    "elu": (lambda x: np.where(x > 0, x, np.expm1(x)), lambda x: np.where(x > 0, 1.0, np.exp(x))),
    "leaky_relu": (
        lambda x: np.where(x >= 0, x, 0.01 * x),
        lambda x: np.where(x >= 0, 1.0, 0.01),
    ),
}

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "elementwise_mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}

# Tolerances: Generic computes in doubles, CPU in float32.
TOL = {"Generic": {"rtol": 1e-12, "atol": 1e-12}, "CPU": {"rtol": 1e-5, "atol": 1e-6}}
