import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from strideweave.core.module import Module
from strideweave.tensor import Tensor

_T = TypeVar("_T")

DEFAULT_TIMEOUT: float

__all__ = [
    "AwaitCollective",
    "DistributedDataParallel",
    "abort",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "finalize",
    "init",
    "is_available",
    "is_initialized",
    "rank",
    "reduce_scatter",
    "shard",
    "world_size",
]

def is_available() -> bool:
    """Whether this build of StrideWeave has MPI.

    Returns:
        bool: True when the library was built with an MPI implementation.

    Examples:
        >>> import strideweave.distributed as dist
        >>> dist.is_available() in (True, False)
        True
    """

def is_initialized() -> bool:
    """Whether ``init()`` has joined the job (and ``finalize()`` not yet run).

    Returns:
        bool: the state.

    Examples:
        >>> import strideweave.distributed as dist
        >>> dist.is_initialized() in (True, False)
        True
    """

def init(*, timeout: float | None = None) -> None:
    """Joins the job this process was started in (a job of one without mpirun).

    Starts the communication thread (MPI_Init_thread with MPI_THREAD_MULTIPLE
    unless the program initialised MPI itself), installs the abort-on-exception
    hook and finalises at exit. Idempotent.

    Args:
        timeout: seconds a blocking collective or wait() may take before it
            fails (None: the STRIDEWEAVE_DIST_TIMEOUT environment variable, else
            1800; 0 waits for ever).

    Returns:
        None.

    Raises:
        NotImplementedError: StrideWeave was built without MPI.
        RuntimeError: MPI was finalised already, or started without threads.

    Examples:
        >>> import strideweave.distributed as dist
        >>> dist.init() if dist.is_available() else None
    """

def finalize() -> None:
    """Waits for queued collectives and leaves the job; init() cannot run again.

    Returns:
        None.

    Examples:
        >>> import strideweave.distributed as dist
        >>> dist.finalize()  # a no-op before init()
    """

def rank() -> int:
    """This process's rank, 0 to world_size() - 1.

    Returns:
        int: the rank.

    Raises:
        RuntimeError: before init().

    Examples:
        >>> import strideweave.distributed as dist
        >>> dist.rank() if dist.is_initialized() else 0
        0
    """

def world_size() -> int:
    """The number of processes in the job.

    Returns:
        int: the world size.

    Raises:
        RuntimeError: before init().

    Examples:
        >>> import strideweave.distributed as dist
        >>> dist.world_size() if dist.is_initialized() else 1
        1
    """

def abort(message: str = "aborting the job", code: int = 1) -> None:
    """Ends every process of the job, printing message with this rank.

    Args:
        message: what to print on stderr.
        code: the exit status mpirun reports.

    Returns:
        None: it does not return while the job runs.

    Raises:
        RuntimeError: before init().

    Examples:
        >>> import strideweave.distributed as dist
        >>> callable(dist.abort)
        True
    """

class AwaitCollective(Generic[_T]):
    """The completion of a collective started with ``async_op=True``.

    It follows the AwaitResult contract of moves: ``done`` tells whether the
    collective reached its outcome; ``wait()`` blocks until then (releasing
    the GIL) and returns the value or raises the failure, the same on every
    call. Only the collectives make them.

    Returns:
        AwaitCollective: from the collectives.

    Examples:
        >>> import strideweave.distributed as dist
        >>> hasattr(dist.AwaitCollective, "wait")
        True
    """
    def __init__(self, work: Any, value: _T) -> None: ...
    @property
    def done(self) -> bool:
        """True once the collective has its outcome.

        Returns:
            bool: whether wait() would return at once.

        Examples:
            >>> import strideweave.distributed as dist
            >>> isinstance(dist.AwaitCollective.done, property)
            True
        """
    def wait(self) -> _T:
        """Blocks until the collective completed; returns its value or raises.

        Returns:
            object: the tensor written in place, the fresh result of
            all_gather/reduce_scatter, or None for a barrier.

        Raises:
            RuntimeError: MPI failed, or the timeout passed.
            ValueError: the processes made different calls.

        Examples:
            >>> import strideweave.distributed as dist
            >>> callable(dist.AwaitCollective.wait)
            True
        """

def all_reduce(tensor: Tensor, op: str = "sum", *, async_op: bool = False) -> Any:
    """Replaces every element by its reduction over the processes, in place.

    Args:
        tensor: a CPU Float32 or Int32 tensor whose layout reaches each element once.
        op: "sum", "mean" (Float32), "max" or "min".
        async_op: return an AwaitCollective at once instead of blocking.

    Returns:
        Tensor | AwaitCollective: the tensor (after completion), or the completion.

    Raises:
        TypeError: not a CPU Float32/Int32 tensor; mean on Int32.
        ValueError: an unknown reduction; processes that disagree.
        RuntimeError: not initialised, immutable, released or aliasing tensors.

    Examples:
        >>> import strideweave.distributed as dist
        >>> import strideweave.friendly as F
        >>> t = F.tensor([1.0, 2.0])
        >>> dist.all_reduce(t)[1] if dist.is_initialized() else 2.0
        2.0
    """

