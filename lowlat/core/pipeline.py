"""The whole experiment of chapter 05: producer -> SPSC ring -> consumer
with pooled feature objects and latency stats, run by ``csrc/pipeline.c`` in
its own two threads.  Python only fills in a :class:`PipelineConfig`
(validated here, with messages that say what is allowed) and receives
histograms and a numpy array of raw samples.

Times are in ns.  Two latencies are recorded for every processed tick: from
the time the schedule said to send it (``intended``: honest under
coordinated omission) and from the time it was actually pushed (``sent``:
what a naive benchmark measures).

The config and its validation are in :mod:`lowlat.core.pipeline_config`,
the result in :mod:`lowlat.core.pipeline_result`, a run in the background in
:mod:`lowlat.core.pipeline_live`; every name is importable from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.hist import HOUR_NS, Histogram
from lowlat.core.pipeline_config import (
    CLOCKS,
    HANDOFFS,
    MAX_BACKGROUND_TICKS,
    MAX_CAPACITY,
    MAX_RATE,
    MAX_RUN_S,
    MAX_SCHEDULE_S,
    MAX_TICKS,
    MIN_RATE,
    STAGES,
    PipelineConfig,
    c_config,
    c_pair,
    resolve_config,
)
from lowlat.core.pipeline_faults import Faults
from lowlat.core.pipeline_live import Interval, Running, Snapshot, start
from lowlat.core.pipeline_result import SAMPLE_DTYPE, PipelineResult, check_sample_layout, result_from_c
from lowlat.core.stop import Interrupted, stoppable
from lowlat.core.wait import WAITS


def run(config: PipelineConfig | None = None, **changes: Any) -> PipelineResult:
    """Runs the pipeline with ``config`` (default :func:`best_config`),
    updated by ``changes`` (field=value).  Ctrl-C stops the run within a
    millisecond and raises :class:`lowlat.core.stop.Interrupted`, whose
    ``partial`` is the result of the ticks made before the stop."""
    cfg = resolve_config(config, changes)
    c = c_config(cfg)
    samples = np.zeros(cfg.kept, SAMPLE_DTYPE)  # owned here; C writes into it
    buf = ffi.cast("ll_pipeline_sample *", ffi.from_buffer(samples, require_writable=True)) if cfg.kept else ffi.NULL
    intended, sent = Histogram(1, HOUR_NS, 3), Histogram(1, HOUR_NS, 3)
    out = ffi.new("ll_pipeline_result *")
    result: PipelineResult | None = None
    try:
        with stoppable(), quiet_blas():  # no spinning BLAS worker on the pipeline's CPUs
            rc = check_status(lib.ll_pipeline_run(c, intended.c_handle, sent.c_handle, buf, out), "pipeline run")
            result = result_from_c(cfg, out, intended, sent, samples, rc == lib.LL_STOPPED)
            if result.interrupted:
                raise Interrupted(
                    f"pipeline run stopped after {result.produced:,} of {cfg.ticks:,} ticks "
                    f"({result.consumed:,} processed)",
                    result,
                )
    except Interrupted as exc:
        if exc.partial is None:
            exc.partial = result
        raise
    assert result is not None
    return result


@dataclass
class FloorResult:
    """The floor under one pipeline config: ``latency`` (ns from each tick's
    due time to the consumer seeing it, a :class:`Histogram`), ``seen`` ticks
    seen, ``missed`` ticks overwritten before the consumer looked."""

    config: PipelineConfig
    seen: int
    missed: int
    seconds: float
    pinned: bool
    latency: Histogram = field(repr=False)

    @property
    def p50(self) -> float:
        """The floor's P50, ns."""
        return float(self.latency.percentile(50))


def floor(config: PipelineConfig | None = None, **changes: Any) -> FloorResult:
    """The pipeline's floor for ``config`` (default :func:`best_config`,
    updated by ``changes``): the same schedule, clock, pinning and waiting,
    but the tick is only its due time, published in one word of one cache
    line; nothing is copied, pooled or computed.  Open loop only (a floor
    needs a schedule).  Ctrl-C stops it (:class:`Interrupted`)."""
    cfg = resolve_config(config, changes)
    if cfg.producer != "open":
        raise ValueError("floor() needs an open-loop config (producer='open'): the floor is measured on a schedule")
    if cfg.faults.any:
        raise ValueError("floor() injects no faults (it has no consumer work): give it a config with faults=Faults()")
    if "sleep" in (cfg.producer_wait, cfg.consumer_wait):
        raise ValueError("floor() cannot wait by sleeping (a 1 us nap would be what it measures): use another wait")
    c = ffi.new(
        "ll_floor_cfg *",
        {
            "ticks": cfg.ticks,
            "rate_per_s": float(cfg.rate),
            "pair": c_pair(cfg),  # the pipeline's placement and waits, unchanged
            "clock": CLOCKS[cfg.clock],
        },
    )
    lat = Histogram(1, HOUR_NS, 3)
    out = ffi.new("ll_floor_result *")
    with stoppable(), quiet_blas():
        rc = check_status(lib.ll_bench_pipeline_floor(c, lat.c_handle, out), "pipeline floor")
        if rc == lib.LL_STOPPED:
            raise Interrupted(f"floor run stopped after {int(out.seen):,} ticks")
    return FloorResult(
        cfg,
        int(out.seen),
        int(out.missed),
        float(out.seconds),
        out.producer_pinned == 0 and out.consumer_pinned == 0,
        lat,
    )


__all__ = [
    "CLOCKS",
    "HANDOFFS",
    "MAX_BACKGROUND_TICKS",
    "MAX_CAPACITY",
    "MAX_RATE",
    "MAX_RUN_S",
    "MAX_SCHEDULE_S",
    "MAX_TICKS",
    "MIN_RATE",
    "SAMPLE_DTYPE",
    "STAGES",
    "WAITS",
    "Faults",
    "FloorResult",
    "Interval",
    "PipelineConfig",
    "PipelineResult",
    "Running",
    "Snapshot",
    "check_sample_layout",
    "floor",
    "run",
    "start",
]
