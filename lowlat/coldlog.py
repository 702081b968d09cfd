"""The cold path: logging kept off the hot path (``csrc/logring.c``,
``csrc/bench/bench_log.c``).

A log line written with ``write(2)`` on the hot thread costs a system call
per event (about a microsecond, sometimes far more when the page cache or
the disk makes it wait).  The asynchronous log costs the hot thread one copy
of a 64-byte record into a bounded SPSC ring; a writer thread formats the
records and writes them in batches.  When the ring is full a record is
dropped and counted, never waited for: ``logged = written + dropped``
(+ ``failed`` when a write is refused), checked by every run here.

- :class:`AsyncLog`: the asynchronous log itself, for use from Python (a
  log call from Python costs the interpreter's ~100 ns on top; the timed
  loops are in C).
- :func:`run`: one timed run of the C hot loop in one mode ("none", "sync",
  "async"), its log written to a temporary file that this module creates,
  reads back (lines counted, and checked with ``verify=True``) and deletes.
- :func:`compare`: the three modes interleaved, ``rounds`` times.
- :func:`bench_keys`: the figures of ``python -m lowlat bench``.

Times are in ns unless a name says otherwise.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lowlat._check import int_arg, power_of_two
from lowlat._lib import ffi, lib
from lowlat.affinity import bench_cpus, cpu_count, usable_cpus
from lowlat.blas import quiet_blas
from lowlat.errors import check_status
from lowlat.hist import Histogram
from lowlat.interleave import interleave, median
from lowlat.interrupt import Interrupted, stoppable

# The modes of the timed loop (enum ll_log_mode), values from the compiled core.
MODES: dict[str, int] = {"none": int(lib.LL_LOG_NONE), "sync": int(lib.LL_LOG_SYNC), "async": int(lib.LL_LOG_ASYNC)}
RECORD_BYTES = int(ffi.sizeof("ll_log_record"))  # 64
TEXT_MAX = int(lib.LL_LOG_TEXT) - 1  # characters of text a record keeps
BATCH = int(lib.LL_LOG_BATCH)  # records per write(2) of the writer, at most
DEFAULT_CAPACITY = 16384  # records (1 MiB): ~80 ms of events at 200,000/s
MAX_CAPACITY = 1 << 24
DEFAULT_IDLE_NS = 50_000  # the writer's nap when the ring is empty
DEFAULT_RATE = 200_000.0  # events per second: one every 5 us
MAX_EVENTS = 10_000_000
MAX_RUN_S = 60.0
# The text the C hot loop puts in every record (csrc/bench/bench_log.c).
BENCH_TEXT = "px update"


@dataclass(frozen=True)
class LogStats:
    """The asynchronous log's counters (see ``ll_log_stats``).  Exact after
    :meth:`AsyncLog.close`; a snapshot while it runs."""

    logged: int  # log calls
    dropped: int  # ... refused by a full ring
    written: int  # records whose line write(2) accepted
    failed: int  # records of batches whose write(2) failed
    write_calls: int  # write(2) calls by the writer
    bytes: int  # bytes written
    max_fill: int  # most records the writer found waiting when it woke
    wakeups: int  # naps of the writer on an empty ring
    writer_pinned: bool

    @property
    def lost(self) -> int:
        """Records neither written, dropped nor failed: 0 once closed."""
        return self.logged - self.written - self.dropped - self.failed


def _stats(st: Any) -> LogStats:
    return LogStats(
        int(st.logged),
        int(st.dropped),
        int(st.written),
        int(st.failed),
        int(st.write_calls),
        int(st.bytes),
        int(st.max_fill),
        int(st.wakeups),
        int(st.writer_pinned) == 0,
    )


def _writable_fd(fd: Any) -> int:
    """``fd`` as an int, checked to be an open descriptor with write access."""
    f = int_arg(fd, "fd", minimum=0)
    if not lib.ll_log_fd_writable(f):
        raise ValueError(f"fd {f} is not a file descriptor open for writing (closed, or opened read-only)")
    return f


def _cpu(value: Any, name: str) -> int:
    """A CPU this process may run on, or -1 for None (not pinned)."""
    if value is None:
        return -1
    c = int_arg(value, name, minimum=0, maximum=cpu_count() - 1)
    if c not in usable_cpus():
        raise ValueError(f"{name} {c} is outside this process's affinity mask (usable: {usable_cpus()})")
    return c


def _idle(idle_ns: Any) -> int:
    ns = int_arg(idle_ns, "idle_ns", minimum=0, maximum=1_000_000_000)
    if ns == 0 and len(usable_cpus()) < 2:
        raise ValueError(
            "idle_ns=0 makes the writer yield in a loop when the ring is empty; with one usable CPU it would "
            "compete with the hot thread for it: give it a nap (e.g. idle_ns=50_000)"
        )
    return ns


class AsyncLog:
    """An asynchronous log: a ring of ``capacity`` 64-byte records (a power
    of two >= 2) and a writer thread that writes them, one text line each
    (``"seq stamp_ns value text"``), to ``target``: a path (created or
    truncated, owned: closed by :meth:`close`) or an int file descriptor
    open for writing (the caller's: never closed here).

    ``writer_cpu`` pins the writer (None: not pinned); ``idle_ns`` is its
    nap when the ring is empty (0: ``sched_yield`` instead, refused with one
    usable CPU); ``writer_delay_ns`` a nap after every batch (a deliberately
    slow writer).  Owns its C log; :meth:`close` (or leaving a ``with``
    block) drains the ring, stops the writer and returns the final
    :class:`LogStats`.  One thread logs."""

    def __init__(
        self,
        target: str | os.PathLike[str] | int,
        capacity: int = DEFAULT_CAPACITY,
        *,
        writer_cpu: int | None = None,
        idle_ns: int = DEFAULT_IDLE_NS,
        writer_delay_ns: int = 0,
    ) -> None:
        cap = power_of_two(capacity, "capacity")
        if cap > MAX_CAPACITY:
            raise ValueError(f"capacity must be <= {MAX_CAPACITY} records, got {cap}")
        cpu = _cpu(writer_cpu, "writer_cpu")
        idle = _idle(idle_ns)
        delay = int_arg(writer_delay_ns, "writer_delay_ns", minimum=0, maximum=1_000_000_000)
        if isinstance(target, bool) or not isinstance(target, (str, os.PathLike, int)):
            raise TypeError(f"target must be a path or a file descriptor (int), got {type(target).__name__}")
        self._owned_fd: int | None = None
        if isinstance(target, int):
            fd = _writable_fd(target)
        else:
            path = Path(target)
            if path.is_dir():
                raise ValueError(f"target {str(path)!r} is a directory, not a file")
            if not path.parent.is_dir():
                raise ValueError(f"target {str(path)!r}: its directory does not exist")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            self._owned_fd = fd
        cfg = ffi.new(
            "ll_log_cfg *",
            {"capacity": cap, "fd": fd, "writer_cpu": cpu, "idle_ns": idle, "writer_delay_ns": delay},
        )
        out = ffi.new("ll_logring **")
        try:
            check_status(lib.ll_logring_start(cfg, out), "starting the log writer")
        except BaseException:
            self._close_fd()
            raise
        self._lg: Any = ffi.gc(out[0], lib.ll_logring_destroy)
        self._rec = ffi.new("ll_log_record *")
        self._final: LogStats | None = None
        self.capacity = cap

    def log(self, seq: int, value: int = 0, text: str = "") -> bool:
        """Queues one record (``seq`` and ``value`` integers, ``text`` ASCII,
        at most 39 characters; the stamp is taken now, monotonic ns).  True
        when queued, False when the ring was full (dropped, counted)."""
        if self._final is not None:
            raise ValueError("the log is closed")
        s = int_arg(seq, "seq", minimum=0, maximum=2**64 - 1)
        v = int_arg(value, "value", minimum=-(2**63), maximum=2**63 - 1)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        raw = text.encode("ascii", "replace")
        if len(raw) > TEXT_MAX:
            raise ValueError(f"text must be at most {TEXT_MAX} characters, got {len(raw)}")
        r = self._rec
        r.seq, r.value, r.stamp_ns = s, v, int(lib.ll_now_ns())
        r.text = raw + b"\0" * (TEXT_MAX + 1 - len(raw))
        return bool(lib.ll_log_try(self._lg, r))

    def stats(self) -> LogStats:
        """The counters now (final once closed)."""
        if self._final is not None:
            return self._final
        st = ffi.new("ll_log_stats *")
        lib.ll_logring_stats(self._lg, st)
        return _stats(st)

    def close(self) -> LogStats:
        """Writes what is still in the ring, stops the writer, closes an
        owned file; returns the final counters.  Idempotent."""
        if self._final is None:
            st = ffi.new("ll_log_stats *")
            check_status(lib.ll_logring_stop(self._lg, st), "stopping the log writer")
            self._final = _stats(st)
            self._close_fd()
        return self._final

    def _close_fd(self) -> None:
        if self._owned_fd is not None:
            os.close(self._owned_fd)
            self._owned_fd = None

    def __del__(self) -> None:
        # A log dropped without close(): drain it and close an owned file
        # (the C log itself is freed by its ffi.gc destructor).
        if getattr(self, "_final", 1) is None:
            self.close()

    def __enter__(self) -> AsyncLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class LogFile:
    """A log file read back: its lines, whether each parsed as
    ``"seq stamp_ns value text"``, and whether the ids strictly increase."""

    lines: int
    parsed: bool
    increasing: bool
    first_bad: str  # the first line that did not parse ("" when all did)
    seqs: list[int]


def read_log(path: str | os.PathLike[str], text: str | None = None) -> LogFile:
    """Reads a log file written by this module, line by line (in Python:
    about 1-3 us a line, so keep it for checks); with ``text``, a line whose
    text differs counts as not parsed."""
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    complete = lines[-1] == b""  # the file ends with a newline (or is empty)
    body = lines[:-1] if complete else lines
    want = None if text is None else text.encode("ascii", "replace")
    seqs: list[int] = []
    bad = "" if complete else "(the last line has no newline)"
    for line in body:
        try:
            seq, stamp, value, said = line.split(b" ", 3)
            seqs.append(int(seq))
            int(stamp)
            int(value)
            if want is not None and said != want:
                raise ValueError(said)
        except ValueError:
            bad = line[:80].decode("ascii", "replace")
            break
    increasing = all(b > a for a, b in itertools.pairwise(seqs))
    return LogFile(len(body), not bad, increasing, bad, seqs)


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
    and pinning exist (:func:`lowlat.affinity.bench_cpus`); None otherwise
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
    run (:class:`lowlat.interrupt.Interrupted`)."""
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
    hot, writer = (_cpu(pair[0], "hot cpu"), _cpu(pair[1], "writer cpu")) if pair else (-1, -1)
    idle = _idle(idle_ns)
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
            rc = check_status(lib.ll_bench_log(cfg, hist._h, out), "log benchmark")
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
    """``modes`` interleaved (:func:`lowlat.interleave.interleave`),
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
