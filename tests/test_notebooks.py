"""The notebooks under nbval: every chapter and every solution's grading
notebook passes strictly; every exercise stub fails its grading notebook
with the verdict in the failure text, however the notebook was saved.

The stubs are generated from the solutions into a temporary folder, never
read from exercises/: a learner's finished exercise there must not turn
this suite red.  (That the committed notebooks are clean is an author check:
tools/tests.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lowlat.grading import discover

try:  # author's checkout only
    from tools import authoring
    from tools.classroom import class_report
except ImportError:
    authoring = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
HAVE_SOLUTIONS = (ROOT / "solutions").is_dir() and authoring is not None
needs_solutions = pytest.mark.skipif(not HAVE_SOLUTIONS, reason="needs solutions/ and tools/ (author's checkout)")


def _nbval(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # CI=true: pytest then never truncates a failure's text.  The long-runs
    # notebook (05b) soaks for 2 minutes by default; here for 3 s (it prints
    # the length it used).
    env = dict(os.environ, CI="true", LOWLAT_SOAK_MINUTES="0.05")
    # Plugins a notebook run does not use stay unloaded (hypothesis alone
    # takes 0.7 s to start).
    off = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", *off, "-q", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )


CHAPTERS = sorted((ROOT / "chapters").rglob("*.ipynb"))
# The chapters in two runs of nbval, every other one in each: a parallel run
# spreads the two, and each pytest start (about 3 s) is paid twice, not once
# per notebook.
HALVES = [CHAPTERS[0::2], CHAPTERS[1::2]]


@pytest.mark.slow
@pytest.mark.parametrize("half", HALVES, ids=lambda h: "+".join(p.stem.split("_")[0] for p in h))
def test_chapters_pass_strict_nbval(half: list[Path]) -> None:
    res = _nbval(*(str(p.relative_to(ROOT)) for p in half))
    assert res.returncode == 0, res.stdout[-6000:]


@needs_solutions
@pytest.mark.slow
def test_solutions_pass_strict_nbval(tmp_path: Path) -> None:
    res = _nbval("solutions", f"--junitxml={tmp_path / 'solved.xml'}")
    assert res.returncode == 0, res.stdout[-6000:]
    # The instructor's class report reads such a report: every exercise PASS.
    rep = class_report([tmp_path / "solved.xml"])
    found = discover(ROOT)
    assert rep.exercises == sorted(str(ex.folder.relative_to(ROOT / "solutions")) for ex in found.values())
    assert all(rep.students["solved"].values())


def _stub_course(tmp_path: Path) -> Path:
    """exercises/ as the generator makes it, in ``tmp_path`` (with the
    repository's nbval set-up), each grading notebook saved *after* a run on
    the solution: the stored output is a pass, which must not matter."""
    course = tmp_path / "course"
    for rel, data in authoring.expected_exercises(ROOT / "solutions").items():
        dst = course / "exercises" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
    shutil.copy2(ROOT / "conftest.py", course / "conftest.py")
    return course


def _grading_notebooks(course: Path) -> list[Path]:
    return sorted(p for p in (course / "exercises").rglob("*.ipynb") if (p.parent / "exercise.toml").exists())


@needs_solutions
@pytest.mark.slow
def test_every_exercise_stub_fails_nbval_with_its_verdict(tmp_path: Path) -> None:
    course = _stub_course(tmp_path)
    found = discover(ROOT)
    for name, ex in found.items():  # each notebook has a pass stored, which must not matter
        rel = ex.folder.relative_to(ROOT / "solutions")
        stored = "".join(
            "".join(o.get("text", ""))
            for nb in (course / "exercises" / rel).glob("*.ipynb")
            for cell in json.loads(nb.read_text())["cells"]
            for o in cell.get("outputs", [])
        )
        assert f"{name}: {len(ex.checks)}/{len(ex.checks)} checks passed" in stored, name
    res = _nbval("exercises", f"--junitxml={tmp_path / 'stub.xml'}", cwd=course)
    assert res.returncode == 1, res.stdout[-3000:]
    for nb in _grading_notebooks(course):
        rel = nb.relative_to(course)
        assert f"FAILED {rel}::Cell 0" in res.stdout, f"{rel} did not fail on its grading cell"
    # The reason is readable without -vv: the verdict and the first failing check.
    for name, ex in found.items():
        assert f"GradeFailed: {name}: " in res.stdout, name
        assert f"/{len(ex.checks)} checks passed; first failing check: FAIL: " in res.stdout
    table = class_report([tmp_path / "stub.xml"]).table()
    assert table.splitlines()[2].split()[1:] == ["FAIL"] * len(found) + [f"0/{len(found)}"], table


@needs_solutions
@pytest.mark.slow
def test_a_saved_notebook_cannot_change_the_grade(tmp_path: Path) -> None:
    """The stub's notebook saved with a *passing* run stored still fails (the
    test above runs every stub's notebook saved so); the solution's notebook
    saved with a *failing* run stored still passes."""
    course = _stub_course(tmp_path)
    mpmc = course / "exercises/03_spsc/mpmc"
    nb = json.loads((mpmc / "mpmc.ipynb").read_text())
    passing = "".join(nb["cells"][1]["outputs"][0]["text"])
    n = len(discover(ROOT)["mpmc"].checks)
    assert f"mpmc: {n}/{n} checks passed" in passing, "the stored output is the solution's pass"

    failing = dict(nb["cells"][1]["outputs"][0], text=passing.replace(f"{n}/{n}", f"0/{n}").replace("PASS", "FAIL"))
    nb["cells"][1]["outputs"] = [failing]
    (mpmc / "mpmc.ipynb").write_text(json.dumps(nb))
    shutil.copy2(ROOT / "solutions/03_spsc/mpmc/mpmc.c", mpmc / "mpmc.c")
    solved = _nbval(str(mpmc / "mpmc.ipynb"), cwd=course)
    assert solved.returncode == 0, solved.stdout[-3000:]
