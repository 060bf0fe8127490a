"""The README's code runs: its Python sessions as doctests (in order, sharing
one namespace), its Python scripts as written, its C blocks are the example
programs or excerpts of them, and the example outputs it shows are what the
built programs print."""

import doctest
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
BLOCKS = [(m.group(1), m.group(2)) for m in BLOCK.finditer(README)]


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    # FileBacked temporaries of the examples go to a directory of this test.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)


def python_blocks(kind):
    sessions = [text for lang, text in BLOCKS if lang == "python" and text.startswith(">>>")]
    scripts = [text for lang, text in BLOCKS if lang == "python" and not text.startswith(">>>")]
    return sessions if kind == "sessions" else scripts


def test_the_readme_has_code():
    assert len(python_blocks("sessions")) >= 5
    assert len(python_blocks("scripts")) >= 1
    assert sum(lang == "c" for lang, _ in BLOCKS) >= 3


def test_python_sessions():
    text = "\n".join(python_blocks("sessions"))
    test = doctest.DocTestParser().get_doctest(text, {}, "README.md", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 20
    assert result.failed == 0


@pytest.mark.parametrize("index", range(len(python_blocks("scripts"))))
def test_python_scripts(index, capsys):
    exec(compile(python_blocks("scripts")[index], "README.md", "exec"), {})
    printed = capsys.readouterr().out
    # the training script prints its final loss, below the demo's target
    assert float(printed.split()[-1]) < 0.1


def code_of(line):
    """A C line without its /* */ comments, whitespace collapsed."""
    return " ".join(re.sub(r"/\*.*?\*/", " ", line).split())


def c_lines(path):
    return {code_of(line) for line in path.read_text(encoding="utf-8").splitlines()}


def test_c_blocks_come_from_the_examples():
    examples = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "examples").glob("*.c")}
    lines = set().union(*(c_lines(ROOT / "examples" / name) for name in examples))
    for lang, text in BLOCKS:
        if lang != "c":
            continue
        if "int main" in text:
            assert text in examples.values()
            continue
        # an excerpt: every line of code is one of an example's lines
        for line in text.splitlines():
            code = code_of(line)
            if code:
                assert code in lines, line


def built(name):
    found = sorted(ROOT.glob(f"build/*/examples/{name}"), key=lambda p: p.stat().st_mtime)
    if not found:
        pytest.skip(f"examples/{name}.c is not built (make build-c)")
    return found[-1]


@pytest.mark.parametrize(
    "name", ["layout_divide", "autograd_cpu", "evictable_profile", "custom_carrier"]
)
def test_c_example_output_is_shown(name):
    run = subprocess.run([built(name)], capture_output=True, text=True, check=True)
    shown = [text for lang, text in BLOCKS if lang == "text"]
    assert run.stdout in shown
