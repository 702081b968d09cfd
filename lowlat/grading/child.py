"""Running one check program in a child process and turning every way it
can end into PASS/FAIL: the verdict comes from the report pipe (with the
run's nonce) and the exit status, never from the program's output."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lowlat.core import toolchain
from lowlat.grading import sandbox
from lowlat.grading.sandbox import DEFAULT_LIMITS, Limits

TSAN_MARK = "WARNING: ThreadSanitizer:"
LSAN_MARK = "ERROR: LeakSanitizer:"
ASAN_MARK = "ERROR: AddressSanitizer:"
UBSAN_MARK = "runtime error:"


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


__all__ = ["ChildOutcome", "run_child"]
