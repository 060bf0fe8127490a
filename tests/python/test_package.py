"""Package structure: import paths, object identity, names and docstrings."""

import doctest
import inspect
from collections.abc import Sequence

import pytest
import strideweave
import strideweave.core
import strideweave.core.layout
import strideweave.layout
from strideweave import _native

LAYOUT_NAMES = ["Layout", "Node", "Shape", "Stride", "Tiler", "Tree"]


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_same_object_across_import_paths(name):
    obj = getattr(strideweave, name)
    assert obj is getattr(strideweave.layout, name)
    assert obj is getattr(strideweave.core.layout, name)


def test_native_types_are_the_public_ones():
    assert _native.Layout is strideweave.Layout
    assert _native.Shape is strideweave.Shape
    assert _native.Stride is strideweave.Stride


@pytest.mark.parametrize("name", ["Layout", "Node", "Shape", "Stride", "Tree"])
def test_module_of_public_classes(name):
    assert getattr(strideweave, name).__module__ == "strideweave.core.layout"
    assert getattr(strideweave, name).__qualname__ == name


def test_all_lists():
    assert strideweave.__all__ == LAYOUT_NAMES
    assert strideweave.layout.__all__ == LAYOUT_NAMES
    assert strideweave.core.__all__ == []
    for name in strideweave.__all__:
        assert hasattr(strideweave, name)


def test_version_and_docstrings():
    assert strideweave.__version__ == "0.1.0"
    assert isinstance(_native.c_version, str) and _native.c_version.count(".") == 2
    for module in (strideweave, strideweave.layout, strideweave.core, strideweave.core.layout):
        assert module.__doc__


def test_tiler_alias():
    assert strideweave.Tiler == Sequence[strideweave.Layout]


def _public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if callable(member) or isinstance(member, property) or inspect.isgetsetdescriptor(member):
            yield name, member


def test_public_members_are_found():
    names = {name for name, _ in _public_members(strideweave.Layout)}
    assert {"index", "compose", "size", "shape", "empty", "get_index"} <= names
    assert len(names) >= 43
    assert {name for name, _ in _public_members(strideweave.Node)} == {"id"}


@pytest.mark.parametrize("cls_name", ["Layout", "Shape", "Stride", "Tree", "Node"])
def test_public_names_have_structured_docstrings(cls_name):
    cls = getattr(strideweave, cls_name)
    for text in (cls.__doc__,):
        assert text and "Examples:" in text
    for name, member in _public_members(cls):
        doc = inspect.getdoc(getattr(cls, name)) if not isinstance(member, property) else None
        doc = doc or member.__doc__
        assert doc, f"{cls_name}.{name} has no docstring"
        assert "Returns:" in doc, f"{cls_name}.{name} docstring lacks Returns"
        assert "Examples:" in doc, f"{cls_name}.{name} docstring lacks Examples"
        try:
            params = inspect.signature(getattr(cls, name)).parameters
        except (TypeError, ValueError):
            params = {}
        named = [p for p in params if p not in ("self", "cls")]
        if named:
            assert "Args:" in doc, f"{cls_name}.{name} docstring lacks Args"


def test_docstring_examples_run():
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = []
    for module in (strideweave, strideweave.core.layout):
        tests += finder.find(module, globs=vars(strideweave.core.layout).copy())
    examples = 0
    for test in tests:
        examples += len(test.examples)
        runner.run(test)
    assert examples > 60
    assert runner.failures == 0
