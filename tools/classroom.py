"""For instructors: a student release of the course, and a class report
from graded submissions.

``python -m tools release DIR`` writes the course as committed (never the
working copy) without ``solutions/``, ``tools/``, CI and the grader's broken
implementations (``tests/broken/``) into DIR, with the
README's authors-only parts removed; it refuses while ``exercises/`` is
out of date with ``solutions/`` or holds a solution marker, or while a
notebook holds an error or a machine path.
``python -m tools grade-class SUBMISSIONS --report DIR`` grades each
student's files (one folder per student) in a fresh exercise tree generated
from ``solutions/``, never trusting what else the folder holds (notebooks,
checks, headers), and writes one JUnit XML report per student into DIR.
``python -m tools class-report REPORT.xml ...`` turns one JUnit XML report
per student (from grade-class, or ``pytest --nbval exercises/
--junitxml=reports/NAME.xml``) into a table of students x exercises.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape, quoteattr

from lowlat.grading import Report
from tools import authoring, notebooks

ROOT = Path(__file__).resolve().parent.parent
# Left out of a student release: the answers, and what only authors run.
EXCLUDED_TOP = {"solutions", "tools", ".ci", ".git", ".pre-commit-config.yaml", "CONTRIBUTING.md"}
# ... and these folders: the grader's broken implementations are answers but for one defect.
EXCLUDED_DIRS = ("tests/broken",)


def excluded(rel: Path) -> bool:
    """``rel`` (a path in the repository) is left out of a student release."""
    return rel.parts[0] in EXCLUDED_TOP or any(rel.as_posix().startswith(d + "/") for d in EXCLUDED_DIRS)


# The README's parts for authors and instructors are fenced by these lines;
# the student release's README is the same file without them.
AUTHOR_BEGIN, AUTHOR_END = "<!-- authors-only -->", "<!-- /authors-only -->"
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN STUB", "END STUB")


def _committed_tree(root: Path, ref: str, into: Path) -> None:
    """Extracts commit ``ref`` of the repository at ``root`` into ``into``."""
    try:
        res = subprocess.run(["git", "archive", "--format=tar", ref], cwd=root, capture_output=True, timeout=300)
    except OSError as exc:
        raise ValueError(f"git is needed to build a release from a commit ({exc})") from exc
    if res.returncode != 0:
        raise ValueError(f"cannot read commit {ref!r} of {root}: {res.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tar:
        tar.extractall(into, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(into)


def release_problems(tree: Path) -> list[str]:
    """Why the tree at ``tree`` must not be handed out (empty when fine)."""
    found = [f"{p} (run `python -m tools exercises` and commit)" for p in authoring.check(tree)]
    for p in sorted((tree / "exercises").rglob("*")):
        if p.is_file() and p.suffix in authoring.SOURCE_SUFFIXES:
            text = p.read_text(errors="replace")
            found += [f"{p.relative_to(tree)} contains a solution marker ({m})" for m in MARKERS if m in text]
    for nb in sorted(list((tree / "chapters").rglob("*.ipynb")) + list((tree / "exercises").rglob("*.ipynb"))):
        found += [f"{nb.relative_to(tree)}: {p}" for p in notebooks.problems(nb) if "not normalised" not in p]
    try:
        student_readme((tree / "README.md").read_text())
    except ValueError as exc:
        found.append(f"README.md: {exc}")
    return found


def student_readme(text: str) -> str:
    """The README without its authors-only parts (see AUTHOR_BEGIN)."""
    out, skipping = [], False
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        mark = line.strip()
        if mark == AUTHOR_BEGIN:
            if skipping:
                raise ValueError(f"line {n}: {AUTHOR_BEGIN} inside another authors-only part")
            skipping = True
        elif mark == AUTHOR_END:
            if not skipping:
                raise ValueError(f"line {n}: {AUTHOR_END} without {AUTHOR_BEGIN}")
            skipping = False
        elif not skipping:
            out.append(line)
    if skipping:
        raise ValueError(f"{AUTHOR_BEGIN} is never closed")
    return "".join(out)


def release(dest: str | Path, root: Path = ROOT, ref: str = "HEAD") -> list[Path]:
    """Writes a student release of commit ``ref`` into ``dest`` (which must
    not exist yet); returns the files written.  Raises ValueError with every
    reason when the commit must not be released."""
    out = Path(dest)
    if out.exists():
        raise FileExistsError(f"{out} exists; give a new folder for the release")
    if not out.parent.is_dir():
        raise ValueError(f"cannot create the release folder {out}: {out.parent} is not a folder (create it first)")
    try:
        out.mkdir()  # before the slow part: a folder that cannot be made is known at once
    except OSError as exc:
        raise ValueError(f"cannot create the release folder {out} ({exc.strerror or exc})") from None
    with tempfile.TemporaryDirectory(prefix="lowlat-release-") as tmp:
        tree = Path(tmp)
        try:
            _committed_tree(root, ref, tree)
            problems = release_problems(tree)
        except BaseException:
            out.rmdir()
            raise
        if problems:
            out.rmdir()
            raise ValueError(f"not releasing {ref}:\n  " + "\n  ".join(problems))
        written = []
        for src in sorted(p for p in tree.rglob("*") if p.is_file()):
            rel = src.relative_to(tree)
            if excluded(rel):
                continue
            dst = out / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            written.append(dst)
        (out / "README.md").write_text(student_readme((tree / "README.md").read_text()))
    return written


@dataclass
class ClassReport:
    exercises: list[str] = field(default_factory=list)
    students: dict[str, dict[str, bool]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # e.g. a report without any exercise case

    def table(self) -> str:
        w = max([len("student")] + [len(s) for s in self.students])
        head = f"{'student':<{w}}  " + "  ".join(f"{e:>{max(len(e), 4)}}" for e in self.exercises) + "  passed"
        lines = [head, "-" * len(head)]
        for student, res in sorted(self.students.items()):
            cells = "  ".join(
                f"{('PASS' if res.get(e) else ('FAIL' if e in res else '-')):>{max(len(e), 4)}}" for e in self.exercises
            )
            lines.append(f"{student:<{w}}  {cells}  {sum(res.values())}/{len(self.exercises)}")
        return "\n".join(lines)


def _exercise_of(testcase: ET.Element) -> str | None:
    """'exercises/03_spsc/mpmc/mpmc.ipynb' -> '03_spsc/mpmc': the exercise is
    its folder (nbval's classname is the notebook's path with dots for
    slashes; the notebook's own name is dropped)."""
    cls = testcase.get("classname", "") or testcase.get("file", "")
    cls = cls.replace("/", ".")
    if not cls.endswith(".ipynb"):
        return None
    parts = cls[: -len(".ipynb")].split(".")[:-1]
    for top in ("exercises", "solutions"):  # a solved copy maps to the same exercise
        if top in parts:
            return "/".join(parts[parts.index(top) + 1 :]) or None
    return None  # a chapter, not an exercise


def class_report(paths: list[str | Path]) -> ClassReport:
    """One JUnit XML per student (the file's stem is the student's name).
    An exercise passes when every cell of its notebook passed.  Raises
    ValueError for a missing, unreadable or malformed report, for two reports
    of one name, and when no report holds an exercise case; a report without
    any is a warning (its student passed nothing)."""
    rep = ClassReport()
    seen: set[str] = set()
    names: dict[str, Path] = {}
    for p in paths:
        path = Path(p)
        if path.stem in names:
            raise ValueError(
                f"two reports are named {path.stem!r} ({names[path.stem]} and {path}): a report's file name is its "
                "student's name; rename one"
            )
        names[path.stem] = path
        if not path.is_file():
            raise ValueError(f"{path}: no such report" + (" (it is a folder)" if path.is_dir() else ""))
        try:
            tree = ET.parse(path)
        except ET.ParseError as exc:
            why = "the file is empty" if path.stat().st_size == 0 else str(exc)
            raise ValueError(f"{path}: not a JUnit XML report ({why})") from exc
        except OSError as exc:
            raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
        res: dict[str, bool] = {}
        for tc in tree.iter("testcase"):
            ex = _exercise_of(tc)
            if ex is None:
                continue
            ok = not any(child.tag in ("failure", "error") for child in tc)
            res[ex] = res.get(ex, True) and ok
            seen.add(ex)
        if not res:
            rep.warnings.append(
                f"{path}: no exercise case in this report (made by `pytest --nbval exercises/ --junitxml={path}`?); "
                f"{path.stem} is counted as passing nothing"
            )
        rep.students[path.stem] = res
    if not seen:
        raise ValueError(
            f"none of the {len(names)} report(s) holds an exercise case: make each with "
            "`pytest --nbval exercises/ --junitxml=reports/NAME.xml`"
        )
    rep.exercises = sorted(seen)
    return rep


# ---- grading a class from the students' files ------------------------------------------------


def _fresh_tree(root: Path, into: Path) -> None:
    """exercises/ as the generator makes it from ``root``'s solutions/ (the
    stubs, the headers, the checks), written into ``into``."""
    for rel, data in authoring.expected_exercises(root / "solutions").items():
        dst = into / "exercises" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)


