"""The ring's high-watermark (chapter 05b's lesson), on the real C pipeline:
a consumer stall of S seconds at R ticks/s leaves about S x R ticks in the
ring (bounded by its capacity); a producer pause leaves the ring empty
instead: the open loop then sends the overdue ticks at once (they count as
late sends), a burst the consumer drains as it comes.

The watermark is sampled by the producer every 64 ticks (exact when the ring
is full), so a peak may read up to 64 ticks low.  Faults are injected
(:class:`lowlat.core.pipeline.Faults`); the pipeline is
:func:`lowlat.experiments.pipeline.demo_config`.  Counts in ticks.

The verdict "the stall raised the watermark" is chapter 04a's rule
(:mod:`lowlat.method.rule`, read by :func:`lowlat.method.readings.compare`):
``rounds`` rounds, each running the quiet pipeline twice (A and A', the A/A
pair), the stalled one and the paused one, interleaved
(:func:`lowlat.method.interleave.interleave_aa`); the per-round ratio
stalled / quiet must clear 1 + the quiet A/A band's reach from 1 + 5%
margin.  A watermark of 0 counts as 1 tick (a ratio needs a positive
number).  How far the stalled watermark lies from stall x rate is a
separate check, with a tolerance (the sampling step, the quiet run's own
watermark), not a threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lowlat.core.affinity import usable_cpus
from lowlat.core.argcheck import real_arg
from lowlat.core.pipeline import Faults, PipelineConfig
from lowlat.core.validate import int_arg, power_of_two
from lowlat.experiments.pipeline import demo_config, start
from lowlat.method.interleave import interleave_aa
from lowlat.method.readings import Reading, compare
from lowlat.method.rule import AABand

SAMPLE_EVERY = 64  # the producer samples the occupancy every 64 ticks


def _median(xs: list[int]) -> int:
    return sorted(xs)[len(xs) // 2]


@dataclass(frozen=True)
class Watermark:
    """Watermarks per round (ticks, lists): none injected (``quiet_runs``,
    and ``quiet_again_runs``, the A/A pair), a consumer stall
    (``stalled_runs``), a producer pause (``paused_runs``, with its
    ``late_runs`` sends; every watermark at least 1 tick, as the rule
    reads it); ``quiet`` (of ``quiet_runs``, as the rule's reading
    prints it)/``stalled``/``paused``/``late`` are the medians.  ``predicted`` = min(capacity, stall x rate); the stalled
    median may lie up to 64 ticks below it (the sampling step) and above it
    by the quiet run's own watermark (the machine's own stalls: preemptions)."""

    stall_ms: float
    pause_ms: float
    rate: float
    capacity: int
    quiet_runs: list[int]
    quiet_again_runs: list[int]
    stalled_runs: list[int]
    paused_runs: list[int]
    late_runs: list[int]
    aa: AABand  # A'/A of the quiet watermark (at least 1 tick each)
    one_cpu: bool

    @property
    def quiet(self) -> int:
        """The quiet runs' median, each read as at least the sampling step (below it the watermark
        cannot tell 2 ticks from 64): the number the rule's reading prints (A' only sets its band)."""
        return _median([max(SAMPLE_EVERY, q) for q in self.quiet_runs])

    @property
    def stalled(self) -> int:
        return _median(self.stalled_runs)

    @property
    def paused(self) -> int:
        return _median(self.paused_runs)

    @property
    def late(self) -> int:
        return _median(self.late_runs)

    @property
    def threshold(self) -> float:
        """The rule's threshold (a factor): 1 + the quiet A/A band's reach from 1 + margin."""
        return self.aa.threshold.factor

    def compared(self) -> Reading:
        """The rule's reading of stalled vs quiet (the quiet run predicted lower)."""
        return compare(
            f"watermark with a {self.stall_ms:g} ms consumer stall",
            ("quiet", [max(SAMPLE_EVERY, q) for q in self.quiet_runs]),
            ("stalled", [max(SAMPLE_EVERY, q) for q in self.stalled_runs]),
            unit="ticks",
            aa=self.aa,
        )

    @property
    def raised(self) -> bool:
        """The rule called it: the stall raised the watermark beyond the quiet A/A noise."""
        return self.compared().shown

    @property
    def predicted(self) -> int:
        return min(self.capacity, round(self.stall_ms / 1e3 * self.rate))

    @property
    def tolerance(self) -> int:
        """How far below the prediction a reading may be: the sampling step,
        or 0 when the ring filled (exact there)."""
        return 0 if self.predicted >= self.capacity else SAMPLE_EVERY

    @property
    def late_predicted(self) -> int:
        """Late sends a producer pause must leave: the ticks due while it was
        paused, each sent more than one tick period after its due time (the
        last one may be just under)."""
        return max(0, round(self.pause_ms / 1e3 * self.rate) - 1)

    @property
    def pause_matches(self) -> bool:
        return self.late >= self.late_predicted

    @property
    def stall_matches(self) -> bool:
        return self.predicted - self.tolerance <= self.stalled <= self.predicted + max(self.quiet, SAMPLE_EVERY)

    def reading(self) -> str:
        """Measured vs predicted, with the tolerance used."""
        bound = " (the ring's capacity: it filled)" if self.predicted >= self.capacity else ""
        verdict = "as predicted" if self.stall_matches else "NOT as predicted"
        lines = [
            self.compared().text,
            f"watermark, quiet run: {self.quiet:,} ticks; a {self.stall_ms:g} ms consumer stall at "
            f"{self.rate:,.0f}/s: {self.stalled:,} measured vs {self.predicted:,} predicted{bound} "
            f"(stall x rate; tolerance -{self.tolerance}: sampled every {SAMPLE_EVERY} ticks, "
            f"+{max(self.quiet, SAMPLE_EVERY)}: the quiet run's own): "
            f"{verdict}",
            f"a {self.pause_ms:g} ms producer pause: {self.late:,} late sends vs at least {self.late_predicted:,} "
            f"predicted (the ticks due during the pause): {'as predicted' if self.pause_matches else 'NOT as predicted'}"
            f"; watermark {self.paused:,}: the ring stays near empty while nothing is made; the overdue ticks then go "
            "out at once"
            + (
                f", a burst that filled it to {self.paused:,} (above the quiet {self.quiet:,} + {SAMPLE_EVERY})"
                if self.paused > self.quiet + SAMPLE_EVERY
                else f", a burst the consumer kept up with (within the quiet {self.quiet:,} + {SAMPLE_EVERY})"
            ),
        ]
        if self.one_cpu:
            lines.append(
                "  one usable CPU: the stalled consumer spins on the CPU the producer needs; the producer makes its "
                "ticks in the turns the scheduler gives it, late, and the rest right after: the watermark still "
                "rises by about stall x rate, give or take a turn's worth of ticks"
            )
        return "\n".join(lines)


