"""``SpscQueue``: the single-producer single-consumer ring of
``csrc/spsc.c``, with numpy arrays moving in and out without copies.

Exactly one thread may push and exactly one (other or the same) thread may
pop.  Every call releases the GIL while in C, so a producer thread and a
consumer thread really do run at the same time; batch with ``push_many`` /
``pop_many``, since each call costs far more than moving one record.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lowlat._check import array_arg, power_of_two
from lowlat._lib import ffi, lib


def record_dtype(dtype: Any) -> np.dtype:
    """The record type: a numpy dtype, or an int number of bytes (an opaque
    record of that size)."""
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        if dtype < 1:
            raise ValueError(f"record size must be >= 1 byte, got {dtype}")
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
        if cap * dt.itemsize > 2**40:
            raise ValueError(f"capacity * record size = {cap * dt.itemsize} bytes; at most 2**40 bytes are allowed")
        flags = (0 if padded else lib.LL_SPSC_UNPADDED) | (0 if cached else lib.LL_SPSC_NO_CACHE)
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

    # -- one record -------------------------------------------------------------
    def try_push(self, value: Any) -> bool:
        """Producer: copies one record in; False when the ring is full."""
        try:
            self._push_buf[0] = value
        except (OverflowError, ValueError, TypeError) as exc:
            raise type(exc)(f"cannot store {value!r} as a {self.dtype} record: {exc}") from None
        return bool(lib.ll_spsc_try_push(self._q, self._push_ptr))

    def try_pop(self) -> Any:
        """Consumer: the oldest record, or None when the ring is empty.  A
        uint64/int record comes back as a Python int."""
        if not lib.ll_spsc_try_pop(self._q, self._pop_ptr):
            return None
        v = self._pop_buf[0]
        return int(v) if self.dtype.kind in "iu" else v.copy()

    # -- batches ------------------------------------------------------------------
    def push_many(self, records: np.ndarray) -> int:
        """Producer: copies as many of ``records`` (1-D, C-contiguous, this
        queue's dtype) as fit, oldest first; returns how many (0..len)."""
        arr = array_arg(records, self.dtype, "records")
        if arr.size == 0:
            return 0
        return int(lib.ll_spsc_push_many(self._q, ffi.from_buffer(arr), arr.size))

    def pop_many(self, out: np.ndarray) -> int:
        """Consumer: fills ``out[:n]`` (writable, 1-D, C-contiguous, this
        queue's dtype) with up to ``len(out)`` records; returns n."""
        arr = array_arg(out, self.dtype, "out", writable=True)
        if arr.size == 0:
            return 0
        return int(lib.ll_spsc_pop_many(self._q, ffi.from_buffer(arr, require_writable=True), arr.size))

    def pop_array(self, max_records: int | None = None) -> np.ndarray:
        """Consumer: up to ``max_records`` (default: capacity) records in a new array."""
        n = self.capacity if max_records is None else int(max_records)
        if n < 0:
            raise ValueError(f"max_records must be >= 0, got {n}")
        out = np.empty(n, self.dtype)
        return out[: self.pop_many(out)]

    # -- state --------------------------------------------------------------------
    def __len__(self) -> int:
        """Records in the ring (a snapshot while the other side is active)."""
        return int(lib.ll_spsc_size(self._q))

    @property
    def cursor_distance(self) -> int:
        """Bytes between the two cursors: 128 padded (``LL_FALSE_SHARING_RANGE``:
        two lines, against the adjacent-line prefetcher), 8 unpadded."""
        return int(lib.ll_spsc_cursor_distance(self._q))

    def __repr__(self) -> str:
        layout = "padded" if self.padded else "unpadded"
        cache = "cached" if self.cached else "uncached"
        return f"<SpscQueue {len(self)}/{self.capacity} x {self.dtype} ({layout}, {cache})>"
