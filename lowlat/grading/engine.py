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

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lowlat.core import toolchain
from lowlat.grading import objcheck, sandbox
from lowlat.grading.sandbox import DEFAULT_LIMITS, Limits
from lowlat.grading.spec import Check, Exercise, discover

HARNESS_DIR = Path(__file__).resolve().parent / "harness"  # grade.h, shared by every C exercise's checks
TSAN_MARK = "WARNING: ThreadSanitizer:"
LSAN_MARK = "ERROR: LeakSanitizer:"
ASAN_MARK = "ERROR: AddressSanitizer:"
UBSAN_MARK = "runtime error:"


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
    refused: str = ""  # why the grader refused to run the file at all
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
        if self.refused:
            out += ["The grader refuses to run this file:", "  " + self.refused, ""]
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


class CBuild:
    """The checks binaries of a C exercise, one per sanitizer mode, built
    from a private copy of the learner's file.

    For each mode: the learner's file is preprocessed (its own lines are
    checked: no inline assembly, no sanitizer switches, the same code in
    every mode) and compiled to an object on its own, the object is
    inspected (:func:`lowlat.grading.objcheck.check_object`), and only then
    linked with the checks (and the core files they need).  The compiler
    runs in the copy's folder and is given its bare name, so its messages
    read ``mpmc.c:42:5: error: ...``; the exercise's folder (its header) is
    on the include path, the learner's own folder is not."""

    def __init__(self, ex: Exercise, learner: Path, workdir: Path) -> None:
        self.ex, self.workdir = ex, workdir
        self.src_dir = workdir / "src"
        self.src_dir.mkdir(parents=True, exist_ok=True)
        self.source = self.src_dir / ex.filename
        shutil.copyfile(learner, self.source)
        cc = toolchain.c_compiler()
        if cc is None:
            raise CompileError("no C compiler found (cc, gcc or clang): install one to grade C exercises")
        self.cc = cc
        functions: set[str] = set()
        variables: set[str] = set()
        for header in sorted(ex.folder.glob("*.h")):
            f, v = objcheck.api_names(header.read_text())
            functions |= f
            variables |= v
        self.api_functions, self.api_variables = functions, variables
        self.binaries: dict[str | None, Path] = {}
        self._plain_lines: str | None = None

    def _strip(self) -> list[Path]:
        return [self.ex.folder, HARNESS_DIR, toolchain.CSRC, self.src_dir]

    def _learner_flags(self, sanitizer: str | None) -> list[str]:
        # The spec's flags that matter to a compile (-D, -I, -f, -W...); its
        # -Wl,... linker flags apply to the link only.
        return [f for f in self.ex.cflags if not f.startswith("-Wl,")]

    def _preprocess(self, sanitizer: str | None) -> str:
        flags = [toolchain.STD, *toolchain.opt_flags(sanitizer), "-pthread"]
        incs = [f"-I{d}" for d in [self.ex.folder, *toolchain.include_dirs()]]
        cmd = [self.cc, "-E", *flags, *incs, *self._learner_flags(sanitizer), self.source.name]
        res = subprocess.run(
            cmd, cwd=self.src_dir, capture_output=True, text=True, timeout=120, env=dict(os.environ, LC_ALL="C")
        )
        if res.returncode != 0:
            raise CompileError(_compiler_lines(res.stderr + res.stdout, self.source.name, self._strip()))
        return objcheck.learner_lines(res.stdout, self.source.name)

    def build(self, sanitizer: str | None) -> Path:
        """The checks binary for ``sanitizer`` (None: plain), built once.
        Raises CompileError or :class:`~lowlat.grading.objcheck.Refused`."""
        if sanitizer in self.binaries:
            return self.binaries[sanitizer]
        name = self.source.name
        mode = sanitizer or "plain"
        lines = self._preprocess(sanitizer)
        objcheck.check_source(lines, name)
        if sanitizer is None:
            self._plain_lines = lines
        else:
            if self._plain_lines is None:
                self.build(None)
            assert self._plain_lines is not None
            objcheck.check_same_code(self._plain_lines, lines, sanitizer, name)
        obj = self.workdir / f"learner-{mode}.o"
        res = toolchain.compile_c(
            [name],
            obj,
            sanitizer=sanitizer,
            extra=[*self._learner_flags(sanitizer), "-c"],
            includes=[self.ex.folder],
            cwd=self.src_dir,
            cc=self.cc,
            timeout_s=120,
        )
        if res.returncode != 0:
            raise CompileError(_compiler_lines(res.stderr + res.stdout, name, self._strip()))
        objcheck.check_object(
            objcheck.read_object(obj),
            name,
            api_functions=self.api_functions,
            api_variables=self.api_variables,
            extra_allowed=self.ex.allow_symbols,
            sanitizer=sanitizer,
        )
        exe = self.workdir / f"checks-{mode}"
        sources: list[str | Path] = [obj, self.ex.checks_path, *(toolchain.CSRC / s for s in self.ex.core_sources)]
        res = toolchain.compile_c(
            sources,
            exe,
            sanitizer=sanitizer,
            extra=self.ex.cflags,
            includes=[self.ex.folder, HARNESS_DIR],
            cwd=self.src_dir,
            cc=self.cc,
            timeout_s=120,
        )
        if res.returncode != 0:
            raise CompileError(_compiler_lines(res.stderr + res.stdout, name, self._strip()))
        self.binaries[sanitizer] = exe
        return exe


