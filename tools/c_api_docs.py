"""Markdown pages of the public C API, made from the headers themselves.

Every header under ``include/strideweave`` becomes one page: its leading
comment is the introduction, each ``/* ---- name */`` rule starts a
section, and each declaration (a function, a type, an enumeration, a
``#define`` constant) is shown as code under its heading with the comment
written directly above it (or after it on the same line) as its text.
Declarations that follow one another without a blank line share one
entry, as they share one comment in the header. Nothing is taken from
anywhere but the headers, so the pages cannot drift from them.

    python tools/c_api_docs.py OUT_DIR   # writes OUT_DIR/index.md and one page per header

The documentation site calls :func:`pages` at build time
(``tools/docs_site.py``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HEADERS = Path(__file__).resolve().parents[1] / "include" / "strideweave"

# A section rule: /* ----- trees */ (the dashes, then the section's name).
RULE = re.compile(r"^/\*\s*-{4,}\s*(.*?)\s*\*/$", re.S)
DEFINE = re.compile(r"^#\s*define\s+(SW_[A-Z0-9_]+)\s+(\S.*)$")
IDENT = re.compile(r"[A-Za-z_]\w*")


class HeaderError(ValueError):
    """A header the generator cannot read (it names the file and line)."""


@dataclass
class Item:
    kind: str  # "comment", "decl", "define", "include", "blank"
    text: str
    line: int
    trailing: bool = False  # a comment after code on the same line


@dataclass
class Entry:
    """One heading of a page: declarations and the comment that documents them."""

    decls: list[Item] = field(default_factory=list)
    doc: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        out: list[str] = []
        for decl in self.decls:
            out += declared_names(decl)
        return out


def comment_text(raw: str) -> str:
    """The text of a /* */ or // comment, its frame of stars removed."""
    if raw.startswith("//"):
        return raw[2:].strip()
    body = raw[2:-2]
    lines = body.split("\n")
    out = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("*"):
            stripped = stripped[1:]
            # Keep the indentation after the star (code in comments).
            stripped = stripped[1:] if stripped.startswith(" ") else stripped
        else:
            stripped = line.strip()
        out.append(stripped.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def scan(text: str, path: Path) -> list[Item]:
    """Comments, declarations, constants and blank lines, in file order.

    Preprocessor blocks other than the include guard (``#ifdef
    __cplusplus``, the ``SW_API`` definitions) are skipped whole.
    """
    items: list[Item] = []
    i, n, line = 0, len(text), 1
    skipping: list[bool] = []  # per open #if: is the block skipped?
    at_line_start = True
    code_on_line = False

    def advance(to: int) -> None:
        nonlocal i, line
        line += text.count("\n", i, to)
        i = to

    while i < n:
        ch = text[i]
        if ch == "\n":
            if at_line_start and not code_on_line:
                items.append(Item("blank", "", line))
            advance(i + 1)
            at_line_start, code_on_line = True, False
            continue
        if ch in " \t\r":
            i += 1
            continue
        if any(skipping) and ch != "#":
            # Inside a skipped preprocessor block: the line is not read.
            end = text.find("\n", i)
            advance(n if end < 0 else end)
            code_on_line = True
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise HeaderError(f"{path.name}:{line}: unterminated comment")
            raw = text[i : end + 2]
            if not any(skipping):
                items.append(Item("comment", raw, line, trailing=code_on_line))
            advance(end + 2)
            at_line_start = False
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            if not any(skipping):
                items.append(Item("comment", text[i:end], line, trailing=code_on_line))
            advance(end)
            continue
        if ch == "#":
            end = i
            while True:
                end = text.find("\n", end)
                end = n if end < 0 else end
                if text[end - 1] != "\\":
                    break
                end += 1
            directive = text[i:end].strip()
            word = directive[1:].strip().split(None, 1)[0] if len(directive) > 1 else ""
            if word in ("if", "ifdef", "ifndef"):
                # The C++ linkage and the platform's SW_API are not API.
                skipping.append("__cplusplus" in directive or "_WIN32" in directive)
            elif word == "endif":
                if not skipping:
                    raise HeaderError(f"{path.name}:{line}: #endif without #if")
                skipping.pop()
            elif word == "include" and not any(skipping):
                found = re.search(r'"strideweave/(\w+\.h)"', directive)
                if found:
                    items.append(Item("include", found.group(1), line))
            elif word == "define" and not any(skipping):
                match = DEFINE.match(directive)
                if match and match.group(1) != "SW_API":
                    items.append(Item("define", directive, line))
            advance(end)
            code_on_line = True
            at_line_start = False
            continue
        # A declaration: up to the ';' at brace depth 0, comments inside kept.
        start, start_line, braces, j = i, line, 0, i
        while True:
            if j >= n:
                raise HeaderError(f"{path.name}:{start_line}: declaration without ';'")
            if text.startswith("/*", j):
                close = text.find("*/", j + 2)
                if close < 0:
                    raise HeaderError(f"{path.name}:{start_line}: unterminated comment")
                j = close + 2
                continue
            c = text[j]
            if c == "{":
                braces += 1
            elif c == "}":
                braces -= 1
            elif c == ";" and braces == 0:
                break
            j += 1
        if not any(skipping):
            items.append(Item("decl", text[start : j + 1], start_line))
        advance(j + 1)
        code_on_line, at_line_start = True, False
    return items


def strip_comments(code: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", code, flags=re.S)


def declared_names(decl: Item) -> list[str]:
    """What a declaration declares: a function, type or constant name."""
    if decl.kind == "define":
        match = DEFINE.match(decl.text)
        return [match.group(1)] if match else []
    code = " ".join(strip_comments(decl.text).split())
    if code.startswith("SW_API"):
        head = code[: code.index("(")] if "(" in code else code
        names = IDENT.findall(head)
        return [names[-1]] if names else []
    if code.startswith("typedef"):
        pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", code)
        if pointer and "{" not in code:
            return [pointer.group(1)]
        tail = code[code.rindex("}") + 1 :] if "}" in code else code
        names = IDENT.findall(tail.rstrip(";"))
        return [names[-1]] if names else []
    if code.startswith(("enum", "struct")) and "{" in code:
        tag = re.match(r"(enum|struct)\s*(\w*)\s*\{", code)
        if tag and tag.group(2):
            return [f"{tag.group(1)} {tag.group(2)}"]
        body = code[code.index("{") + 1 : code.rindex("}")]
        return [m.group(1) for m in re.finditer(r"(SW_\w+)\s*(?:=|,|$)", body.strip())][:1]
    return []


def is_forward_declaration(decl: Item) -> bool:
    code = " ".join(strip_comments(decl.text).split())
    return bool(re.fullmatch(r"(struct|enum)\s+\w+\s*;", code))


MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]#<>&|]")
# Markdown escapes these with a backslash; the others become HTML entities
# (a backslash before them would be printed).
ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "|": "&#124;"}


