"""The soak: ONE long open-loop run of the pipeline, cut every interval.

Per interval: P50/P99/max (us, done minus intended: coordinated omission
included), RSS (MiB), drops and watermark, a progress line each, every
interval saved as JSON, a drift plot at the end.  Ctrl-C stops it cleanly:
the run is stopped and joined, the partial JSON written.

Every parameter is checked before anything runs or prints
(:func:`check_args`, :func:`output_paths`): ``minutes`` in (0,
:data:`MAX_MINUTES`], ``rate`` in [:data:`~lowlat.core.pipeline.MIN_RATE`,
:data:`~lowlat.core.pipeline.MAX_RATE`] ticks/s with at most
:data:`~lowlat.core.pipeline.MAX_BACKGROUND_TICKS` ticks in all, ``interval_s``
from :data:`MIN_INTERVAL_S` to the soak's length (at most
:data:`MAX_INTERVALS` intervals), the JSON and plot paths by
:mod:`lowlat.core.outfile` (and never the same file: a JSON named ``*.png``
puts the plot at ``*-drift.png``, said in the first line).

The alert rule and :func:`watch` live in :mod:`lowlat.experiments.alert`, the
report and the plot in :mod:`lowlat.experiments.soak_report`; their public
names are importable from here too.  Ownership: :func:`soak` starts, stops
and joins its own run.
"""

from __future__ import annotations

import math
import numbers
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from lowlat.core.outfile import OutPath, check
from lowlat.core.pipeline import MAX_BACKGROUND_TICKS, MAX_RATE, MIN_RATE, PipelineConfig, Running, Snapshot
from lowlat.experiments.alert import (
    ALERT_WORK_NS,
    NORMAL_RATE,
    OVERLOAD_RATE,
    AlertLog,
    AlertRule,
    Window,
    alert_config,
    rss_mib,
    watch,
)
from lowlat.experiments.pipeline import best_config, start
from lowlat.experiments.soak_report import (
    SoakReport,
    interval_row,
    plot_drift,
    progress_line,
    ring_capacity,
    write_json,
)
from lowlat.machine import machine_label

MAX_MINUTES = 7 * 24 * 60.0  # one week
MIN_INTERVAL_S = 0.05
MAX_INTERVALS = 100_000  # the JSON is rewritten after each: bounded work
# The parameters' names in messages: soak()'s own, or the command line's.
PARAMS = {"minutes": "minutes", "rate": "rate", "interval_s": "interval_s", "json_path": "json_path"}
CLI_NAMES = {"minutes": "--minutes", "rate": "--rate", "interval_s": "--interval", "json_path": "--json"}


def default_interval(total_s: float) -> float:
    """The progress interval (s) for a soak of ``total_s`` seconds: 10 s, or
    a tenth of the soak when that is shorter (at least 0.2 s)."""
    return max(0.2, min(10.0, total_s / 10))


def default_json_path(now: datetime | None = None) -> Path:
    """./soak-YYYYmmdd-HHMMSS.json (local time)."""
    return Path(f"soak-{(now or datetime.now()).strftime('%Y%m%d-%H%M%S')}.json")


