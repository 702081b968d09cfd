"""`python -m tools release` refuses before it writes: a ref that is not a
commit (an option above all), a folder inside the repository, a missing
instructor extra; and what it writes carries no authors-only text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import release as rel

ROOT = rel.ROOT
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]

STUDENT_DOC = """# Exercises
Do them.
<!-- authors-only -->
`solutions/` has the answers.
<!-- /authors-only -->

## For learners
Grade with lowlat.
<!-- authors-only -->
## For instructors
python -m tools release ../x
## For authors
python -m tools exercises
<!-- /authors-only -->
"""


def _repo(tmp_path: Path, readme: str = STUDENT_DOC) -> Path:
    root = tmp_path / "repo"
    for top in ("solutions", "exercises"):
        (root / top / "01_x/ex").mkdir(parents=True)
        (root / top / "README.md").write_text(STUDENT_DOC)
        (root / top / "01_x/ex/README.md").write_text("the task\n")
    (root / "README.md").write_text(readme)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-q", "-m", "course"], check=True)
    return root


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tools", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_a_ref_that_reads_as_an_option_never_reaches_git(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    res = _cli("release", str(tmp_path / "out"), f"--ref=--output={victim}")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "--ref" in res.stderr and "not a branch, tag or commit" in res.stderr
    for ref in (f"-o{victim}", "--remote=x", "--end-of-options"):
        with pytest.raises(ValueError, match="cannot start with '-'"):
            rel.release(tmp_path / "out", ref=ref)
    assert victim.read_text() == "keep me\n" and not (tmp_path / "out").exists()
    root = _repo(tmp_path)
    for ref in ("nope", "HEAD:README.md", "HEAD~5", "", " "):
        with pytest.raises(ValueError, match="--ref"):
            rel.release(tmp_path / "out", root=root, ref=ref)
    assert not (tmp_path / "out").exists()
    assert len(rel.resolve_ref(root, "HEAD")) == 40


def test_a_release_inside_the_repository_is_refused(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    for dest in (root / "exercises/student", root / "solutions/student", root / "student"):
        with pytest.raises(ValueError, match="inside the repository"):
            rel.release(dest, root=root)
        assert not dest.exists()
    with pytest.raises(FileExistsError, match="exists"):
        rel.release(root, root=root)
    res = _cli("release", "exercises/student")
    assert res.returncode == 2 and "exercises/" in res.stderr and not (ROOT / "exercises/student").exists()


def test_the_release_drops_authors_only_parts_of_every_readme(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    out = tmp_path / "student"
    rel.release(out, root=root)
    assert not (out / "solutions").exists()
    for doc in ("README.md", "exercises/README.md"):
        text = (out / doc).read_text()
        assert "Grade with lowlat" in text
        for gone in ("solutions/", "python -m tools", "For instructors", "For authors", "authors-only"):
            assert gone not in text, (doc, gone)


def test_a_readme_naming_solutions_outside_the_markers_is_not_released(tmp_path: Path) -> None:
    root = _repo(tmp_path, readme="# Course\nsee `solutions/`\n")
    with pytest.raises(ValueError, match=r"README.md:2: names `solutions/`"):
        rel.release(tmp_path / "student", root=root)
    assert not (tmp_path / "student").exists()


def test_the_courses_student_readmes_hold_no_author_text() -> None:
    for doc in ("README.md", "solutions/README.md", "exercises/README.md"):
        text = rel.student_readme((ROOT / doc).read_text())
        for gone in (*rel.AUTHOR_ONLY_TEXT, "For instructors", "For authors", "09:00"):
            assert gone not in text, (doc, gone)


def test_a_missing_instructor_extra_is_named_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nbformat" else real(name, *a))
    with pytest.raises(ValueError, match=r'nbformat.*pip install -e "\.\[instructor\]"'):
        rel.release(tmp_path / "student")
    assert not (tmp_path / "student").exists()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "instructor = [" in pyproject and '"nbformat' in pyproject.split("instructor = [")[1].split("]")[0]
