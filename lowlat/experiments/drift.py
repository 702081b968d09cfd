"""Drift, with a positive control (chapter 05b's lesson): a short soak of the
real C pipeline whose work grows on purpose
(:attr:`lowlat.core.pipeline.Faults.grow_ns_per_s`), or whose process leaks
memory on purpose (``leak_mib``: this process allocates and touches that
many MiB at a steady rate, in 64 KiB pieces), is flagged by the soak's drift
rule (:mod:`lowlat.experiments.drift_rule`); the same run without injection
is not.

Both runs are one background run each
(:func:`lowlat.core.pipeline.start` with ``intervals=True``, as the soak
runs), cut every ``seconds / intervals``: per interval the P99 (us, from
each tick's due time; one below :data:`P99_TOLERANCE_US` is read as it)
and the RSS (MiB).  The threshold comes from the
clean run's interval-to-interval noise (its consecutive intervals as an A/A
band, chapter 04a's rule: 1 + reach + 5% margin), printed with the verdict.

Why growing work shows with a margin: once a tick's work passes the tick
period (``1 / rate``), the consumer falls behind and the backlog, hence the
latency, grows each interval; the default growth crosses the period about
two thirds into the run (75,000 ns per tick per s reaches the 100 us period
of 10,000 ticks/s at 1.33 s of 2 s).  On one CPU the two threads take turns, which
widens the clean run's noise; the injected growth still dominates (it is
work, not timing), so the outcome is the same, said in the reading.
The pipeline is :func:`lowlat.experiments.pipeline.demo_config`.
"""

from __future__ import annotations

import mmap
import time
from dataclasses import dataclass

from lowlat.core.affinity import usable_cpus
from lowlat.core.argcheck import real_arg
from lowlat.core.pipeline import Faults, start
from lowlat.core.pipeline_faults import MAX_GROW_NS_PER_S
from lowlat.core.validate import int_arg
from lowlat.experiments.alert import rss_mib
from lowlat.experiments.drift_rule import MIN_INTERVALS, DriftReading, interval_noise, read_drift
from lowlat.experiments.pipeline import demo_config

MIB = 1 << 20
LEAK_PIECE = 64 << 10  # bytes per leaked piece: 16 pages, some 20 us of page faults, never a stall
# A per-interval P99 below this (us) is read as this: the yielding hand-off's own jitter moves a P99 of a few
# us by several times from interval to interval, a "drift" of microseconds that no soak cares about.
P99_TOLERANCE_US = 20.0


@dataclass(frozen=True)
class Series:
    """One run's intervals: ``p99_us`` (us, at least :data:`P99_TOLERANCE_US`) and ``rss_mib`` (MiB)."""

    p99_us: tuple[float, ...]
    rss_mib: tuple[float, ...]


@dataclass(frozen=True)
class Drift:
    """The clean run and the injected one, read by the drift rule against
    the clean run's interval-to-interval noise.  ``injected``: what was
    injected (words); ``one_cpu``: the runs had one usable CPU."""

    injected: str
    rate: float
    seconds: float
    clean: Series
    drifting: Series
    clean_p99: DriftReading
    drifting_p99: DriftReading
    clean_rss: DriftReading
    drifting_rss: DriftReading
    one_cpu: bool

    @property
    def detected(self) -> bool:
        """The injected run was flagged (its P99 or its RSS drifted)."""
        return self.drifting_p99.drift or self.drifting_rss.drift

    @property
    def false_alarm(self) -> bool:
        """The clean run was flagged."""
        return self.clean_p99.drift or self.clean_rss.drift

    @property
    def shown(self) -> bool:
        return self.detected and not self.false_alarm

    def reading(self) -> str:
        """Each series' drift line (threshold and origin included), then the verdict."""
        lines = [
            f"drift, {self.seconds:g} s at {self.rate:,.0f} ticks/s, {len(self.clean.p99_us)} intervals; "
            f"injected: {self.injected}; a P99 under {P99_TOLERANCE_US:g} us is read as {P99_TOLERANCE_US:g} us",
            "  clean    " + self.clean_p99.text(),
            "  clean    " + self.clean_rss.text(),
            "  injected " + self.drifting_p99.text(),
            "  injected " + self.drifting_rss.text(),
        ]
        if self.shown:
            said = {"none": "no drift", "opposite": "falling"}.get(self.clean_p99.verdict.kind, "cannot decide")
            t = self.clean_p99.threshold.factor
            lines.append(
                f"  -> the injected drift was flagged, the clean run was not (its P99: {said}): the rule sees a drift "
                f"it is shown; with a threshold of {t:.2f}x from the clean run's noise, a run this short sees only a "
                f"P99 that grows more than {t:.2f}x from the early intervals to the late ones"
            )
        elif self.false_alarm:
            lines.append("  -> the clean run was flagged too: this machine's noise moved during it; run longer")
        else:
            lines.append("  -> the injected drift was not flagged: its trend stayed within the clean run's noise")
        if self.one_cpu:
            lines.append(
                "  one usable CPU: the threads take turns, which widens the clean run's noise; the injected work "
                "still grows the backlog, so the outcome is the same"
            )
        return "\n".join(lines)


