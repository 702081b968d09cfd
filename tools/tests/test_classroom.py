"""The class report, as exercises/README.md tells instructors to make it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.classroom import class_report

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