def submitted_file(student: Path, rel: Path, filename: str) -> Path | None:
    """The student's file for the exercise at ``exercises/<rel>/``: looked for
    as ``exercises/<rel>/<file>`` (a copy of the release), ``<rel>/<file>``,
    then ``<file>`` at the top of the student's folder; None if absent."""
    for candidate in (student / "exercises" / rel / filename, student / rel / filename, student / filename):
        if candidate.is_file():
            return candidate
    return None


def _junit(student: str, results: dict[str, tuple[str, Report]]) -> str:
    """One JUnit XML report: a testcase per graded exercise, named like
    nbval's (the exercise's notebook path), failing with the grader's lines."""
    cases = []
    for rel, (notebook, report) in sorted(results.items()):
        classname = "exercises." + rel.replace("/", ".") + "." + notebook
        body = "" if report.ok else f"<failure message={quoteattr(report.verdict())}>{escape(str(report))}</failure>"
        cases.append(f'  <testcase classname={quoteattr(classname)} name="grade">{body}</testcase>')
    failures = sum(not r.ok for _, r in results.values())
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n'
        f'<testsuite name={quoteattr(student)} tests="{len(results)}" failures="{failures}">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n</testsuites>\n"
    )


def grade_class(
    submissions: str | Path,
    report_dir: str | Path,
    *,
    root: Path = ROOT,
    only: list[str] | None = None,
    log: TextIO | None = None,
) -> list[Path]:
    """Grades every student folder of ``submissions``: for each, a fresh
    exercise tree is generated from ``root``'s solutions/ into a temporary
    folder, only the learner files found in the student's folder (see
    :func:`submitted_file`) are copied into it, and each is graded by
    :func:`lowlat.grading.grade` against that tree's checks.  Writes
    ``report_dir/<student>.xml`` per student and returns their paths.
    ``only``: exercise names to grade (default all)."""
    from lowlat.grading import discover, grade

    subs, out = Path(submissions), Path(report_dir)
    if not subs.is_dir():
        raise ValueError(f"{subs}: not a folder of student folders")
    if not (root / "solutions").is_dir():
        raise ValueError(f"{root} has no solutions/: grade-class generates each student's tree from it")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for student in sorted(p for p in subs.iterdir() if p.is_dir() and not p.name.startswith(".")):
        results: dict[str, tuple[str, Report]] = {}
        with tempfile.TemporaryDirectory(prefix=f"lowlat-class-{student.name}-") as tmp:
            tree = Path(tmp)
            _fresh_tree(root, tree)
            for name, ex in discover(tree).items():
                if only and name not in only:
                    continue
                rel = ex.folder.relative_to(tree / "exercises")
                mine = submitted_file(student, rel, ex.filename)
                if mine is None:
                    continue  # not submitted: "-" in the class report
                target = ex.folder / ex.filename
                shutil.copyfile(mine, target)
                report = grade(name, target, root=tree)
                notebook = next((p.name for p in sorted(ex.folder.glob("*.ipynb"))), f"{name}.ipynb")
                results[rel.as_posix()] = (notebook, report)
                if log is not None:
                    print(f"{student.name}: {report.verdict()}", file=log, flush=True)
        path = out / f"{student.name}.xml"
        path.write_text(_junit(student.name, results))
        written.append(path)
    return written
