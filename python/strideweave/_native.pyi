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

def _register_tree_types(tree: type, node: Any, node_id: type, /) -> None:
    """Registers the tree vocabulary used to convert id trees.

    Called once by strideweave.core.layout at import; not part of the public API.

    Args:
        tree: the Tree class (a tuple subclass).
        node: the Node enum with members Leaf, Push and Pop.
        node_id: the class of Node.id(k) markers.

    Returns:
        None.
    """

def _register_dtype(dtype: type, /) -> None:
    """Registers the DType enum, whose members map to the library's dtypes by name.

    Called once by strideweave.carriers.dtype at import; not part of the public API.

    Args:
        dtype: the DType enum class, with members Any, Floating, Float32, Int32 and Bool.

    Returns:
        None.
    """

def _compound_check(name: Any, simple_types: Any, /) -> None:
    """Checks a CompoundDType's name and planes by the library's rules (CompoundDType uses it).

    Args:
        name: the name, a non-empty str.
        simple_types: a sequence of 2 to 16 DType members.

    Returns:
        None: the rules hold; TypeError or ValueError otherwise.

    Examples:
        >>> from strideweave import DType, _native
        >>> _native._compound_check("mx", (DType.Float32, DType.Int32))
        >>> _native._compound_check("mx", (DType.Float32,))
        Traceback (most recent call last):
        ValueError: CompoundDType needs at least 2 planes and at most 16, got 1
    """

def _representation_check(representation: Any, /) -> None:
    """Validates a TensorRepresentation by the library's rules (its __post_init__ uses it).

    Args:
        representation: the TensorRepresentation.

    Returns:
        None: it is valid; ValueError or TypeError naming the rule otherwise.

    Examples:
        >>> from strideweave import _native
        >>> _native._representation_check(None)
        Traceback (most recent call last):
        AttributeError: 'NoneType' object has no attribute 'logical_dtype'
    """

def _require_one_subtensor(tensor: Tensor, /) -> None:
    """The library's gate for operations bound in Python: refuses a multi-subtensor tensor.

    Args:
        tensor: a Tensor.

    Returns:
        None: a single-subtensor tensor; NotImplementedError "Multi-subtensor Tensor operation
        execution ..." otherwise.

    Examples:
        >>> from strideweave import CPU, Layout, Tensor, _native
        >>> _native._require_one_subtensor(Tensor(CPU(2), 0, Layout.leaf(2, 1)))
    """

def set_num_threads(n: int, /) -> None:
    """Sets the number of threads large CPU kernels use, the calling one included.

    The setting is process-wide. Kernels of at least about 128K elements split their work into
    chunks that do not depend on the thread count, so results are bit-identical for every
    setting, sums included; smaller ones always run on the calling thread. The kernels run
    without the GIL, so several Python threads can run them at once (one of them uses the pool,
    the others run on their own thread).

    Args:
        n: an int from 1 to 1024 (1 runs everything on the calling thread).

    Returns:
        None.

    Raises:
        TypeError: 'set_num_threads() argument must be an int, not str'.
        ValueError: 'the number of threads must be between 1 and 1024, not 0'.

    Examples:
        >>> from strideweave import get_num_threads, set_num_threads
        >>> before = get_num_threads()
        >>> set_num_threads(2)
        >>> get_num_threads()
        2
        >>> set_num_threads(0)
        Traceback (most recent call last):
        ValueError: the number of threads must be between 1 and 1024, not 0
        >>> set_num_threads(before)
    """

def get_num_threads() -> int:
    """The number of threads large CPU kernels use, the calling one included.

    It is what set_num_threads last stored; before that, the environment variable
    STRIDEWEAVE_NUM_THREADS when it is an integer from 1 to 1024 (read once, at first use),
    otherwise the number of cores the process may run on.

    Returns:
        int: the thread count, at least 1.

    Examples:
        >>> from strideweave import get_num_threads
        >>> get_num_threads() >= 1
        True
    """