def _soak(cfg_faults: Faults, rate: float, seconds: float, intervals: int, leak_mib: float) -> Series:
    """One background run cut ``intervals`` times; ``leak_mib`` MiB allocated
    and touched at a steady rate, in pieces of :data:`LEAK_PIECE` bytes: one
    large piece per interval would hold a CPU for milliseconds of page
    faults, a stall in every interval that hides the growing work's trend."""
    cfg = demo_config(max(1, round(rate * seconds)), rate, faults=cfg_faults)
    total = round(leak_mib * MIB)
    pieces = -(-total // LEAK_PIECE) if total else 0  # ceil: the whole leak, in equal pieces
    piece = total // pieces if pieces else 0
    leaked: list[mmap.mmap] = []
    p99: list[float] = []
    rss: list[float] = []
    every = seconds / intervals
    done = 0
    with start(cfg, intervals=True) as run:
        t0 = time.monotonic()
        for k in range(intervals):
            end = t0 + (k + 1) * every
            due = pieces * (k + 1) // intervals  # the pieces due by the end of this interval
            while done < due:
                leaked.append(_fresh_pages(piece))
                done += 1
                # the next piece is due one spacing later: sleep until then (the leak is a steady trickle)
                time.sleep(max(0.0, t0 + done * seconds / pieces - time.monotonic()))
            time.sleep(max(0.0, end - time.monotonic()))
            lat = run.cut().latency
            p99.append(max(lat.percentile(99) / 1e3, P99_TOLERANCE_US) if lat.count else P99_TOLERANCE_US)
            rss.append(rss_mib()[0])
    for m in leaked:
        m.close()
    return Series(tuple(p99), tuple(rss))


def _fresh_pages(size: int) -> mmap.mmap:
    """``size`` bytes of new anonymous memory, every page written (resident).
    Its own mapping, not the heap: malloc would first reuse memory this
    process freed earlier, which is resident already, and the RSS would not
    move (a leak that RSS does not show until the free memory is used up)."""
    m = mmap.mmap(-1, size)
    m.write(b"\x01" * size)
    return m


def drift(
    grow_ns_per_s: int = 75_000,
    *,
    leak_mib: float = 0.0,
    rate: float = 10_000.0,
    seconds: float = 2.0,
    intervals: int = 8,
) -> Drift:
    """A clean run, then the same run with ``grow_ns_per_s`` (0-1,000,000
    ns of extra work per tick per second) and ``leak_mib`` (0-4,096 MiB
    allocated over the run), each ``seconds`` (0.5-3,600: a chapter may run
    it for minutes) at ``rate`` ticks/s (1,000-200,000), cut into
    ``intervals`` intervals (6-1,000, each at least 0.05 s).  At least one
    injection must be asked for.  Returns both runs read by the drift rule."""
    grow_ns_per_s = int_arg(grow_ns_per_s, "grow_ns_per_s", minimum=0, maximum=MAX_GROW_NS_PER_S)
    leak_mib = real_arg(leak_mib, "leak_mib", minimum=0.0, maximum=4096.0)
    rate = real_arg(rate, "rate", minimum=1_000.0, maximum=200_000.0)
    seconds = real_arg(seconds, "seconds", minimum=0.5, maximum=3_600.0)
    intervals = int_arg(intervals, "intervals", minimum=MIN_INTERVALS, maximum=1_000)
    if seconds / intervals < 0.05:
        raise ValueError(f"intervals {intervals} makes intervals of {seconds / intervals:g} s; at least 0.05 s each")
    if not grow_ns_per_s and not leak_mib:
        raise ValueError("grow_ns_per_s and leak_mib are both 0: inject one of them (a drift to detect)")
    clean = _soak(Faults(), rate, seconds, intervals, 0.0)
    drifting = _soak(Faults(grow_ns_per_s=grow_ns_per_s), rate, seconds, intervals, leak_mib)
    p99_noise, rss_noise = interval_noise(clean.p99_us, "P99"), interval_noise(clean.rss_mib, "RSS")
    parts = []
    if grow_ns_per_s:
        parts.append(f"work growing {grow_ns_per_s:,} ns per tick per s (tick period {1e9 / rate:,.0f} ns)")
    if leak_mib:
        parts.append(f"a leak of {leak_mib:g} MiB over the run")
    origin = "the clean run's interval-to-interval band"
    return Drift(
        ", ".join(parts),
        rate,
        seconds,
        clean,
        drifting,
        read_drift("P99", clean.p99_us, unit="us", noise=p99_noise, origin=origin),
        read_drift("P99", drifting.p99_us, unit="us", noise=p99_noise, origin=origin),
        read_drift("RSS", clean.rss_mib, unit="MiB", noise=rss_noise, origin=origin),
        read_drift("RSS", drifting.rss_mib, unit="MiB", noise=rss_noise, origin=origin),
        len(usable_cpus()) < 2,
    )


__all__ = ["LEAK_PIECE", "P99_TOLERANCE_US", "Drift", "Series", "drift"]
