"""The library's operation registry is the only list of operations.

Every other module takes the operations from it: the functional forms, the
operation classes of each backend, the names modules export. A source file
that spells out many operation names as string literals is a list kept by
hand, which drifts from the registry; this test finds them. Type stubs
(checked against the runtime by stubtest), tests, docs and benchmarks are
not sources of the package's behaviour and are skipped.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import strideweave as sw
import strideweave.functional
import strideweave.operation
from strideweave import _native
from strideweave.carriers import shared_ops
from strideweave.carriers.cpu import ops as cpu_ops
from strideweave.carriers.generic import ops as generic_ops
from strideweave.carriers.operation_policy import registered_operations

ROOT = Path(__file__).resolve().parents[2]
# Where the operations are listed: the registry and its backends' tables.
# The extension's docstring file is prose keyed by the objects it documents.
REGISTRY = {"src/op/registry.c", "python/strideweave/_native_docs.py"}
# More distinct operation names than any one function needs.
LIST_SIZE = 8


def operation_names() -> set[str]:
    return set(_native._functional_operations()) | {s.name for s in registered_operations()}


def tracked_sources() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "*.c", "*.h", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    skipped = ("tests/", "bench/", "examples/", "docs/")
    return [f for f in out.stdout.split() if not f.startswith(skipped)]


def named_operations(text: str, names: set[str]) -> set[str]:
    return {n for n in names if re.search("[\"']" + re.escape(n) + "[\"']", text)}


def test_no_source_keeps_its_own_list_of_operations():
    names = operation_names()
    assert len(names) > 2 * LIST_SIZE
    lists = {}
    for path in tracked_sources():
        if path in REGISTRY:
            continue
        found = named_operations((ROOT / path).read_text(encoding="utf-8"), names)
        if len(found) >= LIST_SIZE:
            lists[path] = sorted(found)
    assert lists == {}


def test_the_check_finds_a_hand_kept_list():
    # The check itself: a table like the functional forms' old one is found.
    table = "\n".join(f'{{"{n}", fn_{n}, doc}},' for n in sorted(operation_names()))
    assert len(named_operations(table, operation_names())) >= LIST_SIZE


def test_functional_forms_come_from_the_registry():
    forms = _native._functional_operations()
    assert forms[:2] == ["add", "sub"]
    for name in forms:
        fn = getattr(sw.functional, name)
        assert fn is getattr(sw, name) is getattr(sw.operation, name)
        assert name in sw.functional.__all__
    assert set(forms) <= set(sw.operation.__all__)


def test_generated_forms_behave_as_functions():
    x = sw.Tensor(sw.Generic([1.0, -2.0]), 0, sw.Layout(sw.Shape(2), sw.Stride(1)))
    assert sw.relu.__name__ == "relu"
    assert sw.add.__text_signature__ == "($module, lhs, rhs)"
    assert sw.add(lhs=x, rhs=x)[1] == -4.0
    assert sw.relu(tensor=x)[1] == 0
    with pytest.raises(TypeError, match="^relu\\(\\) got an unexpected keyword argument 'x'$"):
        sw.relu(x=x)
    with pytest.raises(TypeError, match="^add\\(\\) missing required argument 'rhs'$"):
        sw.add(x)
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        sw.exp(3)
    for name in ("add", "relu", "leaky_relu"):
        doc = getattr(sw, name).__doc__
        assert "Examples:" in doc and "Args:" in doc


@pytest.mark.parametrize(
    ("module", "backend"),
    [(generic_ops, "generic"), (shared_ops, "shared"), (cpu_ops, "cpu")],
)
def test_backend_classes_come_from_the_registry(module, backend):
    assert module.__all__ == _native._native_classes(backend)
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is getattr(_native, name)
    assert _native._native_classes("nope") == []
