"""Coordinated omission on the real C pipeline (chapter 04a's lesson): an
open-loop run whose consumer stalls once, on purpose, and the same ticks'
P99 measured two ways.

- From the **push** (``sent``): what a closed-loop tester sees.  The ring is
  small (``capacity`` ticks, a tester with that many requests outstanding),
  so during the stall the producer waits for room and sends the overdue
  ticks late, all at once after the stall; measured from that late send,
  they look fast.  Only the few ticks already in the ring saw the stall.
- From the **due** time (``intended``): the open loop's truth.  Every tick
  due during the stall waited for it; ``stall x rate`` ticks carry up to the
  whole stall.

The stall is injected (:class:`lowlat.core.pipeline.Faults`), so the
mechanism shows on any machine, one CPU included.  The pipeline is
:func:`lowlat.experiments.pipeline.demo_config` (yielding, unpinned: the
steadiest on a shared machine).

The verdict is chapter 04a's rule (:mod:`lowlat.method.rule`, read by
:func:`lowlat.method.readings.compare`): every round runs the stalled
pipeline twice, identically (A and A', one after the other in the same
session); the per-round ratio P99 from due / P99 from push must clear the
threshold 1 + the A/A band's reach from 1 + 5% margin, the A/A band being
A'/A of the P99 from due (the view that carries the stall).  At least three
rounds: fewer give no band.  Latencies in us.
"""

from __future__ import annotations

from dataclasses import dataclass

from lowlat.core.affinity import usable_cpus
from lowlat.core.argcheck import real_arg
from lowlat.core.pipeline import Faults
from lowlat.core.validate import int_arg, power_of_two
from lowlat.experiments.pipeline import demo_config, run
from lowlat.method.readings import Reading, compare
from lowlat.method.rule import AABand, aa_band


def clamp_us(ns: float) -> float:
    """A latency in us, at least 0.001 (a histogram's 0 would not divide)."""
    return max(float(ns) / 1e3, 0.001)


@dataclass(frozen=True)
class Omission:
    """Per round (a list each, us): the stalled run's P99 from its due
    times and from its pushes, and the same for an identical second run (the
    A/A pair).  ``aa``: the A/A band (A'/A of the P99 from due) whose
    rule threshold (``threshold``, a factor) the effect must clear;
    ``hidden_ticks`` (stall x rate) the ticks due during the stall;
    ``one_cpu``: the run had one usable CPU."""

    stall_ms: float
    rate: float
    ticks: int
    capacity: int
    p99_due_us: list[float]
    p99_push_us: list[float]
    p99_due_again_us: list[float]
    p99_push_again_us: list[float]
    aa: AABand  # A'/A of the P99 from due (the view that carries the stall)
    one_cpu: bool

    @property
    def threshold(self) -> float:
        """The rule's threshold (a factor, e.g. 1.12): 1 + the A/A band's reach from 1 + margin."""
        return self.aa.threshold.factor

    @property
    def hidden_ticks(self) -> float:
        return self.stall_ms / 1e3 * self.rate

    @property
    def ratios(self) -> list[float]:
        """Per round: P99 from due / P99 from push (how much the push view hides)."""
        return [d / p for d, p in zip(self.p99_due_us, self.p99_push_us)]

    @property
    def ratio(self) -> float:
        """The median round's ratio."""
        r = sorted(self.ratios)
        return r[len(r) // 2]

    def compared(self) -> Reading:
        """The rule's reading (:func:`lowlat.method.readings.compare`): the
        push view predicted lower, the A/A band setting the threshold."""
        return compare(
            f"P99 with a {self.stall_ms:g} ms consumer stall",
            ("from the push (closed-loop view)", self.p99_push_us),
            ("from the due time (open loop)", self.p99_due_us),
            unit="us",
            aa=self.aa,
        )

    @property
    def shown(self) -> bool:
        """The rule called the effect: the push view hid the stall."""
        return self.compared().shown

    def reading(self) -> str:
        """The run's reading, with the threshold it used."""
        r = self.compared()
        lines = [r.text]
        if self.capacity >= self.hidden_ticks:
            lines.append(
                f"  the ring ({self.capacity} ticks) holds every tick due during the stall "
                f"({self.hidden_ticks:,.0f}): no send was delayed, so the push view saw the stall too"
            )
        elif self.shown:
            lines.append(
                f"  the push view hid the stall: {self.hidden_ticks:,.0f} ticks were due during it, only "
                f"{self.capacity} waited in the ring; the rest were sent late and timed from their late send"
            )
        if self.one_cpu:
            lines.append(
                "  one usable CPU: the threads took turns, which widens the A/A band, but the stall is injected, "
                "so the same mechanism shows"
            )
        return "\n".join(lines)


def coordinated_omission(
    stall_ms: float = 20.0,
    *,
    rate: float = 50_000.0,
    seconds: float = 1.0,
    capacity: int = 8,
    rounds: int = 3,
) -> Omission:
    """Runs ``rounds`` rounds (3-20) of two identical open-loop runs at ``rate``
    ticks/s (1,000-200,000; default 50,000: 1,000 ticks due per 20 ms) for ``seconds`` (0.05-60) each, the consumer
    stalling ``stall_ms`` (0.1-1,000 ms, at most a fifth of the run) once at
    the middle tick, with a ring of ``capacity`` ticks (a power of two,
    2-65,536).  Returns the P99s both ways (:class:`Omission`)."""
    stall_ms = real_arg(stall_ms, "stall_ms", minimum=0.1, maximum=1_000.0)
    rate = real_arg(rate, "rate", minimum=1_000.0, maximum=200_000.0)
    seconds = real_arg(seconds, "seconds", minimum=0.05, maximum=60.0)
    if stall_ms / 1e3 > seconds / 5:
        raise ValueError(f"stall_ms {stall_ms:g} is more than a fifth of the run ({seconds:g} s): run longer")
    capacity = power_of_two(capacity, "capacity")
    if capacity > 65_536:
        raise ValueError(f"capacity must be <= 65536 ticks, got {capacity}")
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=20)
    ticks = max(1, round(rate * seconds))
    cfg = demo_config(
        ticks, rate, capacity=capacity, faults=Faults(stall_ns=round(stall_ms * 1e6), stall_at=ticks // 2)
    )
    due: list[float] = []
    push: list[float] = []
    due2: list[float] = []
    push2: list[float] = []
    for k in range(rounds):
        pair = ((due, push), (due2, push2))
        for d, p in pair if k % 2 == 0 else pair[::-1]:  # alternating which goes first, as interleave() does
            res = run(cfg)
            d.append(clamp_us(res.intended.percentile(99)))
            p.append(clamp_us(res.sent.percentile(99)))
    # The open loop's P99 carries the stall: its A/A band sets the threshold.
    return Omission(stall_ms, rate, ticks, capacity, due, push, due2, push2, aa_band(due, due2), len(usable_cpus()) < 2)


__all__ = ["Omission", "coordinated_omission"]
