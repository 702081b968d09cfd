"""Chapter 05's pipeline, what a run returns: :class:`PipelineResult` (counts,
latency histograms in ns, the kept raw samples) and the numpy layout of a raw
sample (:data:`SAMPLE_DTYPE`), checked against the compiled C struct at
import.  Re-exported by :mod:`lowlat.core.pipeline`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core._lib import ffi
from lowlat.core.hist import Histogram
from lowlat.core.pipeline_config import STAGES, PipelineConfig, check_choice

# One processed tick, as csrc/pipeline.h lays it out (ll_pipeline_sample, 64
# bytes).  C writes straight into an array of these: checked against the
# compiled struct below, at import.
SAMPLE_DTYPE = np.dtype(
    [
        ("seq", "<u8"),
        ("intended_ns", "<u8"),
        ("sent_ns", "<u8"),
        ("popped_ns", "<u8"),
        ("stage_end_ns", "<u8", (4,)),
    ]
)


def check_sample_layout(dtype: np.dtype = SAMPLE_DTYPE, ctype: str = "ll_pipeline_sample") -> None:
    """Raises RuntimeError, naming the first difference, unless ``dtype``
    has the compiled C struct's size and its fields' names, offsets and sizes
    in its order."""
    c_fields = [(name, f.offset, ffi.sizeof(f.type)) for name, f in ffi.typeof(ctype).fields]
    fields: Mapping[str, Any] = dtype.fields or {}
    np_fields = [(name, fields[name][1], fields[name][0].itemsize) for name in dtype.names or ()]
    where = f"the numpy dtype of {ctype} (lowlat/core/pipeline.py) and the compiled C struct (csrc/pipeline.h) differ"
    if ffi.sizeof(ctype) != dtype.itemsize:
        raise RuntimeError(
            f"{where}: {dtype.itemsize} bytes in numpy, {ffi.sizeof(ctype)} in C; rebuild the core "
            "(pip install -e .) or update SAMPLE_DTYPE"
        )
    for c, n in zip(c_fields, np_fields):
        if c != n:
            raise RuntimeError(f"{where}: field (name, offset, bytes) is {n} in numpy, {c} in C")
    if len(c_fields) != len(np_fields):
        raise RuntimeError(f"{where}: {len(np_fields)} fields in numpy, {len(c_fields)} in C")


check_sample_layout()


@dataclass
class PipelineResult:
    """What one run returns.  ``intended`` / ``sent``: latency histograms
    (ns); ``samples``: the kept raw samples (:data:`SAMPLE_DTYPE`), in
    processing order."""

    config: PipelineConfig
    produced: int
    consumed: int
    dropped_full: int
    dropped_pool: int
    samples_not_kept: int
    sample_reallocs: int
    producer_waits: int
    consumer_waits: int
    late_sends: int
    seconds: float
    pinned: bool
    intended: Histogram = field(repr=False)
    sent: Histogram = field(repr=False)
    samples: np.ndarray = field(repr=False)
    interrupted: bool = (
        False  # Ctrl-C (or Running.stop) ended the run early: every count covers the ticks made before it
    )
    tsc: bool = False  # the stamps came from the timestamp counter

    @property
    def lost(self) -> int:
        """Ticks unaccounted for: always 0 (produced = consumed + dropped)."""
        return self.produced - self.consumed - self.dropped_full - self.dropped_pool

    @property
    def latency_ns(self) -> np.ndarray:
        """Per kept sample: done - intended (ns)."""
        return (self.samples["stage_end_ns"][:, 3] - self.samples["intended_ns"]).astype(np.int64)

    @property
    def latency_sent_ns(self) -> np.ndarray:
        """Per kept sample: done - sent (ns)."""
        return (self.samples["stage_end_ns"][:, 3] - self.samples["sent_ns"]).astype(np.int64)

    def stage_ns(self) -> dict[str, np.ndarray]:
        """Per-stage durations of the kept samples (ns), in pipeline order:
        queue (sent -> popped), parse, features, risk, encode; the input of
        :meth:`lowlat.experiments.budget.Budget.report`."""
        s = self.samples
        ends = s["stage_end_ns"].astype(np.int64)
        out = {"queue": (s["popped_ns"].astype(np.int64) - s["sent_ns"].astype(np.int64))}
        prev = s["popped_ns"].astype(np.int64)
        for i, name in enumerate(STAGES):
            out[name] = ends[:, i] - prev
            prev = ends[:, i]
        return out

    def summary(self, which: str = "intended") -> dict[str, float]:
        """P50/P99/P99.9/max (ns) of one of the two latencies: "intended"
        (from the schedule) or "sent" (from the push).  Raises ValueError
        when no tick was processed (every one dropped: no latency to report)."""
        check_choice(which, "which", ("intended", "sent"))
        h = self.intended if which == "intended" else self.sent
        if not h.count:
            raise ValueError(
                f"no tick was processed ({self.produced:,} produced, {self.dropped_full:,} dropped on a full ring, "
                f"{self.dropped_pool:,} for want of a pool block): there is no latency to summarise"
            )
        return {"p50": h.percentile(50), "p99": h.percentile(99), "p99.9": h.percentile(99.9), "max": h.max}

    def row(self, label: str) -> str:
        """One line of the chapter's table."""
        s = self.summary()
        return (
            f"{label:<34} {s['p50']:>9,} {s['p99']:>10,} {s['p99.9']:>11,} {s['max']:>12,}  "
            f"{self.consumed:>9,} {self.dropped_full + self.dropped_pool:>8,}"
        )

    @staticmethod
    def header() -> str:
        return (
            f"{'step':<34} {'P50 ns':>9} {'P99 ns':>10} {'P99.9 ns':>11} {'max ns':>12}  "
            f"{'processed':>9} {'dropped':>8}"
        )


def result_from_c(
    cfg: PipelineConfig, out: Any, intended: Histogram, sent: Histogram, samples: np.ndarray, interrupted: bool
) -> PipelineResult:
    return PipelineResult(
        cfg,
        int(out.produced),
        int(out.consumed),
        int(out.dropped_full),
        int(out.dropped_pool),
        int(out.samples_not_kept),
        int(out.sample_reallocs),
        int(out.producer_waits),
        int(out.consumer_waits),
        int(out.late_sends),
        float(out.seconds),
        out.producer_pinned == 0 and out.consumer_pinned == 0,
        intended,
        sent,
        samples[: int(out.samples)],
        interrupted,
        bool(out.tsc),
    )


__all__ = ["SAMPLE_DTYPE", "PipelineResult", "check_sample_layout", "result_from_c"]
