"""Latency budgets: an end-to-end allowance (e.g. 100 us from packet in to
order out) split into per-stage allotments, checked against measured
per-stage samples.

The report answers the questions of chapter 01.  The verdict is end to
end: the chosen percentile of each message's total time (the stages' samples
added message by message) against the budget.  Quantiles do not add, so the
stages' percentiles are not a verdict, neither one by one against their
allotments nor summed; they *locate* an overrun: which stage ran over its
allotment at the percentile, by how much, and whose time it ate.
Attribution rule (deterministic): a stage's overrun is paid first from the
slack of the stages after it (in pipeline order), then from the slack of the
stages before it, then from the unallotted reserve; whatever is left is
"over budget".  Units: samples in ns, everything reported in us.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowlat.experiments.shares import rounded_shares

RESERVE = "reserve"
OVER_BUDGET = "over budget"
# Bounds that keep every sum and percentile finite: a budget of more than 11.6 days (1e12 us) is no
# latency budget, and a sample of more than that (1e15 ns) is a unit mistake, not a latency.
MAX_US = 1e12
MAX_SAMPLE_NS = 1e15


def _us(value: Any, what: str, *, zero: bool = False) -> float:
    """A finite number of us, > 0 (>= 0 with ``zero``): NaN, inf, negatives
    and non-numbers are refused with ``what`` named."""
    allowed = "a finite number of us >= 0" if zero else "a finite number of us > 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be {allowed}, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not zero):
        raise ValueError(f"{what} must be {allowed}, got {value!r}")
    if v > MAX_US:
        raise ValueError(f"{what} must be <= {MAX_US:g} us (11.6 days; a latency budget), got {value!r}")
    return v + 0.0


def _samples(name: str, values: Any) -> np.ndarray:
    """One stage's samples (ns) as float64: real, finite, >= 0 and <= 1e15
    (11.6 days), at least one."""
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__"):
        raise TypeError(
            f"stage {name!r}: samples must be a sequence or array of numbers of ns, got {type(values).__name__}"
        )
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"stage {name!r}: samples must be numbers of ns, got {type(values).__name__} ({exc})") from None
    if raw.size and raw.dtype.kind not in "iuf":
        kind = {"b": "booleans", "c": "complex numbers (a duration is real)", "U": "strings", "S": "bytes"}.get(
            raw.dtype.kind, ""
        )
        raise TypeError(f"stage {name!r}: samples must be numbers of ns, got {kind or f'values of type {raw.dtype}'}")
    a = raw.astype(np.float64).ravel()
    if a.size == 0:
        raise ValueError(f"stage {name!r} has no samples")
    for bad, label in (
        (np.isnan(a), "NaN"),
        (np.isinf(a), "infinite"),
        (a < 0, "negative"),
        (a > MAX_SAMPLE_NS, "too large"),
    ):
        if bad.any():
            first = int(np.argmax(bad))
            raise ValueError(
                f"stage {name!r} has {int(bad.sum())} {label} sample(s) (the first at index {first}: {float(a[first])!r}); "
                f"samples must be finite durations >= 0 and <= {MAX_SAMPLE_NS:g} ns"
            )
    return a


def _percentile(p: Any) -> float:
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real):
        raise TypeError(f"percentile must be a number in [0, 100], got {type(p).__name__} {p!r}")
    if not 0 <= float(p) <= 100:  # NaN fails this too
        raise ValueError(f"percentile must be in [0, 100], got {p!r}")
    return float(p) + 0.0


def _eaten(who: str, us: float) -> str:
    """One item of an overrun's attribution, as a phrase."""
    if who == RESERVE:
        return f"{us:.1f} us of the reserve"
    if who == OVER_BUDGET:
        return f"{us:.1f} us beyond all slack and the reserve"
    return f"{us:.1f} us of {who}'s slack"


@dataclass(frozen=True)
class StageReport:
    """One stage at the report's percentile.  ``ok`` says whether the stage
    kept within its allotment there: a locating fact, not a pass/fail rule
    (the budget's verdict is the end-to-end percentile)."""

    stage: str
    allotment_us: float
    p50_us: float
    p_us: float  # at the report's percentile
    over_us: float  # max(0, p_us - allotment_us)
    ate: tuple[tuple[str, float], ...] = ()  # (whose allotment, us)

    @property
    def ok(self) -> bool:
        return self.over_us <= 0


