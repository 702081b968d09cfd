"""Watching the pipeline while it runs: a live alert rule and the soak.

The C pipeline publishes live counters (made, processed, dropped, the ring's
high-watermark) that a monitor reads while it runs (:func:`lowlat.core.pipeline.start`,
:meth:`~lowlat.core.pipeline.Running.snapshot`), and closes an interval on request
(:meth:`~lowlat.core.pipeline.Running.cut`): a latency histogram and the ring's
highest occupancy for the ticks since the previous cut.  Python only polls.

- :class:`AlertRule` and :func:`watch`: the rule "any drop, or the ring more
  than 80% full" evaluated every ``poll_s`` (50 ms) on the window since the
  previous poll; :class:`AlertLog` says when it fired and for how long.
- :func:`soak`: ONE long open-loop run (not a series of short ones), cut every
  interval: per-interval P50/P99/max (us, done minus intended: coordinated
  omission included), RSS (MiB), drops and watermark, a progress line each,
  every interval saved as JSON, a drift plot at the end.  Ctrl-C stops it
  cleanly: the run is stopped and joined, the partial JSON written.

Times: ``t_s`` in seconds since the run's start; latencies in us in the JSON
and the lines (ns in the histograms).  Ownership: :func:`soak` and
:func:`watch` own nothing they did not start; :func:`soak` starts, stops and
joins its own run.
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from lowlat.core.pipeline import PipelineConfig, Running, Snapshot
from lowlat.experiments.pipeline import best_config, start
from lowlat.machine import machine_label

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
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds must be a positive number, got {seconds!r}")
    base = best_config(ticks=1_000, rate=rate)
    return replace(
        base, ticks=max(1, round(rate * seconds)), work_ns=ALERT_WORK_NS, when_full="drop", sample_capacity=0
    ).validate(background=True)


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
    above ``max_fraction`` of its capacity."""

    max_fraction: float = 0.8

    def reasons(self, dropped: int, watermark: int, capacity: int) -> list[str]:
        """Why the rule fires on a window (empty: silent)."""
        why = []
        if dropped > 0:
            why.append(f"{dropped:,} dropped")
        if watermark > self.max_fraction * capacity:
            why.append(f"ring {watermark / capacity:.0%} full > {self.max_fraction:.0%}")
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
    seconds on the window since the previous poll (``running`` must have
    been started with ``intervals=True``), until the run ends or ``until_s``
    seconds have passed since its start.  Returns the :class:`AlertLog`; the
    run is neither stopped nor joined."""
    rule = rule or AlertRule()
    if not (0.001 <= poll_s <= 10):
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


# ---------------------------------------------------------------------- soak


def default_interval(total_s: float) -> float:
    """The progress interval (s) for a soak of ``total_s`` seconds: 10 s, or
    a tenth of the soak when that is shorter (at least 0.2 s)."""
    return max(0.2, min(10.0, total_s / 10))


def default_json_path(now: datetime | None = None) -> Path:
    """./soak-YYYYmmdd-HHMMSS.json (local time)."""
    return Path(f"soak-{(now or datetime.now()).strftime('%Y%m%d-%H%M%S')}.json")


@dataclass
class SoakReport:
    """A soak's record: its settings, one dict per interval (see
    :func:`soak`), and whether Ctrl-C ended it early."""

    minutes: float
    rate: float
    interval_s: float
    config: str
    machine: str
    started: str
    rss_source: str
    intervals: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    produced: int = 0
    consumed: int = 0
    dropped: int = 0
    lost: int = 0  # produced - consumed - dropped at the end: always 0
    not_made: int = 0  # ticks the schedule still owed when the deadline stopped a run that fell behind
    elapsed_s: float = 0.0
    json_path: str = ""
    png_path: str = ""

    def summary(self) -> dict[str, Any]:
        """Numbers over the whole soak (us, MiB, ticks); the P99 drift is
        last interval over first (complete intervals only, 1.0 = none)."""
        full = [iv for iv in self.intervals if not iv["partial"] and iv["ticks"] > 0] or [
            iv for iv in self.intervals if iv["ticks"] > 0
        ]
        out: dict[str, Any] = {
            "intervals": len(self.intervals),
            "elapsed_s": self.elapsed_s,
            "interrupted": self.interrupted,
            "not_made": self.not_made,
            "produced": self.produced,
            "consumed": self.consumed,
            "dropped": self.dropped,
            "lost": self.lost,
            "alert_intervals": sum(1 for iv in self.intervals if iv["alert"]),
            "max_watermark_fraction": max((iv["watermark_fraction"] for iv in self.intervals), default=0.0),
        }
        if full:
            first, last = full[0], full[-1]
            p99s = sorted(iv["p99_us"] for iv in full)
            out.update(
                p99_first_us=first["p99_us"],
                p99_last_us=last["p99_us"],
                p99_drift=last["p99_us"] / first["p99_us"] if first["p99_us"] > 0 else math.nan,
                p99_median_us=p99s[len(p99s) // 2],
                p50_median_us=sorted(iv["p50_us"] for iv in full)[len(full) // 2],
                max_us=max(iv["max_us"] for iv in full),
                rss_first_mib=first["rss_mib"],
                rss_last_mib=last["rss_mib"],
                rss_growth_mib=last["rss_mib"] - first["rss_mib"],
            )
        return out

    def summary_lines(self) -> list[str]:
        s = self.summary()
        how = "stopped by Ctrl-C" if self.interrupted else "stopped at its deadline" if self.not_made else "complete"
        lines = [
            f"soak {how}: {s['elapsed_s']:.1f} s of {self.minutes * 60:g} s asked, {s['intervals']} intervals, "
            f"{self.consumed:,} ticks processed, {self.dropped:,} dropped, {self.lost} lost "
            "(made - processed - dropped)"
        ]
        if self.not_made:
            lines.append(
                f"  the pipeline fell behind its schedule: stopped at the deadline with {self.not_made:,} ticks "
                f"not yet made ({self.not_made / (self.rate * self.minutes * 60):.1%} of the schedule)"
            )
        n_part = sum(1 for iv in self.intervals if iv["partial"])
        part = f" ({s['intervals'] - n_part} complete, {n_part} partial)" if n_part else ""
        if "p99_first_us" in s:
            lines.append(
                f"  P99 first interval {s['p99_first_us']:,.1f} us, last {s['p99_last_us']:,.1f} us "
                f"(x{s['p99_drift']:.2f}); median of intervals: P50 {s['p50_median_us']:,.1f} us, "
                f"P99 {s['p99_median_us']:,.1f} us; worst max {s['max_us']:,.1f} us"
            )
            lines.append(
                f"  RSS {s['rss_first_mib']:.1f} MiB -> {s['rss_last_mib']:.1f} MiB ({s['rss_growth_mib']:+.1f} MiB, "
                f"{self.rss_source}); ring up to {s['max_watermark_fraction']:.0%} full; alert in "
                f"{s['alert_intervals']} of {s['intervals']} intervals{part} ({AlertRule().describe()})"
            )
        return lines

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["summary"] = _clean(self.summary())
        return d


def _write_json(report: SoakReport, path: Path) -> None:
    """Writes the report to ``path`` atomically (a partial file is never seen)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(report.as_dict(), indent=1, allow_nan=False) + "\n")
    os.replace(tmp, path)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def ring_capacity(report: SoakReport) -> int | None:
    """The ring's capacity (ticks), read back from the intervals (watermark
    over its fraction); ``None`` when no interval saw a tick in the ring."""
    for iv in report.intervals:
        if iv["watermark_fraction"] and iv["watermark"]:
            return round(iv["watermark"] / iv["watermark_fraction"])
    return None