def _real(x: Any, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    f = float(x)
    if not math.isfinite(f):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return f


def check_args(
    minutes: Any, rate: Any, interval_s: Any = None, *, names: Mapping[str, str] = PARAMS
) -> tuple[float, float, float]:
    """(minutes, rate, interval_s) checked for a soak, ``interval_s`` None
    giving :func:`default_interval`; a one-line TypeError/ValueError naming
    the parameter (``names``: how each is called, e.g. :data:`CLI_NAMES`)
    otherwise.  See the module's docstring for the ranges."""
    m = _real(minutes, names["minutes"])
    if not 0 < m <= MAX_MINUTES:
        raise ValueError(f"{names['minutes']} must be in (0, {MAX_MINUTES:g}] minutes (at most a week), got {m:g}")
    r = _real(rate, names["rate"])
    if not MIN_RATE <= r <= MAX_RATE:
        raise ValueError(
            f"{names['rate']} must be in [{MIN_RATE:g}, {MAX_RATE:g}] ticks per second (at least one tick a second), "
            f"got {r:g}"
        )
    total_s = m * 60.0
    if r * total_s > MAX_BACKGROUND_TICKS:
        raise ValueError(
            f"{names['minutes']} {m:g} at {names['rate']} {r:g} is {r * total_s:,.0f} ticks; at most "
            f"{MAX_BACKGROUND_TICKS:,} in one run (at this rate, at most {MAX_BACKGROUND_TICKS / r / 60:,.0f} minutes)"
        )
    if interval_s is None:
        return m, r, default_interval(total_s)
    iv = _real(interval_s, names["interval_s"])
    if iv < MIN_INTERVAL_S:
        raise ValueError(f"{names['interval_s']} must be at least {MIN_INTERVAL_S:g} s, got {interval_s!r}")
    if iv > total_s:
        raise ValueError(f"{names['interval_s']} {iv:g} s is longer than the soak ({total_s:g} s)")
    if total_s / iv > MAX_INTERVALS:
        raise ValueError(
            f"{names['interval_s']} {iv:g} s makes {total_s / iv:,.0f} intervals; at most {MAX_INTERVALS:,} "
            f"(an interval of at least {total_s / MAX_INTERVALS:g} s)"
        )
    return m, r, iv


def plot_path(json_path: str | Path) -> Path:
    """Where the plot of a soak whose JSON is ``json_path`` goes: the same
    name with .png, or ``<stem>-drift.png`` when the JSON's own name ends in
    .png (the two must differ)."""
    p = Path(json_path)
    return p.with_name(p.stem + "-drift.png") if p.suffix.lower() == ".png" else p.with_suffix(".png")


def output_paths(json_path: Any, plot: bool, *, names: Mapping[str, str] = PARAMS) -> tuple[OutPath, OutPath | None]:
    """The JSON's and (``plot``) the plot's paths, checked by
    :func:`lowlat.core.outfile.check` before the soak: refused when either
    cannot be written or both are the same file (a link, for example)."""
    j = check(default_json_path() if json_path is None else json_path, names["json_path"])
    if not plot:
        return j, None
    return j, check(plot_path(j.named), f"the plot (from {names['json_path']})", distinct_from=(j,))


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
    it, as .png (see :func:`plot_path`); both paths are checked first
    (:func:`output_paths`) and written atomically.  Every parameter is
    checked before anything runs or prints (:func:`check_args`).  A pipeline
    that falls behind its schedule (it cannot keep the rate) is stopped about
    one interval after the soak's length, and the report counts the ticks
    not made.  Ctrl-C (SIGINT, main thread) ends it
    early: the run is stopped and joined, the interval in progress recorded
    as partial, the JSON written; the report says ``interrupted``."""
    if config is not None and not isinstance(config, PipelineConfig):
        raise TypeError(f"config must be a PipelineConfig (e.g. best_config()) or None, got {type(config).__name__}")
    if not isinstance(plot, bool):
        raise TypeError(f"plot must be True or False, got {type(plot).__name__} {plot!r}")
    if not callable(out):
        raise TypeError(f"out must be callable (e.g. print), got {type(out).__name__}")
    base = config or best_config(ticks=1_000)
    minutes, rate, interval_s = check_args(minutes, base.rate if rate is None else rate, interval_s)
    total_s = minutes * 60.0
    json_out, png_out = output_paths(json_path, plot)
    path = json_out.named
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
    cfg.validate(background=True)  # before the first line: nothing is printed for a config that cannot run
    renamed = png_out is not None and png_out.named != path.with_suffix(".png")
    out(
        f"soak: {minutes:g} min at {rate:,.0f} ticks/s ({cfg.ticks:,} ticks, one run: {cfg.describe()}), "
        f"a line every {interval_s:g} s; RSS now {rss0:.1f} MiB; Ctrl-C stops it cleanly"
        + (f"; the JSON's name ends in .png, so the plot goes to {png_out.named}" if renamed and png_out else "")
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
            row = interval_row(k, iv, snap, prev, t_prev, rule, partial=False)
            report.intervals.append(row)
            out(progress_line(row, total_s))
            write_json(report, path)
            prev, t_prev, k = snap, snap.t_s, k + 1
        pending = iv
    except KeyboardInterrupt:
        report.interrupted = True
        pending = None
    with _sigint_ignored():
        if running is None or prev is None:  # Ctrl-C before the run started (a started one stops when collected)
            report.interrupted = True
            write_json(report, path)
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
            row = interval_row(k, last, snap, prev, t_prev, rule, partial=partial)
            report.intervals.append(row)
            out(progress_line(row, total_s))
        report.produced, report.consumed = result.produced, result.consumed
        if result.interrupted and not report.interrupted:
            report.not_made = cfg.ticks - result.produced
        report.dropped = result.dropped_full + result.dropped_pool
        report.lost = result.lost
        report.elapsed_s = snap.t_s
        if png_out is not None and report.intervals:
            report.png_path = str(png_out.named)
        write_json(report, path)
        for line in report.summary_lines():
            out(line)
        if png_out is not None and report.intervals:
            plot_drift(report, png_out.named)
        out(
            f"wrote {len(report.intervals)} intervals to {path}"
            + (f" and the plot to {report.png_path}" if report.png_path else "")
        )
    return report


__all__ = [
    "ALERT_WORK_NS",
    "CLI_NAMES",
    "MAX_INTERVALS",
    "MAX_MINUTES",
    "MIN_INTERVAL_S",
    "NORMAL_RATE",
    "OVERLOAD_RATE",
    "AlertLog",
    "AlertRule",
    "SoakReport",
    "Window",
    "alert_config",
    "check_args",
    "default_interval",
    "default_json_path",
    "output_paths",
    "plot_drift",
    "plot_path",
    "ring_capacity",
    "rss_mib",
    "soak",
    "watch",
]