def _debug_live_allocs() -> int:
    """The number of live libstrideweave allocations, process-wide.

    Tests compare it before and after a call to prove that the C library leaked nothing.

    Returns:
        int: allocations made and not yet freed.
    """

def _debug_fail_alloc_after(n: int, /) -> None:
    """Fault injection: the library allocator succeeds n more times, then fails.

    Args:
        n: allocations that still succeed; a negative n disables the hook.

    Returns:
        None.
    """

def _debug_fail_io_after(n: int, /) -> None:
    """Fault injection: n more file operations succeed, later ones fail with ENOSPC.

    Args:
        n: file operations that still succeed; a negative n disables the hook.

    Returns:
        None.
    """

def _debug_opencl_fail(stage: str, after: int, /) -> None:
    """Fault injection for the OpenCL runtime: after more calls at stage succeed, the next one fails
    as the runtime would ('... failed (injected)'); then the hook is off.

    Args:
        stage: 'enqueue', 'wait', 'map', 'compile', or 'none' (off).
        after: calls at that stage that still succeed.

    Returns:
        None.
    """

def _debug_opencl_hold(hold: bool, /) -> None:
    """Device-side gate for tests: while held, every OpenCL device in use runs nothing enqueued after
    the hold began (commands are accepted and wait), so submitted work can be observed before it
    completes; anything that waits for the device blocks until the hold ends.

    Args:
        hold: True to hold the devices' queues, False to let them run.

    Returns:
        None.
    """

def _opencl_kernel_stats() -> tuple[int, int, int]:
    """The OpenCL kernel cache's counters, for tests and benchmarks.

    Returns:
        (entries cached now, kernels compiled, kernels launched) since the process started.
    """

def _file_remove_temporaries() -> None:
    """Removes the files of every temporary FileBacked carrier still open (registered with atexit
    by strideweave.carriers).

    Returns:
        None.
    """

def _move_wait_idle() -> None:
    """Blocks until no asynchronous move is running (registered with atexit by
    strideweave.carriers.move).

    Returns:
        None.
    """

def _debug_move_hold(hold: object, /) -> None:
    """Test hook: while hold is true, asynchronous move workers wait before transferring.

    Args:
        hold: hold (true) or let the workers go (false).

    Returns:
        None.
    """

def _move_pending_count() -> int:
    """The number of asynchronous moves running now.

    Returns:
        int: the running moves.
    """

def _debug_allocate_like(carrier: Carrier, size: int, dtype: Any = None, /) -> Carrier:
    """The library's allocate_like policy on carrier (for tests: it runs a Python carrier's hook as
    library code does).

    Args:
        carrier: any carrier.
        size: the element count.
        dtype: a DType, or None for the carrier's own.

    Returns:
        Carrier: the new carrier.
    """

def _debug_new_like(carrier: Carrier, values: Any, /) -> Carrier:
    """The library's new_like policy on carrier (for tests: it runs a Python carrier's hook as
    library code does).

    Args:
        carrier: any carrier.
        values: the values; None marks a hole.

    Returns:
        Carrier: the new carrier.
    """

def _blockdev_scripted(
    capacity: int,
    logical: int,
    physical: int,
    *,
    read_script: Any = ...,
    write_script: Any = ...,
    close_error: int = 0,
    path: Any = ...,
) -> BlockDevice:
    """For tests: a BlockDevice backed by memory whose system calls follow scripts.

    The n-th read call takes read_script[n] and the n-th write call write_script[n]; once a
    script runs out, calls move everything asked. Steps: ("interrupt", 0) fails with EINTR,
    ("progress", n) moves at most n bytes, ("zero", 0) moves nothing, ("error", errno) fails.

    Args:
        capacity: the size in bytes.
        logical: the logical block size.
        physical: the physical block size.
        read_script: the read steps.
        write_script: the write steps.
        close_error: an errno the close returns (0: none).
        path: what the path property reports.

    Returns:
        BlockDevice: the device.

    Raises:
        ValueError: 'capacity must be positive', 'logical block size must be positive',
            'physical block size must be positive', 'capacity must be a multiple ...',
            'physical block size must be a multiple ...', 'unknown script step'.

    Examples:
        >>> from strideweave import _native
        >>> dev = _native._blockdev_scripted(4096, 512, 4096, write_script=[("interrupt", 0)])
        >>> c = dev.allocate(1)
        >>> dev._attempts()
        (0, 2, 0)
    """

