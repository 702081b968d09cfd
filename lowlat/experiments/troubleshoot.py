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

from lowlat.core.affinity import usable_cpus
from lowlat.core.argcheck import callable_arg, real_arg

# The longest steal sample checklist() sleeps for: a minute is already a long wait for one line.
MAX_STEAL_SAMPLE_S = 60.0


def _run_result(result: Any, name: str = "result") -> Any:
    """A pipeline run's result: it has ``latency_ns`` and ``samples``."""
    if not (hasattr(result, "latency_ns") and hasattr(result, "samples")):
        raise TypeError(
            f"{name} must be a pipeline run's result (lowlat.experiments.pipeline.run(...)), got {type(result).__name__}"
        )
    return result


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
    """Runs ``fn()`` (no arguments) and returns what getrusage saw meanwhile."""
    callable_arg(fn, "fn")
    a = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    res = fn()
    dt = time.perf_counter() - t0
    b = resource.getrusage(resource.RUSAGE_SELF)
    return RunUsage(dt, b.ru_nivcsw - a.ru_nivcsw, b.ru_nvcsw - a.ru_nvcsw, b.ru_minflt - a.ru_minflt, res)


def stalls(result: Any, factor: float = 100.0) -> list[tuple[float, float]]:
    """Episodes where latency exceeded ``factor`` x P50: (start ms into the
    run, worst latency ms), one per episode.  ``factor``: a finite number
    >= 1 (below 1 every ordinary tick would count as a stall) and <= 1e9."""
    _run_result(result)
    factor = real_arg(factor, "factor", minimum=1.0, maximum=1e9)
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


@dataclass(frozen=True)
class MaxCause:
    """Where the slowest tick of a run spent its time (all ns): ``lateness``
    (due -> pushed), ``in_ring`` (pushed -> popped), ``processing`` (popped
    -> done); ``consumer_gap`` the longest time the consumer popped nothing
    while that tick was in the ring, ``producer_gap`` the longest time the
    producer pushed nothing while that tick was late; ``ahead`` how many
    ticks were in the ring when it was pushed."""

    seq: int
    latency: int
    p50: float
    lateness: int
    in_ring: int
    processing: int
    consumer_gap: int
    producer_gap: int
    ahead: int
    stored_before_gap: int = -1  # samples the consumer had stored when its longest gap began
    grew: bool = False  # that count is where a growing sample array doubles (reallocations this run)

    def text(self) -> str:
        """The cause in one sentence, decided from the numbers above."""
        excess = max(self.latency - self.p50, 1.0)
        head = (
            f"the max, tick {self.seq:,}: {self.latency / 1e3:,.1f} us from its due time (P50 {self.p50 / 1e3:,.1f} "
            f"us) = {self.lateness / 1e3:,.1f} us late + {self.in_ring / 1e3:,.1f} us in the ring + "
            f"{self.processing / 1e3:,.1f} us processing"
        )
        if self.consumer_gap >= 0.5 * excess:
            why = (
                f"while it waited, the consumer popped nothing for {self.consumer_gap / 1e3:,.1f} us: the consumer "
                "thread was not running (descheduled for another task, or its vCPU paused)"
                if not self.grew
                else f"the gap began when {self.stored_before_gap:,} samples were stored, where the growing sample "
                "array doubles: the consumer was copying the array into a bigger one (a hot-path reallocation)"
            )
        elif self.producer_gap >= 0.5 * excess:
            why = (
                f"the producer pushed nothing for {self.producer_gap / 1e3:,.1f} us before it: the producer thread "
                "was not running, so the tick left late"
            )
        elif self.in_ring >= 0.5 * excess:
            why = (
                f"it waited behind {self.ahead:,} ticks, each processed at the usual speed (no gap over "
                f"{max(self.consumer_gap, self.producer_gap) / 1e3:,.1f} us): queueing, not a pause"
            )
        elif self.processing >= 0.5 * excess:
            why = "its own processing was slow (no wait before it): the work itself, or an interrupt during it"
        else:
            why = "no single part dominates: several small delays added up"
        return f"{head}.\n-> {why}."