@dataclass(frozen=True)
class BudgetReport:
    total_us: float
    percentile: float
    stages: tuple[StageReport, ...]
    end_to_end_p_us: float | None  # percentile of per-message sums, when samples are aligned

    @property
    def overran(self) -> list[str]:
        """Stages over their allotment at the percentile (where to look)."""
        return [s.stage for s in self.stages if not s.ok]

    @property
    def within_budget(self) -> bool | None:
        """The verdict: the end-to-end percentile within the budget; None
        when the stages' samples are not one per message (no end-to-end
        figure can be formed)."""
        if self.end_to_end_p_us is None:
            return None
        return self.end_to_end_p_us <= self.total_us

    @property
    def sum_of_stage_p_us(self) -> float:
        """Sum of per-stage percentiles.  Not a percentile of anything, and
        neither an estimate nor a bound of the end-to-end one: slow moments
        of different stages may fall on different messages (the sum is then
        larger) or on the same ones, and stages slow just under the
        percentile's share each can add up to a slow end-to-end tail (the
        sum is then smaller)."""
        return float(sum(s.p_us for s in self.stages))

    def verdict(self) -> str:
        """The end-to-end percentile against the budget, as a sentence."""
        p = f"P{self.percentile:g}"
        if self.end_to_end_p_us is None:
            return (
                f"no verdict: the stages have different sample counts, so no message's total (and no end-to-end "
                f"{p}) can be formed; the stage {p}s below only locate where time went"
            )
        e2e, total = self.end_to_end_p_us, self.total_us
        if e2e <= total:
            return f"end-to-end {p} {e2e:.1f} us: within the {total:g} us budget ({total - e2e:.1f} us to spare)"
        return f"end-to-end {p} {e2e:.1f} us: OVER the {total:g} us budget by {e2e - total:.1f} us"

    def sentences(self) -> list[str]:
        out = []
        for s in self.stages:
            if s.ok:
                continue
            eaten = ", ".join(_eaten(who, us) for who, us in rounded_shares(s.ate, s.over_us))
            out.append(
                f"{s.stage} overran its {s.allotment_us:g} us by {s.over_us:.1f} us at "
                f"P{self.percentile:g}, eating {eaten}"
            )
        return out or [f"every stage is within its allotment at P{self.percentile:g}"]

    def format(self) -> str:
        """The verdict first, then the stages (to locate an overrun), then
        the sum of the stage percentiles, labelled as what it is."""
        p = f"P{self.percentile:g}"
        rows = [
            f"verdict: {self.verdict()}",
            "",
            f"{'stage':<12} {'allot us':>9} {'P50 us':>8} {p + ' us':>9} {'over us':>8}  allotment",
        ]
        for s in self.stages:
            rows.append(
                f"{s.stage:<12} {s.allotment_us:>9.1f} {s.p50_us:>8.1f} {s.p_us:>9.1f} {s.over_us:>8.1f}  "
                f"{'within' if s.ok else 'OVER'}"
            )
        rows.append(f"sum of stage {p}s (not a percentile): {self.sum_of_stage_p_us:.1f} us")
        return "\n".join(rows + [""] + self.sentences())

    def plot(self, ax: Any = None, title: str | None = None) -> Any:
        """Three bars (us): the allotments stacked, the stage percentiles
        stacked (to locate an overrun; their total is not a percentile), and
        the end-to-end percentile, the budget's verdict (left out when the
        stages' samples are not one per message)."""
        import matplotlib.pyplot as plt

        from lowlat.machine import machine_label

        if ax is None:
            _, ax = plt.subplots(figsize=(8, 3.2))
        colors = plt.get_cmap("tab10")(range(10))
        e2e = self.end_to_end_p_us
        right = max(self.total_us, self.sum_of_stage_p_us, e2e or 0.0) * 1.2
        for col, key in enumerate(("allotment_us", "p_us")):
            left = 0.0
            for i, s in enumerate(self.stages):
                w = getattr(s, key)
                over = key == "p_us" and not s.ok
                ax.barh(
                    col,
                    w,
                    left=left,
                    color=colors[i % 10],
                    edgecolor="red" if over else "white",
                    linewidth=2 if over else 0.5,
                    label=s.stage if col == 0 else None,
                )
                if w > right * 0.011 * (len(s.stage) + 2):  # the name fits inside its bar
                    ax.text(left + w / 2, col, s.stage, ha="center", va="center", fontsize=8, color="white")
                left += w
        p = f"P{self.percentile:g}"
        ticks, labels = [0, 1], ["allotments", f"stage {p}s, stacked\n(not a percentile)"]
        if e2e is not None:
            ax.barh(2, e2e, color="black")
            verdict = "within budget" if e2e <= self.total_us else "OVER budget"
            ax.text(e2e, 2, f" {e2e:.1f} us ({verdict})", va="center", fontsize=8)
            ticks.append(2)
            labels.append(f"end-to-end {p}\n(the verdict)")
        top = ticks[-1]
        ax.axvline(self.total_us, color="black", linestyle="--", linewidth=1)
        ax.text(self.total_us, top + 0.45, f" budget {self.total_us:g} us", va="center", fontsize=8)
        ax.set_yticks(ticks, labels)
        ax.set_xlabel("time (us)")
        ax.set_ylim(-0.6, top + 0.7)
        ax.set_xlim(0, right)
        ax.set_title(title or f"Latency budget: end-to-end {p} and where it went\n{machine_label()}", fontsize=10)
        ax.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=7, ncol=min(len(self.stages), 6), frameon=False
        )
        return ax


