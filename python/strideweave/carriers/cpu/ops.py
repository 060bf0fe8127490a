"""The CPU carrier's native operations (not exported at the top level).

One class per operation name; ``CPU`` dispatches the arithmetic,
activations, reduce and matmul to them (and view, permute and rearrange to
the shared layout operations). Every kernel computes in float32, or exactly
with overflow checks for Int32.

Examples:
    >>> from strideweave import CPU
    >>> from strideweave.carriers.cpu.ops import CPUAddOperation
    >>> isinstance(CPU(1).dispatch_op("add"), CPUAddOperation)
    True
"""

from strideweave._native import (
    CPUAddOperation,
    CPUBatchedMatmulOperation,
    CPUDivOperation,
    CPUElementwiseMulOperation,
    CPUELUOperation,
    CPUExpOperation,
    CPUGELUOperation,
    CPULeakyReLUOperation,
    CPUMatmulOperation,
    CPUPowOperation,
    CPUReduceSumOperation,
    CPUReLUOperation,
    CPUScalarMulOperation,
    CPUSigmoidOperation,
    CPUSiLUOperation,
    CPUSoftplusOperation,
    CPUSubOperation,
    CPUTanhOperation,
)

__all__ = [
    "CPUAddOperation",
    "CPUBatchedMatmulOperation",
    "CPUDivOperation",
    "CPUELUOperation",
    "CPUElementwiseMulOperation",
    "CPUExpOperation",
    "CPUGELUOperation",
    "CPULeakyReLUOperation",
    "CPUMatmulOperation",
    "CPUPowOperation",
    "CPUReLUOperation",
    "CPUReduceSumOperation",
    "CPUScalarMulOperation",
    "CPUSiLUOperation",
    "CPUSigmoidOperation",
    "CPUSoftplusOperation",
    "CPUSubOperation",
    "CPUTanhOperation",
]
