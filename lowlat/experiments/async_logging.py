"""The cold path measured (chapter 05): the C hot loop of
``csrc/bench/bench_log.c`` logging nothing, synchronously (``write(2)`` per
event) or through the asynchronous log of :mod:`lowlat.core.logring`.

- :func:`run`: one timed run in one mode ("none", "sync", "async"), its log
  written to a temporary file that this module creates, reads back (lines
  counted, and checked with ``verify=True``) and deletes.
- :func:`compare`: the three modes interleaved, ``rounds`` times.
- :func:`bench_keys`: the figures of ``python -m lowlat bench``.

Times are in ns unless a name says otherwise.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_pair
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.hist import Histogram
from lowlat.core.logring import (
    BENCH_TEXT,
    DEFAULT_CAPACITY,
    DEFAULT_IDLE_NS,
    DEFAULT_RATE,
    MAX_CAPACITY,
    MAX_EVENTS,
    MAX_RUN_S,
    MODES,
    AsyncLog,
    LogFile,
    LogStats,
    idle_arg,
    read_log,
)
from lowlat.core.stop import Interrupted, stoppable
from lowlat.core.validate import int_arg, power_of_two
from lowlat.machine.placement import bench_cpus
from lowlat.method.interleave import interleave, median


@dataclass(frozen=True)
class LogRun:
    """One run of the timed hot loop (``csrc/bench/bench_log.c``).  ``hist``
    holds each event's time on the hot thread (ns, from its start to the
    return of its log call).  ``lines`` were counted in the file afterwards
    and ``written`` is what the writer (or the synchronous calls) counted:
    both must agree.  ``logged = written + dropped + failed``."""

    mode: str
    capacity: int
    rate: float
    hist: Histogram
    events: int
    logged: int
    written: int
    dropped: int
    failed: int
    write_calls: int
    max_fill: int
    late: int  # events that started more than 10 us after they were due
    seconds: float
    hot_pinned: bool
    writer_pinned: bool
    lines: int  # newline characters in the file afterwards
    file: LogFile | None  # the file read back (verify=True), else None

    @property
    def p50(self) -> int:
        return self.hist.percentile(50)

    @property
    def p99(self) -> int:
        return self.hist.percentile(99)

    @property
    def max(self) -> int:
        return self.hist.max

    @property
    def accounted(self) -> bool:
        """Nothing lost silently: every log call was written, dropped or
        failed, and the file holds exactly the lines counted as written."""
        return self.logged == self.written + self.dropped + self.failed and self.lines == self.written

    def row(self, label: str) -> str:
        return (
            f"{label:28} {self.p50:>8,} {self.p99:>9,} {self.max:>12,} {self.events:>9,} {self.written:>9,} "
            f"{self.dropped:>9,}"
        )

    @staticmethod
    def header() -> str:
        return f"{'':28} {'P50 ns':>8} {'P99 ns':>9} {'max ns':>12} {'events':>9} {'written':>9} {'dropped':>9}"


def log_cpus() -> tuple[int, int] | None:
    """(hot, writer) CPUs: two different physical cores when two usable CPUs
    and pinning exist (:func:`lowlat.machine.placement.bench_cpus`); None otherwise
    (both threads unpinned: with one CPU they take turns, the writer
    napping whenever the ring is empty)."""
    hot, writer = bench_cpus()
    return (hot, writer) if hot >= 0 and hot != writer else None


def run(
    mode: str,
    *,
    events: int = 50_000,
    rate: float = DEFAULT_RATE,
    capacity: int = DEFAULT_CAPACITY,
    cpus: tuple[int, int] | str | None = "auto",
    idle_ns: int = DEFAULT_IDLE_NS,
    writer_delay_ns: int = 0,
    directory: str | os.PathLike[str] | None = None,
    verify: bool = False,
) -> LogRun:
    """One run of ``events`` events in ``mode`` ("none", "sync", "async"),
    at ``rate`` events per second (0: back to back), each logged to a
    temporary file created in ``directory`` (default: the system's temporary
    directory), counted and deleted afterwards (read back line by line with
    ``verify``).  ``cpus``: (hot, writer), None (not pinned) or "auto"
    (:func:`log_cpus`).  ``capacity``, ``idle_ns`` and ``writer_delay_ns``
    configure the asynchronous log (see :class:`AsyncLog`).  Ctrl-C stops the
    run (:class:`lowlat.core.stop.Interrupted`)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(repr(m) for m in MODES)}; got {mode!r}")
    n = int_arg(events, "events", minimum=1, maximum=MAX_EVENTS)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise TypeError(f"rate must be a number of events per second, got {rate!r}")
    if not (math.isfinite(rate) and 0 <= rate <= 1e8):
        raise ValueError(f"rate must be 0 (back to back) or in (0, 1e8] events per second, got {rate!r}")
    if rate > 0 and n / rate > MAX_RUN_S:
        raise ValueError(f"{n:,} events at {rate:g}/s would run {n / rate:,.0f} s; at most {MAX_RUN_S:g} s")
    cap = power_of_two(capacity, "capacity")
    if cap > MAX_CAPACITY:
        raise ValueError(f"capacity must be <= {MAX_CAPACITY} records, got {cap}")
    if cpus == "auto":
        pair = log_cpus()
    elif cpus is None or (isinstance(cpus, tuple) and len(cpus) == 2):
        pair = cpus
    else:
        raise TypeError(f"cpus must be a (hot, writer) pair, None or 'auto', got {cpus!r}")
    hot, writer = cpu_pair(pair, "cpus", ("hot", "writer"))
    idle = idle_arg(idle_ns)
    delay = int_arg(writer_delay_ns, "writer_delay_ns", minimum=0, maximum=1_000_000_000)
    if directory is not None and not Path(directory).is_dir():
        raise ValueError(f"directory {str(directory)!r} does not exist")
    fd, name = tempfile.mkstemp(prefix="lowlat-log-", suffix=".txt", dir=directory)
    try:
        fields = {"events": n, "rate_per_s": float(rate), "mode": MODES[mode], "fd": fd, "capacity": cap}
        fields.update(hot_cpu=hot, writer_cpu=writer, idle_ns=idle, writer_delay_ns=delay)
        cfg = ffi.new("ll_log_bench_cfg *", fields)
        hist = Histogram()
        out = ffi.new("ll_log_bench_result *")
        with stoppable(), quiet_blas():
            rc = check_status(lib.ll_bench_log(cfg, hist.c_handle, out), "log benchmark")
            if rc == lib.LL_STOPPED:
                raise Interrupted(f"log run stopped after {int(out.events):,} events")
        os.close(fd)
        fd = -1
        path = Path(name)
        lines = path.read_bytes().count(b"\n")
        checked = read_log(path, BENCH_TEXT) if verify else None
    finally:
        if fd >= 0:
            os.close(fd)
        os.unlink(name)
    return LogRun(
        mode,
        cap,
        float(rate),
        hist,
        int(out.events),
        int(out.logged),
        int(out.written),
        int(out.dropped),
        int(out.failed),
        int(out.write_calls),
        int(out.max_fill),
        int(out.late),
        float(out.seconds),
        int(out.hot_pinned) == 0,
        int(out.writer_pinned) == 0,
        lines,
        checked,
    )


