"""The exercise generator: exercises/ is in sync with solutions/, and the
generator never destroys anyone's work (no solutions/: refuses; an edited
file: refuses unless forced; files it did not generate: left alone)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import authoring

ROOT = authoring.ROOT


def test_exercises_are_generated_from_solutions() -> None:
    assert authoring.check() == [], "exercises/ is out of date: run `python -m tools exercises`"


def test_stubs_contain_no_solution() -> None:
    for rel, data in authoring.expected_exercises(ROOT / "solutions").items():
        if rel.suffix not in authoring.SOURCE_SUFFIXES:
            continue  # READMEs may explain the markers
        text = data.decode(errors="replace")
        assert "BEGIN SOLUTION" not in text and "END STUB" not in text, rel


def test_marker_errors_are_reported_with_line_numbers() -> None:
    with pytest.raises(authoring.MarkerError, match="f.c:1: BEGIN SOLUTION without END SOLUTION"):
        authoring.make_stub("/* BEGIN SOLUTION */\nint x;\n", ".c", "f.c")
    with pytest.raises(authoring.MarkerError, match="f.py:2: marker without BEGIN SOLUTION"):
        authoring.make_stub("x = 1\n# END SOLUTION\n", ".py", "f.py")
    py = authoring.make_stub("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n", ".py")
    assert py == 'def f():\n    # YOUR CODE HERE (see README.md)\n    raise NotImplementedError("see README.md")\n'


def _course(tmp_path: Path) -> Path:
    """A small course repository in git: one C exercise, generated and committed."""
    root = tmp_path / "course"
    (root / "solutions/01_x/adder").mkdir(parents=True)
    (root / "solutions/01_x/adder/adder.c").write_text(
        "int add(int a, int b)\n{\n    /* BEGIN SOLUTION */\n    return a + b;\n    /* END SOLUTION */\n"
        "    /* BEGIN STUB\n    return 0;\n    END STUB */\n}\n"
    )
    (root / "solutions/01_x/adder/README.md").write_text("# add two numbers\n")
    authoring.write(root)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=root, check=True)
    return root


def test_an_edited_exercise_is_never_overwritten_without_force(tmp_path: Path) -> None:
    root = _course(tmp_path)
    mine = root / "exercises/01_x/adder/adder.c"
    assert "YOUR CODE HERE" in mine.read_text()
    mine.write_text("int add(int a, int b) { return a + b; } /* the learner's work */\n")
    extra = root / "exercises/01_x/adder/notes.txt"
    extra.write_text("my notes\n")
    (root / "solutions/01_x/adder/README.md").write_text("# add two numbers, now with a hint\n")
    with pytest.raises(authoring.AuthoringError, match="exercises/01_x/adder/adder.c: changed since the generator"):
        authoring.write(root)
    assert "the learner's work" in mine.read_text()
    assert (root / "exercises/01_x/adder/README.md").read_text() == "# add two numbers\n", "nothing written"
    written = authoring.write(root, force=True)
    assert "YOUR CODE HERE" in mine.read_text() and mine in written
    assert extra.read_text() == "my notes\n", "a file the generator did not write is never deleted"
    assert authoring.check(root) == ["exercises/01_x/adder/notes.txt has no source in solutions/"]


def test_an_untouched_stub_follows_its_solution(tmp_path: Path) -> None:
    root = _course(tmp_path)
    sol = root / "solutions/01_x/adder/adder.c"
    sol.write_text(sol.read_text().replace("return 0;", "return -1;"))
    written = authoring.write(root)
    assert "return -1;" in (root / "exercises/01_x/adder/adder.c").read_text()
    assert [p.name for p in written] == ["adder.c"]


def test_the_generator_refuses_where_there_are_no_solutions(tmp_path: Path) -> None:
    root = _course(tmp_path)
    shutil.rmtree(root / "solutions")
    before = {p: p.read_bytes() for p in (root / "exercises").rglob("*") if p.is_file()}
    with pytest.raises(authoring.AuthoringError, match="solutions not found"):
        authoring.write(root)
    with pytest.raises(authoring.AuthoringError):
        authoring.check(root)
    assert before == {p: p.read_bytes() for p in (root / "exercises").rglob("*") if p.is_file()}


def test_the_command_says_why_in_one_line_and_exits_2(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "tools", "exercises", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0 and "up to date" in res.stdout, res.stdout + res.stderr
    moved = subprocess.run([sys.executable, "-m", "lowlat", "exercises"], capture_output=True, text=True, timeout=60)
    assert moved.returncode == 2 and "python -m tools exercises" in moved.stderr
    assert len(moved.stderr.strip().splitlines()) == 1
