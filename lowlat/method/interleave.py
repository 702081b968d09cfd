"""The course's comparison method, in one place: run the contenders
interleaved (A B A B ..., alternating which goes first), many rounds in one
run, and compare medians and per-round ratios.  A change in the machine's
state during the run (a host moving the vCPUs, a frequency step, another
process) then hits every contender alike instead of deciding the result.

Every experiment that compares variants measures through :func:`interleave`.
The decision rule every reading and gate applies to the per-round ratios
(chapter 04a's) lives in :mod:`lowlat.method.rule`; :func:`interleave_aa`
measures its A/A band in the same rounds as the comparison.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from lowlat.core.argcheck import bool_arg, callable_arg, str_arg
from lowlat.core.validate import int_arg
from lowlat.method.rule import MARGIN, AABand, aa_band

T = TypeVar("T")

MAX_ROUNDS = 100_000  # far beyond any chapter's; bounds the work a typo could start


def interleave(
    variants: Mapping[str, Callable[[], T]],
    rounds: int,
    *,
    alternate: bool = True,
    between: Callable[[], object] | None = None,
) -> dict[str, list[T]]:
    """Runs each variant once per round, ``rounds`` rounds (1 to 100,000);
    returns each variant's results in round order.  With ``alternate`` the
    order is reversed every other round (A B, B A, ...), cancelling order
    effects such as a warm cache left by the previous variant.  ``between``
    runs once before each round (e.g. to sample the core-to-core latency)."""
    if not isinstance(variants, Mapping) or not variants:
        raise TypeError(f"variants must be a non-empty dict of name -> function, got {variants!r:.80}")
    for k, fn in variants.items():
        str_arg(k, "variants: a variant's name")
        callable_arg(fn, f"variants[{k!r}]")
    rounds = int_arg(rounds, "rounds", minimum=1, maximum=MAX_ROUNDS)
    alternate = bool_arg(alternate, "alternate")
    if between is not None:
        callable_arg(between, "between")
    names = list(variants)
    out: dict[str, list[T]] = {k: [] for k in names}
    for r in range(rounds):
        if between is not None:
            between()
        order = names[::-1] if alternate and r % 2 else names
        for k in order:
            out[k].append(variants[k]())
    return out


def interleave_aa(
    variants: Mapping[str, Callable[[], float]],
    rounds: int,
    *,
    baseline: str,
    margin: float = MARGIN,
    alternate: bool = True,
    between: Callable[[], object] | None = None,
) -> tuple[dict[str, list[float]], AABand]:
    """:func:`interleave` with the ``baseline`` variant run a second time in
    every round (A, A', B ...): returns the variants' results and the A/A
    band of A'/A (this run's noise, :class:`lowlat.method.rule.AABand`),
    to pass to :func:`lowlat.method.readings.compare` as ``aa=``.  Each
    call must return a positive finite cost (ns, ms, items/s...)."""
    if not isinstance(variants, Mapping) or not variants:
        raise TypeError(f"variants must be a non-empty dict of name -> function, got {variants!r:.80}")
    str_arg(baseline, "baseline")
    if baseline not in variants:
        raise ValueError(f"baseline must name one of the variants {list(variants)}, got {baseline!r}")
    again = f"{baseline} (A/A)"
    if again in variants:
        raise ValueError(f"variants must not already hold a variant named {again!r}")
    got = interleave({**variants, again: variants[baseline]}, rounds, alternate=alternate, between=between)
    a_prime = got.pop(again)
    return got, aa_band(got[baseline], a_prime, margin=margin)


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """``fn`` wrapped to return its wall time in seconds instead of its
    result (``time.perf_counter_ns``)."""
    callable_arg(fn, "fn")

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


def median_band(xs: Iterable[float], confidence: float = 0.9) -> tuple[float, float]:
    """A distribution-free band for the median of ``xs`` (per-round ratios):
    the order statistics ``x(j)`` and ``x(n-j+1)`` with the largest ``j``
    whose coverage, ``1 - 2 P(B <= j-1)`` for ``B ~ Binomial(n, 1/2)``, is
    at least ``confidence``; the lowest and highest value when no ``j``
    reaches it (fewer than 5 rounds at 90%).  A run's median falls inside
    that band of the true one ``confidence`` of the time."""
    v = sorted(xs)
    n = len(v)
    if n == 0:
        raise ValueError("median_band needs at least one value")
    j, below = 1, 0.0  # below: P(B <= j - 1)
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2**n
        if 1 - 2 * below < confidence:
            break
        j = k
    return float(v[j - 1]), float(v[n - j])


def medians(results: Mapping[str, list[float]]) -> dict[str, float]:
    """Each variant's median."""
    return {k: median(v) for k, v in results.items()}


__all__ = ["interleave", "interleave_aa", "median", "median_band", "medians", "ratios", "timed"]
