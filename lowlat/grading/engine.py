"""Compiling, running and judging learner code.  Everything the learner
wrote runs in a child process under limits (:mod:`lowlat.grading.sandbox`),
so a crash, an abort, a hang or a runaway becomes a FAIL line and the caller
(a notebook kernel) lives on.  The verdict never travels on the learner's
output:

- C: the learner's file is compiled to an object first and inspected
  (:mod:`lowlat.grading.objcheck`: no constructors, no calls outside an
  allowlist, no inline assembly); only then is it linked with the checks,
  which report on a pipe the grader created, each line carrying a nonce, and
  the exit status must agree with the report;
- Python: the checks and the references run here, in the grader's process;
  the learner's module is imported in a child and called over a pipe
  (:mod:`lowlat.grading.pyharness`).

The exercises themselves (what is checked, and how) are folders, found by
:mod:`lowlat.grading.spec`."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

from lowlat.grading import checkids, objcheck, pyharness
from lowlat.grading.cbuild import HARNESS_DIR, CBuild, CompileError, build_c
from lowlat.grading.child import ChildOutcome, run_child
from lowlat.grading.report import CheckResult, GradeFailed, Report
from lowlat.grading.sandbox import DEFAULT_LIMITS, Limits
from lowlat.grading.spec import Check, Exercise, discover

# ---- grading -------------------------------------------------------------------------

Runner = Callable[[Check], ChildOutcome]
#: A C check with this id is the memory-ordering lint (lowlat.grading.ordering), run here.
ORDERING_CHECK = "ordering"
assert ORDERING_CHECK in checkids.ENGINE_CHECKS["c"]  # discovery lets exercise.toml list it
FENCE_NOTE = (
    "not run: the file orders with atomic_thread_fence, which GCC's ThreadSanitizer does not model and would "
    "report as a race; this file is judged by the ordering check and the plain stress runs instead"
)


def _c_runner(ex: Exercise, path: Path, workdir: Path, report: Report, limits: Limits) -> Runner | None:
    """Builds every binary the exercise's checks need (before any learner
    code runs) and returns a function running one check, or None when the
    build failed or the file was refused (said in ``report``)."""
    try:
        build = CBuild(ex, path, workdir)
        build.build(None)
    except CompileError as exc:
        report.compiler_output = exc.output
        return None
    except objcheck.Refused as exc:
        report.refused = str(exc)
        return None
    failed: dict[str | None, str] = {}
    for sanitizer in sorted({c.sanitizer for c in ex.checks if c.sanitizer}):
        try:
            build.build(sanitizer)
        except CompileError as exc:
            failed[sanitizer] = f"the {sanitizer}-sanitized build failed:\n{exc.output}"
        except objcheck.Refused as exc:
            report.refused = str(exc)
            return None

    lint: tuple[list[str], bool] | None = None

    def run_c(check: Check) -> ChildOutcome:
        nonlocal lint
        if check.id == ORDERING_CHECK or check.sanitizer == "thread":
            lint = lint or build.ordering_problems()
        if check.id == ORDERING_CHECK:  # judged here, on the source: no child runs
            assert lint is not None
            problems = lint[0]
            return ChildOutcome(not problems, "; ".join(problems[:2]), {})
        if check.sanitizer == "thread" and lint is not None and lint[1]:
            return ChildOutcome(True, FENCE_NOTE, {})
        if check.sanitizer in failed:
            return ChildOutcome(False, failed[check.sanitizer], {})
        exe = build.binaries[check.sanitizer]
        return run_child([str(exe), check.id, check.arg], check.timeout_s, check.sanitizer, limits=limits)

    return run_c


def _runner(ex: Exercise, path: Path, workdir: Path, report: Report, limits: Limits) -> Runner | None:
    if ex.kind == "python":
        return pyharness.runner(ex, path, workdir, report, limits)
    return _c_runner(ex, path, workdir, report, limits)


def exercise(name: str, root: str | os.PathLike | None = None) -> Exercise:
    """The exercise called ``name`` (a ValueError listing the known ones if
    there is none)."""
    known = discover(Path(root) if root is not None else None)
    if name not in known:
        raise ValueError(f"unknown exercise {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def _not_run(report: Report) -> str:
    if report.refused:
        return f"not run: the grader refuses this file: {report.refused}"
    if report.compiler_output:
        return "not run: the file does not compile"
    return "not run"


def grade(
    name: str,
    path: str | os.PathLike,
    *,
    timing: bool = False,
    root: str | os.PathLike | None = None,
    limits: Limits = DEFAULT_LIMITS,
    only: Collection[str] | None = None,
) -> Report:
    """Grades ``path`` as exercise ``name`` (found under ``root``, default the
    course repository).  A private copy of the file is graded, each check in
    its own child under ``limits``.  With ``timing=True`` the timing run
    follows and its figures are in ``report.timing`` (not graded).

    ``only``: run just the checks with these ids (while working on one
    check; the course's tests of a broken file run the check that must
    catch it).  Only what those checks need is built, and the report is not
    a grade: it names the checks left out and its ``ok`` is False."""
    ex = exercise(name, root)
    p = Path(path).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"{path}: no such file (the exercise file is {ex.filename})")
    left_out: list[str] = []
    if only is not None:
        only = [only] if isinstance(only, str) else list(only)
        ids = list(dict.fromkeys(c.id for c in ex.checks))  # a check id may name runs in two modes
        unknown = sorted(set(only) - set(ids))
        if unknown or not only:
            raise ValueError(
                f"{name} has no check {', '.join(map(repr, unknown)) or 'chosen'}; its checks: {', '.join(ids)}"
            )
        left_out = [i for i in ids if i not in only]
        ex = dataclasses.replace(ex, checks=tuple(c for c in ex.checks if c.id in only))
    report = Report(ex.name, left_out=left_out)
    with tempfile.TemporaryDirectory(prefix=f"lowlat-grade-{name}-") as tmp:
        run = _runner(ex, p, Path(tmp), report, limits)
        for check in ex.checks:
            if run is None:
                report.results.append(CheckResult(check, False, _not_run(report)))
                continue
            outcome = run(check)
            report.results.append(CheckResult(check, outcome.passed, outcome.reason))
        if timing and run is not None and ex.timing is not None:
            report.timing = run(ex.timing).info
    return report


def report_timing(name: str, path: str | os.PathLike, *, root: str | os.PathLike | None = None) -> str:
    """Runs the exercise's timing measurement (not graded) and returns one
    line such as "your queue: 41 M items/s; the mutex reference: 9 M items/s"."""
    ex = exercise(name, root)
    if ex.timing is None or ex.timing_text is None:
        return f"{name}: no timing for this exercise"
    p = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix=f"lowlat-time-{name}-") as tmp:
        r = Report(name)
        run = _runner(ex, p, Path(tmp), r, DEFAULT_LIMITS)
        if run is None:
            return f"{name}: no timing: the file {'was refused' if r.refused else 'does not compile'}"
        outcome = run(ex.timing)
    if not outcome.info:
        return f"{name}: no timing: {outcome.reason or 'the timing run reported nothing'}"
    return ex.timing_line(outcome.info) + " (reported, not graded)"


__all__ = [
    "HARNESS_DIR",
    "CBuild",
    "CheckResult",
    "ChildOutcome",
    "CompileError",
    "GradeFailed",
    "Report",
    "build_c",
    "exercise",
    "grade",
    "report_timing",
    "run_child",
]
