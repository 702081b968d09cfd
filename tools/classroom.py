"""For instructors: grading a class, and a class report from graded
submissions (the student release is :mod:`tools.release`).

``python -m tools grade-class SUBMISSIONS --report DIR`` grades each
student's files (one folder per student) in a fresh exercise tree generated
from ``solutions/``, never trusting what else the folder holds (notebooks,
checks, headers, links: see :mod:`tools.submissions`), and writes one JUnit
XML report per student into DIR.  A file that cannot be graded fails that
student's exercise with the reason in their report; every other student is
still graded.
``python -m tools class-report REPORT.xml ...`` turns one JUnit XML report
per student (from grade-class, or ``pytest --nbval exercises/
--junitxml=reports/NAME.xml``) into a table of students x exercises.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape, quoteattr

from lowlat.core import toolchain
from lowlat.grading import CheckResult, Exercise, Report
from tools import authoring
from tools.release import AUTHOR_BEGIN, AUTHOR_END, excluded, release, student_readme
from tools.submissions import (
    Refused,
    decode_source,
    include_problem,
    name_problem,
    own_compiler_lines,
    read_submission,
    shown,
)

ROOT = Path(__file__).resolve().parent.parent
# Folders of SUBMISSIONS that are never a student.
NOT_STUDENTS = {"solutions", "exercises", "__pycache__"}


@dataclass
class ClassReport:
    """Students x exercises: True passed, False failed, None no result (every
    case skipped); an exercise missing from a student's row was not handed in."""

    exercises: list[str] = field(default_factory=list)
    students: dict[str, dict[str, bool | None]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # e.g. a report without any exercise case

    def table(self) -> str:
        """The table as text: PASS, FAIL, SKIP (no result: every case skipped)
        or - (not handed in); names with unprintable characters escaped."""
        names = {student: shown(student) for student in self.students}
        w = max([len("student")] + [len(n) for n in names.values()])
        head = f"{'student':<{w}}  " + "  ".join(f"{e:>{max(len(e), 4)}}" for e in self.exercises) + "  passed"
        lines = [head, "-" * len(head)]
        for student, res in sorted(self.students.items()):
            cells = "  ".join(f"{_cell(res, e):>{max(len(e), 4)}}" for e in self.exercises)
            passed = sum(v is True for v in res.values())
            lines.append(f"{names[student]:<{w}}  {cells}  {passed}/{len(self.exercises)}")
        return "\n".join(lines)


def _cell(res: dict[str, bool | None], exercise: str) -> str:
    if exercise not in res:
        return "-"
    return {True: "PASS", False: "FAIL", None: "SKIP"}[res[exercise]]


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


def _results(tree: ET.ElementTree[ET.Element]) -> dict[str, bool | None]:
    """Exercise -> True (every case that ran passed, at least one ran),
    False (a case failed or erred) or None (every case skipped)."""
    failed: dict[str, bool] = {}
    ran: dict[str, bool] = {}
    for tc in tree.iter("testcase"):
        ex = _exercise_of(tc)
        if ex is None:
            continue
        tags = {child.tag for child in tc}
        failed[ex] = failed.get(ex, False) or bool(tags & {"failure", "error"})
        ran[ex] = ran.get(ex, False) or "skipped" not in tags
    return {ex: (False if failed[ex] else (True if ran[ex] else None)) for ex in failed}


def class_report(paths: list[str | Path]) -> ClassReport:
    """One JUnit XML per student (the file's stem is the student's name).
    An exercise passes when every case of its notebook that ran passed and at
    least one ran; one whose cases were all skipped has no result (SKIP).
    Raises ValueError for a missing, unreadable or malformed report, for two
    reports of one name, and when no report holds an exercise case; a report
    without any is a warning (its student passed nothing)."""
    rep = ClassReport()
    seen: set[str] = set()
    names: dict[str, Path] = {}
    for p in paths:
        path = Path(p)
        if path.stem in names:
            raise ValueError(
                f"two reports are named {shown(path.stem)!r} ({names[path.stem]} and {path}): a report's file name "
                "is its student's name; rename one"
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
        res = _results(tree)
        seen |= set(res)
        if not res:
            rep.warnings.append(
                f"{path}: no exercise case in this report (made by `pytest --nbval exercises/ --junitxml={path}`?); "
                f"{shown(path.stem)} is counted as passing nothing"
            )
        rep.students[path.stem] = res
    if not seen:
        raise ValueError(
            f"none of the {len(names)} report(s) holds an exercise case: make each with "
            "`pytest --nbval exercises/ --junitxml=reports/NAME.xml` or `python -m tools grade-class`"
        )
    rep.exercises = sorted(seen)
    return rep


# ---- grading a class from the students' files ------------------------------------------------

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold written as escapes."""
    return _NOT_XML.sub(lambda m: shown(m.group()), text)


def _junit(student: str, results: dict[str, tuple[str, Report]]) -> str:
    """One JUnit XML report: a testcase per graded exercise, named like
    nbval's (the exercise's notebook path), failing with the grader's lines."""
    cases = []
    for rel, (notebook, report) in sorted(results.items()):
        classname = "exercises." + rel.replace("/", ".") + "." + notebook
        verdict, text = _xml_text(report.verdict()), _xml_text(str(report))
        body = "" if report.ok else f"<failure message={quoteattr(verdict)}>{escape(text)}</failure>"
        cases.append(f'  <testcase classname={quoteattr(classname)} name="grade">{body}</testcase>')
    failures = sum(not r.ok for _, r in results.values())
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n'
        f'<testsuite name={quoteattr(_xml_text(student))} tests="{len(results)}" failures="{failures}">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n</testsuites>\n"
    )