def build_c(ex: Exercise, learner: Path, out: Path, sanitizer: str | None = None) -> Path:
    """The checks binary of ``learner`` for ``sanitizer``, copied to ``out``
    (see :class:`CBuild`)."""
    with tempfile.TemporaryDirectory(prefix="lowlat-build-") as tmp:
        exe = CBuild(ex, learner, Path(tmp)).build(sanitizer)
        shutil.copy2(exe, out)
    return out


# ---- running ------------------------------------------------------------------------


@dataclass
class ChildOutcome:
    passed: bool
    reason: str
    info: dict[str, float]


def _report_head(err: str, mark: str, lines: int = 8) -> str:
    """The first lines of a sanitizer's report, file paths shortened to
    their names (``mpmc.c:25``, not the grader's temporary copy)."""
    start = err.index(mark)
    body = [ln for ln in err[start:].splitlines() if ln.strip()][:lines]
    return "\n".join("    " + re.sub(r"(?<!\S)/\S*/([^/\s]+:\d+)", r"\1", ln.strip()) for ln in body)


def _parse_channel(text: str, nonce: str) -> tuple[list[tuple[bool, str]], dict[str, float], str | None, int]:
    """(results, info, crash function, lines with a wrong nonce) from what
    the child wrote on the report pipe."""
    results: list[tuple[bool, str]] = []
    info: dict[str, float] = {}
    crash: str | None = None
    forged = 0
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        got, _, body = rest.partition(" ")
        if kind not in ("RESULT", "INFO", "CRASH"):
            continue
        if got != nonce:
            forged += 1
            continue
        if kind == "RESULT":
            verdict, _, reason = body.partition(" ")
            results.append((verdict == "PASS", reason.strip()))
        elif kind == "INFO":
            key, _, value = body.partition("=")
            with contextlib.suppress(ValueError):
                info[key.strip()] = float(value)
        else:
            crash = body.strip() or "an unknown place"
    return results, info, crash, forged


