"""Honest measurement (chapter 04): repetitions and warm-up, heavy tails,
coordinated omission, hardware counters and what to use without them.  The
decision path from a result to its suspects and the noise-aware regression
gates are the course's method, in :mod:`lowlat.method.gate` (importable from
here too).  Times are in ns unless a name says otherwise."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lowlat.core import toolchain
from lowlat.core.argcheck import finite_arg, function_arg
from lowlat.core.hist import HOUR_NS, Histogram
from lowlat.core.validate import int_arg
from lowlat.method.gate import (  # the decision path and the gates: the course's method, importable from here too
    Decision,
    GateResult,
    MetricGate,
    NoiseGate,
    decide,
    gate,
    latency_percentiles,
    noise_gate,
)

# The most requests a scenario's schedule may hold (numpy arrays of int64).
MAX_SCHEDULE = 10**8


def repeat_ns(fn: Callable[[], object], repeats: int) -> np.ndarray:
    """Runs ``fn`` ``repeats`` times, no warm-up; each run's time (ns)."""
    function_arg(fn, "fn")
    out = np.empty(int_arg(repeats, "repeats", minimum=1, maximum=10**8))
    for i in range(len(out)):
        t0 = time.perf_counter_ns()
        fn()
        out[i] = time.perf_counter_ns() - t0
    return out


def heavy_tailed(n: int = 100_000, seed: int = 0) -> np.ndarray:
    """Service times (ns) shaped like a real system's: lognormal around
    2 us, and 0.5% of requests hit a slow path 50-500 us long."""
    n = int_arg(n, "n", minimum=1, maximum=MAX_SCHEDULE)
    rng = np.random.default_rng(int_arg(seed, "seed", minimum=0))
    base = rng.lognormal(np.log(2_000), 0.25, n)
    slow = rng.random(n) < 0.005
    return np.round(base + slow * rng.uniform(50_000, 500_000, n)).astype(np.int64)


# ---- coordinated omission -------------------------------------------------------------


@dataclass
class OmissionScenario:
    """A load meant to send one request every ``interval_ns``, against a
    server that answers in ``service_ns`` but stalls once for ``stall_ns``.

    - ``naive``: what a closed-loop tester records: it waits for each answer
      before sending the next, so the stall is *one* sample;
    - ``truth``: every request the schedule called for, timed from its due
      time (what users would have seen);
    - ``corrected``: the naive samples re-weighted with the interval
      (``Histogram.record_many_corrected``), no knowledge of the truth."""

    interval_ns: int
    service_ns: int
    stall_ns: int
    naive: np.ndarray = field(repr=False)
    truth: np.ndarray = field(repr=False)

    def histograms(self) -> dict[str, Histogram]:
        h = {k: Histogram(1, HOUR_NS, 3) for k in ("naive", "corrected", "truth")}
        h["naive"].record_many(self.naive)
        h["corrected"].record_many_corrected(self.naive, self.interval_ns)
        h["truth"].record_many(self.truth)
        return h


def omission_scenario(
    requests: int = 10_000,
    interval_ns: int = 10_000_000,
    service_ns: int = 1_000_000,
    stall_ns: int = 100_000_000_000,
    stall_at: int | None = None,
) -> OmissionScenario:
    """The HdrHistogram README's example by default: 10,000 requests at
    1 ms each, one every 10 ms (100 s), then one 100 s stall."""
    # ns values stay far inside int64, the arrays' type: at most 10**15 ns (11.6 days) each.
    requests = int_arg(requests, "requests", minimum=1, maximum=MAX_SCHEDULE)
    interval_ns = int_arg(interval_ns, "interval_ns", minimum=1, maximum=10**15)
    service_ns = int_arg(service_ns, "service_ns", minimum=1, maximum=10**15)
    stall_ns = int_arg(stall_ns, "stall_ns", minimum=0, maximum=10**15)
    at = requests if stall_at is None else int_arg(stall_at, "stall_at", minimum=0, maximum=requests)
    scheduled = ((requests + 1) * interval_ns + stall_ns) // interval_ns + 1
    if max(requests, scheduled) > MAX_SCHEDULE:
        raise ValueError(
            f"the schedule would hold {max(requests, scheduled):,} requests (requests={requests:,}, stall "
            f"{stall_ns:,} ns at one every {interval_ns:,} ns); at most {MAX_SCHEDULE:,} are allowed "
            "(a longer interval_ns, a shorter stall_ns, or fewer requests)"
        )
    # The closed-loop tester: `requests` answers, and the stall as one more sample.
    naive = np.full(requests + 1, service_ns, dtype=np.int64)
    naive[at] = service_ns + stall_ns
    # The schedule: requests due every interval for as long as the test lasted.
    span = (requests + 1) * interval_ns + stall_ns
    due = np.arange(0, span, interval_ns, dtype=np.int64)
    stall_start = at * interval_ns
    free_at = np.where((due >= stall_start) & (due < stall_start + stall_ns), stall_start + stall_ns, due)
    truth = free_at - due + service_ns
    return OmissionScenario(interval_ns, service_ns, stall_ns, naive, truth)


