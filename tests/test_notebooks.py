"""The notebooks: committed clean, passing strictly under nbval (chapters and
solutions), and failing with a readable reason on every exercise stub."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lowlat import notebooks

ROOT = Path(__file__).resolve().parent.parent
ALL = notebooks.all_notebooks()


def test_there_are_notebooks_in_every_layer() -> None:
    for layer in ("chapters", "exercises", "solutions"):
        assert any(p.is_relative_to(ROOT / layer) for p in ALL), f"no notebook under {layer}/"


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_notebook_is_clean(path: Path) -> None:
    assert notebooks.problems(path) == []


def test_problems_are_detected(tmp_path: Path) -> None:
    import json

    nb = json.loads((ROOT / "chapters/01_budgets/01_budgets.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code[1]["execution_count"] = None
    code[2]["outputs"].append({"output_type": "error", "ename": "ValueError", "evalue": "x", "traceback": []})
    code[3]["outputs"].append({"output_type": "stream", "name": "stdout", "text": "/home/alice/x\n"})
    code[4]["execution_count"] = 99
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps(nb))
    found = "\n".join(notebooks.problems(p))
    for expected in ("was never executed", "error output (ValueError)", "machine-specific path",
                     "execution count 99", "not normalised"):
        assert expected in found, found


def _nbval(*args: str) -> subprocess.CompletedProcess:
    # CI=true: pytest then never truncates an assertion's diff, so the expected
    # verdicts are in the output wherever this runs.
    env = dict(os.environ, CI="true")
    return subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-q", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200, env=env)


@pytest.mark.slow
def test_chapters_and_solutions_pass_strict_nbval(tmp_path: Path) -> None:
    res = _nbval("chapters", "solutions", f"--junitxml={tmp_path / 'solved.xml'}")
    assert res.returncode == 0, res.stdout[-6000:]
    # The instructor's class report reads such a report: every exercise PASS.
    from lowlat.classroom import class_report

    rep = class_report([tmp_path / "solved.xml"])
    assert rep.exercises == ["01_budgets/budget", "02_pool/handle_pool", "03_spsc/mpmc", "03_spsc/ring",
                             "04_measurement/co_correct", "04_measurement/loglinear", "05_pipeline/recorder",
                             "06_training/prefetch"]
    assert all(rep.students["solved"].values())


@pytest.mark.slow
def test_every_exercise_stub_fails_nbval_with_its_verdict(tmp_path: Path) -> None:
    res = _nbval("exercises", f"--junitxml={tmp_path / 'stub.xml'}")
    assert res.returncode == 1, res.stdout[-3000:]
    stubs = sorted(str(p.relative_to(ROOT)) for p in ALL if p.is_relative_to(ROOT / "exercises"))
    for nb in stubs:
        assert f"FAILED {nb}::Cell 0" in res.stdout, f"{nb} did not fail on its grading cell"
    # The reason is readable: the diff shows the stub's verdict against the expected one.
    for name, n in (("budget", 7), ("handle_pool", 7), ("mpmc", 7), ("ring", 5), ("co_correct", 6), ("loglinear", 5),
                    ("recorder", 6), ("prefetch", 8)):
        assert f"{name}: {n}/{n} checks passed" in res.stdout
    from lowlat.classroom import class_report

    table = class_report([tmp_path / "stub.xml"]).table()
    assert table.splitlines()[2].split()[1:] == ["FAIL"] * 8 + ["0/8"], table
