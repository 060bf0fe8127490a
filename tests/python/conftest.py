"""Shared pytest configuration: Hypothesis profiles, and the OpenCL
fixtures ``runtime`` and ``no_faults`` (helpers_opencl.py).

``default`` runs each layout property over a few hundred random layouts (so
the suite covers thousands overall); ``sanitize`` runs far fewer, for the
AddressSanitizer build. Pick one with SW_HYPOTHESIS_PROFILE.
"""

import os

from helpers_opencl import no_faults, runtime  # noqa: F401 (fixtures for every module)
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "sanitize",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("SW_HYPOTHESIS_PROFILE", "default"))
