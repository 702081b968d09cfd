"""Sampling profiles and scheduler traces of a child process (chapter 04b):
``perf record -g`` on the ``cpu-clock`` software event, folded into stacks
and drawn by :mod:`lowlat.method.flamegraph`, ``perf report --stdio``,
``perf sched timehist``, and py-spy where perf is missing or refused
(:mod:`lowlat.machine.perf` says which).  Times are in ms unless a name
says otherwise.  The names of those two modules that a chapter needs are
importable from here too, so chapter 04b imports one module.

Nothing here raises because a tool is missing or refused: every function
returns a result whose ``available`` is False and whose ``reason`` says why.
"""

from __future__ import annotations

import numbers
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lowlat.core.argcheck import real_arg, str_arg
from lowlat.core.validate import int_arg
from lowlat.machine.perf import (
    HARDWARE_EVENTS,
    SOFTWARE_EVENTS,
    PerfAccess,
    install_hint,
    is_root,
    paranoid,
    perf_path,
    probe,
)
from lowlat.method.flamegraph import (
    by_thread,
    child_result,
    collapse_perf_script,
    flamegraph_svg,
    leaves,
    only,
    parse_folded,
    share,
)

# The longest a profiled child may run: a day.
MAX_TIMEOUT_S = 86_400.0

# ---- recording ------------------------------------------------------------------------------


@dataclass
class Profile:
    """A sampling profile of one child process.  ``folded``: stack ->
    samples; ``report``: the top of ``perf report --stdio`` (perf only);
    ``user_only``: perf sampled user space only (a user at
    ``perf_event_paranoid`` >= 2, or no kernel frame in any stack), so the
    time spent inside system calls is missing from the shares."""

    available: bool
    reason: str
    tool: str = ""  # "perf" or "py-spy"
    folded: dict[str, int] = field(default_factory=dict)
    report: str = ""
    frequency: int = 0  # samples per second per thread
    child_output: str = ""
    user_only: bool = False

    @property
    def samples(self) -> int:
        return sum(self.folded.values())


def _cmd_ok(cmd: object) -> list[str]:
    if isinstance(cmd, (str, bytes)) or not isinstance(cmd, (list, tuple)) or not cmd:
        raise TypeError(f"cmd must be a non-empty list of strings (a program and its arguments), got {cmd!r}")
    if not all(isinstance(c, str) for c in cmd):
        raise TypeError(f"cmd must be a list of strings, got {cmd!r}")
    return list(cmd)


def _freq(frequency: object) -> int:
    if isinstance(frequency, bool) or not isinstance(frequency, numbers.Integral) or not 1 <= int(frequency) <= 10_000:
        raise ValueError(f"frequency must be an int in [1, 10000] samples per second, got {frequency!r}")
    return int(frequency)


def python_child(code: str) -> list[str]:
    """The command that runs ``code`` in a new Python process with this
    interpreter and this process's ``sys.path`` (so it imports the same lowlat)."""
    if not isinstance(code, str) or not code.strip():
        raise TypeError(f"code must be a non-empty string of Python, got {code!r}")
    paths = [p for p in sys.path if p]
    prelude = f"import sys; sys.path[:0] = {paths!r}\n"
    return [sys.executable, "-c", prelude + code]


def pipeline_child(**changes: object) -> list[str]:
    """A child that runs ``lowlat.core.pipeline.run(best_config(), **changes)``
    and prints one line of JSON: its P50/P99/max (ns), its stalls
    (``troubleshoot.stalls``) and its process id."""
    code = (
        "import json, os\n"
        "from lowlat.experiments import pipeline as pl, troubleshoot as ts\n"
        f"r = pl.run(pl.best_config(), **{changes!r})\n"
        "s = r.summary()\n"
        "print(json.dumps({'pid': os.getpid(), 'p50': s['p50'], 'p99': s['p99'], 'max': s['max'], "
        "'seconds': r.seconds, 'consumed': r.consumed, 'lost': r.lost, 'stalls': ts.stalls(r, 20)}))\n"
    )
    return python_child(code)