def _check_stages(allotments: Mapping[str, float] | Sequence[tuple[str, float]]) -> dict[str, float]:
    if isinstance(allotments, (str, bytes)) or not (isinstance(allotments, Mapping) or hasattr(allotments, "__iter__")):
        raise TypeError(
            f"stages must map names to allotments (us) or be (name, us) pairs, got {type(allotments).__name__} "
            f"{allotments!r}"
        )
    items = list(allotments.items()) if isinstance(allotments, Mapping) else list(allotments)
    if not items:
        raise ValueError("a budget needs at least one stage")
    out: dict[str, float] = {}
    for item in items:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"each stage must be a (name, allotment in us) pair, got {item!r}")
        name, us = item
        if not isinstance(name, str) or not name:
            raise TypeError(f"a stage's name must be a non-empty string, got {name!r}")
        if name in out:
            raise ValueError(f"stage {name!r} appears twice; stage names must be unique")
        out[name] = _us(us, f"the allotment of stage {name!r}")
    return out


def stage_percentiles(samples_ns: Mapping[str, Any], percentile: float) -> dict[str, float]:
    """The ``percentile`` of each stage's samples, ns in, us out (numpy's
    default linear interpolation).  Samples must be finite and >= 0."""
    p = _percentile(percentile)
    if not isinstance(samples_ns, Mapping):
        raise TypeError(f"samples_ns must map each stage's name to its samples (ns), got {type(samples_ns).__name__}")
    return {k: float(np.percentile(_samples(k, v), p)) / 1000.0 for k, v in samples_ns.items()}


def attribute(stages: Sequence[tuple[str, float, float]], total_us: float) -> list[tuple[tuple[str, float], ...]]:
    """For (name, allotment_us, measured_us) in pipeline order: whose time
    each overrun ate (see the module's rule)."""
    total_us = _us(total_us, "total_us")
    if isinstance(stages, (str, bytes, Mapping)) or not isinstance(stages, Sequence):
        raise TypeError(f"stages must be a sequence of (name, allotment_us, measured_us), got {type(stages).__name__}")
    for item in stages:
        if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], str)):
            raise TypeError(f"each of stages must be a (name, allotment_us, measured_us) triple, got {item!r}")
    for name, a, m in stages:
        _us(a, f"the allotment of stage {name!r}")
        _us(m, f"the measured time of stage {name!r}", zero=True)
    slack = [max(0.0, a - m) for _, a, m in stages]
    reserve = max(0.0, total_us - sum(a for _, a, _ in stages))
    result: list[tuple[tuple[str, float], ...]] = []
    for i, (_, a, m) in enumerate(stages):
        need = max(0.0, m - a)
        ate: list[tuple[str, float]] = []
        for j in list(range(i + 1, len(stages))) + list(range(0, i)):
            if need <= 0:
                break
            take = min(need, slack[j])
            if take > 0:
                ate.append((stages[j][0], take))
                slack[j] -= take
                need -= take
        if need > 0 and reserve > 0:
            take = min(need, reserve)
            ate.append((RESERVE, take))
            reserve -= take
            need -= take
        if need > 0:
            ate.append((OVER_BUDGET, need))
        result.append(tuple(ate))
    return result


