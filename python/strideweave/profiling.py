"""Operation profiling: which dispatched operations ran, where, and for how long.

``profile()`` returns a single-use context manager that records every
execution attempt of a carrier-dispatched operation on the current thread
(forward passes and lowered executions, nested ones included). Recording
happens in the C library; this module checks the arguments and turns the
recorded events into ``ProfilerEvent`` objects, per-operation
``ProfilerAggregate`` rows, a text table and a Chrome trace.

A move (``move``, ``move_async``) whose source carrier class is selected
records two events: ``move.submit`` at initiation and ``move.complete`` when
its outcome is known, with the submission as its parent, even after the
context exited: completions that arrive later join ``events()`` and
``key_averages()`` at their next call (ids renumbered in start-time order).

Examples:
    >>> import strideweave as sw
    >>> t = sw.Tensor(sw.CPU(4), 0, sw.Layout(sw.Shape([4]), sw.Stride([1])))
    >>> with sw.profile(carriers={sw.CPU}, record_shapes=True) as prof:
    ...     result = sw.relu(t)
    >>> [(e.name, e.carrier_type.__name__, e.input_shapes) for e in prof.events()]
    [('relu', 'CPU', ((4,),))]
    >>> prof.key_averages()[0].count
    1
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from strideweave import _native
from strideweave.carriers.base import Carrier

__all__ = ["Profiler", "ProfilerAggregate", "ProfilerEvent", "profile"]

_SORT_FIELDS = (
    "carrier_type",
    "count",
    "input_shapes",
    "max_time_ns",
    "mean_time_ns",
    "min_time_ns",
    "name",
    "self_total_time_ns",
    "total_time_ns",
)


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


def _class_key(cls: type) -> tuple[str, str]:
    return (cls.__module__, cls.__qualname__)


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _aggregate_key(row: ProfilerAggregate) -> tuple[str, tuple[str, str], str]:
    return (row.name, _class_key(row.carrier_type), repr(row.input_shapes))


# The time units of Profiler.table and their length in nanoseconds.
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


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
    ) -> None:
        if not isinstance(record_shapes, bool):
            raise TypeError("record_shapes must be a bool")
        if not isinstance(record_backward, bool):
            raise TypeError("record_backward must be a bool")
        selected: frozenset[type[Carrier]] | None = None
        if carriers is not None:
            try:
                selected = frozenset(carriers)
            except TypeError:
                raise TypeError("carriers must be an iterable of Carrier classes") from None
            for item in selected:
                if not (isinstance(item, type) and issubclass(item, Carrier)):
                    raise TypeError("carriers must contain only Carrier subclasses")
        # The classes stay alive with the profiler: the library compares the
        # tags of executing operations with them.
        self._carriers = selected
        self._record_shapes = record_shapes
        self._record_backward = record_backward
        self._session: _native.ProfilerSession = _native.ProfilerSession(
            None if selected is None else tuple(selected), record_shapes, record_backward
        )
        self._events: tuple[ProfilerEvent, ...] | None = None
        self._stopped = False
        # Guards the event view, which move completions change after exit.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        if self._events is not None:
            state = f"{len(self._events)} events"
        elif self._session.active:
            state = "active"
        else:
            state = "not started"
        return f"<Profiler {state}>"

    def __enter__(self) -> Profiler:
        if self._stopped:
            raise RuntimeError("Profiler contexts are single-use")
        self._session.start()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        if self._stopped:
            raise RuntimeError("Profiler context is not active")
        try:
            self._session.stop()
        except MemoryError:
            self._finish()
            raise
        self._finish()
        return False

    def _finish(self) -> None:
        self._stopped = True
        with self._lock:
            self._refresh_events_locked()

    def _refresh_events_locked(self) -> None:
        """Rebuilds the event view from the session (lock held)."""
        self._events = tuple(ProfilerEvent(*row) for row in self._session.events())

    def _results(self) -> tuple[ProfilerEvent, ...]:
        if self._events is None:
            raise RuntimeError("Profiler results are available only after context exit")
        with self._lock:
            # Move completions that arrived since the last view, at once.
            if self._session.refresh():
                self._refresh_events_locked()
            return self._events

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
        return self._results()

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
        if not isinstance(group_by_input_shape, bool):
            raise TypeError("group_by_input_shape must be a bool")
        groups: dict[tuple[Any, ...], list[ProfilerEvent]] = {}
        for event in self._results():
            shapes = event.input_shapes if group_by_input_shape else None
            groups.setdefault((event.name, event.carrier_type, shapes), []).append(event)
        rows = []
        for (name, carrier, shapes), members in groups.items():
            durations = [e.duration_ns for e in members]
            total = sum(durations)
            rows.append(
                ProfilerAggregate(
                    name=name,
                    carrier_type=carrier,
                    input_shapes=shapes,
                    count=len(members),
                    total_time_ns=total,
                    self_total_time_ns=sum(e.self_time_ns for e in members),
                    mean_time_ns=total / len(members),
                    min_time_ns=min(durations),
                    max_time_ns=max(durations),
                )
            )
        rows.sort(key=_aggregate_key)
        return tuple(rows)

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
        if sort_by not in _SORT_FIELDS:
            raise ValueError(f"unsupported profiler table sort field: {sort_by!r}")
        if not isinstance(descending, bool):
            raise TypeError("descending must be a bool")
        if row_limit is not None and (
            isinstance(row_limit, bool) or not isinstance(row_limit, int) or row_limit < 0
        ):
            raise ValueError("row_limit must be a non-negative integer or None")
        if unit not in _UNITS:
            raise ValueError("unit must be 'ns', 'us', 'ms' or 's'")
        scale = _UNITS[unit]

        def time(ns: float, mean: bool = False) -> str:
            if unit == "ns":
                return f"{ns:.1f}" if mean else str(ns)
            return f"{ns / scale:.3f}"

        rows = list(self.key_averages(group_by_input_shape=group_by_input_shape))

        def primary(row: ProfilerAggregate) -> Any:
            if sort_by == "carrier_type":
                return _class_key(row.carrier_type)
            if sort_by == "input_shapes":
                return repr(row.input_shapes)
            return getattr(row, sort_by)

        rows.sort(key=primary, reverse=descending)
        if row_limit is not None:
            rows = rows[:row_limit]
        header = ["Name", "Carrier"]
        if group_by_input_shape:
            header.append("Input shapes")
        header += [
            "Calls",
            f"Total ({unit})",
            f"Self total ({unit})",
            f"Mean ({unit})",
            f"Min ({unit})",
            f"Max ({unit})",
        ]
        body = []
        for row in rows:
            cells = [row.name, _class_name(row.carrier_type)]
            if group_by_input_shape:
                cells.append(repr(row.input_shapes))
            cells += [
                str(row.count),
                time(row.total_time_ns),
                time(row.self_total_time_ns),
                time(row.mean_time_ns, mean=True),
                time(row.min_time_ns),
                time(row.max_time_ns),
            ]
            body.append(cells)
        widths = [max([len(h)] + [len(cells[i]) for cells in body]) for i, h in enumerate(header)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        for cells in body:
            lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
        return "\n".join(lines)

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
        events = self._results()
        target = os.fspath(path)
        pid = os.getpid()
        trace: list[dict[str, Any]] = []
        for tid in sorted({e.thread_id for e in events}):
            trace.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": pid,
                    "tid": tid,
                    "args": {"name": f"thread {tid}"},
                }
            )
        for e in events:
            trace.append(
                {
                    "name": e.name,
                    "cat": "operation",
                    "ph": "X",
                    "ts": e.start_time_ns / 1000,
                    "dur": e.duration_ns / 1000,
                    "pid": pid,
                    "tid": e.thread_id,
                    "args": {
                        "id": e.id,
                        "parent_id": e.parent_id,
                        "carrier": _class_name(e.carrier_type),
                        "implementation": _class_name(e.implementation_type),
                        "input_shapes": None if e.input_shapes is None else repr(e.input_shapes),
                        "self_time_ns": e.self_time_ns,
                        "succeeded": e.succeeded,
                    },
                }
            )
        with open(target, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ns"}, f)


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
    return Profiler(carriers=carriers, record_shapes=record_shapes, record_backward=record_backward)
