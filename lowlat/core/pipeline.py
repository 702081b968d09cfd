"""The whole experiment of chapter 05: producer -> SPSC ring -> consumer
with pooled feature objects and latency stats, run by ``csrc/pipeline.c`` in
its own two threads.  Python only fills in a :class:`PipelineConfig`
(validated here, with messages that say what is allowed) and receives
histograms and a numpy array of raw samples.

Times are in ns.  Two latencies are recorded for every processed tick: from
the time the schedule said to send it (``intended``: honest under
coordinated omission) and from the time it was actually pushed (``sent``:
what a naive benchmark measures).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_count, usable_cpus
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.hist import HOUR_NS, Histogram
from lowlat.core.stop import Interrupted, stoppable
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


# The hand-offs and stamp clocks of ll_pipeline_cfg, values from the compiled core.
HANDOFFS = {"cursors": int(lib.LL_HANDOFF_CURSORS), "slots": int(lib.LL_HANDOFF_SLOTS)}
CLOCKS = {"monotonic": int(lib.LL_CLOCK_MONOTONIC), "tsc": int(lib.LL_CLOCK_TSC)}

check_sample_layout()


def _seconds(s: float) -> str:
    """A duration for a message: grouped digits, or 3 significant ones when huge."""
    return f"{s:,.0f}" if s < 1e15 else f"{s:.3g}"


@dataclass(frozen=True)
class PipelineConfig:
    """Every option chapter 05 compares.  Defaults: the best settings
    (open loop at 200k ticks/s, spin, pinned, preallocated samples).

    - ``producer``: "closed" (as fast as the ring allows) or "open" (``rate``
      ticks per second on a fixed schedule);
    - ``when_full``: "wait" (per ``producer_wait``) or "drop" (counted);
    - ``producer_wait`` / ``consumer_wait``: "spin", "spin_yield", "yield", "sleep", "backoff" (spin, pausing 1, 2, 4 ... 64 times as a wait goes on);
    - ``cpus``: (producer, consumer) CPUs, or None for no pinning;
    - ``samples``: "preallocated" or "growing" (realloc x2 on the hot path);
    - ``pool_blocks`` feature objects, each held ``hold_ns`` after use;
    - ``work_ns``: synthetic busy work per stage (parse, features, risk, encode);
    - ``handoff``: "slots" (a sequence word in each slot: the consumer polls
      the slot it reads, one cache-line transfer per tick) or "cursors" (the
      SPSC ring of chapter 03: the producer's cursor, then the slot);
    - ``clock``: "tsc" (the timestamp counter where invariant, else the
      monotonic clock) or "monotonic" (clock_gettime for every stamp).

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
        _choice(self.producer, "producer", ("closed", "open"))
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
        _choice(self.when_full, "when_full", ("wait", "drop"))
        _choice(self.producer_wait, "producer_wait", tuple(WAITS))
        _choice(self.consumer_wait, "consumer_wait", tuple(WAITS))
        if self.cpus is not None:
            if not (isinstance(self.cpus, tuple) and len(self.cpus) == 2):
                raise TypeError(f"cpus must be a (producer, consumer) pair or None, got {self.cpus!r}")
            n = cpu_count()
            for c in self.cpus:
                int_arg(c, "cpu", minimum=0, maximum=n - 1)
            usable = usable_cpus()
            outside = [c for c in self.cpus if c not in usable]
            if outside:
                raise ValueError(
                    f"cpus {self.cpus}: CPU {outside[0]} is outside this process's affinity mask (usable: "
                    f"{', '.join(map(str, usable))}); use best_config(), which picks a usable pair, or cpus=None"
                )
        if power_of_two(self.capacity, "capacity") > MAX_CAPACITY:
            raise ValueError(f"capacity must be <= {MAX_CAPACITY} ticks, got {self.capacity}")
        int_arg(self.pool_blocks, "pool_blocks", minimum=1, maximum=1 << 26)
        int_arg(self.hold_ns, "hold_ns", minimum=0, maximum=HOUR_NS)
        _choice(self.samples, "samples", ("preallocated", "growing"))
        _choice(self.handoff, "handoff", tuple(HANDOFFS))
        _choice(self.clock, "clock", tuple(CLOCKS))
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
        return (
            f"{load}, {wait}, {pin}, {self.samples} samples, full: {self.when_full}, "
            f"{self.handoff} hand-off, {self.clock} stamps"
        )


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")


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
        _choice(which, "which", ("intended", "sent"))
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


def _resolve(config: PipelineConfig | None, changes: dict[str, Any], background: bool = False) -> PipelineConfig:
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


def _c_config(cfg: PipelineConfig) -> Any:
    """A new ``ll_pipeline_cfg *`` (owned by the returned cdata) for ``cfg``."""
    waits = {k: WAITS[v] for k, v in (("producer_wait", cfg.producer_wait), ("consumer_wait", cfg.consumer_wait))}
    return ffi.new(
        "ll_pipeline_cfg *",
        {
            "ticks": cfg.ticks,
            "producer_mode": lib.LL_PRODUCER_OPEN if cfg.producer == "open" else lib.LL_PRODUCER_CLOSED,
            "rate_per_s": float(cfg.rate),
            "full_policy": lib.LL_FULL_DROP if cfg.when_full == "drop" else lib.LL_FULL_WAIT,
            "producer_cpu": cfg.cpus[0] if cfg.cpus else -1,
            "consumer_cpu": cfg.cpus[1] if cfg.cpus else -1,
            "capacity": cfg.capacity,
            "pool_blocks": cfg.pool_blocks,
            "hold_ns": cfg.hold_ns,
            "sample_mode": lib.LL_SAMPLES_GROWING if cfg.samples == "growing" else lib.LL_SAMPLES_PREALLOCATED,
            "sample_capacity": cfg.kept,
            "work_ns": list(cfg.work_ns),
            "handoff": HANDOFFS[cfg.handoff],
            "clock": CLOCKS[cfg.clock],
            **waits,
        },
    )


def run(config: PipelineConfig | None = None, **changes: Any) -> PipelineResult:
    """Runs the pipeline with ``config`` (default :func:`best_config`),
    updated by ``changes`` (field=value).  Ctrl-C stops the run within a
    millisecond and raises :class:`lowlat.core.stop.Interrupted`, whose
    ``partial`` is the result of the ticks made before the stop."""
    cfg = _resolve(config, changes)
    c = _c_config(cfg)
    samples = np.zeros(cfg.kept, SAMPLE_DTYPE)  # owned here; C writes into it
    buf = ffi.cast("ll_pipeline_sample *", ffi.from_buffer(samples, require_writable=True)) if cfg.kept else ffi.NULL
    intended, sent = Histogram(1, HOUR_NS, 3), Histogram(1, HOUR_NS, 3)
    out = ffi.new("ll_pipeline_result *")
    result: PipelineResult | None = None
    try:
        with stoppable(), quiet_blas():  # no spinning BLAS worker on the pipeline's CPUs
            rc = check_status(lib.ll_pipeline_run(c, intended.c_handle, sent.c_handle, buf, out), "pipeline run")
            result = _result(cfg, out, intended, sent, samples, rc == lib.LL_STOPPED)
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


def _result(
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
        self._c = _c_config(cfg)
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
                self._result = _result(
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
    cfg = _resolve(config, changes, background=True)
    return Running(cfg, intervals)


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
    cfg = _resolve(config, changes)
    if cfg.producer != "open":
        raise ValueError("floor() needs an open-loop config (producer='open'): the floor is measured on a schedule")
    if cfg.producer_wait != cfg.consumer_wait:
        raise ValueError(f"floor() uses one wait for both sides; got {cfg.producer_wait!r} and {cfg.consumer_wait!r}")
    c = ffi.new(
        "ll_floor_cfg *",
        {
            "ticks": cfg.ticks,
            "rate_per_s": float(cfg.rate),
            "producer_cpu": cfg.cpus[0] if cfg.cpus else -1,
            "consumer_cpu": cfg.cpus[1] if cfg.cpus else -1,
            "wait": WAITS[cfg.producer_wait],
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
    "MAX_RATE",
    "MAX_RUN_S",
    "MAX_SCHEDULE_S",
    "MIN_RATE",
    "SAMPLE_DTYPE",
    "STAGES",
    "WAITS",
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
