"""Threads: CPU kernels run without the GIL (two Python threads make
progress together), and concurrent operations on shared inputs are safe."""

import threading
import time

import pytest
import strideweave as sw
from helpers_ops import L, logical
from strideweave import CPU, Tensor

# All of this file runs in the ThreadSanitizer pass (make tsan).
pytestmark = pytest.mark.threads


def big(n):
    c = CPU(n)
    for i in range(0, n, 1009):
        c[i] = float(i % 7)
    return Tensor(c, 0, L([n], [1]))


def test_python_runs_while_a_cpu_kernel_runs():
    """A spinning Python thread keeps running during one long native call:
    with the GIL held for the whole call it could not run at all in the
    middle of it."""
    x = big(1 << 22)
    sw.exp(x)  # warm up
    stamps = []
    stop = threading.Event()

    def spin():
        # A stamp every 0.2 ms at most: enough to see it ran inside a call,
        # and few enough to keep them all however long a call takes.
        last = 0.0
        while not stop.is_set():
            now = time.perf_counter()
            if now - last > 0.0002:
                stamps.append(now)
                last = now

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.01)
        best = 0
        # Generous: on a loaded machine (or under a sanitizer) the spinner
        # may miss many calls before the scheduler lets it run inside one.
        deadline = time.perf_counter() + 20.0
        for _ in range(500):
            if time.perf_counter() > deadline:
                break
            start = time.perf_counter()
            y = sw.exp(sw.add(x, x))
            end = time.perf_counter()
            # Only the inner part of the call counts: a thread switch just
            # before the call enters C could let the spinner run briefly.
            margin = (end - start) * 0.25
            inside = [s for s in stamps if start + margin < s < end - margin]
            best = max(best, len(inside))
            if best > 0:
                break
    finally:
        stop.set()
        spinner.join()
    assert best > 0
    assert y.size() == x.size()


def test_concurrent_operations_on_shared_inputs():
    x = big(1 << 16)
    errors = []
    results = []

    def work():
        try:
            for _ in range(20):
                y = sw.relu(sw.add(sw.mul(x, 2), x))
                results.append(y[1009 * 3])
                y.backward(Tensor(CPU(0).new_like([1.0] * y.size()), 0, y.layout))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert set(results) == {3.0 * ((1009 * 3) % 7)}
    assert logical(x.grad)[1009] == 80 * 3.0


def test_release_beside_running_kernels():
    x = big(1 << 22)
    done = threading.Event()
    outcome = []

    def work():
        try:
            for _ in range(5):
                sw.exp(x)
        except RuntimeError as e:
            # Released between two calls: the next call says so.
            outcome.append(str(e))
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        try:
            x.carrier.release()
            outcome.append("released")
            break
        except RuntimeError as e:
            outcome.append(str(e))
    t.join()
    if not x.carrier.is_released():
        x.carrier.release()
    assert x.carrier.is_released()
    assert all(
        o
        in (
            "released",
            "tensor carrier is released",
        )
        for o in outcome
    )


def ones(t):
    return Tensor(CPU(0).new_like([1.0] * t.size()), 0, t.layout)


def test_python_runs_while_backward_runs():
    """The reverse pass of a large CPU graph runs without the GIL."""
    n = 768
    a = big(n * n)
    a = Tensor(a.carrier, 0, L([n, n], [n, 1]))
    b = Tensor(big(n * n).carrier, 0, L([n, n], [1, n]))
    stamps = []
    stop = threading.Event()

    def spin():
        # A few stamps a millisecond at most: a long pass (slow builds)
        # keeps all of them.
        k = 0
        while not stop.is_set():
            k += 1
            if k % 256 == 0:
                stamps.append(time.perf_counter())
                if len(stamps) > 2_000_000:
                    del stamps[:1_000_000]

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.01)
        best = 0
        for _ in range(10):
            y = sw.matmul(a, b)
            g = ones(y)
            start = time.perf_counter()
            y.backward(g)
            end = time.perf_counter()
            margin = (end - start) * 0.25
            inside = [s for s in stamps if start + margin < s < end - margin]
            best = max(best, len(inside))
            if best > 0:
                break
    finally:
        stop.set()
        spinner.join()
    assert best > 0
    assert a.grad is not None and b.grad is not None


def test_python_operations_in_a_pass_without_the_gil():
    from strideweave import Generic, Operation

    class Twice(Operation):
        def _forward(self, t):
            return sw.mul(t, 2)

        def backward(self, gradient):
            # Generic values and a nested CPU operation, from the callback.
            g = Tensor(Generic([2.0] * gradient.size()), 0, gradient.layout)
            assert logical(sw.mul(g, 1)) == [2.0] * gradient.size()
            return [sw.mul(gradient, 2)]

    x = big(1 << 16)
    y = sw.exp(Twice().forward(x))
    y.backward(ones(y))
    import math

    assert logical(x.grad)[1009] == pytest.approx(2 * math.exp(2 * 1.0), rel=1e-5)


def test_python_backward_exceptions_propagate_unchanged():
    from strideweave import Operation

    class Boom(ValueError):
        pass

    class Fails(Operation):
        def _forward(self, t):
            return sw.mul(t, 1)

        def backward(self, gradient):
            raise Boom("from backward")

    x = big(1 << 16)
    y = sw.exp(Fails().forward(x))
    with pytest.raises(Boom, match="from backward"):
        y.backward(ones(y))


def test_concurrent_backward_through_python_operations():
    from strideweave import Operation

    class Same(Operation):
        def _forward(self, t):
            return sw.mul(t, 1)

        def backward(self, gradient):
            return [gradient]

    x = big(1 << 16)
    errors = []

    def work():
        try:
            for _ in range(10):
                y = sw.add(Same().forward(x), x)
                y.backward(ones(y))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert logical(x.grad)[1009] == 80.0


def test_release_during_another_threads_backward_takes_effect():
    """A release from another thread while a reverse pass (which runs
    without the GIL) may read the carrier takes effect at once; the pass
    holds pins on what it reads, so its storage goes only after the
    reads."""
    from strideweave import Operation

    inside, attempted = threading.Event(), threading.Event()
    outcome = []

    class Gate(Operation):
        def _forward(self, t):
            return sw.mul(t, 1)

        def backward(self, gradient):
            inside.set()
            attempted.wait(timeout=30)
            return [sw.mul(gradient, 1)]

    x = big(1 << 12)
    y = sw.exp(Gate().forward(x))

    def release_during_pass():
        inside.wait(timeout=30)
        try:
            x.carrier.release()
            outcome.append("released")
        except RuntimeError as error:
            outcome.append(str(error))
        attempted.set()

    other = threading.Thread(target=release_during_pass)
    other.start()
    y.backward(ones(y))
    other.join()
    assert outcome == ["released"]
    assert x.grad is not None and x.carrier.is_released()