@dataclass
class ClassGrading:
    """What grade-class did: the reports written, and the folders of
    SUBMISSIONS that got none (each with why)."""

    reports: list[Path] = field(default_factory=list)
    not_graded: list[str] = field(default_factory=list)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _refused(ex: Exercise, reason: str) -> Report:
    report = Report(ex.name, refused=reason)
    report.results = [CheckResult(c, False, "not run: the grader refused the file (see above)") for c in ex.checks]
    return report


def _core_headers() -> set[str]:
    return {p.name for d in toolchain.include_dirs() for p in d.glob("*.h")}


def _grade_one(student: Path, ex: Exercise, tree: Path) -> Report | None:
    """The report of one student's file for ``ex`` (None: not handed in)."""
    from lowlat.grading import grade

    rel = ex.folder.relative_to(tree / "exercises")
    try:
        found = read_submission(student, rel, ex.filename)
        if found is None:
            return None
        where, data = found
        text = decode_source(where, data)
        if ex.kind == "c":
            why = include_problem(text, {p.name for p in ex.folder.glob("*.h")} | _core_headers())
            if why:
                raise Refused(f"{where}: {why}")
    except Refused as exc:
        return _refused(ex, str(exc))
    target = ex.folder / ex.filename
    target.unlink(missing_ok=True)
    target.write_bytes(data)  # the bytes read, never a link
    try:
        report = grade(ex.name, target, root=tree)
    except Exception as exc:  # one file the grader chokes on fails this exercise alone
        msg = " ".join(str(exc).split())[:300]
        return _refused(ex, f"the grader could not grade {where} ({type(exc).__name__}: {msg})")
    if report.compiler_output:
        report.compiler_output = own_compiler_lines(report.compiler_output, ex.filename)
    return report


def _students(subs: Path, out: Path, log: TextIO | None) -> tuple[list[Path], list[str]]:
    """The student folders of ``subs`` and the entries refused as students."""
    students, refused = [], []
    report_dir = out.resolve()
    for entry in sorted(subs.iterdir()):
        name = entry.name
        if name.startswith(".") or name in NOT_STUDENTS or entry.resolve() == report_dir:
            if log is not None and not name.startswith(".") and entry.is_dir():
                print(f"skipped {shown(name)}/: not a student's folder", file=log, flush=True)
            continue
        if not entry.is_dir() and not entry.is_symlink():
            continue  # a file beside the students' folders (notes, an archive)
        why = name_problem(name)
        if why:
            refused.append(f"'{shown(name)}': not graded: {why}; rename it")
            continue
        students.append(entry)
    return students, refused


