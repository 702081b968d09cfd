"""One exercise = one folder: the index tables are generated from the
exercises' specs (and are current), and ``python -m tools new-exercise``
scaffolds a folder that the grader, the tables and the generator pick up
with no other edit."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lowlat.grading import discover, grade
from lowlat.grading.spec import SpecError
from tools import authoring, indexes
from tools.scaffold import ScaffoldError, new_exercise

ROOT = authoring.ROOT


def test_the_committed_tables_are_generated_from_the_specs() -> None:
    assert indexes.check(ROOT) == [], "run `python -m tools exercises`"
    readme = (ROOT / "README.md").read_text()
    for ex in discover(ROOT).values():
        assert f"`python -m lowlat grade {ex.name} {ex.filename}`" in readme
        assert ex.title in (ex.folder.parent / "README.md").read_text()


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """The part of the repository the tables and the generator read."""
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    return tmp_path


@pytest.mark.parametrize("lang", ["py", "c"])
def test_a_new_exercise_is_picked_up_with_no_other_edit(tree: Path, lang: str) -> None:
    files = new_exercise(tree, "07_new", "doubler", lang, title="a function that doubles", minutes=25)
    folder = tree / "solutions/07_new/doubler"
    names = {p.name for p in files}
    assert {"README.md", f"doubler.{lang}", "exercise.toml", "doubler.ipynb"} <= names
    assert ("doubler.h" in names) == (lang == "c") and ("checks.c" if lang == "c" else "checks.py") in names

    found = discover(tree)  # the grader finds it
    assert found["doubler"].folder == folder and found["doubler"].minutes == 25

    changed = indexes.write(tree)  # the tables list it, a new chapter gets its README
    assert tree / "solutions/07_new/README.md" in changed
    language = "C" if lang == "c" else "Python"
    row = f"| `07_new/doubler/doubler.{lang}` | a function that doubles ({language}) |"
    assert row in (tree / "README.md").read_text()
    assert "`07_new/doubler/` | `doubler." in (tree / "solutions/README.md").read_text()
    chapter = (tree / "solutions/07_new/README.md").read_text()
    assert "# Chapter 07: the exercise" in chapter and "| 25 min |" in chapter
    assert indexes.check(tree) == []

    authoring.write(tree)  # the generator makes its exercise folder
    stub = tree / f"exercises/07_new/doubler/doubler.{lang}"
    assert "YOUR CODE HERE" in stub.read_text() and "BEGIN SOLUTION" not in stub.read_text()
    assert (tree / "exercises/07_new/README.md").is_file() and authoring.check(tree) == []

    if lang == "py":  # C builds take seconds: test_grading grades C solutions and stubs
        assert grade("doubler", folder / "doubler.py", root=tree).ok
        assert not grade("doubler", stub, root=tree).ok


def test_a_c_scaffold_grades_its_stub_as_failing(tree: Path) -> None:
    pytest.importorskip("cffi")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    new_exercise(tree, "02_pool", "doubler", "c")
    authoring.write(tree)
    stub = tree / "exercises/02_pool/doubler/doubler.c"
    report = grade("doubler", stub, root=tree)
    assert not report.results[0].passed and "returned 0, not 42" in report.results[0].reason, str(report)


@pytest.mark.parametrize(
    ("chapter", "name", "lang", "words"),
    [
        ("3_spsc", "x", "c", "CHAPTER must read NN_name"),
        ("03_spsc", "Mixed", "c", "NAME must be a lower-case identifier"),
        ("03_spsc", "class", "py", "NAME must be a lower-case identifier"),
        ("03_spsc", "queue", "py", "would shadow a module"),
        ("03_spsc", "x", "rust", "--lang must be one of c, py"),
        ("03_spsc", "mpmc", "c", "already exists"),
        ("04_measurement", "mpmc", "py", "the name 'mpmc' is taken"),
    ],
)
def test_new_exercise_refuses_bad_calls(tree: Path, chapter: str, name: str, lang: str, words: str) -> None:
    before = sorted(p for p in tree.rglob("*"))
    with pytest.raises(ScaffoldError, match=words):
        new_exercise(tree, chapter, name, lang)
    assert sorted(p for p in tree.rglob("*")) == before


def test_check_ids_are_declared_once(tree: Path) -> None:
    new_exercise(tree, "07_new", "doubler", "py")
    spec = tree / "solutions/07_new/doubler/exercise.toml"
    spec.write_text(spec.read_text().replace('id = "twice"', 'id = "thrice"'))
    with pytest.raises(SpecError, match="checks.py defines no check 'thrice'; checks.py defines 'twice', which"):
        discover(tree)
    spec.write_text(spec.read_text().replace('id = "thrice"', 'id = "twice"') + '\n[timing]\ntext = "{x}"\n')
    with pytest.raises(SpecError, match="checks.py defines no check 'timing'"):
        discover(tree)


def test_a_spec_without_title_is_refused_by_the_tables(tree: Path) -> None:
    new_exercise(tree, "07_new", "doubler", "py")
    spec = tree / "solutions/07_new/doubler/exercise.toml"
    spec.write_text("\n".join(line for line in spec.read_text().splitlines() if not line.startswith("title")))
    with pytest.raises(indexes.TableError, match="doubler/exercise.toml: the index tables need title"):
        indexes.check(tree)


def test_the_command_line_reports_a_bad_call_on_one_line() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "tools", "new-exercise", "03_spsc", "mpmc", "--lang", "c"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "already exists" in res.stderr, res.stderr
