"""Honest measurement (chapter 04): repetitions and warm-up, heavy tails,
coordinated omission, hardware counters and what to use without them, the
decision path from a result to its suspects, and a noise-aware regression
gate.  Times are in ns unless a name says otherwise."""

from __future__ import annotations

import math
import numbers
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
from lowlat.core.hist import HOUR_NS, Histogram
from lowlat.core.validate import int_arg
from lowlat.method.interleave import interleave, ratios

# The most requests a scenario's schedule may hold (numpy arrays of int64).
MAX_SCHEDULE = 10**8


def _number(value: object, name: str, *, positive: bool = False) -> float:
    """A finite real number >= 0 (> 0 with ``positive``); NaN, inf,
    negatives and non-numbers are refused, naming ``name``."""
    allowed = "a finite number > 0" if positive else "a finite number >= 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v


def _callable(fn: object, name: str) -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be a function to call (no arguments), got {type(fn).__name__} {fn!r}")


def repeat_ns(fn: Callable[[], object], repeats: int) -> np.ndarray:
    """Runs ``fn`` ``repeats`` times, no warm-up; each run's time (ns)."""
    _callable(fn, "fn")
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
    _number(timeout_s, "timeout_s", positive=True)
    geo = dict(geometry or {})
    unknown = sorted(set(geo) - {"I1", "D1", "LL"})
    if unknown or not all(isinstance(v, str) and re.fullmatch(r"\d+,\d+,\d+", v) for v in geo.values()):
        raise ValueError(f"geometry maps I1/D1/LL to 'size,assoc,line' strings, got {geometry!r}")
    vg, cc = shutil.which("valgrind"), toolchain.c_compiler()
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


# ---- the decision path --------------------------------------------------------------------


@dataclass
class Decision:
    """What a result says, and where to look."""

    case: str
    finding: str
    suspects: list[str]
    evidence: str

    def format(self) -> str:
        return f"{self.case}: {self.finding}\n  evidence: {self.evidence}\n  suspects: " + "; ".join(self.suspects)


def decide(
    case: str,
    p50_ns: float,
    p99_ns: float,
    *,
    p50_budget_ns: float,
    p99_budget_ns: float,
    items_per_s: float | None = None,
    target_items_per_s: float | None = None,
) -> Decision:
    """The source's decision path: high P99 with a low P50 -> occasional
    slow events; a high P50 -> the work done per item; good latency but low
    throughput -> not enough parallelism, or I/O.  Every number must be
    finite (a NaN would compare as "within budget"), latencies >= 0 and
    budgets > 0, with P99 >= P50."""
    p50_ns = _number(p50_ns, "p50_ns")
    p99_ns = _number(p99_ns, "p99_ns")
    p50_budget_ns = _number(p50_budget_ns, "p50_budget_ns", positive=True)
    p99_budget_ns = _number(p99_budget_ns, "p99_budget_ns", positive=True)
    if p99_ns < p50_ns:
        raise ValueError(f"p99_ns ({p99_ns:,.0f}) is below p50_ns ({p50_ns:,.0f}): no sample has that; swapped?")
    if (items_per_s is None) != (target_items_per_s is None):
        raise ValueError("give items_per_s and target_items_per_s together (or neither)")
    if items_per_s is not None and target_items_per_s is not None:
        items_per_s = _number(items_per_s, "items_per_s")
        target_items_per_s = _number(target_items_per_s, "target_items_per_s", positive=True)
    ev = f"P50 {p50_ns:,.0f} ns (budget {p50_budget_ns:,.0f}), P99 {p99_ns:,.0f} ns (budget {p99_budget_ns:,.0f})"
    if items_per_s is not None and target_items_per_s is not None:
        ev += f", {items_per_s / 1e6:,.2f} M items/s (target {target_items_per_s / 1e6:,.2f})"
    if p50_ns > p50_budget_ns:
        return Decision(
            case,
            "high P50: every item is slow",
            [
                "the work per item: algorithm, data layout, cache misses (profile the common path)",
                "per-call overhead that batching would amortise",
            ],
            ev,
        )
    if p99_ns > p99_budget_ns:
        return Decision(
            case,
            f"high P99 with a low P50 (P99/P50 = {p99_ns / max(p50_ns, 1):,.0f}x): occasional slow events",
            [
                "allocation (malloc on a fragmented heap)",
                "system calls",
                "locks and their contention",
                "page faults (first touch)",
                "preemption and interrupts",
            ],
            ev,
        )
    if items_per_s is not None and target_items_per_s is not None and items_per_s < target_items_per_s:
        return Decision(
            case,
            "latency within budget, throughput too low",
            ["parallelism: more consumers, sharding, pipelining", "I/O or hand-off costs per item: batch them"],
            ev,
        )
    return Decision(case, "within budget", ["nothing to chase: measure again under the real load"], ev)


