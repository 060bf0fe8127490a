"""Operation profiling: which dispatched operations ran, where, and for how long."""

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from strideweave.carriers.base import Carrier

__all__ = ["Profiler", "ProfilerAggregate", "ProfilerEvent", "profile"]

@dataclass(frozen=True, slots=True)
class ProfilerEvent:
    """One recorded execution of a dispatched operation, or one half of a move.

    Attributes:
        id: counts from 0 in execution start order.
        parent_id: the id of the nearest recorded enclosing execution, or None.
        name: the canonical dispatched name, e.g. ``'relu'``.
        carrier_type: the exact class of the dispatching carrier.
        implementation_type: the class of the executed operation.
        input_shapes: None unless shapes were recorded; else one entry per
            positional argument, ``layout.shape.top_level`` for a tensor and
            None otherwise.
        start_time_ns: monotonic start time in nanoseconds.
        duration_ns: inclusive synchronous wall time.
        self_time_ns: ``max(0, duration - sum of directly nested durations)``.
        thread_id: ``threading.get_ident()`` of the executing thread.
        succeeded: False if the operation raised or returned no Tensor.

    Examples:
        >>> import strideweave as sw
        >>> t = sw.Tensor(sw.CPU(2), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))
        >>> with sw.profile() as prof:
        ...     _ = sw.exp(t)
        >>> event = prof.events()[0]
        >>> event.id, event.parent_id, event.name, event.succeeded
        (0, None, 'exp', True)
    """

    id: int
    parent_id: int | None
    name: str
    carrier_type: type
    implementation_type: type
    input_shapes: tuple[Any, ...] | None
    start_time_ns: int
    duration_ns: int
    self_time_ns: int
    thread_id: int
    succeeded: bool

@dataclass(frozen=True, slots=True)
class ProfilerAggregate:
    """The executions of one operation name on one carrier class (and shapes).

    Attributes:
        name: the canonical operation name.
        carrier_type: the exact carrier class.
        input_shapes: the shapes when grouped by them, else None.
        count: the number of executions.
        total_time_ns: the sum of their durations.
        self_total_time_ns: the sum of their self times.
        mean_time_ns: ``total_time_ns / count``.
        min_time_ns: the shortest duration.
        max_time_ns: the longest duration.

    Examples:
        >>> import strideweave as sw
        >>> t = sw.Tensor(sw.CPU(2), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))
        >>> with sw.profile() as prof:
        ...     _ = sw.exp(t)
        ...     _ = sw.exp(t)
        >>> row = prof.key_averages()[0]
        >>> row.name, row.carrier_type is sw.CPU, row.count
        ('exp', True, 2)
    """

    name: str
    carrier_type: type
    input_shapes: tuple[Any, ...] | None
    count: int
    total_time_ns: int
    self_total_time_ns: int
    mean_time_ns: float
    min_time_ns: int
    max_time_ns: int

