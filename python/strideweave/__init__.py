"""StrideWeave: tensors and autograd on hierarchical, CuTe-style layouts.

A tensor is ``(carrier, offset, layout)``: a carrier owns or references
storage, a layout maps logical coordinates to physical indices. The layout
algebra (composition, complement, divides, products, inverses) is implemented
in the C library ``libstrideweave``; this package is its Python face.

Examples:
    >>> import strideweave as sw
    >>> layout = sw.Layout(sw.Shape([2, 3]), sw.Stride([1, 2]))
    >>> layout.size, layout.cosize, layout([1, 2])
    (6, 6, 5)
"""

# Registers the spec classes of the layout command strings with the extension.
from strideweave import einops as einops
from strideweave.carriers import CPU, Carrier, DType, Evictable, FileBacked, Generic
from strideweave.carriers.move import AwaitMove as AwaitMove
from strideweave.carriers.move import AwaitResult as AwaitResult
from strideweave.carriers.move import move_async as move_async
from strideweave.core.layout import Layout, Node, Shape, Stride, Tiler, Tree
from strideweave.core.module import Module, Parameter
from strideweave.operation import (
    CpuToFileBackedMoveOperation,
    ElementwiseMoveOperation,
    EvictableOperation,
    FileBackedToCpuMoveOperation,
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
    GenericViewOperation,
    MoveOperation,
    Operation,
    PermuteOperation,
    Profiler,
    ProfilerAggregate,
    ProfilerEvent,
    RearrangeOperation,
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
    profile,
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
from strideweave.tensor import Tensor

__version__ = "0.1.0"

# The core names come first, in the fixed order of the reference API (CPU,
# Carrier, DType, Evictable, FileBacked, Generic, Layout, Module, Node,
# Parameter, Shape, Stride, Tensor, Tiler, Tree; those that exist so far); the
# operation names follow them, in sorted() order.
__all__ = [
    "CPU",
    "Carrier",
    "DType",
    "Evictable",
    "FileBacked",
    "Generic",
    "Layout",
    "Module",
    "Node",
    "Parameter",
    "Shape",
    "Stride",
    "Tensor",
    "Tiler",
    "Tree",
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