# Operation plans and capabilities (policy.c); plans travel as raw tuples.
_capability_guards: dict[int, Any]

def _plan_names() -> dict[str, tuple[str, ...]]:
    """The library's name tables of plans.

    Returns:
        dict: 'arithmetic', 'accumulation' and 'role' to tuples of names, in enumerator order.
    """

def _plan_operations() -> tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...]:
    """The registered operations that have plans, in registry order.

    Returns:
        tuple: (plan name, dispatch name, title, ((operand name, role name), ...)) per
            operation.
    """

def _resolve_plan(
    name: str, operands: tuple[object, ...], accumulator_dtype: Any, /
) -> tuple[Any, ...]:
    """Resolves the central plan of a built-in operation.

    Args:
        name: the operation's plan name ('reduce_sum').
        operands: a tuple of DTypes (tensors) and numbers (weak scalars).
        accumulator_dtype: a DType, or None when not given.

    Returns:
        tuple: the raw plan.
    """

def _describe_plan(plan: tuple[Any, ...], /) -> str:
    """The stable description of a raw plan.

    Returns:
        str: 'add with operands (tensor Int32->Int32, ...), int32_exact_checked compute, no
            accumulation, Int32 output'.
    """

def _check_capability(capability: tuple[Any, ...], /) -> None:
    """Checks a raw capability with the library's rules.

    Returns:
        None; raises TypeError or ValueError.
    """

def _declare_capabilities(cls: type, name: str, capabilities: Iterable[tuple[Any, ...]], /) -> None:
    """Declares the complete capability set of carrier class cls (atomic).

    Args:
        cls: the exact class.
        name: its name in messages.
        capabilities: raw capabilities.

    Returns:
        None.
    """

def _class_state(cls: type, /) -> int:
    """Where a class's capability set stands, without observing it.

    Returns:
        int: 0 open, 1 declared, 2 sealed empty by a query, 3 by construction, 4 a shipped
            backend.
    """

def _caps_list(source: object, name: str, /) -> tuple[tuple[Any, ...], ...]:
    """The sorted capabilities of a class (observing it), a snapshot or an Evictable carrier.

    Returns:
        tuple: raw capabilities.
    """

def _caps_match(source: object, name: str, plan: tuple[Any, ...], /) -> int:
    """The index of the capability matching a raw plan in the source's list.

    Returns:
        int: the index, or -1 when none matches.
    """

def _caps_reason(source: object, name: str, plan: tuple[Any, ...], /) -> str | None:
    """Why the source does not execute a raw plan.

    Returns:
        str | None: the sentence, or None when it does.
    """

def _snapshot_new() -> object:
    """A fresh, unfinalized capability snapshot for one carrier instance (freed with the returned
    object).

    Returns:
        object: an opaque snapshot.
    """

def _snapshot_finalize(
    snapshot: object, name: str, capabilities: Iterable[tuple[Any, ...]], /
) -> None:
    """Finalizes a snapshot once from raw capabilities.

    Returns:
        None.
    """

def _einops_register(
    token: type,
    layout_reference: type,
    rearrange_spec: type,
    reduce_spec: type,
    einsum_spec: type,
    /,
) -> None:
    """Registers the classes of strideweave.einops (called once at its import; not part of the
    public API).
    """

def _einops_lex(command: str, /) -> list[Token]:
    """The tokens of a layout command (see strideweave.einops.lex)."""

def _einops_parse_layout_ref(tokens: Iterable[Token], /) -> LayoutReference:
    """Parses Token objects as one layout reference (see strideweave.einops.parse_layout_ref)."""

