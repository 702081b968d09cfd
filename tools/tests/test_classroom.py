"""The class report, as exercises/README.md tells instructors to make it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.classroom import class_report, excluded

ROOT = Path(__file__).resolve().parents[2]


def test_class_report_table(tmp_path: Path) -> None:
    def report(name: str, results: dict[str, bool]) -> Path:
        cases = "".join(
            f'<testcase classname="exercises.{nb.replace("/", ".")}.{nb.split("/")[-1]}.ipynb" name="Cell {i}">'
            + ("" if ok else "<failure message='differ'/>")
            + "</testcase>"
            for nb, ok in results.items()
            for i in (0, 1)
        )
        p = tmp_path / f"{name}.xml"
        p.write_text(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
        return p

    a = report("alice", {"01_budgets/budget": True, "03_spsc/mpmc": False})
    b = report("bob", {"01_budgets/budget": True, "03_spsc/mpmc": True})
    rep = class_report([a, b])
    assert rep.exercises == ["01_budgets/budget", "03_spsc/mpmc"]
    lines = rep.table().splitlines()
    assert lines[0].split() == ["student", "01_budgets/budget", "03_spsc/mpmc", "passed"]
    assert lines[2].split() == ["alice", "PASS", "FAIL", "1/2"]
    assert lines[3].split() == ["bob", "PASS", "PASS", "2/2"]
    bad = tmp_path / "broken.xml"
    bad.write_text("not xml")
    with pytest.raises(ValueError, match="not a JUnit XML report"):
        class_report([bad])
    cli = subprocess.run(
        [sys.executable, "-m", "tools", "class-report", str(a), str(b)], cwd=ROOT, capture_output=True, text=True
    )
    assert cli.returncode == 0 and "alice" in cli.stdout and "2/2" in cli.stdout


@pytest.mark.slow
def test_grade_class_grades_each_students_file_in_a_fresh_tree(tmp_path: Path) -> None:
    """Two students: alice hands in the solution inside a copy of the release,
    bob a bare stub beside a checks.py and a notebook of his own that would
    pass everything.  Only the learner files are graded, in fresh trees."""
    from tools.authoring import make_stub

    solved = ROOT / "solutions/04_measurement/loglinear/loglinear.py"
    alice = tmp_path / "subs/alice/exercises/04_measurement/loglinear"
    alice.mkdir(parents=True)
    (alice / "loglinear.py").write_text(solved.read_text())
    bob = tmp_path / "subs/bob"
    bob.mkdir(parents=True)
    (bob / "loglinear.py").write_text(make_stub(solved.read_text(), ".py", "loglinear.py"))
    (bob / "checks.py").write_text("CHECKS = {}\n")  # never used: the checks come from the fresh tree
    (bob / "loglinear.ipynb").write_text("{}")  # nor is the student's notebook
    reports = tmp_path / "reports"
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools",
            "grade-class",
            str(tmp_path / "subs"),
            "--report",
            str(reports),
            "--exercise",
            "loglinear",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert sorted(p.name for p in reports.iterdir()) == ["alice.xml", "bob.xml"]
    assert "alice: loglinear: 5/5 checks passed" in cli.stdout, cli.stdout
    assert "bob: loglinear: 1/5 checks passed" in cli.stdout, cli.stdout  # no_reference passes on a stub
    rep = class_report(sorted(reports.iterdir()))
    assert rep.exercises == ["04_measurement/loglinear"]
    lines = rep.table().splitlines()
    assert lines[2].split() == ["alice", "PASS", "1/1"] and lines[3].split() == ["bob", "FAIL", "0/1"]
    assert "not implemented yet" in (reports / "bob.xml").read_text()


def test_a_release_leaves_out_the_answers() -> None:
    # tests/broken/ holds implementations that are right but for one defect.
    assert excluded(Path("solutions/03_spsc/mpmc/mpmc.c")) and excluded(Path("tests/broken/mpmc/destroy_leaks.c"))
    assert not excluded(Path("tests/test_grading.py")) and not excluded(Path("exercises/03_spsc/mpmc/mpmc.c"))
