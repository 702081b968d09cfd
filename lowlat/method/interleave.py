"""The course's comparison method, in one place: run the contenders
interleaved (A B A B ..., alternating which goes first), many rounds in one
run, and compare medians and per-round ratios.  A change in the machine's
state during the run (a host moving the vCPUs, a frequency step, another
process) then hits every contender alike instead of deciding the result.

Every experiment that compares variants measures through :func:`interleave`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

T = TypeVar("T")


def interleave(
    variants: Mapping[str, Callable[[], T]],
    rounds: int,
    *,
    alternate: bool = True,
    between: Callable[[], object] | None = None,
) -> dict[str, list[T]]:
    """Runs each variant once per round, ``rounds`` rounds; returns each
    variant's results in round order.  With ``alternate`` the order is
    reversed every other round (A B, B A, ...), cancelling order effects
    such as a warm cache left by the previous variant.  ``between`` runs
    once before each round (e.g. to sample the core-to-core latency)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    names = list(variants)
    out: dict[str, list[T]] = {k: [] for k in names}
    for r in range(rounds):
        if between is not None:
            between()
        order = names[::-1] if alternate and r % 2 else names
        for k in order:
            out[k].append(variants[k]())
    return out


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """``fn`` wrapped to return its wall time in seconds instead of its
    result (``time.perf_counter_ns``)."""

    def run() -> float:
        t0 = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t0) / 1e9

    return run


def median(xs: Iterable[float]) -> float:
    """The median as a float (a single measurement's own value)."""
    return float(statistics.median(list(xs)))


def ratios(numerator: list[float], denominator: list[float]) -> list[float]:
    """Per-round ratios of two interleaved series (inf where the denominator
    is 0).  The median of the ratios is robust to a round that was slow for
    both contenders alike."""
    if len(numerator) != len(denominator):
        raise ValueError(f"series differ in length: {len(numerator)} vs {len(denominator)}")
    return [a / b if b else float("inf") for a, b in zip(numerator, denominator)]


def medians(results: Mapping[str, list[float]]) -> dict[str, float]:
    """Each variant's median."""
    return {k: median(v) for k, v in results.items()}


__all__ = ["interleave", "median", "medians", "ratios", "timed"]