# ---- counters: perf when it works, getrusage and cachegrind when it does not ----------------


@dataclass
class PerfStat:
    available: bool
    reason: str
    counters: dict[str, str] = field(default_factory=dict)  # event -> value or "<not supported>"
    # True when perf counted user space only (a non-root user: events come back
    # as "task-clock:u"): then context switches and migrations, which happen in
    # the kernel, read 0 whether or not any happened.
    user_only: bool = False


def perf_stat(
    cmd: list[str],
    events: tuple[str, ...] = (
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
        "cycles",
        "instructions",
        "cache-misses",
    ),
) -> PerfStat:
    """Runs ``cmd`` under ``perf stat`` and returns each event's count, or
    why there is none.  Software events (task-clock, context switches,
    migrations, faults) work even in VMs; hardware ones usually do not
    there.  As a user (not root) perf counts user space only and names the
    events ``task-clock:u``; they are reported under their plain names and
    ``user_only`` is set: a 0 for context switches or migrations then means
    "not counted", not "none happened"."""
    if isinstance(cmd, (str, bytes)) or not isinstance(cmd, (list, tuple)) or not cmd:
        raise TypeError(f"cmd must be a non-empty list of strings (a program and its arguments), got {cmd!r}")
    if not all(isinstance(c, str) for c in cmd):
        raise TypeError(f"cmd must be a list of strings, got {cmd!r}")
    if isinstance(events, (str, bytes)) or not isinstance(events, (list, tuple)) or not events:
        raise TypeError(f"events must be a non-empty tuple of perf event names, got {events!r:.60}")
    if not all(isinstance(e, str) and re.fullmatch(r"[\w:./-]+", e) for e in events):
        raise ValueError(f"events must be perf event names such as 'task-clock', got {events!r:.80}")
    perf = shutil.which("perf")
    if perf is None:
        return PerfStat(False, "perf is not installed (Debian: apt-get install linux-perf)")
    res = subprocess.run(
        [perf, "stat", "-x", ",", "-e", ",".join(events), "--", *cmd], capture_output=True, text=True, timeout=300
    )
    counters = {}
    user_only = False
    for line in res.stderr.splitlines():
        parts = line.split(",")
        full = parts[2] if len(parts) >= 3 else ""
        name, _, modifier = full.partition(":")  # a user's events come back as "task-clock:u"
        if name in events:
            counters[name] = parts[0]
            user_only = user_only or modifier == "u"
    if not counters:
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        return PerfStat(False, f"perf stat could not count here: {tail}")
    missing = [e for e in events if counters.get(e, "<not counted>").startswith("<")]
    counted = [e for e in events if e not in missing]
    reason = (
        f"all {len(events)} events counted"
        if not missing
        else f"counted: {', '.join(counted) or 'none'}; {counters.get(missing[0], '<not counted>')} here: "
        f"{', '.join(missing)} (hardware events are usually missing in VMs and containers)"
    )
    if user_only:
        reason += "; user space only (perf as a non-root user: the kernel's part, switches and migrations, not counted)"
    return PerfStat(True, reason, counters, user_only)


@dataclass
class Cachegrind:
    available: bool
    reason: str
    d1_miss_rate: dict[str, float] = field(default_factory=dict)  # "row" / "column" -> % of data accesses
    lld_miss_rate: dict[str, float] = field(default_factory=dict)  # last-level data miss %


