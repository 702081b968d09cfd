"""False sharing, shown with a margin (chapter 03's first lesson), run by
``csrc/bench/lesson_sharing.c``.

Two C threads each add 1 to their *own* 64-bit counter ``increments``
times.  In the "one line" layout the two counters are 8 bytes apart, in one
cache line; in the "apart" layout they are ``LL_FALSE_SHARING_RANGE`` (128)
bytes apart, out of each other's line and of the adjacent-line prefetcher's
pair.  The threads share no data, yet in one line every increment must first
take the line back from the other core.

The three increment forms, and why only two show it (a 2-vCPU VM measured
4.0-4.9x, 1.5-3.2x and 1.0x):

- ``"atomic"`` (the default): ``atomic_fetch_add``, a locked add.  It cannot
  finish until this core owns the line, so each one waits for a transfer
  whenever the other thread took the line in between: the mechanism, bare.
- ``"volatile"``: a plain load, add and store.  The store waits in the store
  buffer while the line is fetched, so part of the wait is hidden; the load
  of the next increment still needs the line.
- ``"store"``: a relaxed store of ``i``, no load.  Stores retire into the
  store buffer and drain in batches, one line transfer for many stores: the
  thread never waits for the line, so false sharing costs (almost) nothing.
  False sharing hurts code that *reads* or *atomically updates* a shared
  line, which is what a ring's cursors do.

On one CPU the threads take turns: the line never leaves that CPU's cache,
so the expected ratio is about 1 (``cpus_used`` says which case ran).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_pair, usable_cpus
from lowlat.core.argcheck import real_arg
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.validate import int_arg
from lowlat.machine.placement import bench_cpus
from lowlat.method.gate import MetricGate
from lowlat.method.interleave import interleave, median, ratios
from lowlat.method.readings import compare, conditions

FORMS = {"atomic": 0, "volatile": 1, "store": 2}
# ns per increment: a contended locked add is ~50-200 ns, so 2*10^7 is a few seconds at most
MAX_INCREMENTS = 20_000_000
MIN_INCREMENTS = 1000  # one timed chunk (LL_SHARE_CHUNK)
MAX_ROUNDS = 1000
ONE_LINE_BYTES = 8  # the two counters side by side: one cache line


def apart_bytes() -> int:
    """The "apart" distance: the core's LL_FALSE_SHARING_RANGE (128 bytes)."""
    return int(lib.LL_FALSE_SHARING_RANGE)


@dataclass(frozen=True)
class SharingRound:
    """One run of the two threads.  ``ns_per_increment``: the median of
    the run's timed chunks of 1,000 increments (both threads pooled; the
    threads go in step, chunk by chunk, so the chunks run side by side
    whenever both have a CPU, and a chunk during which a busy machine
    descheduled the other thread is an outlier the median ignores).
    ``wall_ns_per_increment``: start gate to both done, / increments.
    ``ran_on``: the CPUs the threads ended on (-1: unknown)."""

    ns_per_increment: float
    wall_ns_per_increment: float
    ran_on: tuple[int, int]


def false_sharing_once(
    increments: int = 1_000_000, *, form: str = "atomic", distance: int = 8, cpus: tuple[int, int] | None = None
) -> SharingRound:
    """One run of the two threads, counters ``distance`` bytes apart (a
    multiple of 8, 8..4096).  ``cpus``: where to pin the two threads
    (None: :func:`lowlat.machine.placement.bench_cpus`; (-1, -1): not
    pinned; the same CPU twice: they take turns on it)."""
    n = int_arg(increments, "increments", minimum=MIN_INCREMENTS, maximum=MAX_INCREMENTS)
    if not isinstance(form, str) or form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    d = int_arg(distance, "distance", minimum=8, maximum=int(lib.LL_SHARE_MAX_DISTANCE))
    if d % 8:
        raise ValueError(f"distance must be a multiple of 8 bytes (a counter's size), got {d}")
    a, b = bench_cpus() if cpus is None else cpu_pair(cpus, "cpus", ("first thread", "second thread"))
    out = ffi.new("ll_share_result *")
    with quiet_blas():  # no spinning BLAS worker on the pinned CPUs
        check_status(lib.ll_lesson_false_sharing(n, FORMS[form], d, a, b, out), "false-sharing run")
    return SharingRound(
        float(out.ns_per_increment),
        float(out.wall_ns_per_increment),
        (int(out.cpu_a_ran), int(out.cpu_b_ran)),
    )


