"""The live alert rule on the pipeline's counters (chapter 05b).

The C pipeline publishes live counters (made, processed, dropped, the ring's
high-watermark) that a monitor reads while it runs (:func:`lowlat.core.pipeline.start`,
:meth:`~lowlat.core.pipeline.Running.snapshot`), and closes an interval on request
(:meth:`~lowlat.core.pipeline.Running.cut`).  Python only polls.

:class:`AlertRule` and :func:`watch`: the rule "any drop, or the ring more
than 80% full" evaluated every ``poll_s`` (50 ms) on the window since the
previous poll; :class:`AlertLog` says when it fired and for how long.  Times
in seconds since the run's start.  :func:`watch` owns nothing: it neither
stops nor joins the run it watches.
"""

from __future__ import annotations

import math
import numbers
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from lowlat.core.pipeline import PipelineConfig, Running, Snapshot
from lowlat.core.validate import int_arg
from lowlat.experiments.pipeline import best_config

# Overload and normal load for the alert demo: the same pipeline (a consumer
# with 20 us of work per tick: at most 50,000 ticks/s on one CPU, drop when
# full); only the rate differs.  200,000/s asks four times what the consumer
# can do; 2,000/s asks 4% of it (the ring fills to 80% only if the consumer
# stops for 0.4 s).
ALERT_WORK_NS = (0, 20_000, 0, 0)
OVERLOAD_RATE = 200_000.0
NORMAL_RATE = 2_000.0


def alert_config(rate: float, seconds: float) -> PipelineConfig:
    """The alert demo's pipeline at ``rate`` ticks/s for ``seconds`` s (see
    :data:`ALERT_WORK_NS`), keeping no raw samples."""
    s, r = _number(seconds, "seconds"), _number(rate, "rate")
    if not 0 < s <= 3600:
        raise ValueError(f"seconds must be in (0, 3600], got {seconds!r}")
    base = best_config(ticks=1_000, rate=r)
    return replace(
        base, ticks=max(1, round(r * s)), work_ns=ALERT_WORK_NS, when_full="drop", sample_capacity=0
    ).validate(background=True)


def _number(x: object, name: str) -> float:
    """``x`` as a finite float (bools and non-numbers refused), naming ``name``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    if not math.isfinite(float(x)):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return float(x)


def rss_mib() -> tuple[float, str]:
    """This process's resident memory (MiB) and where it came from: the
    current RSS from /proc/self/statm (Linux), else the peak RSS so far from
    getrusage (macOS reports bytes, Linux KiB)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20, "current (/proc/self/statm)"
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return (peak / 2**20 if sys.platform == "darwin" else peak / 1024), "peak so far (getrusage)"


@dataclass(frozen=True)
class AlertRule:
    """Fires on a window with any drop, or with the ring's highest occupancy
    above ``max_fraction`` (in (0, 1]) of its capacity."""

    max_fraction: float = 0.8

    def __post_init__(self) -> None:
        f = _number(self.max_fraction, "max_fraction")
        if not 0 < f <= 1:
            raise ValueError(f"max_fraction must be in (0, 1] (a fraction of the ring), got {self.max_fraction!r}")

    def reasons(self, dropped: int, watermark: int, capacity: int) -> list[str]:
        """Why the rule fires on a window (empty: silent): ``dropped`` ticks
        (>= 0), the ring's highest occupancy ``watermark`` (0..capacity
        ticks) and its ``capacity`` (>= 1 ticks)."""
        d = int_arg(dropped, "dropped", minimum=0)
        cap = int_arg(capacity, "capacity", minimum=1)
        wm = int_arg(watermark, "watermark", minimum=0, maximum=cap)
        why = []
        if d > 0:
            why.append(f"{d:,} dropped")
        if wm > self.max_fraction * cap:
            why.append(f"ring {wm / cap:.0%} full > {self.max_fraction:.0%}")
        return why
        return why

    def describe(self) -> str:
        return f"any drop, or the ring more than {self.max_fraction:.0%} full"


@dataclass(frozen=True)
class Window:
    """One poll of :func:`watch`: the window [start_s, end_s) (s since the
    start), its drops and highest occupancy (ticks), and the rule's reasons
    (empty: silent)."""

    start_s: float
    end_s: float
    dropped: int
    watermark: int
    capacity: int
    reasons: tuple[str, ...]

    @property
    def firing(self) -> bool:
        return bool(self.reasons)