def reallocate(measured_us: Mapping[str, float], total_us: float) -> dict[str, float]:
    """New allotments from measured percentiles: each stage gets what it was
    measured to need, and the leftover of the total is shared in proportion
    to those needs (bigger stages get more headroom).  Raises ValueError when
    the needs alone exceed the total, and for needs that are not finite
    numbers >= 0."""
    total_us = _us(total_us, "total_us")
    if not isinstance(measured_us, Mapping):
        raise TypeError(f"measured_us must map each stage's name to its need (us), got {type(measured_us).__name__}")
    if not measured_us:
        raise ValueError("reallocate needs at least one stage's measured time")
    measured_us = {k: _us(v, f"the measured need of stage {k!r}", zero=True) for k, v in measured_us.items()}
    need = sum(measured_us.values())
    if need > total_us:
        raise ValueError(
            f"the measured stages need {need:.1f} us, more than the {total_us:g} us budget: "
            "no per-stage allotments can fit (the end-to-end percentile may still be within it: quantiles do not "
            "add); make a stage faster or the budget larger"
        )
    if need == 0:
        share = total_us / len(measured_us)
        return {k: share for k in measured_us}
    scale = total_us / need
    return {k: v * scale for k, v in measured_us.items()}


class Budget:
    """An end-to-end budget of ``total_us`` split into stages, in pipeline
    order: ``Budget(100, [("parse", 10), ("features", 20), ...])``.  The
    allotments may leave part of the total unallotted (the reserve)."""

    def __init__(self, total_us: float, stages: Mapping[str, float] | Sequence[tuple[str, float]]) -> None:
        self.total_us = _us(total_us, "total_us")
        self.allotments = _check_stages(stages)
        allotted = sum(self.allotments.values())
        if allotted > self.total_us + 1e-9:
            raise ValueError(f"the allotments sum to {allotted:g} us, more than the total budget of {total_us:g} us")

    @property
    def reserve_us(self) -> float:
        return self.total_us - sum(self.allotments.values())

    def report(self, samples_ns: Mapping[str, Any], percentile: float = 99.0) -> BudgetReport:
        """Checks per-stage samples (ns) against the allotments.  Samples must
        be finite durations >= 0 (a NaN, inf or negative one is refused,
        naming its stage and index, rather than hidden in a percentile)."""
        percentile = _percentile(percentile)
        if not isinstance(samples_ns, Mapping):
            raise TypeError(
                f"samples_ns must map each stage's name to its samples (ns), got {type(samples_ns).__name__}"
            )
        missing = [s for s in self.allotments if s not in samples_ns]
        extra = [s for s in samples_ns if s not in self.allotments]
        if missing or extra:
            raise ValueError(
                f"samples must have exactly the budget's stages {list(self.allotments)}; "
                f"missing {missing}, unknown {extra}"
            )
        arrays = {k: _samples(k, samples_ns[k]) for k in self.allotments}
        p50 = stage_percentiles(arrays, 50)
        p = stage_percentiles(arrays, percentile)
        rows = [(k, a, p[k]) for k, a in self.allotments.items()]
        ate = attribute(rows, self.total_us)
        stages = tuple(StageReport(k, a, p50[k], p[k], max(0.0, p[k] - a), ate[i]) for i, (k, a, _) in enumerate(rows))
        lengths = {a.size for a in arrays.values()}
        e2e = None
        if len(lengths) == 1:
            e2e = float(np.percentile(np.sum(list(arrays.values()), axis=0), percentile)) / 1000.0
        return BudgetReport(self.total_us, float(percentile), stages, e2e)

    def reallocated(self, report: BudgetReport) -> Budget:
        """A new budget whose allotments follow the measured percentiles."""
        if not isinstance(report, BudgetReport):
            raise TypeError(f"report must be a BudgetReport (from Budget.report), got {type(report).__name__}")
        return Budget(self.total_us, reallocate({s.stage: s.p_us for s in report.stages}, self.total_us))

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v:g}" for k, v in self.allotments.items())
        return f"<Budget {self.total_us:g} us: {parts}; reserve {self.reserve_us:g} us>"


__all__ = ["Budget", "BudgetReport", "StageReport", "attribute", "reallocate", "stage_percentiles"]