def broadcast(tensor: Tensor, src: int = 0, *, async_op: bool = False) -> Any:
    """Copies process src's values into every other process's tensor, in place.

    Args:
        tensor: a CPU Float32 or Int32 tensor (written on every process but src).
        src: the rank whose values everyone receives.
        async_op: return an AwaitCollective at once instead of blocking.

    Returns:
        Tensor | AwaitCollective: the tensor, or the completion.

    Raises:
        ValueError: src is not a rank; processes that disagree.

    Examples:
        >>> import strideweave.distributed as dist
        >>> callable(dist.broadcast)
        True
    """

def all_gather(tensor: Tensor, *, async_op: bool = False) -> Any:
    """Every process's tensor, stacked along a new leading mode in rank order.

    Args:
        tensor: a CPU Float32 or Int32 tensor of any layout (read only).
        async_op: return an AwaitCollective at once instead of blocking.

    Returns:
        Tensor | AwaitCollective: a fresh tensor of shape (world_size, *shape),
        each process's block contiguous; or the completion that gives it.

    Examples:
        >>> import strideweave.distributed as dist
        >>> callable(dist.all_gather)
        True
    """

def reduce_scatter(tensor: Tensor, op: str = "sum", *, async_op: bool = False) -> Any:
    """Reduces block ``rank()`` of a (world_size, ...) tensor over the processes.

    Args:
        tensor: a CPU Float32 or Int32 tensor whose first mode has extent world_size().
        op: "sum", "mean" (Float32), "max" or "min".
        async_op: return an AwaitCollective at once instead of blocking.

    Returns:
        Tensor | AwaitCollective: a fresh tensor of the remaining modes' shape
        holding the reduction of every process's block rank(); or its completion.

    Raises:
        ValueError: the first mode is not the world size.

    Examples:
        >>> import strideweave.distributed as dist
        >>> callable(dist.reduce_scatter)
        True
    """

def barrier(*, async_op: bool = False) -> Any:
    """Returns when every process has called it.

    Args:
        async_op: return an AwaitCollective at once instead of blocking.

    Returns:
        None | AwaitCollective: None, or the completion.

    Examples:
        >>> import strideweave.distributed as dist
        >>> dist.barrier() if dist.is_initialized() else None
    """

def shard(dataset: Sequence[_T], rank: int | None = None, world: int | None = None) -> list[_T]:
    """This process's share of a dataset: every world-th item from index rank.

    Deterministic and disjoint: the shards of ranks 0..world-1 together hold every
    item once, in an order that depends only on the dataset.

    Args:
        dataset: any sequence.
        rank: this process's rank (default: rank()).
        world: the number of processes (default: world_size()).

    Returns:
        list: dataset[rank::world].

    Raises:
        ValueError: world < 1 or rank outside [0, world).

    Examples:
        >>> from strideweave.distributed import shard
        >>> shard(list(range(10)), 1, 3)
        [1, 4, 7]
    """

class DistributedDataParallel(Module):
    """Wraps a module so that backward() leaves the mean gradient on every process.

    At construction the parameters take rank 0's values (a broadcast). During
    every reverse pass, each parameter's final gradient is copied into its
    bucket (about ``bucket_cap_mb`` MiB, last parameter first); a full bucket's
    mean over the processes is taken while the pass goes on, and the pass ends
    with every gradient replaced by its mean. Every parameter must receive a
    gradient in every pass. ``no_sync()`` accumulates local gradients instead.

    Args:
        module: the model (its parameters are CPU Float32 tensors).
        bucket_cap_mb: the bucket size in MiB.

    Returns:
        DistributedDataParallel: the wrapper; calling it calls the module.

    Raises:
        RuntimeError: not initialised.
        ValueError: no parameters.

    Examples:
        >>> import strideweave.distributed as dist
        >>> issubclass(dist.DistributedDataParallel, dist.Module)
        True
    """

    module: Module
    def __init__(self, module: Module, *, bucket_cap_mb: float = 25.0) -> None: ...
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the module after checking that the last pass averaged every gradient.

        Args:
            *args: the module's arguments.
            **kwargs: the module's keyword arguments.

        Returns:
            object: what the module returns.

        Raises:
            RuntimeError: the previous backward pass gave no gradient to some
                parameters (named); reset() forgets that pass.

        Examples:
            >>> import strideweave.distributed as dist
            >>> callable(dist.DistributedDataParallel.forward)
            True
        """
    @property
    def bucket_count(self) -> int:
        """The number of gradient buckets.

        Returns:
            int: the count.

        Examples:
            >>> import strideweave.distributed as dist
            >>> isinstance(dist.DistributedDataParallel.bucket_count, property)
            True
        """
    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """A context in which backward() keeps local gradients (accumulation).

        Returns:
            contextlib.AbstractContextManager: turns averaging off inside.

        Examples:
            >>> import strideweave.distributed as dist
            >>> callable(dist.DistributedDataParallel.no_sync)
            True
        """
    def reset(self) -> None:
        """Forgets a pass that ended early, so that the next starts clean.

        Returns:
            None.

        Examples:
            >>> import strideweave.distributed as dist
            >>> callable(dist.DistributedDataParallel.reset)
            True
        """
    def close(self) -> None:
        """Stops watching the parameters' gradients (also when collected).

        Returns:
            None.

        Examples:
            >>> import strideweave.distributed as dist
            >>> callable(dist.DistributedDataParallel.close)
            True
        """
