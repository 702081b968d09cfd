"""perf on this machine: is it installed, what ``perf_event_paranoid``
allows, whether hardware counters exist (most VMs and containers have
none), and what the course uses instead.  Nothing here raises because a
tool is missing or refused: :func:`probe` returns a :class:`PerfAccess`
whose ``reason`` says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
HARDWARE_EVENTS = ("cycles", "instructions", "cache-misses", "branch-misses")
PARANOID_FILE = Path("/proc/sys/kernel/perf_event_paranoid")
KERNEL_SUFFIX = "_[k]"  # appended to kernel frames in folded stacks (the flamegraph.pl convention)
UNKNOWN = "[unknown]"


def install_hint() -> str:
    if sys.platform == "darwin":
        return "perf is Linux only; on macOS use py-spy, Instruments or dtrace"
    return "perf is not installed (Debian: apt-get install linux-perf; Ubuntu: linux-tools-generic)"


def perf_path() -> str | None:
    """The ``perf`` program on PATH, or None."""
    return shutil.which("perf")


def paranoid() -> int | None:
    """``/proc/sys/kernel/perf_event_paranoid`` (None where absent: not
    Linux, or no perf events in this kernel).  -1: everything allowed; 0:
    no raw tracepoints for users; 1: users see kernel and user code of
    their own processes; 2: users see only user-space code of their own
    processes; above 2 (some distributions): users may not use perf at all."""
    try:
        return int(PARANOID_FILE.read_text().strip())
    except (OSError, ValueError):
        return None


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class PerfAccess:
    """What ``perf`` can do here, for this user.  ``counted``: events
    ``perf stat`` counted; ``sampling``: whether ``perf record -e
    cpu-clock`` works."""

    perf: str | None
    paranoid: int | None
    root: bool
    counted: list[str] = field(default_factory=list)
    not_counted: list[str] = field(default_factory=list)
    sampling: bool = False
    reason: str = ""

    @property
    def software(self) -> list[str]:
        return [e for e in self.counted if e in SOFTWARE_EVENTS]

    @property
    def hardware(self) -> list[str]:
        return [e for e in self.counted if e in HARDWARE_EVENTS]

    def summary(self) -> str:
        """One line for the doctor."""
        who = "root" if self.root else "not root"
        par = "absent" if self.paranoid is None else str(self.paranoid)
        if self.perf is None:
            return f"no: {self.reason} (perf_event_paranoid {par}, {who})"
        sw = ", ".join(self.software) or "none"
        hw = ", ".join(self.hardware) or "none"
        samp = "allowed" if self.sampling else "refused"
        return (
            f"{self.perf}; software events: {sw}; hardware events: {hw}; sampling (perf record -e cpu-clock): "
            f"{samp}; perf_event_paranoid {par}, {who}" + (f"; {self.reason}" if self.reason else "")
        )


def _stat_counts(perf: str, events: tuple[str, ...], cmd: list[str], timeout_s: float) -> tuple[dict[str, str], str]:
    """``perf stat -x,`` of ``cmd``: event -> value (or "<not supported>"),
    and the last line of stderr."""
    try:
        res = subprocess.run(
            [perf, "stat", "-x", ",", "-e", ",".join(events), "--", *cmd],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, str(exc)
    out = {}
    for line in res.stderr.splitlines():
        parts = line.split(",")
        if len(parts) >= 3:
            name = parts[2].split(":")[0]
            if name in events:
                out[name] = parts[0]
    return out, (res.stderr.strip().splitlines() or ["no output"])[-1]


def probe(timeout_s: float = 10.0, *, sample: bool = False) -> PerfAccess:
    """Asks perf which software and hardware events ``perf stat`` counts for
    a trivial command (about 0.05 s).  Sampling a software event needs the
    same permission as counting it, so ``sampling`` is inferred from
    ``cpu-clock``'s sibling ``task-clock`` being counted; with ``sample``,
    one ``perf record -e cpu-clock`` of a trivial command checks it for real
    (about 1 s: perf record's own start-up)."""
    perf = perf_path()
    acc = PerfAccess(perf, paranoid(), is_root())
    if perf is None:
        acc.reason = install_hint()
        return acc
    true = shutil.which("true") or "/bin/true"
    counts, tail = _stat_counts(perf, SOFTWARE_EVENTS + HARDWARE_EVENTS, [true], timeout_s)
    acc.counted = [e for e, v in counts.items() if not v.startswith("<")]
    acc.not_counted = [e for e in SOFTWARE_EVENTS + HARDWARE_EVENTS if e not in acc.counted]
    if not counts:
        acc.reason = f"perf stat refused: {tail}"
    acc.sampling = "task-clock" in acc.counted
    if sample:
        with tempfile.TemporaryDirectory(prefix="lowlat-probe-") as tmp:
            try:
                res = subprocess.run(
                    [perf, "record", "-N", "-q", "-e", "cpu-clock", "-o", f"{tmp}/p.data", "--", true],
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                )
                acc.sampling = res.returncode == 0 and Path(f"{tmp}/p.data").exists()
                if not acc.sampling and not acc.reason:
                    acc.reason = "perf record refused: " + (res.stderr.strip().splitlines() or ["no output"])[-1]
            except (OSError, subprocess.TimeoutExpired) as exc:
                acc.sampling = False
                acc.reason = f"perf record failed: {exc}"
    if acc.counted and not acc.hardware:
        acc.reason = acc.reason or "no hardware events (usual in VMs and containers)"
    if acc.sampling and not acc.root and (acc.paranoid or 0) >= 2:
        acc.reason = (acc.reason + "; " if acc.reason else "") + (
            "as a user with perf_event_paranoid >= 2: user-space frames only, no kernel frames, no perf sched"
        )
    return acc


# ---- folded stacks --------------------------------------------------------------------------
