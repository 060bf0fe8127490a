"""Fault injection over operations and the reverse pass: every call
survives an allocation failure inside the C library with a clean
MemoryError and no leak."""

import gc

import pytest
import strideweave as sw
from helpers_ops import L, build
from strideweave import Node, Operation, Tree, _native

LAYOUT = L([2, 3], [1, 2])


def inputs(kind):
    return build(kind, LAYOUT, 1, lambda p: p - 2.5), build(kind, LAYOUT, 0, lambda p: p + 0.5)


class Scale(Operation):
    def _forward(self, x):
        return sw.mul(x, 2)

    def backward(self, gradient):
        return [sw.mul(gradient, 2)]


def backward_graph(kind):
    a, b = inputs(kind)
    y = sw.reduce(sw.matmul(sw.relu(sw.add(a, b)), b))
    y = Scale().forward(y)
    y.backward(build(kind, y.layout, 0, lambda p: 1.0))
    return a.grad


CALLS = {
    "add": lambda k: sw.add(*inputs(k)),
    "mul": lambda k: sw.mul(inputs(k)[0], 3),
    "neg": lambda k: -inputs(k)[0],
    "pow": lambda k: sw.pow(inputs(k)[1], 2),
    "exp": lambda k: sw.exp(inputs(k)[0]),
    "silu": lambda k: sw.silu(inputs(k)[0]),
    "reduce": lambda k: sw.reduce(inputs(k)[0]),
    "matmul": lambda k: sw.matmul(*inputs(k)),
    "view": lambda k: inputs(k)[0][1, 0:2],
    "permute": lambda k: sw.permute(inputs(k)[0], 1, 0),
    "rearrange": lambda k: sw.rearrange(inputs(k)[0], Tree(Node.id(1), Node.id(0))),
    "dispatch": lambda k: inputs(k)[0].carrier.dispatch_op("relu"),
    "backward": backward_graph,
}


@pytest.mark.parametrize("kind", ["Generic", "CPU"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_allocation_failures_are_clean(kind, name):
    call = CALLS[name]
    gc.collect()
    base = _native._debug_live_allocs()
    for n in range(400):
        failed = False
        _native._debug_fail_alloc_after(n)
        try:
            result = call(kind)
        except MemoryError:
            failed = True
            result = None
        finally:
            _native._debug_fail_alloc_after(-1)
        del result
        gc.collect()
        assert _native._debug_live_allocs() == base, f"leak after failure {n}"
        if failed:
            continue
        assert n > 0, "the call allocated nothing"
        return
    raise AssertionError(f"{name} still failed after 400 allocations")
