"""Chapter 05's pipeline run in the background and watched while it runs:
:func:`start` returns a :class:`Running` whose live counters
(:class:`Snapshot`) and closed intervals (:class:`Interval`) are read from
Python while the two C threads go on.  Re-exported by
:mod:`lowlat.core.pipeline`; times in ns unless named otherwise.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.errors import check_status
from lowlat.core.hist import HOUR_NS, Histogram
from lowlat.core.pipeline_config import PipelineConfig, c_config, resolve_config
from lowlat.core.pipeline_result import SAMPLE_DTYPE, PipelineResult, result_from_c


@dataclass(frozen=True)
class Snapshot:
    """The live counters of a running pipeline, read while it runs
    (:meth:`Running.snapshot`).  ``watermark``: the most ticks seen in the
    ring at once since the start (sampled by the producer every 64 ticks,
    exact when the ring was full); ``t_s``: seconds since :func:`start`.
    Every count only grows, except ``produced`` when a stop finds a tick
    waiting for room: that tick is taken back (never sent), one less."""

    t_s: float
    produced: int
    consumed: int
    dropped_full: int
    dropped_pool: int
    watermark: int
    capacity: int
    running: bool

    @property
    def dropped(self) -> int:
        return self.dropped_full + self.dropped_pool

    @property
    def in_flight(self) -> int:
        """Made and not yet processed or dropped: in the ring or in the consumer (>= 0)."""
        return self.produced - self.consumed - self.dropped

    @property
    def watermark_fraction(self) -> float:
        """The watermark as a fraction of the ring's capacity (0..1)."""
        return self.watermark / self.capacity


@dataclass(frozen=True)
class Interval:
    """One closed interval of a running pipeline (:meth:`Running.cut`):
    ``latency`` (ns, done minus intended) of the ticks processed in it,
    ``watermark`` the highest occupancy the producer sampled in it (ticks),
    ``t_s`` seconds since :func:`start` when it was closed.  Its edges are
    where each thread noticed the cut: within about 64 ticks of each other."""

    t_s: float
    latency: Histogram = field(repr=False)
    watermark: int
    capacity: int


