"""The MLP training examples (reference §20): both Python scripts converge
and give exactly equal losses, and the C program examples/train_mlp.c
follows the same loss curve.

The C program is built by meson with the C tests (``make build-c``), not by
pytest. Its test here runs the binary named by SW_TRAIN_MLP_BIN, else the
one of build/ctest (``make test`` builds it before pytest runs), else the
newest under build/*/examples/, and is skipped when there is none.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def raw():
    return load("train_mlp_cpu")


@pytest.fixture(scope="module")
def friendly():
    return load("train_mlp_cpu_friendly")


def test_short_runs_converge_and_agree_exactly(raw, friendly):
    a = raw.main(epochs=200, log_every=None)
    b = friendly.main(epochs=200, log_every=None)
    assert a < 0.1
    assert a == b


def test_loss_curves_are_identical_and_decreasing(raw, friendly):
    a = raw.train(150, log_every=None)
    b = friendly.train(150, log_every=None)
    assert a == b and len(a) == 150
    assert a[-1] < a[0] / 4


def test_full_run_reaches_the_target(friendly):
    assert friendly.main(log_every=None) < 0.05


def test_models_follow_the_reference_structure(raw, friendly):
    for module in (raw, friendly):
        model = module.MLP()
        names = [name for name, _ in model.get_named_parameters()]
        assert names == ["hidden.weight", "hidden.bias", "output.weight", "output.bias"]
        assert model.hidden.in_features == 1 and model.hidden.out_features == 16
        assert model.output.in_features == 16 and model.output.out_features == 1


def test_logging(friendly, capsys):
    friendly.main(epochs=6, log_every=3)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert re.match(r"epoch +3 +loss \d+\.\d+ +\d+ steps/s$", lines[0])
    assert re.match(r"epoch +6 ", lines[1])
    assert lines[2].startswith("final loss ")
    friendly.main(epochs=3, log_every=None)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("name", ["train_mlp_cpu", "train_mlp_cpu_friendly"])
def test_command_line(name):
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), "20", "--log-every", "10"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert [line.split()[1] for line in out[:2]] == ["10", "20"]
    assert out[-1].startswith("final loss ") and "after 20 epochs" in out[-1]


def c_program():
    named = os.environ.get("SW_TRAIN_MLP_BIN")
    if named:
        return Path(named)
    preferred = ROOT / "build" / "ctest" / "examples" / "train_mlp"
    if preferred.exists():
        return preferred
    found = sorted(ROOT.glob("build/*/examples/train_mlp"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def test_c_program_matches_the_python_loss_curve(friendly):
    program = c_program()
    if program is None:
        pytest.skip("examples/train_mlp is not built (make build-c, or set SW_TRAIN_MLP_BIN)")
    result = subprocess.run([str(program), "240", "40"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    logged = {}
    for line in result.stdout.splitlines():
        match = re.match(r"epoch +(\d+) +loss (\S+) ", line)
        if match:
            logged[int(match.group(1))] = float(match.group(2))
    assert sorted(logged) == [40, 80, 120, 160, 200, 240]
    python = friendly.train(240, log_every=None)
    for epoch, loss in logged.items():
        assert loss == pytest.approx(python[epoch - 1], rel=1e-5)
    assert "final loss" in result.stdout.splitlines()[-1]


def test_custom_storage_example():
    # examples/custom_storage.py: a bytearray-backed definition-backed
    # carrier moved to CPU, used as an Evictable tier and moved with autograd.
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "custom_storage.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.splitlines() == [
        "moved: [0.0, 3.0, 6.0] source released: True",
        "evicted into PackedStore ; evicted: True",
        "promoted: [10.0, 11.0, 12.0, 13.0]",
        "gradient on CPU: [2.0, 2.0, 2.0]",
    ]


def test_custom_compute_example():
    # examples/custom_compute.py: a definition-backed compute carrier whose
    # kernel pack has an optimised pattern (preference 10, contiguous only)
    # and a general one for relu and a user-defined operation.
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "custom_compute.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.splitlines() == [
        "supports relu: True axpb: True exp: False",
        "ran: ['relu-fast', 'axpb-general']",
        "relu: [0.0, 0.0, 0.5, 1.0, 0.0, 4.0] axpb: [-5.0, 2.5, -8.0]",
        "gradient: [0.0, 0.0, 2.0, 2.0, 0.0, 2.0] on Accelerator",
        "profiled: [('relu', 'Accelerator'), ('demo.axpb', 'Accelerator')]",
    ]


def test_moe_offload_example():
    # examples/moe_offload.py in a short configuration: experts in a file,
    # gathered with project under a least-recently-used residency policy,
    # trained with the same losses as the model held in one CPU tensor.
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "moe_offload.py"),
            *("--steps", "30", "--experts", "16", "--dim", "32", "--tokens", "4"),
            *("--resident", "6", "--lr", "2", "--quiet"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = run.stdout.splitlines()
    assert len(lines) == 4
    first, last = (float(v.strip(",")) for v in lines[0].split()[2::3])
    assert last < first
    assert lines[1] == "largest relative difference from the all-in-memory model: 0.0e+00"
    assert lines[2] == "most experts resident: 6 of 16 allowed by the policy"
    assert lines[3].startswith("peak resident memory of the process: ")


def test_spirals_classifier_reaches_high_accuracy(capsys):
    spirals = load("spirals")
    losses, final = spirals.train(epochs=300, points=100, log_every=100)
    assert final >= 0.95 and losses[-1] < losses[0] / 10
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("epoch   100  loss ") and "accuracy" in out[0]
    assert out[-1].startswith("final accuracy ") and "after 300 epochs" in out[-1]
