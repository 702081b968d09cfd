"""The source article's troubleshooting table as a runnable checklist:
each question is answered from what this machine and a pipeline run show
(``/proc``, ``/sys``, ``getrusage``, the run's own counters), and says what
it found and what to do about it.  Linux first; elsewhere a check that
cannot look says so."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lowlat.affinity import cpu_count


@dataclass
class Finding:
    question: str
    found: str
    verdict: str  # "ok", "warn" or "n/a"
    advice: str = ""

    def line(self) -> str:
        mark = {"ok": "[ok]  ", "warn": "[warn]", "n/a": "[n/a] "}[self.verdict]
        return f"{mark} {self.question} {self.found}" + (f"\n         -> {self.advice}" if self.advice else "")


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _steal_share(seconds: float) -> float | None:
    """Share of CPU time the hypervisor took from this VM over ``seconds``
    (the 'steal' column of /proc/stat), or None where there is no such file."""

    def snap() -> list[int] | None:
        line = (_read("/proc/stat") or "").splitlines()[:1]
        if not line or not line[0].startswith("cpu "):
            return None
        return [int(x) for x in line[0].split()[1:]]

    a = snap()
    if a is None or len(a) < 8:
        return None
    time.sleep(seconds)
    b = snap()
    assert b is not None
    total = sum(b) - sum(a)
    return (b[7] - a[7]) / total if total > 0 else 0.0


@dataclass
class RunUsage:
    """What getrusage saw while ``fn`` ran (all threads of the process)."""

    seconds: float
    involuntary_switches: int  # preemptions: the scheduler took the CPU away
    voluntary_switches: int  # the thread gave it up (yield, sleep, a blocking call)
    minor_faults: int
    result: Any


def with_usage(fn: Callable[[], Any]) -> RunUsage:
    a = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    res = fn()
    dt = time.perf_counter() - t0
    b = resource.getrusage(resource.RUSAGE_SELF)
    return RunUsage(dt, b.ru_nivcsw - a.ru_nivcsw, b.ru_nvcsw - a.ru_nvcsw, b.ru_minflt - a.ru_minflt, res)


def stalls(result: Any, factor: float = 100.0) -> list[tuple[float, float]]:
    """Episodes where latency exceeded ``factor`` x P50: (start ms into the
    run, worst latency ms), one per episode."""
    lat = result.latency_ns
    if len(lat) == 0:
        return []
    t = (result.samples["intended_ns"].astype(np.int64) - int(result.samples["intended_ns"][0])) / 1e6
    bad = lat > factor * max(np.percentile(lat, 50), 1)
    out: list[tuple[float, float]] = []
    i = 0
    idx = np.flatnonzero(bad)
    while i < len(idx):
        j = i
        while j + 1 < len(idx) and idx[j + 1] - idx[j] < 50:
            j += 1
        seg = idx[i : j + 1]
        out.append((float(t[seg[0]]), float(lat[seg].max() / 1e6)))
        i = j + 1
    return out


def checklist(usage: RunUsage | None = None, steal_sample_s: float = 0.5) -> list[Finding]:
    """Answers the troubleshooting questions for this machine and, if given,
    one pipeline run measured with :func:`with_usage`."""
    n = cpu_count()
    out: list[Finding] = []
    if usage is not None:
        r = usage.result
        st = stalls(r)
        pre = usage.involuntary_switches
        gaps = np.diff([s[0] for s in st])
        out.append(
            Finding(
                "Were the threads preempted?",
                f"{pre} involuntary context switches in {usage.seconds:.2f} s; {len(st)} stall(s) over 100x P50"
                + (f", the worst {max(s[1] for s in st):.2f} ms" if st else "")
                + (f", typically {np.median(gaps):.1f} ms apart" if len(gaps) >= 3 else "")
                + (f"; the producer missed its schedule {r.late_sends} times" if r.config.producer == "open" else ""),
                "warn" if pre > 10 or st else "ok",
                "stalls with few preemptions point at the host (a VM pausing its vCPUs) or at interrupts: "
                "isolate cores, or run on bare metal"
                if st
                else "",
            )
        )
        spinning = [w for w in (r.config.producer_wait, r.config.consumer_wait) if w == "spin"]
        out.append(
            Finding(
                "Were the threads pinned, one spinning thread per core?",
                f"pinned: {r.pinned}; {len(spinning)} spinning thread(s) on {n} CPU(s)",
                "ok" if (r.pinned or not spinning) and len(spinning) <= n else "warn",
                "" if len(spinning) <= n else "more spinners than cores: use yield, or fewer threads",
            )
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    out.append(
        Finding(
            "Is there other load?",
            f"load average {load:.2f} on {n} CPU(s)" if load is not None else "no load average here",
            "n/a" if load is None else ("warn" if load > n - 0.5 else "ok"),
            "close other programs; the benchmark wants its cores to itself"
            if load is not None and load > n - 0.5
            else "",
        )
    )
    steal = _steal_share(steal_sample_s)
    out.append(
        Finding(
            "Is the hypervisor taking CPU time (steal)?",
            "no /proc/stat here" if steal is None else f"{steal:.1%} of CPU time stolen over {steal_sample_s:g} s",
            "n/a" if steal is None else ("warn" if steal > 0.01 else "ok"),
            "a busy host: expect ms pauses in every max" if steal and steal > 0.01 else "",
        )
    )
    try:
        pol = os.sched_getscheduler(0)
        names = {
            os.SCHED_OTHER: "SCHED_OTHER (normal)",
            getattr(os, "SCHED_FIFO", -9): "SCHED_FIFO",
            getattr(os, "SCHED_RR", -9): "SCHED_RR",
        }
        out.append(
            Finding(
                "What priority do the threads run at?",
                f"{names.get(pol, pol)}, nice {os.getpriority(os.PRIO_PROCESS, 0)}",
                "ok" if pol != os.SCHED_OTHER else "n/a",
                "real-time priority (chrt -f) keeps other tasks off a core, but needs privileges "
                "and can starve the system: use with pinning and care"
                if pol == os.SCHED_OTHER
                else "",
            )
        )
    except (AttributeError, OSError):
        out.append(Finding("What priority do the threads run at?", "cannot ask on this OS", "n/a"))
    iso = _read("/sys/devices/system/cpu/isolated")
    nohz = _read("/sys/devices/system/cpu/nohz_full")
    out.append(
        Finding(
            "Are cores isolated from the scheduler and timer ticks?",
            "cannot tell on this OS" if iso is None else f"isolated: '{iso or 'none'}', nohz_full: '{nohz or 'none'}'",
            "n/a" if iso is None else ("ok" if iso else "warn"),
            "boot with isolcpus=/nohz_full= for the two pipeline cores (a system setting, not a program's)"
            if iso == ""
            else "",
        )
    )
    gov = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    out.append(
        Finding(
            "Does the CPU change frequency?",
            f"governor '{gov}'" if gov else "no cpufreq here (a VM, or fixed frequency)",
            "n/a" if not gov else ("ok" if gov == "performance" else "warn"),
            "set the 'performance' governor while measuring" if gov and gov != "performance" else "",
        )
    )
    return out


def format_checklist(findings: list[Finding]) -> str:
    return "\n".join(f.line() for f in findings)


__all__ = ["Finding", "RunUsage", "checklist", "format_checklist", "stalls", "with_usage"]
