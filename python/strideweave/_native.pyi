"""The C extension behind strideweave: layouts, carriers, tensors and operations."""

from collections.abc import Iterable
from typing import Any, final

from strideweave.carriers.base import Carrier as Carrier
from strideweave.carriers.block_device.carrier import BlockDevice as BlockDevice
from strideweave.carriers.block_device.carrier import BlockDeviceCarrier as BlockDeviceCarrier
from strideweave.carriers.cpu.carrier import CPU as CPU
from strideweave.carriers.cpu.ops import (
    _CPUAddOperation as _CPUAddOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUBatchedMatmulOperation as _CPUBatchedMatmulOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUDivOperation as _CPUDivOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUElementwiseMulOperation as _CPUElementwiseMulOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUELUOperation as _CPUELUOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUExpOperation as _CPUExpOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUGELUOperation as _CPUGELUOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPULeakyReLUOperation as _CPULeakyReLUOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUMatmulOperation as _CPUMatmulOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUPowOperation as _CPUPowOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUReduceSumOperation as _CPUReduceSumOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUReLUOperation as _CPUReLUOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUScalarMulOperation as _CPUScalarMulOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUSigmoidOperation as _CPUSigmoidOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUSiLUOperation as _CPUSiLUOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUSoftplusOperation as _CPUSoftplusOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUSubOperation as _CPUSubOperation,
)
from strideweave.carriers.cpu.ops import (
    _CPUTanhOperation as _CPUTanhOperation,
)
from strideweave.carriers.evictable import Evictable as Evictable
from strideweave.carriers.evictable import EvictableOperation as EvictableOperation
from strideweave.carriers.file_backed.carrier import FileBacked as FileBacked
from strideweave.carriers.generic.carrier import Generic as Generic
from strideweave.carriers.generic.ops import (
    GenericAddOperation as GenericAddOperation,
)
from strideweave.carriers.generic.ops import (
    GenericBatchedMatmulOperation as GenericBatchedMatmulOperation,
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
    AwaitMove as AwaitMove,
)
from strideweave.carriers.move import (
    AwaitResult as AwaitResult,
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
from strideweave.carriers.move import (
    dispatch_move as dispatch_move,
)
from strideweave.carriers.move import (
    move_async as move_async,
)
from strideweave.carriers.move import (
    register_move_operation as register_move_operation,
)
from strideweave.carriers.move import (
    unregister_move_operation as unregister_move_operation,
)
from strideweave.carriers.opencl.carrier import OpenCL as OpenCL
from strideweave.carriers.opencl.carrier import opencl_devices as opencl_devices
from strideweave.carriers.operation_helpers import Operation as Operation
from strideweave.carriers.operation_helpers import (
    execute_lowered_operation as execute_lowered_operation,
)
from strideweave.carriers.shared_ops import (
    GenericViewOperation as GenericViewOperation,
)
from strideweave.carriers.shared_ops import (
    PermuteOperation as PermuteOperation,
)
from strideweave.carriers.shared_ops import (
    RearrangeOperation as RearrangeOperation,
)
from strideweave.carriers.tiled_evictable import (
    AwaitProjection as AwaitProjection,
)
from strideweave.carriers.tiled_evictable import (
    AwaitResidency as AwaitResidency,
)
from strideweave.core.layout import Layout as Layout
from strideweave.core.layout import Shape as Shape
from strideweave.core.layout import Stride as Stride
from strideweave.einops import LayoutReference, Token
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
from strideweave.tensor import Tensor as Tensor
from strideweave.tensor import TensorIndexError as TensorIndexError

c_version: str

def _register_tree_types(tree: type, node: Any, node_id: type, /) -> None: ...
def _register_dtype(dtype: type, /) -> None: ...
def _compound_check(name: Any, simple_types: Any, /) -> None: ...
def _representation_check(representation: Any, /) -> None: ...
def _require_one_subtensor(tensor: Tensor, /) -> None: ...
def set_num_threads(n: int, /) -> None: ...
def get_num_threads() -> int: ...
def _debug_live_allocs() -> int: ...
def _debug_fail_alloc_after(n: int, /) -> None: ...
def _debug_fail_io_after(n: int, /) -> None: ...
def _debug_opencl_fail(stage: str, after: int, /) -> None: ...
def _file_remove_temporaries() -> None: ...
def _move_wait_idle() -> None: ...
def _debug_move_hold(hold: object, /) -> None: ...
def _move_pending_count() -> int: ...
def _debug_allocate_like(carrier: Carrier, size: int, dtype: Any = None, /) -> Carrier: ...
def _debug_new_like(carrier: Carrier, values: Any, /) -> Carrier: ...
def _blockdev_scripted(
    capacity: int,
    logical: int,
    physical: int,
    *,
    read_script: Any = ...,
    write_script: Any = ...,
    close_error: int = 0,
    path: Any = ...,
) -> BlockDevice: ...

# Operation plans and capabilities (policy.c); plans travel as raw tuples.
_capability_guards: dict[int, Any]

def _plan_names() -> dict[str, tuple[str, ...]]: ...
def _plan_operations() -> tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...]: ...
def _resolve_plan(
    name: str, operands: tuple[object, ...], accumulator_dtype: Any, /
) -> tuple[Any, ...]: ...
def _describe_plan(plan: tuple[Any, ...], /) -> str: ...
def _check_capability(capability: tuple[Any, ...], /) -> None: ...
def _declare_capabilities(
    cls: type, name: str, capabilities: Iterable[tuple[Any, ...]], /
) -> None: ...
def _class_state(cls: type, /) -> int: ...
def _caps_list(source: object, name: str, /) -> tuple[tuple[Any, ...], ...]: ...
def _caps_match(source: object, name: str, plan: tuple[Any, ...], /) -> int: ...
def _caps_reason(source: object, name: str, plan: tuple[Any, ...], /) -> str | None: ...
def _snapshot_new() -> object: ...
def _snapshot_finalize(
    snapshot: object, name: str, capabilities: Iterable[tuple[Any, ...]], /
) -> None: ...
def _einops_register(
    token: type,
    layout_reference: type,
    rearrange_spec: type,
    reduce_spec: type,
    einsum_spec: type,
    /,
) -> None: ...
def _einops_lex(command: str, /) -> list[Token]: ...
def _einops_parse_layout_ref(tokens: Iterable[Token], /) -> LayoutReference: ...
def _einops_parse(kind: int, command: str, /) -> Any: ...
def _einops_rearrange(tensor: Tensor, description: str, /) -> Tensor: ...
def _einops_reduce(tensor: Tensor, description: str, /) -> Tensor: ...
def _einops_einsum(lhs: Tensor, rhs: Tensor, description: str, /) -> Tensor: ...

