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

from strideweave import functional as _functional
from strideweave.carriers import shared_ops as _shared_ops
from strideweave.carriers.evictable import EvictableOperation as EvictableOperation
from strideweave.carriers.generic import ops as _generic_ops
from strideweave.carriers.move import BlockDeviceToCpuMoveOperation as BlockDeviceToCpuMoveOperation
from strideweave.carriers.move import CpuToBlockDeviceMoveOperation as CpuToBlockDeviceMoveOperation
from strideweave.carriers.move import CpuToFileBackedMoveOperation as CpuToFileBackedMoveOperation
from strideweave.carriers.move import ElementwiseMoveOperation as ElementwiseMoveOperation
from strideweave.carriers.move import FileBackedToCpuMoveOperation as FileBackedToCpuMoveOperation
from strideweave.carriers.move import MoveOperation as MoveOperation
from strideweave.carriers.operation_helpers import Operation as Operation
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

# The operation classes and functional forms come from their home modules,
# which take them from the library's operation registry. The batched
# matmul class stays in its home module only, as the reference has none.
_REGISTERED = {
    name: getattr(module, name)
    for module in (_functional, _generic_ops, _shared_ops)
    for name in module.__all__
    if name != "GenericBatchedMatmulOperation"
}
globals().update(_REGISTERED)

__all__ = sorted(
    [
        *_REGISTERED,
        "BoundOperationCall",
        "NON_DIFFERENTIABLE",
        "OperandKind",
        "OperandSpec",
        "OperationCall",
        "OperationDefinition",
        "OperationPlan",
        "OperationSchema",
        "OptionSpec",
        "ProviderContractError",
        "REQUIRED",
        "ResolvedInvocation",
        "ResultSpec",
        "VJPContext",
        "define_operation",
        "BlockDeviceToCpuMoveOperation",
        "CpuToBlockDeviceMoveOperation",
        "CpuToFileBackedMoveOperation",
        "ElementwiseMoveOperation",
        "EvictableOperation",
        "FileBackedToCpuMoveOperation",
        "MoveOperation",
        "Operation",
        "Profiler",
        "ProfilerAggregate",
        "ProfilerEvent",
        "profile",
    ]
)