# ---- a benchmark regression gate -----------------------------------------------------------


@dataclass
class GateResult:
    """Candidate vs baseline, measured interleaved in one run.  ``ratios``:
    candidate / baseline per round (> 1: the candidate is slower)."""

    name: str
    ratios: np.ndarray = field(repr=False)
    threshold: float

    @property
    def median(self) -> float:
        return float(np.median(self.ratios))

    @property
    def spread(self) -> tuple[float, float]:
        """The middle half of the ratios (quartiles): the run's own noise."""
        return float(np.percentile(self.ratios, 25)), float(np.percentile(self.ratios, 75))

    @property
    def verdict(self) -> str:
        lo, hi = self.spread
        if lo > 1 + self.threshold:
            return "REGRESSION"
        if hi < 1 - self.threshold:
            return "IMPROVEMENT"
        return "no change beyond noise"

    def format(self) -> str:
        lo, hi = self.spread
        return (
            f"{self.name}: {self.verdict} (candidate/baseline median {self.median:.2f}x, middle half "
            f"{lo:.2f}-{hi:.2f}x, threshold +-{self.threshold:.0%}, {len(self.ratios)} rounds)"
        )


def gate(
    name: str,
    baseline: Callable[[], float],
    candidate: Callable[[], float],
    *,
    rounds: int = 9,
    threshold: float = 0.10,
) -> GateResult:
    """Runs ``baseline`` and ``candidate`` (each returns a cost, e.g. ns per
    op) interleaved, alternating which goes first, for ``rounds`` rounds
    (:func:`lowlat.method.interleave.interleave`).
    A regression is declared only when the *lower quartile* of the ratios is
    above 1 + threshold: the candidate was slower in most rounds, by more
    than the threshold, so one lucky or unlucky round cannot decide it.
    Each call must return a finite cost > 0: a NaN, 0 or negative one raises
    (it would read as "no change" or "IMPROVEMENT")."""
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=10_000)
    _callable(baseline, "baseline")
    _callable(candidate, "candidate")
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"threshold must be a number in (0, 1), got {type(threshold).__name__} {threshold!r}")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")

    def checked(which: str, fn: Callable[[], float]) -> Callable[[], float]:
        def run() -> float:
            c = fn()
            if isinstance(c, (bool, np.bool_)) or not isinstance(c, numbers.Real) or not (math.isfinite(c) and c > 0):
                raise ValueError(f"{which} returned {c!r}: costs must be finite numbers > 0 (e.g. ns per op)")
            return float(c)

        return run

    costs = interleave(
        {"baseline": checked("baseline", baseline), "candidate": checked("candidate", candidate)}, rounds
    )
    return GateResult(name, np.array(ratios(costs["candidate"], costs["baseline"])), threshold)


@dataclass
class MetricGate:
    """One metric of a :class:`NoiseGate` (e.g. "p99"): per-round ratios
    (> 1: slower than the baseline) of the candidate and of the A/A pair,
    and the threshold the A/A spread set."""

    metric: str
    ratios: np.ndarray = field(repr=False)
    aa_ratios: np.ndarray = field(repr=False)
    margin: float

    @staticmethod
    def _q(x: np.ndarray) -> tuple[float, float]:
        return float(np.percentile(x, 25)), float(np.percentile(x, 75))

    @property
    def spread(self) -> tuple[float, float]:
        """The middle half (quartiles) of candidate / baseline."""
        return self._q(self.ratios)

    @property
    def aa_spread(self) -> tuple[float, float]:
        """The middle half of baseline / baseline: this run's noise."""
        return self._q(self.aa_ratios)

    @property
    def noise(self) -> float:
        """How far the A/A middle half reaches from 1 (0.08: 8%)."""
        lo, hi = self.aa_spread
        return max(hi - 1, 1 - lo, 0.0)

    @property
    def threshold(self) -> float:
        """The A/A noise plus the margin: what a change must exceed."""
        return self.noise + self.margin

    @property
    def verdict(self) -> str:
        lo, hi = self.spread
        if lo > 1 + self.threshold:
            return "REGRESSION"
        if hi < 1 / (1 + self.threshold):
            return "IMPROVEMENT"
        return "no change beyond noise"

    def format(self) -> str:
        lo, hi = self.spread
        alo, ahi = self.aa_spread
        return (
            f"{self.metric}: {self.verdict} (candidate/baseline median {float(np.median(self.ratios)):.2f}x, "
            f"middle half {lo:.2f}-{hi:.2f}x; A/A middle half {alo:.2f}-{ahi:.2f}x, so the threshold is "
            f"+{self.threshold:.0%} = noise {self.noise:.0%} + margin {self.margin:.0%})"
        )


