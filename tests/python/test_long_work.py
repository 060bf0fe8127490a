"""Long work that ends: operations, sums, products and gradients over huge
stride-0 (broadcast) layouts finish at once, or fail at once when their result
cannot exist.

Each case runs in a child interpreter with a time limit, since without the
fix these calls never return (they visited all 2**62 logical elements).
"""

import subprocess
import sys
import textwrap

CHILD_LIMIT_S = 120

PRELUDE = """
import strideweave as sw
from strideweave import CPU, DType, Layout, Shape, Stride, Tensor

def bcast(shape, stride, values, dtype=None):
    layout = Layout(Shape(*shape), Stride(*stride))
    c = CPU(len(values)) if dtype is None else CPU(len(values), dtype=dtype)
    for p, v in enumerate(values):
        c[p] = v
    return Tensor(c, 0, layout)

def show(name, t):
    print(name, t.layout, list(t.carrier))

def error(name, f):
    try:
        f()
    except Exception as e:
        print(name, type(e).__name__, e)
"""


def run_child(code):
    """Runs PRELUDE and code in a fresh interpreter; returns its stdout lines."""
    r = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=CHILD_LIMIT_S,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_elementwise_over_a_huge_broadcast_finish_at_once():
    out = run_child(
        """
        x = bcast([2**62], [0], [-2.0])
        y = bcast([2**62], [0], [3.0])
        show("relu", sw.relu(x))
        show("add", sw.add(x, y))
        show("mul", sw.mul(y, 2))
        show("exp", sw.exp(Tensor(x.carrier, 0, x.layout)))
        xi = bcast([2**62], [0], [-4], DType.Int32)
        show("relu_i32", sw.relu(xi))
        # Equal layouts at different offsets.
        z = Tensor(CPU(3), 1, Layout(Shape(2**62), Stride(0)))
        z.carrier[1] = 5.0
        show("offsets", sw.sub(z, x))
        """
    )
    assert out[0] == "relu 4611686018427387904:0 [0.0]"
    assert out[1] == "add 4611686018427387904:0 [1.0]"
    assert out[2] == "mul 4611686018427387904:0 [6.0]"
    assert out[3].startswith("exp 4611686018427387904:0 [0.1353352")
    assert out[4] == "relu_i32 4611686018427387904:0 [0]"
    assert out[5] == "offsets 4611686018427387904:0 [7.0]"


def test_sums_and_products_over_broadcast_modes_in_closed_form():
    out = run_child(
        """
        x = bcast([4, 2**60], [1, 0], [1.0, 2.0, 3.0, 4.0])
        show("sum", sw.reduce(x))
        xi = bcast([4, 1000], [1, 0], [1, -2, 3, 4], DType.Int32)
        show("sum_i32", sw.reduce(xi))
        big = bcast([4, 2**60], [1, 0], [0, 1, 0, 0], DType.Int32)
        error("sum_i32_overflow", lambda: sw.reduce(big))
        a = bcast([4, 2**40], [1, 0], [1.0, 2.0, 3.0, 4.0])
        b = bcast([3, 2**40], [1, 0], [1.0, 1.0, 2.0])
        show("matmul", sw.matmul(a, b))
        rows = bcast([2**60, 3], [0, 1], [1.0, 2.0, 3.0])
        cols = Tensor(CPU(12), 0, Layout(Shape(4, 3), Stride(1, 4)))
        error("matmul_result", lambda: sw.matmul(rows, cols))
        """
    )
    assert out[0] == "sum 4:1 " + str([float(2**60 * k) for k in (1, 2, 3, 4)])
    assert out[1] == "sum_i32 4:1 [1000, -2000, 3000, 4000]"
    assert out[2] == "sum_i32_overflow OverflowError CPU integer accumulation overflowed"
    t = 2.0**40
    want = [t, 2 * t, 3 * t, 4 * t, t, 2 * t, 3 * t, 4 * t, 2 * t, 4 * t, 6 * t, 8 * t]
    assert out[3] == "matmul (4,3):(1,4) " + str(want)
    assert out[4] == (
        "matmul_result MemoryError cannot allocate a result of 4611686018427387904 elements"
    )


def test_gradients_over_a_huge_broadcast_finish_at_once():
    out = run_child(
        """
        x = bcast([2**62], [0], [2.0])
        g = bcast([2**62], [0], [1.5])
        sw.relu(x).backward(g)
        show("relu_grad", x.grad)
        sw.relu(x).backward(g)
        show("accumulated", x.grad)
        xs = bcast([4, 2**60], [1, 0], [1.0, -2.0, 3.0, 4.0])
        s = sw.reduce(sw.relu(xs))
        s.backward(bcast([4], [1], [1.0, 1.0, 1.0, 1.0]))
        show("sum_grad", xs.grad)
        a = bcast([4, 2**40], [1, 0], [1.0, 2.0, 3.0, 4.0])
        b = bcast([3, 2**40], [1, 0], [1.0, 1.0, 2.0])
        c = sw.matmul(a, b)
        c.backward(Tensor(CPU(12), 0, c.layout))
        show("matmul_grad_zero", a.grad)
        """
    )
    assert out[0] == "relu_grad 4611686018427387904:0 [1.5]"
    assert out[1] == "accumulated 4611686018427387904:0 [3.0]"
    assert out[2] == "sum_grad (4,1152921504606846976):(1,0) [1.0, 0.0, 1.0, 1.0]"
    assert out[3] == "matmul_grad_zero (4,1099511627776):(1,0) [0.0, 0.0, 0.0, 0.0]"