# A fixed cache geometry for cachegrind (size,associativity,line bytes):
# passed as --I1/--D1/--LL, it makes the simulated misses the same on every
# machine; without it cachegrind copies this host's geometry.
FIXED_GEOMETRY = {"I1": "32768,8,64", "D1": "32768,8,64", "LL": "8388608,16,64"}


def cachegrind_demo(timeout_s: float = 120, geometry: dict[str, str] | None = None) -> Cachegrind:
    """Sums a 512 x 512 matrix of doubles (2 MiB) by rows and by columns
    (``csrc/demos/cache_walk.c``) under ``valgrind --tool=cachegrind
    --cache-sim=yes``: misses from cachegrind's model (first-level caches and
    one last level, LRU, no hardware prefetchers), counters or not.  The
    model's sizes are this host's unless ``geometry`` gives them
    (:data:`FIXED_GEOMETRY` for numbers that do not depend on the machine)."""
    timeout_s = finite_arg(timeout_s, "timeout_s", positive=True)
    if timeout_s > 3600:
        raise ValueError(f"timeout_s must be <= 3600 (an hour), got {timeout_s!r}")
    if geometry is not None and not isinstance(geometry, dict):
        raise TypeError(f"geometry must map I1/D1/LL to 'size,assoc,line' strings, got {type(geometry).__name__}")
    geo = dict(geometry or {})
    unknown = sorted(set(geo) - {"I1", "D1", "LL"})
    if unknown or not all(isinstance(v, str) and re.fullmatch(r"\d+,\d+,\d+", v) for v in geo.values()):
        raise ValueError(f"geometry maps I1/D1/LL to 'size,assoc,line' strings, got {geometry!r}")
    try:
        vg, cc = shutil.which("valgrind"), toolchain.c_compiler()
    except RuntimeError as exc:  # $CC names no program
        return Cachegrind(False, str(exc))
    if vg is None:
        return Cachegrind(False, "valgrind is not installed (Debian: apt-get install valgrind)")
    if cc is None:
        return Cachegrind(False, "no C compiler to build the demo")
    src = toolchain.DEMOS / "cache_walk.c"
    if not src.exists():
        return Cachegrind(False, f"{src} not found: the demo needs the course repository (csrc/demos/)")
    out = Cachegrind(
        True,
        "simulated by cachegrind, "
        + (f"geometry {', '.join(f'{k} {v}' for k, v in geo.items())}" if geo else "with this host's cache geometry"),
    )
    with tempfile.TemporaryDirectory(prefix="lowlat-cg-") as tmp:
        exe = Path(tmp) / "cache_walk"
        # -O1 (after the toolchain's -O2): the loops stay as written, one load per element.
        build = toolchain.compile_c([src], exe, extra=["-O1"], cc=cc)
        if build.returncode != 0:
            return Cachegrind(False, f"building {src.name} failed: {build.stderr.strip()[-200:]}")
        for mode in ("row", "column"):
            res = subprocess.run(
                [
                    vg,
                    "--tool=cachegrind",
                    "--cache-sim=yes",
                    *(f"--{k}={v}" for k, v in geo.items()),
                    f"--cachegrind-out-file={tmp}/cg.out",
                    str(exe),
                    mode[0],
                ],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
            d1 = re.search(r"D1\s+miss rate:\s+([\d.]+)%", res.stderr)
            ll = re.search(r"LLd\s+miss rate:\s+([\d.]+)%", res.stderr)
            if d1 is None:
                return Cachegrind(False, f"cachegrind gave no miss rates: {res.stderr.strip()[-200:]}")
            out.d1_miss_rate[mode] = float(d1.group(1))
            out.lld_miss_rate[mode] = float(ll.group(1)) if ll else float("nan")
    return out


__all__ = [
    "MAX_SCHEDULE",
    "Cachegrind",
    "Decision",
    "GateResult",
    "MetricGate",
    "NoiseGate",
    "OmissionScenario",
    "PerfStat",
    "cachegrind_demo",
    "decide",
    "gate",
    "heavy_tailed",
    "latency_percentiles",
    "noise_gate",
    "omission_scenario",
    "perf_stat",
    "repeat_ns",
]
