"""The extension's docstrings come from strideweave._native_docs, attached at import."""

import inspect

import pytest
from strideweave import _native
from strideweave._native_docs import DOCS


def _target(path):
    head, _, member = path.partition(".")
    obj = getattr(_native, head)
    if not member:
        return obj
    entry = vars(obj)[member]
    return entry.__func__ if isinstance(entry, staticmethod) else entry


def _body(text):
    # The doc without a leading "name(signature)\n--\n\n", as CPython reports it.
    first, sep, rest = text.partition("\n--\n\n")
    return rest if sep and first.endswith(")") and "(" in first else text


@pytest.mark.parametrize("path", sorted(p for p in DOCS if p))
def test_every_entry_is_attached(path):
    obj = _target(path)
    assert obj.__doc__ == _body(DOCS[path])


def test_module_doc():
    assert _native.__doc__ == DOCS[""]


@pytest.mark.parametrize("path", sorted(p for p in DOCS if p and "\n--\n\n" in DOCS[p]))
def test_signatures_come_from_the_entry(path):
    obj = _target(path)
    first = DOCS[path].split("\n--\n\n", 1)[0]
    assert obj.__text_signature__ == first[first.index("(") :]


def test_signature_of_a_type_and_a_method():
    assert str(inspect.signature(_native.Layout)) == "(shape, stride)"
    assert "B" in inspect.signature(_native.Layout.compose).parameters
