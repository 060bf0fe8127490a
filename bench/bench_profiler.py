"""What the operation profiler costs per operation, from Python.

A tight loop of ``sw.add`` on two 4-element CPU tensors without grad runs
with no profiler, with a profiler recording every execution, with one
recording shapes too, and with one whose carrier selection excludes CPU.
The report gives the time of one call in each case and the differences to
the unprofiled loop in nanoseconds (goal: under 1 us per operation with a
profiler active). The cost of the inactive branch itself is measured from C
(``bench/bench_profile_c.c``), where it is not drowned by the interpreter.

Timing never decides a test; this is a report.
"""

from __future__ import annotations

import time

import strideweave as sw

CALLS = 20_000  # operations per profiler session
REPEATS = 15


def vector() -> sw.Tensor:
    return sw.Tensor(sw.CPU(4), 0, sw.Layout(sw.Shape([4]), sw.Stride([1])))


def loop(a: sw.Tensor, b: sw.Tensor, profiler: sw.Profiler | None) -> float:
    """Seconds per add over CALLS calls, inside profiler if given."""
    add = sw.add
    if profiler is None:
        t0 = time.perf_counter()
        for _ in range(CALLS):
            add(a, b)
        return (time.perf_counter() - t0) / CALLS
    with profiler:
        t0 = time.perf_counter()
        for _ in range(CALLS):
            add(a, b)
        elapsed = time.perf_counter() - t0
    assert len(profiler.events()) == (CALLS if profiler._carriers is None else 0)
    return elapsed / CALLS


def best_times(cases) -> dict[str, float]:
    """Best seconds per call of every case; the cases take turns, so that
    load from other processes spreads over all of them."""
    a, b = vector(), vector()
    times = {name: float("inf") for name, _ in cases}
    with sw.no_grad():
        for _, make in cases:
            loop(a, b, make())  # warm up
        for _ in range(REPEATS):
            for name, make in cases:
                times[name] = min(times[name], loop(a, b, make()))
    return times


def main() -> None:
    cases = [
        ("no profiler", lambda: None),
        ("profiler recording", lambda: sw.profile()),
        ("profiler recording shapes", lambda: sw.profile(record_shapes=True)),
        ("profiler, CPU filtered out", lambda: sw.profile(carriers=[sw.Generic])),
    ]
    times = best_times(cases)
    base = times["no profiler"]
    print(f"sw.add on 4-element CPU tensors, best of {REPEATS} x {CALLS} calls")
    for name, _ in cases:
        per = times[name] * 1e9
        extra = (times[name] - base) * 1e9
        suffix = "" if name == "no profiler" else f"   (+{extra:7.1f} ns)"
        print(f"  {name:30s} {per:8.1f} ns/call{suffix}")
    a, b = vector(), vector()
    with sw.no_grad():
        profiler = sw.profile()
        profiler.__enter__()
        for _ in range(CALLS):
            sw.add(a, b)
        t0 = time.perf_counter()
        profiler.__exit__(None, None, None)
        convert = (time.perf_counter() - t0) / CALLS
    print(f"  {'exit: events to Python objects':30s} {convert * 1e9:8.1f} ns/event")
    verdict = "within" if (times["profiler recording"] - base) < 1e-6 else "above"
    print(f"  recording cost is {verdict} the 1 us per operation goal")


if __name__ == "__main__":
    main()
