"""Runs the Python examples of the documentation pages (docs/**/*.md).

Each page's fenced ``python`` blocks run in order in one namespace, in a
fresh temporary directory (which is also TMPDIR for the page): a block that
starts with ``>>>`` is an interactive session, checked as a doctest (the
printed results must match, ``...`` matching anything); any other block is
a script, run as written. The first failure stops the page with its file
and line. Files a page writes stay in its directory, so that the site can
publish the pictures the examples draw.

    python tools/doc_examples.py [PAGE.md ...]   # default: every page under docs/

The documentation build runs every page through :func:`run_page`
(``tools/docs_site.py``), and so does ``tests/python/test_docs.py``.
"""

from __future__ import annotations

import doctest
import io
import os
import re
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
FENCE = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


class ExampleError(Exception):
    """An example that failed: the message names the page, the line and what
    went wrong."""


@dataclass
class Block:
    line: int  # of the first line of code, 1-based
    code: str

    @property
    def is_session(self) -> bool:
        return self.code.lstrip().startswith(">>>")


def blocks(text: str) -> list[Block]:
    return [Block(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


def page_blocks(path: Path) -> list[Block]:
    return blocks(path.read_text(encoding="utf-8"))


def _run_session(block: Block, namespace: dict, name: str) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.code, namespace, name, name, block.line - 1)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.FAIL_FAST)
    report = io.StringIO()
    runner.run(test, out=report.write, clear_globs=False)
    namespace.update(test.globs)  # the test ran on a copy
    if runner.failures:
        raise ExampleError(
            f"{name}:{block.line}: the session's output differs\n{report.getvalue()}"
        )


def _run_script(block: Block, namespace: dict, name: str) -> None:
    # Padding keeps the line numbers of a traceback those of the page.
    code = compile("\n" * (block.line - 1) + block.code, name, "exec")
    try:
        exec(code, namespace)
    except Exception as err:
        trace = "".join(traceback.format_exception(err)[-6:])
        raise ExampleError(f"{name}:{block.line}: the example raised\n{trace}") from err


def run_page(path: Path, workdir: Path, name: str | None = None) -> int:
    """Runs a page's examples in workdir; returns how many blocks ran.

    Raises:
        ExampleError: the first block that failed (page, line, details).
    """
    name = name or str(path)
    namespace: dict = {"__name__": "__main__"}
    old_cwd, old_tmp = Path.cwd(), os.environ.get("TMPDIR")
    os.chdir(workdir)
    os.environ["TMPDIR"] = str(workdir)
    tempfile.tempdir = None
    try:
        count = 0
        for block in page_blocks(path):
            if block.is_session:
                _run_session(block, namespace, name)
            else:
                _run_script(block, namespace, name)
            count += 1
        return count
    finally:
        os.chdir(old_cwd)
        if old_tmp is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = old_tmp
        tempfile.tempdir = None


def pages(root: Path = DOCS) -> list[Path]:
    return sorted(p for p in root.rglob("*.md"))


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv[1:]] or pages()
    total = failed = 0
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="sw-docs-") as work:
            try:
                total += run_page(path.resolve(), Path(work), str(path))
            except ExampleError as err:
                failed += 1
                print(err, file=sys.stderr)
    print(f"{total} examples on {len(paths)} pages; {failed} pages failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
