"""MkDocs hooks of the documentation site (mkdocs.yml names this file).

At build time they add the pages that are made from the sources:

- one Python API page per public module of the package (every module whose
  dotted name has no part starting with ``_``): each object of the
  modules' ``__all__`` is documented once, on its home page (the module
  that defines it, else the shortest module that exports it), and every
  other module that exports it links there;
- one C API page per public header (``tools/c_api_docs.py``);
- the pictures that the pages' own examples draw: every page's Python
  examples run (``tools/doc_examples.py``), and the files they write in
  their working directory are published beside the page.

After the build they check that every name of every ``__all__`` is in the
site's inventory under its home, so a name cannot go undocumented.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import c_api_docs  # noqa: E402 (tools/ is put on the path just above)
import doc_examples  # noqa: E402

PACKAGE = "strideweave"


def public_modules() -> list[str]:
    """The package and its public submodules, sorted."""
    package = importlib.import_module(PACKAGE)
    names = [PACKAGE]
    for info in pkgutil.walk_packages(package.__path__, PACKAGE + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def exports(modules: list[str]) -> dict[str, list[str]]:
    out = {}
    for name in modules:
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None)
        if names is None:
            raise PluginError(f"{name} has no __all__: its public names are not declared")
        out[name] = list(names)
    return out


def homes(exported: dict[str, list[str]]) -> dict[tuple[str, str], str]:
    """For each (module, name) of an __all__, the module whose page documents it."""
    by_object: dict[tuple[int, str], list[str]] = {}
    for module, names in exported.items():
        mod = importlib.import_module(module)
        for name in names:
            if not hasattr(mod, name):
                raise PluginError(f"{module}.__all__ names {name!r}, which the module lacks")
            by_object.setdefault((id(getattr(mod, name)), name), []).append(module)
    out = {}
    for (_, name), modules in by_object.items():
        obj = getattr(importlib.import_module(modules[0]), name)
        defined = getattr(obj, "__module__", None)
        if defined in modules:
            home = defined
        else:
            home = min(modules, key=lambda m: (m.count("."), m))
        for module in modules:
            out[(module, name)] = home
    return out


def first_paragraph(doc: str | None) -> str:
    """A docstring's first paragraph as Markdown for a table cell: its
    ``code`` spans kept as code, everything else as plain text."""
    if not doc:
        return ""
    text = doc.strip().split("\n\n")[0].replace("\n", " ").replace("``", "`")
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backquote: all plain text
        return c_api_docs.escape(text)
    return "".join(
        f"`{part}`" if i % 2 else c_api_docs.escape(part) for i, part in enumerate(parts)
    )


def summary(obj: Any) -> str:
    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or callable(obj)) else None
    return first_paragraph(doc)


def module_page(module: str, names: list[str], home: dict[tuple[str, str], str]) -> str:
    own = [n for n in names if home[(module, n)] == module]
    others = [n for n in names if home[(module, n)] != module]
    out = [f"# {module}", ""]
    out += [
        f"::: {module}",
        "    options:",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        f"      members: [{', '.join(own)}]" if own else "      members: false",
        "",
    ]
    if others:
        mod = importlib.import_module(module)
        out += [
            "## Also exported here",
            "",
            f"Names of `{module}.__all__` documented with the module that defines them.",
            "",
            "| name | documented in | summary |",
            "| --- | --- | --- |",
        ]
        for name in others:
            target = home[(module, name)]
            link = f"[`{name}`][{target}.{name}]"
            page = f"[{target}]({target}.md)"
            out.append(f"| {link} | {page} | {summary(getattr(mod, name))} |")
        out.append("")
    return "\n".join(out)


def python_index(modules: list[str], exported: dict[str, list[str]]) -> str:
    out = [
        "# Python API",
        "",
        "Every public module of the package, with the names of its `__all__`. Each",
        "name is documented once, with the module that defines it; the pages of",
        "the modules that re-export it link there. The type stubs (`.pyi`) that",
        "ship with the package give the signatures shown.",
        "",
        "| module | names | summary |",
        "| --- | --- | --- |",
    ]
    for module in modules:
        mod = importlib.import_module(module)
        doc = first_paragraph(inspect.getdoc(mod))
        out.append(f"| [{module}]({module}.md) | {len(exported[module])} | {doc} |")
    return "\n".join(out) + "\n"


class State:
    modules: list[str] = []
    exported: dict[str, list[str]] = {}
    home: dict[tuple[str, str], str] = {}
    c_pages: list[c_api_docs.Page] = []


def on_config(config: Any) -> Any:
    State.modules = public_modules()
    State.exported = exports(State.modules)
    State.home = homes(State.exported)
    try:
        State.c_pages = c_api_docs.pages()
    except c_api_docs.HeaderError as err:
        raise PluginError(f"C API pages: {err}") from err
    nav = config["nav"]
    for i, entry in enumerate(nav):
        if isinstance(entry, dict) and "Python API" in entry:
            nav[i] = {
                "Python API": ["api/python/index.md"]
                + [{m: f"api/python/{m}.md"} for m in State.modules]
            }
        elif isinstance(entry, dict) and "C API" in entry:
            nav[i] = {
                "C API": ["api/c/index.md"]
                + [{p.name: f"api/c/{p.name[:-2]}.md"} for p in State.c_pages]
            }
    return config


def _add(files: Files, config: Any, path: str, content: str | bytes) -> None:
    if files.get_file_from_path(path) is not None:
        raise PluginError(f"{path} is generated; remove the file of that name under docs/")
    files.append(File.generated(config, path, content=content))


def on_files(files: Files, config: Any) -> Files:
    _add(files, config, "api/python/index.md", python_index(State.modules, State.exported))
    for module in State.modules:
        page = module_page(module, State.exported[module], State.home)
        _add(files, config, f"api/python/{module}.md", page)
    _add(files, config, "api/c/index.md", c_api_docs.index(State.c_pages))
    for page in State.c_pages:
        _add(files, config, f"api/c/{page.name[:-2]}.md", page.markdown)

    docs = Path(config["docs_dir"])
    for source in doc_examples.pages(docs):
        if not doc_examples.page_blocks(source):
            continue
        relative = source.relative_to(docs)
        with tempfile.TemporaryDirectory(prefix="sw-docs-") as work:
            try:
                doc_examples.run_page(source, Path(work), str(relative))
            except doc_examples.ExampleError as err:
                raise PluginError(str(err)) from err
            for made in sorted(Path(work).rglob("*.svg")):
                target = (relative.parent / made.relative_to(work)).as_posix()
                _add(files, config, target, made.read_bytes())
    return files


def _inventory(path: Path) -> set[str]:
    """The identifiers of a Sphinx inventory (objects.inv, version 2)."""
    data = path.read_bytes()
    lines = data.split(b"\n", 4)
    if len(lines) < 5 or not lines[0].startswith(b"# Sphinx inventory version 2"):
        raise PluginError(f"{path} is not a version 2 inventory")
    body = zlib.decompress(lines[4]).decode("utf-8")
    return {line.split(" ", 1)[0] for line in body.splitlines() if line.strip()}


def on_post_build(config: Any) -> None:
    inventory = _inventory(Path(config["site_dir"]) / "objects.inv")
    missing = sorted(
        f"{module}.{name}" + ("" if home == module else f" (to be documented as {home}.{name})")
        for module, names in State.exported.items()
        for name in names
        for home in [State.home[(module, name)]]
        if f"{home}.{name}" not in inventory
    )
    if missing:
        raise PluginError(
            f"{len(missing)} public names have no entry in the API reference: "
            + ", ".join(missing[:20])
        )
