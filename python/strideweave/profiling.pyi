"""Operation profiling: which dispatched operations ran, where, and for how long."""

import os
from collections.abc import Iterable
from typing import Any

from strideweave.carriers.base import Carrier

__all__ = ["Profiler", "ProfilerAggregate", "ProfilerEvent", "profile"]

class ProfilerEvent:
    __slots__ = (
        "id",
        "parent_id",
        "name",
        "carrier_type",
        "implementation_type",
        "input_shapes",
        "start_time_ns",
        "duration_ns",
        "self_time_ns",
        "thread_id",
        "succeeded",
    )
    __match_args__ = (
        "id",
        "parent_id",
        "name",
        "carrier_type",
        "implementation_type",
        "input_shapes",
        "start_time_ns",
        "duration_ns",
        "self_time_ns",
        "thread_id",
        "succeeded",
    )
    @property
    def id(self) -> int: ...
    @property
    def parent_id(self) -> int | None: ...
    @property
    def name(self) -> str: ...
    @property
    def carrier_type(self) -> type: ...
    @property
    def implementation_type(self) -> type: ...
    @property
    def input_shapes(self) -> tuple[Any, ...] | None: ...
    @property
    def start_time_ns(self) -> int: ...
    @property
    def duration_ns(self) -> int: ...
    @property
    def self_time_ns(self) -> int: ...
    @property
    def thread_id(self) -> int: ...
    @property
    def succeeded(self) -> bool: ...
    def __init__(
        self,
        id: int,
        parent_id: int | None,
        name: str,
        carrier_type: type,
        implementation_type: type,
        input_shapes: tuple[Any, ...] | None,
        start_time_ns: int,
        duration_ns: int,
        self_time_ns: int,
        thread_id: int,
        succeeded: bool,
    ) -> None: ...

class ProfilerAggregate:
    __slots__ = (
        "name",
        "carrier_type",
        "input_shapes",
        "count",
        "total_time_ns",
        "self_total_time_ns",
        "mean_time_ns",
        "min_time_ns",
        "max_time_ns",
    )
    __match_args__ = (
        "name",
        "carrier_type",
        "input_shapes",
        "count",
        "total_time_ns",
        "self_total_time_ns",
        "mean_time_ns",
        "min_time_ns",
        "max_time_ns",
    )
    @property
    def name(self) -> str: ...
    @property
    def carrier_type(self) -> type: ...
    @property
    def input_shapes(self) -> tuple[Any, ...] | None: ...
    @property
    def count(self) -> int: ...
    @property
    def total_time_ns(self) -> int: ...
    @property
    def self_total_time_ns(self) -> int: ...
    @property
    def mean_time_ns(self) -> float: ...
    @property
    def min_time_ns(self) -> int: ...
    @property
    def max_time_ns(self) -> int: ...
    def __init__(
        self,
        name: str,
        carrier_type: type,
        input_shapes: tuple[Any, ...] | None,
        count: int,
        total_time_ns: int,
        self_total_time_ns: int,
        mean_time_ns: float,
        min_time_ns: int,
        max_time_ns: int,
    ) -> None: ...

class Profiler:
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
    def events(self) -> tuple[ProfilerEvent, ...]: ...
    def key_averages(
        self, *, group_by_input_shape: bool = False
    ) -> tuple[ProfilerAggregate, ...]: ...
    def table(
        self,
        *,
        sort_by: str = "self_total_time_ns",
        descending: bool = True,
        group_by_input_shape: bool = False,
        row_limit: int | None = None,
        unit: str = "ns",
    ) -> str: ...
    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None: ...

def profile(
    *,
    carriers: Iterable[type[Carrier]] | None = None,
    record_shapes: bool = False,
    record_backward: bool = False,
) -> Profiler: ...
