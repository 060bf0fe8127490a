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

from strideweave._native import (
    _CPUAddOperation,
    _CPUBatchedMatmulOperation,
    _CPUDivOperation,
    _CPUElementwiseMulOperation,
    _CPUELUOperation,
    _CPUExpOperation,
    _CPUGELUOperation,
    _CPULeakyReLUOperation,
    _CPUMatmulOperation,
    _CPUPowOperation,
    _CPUReduceSumOperation,
    _CPUReLUOperation,
    _CPUScalarMulOperation,
    _CPUSigmoidOperation,
    _CPUSiLUOperation,
    _CPUSoftplusOperation,
    _CPUSubOperation,
    _CPUTanhOperation,
)

__all__ = [
    "_CPUAddOperation",
    "_CPUBatchedMatmulOperation",
    "_CPUDivOperation",
    "_CPUELUOperation",
    "_CPUElementwiseMulOperation",
    "_CPUExpOperation",
    "_CPUGELUOperation",
    "_CPULeakyReLUOperation",
    "_CPUMatmulOperation",
    "_CPUPowOperation",
    "_CPUReLUOperation",
    "_CPUReduceSumOperation",
    "_CPUScalarMulOperation",
    "_CPUSiLUOperation",
    "_CPUSigmoidOperation",
    "_CPUSoftplusOperation",
    "_CPUSubOperation",
    "_CPUTanhOperation",
]
