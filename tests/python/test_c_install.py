"""The README's C recipe, as written: the library installed with meson into
a prefix, and the README's program (examples/layout_divide.c) built against
it through pkg-config (with the rpath pkg-config names) and through CMake's
find_package(strideweave), then run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_FIRST = "A        (4,2,3):(2,1,8)"


def _env():
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _run(args, **kw):
    run = subprocess.run(args, capture_output=True, text=True, env=_env(), **kw)
    assert run.returncode == 0, f"{args[0]}: {run.stdout[-1500:]}{run.stderr[-1500:]}"
    return run.stdout


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if os.environ.get("LD_PRELOAD"):
        pytest.skip("a sanitizer runtime is preloaded: the plain run checks the install")
    env = _env()
    if not (ROOT / "meson.build").exists() or not shutil.which("meson", path=env["PATH"]):
        pytest.skip("needs a source checkout and meson")
    base = tmp_path_factory.mktemp("c-install")
    build, prefix = base / "build", base / "prefix"
    _run(
        ["meson", "setup", str(build), f"--prefix={prefix}", "-Dpython=false", "-Dtests=false"],
        cwd=ROOT,
    )
    _run(["meson", "install", "-C", str(build)])
    return prefix


def _pc_dir(prefix):
    (pc,) = prefix.rglob("strideweave.pc")
    return pc.parent


def test_pkg_config_build(prefix, tmp_path):
    if not shutil.which("pkg-config"):
        pytest.skip("no pkg-config")
    env = _env()
    env["PKG_CONFIG_PATH"] = str(_pc_dir(prefix))

    def pc(*args):
        return subprocess.run(
            ["pkg-config", *args, "strideweave"], capture_output=True, text=True, env=env
        ).stdout.split()

    libdir = pc("--variable=libdir")[0]
    exe = tmp_path / "layout_divide"
    cc = shutil.which("cc") or "gcc"
    args = [cc, str(ROOT / "examples" / "layout_divide.c"), *pc("--cflags", "--libs")]
    _run([*args, f"-Wl,-rpath,{libdir}", "-o", str(exe)])
    assert _run([str(exe)]).splitlines()[0] == EXPECTED_FIRST


def test_cmake_build(prefix, tmp_path):
    if not shutil.which("cmake"):
        pytest.skip("no cmake")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "examples" / "layout_divide.c", project)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\n"
        "project(use_strideweave C)\n"
        "find_package(strideweave 0.1 REQUIRED)\n"
        "add_executable(layout_divide layout_divide.c)\n"
        "target_link_libraries(layout_divide PRIVATE strideweave::strideweave)\n"
    )
    build = tmp_path / "build"
    _run(["cmake", "-S", str(project), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}"])
    _run(["cmake", "--build", str(build)])
    assert _run([str(build / "layout_divide")]).splitlines()[0] == EXPECTED_FIRST
    # A version the package is not compatible with is refused.
    (project / "CMakeLists.txt").write_text(
        (project / "CMakeLists.txt").read_text().replace("strideweave 0.1", "strideweave 9.0")
    )
    run = subprocess.run(
        ["cmake", "-S", str(project), "-B", str(tmp_path / "b9"), f"-DCMAKE_PREFIX_PATH={prefix}"],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert run.returncode != 0