def _watermark(cfg: PipelineConfig) -> tuple[int, int]:
    r = start(cfg)
    res = r.join()
    return r.snapshot().watermark, res.late_sends


def watermark(
    stall_ms: float = 20.0,
    *,
    rate: float = 20_000.0,
    capacity: int = 4096,
    pause_ms: float | None = None,
    seconds: float = 0.5,
    rounds: int = 3,
) -> Watermark:
    """``rounds`` rounds (3-20), interleaved, of four runs at ``rate``
    ticks/s (1,000-200,000) for ``seconds`` (0.05-60) with a ring of
    ``capacity`` ticks (a power of two, 64-65,536): quiet twice (the A/A
    pair), a consumer stall of ``stall_ms`` (0.5-1,000 ms, at most a fifth
    of the run) and a producer pause of ``pause_ms`` (default: as the
    stall), each at the middle tick."""
    stall_ms = real_arg(stall_ms, "stall_ms", minimum=0.5, maximum=1_000.0)
    pause_ms = stall_ms if pause_ms is None else real_arg(pause_ms, "pause_ms", minimum=0.5, maximum=1_000.0)
    rate = real_arg(rate, "rate", minimum=1_000.0, maximum=200_000.0)
    seconds = real_arg(seconds, "seconds", minimum=0.05, maximum=60.0)
    if max(stall_ms, pause_ms) / 1e3 > seconds / 5:
        raise ValueError(f"stall_ms/pause_ms are more than a fifth of the run ({seconds:g} s): run longer")
    capacity = power_of_two(capacity, "capacity")
    int_arg(capacity, "capacity", minimum=64, maximum=65_536)
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=20)
    ticks = max(1, round(rate * seconds))
    mid = ticks // 2
    cfgs = {
        "quiet": demo_config(ticks, rate, capacity=capacity),
        "stalled": demo_config(
            ticks, rate, capacity=capacity, faults=Faults(stall_ns=round(stall_ms * 1e6), stall_at=mid)
        ),
        "paused": demo_config(
            ticks, rate, capacity=capacity, faults=Faults(pause_ns=round(pause_ms * 1e6), pause_at=mid)
        ),
    }
    late: list[int] = []

    def variant(name: str) -> Callable[[], float]:
        def measure() -> float:
            wm, n_late = _watermark(cfgs[name])
            if name == "paused":
                late.append(n_late)
            # Below the sampling step the watermark cannot tell 2 ticks from 64: read it as the step,
            # so that the A/A band measures the machine's noise, not the resolution's.
            return float(max(SAMPLE_EVERY, wm))

        return measure

    got, aa = interleave_aa({k: variant(k) for k in cfgs}, rounds, baseline="quiet")
    quiet = [int(x) for x in got["quiet"]]
    again = [round(aa.band.ratios[i] * quiet[i]) for i in range(rounds)]
    return Watermark(
        stall_ms,
        pause_ms,
        rate,
        capacity,
        quiet,
        again,
        [int(x) for x in got["stalled"]],
        [int(x) for x in got["paused"]],
        late,
        aa,
        len(usable_cpus()) < 2,
    )


__all__ = ["SAMPLE_EVERY", "Watermark", "watermark"]
