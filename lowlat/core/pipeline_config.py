"""Chapter 05's pipeline, its configuration: :class:`PipelineConfig` (every
option the chapter compares, validated here with messages that say what is
allowed), the limits a config may ask for, and the C struct it becomes
(``ll_pipeline_cfg``, csrc/pipeline.h).  Re-exported by
:mod:`lowlat.core.pipeline`; times in ns unless named otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_pair
from lowlat.core.hist import HOUR_NS
from lowlat.core.pipeline_faults import Faults
from lowlat.core.validate import int_arg, power_of_two
from lowlat.core.wait import WAITS

STAGES = ("parse", "features", "risk", "encode")
# The longest run a config may ask for (s): the open loop's schedule
# (ticks / rate) and the synthetic work (ticks x sum(work_ns)) must each fit.
# Ctrl-C stops a run early in any case (lowlat.core.stop).
MAX_RUN_S = 600.0
MAX_CAPACITY = 1 << 24
MAX_TICKS = 50_000_000  # a run() that keeps one sample per tick: 3.2 GB at most
# A background run (start()) may be much longer: it is stopped by its owner,
# and keeps at most MAX_TICKS raw samples (sample_capacity must say so).
MAX_BACKGROUND_TICKS = 10**13
# The open loop's rate (ticks/s): at least one tick a second (an interval of
# at most 1 s), at most 1e9 (an interval of at least 1 ns).  With the
# schedule at most MAX_SCHEDULE_S long, tick i's due time, i x interval in
# clock units (csrc/pipeline.c), stays below 31 days x 10 GHz ~ 2.7e16, far
# inside uint64 (1.8e19): the conversion is never undefined behaviour.
MIN_RATE, MAX_RATE = 1.0, 1e9
MAX_SCHEDULE_S = 31 * 86_400.0


def _seconds(s: float) -> str:
    """A duration for a message: grouped digits, or 3 significant ones when huge."""
    return f"{s:,.0f}" if s < 1e15 else f"{s:.3g}"


# The hand-offs and stamp clocks of ll_pipeline_cfg, values from the compiled core.
HANDOFFS = {"cursors": int(lib.LL_HANDOFF_CURSORS), "slots": int(lib.LL_HANDOFF_SLOTS)}
CLOCKS = {"monotonic": int(lib.LL_CLOCK_MONOTONIC), "tsc": int(lib.LL_CLOCK_TSC)}


@dataclass(frozen=True)
class PipelineConfig:
    """Every option chapter 05 compares.  Defaults: the best settings
    (open loop at 200k ticks/s, spin, pinned, preallocated samples).

    - ``producer``: "closed" (as fast as the ring allows) or "open" (``rate``
      ticks per second on a fixed schedule);
    - ``when_full``: "wait" (per ``producer_wait``) or "drop" (counted);
    - ``producer_wait`` / ``consumer_wait``: "spin", "spin_yield", "yield", "sleep", "backoff" (spin, pausing 1, 2, 4 ... 64 times as a wait goes on);
    - ``cpus``: (producer, consumer) CPUs, or None for no pinning (checked by
      :func:`lowlat.core.affinity.cpu_pair`: a list or (-1, -1) is taken
      too, and stored as a tuple or None);
    - ``samples``: "preallocated" or "growing" (realloc x2 on the hot path);
    - ``pool_blocks`` feature objects, each held ``hold_ns`` after use;
    - ``work_ns``: synthetic busy work per stage (parse, features, risk, encode);
    - ``handoff``: "slots" (a sequence word in each slot: the consumer polls
      the slot it reads, one cache-line transfer per tick) or "cursors" (the
      SPSC ring of chapter 03: the producer's cursor, then the slot);
    - ``clock``: "tsc" (the timestamp counter where invariant, else the
      monotonic clock) or "monotonic" (clock_gettime for every stamp);
    - ``faults``: faults injected on purpose (:class:`~lowlat.core.pipeline_faults.Faults`:
      a consumer stall, a rare slow path, growing work, a producer pause).

    A run may last at most :data:`MAX_RUN_S` seconds by its schedule
    (ticks / rate) and by its busy work (ticks x sum(work_ns)).
    """

    ticks: int = 200_000
    producer: str = "open"
    rate: float = 200_000.0
    when_full: str = "wait"
    producer_wait: str = "spin"
    consumer_wait: str = "spin"
    cpus: tuple[int, int] | None = (0, 1)
    capacity: int = 1024
    pool_blocks: int = 1024
    hold_ns: int = 0
    samples: str = "preallocated"
    sample_capacity: int | None = None  # None: one per tick
    work_ns: tuple[int, int, int, int] = (0, 0, 0, 0)
    handoff: str = "slots"
    clock: str = "tsc"
    faults: Faults = field(default_factory=Faults)

    def validate(self, *, background: bool = False) -> PipelineConfig:
        """Checks every field; returns self.  Raises ValueError/TypeError
        that name the field and what is allowed.  ``background``: the limits
        of :func:`start` (up to :data:`MAX_BACKGROUND_TICKS` ticks and a
        schedule of up to :data:`MAX_SCHEDULE_S` instead of :data:`MAX_RUN_S`,
        with at most :data:`MAX_TICKS` samples kept).  An open loop's rate is
        in [:data:`MIN_RATE`, :data:`MAX_RATE`] ticks/s."""
        int_arg(self.ticks, "ticks", minimum=1, maximum=MAX_BACKGROUND_TICKS if background else MAX_TICKS)
        if background and self.kept > MAX_TICKS:
            raise ValueError(
                f"a background run of {self.ticks:,} ticks would keep {self.kept:,} raw samples; set "
                f"sample_capacity to at most {MAX_TICKS:,} (0 keeps none: the histograms still see every tick)"
            )
        check_choice(self.producer, "producer", ("closed", "open"))
        if self.producer == "open":
            if isinstance(self.rate, bool) or not isinstance(self.rate, (int, float)):
                raise TypeError(f"rate must be a number of ticks per second, got {self.rate!r}")
            if not (math.isfinite(self.rate) and 0 < self.rate <= MAX_RATE):
                raise ValueError(f"rate must be in (0, 1e9] ticks per second for an open loop, got {self.rate!r}")
            longest = MAX_SCHEDULE_S if background else MAX_RUN_S
            if self.ticks / self.rate > longest:
                raise ValueError(
                    f"an open loop of {self.ticks:,} ticks at {self.rate:g} ticks/s would run "
                    f"{_seconds(self.ticks / self.rate)} s; at most {longest:,.0f} s is allowed "
                    f"(a rate of at least {max(MIN_RATE, self.ticks / longest):g} ticks/s, or fewer ticks)"
                )
            if self.rate < MIN_RATE:
                raise ValueError(
                    f"rate must be in [{MIN_RATE:g}, {MAX_RATE:g}] ticks per second for an open loop (at least one "
                    f"tick a second), got {self.rate!r}"
                )
        check_choice(self.when_full, "when_full", ("wait", "drop"))
        check_choice(self.producer_wait, "producer_wait", tuple(WAITS))
        check_choice(self.consumer_wait, "consumer_wait", tuple(WAITS))
        if self.cpus is not None:
            pair = cpu_pair(self.cpus)
            object.__setattr__(self, "cpus", None if pair == (-1, -1) else pair)  # a list or (-1, -1): one form
        if power_of_two(self.capacity, "capacity") > MAX_CAPACITY:
            raise ValueError(f"capacity must be <= {MAX_CAPACITY} ticks, got {self.capacity}")
        int_arg(self.pool_blocks, "pool_blocks", minimum=1, maximum=1 << 26)
        int_arg(self.hold_ns, "hold_ns", minimum=0, maximum=HOUR_NS)
        check_choice(self.samples, "samples", ("preallocated", "growing"))
        check_choice(self.handoff, "handoff", tuple(HANDOFFS))
        check_choice(self.clock, "clock", tuple(CLOCKS))
        if self.sample_capacity is not None:
            int_arg(self.sample_capacity, "sample_capacity", minimum=0, maximum=MAX_TICKS)
        if not isinstance(self.work_ns, (tuple, list)):
            raise TypeError(f"work_ns must be a tuple of 4 ints (ns per stage {STAGES}), got {self.work_ns!r}")
        if len(self.work_ns) != 4:
            raise ValueError(f"work_ns needs one value per stage {STAGES}, got {self.work_ns!r}")
        for w in self.work_ns:
            int_arg(w, "work_ns", minimum=0, maximum=10**9)
        work_s = self.ticks * sum(self.work_ns) / 1e9
        if not background and work_s > MAX_RUN_S:
            raise ValueError(
                f"work_ns {tuple(self.work_ns)} for each of {self.ticks:,} ticks is {work_s:,.0f} s of busy work; "
                f"at most {MAX_RUN_S:g} s is allowed (less work per stage, or fewer ticks)"
            )
        if not isinstance(self.faults, Faults):
            raise TypeError(f"faults must be a Faults (lowlat.core.pipeline.Faults), got {type(self.faults).__name__}")
        self.faults.validate()
        span_s = self.ticks / self.rate if self.producer == "open" else work_s
        fault_s = self.faults.work_s(self.ticks, span_s)
        if not background and fault_s > MAX_RUN_S:
            raise ValueError(
                f"faults ({self.faults.describe()}) over {self.ticks:,} ticks are about {fault_s:,.0f} s of injected "
                f"work; at most {MAX_RUN_S:g} s is allowed (shorter or rarer faults, or fewer ticks)"
            )
        return self

    @property
    def kept(self) -> int:
        return self.ticks if self.sample_capacity is None else int(self.sample_capacity)

    def describe(self) -> str:
        load = f"open loop {self.rate:,.0f}/s" if self.producer == "open" else "closed loop"
        pin = f"pinned {self.cpus}" if self.cpus else "unpinned"
        wait = (
            self.consumer_wait
            if self.producer_wait == self.consumer_wait
            else f"{self.producer_wait}/{self.consumer_wait}"
        )
        faults = self.faults.describe()
        return (
            f"{load}, {wait}, {pin}, {self.samples} samples, full: {self.when_full}, "
            f"{self.handoff} hand-off, {self.clock} stamps" + (f"; injected: {faults}" if faults else "")
        )


def check_choice(value: Any, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")


def resolve_config(config: PipelineConfig | None, changes: dict[str, Any], background: bool = False) -> PipelineConfig:
    """``config`` (default :func:`best_config`) with ``changes`` applied, validated."""
    if config is not None and not isinstance(config, PipelineConfig):
        raise TypeError(f"config must be a PipelineConfig (or None for the defaults), got {type(config).__name__}")
    unknown = sorted(set(changes) - set(PipelineConfig.__dataclass_fields__))
    if unknown:
        raise TypeError(
            f"unknown PipelineConfig field(s) {', '.join(unknown)}; the fields are "
            f"{', '.join(PipelineConfig.__dataclass_fields__)}"
        )
    return replace(config or PipelineConfig(), **changes).validate(background=background)


def c_pair(cfg: PipelineConfig) -> dict[str, int]:
    """The fields of the ``ll_pair_placement`` of ``cfg`` (its two threads'
    CPUs and waits), for any C config that embeds one.  A plain dict: a
    struct field read from another cdata would point into that cdata's
    memory, which cffi frees with it."""
    return {
        "producer_cpu": cfg.cpus[0] if cfg.cpus else -1,
        "consumer_cpu": cfg.cpus[1] if cfg.cpus else -1,
        "producer_wait": WAITS[cfg.producer_wait],
        "consumer_wait": WAITS[cfg.consumer_wait],
    }


def c_config(cfg: PipelineConfig) -> Any:
    """A new ``ll_pipeline_cfg *`` (owned by the returned cdata) for ``cfg``."""
    return ffi.new(
        "ll_pipeline_cfg *",
        {
            "ticks": cfg.ticks,
            "producer_mode": lib.LL_PRODUCER_OPEN if cfg.producer == "open" else lib.LL_PRODUCER_CLOSED,
            "rate_per_s": float(cfg.rate),
            "full_policy": lib.LL_FULL_DROP if cfg.when_full == "drop" else lib.LL_FULL_WAIT,
            "pair": c_pair(cfg),
            "capacity": cfg.capacity,
            "pool_blocks": cfg.pool_blocks,
            "hold_ns": cfg.hold_ns,
            "sample_mode": lib.LL_SAMPLES_GROWING if cfg.samples == "growing" else lib.LL_SAMPLES_PREALLOCATED,
            "sample_capacity": cfg.kept,
            "work_ns": list(cfg.work_ns),
            "handoff": HANDOFFS[cfg.handoff],
            "clock": CLOCKS[cfg.clock],
            "inject": cfg.faults.c_fields(),
        },
    )


__all__ = [
    "CLOCKS",
    "HANDOFFS",
    "MAX_BACKGROUND_TICKS",
    "MAX_CAPACITY",
    "MAX_RUN_S",
    "MAX_TICKS",
    "STAGES",
    "Faults",
    "PipelineConfig",
    "c_config",
    "c_pair",
    "check_choice",
    "resolve_config",
]