@dataclass
class AlertLog:
    """What :func:`watch` saw: every window, and the rule it applied."""

    rule: AlertRule
    poll_s: float
    windows: list[Window] = field(default_factory=list)
    last: Snapshot | None = None  # the last snapshot taken

    @property
    def fired(self) -> bool:
        return any(w.firing for w in self.windows)

    @property
    def spans(self) -> list[tuple[float, float]]:
        """The alert's firing spans (start_s, end_s): consecutive firing windows merged."""
        out: list[tuple[float, float]] = []
        for w in self.windows:
            if not w.firing:
                continue
            if out and math.isclose(out[-1][1], w.start_s):
                out[-1] = (out[-1][0], w.end_s)
            else:
                out.append((w.start_s, w.end_s))
        return out

    def report(self) -> str:
        """The alert's history in a few lines (times in s since the run's start)."""
        n = len(self.windows)
        head = f"rule: {self.rule.describe()}; {n} windows of ~{self.poll_s * 1e3:.0f} ms"
        if not self.fired:
            return head + "\n  SILENT: no window fired"
        lines = [head]
        for a, b in self.spans:
            ws = [w for w in self.windows if a <= w.start_s and w.end_s <= b]
            drops = sum(w.dropped for w in ws)
            wm = max(w.watermark for w in ws) / ws[0].capacity
            lines.append(
                f"  FIRING from t = {a:.3f} s to {b:.3f} s ({b - a:.3f} s, {len(ws)} windows): "
                f"{drops:,} dropped, ring up to {wm:.0%} full"
            )
        return "\n".join(lines)


def watch(
    running: Running,
    rule: AlertRule | None = None,
    poll_s: float = 0.05,
    *,
    until_s: float | None = None,
    on_window: Callable[[Window], None] | None = None,
) -> AlertLog:
    """Evaluates ``rule`` (default :class:`AlertRule`) every ``poll_s``
    seconds (0.001..10) on the window since the previous poll (``running``
    must have been started with ``intervals=True``), until the run ends or
    ``until_s`` seconds (>= 0) have passed since its start.  Returns the
    :class:`AlertLog`; the run is neither stopped nor joined."""
    if not isinstance(running, Running):
        raise TypeError(f"running must be a Running (lowlat.core.pipeline.start), got {type(running).__name__}")
    if rule is not None and not isinstance(rule, AlertRule):
        raise TypeError(f"rule must be an AlertRule or None, got {type(rule).__name__}")
    rule = rule or AlertRule()
    if not (0.001 <= _number(poll_s, "poll_s") <= 10):
        raise ValueError(f"poll_s must be in [0.001, 10] seconds, got {poll_s!r}")
    if until_s is not None and _number(until_s, "until_s") < 0:
        raise ValueError(f"until_s must be >= 0 seconds (or None), got {until_s!r}")
    if on_window is not None and not callable(on_window):
        raise TypeError(f"on_window must be callable or None, got {type(on_window).__name__}")
        raise ValueError(f"poll_s must be in [0.001, 10] seconds, got {poll_s!r}")
    log = AlertLog(rule, poll_s)
    prev = running.snapshot()
    t_prev = prev.t_s
    ended = False
    while not ended:
        time.sleep(poll_s)
        iv = running.cut()
        snap = running.snapshot()
        ended = not snap.running or (until_s is not None and snap.t_s >= until_s)
        if not snap.running:
            iv2 = running.cut()  # the threads ended after the cut above: take what they did since
            iv.latency.merge(iv2.latency)
            iv = replace(iv, watermark=max(iv.watermark, iv2.watermark))
        dropped = snap.dropped - prev.dropped
        w = Window(
            t_prev,
            snap.t_s,
            dropped,
            iv.watermark,
            iv.capacity,
            tuple(rule.reasons(dropped, iv.watermark, iv.capacity)),
        )
        log.windows.append(w)
        if on_window is not None:
            on_window(w)
        prev, t_prev = snap, snap.t_s
    log.last = prev
    return log


__all__ = [
    "ALERT_WORK_NS",
    "NORMAL_RATE",
    "OVERLOAD_RATE",
    "AlertLog",
    "AlertRule",
    "Window",
    "alert_config",
    "rss_mib",
    "watch",
]
