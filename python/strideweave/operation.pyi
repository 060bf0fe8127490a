"""Every operation name: the operation classes and the functional forms."""

from strideweave.carriers.evictable import EvictableOperation as EvictableOperation
from strideweave.carriers.generic.ops import (
    GenericAddOperation as GenericAddOperation,
)
from strideweave.carriers.generic.ops import (
    GenericDivOperation as GenericDivOperation,
)
from strideweave.carriers.generic.ops import (
    GenericElementwiseMulOperation as GenericElementwiseMulOperation,
)
from strideweave.carriers.generic.ops import (
    GenericELUOperation as GenericELUOperation,
)
from strideweave.carriers.generic.ops import (
    GenericExpOperation as GenericExpOperation,
)
from strideweave.carriers.generic.ops import (
    GenericGELUOperation as GenericGELUOperation,
)
from strideweave.carriers.generic.ops import (
    GenericLeakyReLUOperation as GenericLeakyReLUOperation,
)
from strideweave.carriers.generic.ops import (
    GenericMatmulOperation as GenericMatmulOperation,
)
from strideweave.carriers.generic.ops import (
    GenericPowOperation as GenericPowOperation,
)
from strideweave.carriers.generic.ops import (
    GenericReduceSumOperation as GenericReduceSumOperation,
)
from strideweave.carriers.generic.ops import (
    GenericReLUOperation as GenericReLUOperation,
)
from strideweave.carriers.generic.ops import (
    GenericScalarMulOperation as GenericScalarMulOperation,
)
from strideweave.carriers.generic.ops import (
    GenericSigmoidOperation as GenericSigmoidOperation,
)
from strideweave.carriers.generic.ops import (
    GenericSiLUOperation as GenericSiLUOperation,
)
from strideweave.carriers.generic.ops import (
    GenericSoftplusOperation as GenericSoftplusOperation,
)
from strideweave.carriers.generic.ops import (
    GenericSubOperation as GenericSubOperation,
)
from strideweave.carriers.generic.ops import (
    GenericTanhOperation as GenericTanhOperation,
)
from strideweave.carriers.move import (
    BlockDeviceToCpuMoveOperation as BlockDeviceToCpuMoveOperation,
)
from strideweave.carriers.move import (
    CpuToBlockDeviceMoveOperation as CpuToBlockDeviceMoveOperation,
)
from strideweave.carriers.move import (
    CpuToFileBackedMoveOperation as CpuToFileBackedMoveOperation,
)
from strideweave.carriers.move import (
    ElementwiseMoveOperation as ElementwiseMoveOperation,
)
from strideweave.carriers.move import (
    FileBackedToCpuMoveOperation as FileBackedToCpuMoveOperation,
)
from strideweave.carriers.move import (
    MoveOperation as MoveOperation,
)
from strideweave.carriers.operation_helpers import Operation as Operation
from strideweave.carriers.shared_ops import (
    GenericViewOperation as GenericViewOperation,
)
from strideweave.carriers.shared_ops import (
    PermuteOperation as PermuteOperation,
)
from strideweave.carriers.shared_ops import (
    RearrangeOperation as RearrangeOperation,
)
from strideweave.functional import (
    add as add,
)
from strideweave.functional import (
    div as div,
)
from strideweave.functional import (
    einsum as einsum,
)
from strideweave.functional import (
    elementwise_mul as elementwise_mul,
)
from strideweave.functional import (
    elu as elu,
)
from strideweave.functional import (
    exp as exp,
)
from strideweave.functional import (
    gelu as gelu,
)
from strideweave.functional import (
    is_grad_enabled as is_grad_enabled,
)
from strideweave.functional import (
    leaky_relu as leaky_relu,
)
from strideweave.functional import (
    matmul as matmul,
)
from strideweave.functional import (
    move as move,
)
from strideweave.functional import (
    mul as mul,
)
from strideweave.functional import (
    neg as neg,
)
from strideweave.functional import (
    no_grad as no_grad,
)
from strideweave.functional import (
    permute as permute,
)
from strideweave.functional import (
    pow as pow,
)
from strideweave.functional import (
    rearrange as rearrange,
)
from strideweave.functional import (
    reduce as reduce,
)
from strideweave.functional import (
    relu as relu,
)
from strideweave.functional import (
    set_grad_enabled as set_grad_enabled,
)
from strideweave.functional import (
    sigmoid as sigmoid,
)
from strideweave.functional import (
    silu as silu,
)
from strideweave.functional import (
    softplus as softplus,
)
from strideweave.functional import (
    sub as sub,
)
from strideweave.functional import (
    tanh as tanh,
)
from strideweave.functional import (
    view as view,
)
from strideweave.operation_definition import NON_DIFFERENTIABLE as NON_DIFFERENTIABLE
from strideweave.operation_definition import REQUIRED as REQUIRED
from strideweave.operation_definition import BoundOperationCall as BoundOperationCall
from strideweave.operation_definition import OperandKind as OperandKind
from strideweave.operation_definition import OperandSpec as OperandSpec
from strideweave.operation_definition import OperationCall as OperationCall
from strideweave.operation_definition import OperationDefinition as OperationDefinition
from strideweave.operation_definition import OperationPlan as OperationPlan
from strideweave.operation_definition import OperationSchema as OperationSchema
from strideweave.operation_definition import OptionSpec as OptionSpec
from strideweave.operation_definition import ProviderContractError as ProviderContractError
from strideweave.operation_definition import ResolvedInvocation as ResolvedInvocation
from strideweave.operation_definition import ResultSpec as ResultSpec
from strideweave.operation_definition import VJPContext as VJPContext
from strideweave.operation_definition import define_operation as define_operation
from strideweave.profiling import Profiler as Profiler
from strideweave.profiling import ProfilerAggregate as ProfilerAggregate
from strideweave.profiling import ProfilerEvent as ProfilerEvent
from strideweave.profiling import profile as profile

__all__ = [
    "BlockDeviceToCpuMoveOperation",
    "BoundOperationCall",
    "CpuToBlockDeviceMoveOperation",
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
    "NON_DIFFERENTIABLE",
    "OperandKind",
    "OperandSpec",
    "Operation",
    "OperationCall",
    "OperationDefinition",
    "OperationPlan",
    "OperationSchema",
    "OptionSpec",
    "PermuteOperation",
    "Profiler",
    "ProfilerAggregate",
    "ProfilerEvent",
    "ProviderContractError",
    "REQUIRED",
    "RearrangeOperation",
    "ResolvedInvocation",
    "ResultSpec",
    "VJPContext",
    "add",
    "define_operation",
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
