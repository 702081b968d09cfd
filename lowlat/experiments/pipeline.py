"""Chapter 05's pipeline: the C pipeline of :mod:`lowlat.core.pipeline`
(producer -> ring -> consumer, in C threads) with the chapter's two
starting points, the source article's settings and the best settings for
this machine.  Everything of the core wrapper is reachable from here, so a
chapter imports one module: ``from lowlat.experiments import pipeline as pl``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lowlat.core.affinity import cpu_count
from lowlat.core.pipeline import (
    CLOCKS,
    HANDOFFS,
    MAX_BACKGROUND_TICKS,
    MAX_CAPACITY,
    MAX_RUN_S,
    MAX_TICKS,
    SAMPLE_DTYPE,
    STAGES,
    Faults,
    FloorResult,
    Interval,
    PipelineConfig,
    PipelineResult,
    Running,
    Snapshot,
    check_sample_layout,
)
from lowlat.core.pipeline import (
    floor as _core_floor,
)
from lowlat.core.pipeline import (
    run as _core_run,
)
from lowlat.core.pipeline import (
    start as _core_start,
)
from lowlat.machine.placement import bench_cpus

__all__ = [
    "CLOCKS",
    "HANDOFFS",
    "MAX_BACKGROUND_TICKS",
    "MAX_CAPACITY",
    "MAX_RUN_S",
    "MAX_TICKS",
    "SAMPLE_DTYPE",
    "SOURCE_CAPACITY",
    "STAGES",
    "Faults",
    "FloorResult",
    "Interval",
    "PipelineConfig",
    "PipelineResult",
    "Running",
    "Snapshot",
    "best_config",
    "check_sample_layout",
    "demo_config",
    "floor",
    "run",
    "seed_config",
    "start",
]

SOURCE_CAPACITY = 8192  # the source article's ring: 8,192 slots


def seed_config(ticks: int = 200_000) -> PipelineConfig:
    """The source article's pipeline as its code is written: a ring of
    8,192 slots, a closed-loop producer, yield on both sides, no pinning,
    the latency vector reserved up front (``latencies.reserve(kTotalTicks)``:
    it never grows), a tick dropped (counted) when the pool is empty."""
    return PipelineConfig(
        ticks=ticks,
        producer="closed",
        producer_wait="yield",
        consumer_wait="yield",
        cpus=None,
        capacity=SOURCE_CAPACITY,
        samples="preallocated",
        handoff="cursors",  # its ring keeps a cursor per side, like chapter 03's
        clock="monotonic",  # std::chrono::steady_clock
    ).validate()


def best_config(ticks: int = 200_000, rate: float = 200_000.0) -> PipelineConfig:
    """The best settings for *this* machine: open loop; spinning and pinned
    to two CPUs when there are two, yielding and unpinned on one CPU (two
    spinners on one core take turns at scheduler speed)."""
    cpus = bench_cpus()
    if cpus[0] < 0 or cpus[0] == cpus[1] or cpu_count() < 2:
        return PipelineConfig(
            ticks=ticks, rate=rate, producer_wait="yield", consumer_wait="yield", cpus=None
        ).validate()
    return PipelineConfig(ticks=ticks, rate=rate, cpus=cpus).validate()


def demo_config(ticks: int, rate: float, **changes: Any) -> PipelineConfig:
    """The pipeline of the injected-fault demonstrations (chapters 04a, 05,
    05b): open loop at ``rate`` ticks/s, yielding on both sides, unpinned,
    no raw samples kept, then ``changes``.  Not the fastest settings, the
    steadiest: on a machine shared with other work, spinning threads pinned
    to CPUs that others use are preempted for milliseconds at a time, stalls
    of the very kind a demonstration injects, which blur it; yielding,
    unpinned threads leave the scheduler room to place them."""
    base = PipelineConfig(
        ticks=ticks, rate=rate, producer_wait="yield", consumer_wait="yield", cpus=None, sample_capacity=0
    )
    return replace(base, **changes).validate()


def run(config: PipelineConfig | None = None, **changes: Any) -> PipelineResult:
    """:func:`lowlat.core.pipeline.run` with this machine's best settings
    (:func:`best_config`) when no config is given."""
    return _core_run(config if config is not None else best_config(), **changes)


def start(config: PipelineConfig | None = None, *, intervals: bool = False, **changes: Any) -> Running:
    """:func:`lowlat.core.pipeline.start` with :func:`best_config` when no
    config is given."""
    return _core_start(config if config is not None else best_config(), intervals=intervals, **changes)


def floor(config: PipelineConfig | None = None, **changes: Any) -> FloorResult:
    """:func:`lowlat.core.pipeline.floor` with :func:`best_config` when no
    config is given."""
    return _core_floor(config if config is not None else best_config(), **changes)
