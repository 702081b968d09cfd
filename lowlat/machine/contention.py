"""What other work takes from this process: a CPU quota from the cgroup
controller (v1 or v2) and the load other processes put on the machine
(the load average, runnable tasks, a hypervisor's steal).  Pure reads of
``/sys`` and ``/proc``; every reader takes a ``root`` so the tests can hand
it a fake tree.  :mod:`lowlat.machine.topology` re-exports these names."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lowlat.core.argcheck import real_arg

# The longest load() sample: it sleeps that long (steal needs two readings).
MAX_SAMPLE_S = 60.0


def root_path(root: Any) -> Path:
    """The folder a reader treats as ``/`` (a str or a path), checked."""
    if not isinstance(root, (str, os.PathLike)) or not str(root):
        raise TypeError(f"root must be a folder (a str or a Path), got {type(root).__name__} {root!r}")
    return Path(root)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Quota:
    """A CPU quota from the cgroup controller: ``cpus`` CPUs' worth of time
    per ``period_us`` (inf when unlimited), and where it was read."""

    cpus: float
    period_us: int
    source: str

    @property
    def limited(self) -> bool:
        return math.isfinite(self.cpus)


def _own_cgroup_paths(root: Path) -> list[Path]:
    """The cgroup directories of this process (v2 unified, then v1 cpu)."""
    text = _read(root / "proc/self/cgroup") or ""
    out = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        rel = rel.lstrip("/")
        if controllers == "":
            out.append(root / "sys/fs/cgroup" / rel)
        elif "cpu" in controllers.split(","):
            for mount in ("cpu,cpuacct", "cpu", "cpuacct,cpu"):
                out.append(root / "sys/fs/cgroup" / mount / rel)
    return out


def cpu_quota(root: str | Path = "/") -> Quota:
    """The tightest CPU quota on this process's cgroup and its parents:
    cgroup v2 ``cpu.max`` ("max 100000" or "50000 100000"), or v1
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1 is unlimited)."""
    r = root_path(root)
    best = Quota(math.inf, 100_000, "no CPU quota")
    seen: set[Path] = set()
    for start in _own_cgroup_paths(r) + [r / "sys/fs/cgroup", r / "sys/fs/cgroup/cpu"]:
        d = start
        while True:
            if d in seen:
                break
            seen.add(d)
            q = _quota_in(d)
            if q is not None and q.cpus < best.cpus:
                best = q
            if d == r / "sys/fs/cgroup" or d.parent == d or not d.is_relative_to(r / "sys/fs/cgroup"):
                break
            d = d.parent
    return best


def _quota_in(d: Path) -> Quota | None:
    v2 = _read(d / "cpu.max")
    if v2:
        limit, _, per = v2.partition(" ")
        if limit == "max":
            return None
        try:
            quota, period = int(limit), int(per or 100_000)
        except ValueError:
            return None
        # a negative or zero quota, or a zero period, is no quota the kernel would write: not a limit
        if quota > 0 and period > 0:
            return Quota(quota / period, period, str(d / "cpu.max"))
        return None
    q, p = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
    if q and p:
        try:
            quota, period = int(q), int(p)
        except ValueError:
            return None
        if quota > 0 and period > 0:
            return Quota(quota / period, period, str(d / "cpu.cfs_quota_us"))
    return None


@dataclass(frozen=True)
class Load:
    """Other work on the machine: the 1-minute load average, runnable tasks
    right now, and the share of time the hypervisor took (steal) over the
    sample (nan where the OS does not report it)."""

    load1: float
    running: int
    steal_pct: float

    def busy(self, usable_cpus: int) -> bool:
        """More runnable work than this process's CPUs can absorb (besides
        the process itself), or a hypervisor taking over 5% of the time."""
        return self.running - 1 > usable_cpus - 1 or self.steal_pct > 5

    def describe(self) -> str:
        steal = "" if math.isnan(self.steal_pct) else f", steal {self.steal_pct:.1f}%"
        return f"load average {self.load1:.2f}, {self.running} runnable now{steal}"


def _steal_ticks(stat: str) -> tuple[int, int] | None:
    """(steal ticks, all ticks) from the first line of /proc/stat's text."""
    line = stat.splitlines()[:1]
    if not line or not line[0].startswith("cpu "):
        return None
    vals = [int(v) for v in line[0].split()[1:]]
    steal = vals[7] if len(vals) > 7 else 0
    return steal, sum(vals[:8])


def load(sample_s: float = 0.1, root: str | Path = "/") -> Load:
    """Samples the load for ``sample_s`` seconds (steal needs two readings;
    0 to 60 s, it sleeps that long)."""
    sample_s = real_arg(sample_s, "sample_s", minimum=0.0, maximum=MAX_SAMPLE_S)
    r = root_path(root)
    first = _steal_ticks(_read(r / "proc/stat") or "")
    if sample_s > 0 and first is not None:
        time.sleep(sample_s)
    stat = _read(r / "proc/stat") or ""  # the second reading serves steal and the run queue
    second = _steal_ticks(stat)
    steal = math.nan
    if first and second and second[1] > first[1]:
        steal = 100.0 * (second[0] - first[0]) / (second[1] - first[1])
    running = 0
    for line in stat.splitlines():
        if line.startswith("procs_running"):
            running = int(line.split()[1])
    try:
        load1 = os.getloadavg()[0] if str(r) == "/" else float((_read(r / "proc/loadavg") or "0").split()[0])
    except (OSError, ValueError, AttributeError):
        load1 = math.nan
    return Load(load1, running, steal)


__all__ = ["MAX_SAMPLE_S", "Load", "Quota", "cpu_quota", "load", "root_path"]
