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
from strideweave import operation as _operation
from strideweave._io import load as load
from strideweave._io import save as save
from strideweave._native import get_num_threads as get_num_threads
from strideweave._native import set_num_threads as set_num_threads
from strideweave.carriers import CPU, Carrier, DType, Evictable, FileBacked, Generic
from strideweave.carriers.block_device import BlockDevice as BlockDevice
from strideweave.carriers.block_device import BlockDeviceCarrier as BlockDeviceCarrier
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
from strideweave.core.layout import Layout, Node, Shape, Stride, Tiler, Tree
from strideweave.core.module import Module, Parameter
from strideweave.operation import *  # noqa: F403 (the operation names of __all__ below)
from strideweave.tensor import Tensor

__version__ = "0.1.0"

# The core names come first, in the fixed order of the reference API (CPU,
# Carrier, DType, Evictable, FileBacked, Generic, Layout, Module, Node,
# Parameter, Shape, Stride, Tensor, Tiler, Tree); the operation names of
# strideweave.operation follow them, in sorted() order.
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
]
# The definition machinery's call and plan records are reachable as
# attributes but not star-exported.
_NOT_EXPORTED = frozenset(
    ("OperationCall", "BoundOperationCall", "OperationPlan", "ResolvedInvocation", "VJPContext")
)
__all__ += [name for name in _operation.__all__ if name not in _NOT_EXPORTED]