@final
class NativeOperation(Operation):
    """A native operation of a class the binding does not name."""

@final
class ProfilerSession:
    """The library's recording of dispatched operation executions on one thread."""

    def __new__(
        cls, carriers: tuple[type, ...] | None, record_shapes: bool, record_backward: bool = False
    ) -> ProfilerSession: ...
    @property
    def active(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def abandon(self) -> None: ...
    def refresh(self) -> bool: ...
    def late_count(self) -> int: ...
    def events(
        self,
    ) -> tuple[
        tuple[int, int | None, str, type, type, tuple[Any, ...] | None, int, int, int, int, bool],
        ...,
    ]: ...

def profile_now_ns() -> int: ...
def _functional_operations() -> list[str]: ...
def _native_classes(backend: str, /) -> list[str]: ...
def _axpy(y: Tensor, alpha: float, x: Tensor, /) -> None: ...
def _softmax(x: Tensor, log: bool, /) -> Tensor: ...
def _softmax_backward(x: Tensor, gradient: Tensor, log: bool, /) -> Tensor: ...
def _cross_entropy(logits: Tensor, target: Tensor, reduction: str, /) -> Tensor: ...
def _cross_entropy_backward(
    logits: Tensor, target: Tensor, reduction: str, gradient: Tensor, /
) -> Tensor: ...
def _adam_step(
    param: Tensor,
    grad: Tensor,
    m: Tensor,
    v: Tensor,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    step: int,
    /,
) -> None: ...

# Operation definitions (definition.c).
_definition_layer: tuple[Any, Any, Any, Any]

def _define_operation(
    name: str,
    operands: tuple[tuple[str, int, bool], ...],
    options: tuple[tuple[str, bool, Any], ...],
    has_vjp: bool,
    non_differentiable: bool,
    definition: Any,
    /,
) -> int: ...
def _definition_call(
    id: int, definition: Any, operands: tuple[Any, ...], options: dict[str, Any], /
) -> tuple[Any, ...]: ...
def _register_definition_layer(
    contract_error: Any, context_type: Any, execute_reference: Any, call_vjp: Any, /
) -> None: ...
def _is_defined_operation(name: object, /) -> bool: ...
def _definition_node(tensor: Any, /) -> tuple[Any, tuple[Any, ...]] | None: ...
