"""The documentation's sources: every page's Python examples run and do what
the page says (tools/doc_examples.py, which the site build also runs), its
C excerpts are lines of the example programs, its shell and CMake recipes
are the README's (which tests/python/test_c_install.py runs), and the C
API pages document every function the headers declare."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import c_api_docs  # noqa: E402 (tools/ is put on the path just above)
import doc_examples  # noqa: E402

PAGES = doc_examples.pages()
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def fences(path):
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(path.read_text(encoding="utf-8"))]


def test_the_docs_have_pages_and_examples():
    names = {p.relative_to(ROOT / "docs").as_posix() for p in PAGES}
    for page in (
        "index.md",
        "tutorials/layouts.md",
        "tutorials/tensors.md",
        "tutorials/moving.md",
        "tutorials/carriers.md",
        "tutorials/c.md",
    ):
        assert page in names
    assert sum(len(doc_examples.page_blocks(p)) for p in PAGES) >= 25


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_page_examples_run(page, tmp_path):
    doc_examples.run_page(page, tmp_path, page.relative_to(ROOT).as_posix())


def test_a_failing_example_names_its_page_and_line(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("# Broken\n\n```python\n>>> 1 + 1\n3\n```\n", encoding="utf-8")
    with pytest.raises(doc_examples.ExampleError, match=r"^broken.md:4: the session's output"):
        doc_examples.run_page(page, tmp_path, "broken.md")
    page.write_text("text\n\n```python\nx = 1\nraise ValueError('no')\n```\n", encoding="utf-8")
    with pytest.raises(
        doc_examples.ExampleError,
        match=r"(?s)^broken.md:4: the example raised.*"
        r"line 5.*ValueError: no",
    ):
        doc_examples.run_page(page, tmp_path, "broken.md")


def code_of(line):
    return " ".join(re.sub(r"/\*.*?\*/", " ", line).split())


def test_c_excerpts_come_from_the_examples():
    lines = set()
    for example in (ROOT / "examples").glob("*.c"):
        lines |= {code_of(line) for line in example.read_text(encoding="utf-8").splitlines()}
    readme = {
        line.strip()
        for lang, text in FENCE.findall(ROOT.joinpath("README.md").read_text(encoding="utf-8"))
        if lang in ("sh", "cmake")
        for line in text.splitlines()
    }
    checked = 0
    for page in PAGES:
        for lang, text in fences(page):
            if lang == "c":
                for line in text.splitlines():
                    if code_of(line):
                        assert code_of(line) in lines, f"{page.name}: {line!r} is in no example"
                checked += 1
            elif lang in ("sh", "cmake"):
                for line in filter(str.strip, text.splitlines()):
                    assert line.strip() in readme, f"{page.name}: {line!r} is not the README's"
                checked += 1
    assert checked >= 5


def test_c_api_pages_cover_every_function():
    pages = c_api_docs.pages()
    headers = sorted(p.name for p in c_api_docs.HEADERS.glob("*.h"))
    assert sorted(p.name for p in pages) == headers
    documented = {name for page in pages for name in page.names}
    for header in c_api_docs.HEADERS.glob("*.h"):
        for name in c_api_docs.api_functions(header):
            assert name in documented, f"{header.name}: {name}"
    layout = next(p for p in pages if p.name == "layout.h")
    assert "### `sw_layout_divide` {#sw_layout_divide}" in layout.markdown


def test_c_api_comment_becomes_the_entry_text(tmp_path):
    header = tmp_path / "demo.h"
    header.write_text(
        "/*\n * Demo: a header.\n */\n#ifndef DEMO_H\n#define DEMO_H\n"
        '#ifdef __cplusplus\nextern "C" {\n#endif\n\n'
        "/* ------------------------------------------------ things */\n\n"
        "/* Makes a [thing] of *n* parts (<n> & more). */\n"
        "SW_API sw_status sw_thing_new(int n,\n                            sw_thing **out);\n"
        "SW_API void sw_thing_unref(sw_thing *t);\n\n"
        "#define SW_THING_MAX 4 /* at most */\n"
        "#ifdef __cplusplus\n}\n#endif\n#endif\n",
        encoding="utf-8",
    )
    page = c_api_docs.header_page(header)
    assert page.names == ["sw_thing_new", "sw_thing_unref", "SW_THING_MAX"]
    text = page.markdown
    assert text.startswith("# demo.h\n") and "Demo: a header." in text
    assert "## Things" in text
    assert "### `sw_thing_new`, `sw_thing_unref` {#sw_thing_new}" in text
    assert '<a id="sw_thing_unref"></a>' in text
    assert "Makes a \\[thing\\] of \\*n\\* parts (&lt;n&gt; &amp; more)." in text
    assert "extern" not in text
    header.write_text("/* x */\nSW_API int sw_broken(void)\n", encoding="utf-8")
    with pytest.raises(c_api_docs.HeaderError, match=r"^demo.h:2: declaration without ';'$"):
        c_api_docs.header_page(header)