def _einops_parse(kind: int, command: str, /) -> Any:
    """The cached spec of a command: kind 0 rearrange, 1 reduce, 2 einsum (see
    strideweave.einops.parse_rearrange).
    """

def _einops_rearrange(tensor: Tensor, description: str, /) -> Tensor:
    """strideweave.einops.rearrange."""

def _einops_reduce(tensor: Tensor, description: str, /) -> Tensor:
    """strideweave.einops.reduce."""

def _einops_einsum(lhs: Tensor, rhs: Tensor, description: str, /) -> Tensor:
    """strideweave.einops.einsum."""

@final
class NativeOperation(Operation):
    """A native operation of a class the binding does not name.

    Returns:
        NativeOperation: not constructible from Python.

    Examples:
        >>> from strideweave import _native
        >>> issubclass(_native.NativeOperation, Operation)
        True
    """

@final
class ProfilerSession:
    """The library's recording of dispatched operation executions (and, when asked, of backward
    executions) on one thread; see
    strideweave.profiling.
    """

    def __new__(
        cls, carriers: tuple[type, ...] | None, record_shapes: bool, record_backward: bool = False
    ) -> ProfilerSession:
        """Create and return a new object.  See help(type) for accurate signature."""
    @property
    def active(self) -> bool:
        """Whether the session runs (started, not stopped or abandoned)."""
    def start(self) -> None:
        """Makes this session the active one of the calling thread."""
    def stop(self) -> None:
        """Ends the session (on the thread that started it)."""
    def abandon(self) -> None:
        """Abandons a running session without error."""
    def refresh(self) -> bool:
        """Takes in the move completions that arrived: whether the events changed."""
    def late_count(self) -> int:
        """The number of move completions recorded so far."""
    def events(
        self,
    ) -> tuple[
        tuple[int, int | None, str, type, type, tuple[Any, ...] | None, int, int, int, int, bool],
        ...,
    ]:
        """The recorded events as tuples (id, parent_id, name, carrier_type, implementation_type, input_shapes, start_time_ns, duration_ns, self_time_ns, thread_id, succeeded)."""

def profile_now_ns() -> int:
    """The monotonic clock of profiler events, in nanoseconds."""

def _functional_operations() -> list[str]:
    """The names of the registered operations that have a functional form, in registry order.

    Returns:
        list[str]: the names.

    Examples:
        >>> from strideweave._native import _functional_operations
        >>> import strideweave.functional as F
        >>> all(hasattr(F, n) for n in _functional_operations())
        True
    """

def _native_classes(backend: str, /) -> list[str]:
    """The class names of one backend's native operations ('cpu', 'generic' or 'shared'), sorted.

    Args:
        backend: the backend's name.

    Returns:
        list[str]: the names (empty for an unknown backend).

    Examples:
        >>> from strideweave._native import _native_classes
        >>> _native_classes('shared')[0]
        'GenericViewOperation'
    """

def _axpy(y: Tensor, alpha: float, x: Tensor, /) -> None:
    """In place y += alpha * x for CPU Float32 tensors of one shape (their layouts and offsets may
    differ), computed in double and rounded once; y's version rises by one. The optimizers'
    step.

    Args:
        y: the Tensor updated.
        alpha: a real number.
        x: the Tensor added.

    Returns:
        None.

    Raises:
        TypeError: 'y must be a Tensor', 'axpy needs CPU tensors', 'axpy needs Float32 tensors'.
        ValueError: 'axpy operands must have the same shape'.
        RuntimeError: 'Carrier is released', 'Carrier is not mutable'.

    Examples:
        >>> from strideweave._native import _axpy
        >>> import strideweave.friendly as F
        >>> w, g = F.tensor([1.0, 2.0]), F.tensor([4.0, 8.0])
        >>> _axpy(w, -0.5, g)
        >>> F.to_list(w)
        [-1.0, -2.0]
    """