def grade_class(
    submissions: str | Path,
    report_dir: str | Path,
    *,
    root: Path = ROOT,
    only: list[str] | None = None,
    log: TextIO | None = None,
) -> ClassGrading:
    """Grades every student folder of ``submissions``: for each, a fresh
    exercise tree generated from ``root``'s solutions/, the student's file of
    each exercise read safely (:func:`tools.submissions.read_submission`) and
    its bytes written into that tree, then graded by
    :func:`lowlat.grading.grade` against the tree's checks.  Writes
    ``report_dir/<student>.xml`` per student.  ``only``: exercise names to
    grade (default all).  Hidden folders, ``solutions``, ``exercises`` and the
    report folder are not students; a folder whose name cannot be a row is
    refused (in ``not_graded``).  Raises ValueError before grading anything
    for a bad call."""
    from lowlat.grading import discover

    if not isinstance(report_dir, (str, Path)) or not str(report_dir).strip():
        raise ValueError("--report: give the folder to write the reports to (it is empty)")
    subs, out = Path(submissions), Path(report_dir)
    if not subs.is_dir():
        raise ValueError(f"{subs}: not a folder of student folders")
    if (subs / "solutions").is_dir() and (subs / "exercises").is_dir():
        raise ValueError(f"{subs}: a course checkout, not a folder of student folders (one folder per student)")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--report {out}: exists and is not a folder")
    if not (root / "solutions").is_dir():
        raise ValueError(f"{root} has no solutions/: grade-class generates each student's tree from it")
    result = ClassGrading()
    with tempfile.TemporaryDirectory(prefix="lowlat-class-") as tmp:
        template = Path(tmp) / "template"
        _fresh_tree(root, template)
        known = discover(template)
        unknown = sorted(set(only or ()) - set(known))
        if unknown:
            raise ValueError(f"--exercise {', '.join(unknown)}: no such exercise; known: {', '.join(known)}")
        students, result.not_graded = _students(subs, out, log)
        out.mkdir(parents=True, exist_ok=True)
        for student in students:
            path = _grade_student(student, template, Path(tmp) / "tree", out, only, log)
            if isinstance(path, Path):
                result.reports.append(path)
            else:
                result.not_graded.append(path)
    return result


def _grade_student(
    student: Path, template: Path, tree: Path, out: Path, only: list[str] | None, log: TextIO | None
) -> Path | str:
    """Grades one student in a fresh copy of ``template``; returns the report's
    path, or why none could be written."""
    from lowlat.grading import discover

    name = student.name
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(template, tree, symlinks=True)
    results: dict[str, tuple[str, Report]] = {}
    try:
        for ex_name, ex in discover(tree).items():
            if only and ex_name not in only:
                continue
            report = _grade_one(student, ex, tree)
            if report is None:
                continue  # not handed in: "-" in the class report
            notebook = next((p.name for p in sorted(ex.folder.glob("*.ipynb"))), f"{ex_name}.ipynb")
            results[ex.folder.relative_to(tree / "exercises").as_posix()] = (notebook, report)
            if log is not None:
                why = f" (refused: {report.refused})" if report.refused else ""
                print(f"{name}: {report.verdict()}{why}", file=log, flush=True)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    path = out / f"{name}.xml"
    try:
        _write_atomically(path, _junit(name, results))
    except OSError as exc:
        return f"{shown(name)}: no report written: {path}: {exc.strerror or exc}"
    return path


def _fresh_tree(root: Path, into: Path) -> None:
    """exercises/ as the generator makes it from ``root``'s solutions/ (the
    stubs, the headers, the checks), written into ``into``."""
    for rel, data in authoring.expected_exercises(root / "solutions").items():
        dst = into / "exercises" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)


__all__ = [
    "AUTHOR_BEGIN",
    "AUTHOR_END",
    "ClassGrading",
    "ClassReport",
    "class_report",
    "excluded",
    "grade_class",
    "release",
    "student_readme",
]
