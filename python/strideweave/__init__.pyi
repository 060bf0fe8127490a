"""StrideWeave: tensors and autograd on hierarchical, CuTe-style layouts."""

from strideweave import einops as einops
from strideweave._io import load as load
from strideweave._io import save as save
from strideweave._native import get_num_threads as get_num_threads
from strideweave._native import set_num_threads as set_num_threads
from strideweave.carriers import CPU as CPU
from strideweave.carriers import BlockDevice as BlockDevice
from strideweave.carriers import BlockDeviceCarrier as BlockDeviceCarrier
from strideweave.carriers import Carrier as Carrier
from strideweave.carriers import DType as DType
from strideweave.carriers import Evictable as Evictable
from strideweave.carriers import FileBacked as FileBacked
from strideweave.carriers import Generic as Generic
from strideweave.carriers.extension import CarrierDefinition as CarrierDefinition
from strideweave.carriers.extension import CarrierFacet as CarrierFacet
from strideweave.carriers.extension import CompositeProvider as CompositeProvider
from strideweave.carriers.extension import KernelExecutionInterface as KernelExecutionInterface
from strideweave.carriers.extension import KernelPack as KernelPack
from strideweave.carriers.extension import KernelPattern as KernelPattern
from strideweave.carriers.extension import KernelProvider as KernelProvider
from strideweave.carriers.extension import StorageProvider as StorageProvider
from strideweave.carriers.extension import TransferRoute as TransferRoute
from strideweave.carriers.extension import Unsupported as Unsupported
from strideweave.carriers.extension import (
    register_carrier_definition as register_carrier_definition,
)
from strideweave.carriers.extension import register_kernel_pack as register_kernel_pack
from strideweave.carriers.move import AwaitMove as AwaitMove
from strideweave.carriers.move import AwaitResult as AwaitResult
from strideweave.carriers.move import move_async as move_async
from strideweave.carriers.opencl import OpenCL as OpenCL
from strideweave.carriers.opencl import opencl_devices as opencl_devices
from strideweave.carriers.operation_capability import DependentCarrier as DependentCarrier
from strideweave.carriers.operation_capability import OperandCapability as OperandCapability
from strideweave.carriers.operation_capability import OperationCapability as OperationCapability
from strideweave.carriers.operation_capability import (
    UnsupportedOperationPlan as UnsupportedOperationPlan,
)
from strideweave.carriers.tiled_evictable import AwaitProjection as AwaitProjection
from strideweave.carriers.tiled_evictable import AwaitResidency as AwaitResidency
from strideweave.carriers.tiled_evictable import ResidencyPlan as ResidencyPlan
from strideweave.carriers.tiled_evictable import ResidencyPolicy as ResidencyPolicy
from strideweave.carriers.tiled_evictable import TiledEvictable as TiledEvictable
from strideweave.carriers.tiled_evictable import TiledResidencyFacet as TiledResidencyFacet
from strideweave.carriers.tiled_evictable import TileSelection as TileSelection
from strideweave.carriers.tiled_evictable import TileSet as TileSet
from strideweave.core.layout import Layout as Layout
from strideweave.core.layout import Node as Node
from strideweave.core.layout import Shape as Shape
from strideweave.core.layout import Stride as Stride
from strideweave.core.layout import Tiler as Tiler
from strideweave.core.layout import Tree as Tree
from strideweave.core.module import Module as Module
from strideweave.core.module import Parameter as Parameter
from strideweave.operation import NON_DIFFERENTIABLE as NON_DIFFERENTIABLE
from strideweave.operation import REQUIRED as REQUIRED
from strideweave.operation import (
    BlockDeviceToCpuMoveOperation as BlockDeviceToCpuMoveOperation,
)
from strideweave.operation import BoundOperationCall as BoundOperationCall
from strideweave.operation import (
    CpuToBlockDeviceMoveOperation as CpuToBlockDeviceMoveOperation,
)
from strideweave.operation import (
    CpuToFileBackedMoveOperation as CpuToFileBackedMoveOperation,
)
from strideweave.operation import (
    ElementwiseMoveOperation as ElementwiseMoveOperation,
)
from strideweave.operation import (
    EvictableOperation as EvictableOperation,
)
from strideweave.operation import (
    FileBackedToCpuMoveOperation as FileBackedToCpuMoveOperation,
)
from strideweave.operation import (
    GenericAddOperation as GenericAddOperation,
)
from strideweave.operation import (
    GenericDivOperation as GenericDivOperation,
)
from strideweave.operation import (
    GenericElementwiseMulOperation as GenericElementwiseMulOperation,
)
from strideweave.operation import (
    GenericELUOperation as GenericELUOperation,
)
from strideweave.operation import (
    GenericExpOperation as GenericExpOperation,
)
from strideweave.operation import (
    GenericGELUOperation as GenericGELUOperation,
)
from strideweave.operation import (
    GenericLeakyReLUOperation as GenericLeakyReLUOperation,
)
from strideweave.operation import (
    GenericMatmulOperation as GenericMatmulOperation,
)
from strideweave.operation import (
    GenericPowOperation as GenericPowOperation,
)
from strideweave.operation import (
    GenericReduceSumOperation as GenericReduceSumOperation,
)
from strideweave.operation import (
    GenericReLUOperation as GenericReLUOperation,
)
from strideweave.operation import (
    GenericScalarMulOperation as GenericScalarMulOperation,
)
from strideweave.operation import (
    GenericSigmoidOperation as GenericSigmoidOperation,
)
from strideweave.operation import (
    GenericSiLUOperation as GenericSiLUOperation,
)
from strideweave.operation import (
    GenericSoftplusOperation as GenericSoftplusOperation,
)
from strideweave.operation import (
    GenericSubOperation as GenericSubOperation,
)
from strideweave.operation import (
    GenericTanhOperation as GenericTanhOperation,
)
from strideweave.operation import (
    GenericViewOperation as GenericViewOperation,
)
from strideweave.operation import (
    MoveOperation as MoveOperation,
)
from strideweave.operation import OperandKind as OperandKind
from strideweave.operation import OperandSpec as OperandSpec
from strideweave.operation import (
    Operation as Operation,
)
from strideweave.operation import OperationCall as OperationCall
from strideweave.operation import OperationDefinition as OperationDefinition
from strideweave.operation import OperationPlan as OperationPlan
from strideweave.operation import OperationSchema as OperationSchema
from strideweave.operation import OptionSpec as OptionSpec
from strideweave.operation import (
    PermuteOperation as PermuteOperation,
)
from strideweave.operation import ProviderContractError as ProviderContractError
from strideweave.operation import (
    RearrangeOperation as RearrangeOperation,
)
from strideweave.operation import ResolvedInvocation as ResolvedInvocation
from strideweave.operation import ResultSpec as ResultSpec
from strideweave.operation import VJPContext as VJPContext
from strideweave.operation import (
    add as add,
)
from strideweave.operation import define_operation as define_operation
from strideweave.operation import (
    div as div,
)
from strideweave.operation import (
    einsum as einsum,
)
from strideweave.operation import (
    elementwise_mul as elementwise_mul,
)
from strideweave.operation import (
    elu as elu,
)
from strideweave.operation import (
    exp as exp,
)
from strideweave.operation import (
    gelu as gelu,
)
from strideweave.operation import (
    is_grad_enabled as is_grad_enabled,
)
from strideweave.operation import (
    leaky_relu as leaky_relu,
)
from strideweave.operation import (
    matmul as matmul,
)
from strideweave.operation import (
    move as move,
)
from strideweave.operation import (
    mul as mul,
)
from strideweave.operation import (
    neg as neg,
)
from strideweave.operation import (
    no_grad as no_grad,
)
from strideweave.operation import (
    permute as permute,
)
from strideweave.operation import (
    pow as pow,
)
from strideweave.operation import (
    rearrange as rearrange,
)
from strideweave.operation import (
    reduce as reduce,
)
from strideweave.operation import (
    relu as relu,
)
from strideweave.operation import (
    set_grad_enabled as set_grad_enabled,
)
from strideweave.operation import (
    sigmoid as sigmoid,
)
from strideweave.operation import (
    silu as silu,
)
from strideweave.operation import (
    softplus as softplus,
)
from strideweave.operation import (
    sub as sub,
)
from strideweave.operation import (
    tanh as tanh,
)
from strideweave.operation import (
    view as view,
)
from strideweave.profiling import Profiler as Profiler
from strideweave.profiling import ProfilerAggregate as ProfilerAggregate
from strideweave.profiling import ProfilerEvent as ProfilerEvent
from strideweave.profiling import profile as profile
from strideweave.tensor import Tensor as Tensor

__version__: str

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
    "BlockDeviceToCpuMoveOperation",
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
    "OperationDefinition",
    "OperationSchema",
    "OptionSpec",
    "PermuteOperation",
    "Profiler",
    "ProfilerAggregate",
    "ProfilerEvent",
    "ProviderContractError",
    "REQUIRED",
    "RearrangeOperation",
    "ResultSpec",
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
