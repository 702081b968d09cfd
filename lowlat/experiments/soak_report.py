"""A soak's record and its pictures: :class:`SoakReport` (the settings, one
dict per interval, the summary), the per-interval row and progress line, and
the drift plot (:func:`plot_drift`).  Latencies in us, RSS in MiB, times in
seconds since the run's start.  Files are written by
:mod:`lowlat.core.outfile` (atomically, regular files only)."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lowlat.core.outfile import atomic, write_text
from lowlat.core.pipeline import Snapshot
from lowlat.experiments.alert import AlertRule, rss_mib
from lowlat.experiments.drift_rule import MIN_INTERVALS, read_drift

RSS_MIN_HALF_RANGE_MIB = 4.0  # the RSS axis spans at least 8 MiB


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
            out.update(
                p99_first_us=first["p99_us"],
                p99_last_us=last["p99_us"],
                p99_drift=last["p99_us"] / first["p99_us"] if first["p99_us"] > 0 else math.nan,
                p99_median_us=statistics.median(iv["p99_us"] for iv in full),
                p50_median_us=statistics.median(iv["p50_us"] for iv in full),
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
        lines.extend(self.drift_lines())
        return lines

    def drift_lines(self) -> list[str]:
        """The drift rule (:mod:`lowlat.experiments.drift_rule`) on the
        complete intervals' P99 and RSS, the threshold from the soak's own
        interval-to-interval noise (no clean run to compare with); a line
        saying so when there are fewer than 6 complete intervals."""
        full = [iv for iv in self.intervals if not iv["partial"] and iv["ticks"] > 0 and iv["p99_us"]]
        if len(full) < MIN_INTERVALS:
            return [f"  drift: {len(full)} complete intervals, the rule needs {MIN_INTERVALS}: run longer to read it"]
        p99 = read_drift("P99", [max(iv["p99_us"], 0.001) for iv in full], unit="us")
        rss = read_drift("RSS", [max(iv["rss_mib"], 0.001) for iv in full], unit="MiB")
        return ["  drift " + p99.text(), "  drift " + rss.text()]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["summary"] = clean(self.summary())
        return d


def write_json(report: SoakReport, path: str | Path) -> None:
    """Writes the report to ``path`` atomically (:func:`lowlat.core.outfile.write_text`:
    a partial file is never seen, nothing but a regular file is replaced)."""
    write_text(path, json.dumps(report.as_dict(), indent=1, allow_nan=False) + "\n", "json_path")


def clean(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with every non-finite float as None (JSON null)."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def rss_change(intervals: list[dict[str, Any]]) -> str:
    """The RSS change over ``intervals`` in words: "+0.31 MiB over 2.0 min"."""
    if len(intervals) < 2:
        return "one interval"
    d = intervals[-1]["rss_mib"] - intervals[0]["rss_mib"]
    minutes = (intervals[-1]["t_s"] - intervals[0]["t_s"]) / 60
    return f"{d:+.2f} MiB over {minutes:.1f} min"


def ring_capacity(report: SoakReport) -> int | None:
    """The ring's capacity (ticks), read back from the intervals (watermark
    over its fraction); ``None`` when no interval saw a tick in the ring."""
    for iv in report.intervals:
        if iv["watermark_fraction"] and iv["watermark"]:
            return round(iv["watermark"] / iv["watermark_fraction"])
    return None


def plot_drift(report: SoakReport, path: str | Path) -> Path:
    """Draws the soak's drift to ``path`` (PNG), titled with the rate and
    the machine: above, P50/P99/max per interval against time (us, log
    scale) with the ring's span (capacity / rate: the longest stall the ring
    holds); below, RSS (MiB, left axis) and the ring's high-watermark (% of
    its capacity, right axis) with the alert's 80% line.  Written atomically
    (:func:`lowlat.core.outfile.atomic`), as PNG whatever the suffix."""
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
        label=f"RSS (MiB, {report.rss_source}; {rss_change(ivs)})",
    )
    if part:
        ax_rss.plot([iv["t_s"] for iv in part], [iv["rss_mib"] for iv in part], "o", mfc="none", color="C4")
    rss = [iv["rss_mib"] for iv in every]
    if rss:  # at least 8 MiB of range: a few hundred KiB of Python objects must not look like a leak
        mid = (max(rss) + min(rss)) / 2
        half = max(RSS_MIN_HALF_RANGE_MIB, (max(rss) - min(rss)) / 2 * 1.2)
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
    try:
        with atomic(path, "plot") as f:
            fig.savefig(f, dpi=100, format="png")
    finally:
        plt.close(fig)
    return Path(path)


def interval_row(
    k: int, iv: Any, snap: Snapshot, prev: Snapshot, t_prev: float, rule: AlertRule, partial: bool
) -> dict[str, Any]:
    lat = iv.latency
    rss, _ = rss_mib()
    dropped = snap.dropped - prev.dropped
    n = lat.count
    return clean(
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


def progress_line(row: dict[str, Any], total_s: float) -> str:
    def us(x: float | None) -> str:
        return "       -" if x is None else f"{x:8,.1f}"

    flag = "  ALERT" if row["alert"] else ""
    part = " (partial)" if row["partial"] else ""
    return (
        f"[{row['t_s']:7.1f}/{total_s:g} s] P50 {us(row['p50_us'])} us  P99 {us(row['p99_us'])} us  "
        f"max {us(row['max_us'])} us  RSS {row['rss_mib']:6.1f} MiB  dropped {row['dropped']:,} "
        f"({row['dropped_total']:,} total)  ring {row['watermark_fraction']:4.0%}{flag}{part}"
    )


__all__ = ["SoakReport", "clean", "interval_row", "plot_drift", "progress_line", "ring_capacity", "write_json"]