def record(
    cmd: list[str],
    *,
    frequency: int = 999,
    thread_names: tuple[str, ...] = ("ll_pipeline__producer_main", "ll_pipeline__consumer_main"),
    tool: str = "auto",
    report_lines: int = 25,
    timeout_s: float = 120.0,
) -> Profile:
    """Samples ``cmd`` and every thread it starts, ``frequency`` times per
    second per thread: ``perf record -e cpu-clock -g`` (frame-pointer
    call graphs; the software clock works in VMs without hardware
    counters), folded with :func:`collapse_perf_script`; with
    ``tool="py-spy"``, or ``"auto"`` when perf is missing or refused,
    ``py-spy record --native`` instead (Python frames and the C they call;
    only threads that run Python, so threads a C library starts itself are
    not in its profile).  Never raises for a missing or refused tool: ``available`` is False and
    ``reason`` says why."""
    cmd = _cmd_ok(cmd)
    frequency = _freq(frequency)
    if not isinstance(tool, str) or tool not in ("auto", "perf", "py-spy"):
        raise ValueError(f"tool must be 'auto', 'perf' or 'py-spy', got {tool!r}")
    if isinstance(thread_names, (str, bytes)) or not all(isinstance(n, str) for n in thread_names):
        raise TypeError(f"thread_names must be a tuple of function names, got {thread_names!r:.60}")
    thread_names = tuple(thread_names)
    report_lines = int_arg(report_lines, "report_lines", minimum=0, maximum=10_000)
    timeout_s = real_arg(timeout_s, "timeout_s", positive=True, maximum=MAX_TIMEOUT_S)
    why: list[str] = []
    if tool in ("auto", "perf"):
        prof = _record_perf(cmd, frequency, thread_names, report_lines, timeout_s)
        if prof.available or tool == "perf":
            return prof
        why.append(prof.reason)
    prof = _record_pyspy(cmd, frequency, timeout_s)
    if why and not prof.available:
        prof.reason = "; ".join([*why, prof.reason])
    elif why:
        prof.reason = f"py-spy instead of perf ({why[0]})"
    return prof