def _softmax(x: Tensor, log: bool, /) -> Tensor:
    """softmax (log false) or log_softmax (log true) over the classes of a CPU Float32 tensor of one
    or two flat modes (rows along mode 0, classes along mode 1; one mode is one row), in double
    with the row's maximum subtracted first (sw_softmax). Records no autograd context.

    Args:
        x: the Tensor of logits.
        log: whether to return log-probabilities.

    Returns:
        Tensor: a fresh CPU tensor, in x's layout when that is injective, else row-major.

    Raises:
        TypeError: 'x must be a Tensor', 'softmax input must be a CPU Float32 tensor'.
        ValueError: 'softmax needs a tensor of one or two flat modes'.
        RuntimeError: 'Carrier is released'.

    Examples:
        >>> from strideweave._native import _softmax
        >>> import strideweave.friendly as F
        >>> F.to_list(_softmax(F.tensor([0.0, 0.0]), False))
        [0.5, 0.5]
    """

def _softmax_backward(x: Tensor, gradient: Tensor, log: bool, /) -> Tensor:
    """The vector-Jacobian product of _softmax at x for the gradient of its result
    (sw_softmax_backward).

    Args:
        x: the Tensor softmax was applied to.
        gradient: a Tensor of x's shape.
        log: whether the forward was log_softmax.

    Returns:
        Tensor: the gradient with respect to x, in x's layout.

    Raises:
        TypeError: as _softmax, and 'gradient must be a Tensor'.
        ValueError: 'softmax gradient must have the input's shape'.

    Examples:
        >>> from strideweave._native import _softmax_backward
        >>> import strideweave.friendly as F
        >>> F.to_list(_softmax_backward(F.tensor([0.0, 0.0]), F.tensor([1.0, 1.0]), True))
        [0.0, 0.0]
    """

def _cross_entropy(logits: Tensor, target: Tensor, reduction: str, /) -> Tensor:
    """The cross-entropy of two-mode logits (rows, classes) against class indices (one per row, CPU
    Float32 holding integers or CPU Int32, any layout of that size) or class probabilities of the
    logits' shape (sw_cross_entropy). Records no autograd context.

    Args:
        logits: the Tensor of scores.
        target: the Tensor of indices or probabilities.
        reduction: 'mean' or 'sum' over the rows.

    Returns:
        Tensor: the loss, a 1:1 CPU tensor.

    Raises:
        TypeError: a non-Tensor, or a carrier other than CPU Float32 (Int32 for indices).
        ValueError: 'reduction must be 'mean' or 'sum'', a target of another size, or an index
            that is not an integer.
        IndexError: 'cross_entropy target K is outside [0, C)'.

    Examples:
        >>> from strideweave._native import _cross_entropy
        >>> import strideweave.friendly as F
        >>> round(F.item(_cross_entropy(F.tensor([[0.0, 0.0]]), F.tensor([1.0]), "mean")), 4)
        0.6931
    """

