"""Copies the runtime docstrings into the type stubs, so that editors, which
read the stubs, show them on hover.

The docstrings are written once, beside the code (in the Python modules, and
for the extension in ``strideweave._native_docs``); this tool puts a copy of
each into the matching definition of the ``.pyi`` files under
``python/strideweave``: every class, function, method and property whose
runtime object has a docstring. Overloads and definitions with no runtime
docstring are left as they are.

    python tools/stub_docs.py          # rewrite the stubs
    python tools/stub_docs.py --check  # exit 1 if a stub's copy is missing or stale

The package must be importable (installed); the test suite runs ``--check``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "strideweave"


def module_name(stub: Path) -> str:
    parts = list(stub.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runtime_doc(obj: object) -> str | None:
    """The object's own docstring, cleaned, or None (nothing inherited)."""
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    return inspect.cleandoc(doc)


def is_overload(node: ast.AST) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "overload")
        or (isinstance(d, ast.Attribute) and d.attr == "overload")
        for d in getattr(node, "decorator_list", [])
    )


def is_setter(node: ast.AST) -> bool:
    return any(
        isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter")
        for d in getattr(node, "decorator_list", [])
    )


def literal(doc: str, indent: str) -> list[str]:
    """The lines of a docstring statement at indent."""
    text = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.split("\n")
    if len(lines) == 1:
        # A closing quote of the text must not run into the delimiter.
        return [f'{indent}"""{lines[0]}{" " if text.endswith(chr(34)) else ""}"""']
    out = [f'{indent}"""{lines[0]}']
    out += [f"{indent}{line}" if line else "" for line in lines[1:]]
    out.append(f'{indent}"""')
    return out


def wanted(tree: ast.Module, module: object) -> list[tuple[ast.AST, str]]:
    """(definition, docstring) for every definition whose runtime object has
    one, outermost first."""
    found = []

    def visit(body: list[ast.stmt], owner: object) -> None:
        for node in body:
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if is_overload(node) or is_setter(node):
                continue
            # A class's own members only: an inherited one has its
            # docstring where it is defined.
            if isinstance(owner, type):
                obj = owner.__dict__.get(node.name)
            else:
                obj = getattr(owner, node.name, None)
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            if obj is None:
                continue
            doc = runtime_doc(obj)
            if doc is not None:
                found.append((node, doc))
            if isinstance(node, ast.ClassDef):
                visit(node.body, obj)

    visit(tree.body, module)
    return found


def rewrite(source: str, module: object) -> str:
    """source with each wanted definition carrying its runtime docstring."""
    tree = ast.parse(source)
    lines = source.split("\n")
    edits = []  # (first line index, last line index, replacement lines)
    for node, doc in wanted(tree, module):
        body = node.body
        first = body[0]
        has_doc = (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        )
        if isinstance(node, ast.ClassDef):
            indent = " " * (node.col_offset + 4)
            if has_doc:
                edits.append((first.lineno - 1, first.end_lineno - 1, literal(doc, indent)))
            elif first.lineno == node.lineno:  # class X: ...
                line = lines[node.lineno - 1]
                head = line[: line.rindex("...")].rstrip()
                edits.append((node.lineno - 1, node.lineno - 1, [head, *literal(doc, indent)]))
            else:
                decorators = getattr(first, "decorator_list", [])
                at = min([first.lineno] + [d.lineno for d in decorators]) - 1
                edits.append((at, at - 1, literal(doc, indent)))
            continue
        indent = " " * (node.col_offset + 4)
        if has_doc:
            edits.append((first.lineno - 1, first.end_lineno - 1, literal(doc, indent)))
            continue
        if len(body) == 1 and isinstance(first, ast.Expr) and first.lineno == node.end_lineno:
            line = lines[first.lineno - 1]
            at = line.rindex("...")
            head = line[:at].rstrip()
            edits.append((first.lineno - 1, first.lineno - 1, [head, *literal(doc, indent)]))
    # Bottom up; at one line, a replacement before an insertion above it.
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1] >= e[0]), reverse=True):
        lines[start : end + 1] = new
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for stub in sorted(PACKAGE.rglob("*.pyi")):
        module = importlib.import_module(module_name(stub))
        source = stub.read_text(encoding="utf-8")
        updated = rewrite(source, module)
        if updated != source:
            stale.append(stub)
            if not check:
                stub.write_text(updated, encoding="utf-8")
    if check and stale:
        names = ", ".join(str(s.relative_to(PACKAGE.parent)) for s in stale)
        print(f"stubs without their runtime docstrings: {names}; run tools/stub_docs.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
