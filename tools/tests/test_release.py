"""A student release, made and used as a student would: it holds no
solutions and no author tool, every command a student has leaves their
files as they were, and the release's own test command passes there."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import classroom

ROOT = classroom.ROOT


def _run(cmd: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CI="true", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _digest(root: Path) -> dict[str, str]:
    """Every student-visible file's hash (build products and caches aside)."""
    skip = {"__pycache__", ".pytest_cache", ".hypothesis", "build", ".ipynb_checkpoints", "lowlat.egg-info"}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and not skip & set(p.relative_to(root).parts)
        and not p.name.startswith("_core")  # the core built in place
        and p.suffix != ".o"
    }


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("release") / "student"
    res = _run([sys.executable, "-m", "tools", "release", str(dest)], ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no solutions/" in res.stdout
    # What `pip install -e .` does in the release, without touching this
    # environment's own install of lowlat: build the core in place.
    build = _run([sys.executable, "lowlat/core/_build.py"], dest, timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return dest


def test_the_release_holds_the_course_and_no_answers(release: Path) -> None:
    top = {p.name for p in release.iterdir()}
    assert {"chapters", "exercises", "lowlat", "csrc", "tests", "README.md", "pyproject.toml", "setup.py"} <= top
    assert not {"solutions", "tools", ".ci", ".git", "CONTRIBUTING.md"} & top
    for p in (release / "exercises").rglob("*"):
        if p.suffix in (".c", ".h", ".py"):
            assert "BEGIN SOLUTION" not in p.read_text(), p
    readme = (release / "README.md").read_text()
    assert classroom.AUTHOR_BEGIN not in readme and "python -m tools" not in readme
    assert 'python -m pip install -e ".[test]" && python -m pytest' in readme
    for doc in ("README.md", "exercises/README.md"):
        text = (release / doc).read_text()
        for gone in ("solutions/", "python -m tools", "For instructors", "For authors", classroom.AUTHOR_BEGIN):
            assert gone not in text, (doc, gone)
    with pytest.raises(FileExistsError, match="exists; give a new folder"):
        classroom.release(release)


def test_every_student_command_leaves_their_files_intact(release: Path) -> None:
    before = _digest(release)
    py = sys.executable
    commands = [
        [py, "-m", "lowlat", "doctor"],
        [py, "-m", "lowlat", "exercises"],
        [py, "-m", "lowlat", "exercises", "--force"],
        [py, "-m", "lowlat", "notebooks"],
        [py, "-m", "lowlat", "release", "elsewhere"],
    ]
    specs = sorted((release / "exercises").glob("*/*/exercise.toml"))
    assert specs, "the release's exercises are discovered from their folders"
    for spec in specs:
        learner = [p for p in spec.parent.iterdir() if p.suffix in (".c", ".py") and "YOUR CODE HERE" in p.read_text()]
        assert learner, f"{spec.parent}: no file for the learner to edit"
        commands.append([py, "-m", "lowlat", "grade", spec.parent.name, str(learner[0]), "--no-timing"])
    results = {" ".join(c[3:]): _run(c, release) for c in commands}
    for cmd, res in results.items():
        if cmd.startswith(("exercises", "notebooks", "release")):
            assert res.returncode == 2 and "python -m tools" in res.stderr, (cmd, res.stderr)
        elif cmd.startswith("grade"):
            assert res.returncode == 1 and "checks passed" in res.stdout, (cmd, res.stdout + res.stderr)
        else:
            assert res.returncode == 0, (cmd, res.stdout + res.stderr)
    assert _digest(release) == before, "a student command changed a file of the release"


@pytest.mark.slow
def test_the_release_test_command_passes_there(release: Path) -> None:
    """The README's test command (its pytest half; the install is the
    in-place build above), with what the main suite already ran on the very
    same files left to it: the browser test, the core's sanitizer stress
    runs, the one-CPU runs and the chapters under nbval (the release changes
    none of csrc/, lowlat/ or chapters/)."""
    before = _digest(release)
    res = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not browser",
            "--ignore=tests/test_c_core.py",
            "--ignore=tests/test_one_cpu.py",
            "--deselect=tests/test_notebooks.py::test_chapters_pass_strict_nbval",
        ],
        release,
        timeout=1800,
    )
    tail = res.stdout[-4000:] + res.stderr[-2000:]
    assert res.returncode == 0, tail
    assert " passed" in res.stdout.splitlines()[-1], tail
    assert _digest(release) == before, "the test command changed a file of the release"
