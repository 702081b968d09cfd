"""Compiling, running and judging learner code.  Everything the learner
wrote runs in a child process, so a crash, an abort or a hang becomes a FAIL
line and the caller (a notebook kernel) lives on.  The exercises themselves
(what is checked, and how) are folders, found by :mod:`lowlat.grading.spec`."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lowlat import toolchain
from lowlat.grading.spec import Check, Exercise, discover

HARNESS_DIR = Path(__file__).resolve().parent / "harness"  # grade.h, shared by every C exercise's checks
TSAN_MARK = "WARNING: ThreadSanitizer:"
ASAN_MARKS = ("ERROR: AddressSanitizer:", "runtime error:", "ERROR: LeakSanitizer:")


@dataclass
class CheckResult:
    check: Check
    passed: bool
    reason: str = ""

    def line(self) -> str:
        return f"PASS: {self.check.text}" if self.passed else f"FAIL: {self.check.text}: {self.reason}"


@dataclass
class Report:
    exercise: str
    results: list[CheckResult] = field(default_factory=list)
    compiler_output: str = ""
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def ok(self) -> bool:
        return bool(self.results) and self.passed == len(self.results)

    def verdict(self) -> str:
        return f"{self.exercise}: {self.passed}/{len(self.results)} checks passed"

    def lines(self) -> list[str]:
        out = []
        if self.compiler_output:
            out += ["The compiler says:", *("  " + ln for ln in self.compiler_output.rstrip().splitlines()), ""]
        return out + [r.line() for r in self.results] + [self.verdict()]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def print(self) -> None:
        print(str(self))

    def require(self) -> Report:
        """Prints the lines, then raises :class:`GradeFailed` unless every
        check passed.  Grading notebooks end with this call: the grade is
        decided by whether the cell raises, never by the output a notebook
        has stored (a saved notebook cannot change it)."""
        self.print()
        if not self.ok:
            first = next((r for r in self.results if not r.passed), None)
            why = f"; first failing check: {first.line()}" if first else ""
            raise GradeFailed(f"{self.verdict()}{why}")
        return self


class GradeFailed(AssertionError):
    """A graded file did not pass every check (the message is the verdict)."""

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a coloured traceback through the
        # grader's own frames: in JupyterLab and in nbval's failure text the
        # learner reads the verdict, plainly, and nothing else.
        return [f"GradeFailed: {self}"]


# ---- building ---------------------------------------------------------------------


class CompileError(Exception):
    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def build_c(ex: Exercise, learner: Path, out: Path, sanitizer: str | None = None) -> Path:
    """Compiles the learner's file with the exercise's checks (and the core
    files they need) through :func:`lowlat.toolchain.compile_c`.  The
    compiler runs in the learner file's folder and is given its bare name, so
    its messages read ``mpmc.c:42:5: error: ...``."""
    cc = toolchain.c_compiler()
    if cc is None:
        raise CompileError("no C compiler found (cc, gcc or clang): install one to grade C exercises")
    sources: list[str | Path] = [learner.name, ex.checks_path, *(toolchain.CSRC / s for s in ex.core_sources)]
    res = toolchain.compile_c(
        sources,
        out,
        sanitizer=sanitizer,
        extra=ex.cflags,
        includes=[ex.folder, HARNESS_DIR],
        cwd=learner.parent,
        cc=cc,
        timeout_s=120,
    )
    if res.returncode != 0:
        raise CompileError(
            _compiler_lines(res.stderr + res.stdout, learner.name, [ex.folder, HARNESS_DIR, toolchain.CSRC])
        )
    return out


def _compiler_lines(text: str, filename: str, strip: list[Path]) -> str:
    """The compiler's messages about the learner's file (all of them if none
    names it), without the checks' and the core's paths."""
    lines = text.strip().splitlines()
    mine = [ln for ln in lines if ln.startswith(filename) or ln.startswith(" ") or ln.startswith("In function")]
    keep = mine if any(ln.startswith(filename) for ln in mine) else lines
    prefixes = sorted({str(p) + os.sep for p in strip}, key=len, reverse=True)
    out = []
    for ln in keep[:40]:
        for prefix in prefixes:
            ln = ln.replace(prefix, "")
        out.append(ln)
    return "\n".join(out)


# ---- running ------------------------------------------------------------------------


@dataclass
class ChildOutcome:
    passed: bool
    reason: str
    info: dict[str, float]


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def run_child(cmd: list[str], timeout_s: float, sanitizer: str | None = None, env: dict | None = None) -> ChildOutcome:
    """Runs one check; turns every way a child can end into PASS/FAIL."""
    child_env = toolchain.sanitizer_env(sanitizer, dict(os.environ, **(env or {})))
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env, start_new_session=True
        )
    except OSError as exc:
        return ChildOutcome(False, f"could not start: {exc}", {})
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return ChildOutcome(
            False,
            f"timed out after {timeout_s:g} s (a hang: a lost item, a livelock, or a "
            "loop waiting for a state that never comes)",
            {},
        )
    info = {}
    for m in re.finditer(r"^INFO (\w+)=(\S+)$", out, re.M):
        with contextlib.suppress(ValueError):
            info[m.group(1)] = float(m.group(2))
    if TSAN_MARK in err:
        return ChildOutcome(False, "ThreadSanitizer reports a data race:\n" + _report_head(err, TSAN_MARK), info)
    for mark in ASAN_MARKS:
        if mark in err:
            return ChildOutcome(False, "the sanitizer reports a memory error:\n" + _report_head(err, mark), info)
    crash = re.search(r"^GRADE_CRASH_IN (.+)$", err, re.M)
    if proc.returncode < 0 or crash:
        where = crash.group(1) if crash else "an unknown place"
        sig = _signal_name(proc.returncode) if proc.returncode < 0 else "a signal"
        return ChildOutcome(False, f"crashed with {sig} in {where}", info)
    result = re.search(r"^RESULT (PASS|FAIL)(?: (.*))?$", out, re.M)
    if result is None:
        tail = (err.strip().splitlines() or out.strip().splitlines() or ["(no output)"])[-1]
        return ChildOutcome(False, f"ended (exit status {proc.returncode}) without a result: {tail}", info)
    return ChildOutcome(result.group(1) == "PASS", (result.group(2) or "").strip(), info)


def _report_head(err: str, mark: str, lines: int = 8) -> str:
    start = err.index(mark)
    body = [ln for ln in err[start:].splitlines() if ln.strip()][:lines]
    return "\n".join("    " + ln.strip() for ln in body)


# ---- grading -------------------------------------------------------------------------


def _runner(ex: Exercise, path: Path, workdir: Path, report: Report) -> Callable[[Check], ChildOutcome] | None:
    """Builds whatever the exercise needs and returns a function running one
    check, or None when the build failed (reported in ``report``)."""
    if ex.kind == "python":

        def run_py(check: Check) -> ChildOutcome:
            cmd = [sys.executable, "-m", "lowlat.grading.pyharness", str(ex.checks_path), str(path), check.id]
            return run_child(cmd, check.timeout_s)

        return run_py

    builds: dict[str | None, Path] = {}

    def binary(sanitizer: str | None) -> Path:
        if sanitizer not in builds:
            builds[sanitizer] = build_c(ex, path, workdir / f"checks-{sanitizer or 'plain'}", sanitizer)
        return builds[sanitizer]

    try:
        binary(None)
    except CompileError as exc:
        report.compiler_output = exc.output
        return None

    def run_c(check: Check) -> ChildOutcome:
        try:
            exe = binary(check.sanitizer)
        except CompileError as exc:
            return ChildOutcome(False, f"the {check.sanitizer}-sanitized build failed:\n{exc.output}", {})
        return run_child([str(exe), check.id, check.arg], check.timeout_s, check.sanitizer)

    return run_c


def exercise(name: str, root: str | os.PathLike | None = None) -> Exercise:
    """The exercise called ``name`` (a ValueError listing the known ones if
    there is none)."""
    known = discover(Path(root) if root is not None else None)
    if name not in known:
        raise ValueError(f"unknown exercise {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def grade(name: str, path: str | os.PathLike, *, timing: bool = False, root: str | os.PathLike | None = None) -> Report:
    """Grades ``path`` as exercise ``name`` (found under ``root``, default the
    course repository).  With ``timing=True`` the timing run follows and its
    figures are in ``report.timing`` (not graded)."""
    ex = exercise(name, root)
    p = Path(path).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"{path}: no such file (the exercise file is {ex.filename})")
    report = Report(ex.name)
    with tempfile.TemporaryDirectory(prefix=f"lowlat-grade-{name}-") as tmp:
        run = _runner(ex, p, Path(tmp), report)
        for check in ex.checks:
            if run is None:
                report.results.append(CheckResult(check, False, "not run: the file does not compile"))
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
        run = _runner(ex, p, Path(tmp), r)
        if run is None:
            return f"{name}: no timing: the file does not compile"
        outcome = run(ex.timing)
    if not outcome.info:
        return f"{name}: no timing: {outcome.reason or 'the timing run reported nothing'}"
    return ex.timing_line(outcome.info) + " (reported, not graded)"
