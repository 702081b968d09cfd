"""``SpscQueue``: the single-producer single-consumer ring of
``csrc/spsc.c``, with numpy arrays moving in and out without copies.

Exactly one thread may push and exactly one (other or the same) thread may
pop.  Every call releases the GIL while in C, so a producer thread and a
consumer thread really do run at the same time; batch with ``push_many`` /
``pop_many``, since each call costs far more than moving one record.

The contract is checked: the first thread to push becomes the queue's
producer and the first to pop its consumer; another thread pushing (or
popping) while that one is alive raises :class:`SpscContractError` instead of
silently losing and duplicating records.  To hand a side over, the thread
that has it calls ``release_producer()`` / ``release_consumer()`` after its
last push / pop; the next thread to push / pop then takes it.
"""

from __future__ import annotations

import numbers
import threading
from typing import Any

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.errors import LowlatError
from lowlat.core.validate import array_arg, int_arg, power_of_two

_get_ident = threading.get_ident


class SpscContractError(LowlatError, RuntimeError):
    """A second thread pushed (or popped) on a single-producer (single-consumer) queue."""


def default_layout() -> str:
    """Where a padded ring created without a layout flag puts its cursors on
    this CPU: ``"spread"`` (a 128-byte line pair apart; AMD and Hygon x86
    cores) or ``"adjacent"`` (adjacent lines; every other CPU).  Measured
    (``csrc/spsc_inline.h``): spread moved more records per second on AMD,
    adjacent on Intel; other CPUs get adjacent unmeasured."""
    return "spread" if lib.ll_spsc_default_layout() == lib.LL_SPSC_SPREAD else "adjacent"


