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
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_arg, usable_cpus
from lowlat.core.errors import check_status
from lowlat.core.outfile import open_stream
from lowlat.core.validate import int_arg, power_of_two

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
    f = int_arg(fd, "target", minimum=0, maximum=2**31 - 1)
    if not lib.ll_log_fd_writable(f):
        raise ValueError(f"fd {f} is not a file descriptor open for writing (closed, or opened read-only)")
    return f


def idle_arg(idle_ns: Any) -> int:
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
    (``"seq stamp_ns value text"``), to ``target``: a path (a regular file,
    truncated in place, or a new name in a writable folder; a link to a
    regular file is written through; a folder, device, FIFO or ``-`` is
    refused before anything starts: :func:`lowlat.core.outfile.open_stream`;
    owned: closed by :meth:`close`) or an int file descriptor open for
    writing (the caller's: never closed here).

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
        cpu = cpu_arg(writer_cpu, "writer_cpu")
        idle = idle_arg(idle_ns)
        delay = int_arg(writer_delay_ns, "writer_delay_ns", minimum=0, maximum=1_000_000_000)
        if isinstance(target, bool) or not isinstance(target, (str, os.PathLike, int)):
            raise TypeError(f"target must be a path or a file descriptor (int), got {type(target).__name__}")
        self._owned_fd: int | None = None
        if isinstance(target, int):
            fd = _writable_fd(target)
        else:
            fd = open_stream(target, "target")  # checked first: never a FIFO, device or folder
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
        """Queues one record (``seq`` and ``value`` integers, ``text`` ASCII
        without NUL, at most 39 characters; the stamp is taken now, monotonic ns).  True
        when queued, False when the ring was full (dropped, counted)."""
        if self._final is not None:
            raise ValueError("the log is closed")
        s = int_arg(seq, "seq", minimum=0, maximum=2**64 - 1)
        v = int_arg(value, "value", minimum=-(2**63), maximum=2**63 - 1)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if "\0" in text:  # the record's text is a C string: everything after a NUL would be lost
            raise ValueError(f"text must not contain a NUL character (it ends a C string), got {text!r}")
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