@dataclass(frozen=True)
class FalseSharing:
    """The demonstration's numbers: ns per increment (see
    :class:`SharingRound`) per round for the
    counters in one line, apart, and apart again (the A/A pair, interleaved
    in the same rounds: this run's noise).  ``cpus``: the pinned pair
    ((-1, -1): not pinned); ``cpus_used``: CPUs the threads could run on at
    once (1: they took turns, no effect expected); ``margin``: the A/A
    margin added to the noise to make the threshold."""

    form: str
    increments: int
    one_line_ns: list[float]
    apart_ns: list[float]
    apart_again_ns: list[float]
    cpus: tuple[int, int]
    cpus_used: int
    margin: float
    reasons: list[str] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        """Per-round slowdown of one line against apart (> 1: slower)."""
        return ratios(self.one_line_ns, self.apart_ns)

    @property
    def aa_ratios(self) -> list[float]:
        """Per-round apart-again / apart: what "no difference" looks like here."""
        return ratios(self.apart_again_ns, self.apart_ns)

    @property
    def ratio(self) -> float:
        """The median per-round slowdown."""
        return median(self.ratios)

    @property
    def gate(self) -> MetricGate:
        """The decision rule (:class:`lowlat.method.gate.MetricGate`): the
        threshold is how far the A/A middle half reaches from 1, plus ``margin``."""
        return MetricGate("ns per increment", np.array(self.ratios), np.array(self.aa_ratios), self.margin)

    @property
    def threshold(self) -> float:
        """The ratio the slowdown's middle half must clear (1 + noise + margin)."""
        return 1.0 + self.gate.threshold

    @property
    def shown(self) -> bool:
        """The effect by the course's rule: the lower quartile of the
        per-round ratios above the threshold from this run's A/A band."""
        return self.gate.spread[0] > self.threshold

    @property
    def band_multiple(self) -> float:
        """The effect (median ratio - 1) in units of the A/A band's reach
        from 1 (inf when the A/A rounds agreed exactly)."""
        noise = self.gate.noise
        return (self.ratio - 1.0) / noise if noise > 0 else math.inf

    def reading(self) -> str:
        """The medians (:func:`lowlat.method.readings.compare`'s line), the
        threshold this run's A/A band set, and the decision by that rule."""
        measured = compare(
            f"false sharing, ns per {self.form} increment",
            ("apart", self.apart_ns),
            ("one line", self.one_line_ns),
            unit="",  # below 1 ns: three significant digits, not a rounded 0 ns
            threshold=self.threshold,
        ).text.splitlines()[0]
        lo, hi = self.gate.spread
        alo, ahi = self.gate.aa_spread
        rule = (
            f"  one line / apart: {self.ratio:.2f}x (middle half {lo:.2f}-{hi:.2f}x); threshold {self.threshold:.2f}x "
            f"= A/A middle half {alo:.2f}-{ahi:.2f}x + margin {self.margin:.0%}"
        )
        if self.cpus_used < 2:
            verdict = "one CPU: the threads took turns and the line never moved: about 1x is the expected outcome."
        elif self.shown:
            times = "" if math.isinf(self.band_multiple) else f" ({self.band_multiple:.0f}x the A/A band)"
            verdict = f"an effect: the middle half clears the threshold{times}."
        elif self.form == "store":
            verdict = "no effect, as expected for plain stores: the store buffer batches them."
        else:
            why = "; ".join(self.reasons) if self.reasons else "nothing unusual detected"
            verdict = f"not decided: the middle half does not clear the threshold ({why}); more rounds would decide."
        return f"{measured}\n{rule}\n  -> {verdict}"


def false_sharing(
    increments: int = 1_000_000,
    rounds: int = 9,
    *,
    form: str = "atomic",
    cpus: tuple[int, int] | None = None,
    margin: float = 0.05,
) -> FalseSharing:
    """The demonstration: the two layouts and the A/A pair (apart twice),
    interleaved over ``rounds`` rounds (:func:`lowlat.method.interleave`),
    ``increments`` per thread per run.  ``form``: "atomic" (default: shows
    the mechanism), "volatile" or "store" (shows why stores hide it).
    ``cpus`` as :func:`false_sharing_once` takes it.  ``margin``: added to
    the A/A noise to make the threshold (0..1).  About
    rounds x 3 x increments x (2..100) ns."""
    n = int_arg(increments, "increments", minimum=MIN_INCREMENTS, maximum=MAX_INCREMENTS)
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=MAX_ROUNDS)
    if not isinstance(form, str) or form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    margin = real_arg(margin, "margin", minimum=0.0, maximum=1.0)
    pair = bench_cpus() if cpus is None else cpu_pair(cpus, "cpus", ("first thread", "second thread"))
    far = apart_bytes()

    def run(distance: int) -> float:
        return false_sharing_once(n, form=form, distance=distance, cpus=pair).ns_per_increment

    res = interleave(
        {"one line": lambda: run(ONE_LINE_BYTES), "apart": lambda: run(far), "apart again": lambda: run(far)}, rounds
    )
    two = len(usable_cpus()) >= 2 and (pair[0] < 0 or pair[0] != pair[1])
    reasons = conditions()
    if two and pair[0] < 0:
        reasons.append("the threads were not pinned: they may have shared a CPU for part of the run")
    if not two and pair[0] >= 0 and len(usable_cpus()) >= 2:
        reasons.append(f"both threads were pinned to CPU {pair[0]}: they took turns on it")
    return FalseSharing(
        form, n, res["one line"], res["apart"], res["apart again"], pair, 2 if two else 1, margin, reasons
    )


__all__ = [
    "FORMS",
    "MAX_INCREMENTS",
    "FalseSharing",
    "SharingRound",
    "apart_bytes",
    "false_sharing",
    "false_sharing_once",
]