def _flag(value: Any, name: str) -> bool:
    """A real bool (numpy's too): 'no' or 0 must not pass for a choice."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def ring_flags(*, padded: bool = True, cached: bool = True, spread: bool = False, adjacent: bool = False) -> int:
    """The ``flags`` of ``ll_spsc_create`` (csrc/spsc.h) for a ring's
    layout, each choice a real bool: ``padded`` cursors on lines of their own
    (False: one shared line, false sharing), ``cached`` remote cursor copies
    (False: re-read on every call), and for padded cursors at most one of
    ``spread`` (a 128-byte line pair apart) and ``adjacent`` (adjacent
    lines); neither: :func:`default_layout`.  The one place the bits are
    built."""
    padded, cached = _flag(padded, "padded"), _flag(cached, "cached")
    spread, adjacent = _flag(spread, "spread"), _flag(adjacent, "adjacent")
    if spread and adjacent:
        raise ValueError("spread and adjacent are two placements of the cursors: ask for one at most")
    return (
        (0 if padded else lib.LL_SPSC_UNPADDED)
        | (0 if cached else lib.LL_SPSC_NO_CACHE)
        | (lib.LL_SPSC_SPREAD if spread and padded else 0)
        | (lib.LL_SPSC_ADJACENT if adjacent and padded else 0)
    )


def record_dtype(dtype: Any) -> np.dtype:
    """The record type: a numpy dtype, or an int number of bytes (an opaque
    record of that size); None means the default, uint64."""
    if dtype is None:
        return np.dtype(np.uint64)
    if isinstance(dtype, bool):
        raise TypeError(f"dtype must be a numpy dtype or a record size in bytes, got {dtype!r}")
    if isinstance(dtype, int):
        if dtype < 1:
            raise ValueError(f"record size must be >= 1 byte, got {dtype}")
        if dtype > 2**31 - 1:
            raise ValueError(f"record size must be <= {2**31 - 1} bytes, got {dtype}")
        return np.dtype((np.void, dtype))
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be a numpy dtype or a record size in bytes, got {dtype!r}") from exc
    if dt.itemsize < 1:
        raise ValueError(f"record size must be >= 1 byte, got dtype {dt} of {dt.itemsize} bytes")
    if dt.hasobject:
        raise TypeError(f"dtype {dt} holds Python objects; records must be plain bytes (numbers, structs)")
    return dt


class SpscQueue:
    """A bounded ring of ``capacity`` records of ``dtype`` (default uint64).

    ``capacity`` must be a power of two >= 2 and is exactly the number of
    records it holds.  ``padded`` puts the two cursors on separate cache lines
    (False reproduces false sharing); ``cached`` lets each side keep a copy
    of the other's cursor (False re-reads it on every call).  The C ring is
    owned by this object.
    """

    def __init__(self, capacity: int, dtype: Any = np.uint64, *, padded: bool = True, cached: bool = True) -> None:
        cap = power_of_two(capacity, "capacity")
        dt = record_dtype(dtype)
        flags = ring_flags(padded=padded, cached=cached)
        if cap * dt.itemsize > 2**40:
            raise ValueError(f"capacity * record size = {cap * dt.itemsize} bytes; at most 2**40 bytes are allowed")
        q = lib.ll_spsc_create(cap, dt.itemsize, flags)
        if q == ffi.NULL:
            raise MemoryError(f"could not allocate a ring of {cap} records of {dt.itemsize} bytes")
        self._q = ffi.gc(q, lib.ll_spsc_destroy)
        self.capacity = cap
        self.dtype = dt
        self.record_size = dt.itemsize
        self.padded = bool(padded)
        self.cached = bool(cached)
        # One-record scratch buffers, one per side, so try_push and try_pop
        # never allocate and never share memory between the two threads.
        self._push_buf = np.zeros(1, dt)
        self._pop_buf = np.zeros(1, dt)
        self._push_ptr = ffi.from_buffer(self._push_buf)
        self._pop_ptr = ffi.from_buffer(self._pop_buf, require_writable=True)
        # The two sides' threads: ident (the fast check) and Thread (alive?).
        self._producer: int | None = None
        self._consumer: int | None = None
        self._threads: dict[str, threading.Thread] = {}
        self._claim_lock = threading.Lock()
        self._int_range = (int(np.iinfo(dt).min), int(np.iinfo(dt).max)) if dt.kind in "iu" else None

    # -- the two sides -------------------------------------------------------------
    def _claim(self, side: str, call: str) -> None:
        """Makes the calling thread ``side`` ("producer" / "consumer"), or
        raises when another live thread has it."""
        me = threading.current_thread()
        with self._claim_lock:
            owner = self._threads.get(side)
            if owner is None or owner is me or not owner.is_alive():
                self._threads[side] = me
                setattr(self, f"_{side}", _get_ident())
                return
        action = "pushes" if side == "producer" else "pops"
        raise SpscContractError(
            f"{call} from thread {me.name!r}, but thread {owner.name!r} is this queue's {side}: a single-{side} "
            f"queue has exactly one thread that {action} (a second one loses and duplicates records).  Hand the "
            f"side over with q.release_{side}() in {owner.name!r} after its last call, or give each {side} "
            "its own queue"
        )

    def release_producer(self) -> None:
        """Gives up the producer side: call it in the producer thread after
        its last push; the next thread to push becomes the producer."""
        with self._claim_lock:
            self._producer = None
            self._threads.pop("producer", None)

    def release_consumer(self) -> None:
        """Gives up the consumer side: call it in the consumer thread after
        its last pop; the next thread to pop becomes the consumer."""
        with self._claim_lock:
            self._consumer = None
            self._threads.pop("consumer", None)

    # -- one record -------------------------------------------------------------
    def _store(self, value: Any) -> None:
        """``value`` into the push buffer, refusing what would be changed on
        the way (1.9 truncated to 1, '3' parsed, -1 wrapped)."""
        t = type(value)
        if t is int and self._int_range is not None:  # the common case, fast
            if self._int_range[0] <= value <= self._int_range[1]:
                self._push_buf[0] = value
                return
        elif t is float and self.dtype.kind == "f":
            self._push_buf[0] = value
            return
        kind = self.dtype.kind
        if kind in "iu":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise TypeError(
                    f"cannot store {value!r} as a {self.dtype} record: an integer is needed, got "
                    f"{type(value).__name__} (a float would be truncated; convert it explicitly)"
                )
            assert self._int_range is not None
            lo, hi = self._int_range
            if not lo <= int(value) <= hi:
                raise OverflowError(f"cannot store {value!r} as a {self.dtype} record: it must be in [{lo}, {hi}]")
        elif kind in "fc" and (
            isinstance(value, (str, bytes, bool, np.bool_)) or not isinstance(value, numbers.Number)
        ):
            raise TypeError(f"cannot store {value!r} as a {self.dtype} record: a number is needed")
        elif kind == "f" and isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
            raise TypeError(f"cannot store {value!r} as a {self.dtype} record: a real number is needed")
        try:
            self._push_buf[0] = value
        except (OverflowError, ValueError, TypeError) as exc:
            raise type(exc)(f"cannot store {value!r} as a {self.dtype} record: {exc}") from None

    def try_push(self, value: Any) -> bool:
        """Producer: copies one record in; False when the ring is full.  The
        value must fit the record type as it is (no truncation or parsing)."""
        if _get_ident() != self._producer:
            self._claim("producer", "try_push")
        self._store(value)
        return bool(lib.ll_spsc_try_push(self._q, self._push_ptr))

    def try_pop(self) -> Any:
        """Consumer: the oldest record, or None when the ring is empty.  A
        uint64/int record comes back as a Python int."""
        if _get_ident() != self._consumer:
            self._claim("consumer", "try_pop")
        if not lib.ll_spsc_try_pop(self._q, self._pop_ptr):
            return None
        v = self._pop_buf[0]
        return int(v) if self.dtype.kind in "iu" else v.copy()

    # -- batches ------------------------------------------------------------------
    def push_many(self, records: np.ndarray) -> int:
        """Producer: copies as many of ``records`` (1-D, C-contiguous, this
        queue's dtype) as fit, oldest first; returns how many (0..len)."""
        arr = array_arg(records, self.dtype, "records")
        if _get_ident() != self._producer:
            self._claim("producer", "push_many")
        if arr.size == 0:
            return 0
        return int(lib.ll_spsc_push_many(self._q, ffi.from_buffer(arr), arr.size))

    def pop_many(self, out: np.ndarray) -> int:
        """Consumer: fills ``out[:n]`` (writable, 1-D, C-contiguous, this
        queue's dtype) with up to ``len(out)`` records; returns n."""
        arr = array_arg(out, self.dtype, "out", writable=True)
        if _get_ident() != self._consumer:
            self._claim("consumer", "pop_many")
        if arr.size == 0:
            return 0
        return int(lib.ll_spsc_pop_many(self._q, ffi.from_buffer(arr, require_writable=True), arr.size))

    def pop_array(self, max_records: int | None = None) -> np.ndarray:
        """Consumer: up to ``max_records`` (an int >= 0; default and at most:
        capacity, all the ring can hold) records in a new array."""
        n = self.capacity if max_records is None else int_arg(max_records, "max_records", minimum=0)
        out = np.empty(min(n, self.capacity), self.dtype)
        return out[: self.pop_many(out)]

    # -- state --------------------------------------------------------------------
    def __len__(self) -> int:
        """Records in the ring (a snapshot while the other side is active)."""
        n = int(lib.ll_spsc_size(self._q))
        if n > self.capacity:  # only C callers can get here: the Python face checks the contract
            raise SpscContractError(
                f"the ring's cursors say {n} records are in a ring of {self.capacity}: two threads have pushed "
                "(or popped) at once, and records were lost or duplicated"
            )
        return n

    @property
    def cursor_distance(self) -> int:
        """Bytes between the two cursors: padded, one cache line (64 on x86-64,
        the two lines adjacent) or a line pair (128), as :func:`default_layout`
        picks for this CPU; 8 unpadded."""
        return int(lib.ll_spsc_cursor_distance(self._q))

    def __repr__(self) -> str:
        layout = "padded" if self.padded else "unpadded"
        cache = "cached" if self.cached else "uncached"
        return f"<SpscQueue {len(self)}/{self.capacity} x {self.dtype} ({layout}, {cache})>"
