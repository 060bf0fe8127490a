"""What the OpenCL test modules share: the runtime gate, the fault-hook
reset and a hold of the devices' queues.

conftest.py makes the fixtures ``runtime`` and ``no_faults`` available to
every module (a module's own fixture of the same name wins).
"""

from __future__ import annotations

import functools
import os
import threading

import pytest
import strideweave as sw
from strideweave import _native


@functools.cache
def devices():
    """The OpenCL devices (asked once, when first needed)."""
    return sw.opencl_devices()


def need_runtime():
    """Skips (or, in CI, fails) a test that needs an OpenCL runtime."""
    if devices():
        return
    reason = "no OpenCL runtime: install ocl-icd-libopencl1 and pocl-opencl-icd"
    if os.environ.get("STRIDEWEAVE_REQUIRE_OPENCL"):
        pytest.fail(f"STRIDEWEAVE_REQUIRE_OPENCL is set but there is {reason}")
    pytest.skip(reason)


@pytest.fixture
def runtime():
    """The OpenCL devices; need_runtime's skip or failure without them."""
    need_runtime()
    return devices()


@pytest.fixture
def no_faults():
    """Turns the fault injection off after the test, whatever it set."""
    yield
    _native._debug_opencl_fail("none", 0)


class device_held:
    """The OpenCL devices start no command inside the block. A watchdog
    ends the hold if the block waits for the device (which would otherwise
    never return), and the test then fails."""

    def __enter__(self):
        self.fired = []

        def release():
            self.fired.append(True)
            _native._debug_opencl_hold(False)

        self.timer = threading.Timer(60.0, release)
        _native._debug_opencl_hold(True)
        self.timer.start()
        return self

    def release(self):
        """Lets the devices run; returns the profiler-clock moment before."""
        moment = _native.profile_now_ns()
        _native._debug_opencl_hold(False)
        return moment

    def __exit__(self, *exc):
        self.timer.cancel()
        _native._debug_opencl_hold(False)
        assert not self.fired, "the block waited for a held device"