def _record_perf(
    cmd: list[str], frequency: int, thread_names: tuple[str, ...], report_lines: int, timeout_s: float
) -> Profile:
    perf = perf_path()
    if perf is None:
        return Profile(False, install_hint(), "perf")
    with tempfile.TemporaryDirectory(prefix="lowlat-perf-") as tmp:
        data = f"{tmp}/perf.data"
        try:
            res = subprocess.run(
                [perf, "record", "-N", "-q", "-e", "cpu-clock", "-F", str(frequency), "-g", "-o", data, "--", *cmd],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Profile(False, f"perf record failed: {exc}", "perf")
        if res.returncode != 0 or not Path(data).exists():
            tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
            par = paranoid()
            return Profile(
                False,
                f"perf record refused or failed (exit {res.returncode}: {tail}; perf_event_paranoid "
                f"{par if par is not None else 'absent'}, {'root' if is_root() else 'not root'})",
                "perf",
            )
        script = subprocess.run(
            [perf, "script", "-i", data, "-F", "comm,pid,tid,ip,sym"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        rep = subprocess.run(
            [perf, "report", "-i", data, "--stdio", "--no-children", "-g", "none", "--percent-limit", "1"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    folded = collapse_perf_script(script.stdout, thread_names)
    if not folded:
        return Profile(False, "perf recorded no samples", "perf", child_output=res.stdout)
    top = [ln.rstrip() for ln in rep.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
    user_only = (not is_root() and (paranoid() or 0) >= 2) or share(folded, r"_\[k\]$") == 0.0
    return Profile(
        True,
        f"perf record -e cpu-clock -F {frequency} -g",
        "perf",
        folded,
        "\n".join(top[:report_lines]),
        frequency,
        res.stdout,
        user_only,
    )


def _record_pyspy(cmd: list[str], frequency: int, timeout_s: float) -> Profile:
    spy = shutil.which("py-spy") or (
        str(Path(sys.executable).with_name("py-spy")) if Path(sys.executable).with_name("py-spy").exists() else None
    )
    if spy is None:
        return Profile(False, "py-spy is not installed (pip install py-spy)", "py-spy")
    with tempfile.TemporaryDirectory(prefix="lowlat-spy-") as tmp:
        out = f"{tmp}/stacks.txt"
        try:
            res = subprocess.run(
                [
                    spy,
                    "record",
                    "--native",
                    "--threads",
                    "--nolineno",
                    "-r",
                    str(frequency),
                    "-f",
                    "raw",
                    "-o",
                    out,
                    "--",
                    *cmd,
                ],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Profile(False, f"py-spy failed: {exc}", "py-spy")
        text = Path(out).read_text() if Path(out).exists() else ""
    folded = parse_folded(text)
    if not folded:
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        return Profile(False, f"py-spy recorded nothing (exit {res.returncode}: {tail})", "py-spy")
    return Profile(True, f"py-spy record --native -r {frequency}", "py-spy", folded, "", frequency, res.stdout)


# ---- perf sched ----------------------------------------------------------------------------------


@dataclass
class ThreadSched:
    """One thread of the child, from ``perf sched timehist`` (ms):
    ``runs`` times it was switched in; ``off_cpu_ms`` the time it spent
    switched out (waiting to run, or asleep); ``longest_off_ms`` the longest
    such stretch; ``delay_ms`` the longest scheduling delay (runnable but
    not running: preempted, or woken and not yet on a CPU)."""

    tid: int
    run_ms: float
    runs: int
    off_cpu_ms: float
    longest_off_ms: float
    delay_ms: float


@dataclass
class Sched:
    available: bool
    reason: str
    pid: int = 0
    threads: list[ThreadSched] = field(default_factory=list)
    child_output: str = ""


def sched(cmd: list[str], *, timeout_s: float = 120.0) -> Sched:
    """``perf sched record`` of ``cmd`` (all CPUs: every switch), then
    ``perf sched timehist`` summed per thread of the child, busiest first.
    The child must print ``{"pid": ...}`` as JSON on its first stdout line
    (as :func:`pipeline_child` does), so its threads can be told from other
    processes'.  Needs root or a permissive ``perf_event_paranoid`` (it
    reads scheduler tracepoints); never raises for a missing or refused perf."""
    cmd = _cmd_ok(cmd)
    timeout_s = real_arg(timeout_s, "timeout_s", positive=True, maximum=MAX_TIMEOUT_S)
    perf = perf_path()
    if perf is None:
        return Sched(False, install_hint())
    with tempfile.TemporaryDirectory(prefix="lowlat-sched-") as tmp:
        data = f"{tmp}/sched.data"
        try:
            res = subprocess.run(
                [perf, "sched", "record", "-N", "-q", "-o", data, "--", *cmd],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Sched(False, f"perf sched record failed: {exc}")
        if res.returncode != 0 or not Path(data).exists():
            tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
            return Sched(
                False,
                f"perf sched record refused or failed (exit {res.returncode}: {tail}; it needs the scheduler "
                f"tracepoints: root, or perf_event_paranoid -1)",
                child_output=res.stdout,
            )
        th = subprocess.run([perf, "sched", "timehist", "-i", data], capture_output=True, text=True, timeout=timeout_s)
    m = re.search(r'"pid":\s*(\d+)', res.stdout)
    if m is None:
        return Sched(False, "the child did not print its pid as JSON", child_output=res.stdout)
    pid = int(m.group(1))
    return Sched(True, "perf sched record + timehist", pid, parse_timehist(th.stdout, pid), res.stdout)


_TIMEHIST = re.compile(
    r"^\s*[\d.]+\s+\[\d+\]\s+(?P<name>.+?)\[(?P<tid>\d+)(?:/(?P<pid>\d+))?\]\s+"
    r"(?P<wait>[\d.]+)\s+(?P<delay>[\d.]+)\s+(?P<run>[\d.]+)"
)


def parse_timehist(text: str, pid: int) -> list[ThreadSched]:
    """Sums ``perf sched timehist`` lines (time, cpu, task[tid/pid], wait,
    sch delay, run time, all ms) per thread of process ``pid`` (the main
    thread shows as ``[pid]``), busiest first."""
    str_arg(text, "text")
    pid = int_arg(pid, "pid", minimum=0)
    acc: dict[int, list[float]] = {}
    for line in text.splitlines():
        m = _TIMEHIST.match(line)
        if m is None:
            continue
        tid = int(m.group("tid"))
        owner = int(m.group("pid")) if m.group("pid") else tid
        if owner != pid:
            continue
        wait, delay, run = float(m.group("wait")), float(m.group("delay")), float(m.group("run"))
        a = acc.setdefault(tid, [0.0, 0, 0.0, 0.0, 0.0])
        a[0] += run
        a[1] += 1
        a[2] += wait + delay
        a[3] = max(a[3], wait + delay)
        a[4] = max(a[4], delay)
    out = [ThreadSched(t, a[0], int(a[1]), a[2], a[3], a[4]) for t, a in acc.items()]
    return sorted(out, key=lambda t: -t.run_ms)


__all__ = [
    "HARDWARE_EVENTS",
    "SOFTWARE_EVENTS",
    "PerfAccess",
    "Profile",
    "Sched",
    "ThreadSched",
    "by_thread",
    "child_result",
    "collapse_perf_script",
    "flamegraph_svg",
    "leaves",
    "only",
    "paranoid",
    "parse_folded",
    "parse_timehist",
    "perf_path",
    "pipeline_child",
    "probe",
    "python_child",
    "record",
    "sched",
    "share",
]