def _cross_entropy_backward(
    logits: Tensor, target: Tensor, reduction: str, gradient: Tensor, /
) -> Tensor:
    """The gradient of _cross_entropy with respect to the logits, times the single element of
    gradient: (softmax(logits) * row_total - target) / rows for 'mean'
    (sw_cross_entropy_backward).

    Args:
        logits: the Tensor of scores.
        target: the Tensor of indices or probabilities.
        reduction: 'mean' or 'sum'.
        gradient: a one-element CPU Float32 Tensor.

    Returns:
        Tensor: the gradient in the logits' layout.

    Raises:
        TypeError: as _cross_entropy, and for a gradient of more than one element.
        ValueError: as _cross_entropy.
        IndexError: as _cross_entropy.

    Examples:
        >>> from strideweave._native import _cross_entropy_backward
        >>> import strideweave.friendly as F
        >>> g = _cross_entropy_backward(F.tensor([[0.0, 0.0]]), F.tensor([1.0]), "mean", F.tensor([1.0]))
        >>> F.to_list(g)
        [0.5, -0.5]
    """

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
) -> None:
    """One Adam step in place over CPU Float32 tensors of one shape (sw_tensor_adam_step): m and v
    are the moment estimates, step counts from 1. nn.Adam's step.

    Args:
        param: the Tensor updated.
        grad: its gradient.
        m: the first-moment Tensor (updated).
        v: the second-moment Tensor (updated).
        lr: the learning rate.
        beta1: the first moment's decay.
        beta2: the second moment's decay.
        eps: added to the denominator.
        weight_decay: L2 decay added to the gradient.
        step: the number of this step.

    Returns:
        None.

    Raises:
        TypeError: 'param must be a Tensor', 'adam needs CPU tensors', 'adam needs Float32
            tensors'.
        ValueError: 'adam operands must have the parameter's shape', 'adam: lr must be
            positive', ...
        RuntimeError: 'Carrier is released', 'Carrier is not mutable'.

    Examples:
        >>> from strideweave._native import _adam_step
        >>> import strideweave.friendly as F
        >>> p, g = F.tensor([1.0]), F.tensor([0.5])
        >>> m, v = F.zeros(1), F.zeros(1)
        >>> _adam_step(p, g, m, v, 0.1, 0.9, 0.999, 1e-8, 0.0, 1)
        >>> round(p[0], 6)
        0.9
    """

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
) -> int:
    """_define_operation(name, operands, options, has_vjp, non_differentiable, definition) -> int

    Registers a Python definition in the library's registry and returns its id.

    Args:
        name: the namespaced name.
        operands: (name, kind index, differentiable) tuples.
        options: (name, required, default) tuples.
        has_vjp: the definition has a VJP callable.
        non_differentiable: its vjp is NON_DIFFERENTIABLE.
        definition: the OperationDefinition, kept for ever.
    """

def _definition_call(
    id: int, definition: Any, operands: tuple[Any, ...], options: dict[str, Any], /
) -> tuple[Any, ...]:
    """_definition_call(id, definition, operands, options) -> tuple

    Calls a registered Python definition through the library.

    Returns:
        tuple[Tensor, ...]: the results.
    """

def _register_definition_layer(
    contract_error: Any, context_type: Any, execute_reference: Any, call_vjp: Any, /
) -> None:
    """_register_definition_layer(ProviderContractError, VJPContext, _execute_reference, _call_vjp)

    Gives the binding the Python layer's names.
    """

def _is_defined_operation(name: object, /) -> bool:
    """_is_defined_operation(name) -> bool

    Whether name is an operation defined at run time.
    """

def _definition_node(tensor: Any, /) -> tuple[Any, tuple[Any, ...]] | None:
    """_definition_node(op) -> (invocation or None, saved tuple) or None

    What a defined operation's autograd node keeps now; None for another operation.
    """

# strideweave.distributed's native half (see strideweave/distributed.py).
def _dist_available() -> bool: ...
def _dist_init() -> None: ...
def _dist_initialized() -> bool: ...
def _dist_finalize() -> None: ...
def _dist_rank() -> int: ...
def _dist_world_size() -> int: ...
def _dist_abort(code: int, message: str, /) -> None: ...
def _dist_set_timeout(seconds: float, /) -> None: ...
def _dist_timeout() -> float: ...
def _dist_all_reduce(tensor: Any, op: int, queued: bool, /) -> Any: ...
def _dist_broadcast(tensor: Any, root: int, queued: bool, /) -> Any: ...
def _dist_all_gather(tensor: Any, queued: bool, /) -> Any: ...
def _dist_reduce_scatter(tensor: Any, op: int, queued: bool, /) -> Any: ...
def _dist_barrier(queued: bool, /) -> Any: ...
def _dist_work_done(work: Any, /) -> bool: ...
def _dist_work_wait(work: Any, /) -> None: ...
def _dist_ddp_new(parameters: Any, bucket_bytes: int, /) -> Any: ...
def _dist_ddp_state(state: Any, /) -> tuple[int, int]: ...
def _dist_ddp_reported(state: Any, index: int, /) -> bool: ...
def _dist_ddp_reset(state: Any, /) -> None: ...
def _dist_ddp_set_sync(state: Any, on: bool, /) -> None: ...
def _dist_ddp_close(state: Any, /) -> None: ...
