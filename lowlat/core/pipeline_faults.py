"""Chapter 05's pipeline, faults injected on purpose: :class:`Faults` (a
consumer stall, a rare slow path, growing work, a producer pause), the
``faults`` field of :class:`~lowlat.core.pipeline_config.PipelineConfig`,
and the C struct it becomes (``ll_pipeline_inject``, csrc/pipeline.h).

The course's demonstrations inject each mechanism so that it shows with a
margin on any machine.  With no fault asked for, the C pipeline pays one
predictable branch per consumer tick and nothing per producer tick (the
producer checks its pause where it already polls, every 64 ticks).  Injected
work is a spin on the clock at the start of the parse stage.  Times in ns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lowlat.core.validate import int_arg

MAX_FAULT_NS = 10_000_000_000  # 10 s: one stall, slow path or pause (LL_INJECT_MAX_NS)
MAX_GROW_NS_PER_S = 1_000_000  # growing work: at most 1 ms more per tick per second
PPM = 1_000_000
_TICK_LIMIT = 10**13  # a tick number (lowlat.core.pipeline_config.MAX_BACKGROUND_TICKS)


@dataclass(frozen=True)
class Faults:
    """Faults the pipeline injects on purpose (all 0: none).

    - ``stall_ns``: the consumer stops taking ticks this long (it spins)
      before every tick whose sequence number is a multiple of
      ``stall_every``, or (``stall_every`` 0) once, before tick ``stall_at``
      (1-based; 0: never);
    - ``slow_ns`` on ``slow_ppm`` ticks per million, drawn at random with a
      fixed seed: a rare slow path (``slow_ns`` 0 with ``slow_ppm`` set runs
      the draw alone: a baseline with the same code);
    - ``grow_ns_per_s``: every tick's work grows this many ns per second
      since the first tick (a slow drift);
    - ``pause_ns``: the producer makes no tick this long, before tick
      ``pause_at`` rounded down to 64k + 1 (1, 65, 129 ...: where it polls).
    """

    stall_ns: int = 0
    stall_every: int = 0
    stall_at: int = 0
    slow_ns: int = 0
    slow_ppm: int = 0
    grow_ns_per_s: int = 0
    pause_ns: int = 0
    pause_at: int = 0

    def validate(self) -> Faults:
        """Checks every field (one-line errors naming it); returns self."""
        for name in ("stall_ns", "slow_ns", "pause_ns"):
            int_arg(getattr(self, name), name, minimum=0, maximum=MAX_FAULT_NS)
        for name in ("stall_every", "stall_at", "pause_at"):
            int_arg(getattr(self, name), name, minimum=0, maximum=_TICK_LIMIT)
        int_arg(self.slow_ppm, "slow_ppm", minimum=0, maximum=PPM)
        int_arg(self.grow_ns_per_s, "grow_ns_per_s", minimum=0, maximum=MAX_GROW_NS_PER_S)
        return self

    @property
    def any(self) -> bool:
        """True when some fault is asked for."""
        return any((self.stall_ns, self.slow_ppm, self.grow_ns_per_s, self.pause_ns))

    @property
    def pause_seq(self) -> int:
        """The tick (seq) the producer's pause comes before: ``pause_at``
        rounded down to 64k + 1; 0 when there is no pause."""
        return (self.pause_at - 1) // 64 * 64 + 1 if self.pause_ns and self.pause_at else 0

    def stalls(self, ticks: int) -> int:
        """How many stalls a run of ``ticks`` ticks gets."""
        if not self.stall_ns:
            return 0
        if self.stall_every:
            return ticks // self.stall_every
        return 1 if 0 < self.stall_at <= ticks else 0

    def work_s(self, ticks: int, seconds: float) -> float:
        """The injected work (s) in a run of ``ticks`` ticks lasting about
        ``seconds`` (the growth's share taken at its average, half the end)."""
        grow = ticks * self.grow_ns_per_s * seconds / 2
        return (self.stalls(ticks) * self.stall_ns + ticks * self.slow_ppm / PPM * self.slow_ns + grow) / 1e9 + (
            self.pause_ns / 1e9 if self.pause_seq else 0.0
        )

    def describe(self) -> str:
        """The faults in a few words ("" when none)."""
        parts = []
        if self.stall_ns:
            when = f"every {self.stall_every:,} ticks" if self.stall_every else f"once at tick {self.stall_at:,}"
            parts.append(f"consumer stall {self.stall_ns / 1e6:g} ms {when}")
        if self.slow_ppm:
            parts.append(f"slow path +{self.slow_ns / 1e3:g} us on {self.slow_ppm / 1e4:g}% of ticks")
        if self.grow_ns_per_s:
            parts.append(f"work growing {self.grow_ns_per_s:,} ns/s")
        if self.pause_seq:
            parts.append(f"producer pause {self.pause_ns / 1e6:g} ms at tick {self.pause_seq:,}")
        return ", ".join(parts)

    def c_fields(self) -> dict[str, Any]:
        """The ``ll_pipeline_inject`` initialiser."""
        return {
            "stall_ns": self.stall_ns,
            "stall_every": self.stall_every,
            "stall_at": self.stall_at,
            "slow_ns": self.slow_ns,
            "slow_ppm": self.slow_ppm,
            "grow_ns_per_s": self.grow_ns_per_s,
            "pause_ns": self.pause_ns,
            "pause_at": self.pause_at,
        }


__all__ = ["MAX_FAULT_NS", "MAX_GROW_NS_PER_S", "Faults"]