class Profiler:
    """A single-use context manager recording dispatched operation executions.

    Records the executions on the thread that enters it; the results are
    available after it exits, also when its body raised (the exception
    still propagates). ``profile(...)`` makes one.

    Args:
        carriers: None to record every carrier class, else an iterable of
            Carrier subclasses, matched by exact class.
        record_shapes: whether events keep the shapes of tensor arguments.
        record_backward: whether backward executions are recorded too
            (off by default): each node's backward becomes an event named
            ``"<operation>.backward"`` (``"move.backward"`` for a move)
            under the forward's carrier class, with the gradient as its one
            argument, and the operations it runs are its children.

    Examples:
        >>> import strideweave as sw
        >>> t = sw.Tensor(sw.CPU(2), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))
        >>> with sw.Profiler(carriers=[sw.Generic]) as prof:
        ...     _ = sw.exp(t)
        >>> prof.events()
        ()
    """

    __slots__ = (
        "_carriers",
        "_events",
        "_lock",
        "_record_backward",
        "_record_shapes",
        "_session",
        "_stopped",
    )
    def __init__(
        self,
        *,
        carriers: Iterable[type[Carrier]] | None = None,
        record_shapes: bool = False,
        record_backward: bool = False,
    ) -> None: ...
    def __enter__(self) -> Profiler: ...
    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool: ...
    def events(self) -> tuple[ProfilerEvent, ...]:
        """The recorded events, in execution start order.

        Returns:
            A tuple of ProfilerEvent; RuntimeError before the context exited.

        Examples:
            >>> import strideweave as sw
            >>> t = sw.Tensor(sw.CPU(2), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))
            >>> with sw.profile() as prof:
            ...     _ = sw.add(t, t)
            >>> [event.name for event in prof.events()]
            ['add']
        """
    def key_averages(self, *, group_by_input_shape: bool = False) -> tuple[ProfilerAggregate, ...]:
        """Aggregates of the events by name and carrier class (and shapes).

        Args:
            group_by_input_shape: also group by the recorded input shapes.

        Returns:
            A tuple of ProfilerAggregate sorted by name, carrier class (module,
            qualified name) and the repr of the shapes.

        Examples:
            >>> import strideweave as sw
            >>> def vector(n):
            ...     return sw.Tensor(sw.CPU(n), 0, sw.Layout(sw.Shape([n]), sw.Stride([1])))
            >>> with sw.profile(record_shapes=True) as prof:
            ...     _ = sw.exp(vector(2))
            ...     _ = sw.exp(vector(1))
            >>> [(r.input_shapes, r.count) for r in prof.key_averages(group_by_input_shape=True)]
            [(((1,),), 1), (((2,),), 1)]
        """
    def table(
        self,
        *,
        sort_by: str = "self_total_time_ns",
        descending: bool = True,
        group_by_input_shape: bool = False,
        row_limit: int | None = None,
        unit: str = "ns",
    ) -> str:
        """The aggregates as a text table.

        Args:
            sort_by: the ProfilerAggregate field to sort by.
            descending: sort from the largest value.
            group_by_input_shape: group by input shapes too (adds a column).
            row_limit: the maximum number of rows, or None for all.
            unit: the unit of the time columns: "ns" (the default, integers
                as recorded), or "us", "ms" or "s" (three decimals; beyond
                the reference).

        Returns:
            The header, a line of dashes and one line per row, joined by
            newlines; cells are left-justified and joined by two spaces.

        Examples:
            >>> import strideweave as sw
            >>> t = sw.Tensor(sw.CPU(2), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))
            >>> with sw.profile() as prof:
            ...     _ = sw.exp(t)
            >>> print(prof.table().splitlines()[0][:49])
            Name  Carrier                               Calls
            >>> len(prof.table().splitlines())
            3
        """
    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Writes the events as Chrome trace-event JSON (Perfetto, chrome://tracing).

        Every recorded execution becomes one complete event (``"ph": "X"``)
        with ``ts`` and ``dur`` in microseconds, the process id as ``pid``
        and the thread id as ``tid``, so nested executions nest on one track
        per thread; ``args`` hold the event's other fields. One metadata
        event (``"ph": "M"``) per thread names its track.

        Args:
            path: the file to write (replaced if it exists).

        Returns:
            None.

        Examples:
            >>> import json, os, tempfile
            >>> import strideweave as sw
            >>> t = sw.Tensor(sw.CPU(2), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))
            >>> with sw.profile() as prof:
            ...     _ = sw.exp(t)
            >>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
            >>> prof.export_chrome_trace(path)
            >>> with open(path) as f:
            ...     trace = json.load(f)
            >>> [(e["name"], e["ph"]) for e in trace["traceEvents"] if e["ph"] == "X"]
            [('exp', 'X')]
        """

def profile(
    *,
    carriers: Iterable[type[Carrier]] | None = None,
    record_shapes: bool = False,
    record_backward: bool = False,
) -> Profiler:
    """A single-use profiler context, the same as ``Profiler(...)``.

    Args:
        carriers: None to record every carrier class, else an iterable of
            Carrier subclasses, matched by exact class.
        record_shapes: whether events keep the shapes of tensor arguments.
        record_backward: whether backward executions are recorded too
            (``"<operation>.backward"`` events; off by default).

    Returns:
        A new Profiler to use in a ``with`` statement.

    Examples:
        >>> import strideweave as sw
        >>> t = sw.Tensor(sw.CPU(2), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))
        >>> with sw.profile() as prof:
        ...     _ = sw.relu(t)
        >>> prof.events()[0].implementation_type.__name__
        '_CPUReLUOperation'
    """
