"""Hypothesis settings of the Python fuzz suite (see test_fuzz_python.py).

FUZZ_PY_EXAMPLES sets the examples per test (default 200 for a quick local
run; `make fuzz-python` asks for more). No example database is kept: each
run explores afresh, and a failure prints the blob that reproduces it.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_PY_EXAMPLES", "200")),
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile("fuzz")
