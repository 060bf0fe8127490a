"""Every operation name: the operation classes and the functional forms.

``__all__`` is the sorted list of the operation names that
``strideweave`` re-exports after its core names. The objects are the same
as in their home modules (``strideweave.functional``,
``strideweave.carriers.generic.ops``, ``strideweave.carriers.shared_ops``,
``strideweave.carriers.operation_helpers``, ``strideweave.profiling``).

Examples:
    >>> import strideweave
    >>> import strideweave.operation
    >>> strideweave.operation.add is strideweave.add
    True
"""

from strideweave.carriers.evictable import EvictableOperation
from strideweave.carriers.generic.ops import (
    GenericAddOperation,
    GenericDivOperation,
    GenericElementwiseMulOperation,
    GenericELUOperation,
    GenericExpOperation,
    GenericGELUOperation,
    GenericLeakyReLUOperation,
    GenericMatmulOperation,
    GenericPowOperation,
    GenericReduceSumOperation,
    GenericReLUOperation,
    GenericScalarMulOperation,
    GenericSigmoidOperation,
    GenericSiLUOperation,
    GenericSoftplusOperation,
    GenericSubOperation,
    GenericTanhOperation,
)
from strideweave.carriers.move import (
    CpuToFileBackedMoveOperation,
    ElementwiseMoveOperation,
    FileBackedToCpuMoveOperation,
    MoveOperation,
)
from strideweave.carriers.operation_helpers import Operation
from strideweave.carriers.shared_ops import (
    GenericViewOperation,
    PermuteOperation,
    RearrangeOperation,
)
from strideweave.functional import (
    add,
    div,
    einsum,
    elementwise_mul,
    elu,
    exp,
    gelu,
    is_grad_enabled,
    leaky_relu,
    matmul,
    move,
    mul,
    neg,
    no_grad,
    permute,
    pow,
    rearrange,
    reduce,
    relu,
    set_grad_enabled,
    sigmoid,
    silu,
    softplus,
    sub,
    tanh,
    view,
)
from strideweave.profiling import Profiler, ProfilerAggregate, ProfilerEvent, profile

__all__ = [
    "CpuToFileBackedMoveOperation",
    "ElementwiseMoveOperation",
    "EvictableOperation",
    "FileBackedToCpuMoveOperation",
    "GenericAddOperation",
    "GenericDivOperation",
    "GenericELUOperation",
    "GenericElementwiseMulOperation",
    "GenericExpOperation",
    "GenericGELUOperation",
    "GenericLeakyReLUOperation",
    "GenericMatmulOperation",
    "GenericPowOperation",
    "GenericReLUOperation",
    "GenericReduceSumOperation",
    "GenericScalarMulOperation",
    "GenericSiLUOperation",
    "GenericSigmoidOperation",
    "GenericSoftplusOperation",
    "GenericSubOperation",
    "GenericTanhOperation",
    "GenericViewOperation",
    "MoveOperation",
    "Operation",
    "PermuteOperation",
    "Profiler",
    "ProfilerAggregate",
    "ProfilerEvent",
    "RearrangeOperation",
    "add",
    "div",
    "einsum",
    "elementwise_mul",
    "elu",
    "exp",
    "gelu",
    "is_grad_enabled",
    "leaky_relu",
    "matmul",
    "move",
    "mul",
    "neg",
    "no_grad",
    "permute",
    "pow",
    "profile",
    "rearrange",
    "reduce",
    "relu",
    "set_grad_enabled",
    "sigmoid",
    "silu",
    "softplus",
    "sub",
    "tanh",
    "view",
]
