"""Shared pytest configuration: Hypothesis profiles.

``default`` runs each layout property over a few hundred random layouts (so
the suite covers thousands overall); ``sanitize`` runs far fewer, for the
AddressSanitizer build. Pick one with SW_HYPOTHESIS_PROFILE.
"""

import os

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
