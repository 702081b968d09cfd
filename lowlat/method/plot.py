"""Plot helpers: every figure of the course says what it measured, in which
unit, and on which machine."""

from __future__ import annotations

from typing import Any

import numpy as np

from lowlat.core.hist import Histogram
from lowlat.machine import machine_label

SIMULATED = "simulation: no measurement of this machine"


def titled(ax: Any, title: str, *, simulated: bool = False) -> Any:
    """Sets ``title`` with the machine's description under it, for a figure
    of measurements.  A figure of a pure simulation (``simulated=True``)
    says so instead: its numbers come from a model, not from this machine."""
    ax.set_title(f"{title}\n{SIMULATED if simulated else machine_label()}", fontsize=10)
    return ax


def latency_hist(ax: Any, hist: Histogram, label: str, per_decade: int = 20, **kw: Any) -> Any:
    """A latency histogram on a log time axis: the histogram's counters
    regrouped into ``per_decade`` log-spaced bins; y = share of samples (%)
    per bin, log scale, so a tail of one sample in 10^5 is still visible.
    Each non-empty bin is drawn as a flat step over its own width; an empty
    bin is a gap (no line bridges it: zero has no place on a log axis, and a
    line across it would show samples where there are none)."""
    values, counts = hist.to_numpy()
    if len(values) == 0:
        return ax
    v = np.maximum(values.astype(np.float64), 1.0)
    lo, hi = np.floor(np.log10(v.min())), np.ceil(np.log10(v.max() + 1))
    edges = np.logspace(lo, hi, int((hi - lo) * per_decade) + 1)
    binned, _ = np.histogram(v, bins=edges, weights=counts.astype(np.float64))
    share = binned / binned.sum() * 100.0
    ax.stairs(np.where(share > 0, share, np.nan), edges, baseline=None, label=label, **kw)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency per operation (ns, log scale)")
    ax.set_ylabel(f"share of samples (%, 1/{per_decade} decade bins)")
    return ax


def mark_percentiles(ax: Any, hist: Histogram, color: str, ps: tuple[float, ...] = (50, 99, 99.9)) -> None:
    """Vertical lines at the given percentiles of ``hist``."""
    for p in ps:
        v = hist.percentile(p)
        ax.axvline(v, color=color, linestyle=":", linewidth=1)
        ax.text(v, 0.97, f" P{p:g}", color=color, fontsize=7, va="top", transform=ax.get_xaxis_transform())


def latency_over_time(ax: Any, result: Any, label: str = "", **kw: Any) -> Any:
    """Each kept pipeline sample as a dot: x = when it was due (ms into the
    run), y = its latency from that moment (ns, log scale).  Where the max
    came from is where the dots climb."""
    s = result.samples
    if len(s) == 0:
        return ax
    t_ms = (s["intended_ns"].astype(np.int64) - int(s["intended_ns"][0])) / 1e6
    ax.plot(t_ms, np.maximum(result.latency_ns, 1), ".", markersize=1.5, alpha=0.5, label=label, **kw)
    ax.set_yscale("log")
    ax.set_xlabel("time into the run (ms)")
    ax.set_ylabel("latency from due time (ns, log)")
    return ax