def run_child(
    cmd: list[str],
    timeout_s: float,
    sanitizer: str | None = None,
    env: dict[str, str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ChildOutcome:
    """Runs one check program under ``limits`` in a fresh working directory
    and turns every way it can end into PASS/FAIL.  The program reports on a
    pipe created here (its descriptor in ``$GRADE_REPORT_FD``, each line
    carrying the nonce in ``$GRADE_NONCE``; see grade.h); what it prints on
    its standard output decides nothing.  A PASS counts only with exit status
    0 and no sanitizer report."""
    nonce = secrets.token_hex(16)
    rfd, wfd = os.pipe()
    with sandbox.workdir() as cwd, tempfile.TemporaryDirectory(prefix="lowlat-out-") as outdir:
        out_path, err_path = Path(outdir) / "stdout", Path(outdir) / "stderr"
        extra = {"GRADE_REPORT_FD": str(wfd), "GRADE_NONCE": nonce, **(env or {})}
        child_env = toolchain.sanitizer_env(sanitizer, sandbox.child_env(cwd, extra))
        if sanitizer == "address":
            child_env["ASAN_OPTIONS"] += ":allocator_may_return_null=1"
        try:
            with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
                proc = sandbox.spawn(
                    cmd,
                    cwd=cwd,
                    env=child_env,
                    limits=limits,
                    timeout_s=timeout_s,
                    sanitizer=sanitizer,
                    pass_fds=(wfd,),
                    stdout=out_f,
                    stderr=err_f,
                )
        except OSError as exc:
            os.close(rfd)
            os.close(wfd)
            return ChildOutcome(False, f"could not start: {exc}", {})
        os.close(wfd)
        channel = bytearray()
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        except BaseException:
            # Ctrl-C (or anything else) while waiting: the child runs in a
            # session of its own, so the terminal's SIGINT never reached it;
            # kill it and its group here rather than leave it to its CPU limit.
            sandbox.kill_group(proc)
            os.close(rfd)
            raise
        sandbox.kill_group(proc)  # also anything it left behind holding the pipe
        os.set_blocking(rfd, False)
        with contextlib.suppress(BlockingIOError, OSError):
            while len(channel) < 1 << 20:
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                channel += chunk
        os.close(rfd)
        err = sandbox.read_capped(err_path)
        out = sandbox.read_capped(out_path)
    return _judge(proc.returncode, timed_out, timeout_s, channel.decode("utf-8", "replace"), nonce, err, out, limits)


def _judge(
    rc: int, timed_out: bool, timeout_s: float, channel: str, nonce: str, err: str, out: str, limits: Limits
) -> ChildOutcome:
    results, info, crash, forged = _parse_channel(channel, nonce)
    if timed_out:
        return ChildOutcome(
            False,
            f"timed out after {timeout_s:g} s (a hang: a lost item, a livelock, or a loop waiting for a state "
            "that never comes)",
            info,
        )
    failed = [reason for ok, reason in results if not ok]
    if failed:  # the checks' own verdict names the defect
        return ChildOutcome(False, failed[0] or "the check failed without saying why", info)
    if TSAN_MARK in err:
        return ChildOutcome(False, "ThreadSanitizer reports a data race:\n" + _report_head(err, TSAN_MARK), info)
    if LSAN_MARK in err:
        return ChildOutcome(
            False,
            "LeakSanitizer: memory leaked (allocated here and never freed; does destroy free everything?):\n"
            + _report_head(err, LSAN_MARK, 10),
            info,
        )
    if ASAN_MARK in err:
        return ChildOutcome(False, "AddressSanitizer reports a memory error:\n" + _report_head(err, ASAN_MARK), info)
    if UBSAN_MARK in err:
        return ChildOutcome(False, "UBSan reports undefined behaviour:\n" + _report_head(err, UBSAN_MARK), info)
    limit = sandbox.limit_death(rc, limits, timeout_s)
    if limit:
        return ChildOutcome(False, limit, info)
    if rc < 0 or crash:
        where = crash or "an unknown place"
        sig = sandbox.signal_name(rc) if rc < 0 else "a signal"
        return ChildOutcome(False, f"crashed with {sig} in {where}", info)
    if not results:
        tail = (err.strip().splitlines() or out.strip().splitlines() or ["(no output)"])[-1]
        why = "without a result on the grader's channel"
        if forged or "RESULT" in out:
            why += " (a RESULT line printed by the program itself decides nothing)"
        return ChildOutcome(False, f"ended (exit status {rc}) {why}: {tail}", info)
    if len(results) > 1:
        return ChildOutcome(False, f"reported {len(results)} results; a check reports once", info)
    if rc != 0:
        return ChildOutcome(False, f"reported PASS, but the process then exited with status {rc}", info)
    return ChildOutcome(True, "", info)


# ---- grading -------------------------------------------------------------------------

Runner = Callable[[Check], ChildOutcome]


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

    def run_c(check: Check) -> ChildOutcome:
        if check.sanitizer in failed:
            return ChildOutcome(False, failed[check.sanitizer], {})
        exe = build.binaries[check.sanitizer]
        return run_child([str(exe), check.id, check.arg], check.timeout_s, check.sanitizer, limits=limits)

    return run_c


def _runner(ex: Exercise, path: Path, workdir: Path, report: Report, limits: Limits) -> Runner | None:
    if ex.kind == "python":
        from lowlat.grading import pyharness

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
) -> Report:
    """Grades ``path`` as exercise ``name`` (found under ``root``, default the
    course repository).  A private copy of the file is graded, each check in
    its own child under ``limits``.  With ``timing=True`` the timing run
    follows and its figures are in ``report.timing`` (not graded)."""
    ex = exercise(name, root)
    p = Path(path).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"{path}: no such file (the exercise file is {ex.filename})")
    report = Report(ex.name)
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
