"""The typed user script that `make typecheck` checks with pyright in strict
mode (tests/typing/user_script.py) also runs: its types describe code that
works, not code that merely type-checks."""

import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "typing" / "user_script.py"


def test_the_typed_script_runs(capsys):
    runpy.run_path(str(SCRIPT), run_name="__main__")
    printed = capsys.readouterr().out.split()
    assert printed[0].isdigit() and "True" in printed
    assert "'relu'" in " ".join(printed)