class Running:
    """A pipeline running in the background (made by :func:`start`).  It
    owns the C run and the buffers C writes into; :meth:`join` (or leaving a
    ``with`` block, or garbage collection) stops nothing by itself but waits
    for the end and frees it; :meth:`stop` asks it to end early.  Methods
    may be called from one thread at a time (a lock makes sure)."""

    def __init__(self, cfg: PipelineConfig, intervals: bool) -> None:
        self.config = cfg
        self._c = c_config(cfg)
        self._samples = np.zeros(cfg.kept, SAMPLE_DTYPE)  # owned here; C writes into it until join
        buf = (
            ffi.cast("ll_pipeline_sample *", ffi.from_buffer(self._samples, require_writable=True))
            if cfg.kept
            else ffi.NULL
        )
        self._buf = buf
        self._intended, self._sent = Histogram(1, HOUR_NS, 3), Histogram(1, HOUR_NS, 3)
        self._lock = threading.Lock()
        self._result: PipelineResult | None = None
        self._final_watermark = 0
        self._tail: Interval | None = None  # the interval still open at join, handed out by the next cut()
        self._intervals = intervals
        status = ffi.new("int *")
        self._t0 = time.monotonic()
        p = lib.ll_pipeline_start(self._c, self._intended.c_handle, self._sent.c_handle, buf, int(intervals), status)
        check_status(int(status[0]), "pipeline start")
        # Freed when this object goes (destroy stops and joins first): never a thread left behind.
        self._p = ffi.gc(p, lib.ll_pipeline_destroy)

    def snapshot(self) -> Snapshot:
        """The live counters now (any time, also after the end)."""
        live = ffi.new("ll_pipeline_live *")
        with self._lock:
            if self._p is None:
                r = self._result
                assert r is not None
                return Snapshot(
                    time.monotonic() - self._t0,
                    r.produced,
                    r.consumed,
                    r.dropped_full,
                    r.dropped_pool,
                    self._final_watermark,
                    r.config.capacity,
                    False,
                )
            lib.ll_pipeline_snapshot(self._p, live)
        return Snapshot(
            time.monotonic() - self._t0,
            int(live.produced),
            int(live.consumed),
            int(live.dropped_full),
            int(live.dropped_pool),
            int(live.watermark),
            int(live.capacity),
            bool(live.running),
        )

    @property
    def running(self) -> bool:
        """True until both of the run's threads have ended."""
        return self.snapshot().running

    def cut(self) -> Interval:
        """Closes the current interval and returns it (needs
        ``start(..., intervals=True)``).  Waits until both threads have
        switched: about 64 ticks, or one stage's busy work."""
        if not self._intervals:
            raise ValueError("cut() needs a run started with intervals=True")
        with self._lock:
            if self._p is None:  # joined: the interval that was open then, once; empty ones after it
                tail, self._tail = self._tail, None
                return tail or Interval(time.monotonic() - self._t0, Histogram(1, HOUR_NS, 3), 0, self.config.capacity)
            return self._cut()

    def _cut(self) -> Interval:
        lat = Histogram(1, HOUR_NS, 3)
        wm = ffi.new("uint64_t *")
        check_status(lib.ll_pipeline_cut(self._p, lat.c_handle, wm), "pipeline cut")
        return Interval(time.monotonic() - self._t0, lat, int(wm[0]), self.config.capacity)

    def stop(self) -> None:
        """Asks both threads to end within about 64 ticks; returns at once."""
        with self._lock:
            if self._p is not None:
                lib.ll_pipeline_stop(self._p)

    def join(self, timeout: float | None = None) -> PipelineResult:
        """Waits for the end (polling, so Ctrl-C is seen within 10 ms) and
        returns the run's result (``interrupted`` when it was stopped early);
        frees the C run.  TimeoutError after ``timeout`` seconds (the run
        goes on).  Later calls return the same result."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._p is not None and self.snapshot().running:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"the pipeline was still running after {timeout:g} s")
            time.sleep(0.01)
        with self._lock:
            if self._p is not None:
                live = ffi.new("ll_pipeline_live *")
                lib.ll_pipeline_snapshot(self._p, live)
                self._final_watermark = int(live.watermark)
                if self._intervals:
                    self._tail = self._cut()
                out = ffi.new("ll_pipeline_result *")
                rc = check_status(lib.ll_pipeline_join(self._p, out), "pipeline run")
                self._result = result_from_c(
                    self.config, out, self._intended, self._sent, self._samples, rc == lib.LL_STOPPED
                )
                ffi.release(self._p)  # runs the finalizer (ll_pipeline_destroy) now, once
                self._p = None
        assert self._result is not None
        return self._result

    def __del__(self) -> None:
        # Stop and join the threads BEFORE the histograms and the sample
        # array they write into are freed (attributes go after __del__).
        p = getattr(self, "_p", None)
        if p is not None:
            self._p = None
            ffi.release(p)  # ll_pipeline_destroy: stop, join, free

    def close(self) -> PipelineResult:
        """Stops the run and joins it: what a ``with`` block does on leaving."""
        self.stop()
        return self.join()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start(config: PipelineConfig | None = None, *, intervals: bool = False, **changes: Any) -> Running:
    """Starts the pipeline in the background with ``config`` (default
    :func:`best_config`) updated by ``changes``, and returns at once: poll
    :meth:`Running.snapshot` while it runs, :meth:`Running.cut` per interval
    (``intervals=True``: one extra histogram record per tick), and
    :meth:`Running.join` for the :class:`PipelineResult` (identical to what
    :func:`run` returns).  A background run may be longer than
    :data:`MAX_RUN_S` (up to :data:`MAX_BACKGROUND_TICKS` ticks); it keeps
    at most :data:`MAX_TICKS` raw samples.  Ctrl-C reaches it only inside
    :func:`lowlat.core.stop.stoppable`: stop it yourself (``with start(...)
    as r:`` stops and joins on leaving)."""
    cfg = resolve_config(config, changes, background=True)
    return Running(cfg, intervals)


__all__ = ["Interval", "Running", "Snapshot", "start"]