def escape(text: str) -> str:
    """Comment prose as Markdown text: nothing in it is taken as markup."""
    return MARKDOWN_SPECIAL.sub(lambda m: ENTITIES.get(m.group(0), "\\" + m.group(0)), text)


def prose(text: str) -> list[str]:
    """A comment's text as Markdown: paragraphs, lists, indented code."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        lines = para.split("\n")
        if not para.strip():
            continue
        if all(line.startswith("    ") or not line.strip() for line in lines):
            out += ["```text", *(line[4:] for line in lines), "```", ""]
            continue
        items: list[str] = []
        for line in lines:
            stripped = line.strip()
            if re.match(r"^(-|\d+[.)])\s", stripped) or not items:
                items.append(stripped)
            else:
                items[-1] += " " + stripped
        for item in items:
            bullet = re.match(r"^(-|\d+[.)])\s+(.*)$", item)
            if bullet and len(items) > 1:
                marker = "-" if bullet.group(1) == "-" else bullet.group(1).rstrip(")") + "."
                out.append(f"{marker} {escape(bullet.group(2))}")
            else:
                out.append(escape(item))
                out.append("")
        out.append("")
    return out


def code_block(decls: list[Item]) -> list[str]:
    lines = ["```c"]
    for decl in decls:
        body = decl.text
        if decl.kind == "decl":
            # Re-indent continuation lines as written in the header.
            first, *rest = body.split("\n")
            lines.append(first)
            lines += rest
        else:
            lines.append(body)
    lines.append("```")
    return lines


@dataclass
class Page:
    name: str  # "layout.h"
    title: str  # the first sentence of the header's comment
    markdown: str
    names: list[str]


def header_page(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    items = scan(text, path)
    included = [item.text for item in items if item.kind == "include"]
    items = [item for item in items if item.kind != "include"]
    intro = ""
    if items and items[0].kind == "comment":
        intro = comment_text(items.pop(0).text)
    sections: list[tuple[str, list[Entry | str]]] = [("", [])]
    pending: list[str] | None = None  # a comment waiting for its declaration
    last: Entry | None = None
    previous = "blank"
    for item in items:
        if item.kind == "blank":
            if pending is not None:
                sections[-1][1].append("\n".join(pending))
                pending = None
            last, previous = None, "blank"
            continue
        if item.kind == "comment":
            body = item.text.strip()
            rule = RULE.match(body)
            if rule:
                sections.append((rule.group(1).strip(), []))
                pending, last, previous = None, None, "comment"
                continue
            if item.trailing and last is not None:
                last.doc.append(comment_text(item.text))
                continue
            if pending is not None and previous == "comment":
                pending.append(comment_text(item.text))
            else:
                if pending is not None:
                    sections[-1][1].append("\n".join(pending))
                pending = [comment_text(item.text)]
            previous = "comment"
            continue
        if item.kind == "decl" and is_forward_declaration(item):
            previous = "decl"
            continue
        if last is not None and previous == "decl" and pending is None:
            last.decls.append(item)
        else:
            last = Entry([item], pending or [])
            sections[-1][1].append(last)
        pending, previous = None, "decl"
    if pending is not None:
        sections[-1][1].append("\n".join(pending))

    title = re.split(r"(?<=[.])\s", intro.replace("\n", " "), maxsplit=1)[0].rstrip(".:")
    out = [f"# {path.name}", "", f"`#include <strideweave/{path.name}>`", ""]
    out += prose(intro)
    if included and path.name == "strideweave.h":
        out += ["It includes:", ""]
        out += [f"- [{name}]({name[:-2]}.md)" for name in included]
        out.append("")
    names: list[str] = []
    for heading, parts in sections:
        if not parts:
            continue
        if heading:
            out += [f"## {escape(heading[:1].upper() + heading[1:])}", ""]
        for part in parts:
            if isinstance(part, str):
                out += prose(part)
                continue
            entry_names = part.names
            if not entry_names:
                raise HeaderError(
                    f"{path.name}:{part.decls[0].line}: cannot tell what this declares"
                )
            names += entry_names
            anchors = [re.sub(r"\W+", "-", name).strip("-") for name in entry_names]
            out += [f'<a id="{anchor}"></a>' for anchor in anchors[1:]]
            label = ", ".join(f"`{name}`" for name in entry_names)
            out += [f"### {label} {{#{anchors[0]}}}", ""]
            out += code_block(part.decls)
            out.append("")
            for doc in part.doc:
                out += prose(doc)
    return Page(path.name, title, "\n".join(out).rstrip() + "\n", names)


def api_functions(path: Path) -> list[str]:
    """The names of the SW_API functions in a header, found independently of
    the page generator (the pages must document each of them)."""
    code = strip_comments(path.read_text(encoding="utf-8"))
    code = re.sub(r"^\s*#.*$", "", code, flags=re.M)
    return re.findall(r"\bSW_API\b[^;(]*?\b(\w+)\s*\(", code)


def pages(headers: Path = HEADERS) -> list[Page]:
    """One page per public header, in name order, with strideweave.h first;
    raises HeaderError if a header's functions are not all documented."""
    paths = sorted(headers.glob("*.h"), key=lambda p: (p.name != "strideweave.h", p.name))
    out = []
    for path in paths:
        page = header_page(path)
        missing = [name for name in api_functions(path) if name not in page.names]
        if missing:
            raise HeaderError(f"{path.name}: functions missing from the page: {missing}")
        out.append(page)
    return out


def index(all_pages: list[Page]) -> str:
    out = [
        "# C API",
        "",
        "`libstrideweave` is the whole framework in C11; the Python package is a",
        "binding of it. `#include <strideweave/strideweave.h>` brings in every",
        "header below. These pages are made from the headers' declarations and",
        "comments when the site is built (see [Using the library from C]"
        "(../../tutorials/c.md) for building and linking).",
        "",
        "| header | what it declares | entries |",
        "| --- | --- | --- |",
    ]
    for page in all_pages:
        out.append(
            f"| [{page.name}]({page.name[:-2]}.md) | {escape(page.title)} | {len(page.names)} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tools/c_api_docs.py OUT_DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    all_pages = pages()
    for page in all_pages:
        (folder / f"{page.name[:-2]}.md").write_text(page.markdown, encoding="utf-8")
    (folder / "index.md").write_text(index(all_pages), encoding="utf-8")
    print(f"{len(all_pages)} pages, {sum(len(p.names) for p in all_pages)} entries in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
