"""A regression only the P99 shows (chapter 04a's lesson), on the real C
pipeline: a rare slow path (``slow_ns`` extra work on ``fraction`` of the
ticks, injected: :class:`lowlat.core.pipeline.Faults`) leaves the median
tick untouched and moves the P99.  Both gates come from
:func:`lowlat.method.gate.noise_gate`, which applies chapter 04a's rule
(:mod:`lowlat.method.rule`): the baseline runs twice in every interleaved
round (A and A'), and each metric's threshold is 1 + its A/A band's reach
from 1 + the margin (5%), printed with its origin; the P50 gate does not
flag the change, the P99 gate catches it.

The baseline runs the same injection code with a zero-length slow path (the
draw alone), so the two differ by the slow path only.  Latencies in ns from
each tick's due time; the pipeline is :func:`lowlat.experiments.pipeline.demo_config`.
"""

from __future__ import annotations

from dataclasses import dataclass

from lowlat.core.affinity import usable_cpus
from lowlat.core.argcheck import real_arg
from lowlat.core.pipeline import Faults
from lowlat.core.validate import int_arg
from lowlat.experiments.pipeline import demo_config, run
from lowlat.method.gate import MetricGate, NoiseGate, latency_percentiles, noise_gate
from lowlat.method.readings import conditions


@dataclass(frozen=True)
class TailRegression:
    """The two gates on one injected slow path: ``gate`` (its ``metrics``
    "p50" and "p99", each with its A/A threshold), the slow path's size
    (``slow_us``, ``fraction``) and whether the run had one usable CPU."""

    slow_us: float
    fraction: float
    rate: float
    ticks: int
    gate: NoiseGate
    one_cpu: bool

    @property
    def p50(self) -> MetricGate:
        return self.gate.metrics["p50"]

    @property
    def p99(self) -> MetricGate:
        return self.gate.metrics["p99"]

    @property
    def lesson_shown(self) -> bool:
        """The P50 gate did not flag the change and the P99 gate caught it."""
        return self.p50.verdict != "REGRESSION" and self.p99.verdict == "REGRESSION"

    def reading(self) -> str:
        """Both gates' verdicts with the thresholds their A/A rounds set."""
        head = (
            f"a slow path of +{self.slow_us:g} us on {self.fraction:.1%} of {self.ticks:,} ticks "
            f"({self.fraction * self.ticks:,.0f} ticks a run):"
        )
        if self.lesson_shown:
            verdict = "the P50 gate did not flag it, the P99 gate caught it: gate on the tail you promise"
        elif self.p50.verdict == "REGRESSION" and self.one_cpu:
            verdict = (
                "the P50 moved too: on one usable CPU the producer waits for the CPU while the consumer runs the "
                "slow path, so the ticks after it are late as well; two CPUs keep the slow path to its own ticks"
            )
        elif self.p50.verdict == "REGRESSION":
            verdict = "the P50 moved too: the slow path is not rare enough to leave the median (fraction < 50%?)"
        else:
            lo, hi = self.p99.aa_spread
            if self.p50.noise > 1:  # the median itself moved 2x or more between identical runs
                verdict = (
                    f"the P99 gate did not catch it in this run: the baseline's own P50 moved {1 + self.p50.noise:,.1f}x "
                    "between its two copies, so the pipeline fell behind its schedule (other work took its CPUs) and "
                    "both P99s measured that backlog, not the slow path; free a CPU and run it again"
                )
            else:
                if lo > 1 or hi < 1:  # the baseline's two copies disagree: a pause hit one of them
                    why = (
                        f"the baseline's own P99 moved {max(hi, 1 / lo):,.1f}x between its two copies, an A/A band "
                        f"not holding 1: a pause hit one baseline run and raised the threshold to "
                        f"{self.p99.aa.threshold.factor:,.2f}x"
                    )
                else:
                    why = "; ".join(conditions()) or "nothing unusual detected"
                verdict = f"the P99 gate did not catch it in this run ({why}); longer runs steady the P99"
        rules = "; ".join(f"{k}: {g.aa.threshold.describe()}" for k, g in self.gate.metrics.items())
        return "\n".join(
            [head, *("  " + g.format() for g in self.gate.metrics.values()), f"  ({rules})", f"  -> {verdict}"]
        )


def tail_regression(
    slow_us: float = 50.0,
    fraction: float = 0.015,
    *,
    rate: float = 20_000.0,
    seconds: float = 0.2,
    rounds: int = 5,
    margin: float = 0.05,
) -> TailRegression:
    """Runs :func:`lowlat.method.gate.noise_gate` for ``rounds`` rounds
    (3-50) on the pipeline at ``rate`` ticks/s (1,000-200,000) for
    ``seconds`` (0.05-10) a run: baseline without, candidate with a slow
    path of ``slow_us`` (1-10,000 us) on ``fraction`` of the ticks
    (0.001-0.2: rare enough to leave the P50, common enough for the P99,
    which needs more than 1%).  ``margin`` (0-0.5) is added to each A/A
    noise to make the threshold."""
    slow_us = real_arg(slow_us, "slow_us", minimum=1.0, maximum=10_000.0)
    fraction = real_arg(fraction, "fraction", minimum=0.001, maximum=0.2)
    rate = real_arg(rate, "rate", minimum=1_000.0, maximum=200_000.0)
    seconds = real_arg(seconds, "seconds", minimum=0.05, maximum=10.0)
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=50)
    margin = real_arg(margin, "margin", minimum=0.0, maximum=0.5)
    ticks = max(1, round(rate * seconds))
    ppm = round(fraction * 1e6)
    base = demo_config(ticks, rate, faults=Faults(slow_ppm=ppm))  # the draw, no slow path
    cand = demo_config(ticks, rate, faults=Faults(slow_ns=round(slow_us * 1e3), slow_ppm=ppm))

    def measure(cfg: object) -> dict[str, float]:
        res = run(cfg)  # type: ignore[arg-type]
        return {k: max(v, 1.0) for k, v in latency_percentiles(res.intended, (50, 99)).items()}

    g = noise_gate(
        f"P99-only regression (+{slow_us:g} us on {fraction:.1%})",
        lambda: measure(base),
        lambda: measure(cand),
        rounds=rounds,
        margin=margin,
    )
    return TailRegression(slow_us, fraction, rate, ticks, g, len(usable_cpus()) < 2)


__all__ = ["TailRegression", "tail_regression"]