def max_cause(result: Any) -> MaxCause | None:
    """Explains the kept sample with the highest latency from the due time
    (None when no samples were kept).  Needs the consumer's stage stamps
    (any ``work_ns`` > 0) for the processing time; without them processing
    is counted from the pop to the done stamp all the same."""
    s = _run_result(result).samples
    if len(s) == 0:
        return None
    lat = result.latency_ns
    i = int(np.argmax(lat))
    due, sent, popped = (s[k].astype(np.int64) for k in ("intended_ns", "sent_ns", "popped_ns"))
    done = s["stage_end_ns"][:, 3].astype(np.int64)

    def longest_gap(stamps: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
        """(longest gap, how many stamps came before it) within [lo, hi]."""
        inside = np.sort(stamps[(stamps >= lo) & (stamps <= hi)])
        edges = np.concatenate(([lo], inside, [hi]))
        if hi <= lo:
            return 0, -1
        k = int(np.argmax(np.diff(edges)))
        return int(edges[k + 1] - edges[k]), int((stamps < edges[k]).sum()) if k > 0 else -1

    c_gap, stored = longest_gap(popped, int(sent[i]), int(popped[i]))
    p_gap, _ = longest_gap(sent, int(due[i]), int(sent[i]))
    grew = getattr(result, "sample_reallocs", 0) > 0 and stored > 0 and stored & (stored - 1) == 0
    ahead = int(((sent < sent[i]) & (popped > sent[i])).sum())
    return MaxCause(
        seq=int(s["seq"][i]),
        latency=int(lat[i]),
        p50=float(np.percentile(lat, 50)),
        lateness=int(sent[i] - due[i]),
        in_ring=int(popped[i] - sent[i]),
        processing=int(done[i] - popped[i]),
        consumer_gap=c_gap,
        producer_gap=p_gap,
        ahead=ahead,
        stored_before_gap=stored,
        grew=bool(grew),
    )


def checklist(usage: RunUsage | None = None, steal_sample_s: float = 0.5) -> list[Finding]:
    """Answers the troubleshooting questions for this machine and, if given,
    one pipeline run measured with :func:`with_usage`.  ``steal_sample_s``:
    how long to watch the hypervisor's steal (0 to 60 s; it sleeps that long)."""
    if usage is not None and not isinstance(usage, RunUsage):
        raise TypeError(f"usage must be a RunUsage (from with_usage) or None, got {type(usage).__name__}")
    if usage is not None:
        _run_result(usage.result, "usage.result")
    steal_sample_s = real_arg(steal_sample_s, "steal_sample_s", minimum=0.0, maximum=MAX_STEAL_SAMPLE_S)
    n = len(usable_cpus())  # the CPUs this process may run on, not all online ones
    out: list[Finding] = []
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    busy = load is not None and load > n - 0.5  # the same test as the load line below
    spinners = (
        0
        if usage is None
        else sum(
            w in ("spin", "backoff") for w in (usage.result.config.producer_wait, usage.result.config.consumer_wait)
        )
    )
    # Who took the CPUs: the load line below settles whether other runnable tasks competed.
    # When it clears them, name what a load average hardly shows.
    if n < 2:
        # One usable CPU: the producer and the consumer can only take turns on
        # it, and each turn the scheduler forces is an involuntary switch.
        takers = (
            "most likely the pipeline's own two threads taking turns on the one usable CPU (each forced turn is a "
            "switch), besides any other runnable task; two usable CPUs would separate them"
        )
    elif busy:
        takers = "other runnable tasks took the CPUs (the load below is high)"
    else:
        takers = (
            "the CPUs went to other runnable tasks, other threads of this process (the notebook's kernel, a "
            "monitor) or kernel threads (interrupt handling, kworkers); no load average here to tell which"
            if load is None
            else "the load below shows no steady competition, so the CPUs went to work it averages away: "
            "other threads of this process (the notebook's kernel, a monitor), short-lived tasks, kernel "
            "threads (interrupt handling, kworkers)"
        )
    if usage is not None:
        r = usage.result
        st = stalls(r)
        pre = usage.involuntary_switches
        gaps = np.diff([s[0] for s in st])
        out.append(
            Finding(
                "Were the threads preempted?",
                f"{pre:,} involuntary context switches in {usage.seconds:.2f} s; {len(st)} stall(s) over 100x P50"
                + (f", the worst {max(s[1] for s in st):.2f} ms" if st else "")
                + (f", typically {np.median(gaps):.1f} ms apart" if len(gaps) >= 3 else "")
                + (f"; the producer missed its schedule {r.late_sends:,} times" if r.config.producer == "open" else ""),
                "warn" if pre > 10 or st else "ok",
                f"many preemptions: {takers}; give the pipeline CPUs nothing else runs on"
                if pre > 100
                else f"{pre:,} preemptions for {len(st)} stalls: enough to explain them; {takers} (the VM host's pauses show as steal below, not as switches); give the "
                "pipeline CPUs nothing else runs on (isolated cores)"
                if st and pre >= len(st)
                else "fewer preemptions than stalls: a stall without a switch is the host pausing the vCPU (a VM; "
                "see steal below) or an interrupt handled on the thread's CPU: isolate cores, or run on bare metal"
                if st
                else "",
            )
        )
        spinning = [w for w in (r.config.producer_wait, r.config.consumer_wait) if w in ("spin", "backoff")]
        out.append(
            Finding(
                "Were the threads pinned, one spinning thread per core?",
                f"pinned: {r.pinned}; {len(spinning)} spinning thread(s) on {n} usable CPU(s)",
                "ok" if (r.pinned or not spinning) and len(spinning) <= n else "warn",
                "" if len(spinning) <= n else "more spinners than cores: use yield, or fewer threads",
            )
        )
    out.append(
        Finding(
            "Is there other load?",
            f"load average {load:.2f} on {n} usable CPU(s), this process's own runnable threads included (a "
            "pipeline's two spinning threads add up to 2 while they run)"
            if load is not None
            else "no load average here",
            "n/a" if load is None else ("warn" if busy else "ok"),
            (
                f"{spinners} spinners fill {'both' if n == 2 else f'all {n}'} CPUs: every waking thread, this "
                "notebook's included, preempts one; leave a CPU free or isolate cores"
                if spinners >= n
                else "other runnable tasks share the pipeline's CPUs: leave its CPUs free of other work or isolate cores"
            )
            if busy
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
    """The findings, one line each (and a line of advice where there is some)."""
    if isinstance(findings, (str, bytes)) or not hasattr(findings, "__iter__"):
        raise TypeError(f"findings must be a list of Finding (from checklist), got {type(findings).__name__}")
    findings = list(findings)
    for f in findings:
        if not isinstance(f, Finding):
            raise TypeError(f"findings must hold Finding objects (from checklist), got {type(f).__name__} {f!r:.60}")
    return "\n".join(f.line() for f in findings)


__all__ = [
    "MAX_STEAL_SAMPLE_S",
    "Finding",
    "MaxCause",
    "RunUsage",
    "checklist",
    "format_checklist",
    "max_cause",
    "stalls",
    "with_usage",
]
