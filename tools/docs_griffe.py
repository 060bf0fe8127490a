"""A Griffe extension of the documentation site (mkdocs.yml names this file).

Griffe takes a class's parameters from its ``__init__``. The layout values
(``Tree``, ``Shape``, ``Stride``, ``Layout``) are immutable and are built by
``__new__`` alone, so Griffe would show them without parameters and warn
that the ``Args`` their docstrings list are not in the signature. For each
class that defines ``__new__`` and no ``__init__`` (or one that only
forwards ``*args, **kwargs``), this gives it an undocumented ``__init__``
with ``__new__``'s parameters (``cls`` read as ``self``), so that the
docstring check sees the real parameters. Private names are not rendered,
so the added method itself does not appear.
"""

from __future__ import annotations

from typing import Any

import griffe


def _classes(obj: griffe.Object, seen: set[str]) -> Any:
    """Every class of the tree, each once, aliases followed where they
    resolve (the package's modules re-export the extension's classes)."""
    for member in obj.members.values():
        if member.is_alias:
            try:
                member = member.final_target
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
        if member.path in seen or not (member.is_class or member.is_module):
            continue
        seen.add(member.path)
        if member.is_class:
            yield member
        yield from _classes(member, seen)


def _forwards(init: Any) -> bool:
    """True for no ``__init__``, or one that only takes ``*args, **kwargs``."""
    if init is None:
        return True
    if init.is_alias or not init.is_function:
        return False
    kinds = {p.kind for p in init.parameters if p.name != "self"}
    return kinds <= {griffe.ParameterKind.var_positional, griffe.ParameterKind.var_keyword}


class NewAsInit(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for cls in _classes(pkg, set()):
            new = cls.members.get("__new__")
            if new is None or not new.is_function or not _forwards(cls.members.get("__init__")):
                continue
            params = list(new.parameters)
            if params and params[0].name == "cls":
                params[0] = griffe.Parameter(
                    "self", kind=params[0].kind, annotation=None, default=None
                )
            init = griffe.Function(
                "__init__",
                parameters=griffe.Parameters(*params),
                returns="None",
                lineno=new.lineno,
                endlineno=new.endlineno,
            )
            cls.set_member("__init__", init)