@dataclass
class NoiseGate:
    """A regression gate whose threshold comes from the run itself: the
    baseline against itself (A/A) and against the candidate, interleaved
    in the same rounds, one :class:`MetricGate` per metric."""

    name: str
    rounds: int
    metrics: dict[str, MetricGate]

    @property
    def verdict(self) -> str:
        """REGRESSION if any metric regressed; else IMPROVEMENT if any
        improved; else no change beyond noise."""
        v = [g.verdict for g in self.metrics.values()]
        return "REGRESSION" if "REGRESSION" in v else ("IMPROVEMENT" if "IMPROVEMENT" in v else v[0])

    def format(self) -> str:
        return f"{self.name} ({self.rounds} rounds): {self.verdict}\n" + "\n".join(
            "  " + g.format() for g in self.metrics.values()
        )


def latency_percentiles(samples_ns: object, percentiles: tuple[float, ...] = (50, 99)) -> dict[str, float]:
    """``{"p50": ..., "p99": ...}`` (ns) of an array of latencies, or of a
    :class:`lowlat.core.hist.Histogram`: the input of :func:`noise_gate`."""
    if isinstance(samples_ns, Histogram):
        return {f"p{p:g}": float(samples_ns.percentile(p)) for p in percentiles}
    arr = np.asarray(samples_ns, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("no latency samples to take percentiles of")
    return {f"p{p:g}": float(np.percentile(arr, p)) for p in percentiles}


def noise_gate(
    name: str,
    baseline: Callable[[], dict[str, float]],
    candidate: Callable[[], dict[str, float]],
    *,
    rounds: int = 9,
    margin: float = 0.05,
) -> NoiseGate:
    """The gate CI should run on tail latency: ``baseline`` twice (A and
    A') and ``candidate`` (B), interleaved, alternating the order, for
    ``rounds`` rounds.  Each call returns costs by metric, e.g.
    ``{"p50": ns, "p99": ns}`` (:func:`latency_percentiles`).  For each
    metric, A'/A per round measures this run's noise; the threshold is how
    far the middle half of A'/A reaches from 1, plus ``margin``; B
    regressed on that metric when the *lower quartile* of B/A is above
    1 + threshold (slower in most rounds, by more than the noise and the
    margin).  A P99 rests on the few slowest samples of a round, so it is
    usually noisier than a P50 and its threshold is expected to come out
    wider; the A/A rounds decide, per metric and per run (a quiet run can
    give the P99 a threshold as narrow as the P50's, or narrower)."""
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=10_000)
    _callable(baseline, "baseline")
    _callable(candidate, "candidate")
    if isinstance(margin, (bool, np.bool_)) or not isinstance(margin, numbers.Real):
        raise TypeError(f"margin must be a number in [0, 1), got {type(margin).__name__} {margin!r}")
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")

    def checked(which: str, fn: Callable[[], dict[str, float]]) -> Callable[[], dict[str, float]]:
        def run() -> dict[str, float]:
            out = fn()
            if not isinstance(out, dict) or not out:
                raise TypeError(f"{which} must return a dict of metric -> cost (e.g. {{'p99': ns}}), got {out!r}")
            for k, c in out.items():
                if (
                    isinstance(c, (bool, np.bool_))
                    or not isinstance(c, numbers.Real)
                    or not (math.isfinite(c) and c > 0)
                ):
                    raise ValueError(f"{which} returned {k}={c!r}: costs must be finite numbers > 0 (e.g. ns)")
            return {k: float(c) for k, c in out.items()}

        return run

    got = interleave(
        {"A": checked("baseline", baseline), "A'": checked("baseline", baseline), "B": checked("candidate", candidate)},
        rounds,
    )
    keys = list(got["A"][0])
    if any(list(r) != keys for series in got.values() for r in series):
        raise ValueError(f"baseline and candidate must return the same metrics every call; first call gave {keys}")
    metrics = {
        k: MetricGate(
            k,
            np.array(ratios([r[k] for r in got["B"]], [r[k] for r in got["A"]])),
            np.array(ratios([r[k] for r in got["A'"]], [r[k] for r in got["A"]])),
            float(margin),
        )
        for k in keys
    }
    return NoiseGate(name, rounds, metrics)


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
