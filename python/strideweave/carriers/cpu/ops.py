"""The CPU carrier's native operations (not exported at the top level).

One class per operation name; ``CPU`` dispatches the arithmetic,
activations, reduce and matmul to them (and view, permute and rearrange to
the shared layout operations). Every kernel computes in float32, or exactly
with overflow checks for Int32.

Examples:
    >>> from strideweave import CPU
    >>> from strideweave.carriers.cpu.ops import _CPUAddOperation
    >>> isinstance(CPU(1).dispatch_op("add"), _CPUAddOperation)
    True
"""

from strideweave import _native

# One class per operation of the backend, as the library's operation
# registry lists them.
__all__: list[str] = _native._native_classes("cpu")
globals().update({name: getattr(_native, name) for name in __all__})