def compare(
    rounds: int = 5, modes: Sequence[str] = ("none", "sync", "async"), **options: Any
) -> dict[str, list[LogRun]]:
    """``modes`` interleaved (:func:`lowlat.method.interleave.interleave`),
    ``rounds`` runs each, every run with the same ``options`` (see :func:`run`)."""
    for m in modes:
        if m not in MODES:
            raise ValueError(f"mode must be one of {', '.join(repr(k) for k in MODES)}; got {m!r}")
    if "cpus" not in options:
        options["cpus"] = log_cpus()  # decided once, not per run

    def one(m: str) -> Callable[[], LogRun]:
        return lambda: run(m, **options)

    return interleave({m: one(m) for m in modes}, rounds)


def bench_keys(quick: bool) -> dict[str, float]:
    """The cold path's bench figures (ns, counts): ``log_sync_p99_ns`` and
    ``log_async_p99_ns`` (the hot path's P99 per event with a ``write(2)``
    per event vs the asynchronous log, medians of interleaved rounds at
    200,000 events/s) and ``log_async_dropped`` (records the asynchronous log
    dropped over those rounds, with its default ring: 0 expected).  Quick:
    ~0.5 s; full: ~3 s."""
    events, rounds = (10_000, 3) if quick else (50_000, 5)
    res = compare(rounds, ("sync", "async"), events=events)
    for runs in res.values():
        for r in runs:
            if not r.accounted:
                raise RuntimeError(f"log run in mode {r.mode} lost records: {r}")
    return {
        "log_sync_p99_ns": median(float(r.p99) for r in res["sync"]),
        "log_async_p99_ns": median(float(r.p99) for r in res["async"]),
        "log_async_dropped": float(sum(r.dropped for r in res["async"])),
    }


def filesystem(path: str | os.PathLike[str] | None = None) -> str:
    """The type of file system ``path`` (default: the temporary directory)
    lies on, from /proc/self/mounts ("ext4", "tmpfs"...); "unknown" where
    that file does not exist (macOS)."""
    target = os.path.realpath(path if path is not None else tempfile.gettempdir())
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    best, kind = "", "unknown"
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1].replace("\\040", " ")
        if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
            best, kind = mnt, parts[2]
    return kind


__all__ = [
    "DEFAULT_CAPACITY",
    "MODES",
    "AsyncLog",
    "LogFile",
    "LogRun",
    "LogStats",
    "bench_keys",
    "compare",
    "filesystem",
    "log_cpus",
    "read_log",
    "run",
]
