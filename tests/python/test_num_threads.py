"""The library's thread pool through Python: set_num_threads / get_num_threads
(rules, errors, the STRIDEWEAVE_NUM_THREADS variable), results bit-identical
for every thread count, and two Python threads running large kernels at once."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import strideweave as sw
from helpers_ops import L
from strideweave import CPU, Tensor

# All of this file runs in the ThreadSanitizer pass (make tsan).
pytestmark = pytest.mark.threads


@pytest.fixture(autouse=True)
def keep_setting():
    before = sw.get_num_threads()
    yield
    sw.set_num_threads(before)


def test_set_and_get():
    for n in (1, 2, 3, 1024):
        sw.set_num_threads(n)
        assert sw.get_num_threads() == n
    assert sw.set_num_threads(2) is None


@pytest.mark.parametrize("bad", [0, -1, 1025, 2**31, -(2**70)])
def test_out_of_range_counts_are_refused(bad):
    sw.set_num_threads(3)
    with pytest.raises(ValueError) as e:
        sw.set_num_threads(bad)
    assert str(e.value) == f"the number of threads must be between 1 and 1024, not {bad}"
    assert sw.get_num_threads() == 3


@pytest.mark.parametrize(("bad", "name"), [("2", "str"), (2.0, "float"), (None, "NoneType")])
def test_non_integers_are_refused(bad, name):
    sw.set_num_threads(3)
    with pytest.raises(TypeError) as e:
        sw.set_num_threads(bad)
    assert str(e.value) == f"set_num_threads() argument must be an int, not {name}"
    assert sw.get_num_threads() == 3


def test_call_shapes():
    with pytest.raises(TypeError):
        sw.set_num_threads()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        sw.get_num_threads(1)  # type: ignore[call-arg]
    assert sw.set_num_threads is sw._native.set_num_threads
    assert "set_num_threads" not in sw.__all__


def _fresh_count(value):
    env = dict(os.environ)
    env.pop("STRIDEWEAVE_NUM_THREADS", None)
    if value is not None:
        env["STRIDEWEAVE_NUM_THREADS"] = value
    script = "import strideweave as sw; print(sw.get_num_threads())"
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def test_environment_variable_sets_the_default():
    assert _fresh_count("3") == 3
    assert _fresh_count(" 1 ") == 1


@pytest.mark.parametrize("value", [None, "", "0", "-2", "abc", "3x", "1025"])
def test_bad_environment_values_are_ignored(value):
    default = min(len(os.sched_getaffinity(0)), 1024)
    assert _fresh_count(value) == default


def wrap(array, layout):
    """A tensor over a NumPy array's memory (no copy)."""
    return Tensor(CPU(array.size, array.ctypes.data), 0, layout)


def _data(n, seed):
    return np.random.default_rng(seed).standard_normal(n, dtype=np.float32)


def _cases():
    n = 1_000_003
    a, b = _data(2 * n, 1), _data(2 * n, 2)
    compact, strided = L([n], [1]), L([n], [2])
    r, c = 1009, 991
    columns = L([r, c], [1, r])  # the sum over mode 1 walks across partials
    rows = L([r, c], [c, 1])
    return {
        "add": lambda: sw.add(wrap(a, compact), wrap(b, compact)),
        "mul strided": lambda: sw.mul(wrap(a, strided), wrap(b, strided)),
        "relu": lambda: sw.relu(wrap(a, strided)),
        "exp": lambda: sw.exp(wrap(a, compact)),
        "sum columns": lambda: sw.reduce(wrap(a, columns)),
        "sum rows": lambda: sw.reduce(wrap(a, rows)),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_results_are_bit_identical_for_every_thread_count(name):
    run = _cases()[name]
    results = []
    with sw.no_grad():
        for n in (1, 2, 3):
            sw.set_num_threads(n)
            results.append(np.from_dlpack(run()).tobytes())
    assert results[0] == results[1] == results[2]


def test_sum_agrees_with_numpy():
    r, c = 1009, 991
    a = _data(r * c, 3)
    sw.set_num_threads(2)
    with sw.no_grad():
        got = np.from_dlpack(sw.reduce(wrap(a, L([r, c], [1, r]))))
    want = a.reshape(c, r).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_two_python_threads_run_large_kernels_at_once():
    n = 1 << 20
    a, b = _data(n, 4), _data(n, 5)
    lay = L([n], [1])
    cols = L([1024, 1024], [1, 1024])
    sw.set_num_threads(2)
    with sw.no_grad():
        want_add = np.from_dlpack(sw.add(wrap(a, lay), wrap(b, lay))).tobytes()
        want_sum = np.from_dlpack(sw.reduce(wrap(a, cols))).tobytes()
    errors = []

    def work():
        try:
            with sw.no_grad():
                for _ in range(10):
                    got = np.from_dlpack(sw.add(wrap(a, lay), wrap(b, lay))).tobytes()
                    assert got == want_add
                    got = np.from_dlpack(sw.reduce(wrap(a, cols))).tobytes()
                    assert got == want_sum
        except BaseException as e:  # reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
