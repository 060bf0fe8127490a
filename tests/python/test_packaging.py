"""The distributions: a wheel and an sdist built from this checkout carry
what a user of either needs (the compiled module, the stubs and py.typed,
the licence, the metadata that says which Pythons are supported), and the
sdist carries the sources a build needs, not build outputs."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env():
    env = dict(os.environ)
    # meson and ninja come from the interpreter's environment.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _needs_checkout():
    if not (ROOT / ".git").exists() or not (ROOT / "pyproject.toml").exists():
        pytest.skip("not a source checkout")
    if os.environ.get("LD_PRELOAD"):
        # The sanitizer passes preload their runtimes: packaging is checked
        # by the plain run.
        pytest.skip("a sanitizer runtime is preloaded")
    pytest.importorskip("mesonpy")


def test_wheel_contents(tmp_path):
    _needs_checkout()
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps"]
        + [str(ROOT), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    (wheel,) = tmp_path.glob("strideweave-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (info,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        metadata = z.read(f"{info}/METADATA").decode()
    assert any(n.startswith("strideweave/_native") and n.endswith(".so") for n in names)
    for needed in (
        "strideweave/py.typed",
        "strideweave/__init__.pyi",
        "strideweave/nn/__init__.pyi",
    ):
        assert needed in names, needed
    assert f"{info}/licenses/LICENSE" in names
    assert "Requires-Python: >=3.11" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    for version in ("3.11", "3.12", "3.13"):
        assert f"Classifier: Programming Language :: Python :: {version}" in metadata
    # The C library and the tests stay out of the wheel.
    assert not any(n.startswith(("tests/", "include/", "src/")) for n in names)


def test_sdist_contents(tmp_path):
    _needs_checkout()
    run = subprocess.run(
        [sys.executable, "-c", f"import mesonpy; print(mesonpy.build_sdist({str(tmp_path)!r}))"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    (sdist,) = tmp_path.glob("strideweave-*.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for needed in (
        "LICENSE",
        "PKG-INFO",
        "README.md",
        "pyproject.toml",
        "meson.build",
        "include/strideweave/strideweave.h",
        "src/meson.build",
        "python/strideweave/__init__.py",
    ):
        assert needed in names, needed
    assert not any(n.startswith((".venv/", "build/")) for n in names)