def plot_drift(report: SoakReport, path: Path) -> Path:
    """Draws the soak's drift to ``path`` (PNG), titled with the rate and
    the machine: above, P50/P99/max per interval against time (us, log
    scale) with the ring's span (capacity / rate: the longest stall the ring
    holds); below, RSS (MiB, left axis) and the ring's high-watermark (% of
    its capacity, right axis) with the alert's 80% line."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from lowlat.method.plot import titled

    ivs = [iv for iv in report.intervals if iv["ticks"] > 0 and not iv["partial"]]
    part = [iv for iv in report.intervals if iv["ticks"] > 0 and iv["partial"]]
    fig, (ax, ax_rss) = plt.subplots(
        2, 1, figsize=(8, 6), sharex=True, gridspec_kw={"height_ratios": [3, 2]}, constrained_layout=True
    )
    for key, label, style in (("max_us", "max", ":"), ("p99_us", "P99", "-"), ("p50_us", "P50", "--")):
        (line,) = ax.plot(
            [iv["t_s"] for iv in ivs], [iv[key] for iv in ivs], style, marker="o", markersize=3, label=label
        )
        if part:  # a partial interval (the end, or a stop): hollow, not joined to the others
            ax.plot([iv["t_s"] for iv in part], [iv[key] for iv in part], "o", mfc="none", color=line.get_color())
    cap = ring_capacity(report)
    if cap:
        span_us = cap / report.rate * 1e6
        ax.axhline(
            span_us,
            color="grey",
            linewidth=0.8,
            linestyle="-.",
            label=f"the ring's span: {cap:,} / {report.rate:,.0f} per s = {span_us / 1e3:,.1f} ms",
        )
    ax.set_yscale("log")
    ax.set_ylabel("latency, done - intended (us, log scale)")
    ax.legend(loc="best", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    stopped = ", stopped early" if report.interrupted else ""
    titled(ax, f"soak drift: {report.rate:,.0f} ticks/s, {report.interval_s:g} s intervals{stopped}")

    every = ivs + part
    t_all = [iv["t_s"] for iv in every]
    (rss_line,) = ax_rss.plot(
        [iv["t_s"] for iv in ivs],
        [iv["rss_mib"] for iv in ivs],
        "-",
        marker="o",
        markersize=3,
        color="C4",
        label=f"RSS (MiB, {report.rss_source})",
    )
    if part:
        ax_rss.plot([iv["t_s"] for iv in part], [iv["rss_mib"] for iv in part], "o", mfc="none", color="C4")
    rss = [iv["rss_mib"] for iv in every]
    if rss:  # at least 1 MiB of range, so a flat RSS looks flat, not like noise magnified
        mid = (max(rss) + min(rss)) / 2
        half = max(0.5, (max(rss) - min(rss)) / 2 * 1.2)
        ax_rss.set_ylim(mid - half, mid + half)
    ax_rss.set_ylabel("RSS (MiB)")
    ax_rss.set_xlabel("time since the start (s; each point: the interval ending then)")
    ax_rss.grid(True, alpha=0.3)
    ax_wm = ax_rss.twinx()
    ax_wm.bar(
        t_all,
        [100 * iv["watermark_fraction"] for iv in every],
        width=0.6 * report.interval_s,
        color=["C3" if iv["alert"] else "C7" for iv in every],
        alpha=0.35,
    )
    ax_wm.axhline(80, color="C3", linestyle=":", linewidth=0.8)
    ax_wm.set_ylim(0, 105)
    ax_wm.set_ylabel("ring high-watermark (% of capacity)")
    ax_rss.set_zorder(ax_wm.get_zorder() + 1)  # the RSS line over the bars
    ax_rss.patch.set_visible(False)
    from matplotlib.patches import Patch

    ax_rss.legend(
        handles=[
            rss_line,
            Patch(color="C7", alpha=0.35, label="watermark per interval (right axis)"),
            Patch(color="C3", alpha=0.35, label="... an alert interval (80% line dotted)"),
        ],
        loc="upper left",
        fontsize=8,
    )
    ax_rss.set_title("memory and the ring's high-watermark per interval", fontsize=9)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in the block (main thread only): the clean-up of a
    stopped soak (stop, join, write, plot) is not cut short by a second Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interval_row(
    k: int, iv: Any, snap: Snapshot, prev: Snapshot, t_prev: float, rule: AlertRule, partial: bool
) -> dict[str, Any]:
    lat = iv.latency
    rss, _ = rss_mib()
    dropped = snap.dropped - prev.dropped
    n = lat.count
    return _clean(
        {
            "index": k,
            "t_s": round(snap.t_s, 4),
            "seconds": round(snap.t_s - t_prev, 4),
            "ticks": n,
            "p50_us": lat.percentile(50) / 1e3 if n else math.nan,
            "p99_us": lat.percentile(99) / 1e3 if n else math.nan,
            "p999_us": lat.percentile(99.9) / 1e3 if n else math.nan,
            "max_us": lat.max / 1e3 if n else math.nan,
            "rss_mib": round(rss, 2),
            "dropped": dropped,
            "dropped_total": snap.dropped,
            "watermark": iv.watermark,
            "watermark_fraction": iv.watermark / iv.capacity,
            "produced": snap.produced,
            "consumed": snap.consumed,
            "in_flight": snap.in_flight,
            "alert": bool(rule.reasons(dropped, iv.watermark, iv.capacity)),
            "partial": partial,
        }
    )


def _line(row: dict[str, Any], total_s: float) -> str:
    def us(x: float | None) -> str:
        return "       -" if x is None else f"{x:8,.1f}"

    flag = "  ALERT" if row["alert"] else ""
    part = " (partial)" if row["partial"] else ""
    return (
        f"[{row['t_s']:7.1f}/{total_s:g} s] P50 {us(row['p50_us'])} us  P99 {us(row['p99_us'])} us  "
        f"max {us(row['max_us'])} us  RSS {row['rss_mib']:6.1f} MiB  dropped {row['dropped']:,} "
        f"({row['dropped_total']:,} total)  ring {row['watermark_fraction']:4.0%}{flag}{part}"
    )


def soak(
    minutes: float = 10.0,
    rate: float | None = None,
    interval_s: float | None = None,
    json_path: str | Path | None = None,
    *,
    config: PipelineConfig | None = None,
    plot: bool = True,
    out: Callable[[str], None] = print,
) -> SoakReport:
    """Runs the pipeline for ``minutes`` (float) at ``rate`` ticks/s
    (default: the config's open-loop rate, 200,000/s) as ONE background run
    of ``minutes x 60 x rate`` ticks (``config``: default
    :func:`lowlat.experiments.pipeline.best_config`; no raw samples kept), cut every
    ``interval_s`` seconds (default :func:`default_interval`).  Each
    interval: a line through ``out`` and a dict in the report with t_s,
    ticks, p50/p99/p999/max (us), rss_mib, dropped (this interval and
    total), watermark (ticks and fraction of the ring), alert (the
    :class:`AlertRule`).  The JSON (default :func:`default_json_path`) is
    rewritten after every interval; the drift plot (``plot``) goes next to
    it, as .png.  A pipeline that falls behind its schedule (it cannot keep
    the rate) is stopped about one interval after the soak's length, and the
    report counts the ticks not made.  Ctrl-C (SIGINT, main thread) ends it
    early: the run is stopped and joined, the interval in progress recorded
    as partial, the JSON written; the report says ``interrupted``."""
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not math.isfinite(minutes) or minutes <= 0:
        raise ValueError(f"minutes must be a positive number, got {minutes!r}")
    base = config or best_config(ticks=1_000)
    rate = float(base.rate if rate is None else rate)
    if not (math.isfinite(rate) and 0 < rate <= 1e9):
        raise ValueError(f"rate must be in (0, 1e9] ticks per second, got {rate!r}")
    total_s = minutes * 60.0
    interval_s = default_interval(total_s) if interval_s is None else float(interval_s)
    if not (math.isfinite(interval_s) and interval_s > 0):
        raise ValueError(f"interval must be a positive number of seconds, got {interval_s!r}")
    path = Path(json_path) if json_path is not None else default_json_path()
    cfg = replace(base, producer="open", rate=rate, ticks=max(1, round(rate * total_s)), sample_capacity=0)
    rss0, rss_source = rss_mib()
    report = SoakReport(
        minutes=minutes,
        rate=rate,
        interval_s=interval_s,
        config=cfg.describe(),
        machine=machine_label(),
        started=datetime.now().isoformat(timespec="seconds"),
        rss_source=rss_source,
        json_path=str(path),
    )
    rule = AlertRule()
    out(
        f"soak: {minutes:g} min at {rate:,.0f} ticks/s ({cfg.ticks:,} ticks, one run: {cfg.describe()}), "
        f"a line every {interval_s:g} s; RSS now {rss0:.1f} MiB; Ctrl-C stops it cleanly"
    )
    running: Running | None = None
    prev: Snapshot | None = None
    pending = None
    t_prev, k = 0.0, 0
    try:
        running = start(cfg, intervals=True)
        prev = running.snapshot()
        t_prev = prev.t_s
        while True:
            due = (k + 1) * interval_s
            now = running.snapshot()
            if now.t_s >= total_s + max(1.0, interval_s):  # behind its schedule: the soak keeps its length
                running.stop()
            while now.running and now.t_s < due:
                time.sleep(min(0.1, max(0.001, due - now.t_s)))  # short naps: Ctrl-C is seen at once
                now = running.snapshot()
            iv = running.cut()
            snap = running.snapshot()
            if not snap.running:
                break  # the last interval is taken after the join, below
            row = _interval_row(k, iv, snap, prev, t_prev, rule, partial=False)
            report.intervals.append(row)
            out(_line(row, total_s))
            _write_json(report, path)
            prev, t_prev, k = snap, snap.t_s, k + 1
        pending = iv
    except KeyboardInterrupt:
        report.interrupted = True
        pending = None
    with _sigint_ignored():
        if running is None or prev is None:  # Ctrl-C before the run started (a started one stops when collected)
            report.interrupted = True
            _write_json(report, path)
            out("soak stopped before it started; nothing measured")
            return report
        running.stop()
        result = running.join()
        last = running.cut()  # whatever the threads did after the last cut
        if pending is not None:
            pending.latency.merge(last.latency)
            last = replace(pending, watermark=max(pending.watermark, last.watermark))
        snap = running.snapshot()
        if last.latency.count or snap.dropped != prev.dropped:
            partial = report.interrupted or snap.t_s - t_prev < 0.5 * interval_s
            row = _interval_row(k, last, snap, prev, t_prev, rule, partial=partial)
            report.intervals.append(row)
            out(_line(row, total_s))
        report.produced, report.consumed = result.produced, result.consumed
        if result.interrupted and not report.interrupted:
            report.not_made = cfg.ticks - result.produced
        report.dropped = result.dropped_full + result.dropped_pool
        report.lost = result.lost
        report.elapsed_s = snap.t_s
        if plot and report.intervals:
            report.png_path = str(path.with_suffix(".png"))
        _write_json(report, path)
        for line in report.summary_lines():
            out(line)
        if plot and report.intervals:
            plot_drift(report, Path(report.png_path))
        out(
            f"wrote {len(report.intervals)} intervals to {path}"
            + (f" and the plot to {report.png_path}" if report.png_path else "")
        )
    return report


__all__ = [
    "ALERT_WORK_NS",
    "NORMAL_RATE",
    "OVERLOAD_RATE",
    "AlertLog",
    "AlertRule",
    "SoakReport",
    "Window",
    "alert_config",
    "default_interval",
    "default_json_path",
    "plot_drift",
    "ring_capacity",
    "rss_mib",
    "soak",
    "watch",
]
