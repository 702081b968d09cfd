"""``Histogram``: the log-linear (HDR-style) histogram of ``csrc/hist.c``.

Values are integers, ns by convention, from 0 to :data:`MAX_HIGHEST`
(2**63 - 1).  Any recorded value from ``lowest`` up is known to within a
relative error of ``10**-sig_figs``; memory is fixed at creation.
An empty histogram has no percentiles: :meth:`Histogram.percentile` raises
``ValueError`` then (check ``count`` first); ``min``, ``max`` and ``mean``
are 0.

The contract, on every path:

- A percentile is always within [min, max] (the exact extremes): a value
  below ``lowest`` is recorded (it shares the first counter, 0 up to the
  largest power of two <= ``lowest``, minus 1) and a percentile that lands
  there is clamped into [min, max], never reported above the max.
- :meth:`Histogram.merge` is exact or refused: refused (``ValueError``,
  nothing added) when a counter of the other histogram spans several of
  this one's (this one is finer there), when it holds values above this
  one's range, or when the total would pass 2**64 - 1.
- Counts never wrap: every record that would take the total count past
  2**64 - 1 is refused (``ValueError``, nothing recorded).
- ``highest_trackable`` is at least the ``highest`` asked for; a ``highest``
  the C histogram cannot honour (above 2**63 - 1) is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.stop import Interrupted, requested, stoppable
from lowlat.core.validate import UINT64_MAX, int_arg

U64 = np.dtype(np.uint64)
HOUR_NS = 3_600_000_000_000
MAX_HIGHEST = 2**63 - 1  # LL_HIST_MAX_HIGHEST: the largest highest= (and value) the C histogram tracks
# The C array records poll the stop flag after every POLL values (csrc/hist.c):
# shorter arrays are always recorded whole.  Calls longer than LONG values are
# made under lowlat.core.stop.stoppable (Ctrl-C stops them at once).
_POLL, _POLL_CORRECTED = 4096, 64
_LONG, _LONG_CORRECTED = 1 << 20, 256


@dataclass(frozen=True)
class HistLayout:
    lowest: int
    highest: int
    highest_trackable: int
    sig_figs: int
    unit_magnitude: int
    sub_bucket_count: int
    bucket_count: int
    counts_len: int
    memory_bytes: int


class Histogram:
    """Counts of integer values from ``lowest`` to ``highest`` (ns) at
    ``sig_figs`` significant digits (1..5).  Defaults: 1 ns to 1 hour at 3
    digits (33,792 counters, 264 KiB).  Owns its C histogram.
    """

    def __init__(self, lowest: int = 1, highest: int = HOUR_NS, sig_figs: int = 3) -> None:
        lo = int_arg(lowest, "lowest", minimum=1)
        hi = int_arg(highest, "highest", maximum=UINT64_MAX)
        if hi > MAX_HIGHEST:
            raise ValueError(
                f"highest must be in [2 * lowest, {MAX_HIGHEST}] (2**63 - 1: the largest value the histogram "
                f"can track), got {hi}"
            )
        sf = int_arg(sig_figs, "sig_figs")
        if not 1 <= sf <= 5:
            raise ValueError(f"sig_figs must be 1..5, got {sf}")
        if hi < 2 * lo:
            raise ValueError(f"highest must be >= 2 * lowest = {2 * lo}, got {hi}")
        h = lib.ll_hist_create(lo, hi, sf)
        if h == ffi.NULL:
            raise ValueError(
                f"cannot make a histogram for lowest={lo}, highest={hi}, sig_figs={sf}: "
                "lowest is too large for that precision (or memory is short)"
            )
        self._h = ffi.gc(h, lib.ll_hist_destroy)
        self.layout = self._layout()
        if self.layout.highest_trackable < hi:  # the C refuses such a highest; kept as the contract's check
            raise ValueError(f"highest {hi} is beyond what this histogram can track ({self.layout.highest_trackable})")

    @property
    def c_handle(self) -> Any:
        """The C histogram (an ``ll_hist *`` cdata) for the C functions of
        this package that record into one (benchmarks, the pipeline).  Owned
        by this Histogram: valid while it is alive; never free it."""
        return self._h

    @classmethod
    def _wrap(cls, ptr: Any) -> Histogram:
        """Takes ownership of a C histogram created elsewhere."""
        self = cls.__new__(cls)
        self._h = ffi.gc(ptr, lib.ll_hist_destroy)
        self.layout = self._layout()
        return self

    def _layout(self) -> HistLayout:
        lay = ffi.new("ll_hist_layout *")
        lib.ll_hist_get_layout(self._h, lay)
        return HistLayout(*(int(getattr(lay, f)) for f in HistLayout.__dataclass_fields__))

    @property
    def lowest(self) -> int:
        return self.layout.lowest

    @property
    def highest_trackable(self) -> int:
        """Largest value that can be recorded (>= the requested highest)."""
        return self.layout.highest_trackable

    @property
    def sig_figs(self) -> int:
        return self.layout.sig_figs

    # -- recording ----------------------------------------------------------------
    def _value(self, value: Any, name: str = "value") -> int:
        v = int_arg(value, name, minimum=0)
        if v > self.layout.highest_trackable:
            raise ValueError(
                f"{name} {v} is above the histogram's range (highest trackable {self.layout.highest_trackable}); "
                "create it with a larger highest="
            )
        return v

    def record(self, value: int, count: int = 1) -> None:
        """Records ``value`` (ns) ``count`` times."""
        v = self._value(value)
        n = int_arg(count, "count", minimum=1, maximum=UINT64_MAX)
        self._room(n)
        lib.ll_hist_record_n(self._h, v, n)

    def _room(self, n: int) -> None:
        """Refuses adding ``n`` counts when the total would pass 2**64 - 1 (no wrap)."""
        if n > UINT64_MAX - self.count:
            raise ValueError(
                f"recording {n:,} more counts would take the total past 2**64 - 1 (it holds {self.count:,}): "
                "counts never wrap; nothing was recorded"
            )

    @staticmethod
    def _backfill_n(v: int, iv: int) -> int:
        """How many counts record_corrected(v, iv) adds (the value and its back-fill)."""
        m = v - iv
        return 1 + ((m - iv) // iv + 1 if iv and m >= iv else 0)

    def record_corrected(self, value: int, expected_interval: int) -> None:
        """Records ``value`` and back-fills the samples a fixed-rate load
        generator would have sent during it every ``expected_interval`` ns
        (coordinated-omission correction): value - interval, value - 2 *
        interval, ... while still >= interval.  The back-fill is recorded
        one counter at a time, so even ``record_corrected(10**12, 1)`` (10**12
        counts) takes microseconds; the counts are exactly those of recording
        each value by itself."""
        v = self._value(value)
        iv = int_arg(expected_interval, "expected_interval", minimum=0, maximum=UINT64_MAX)
        self._room(self._backfill_n(v, iv))
        lib.ll_hist_record_corrected(self._h, v, iv)

    def _values_array(self, values: Any) -> np.ndarray:
        if isinstance(values, np.ndarray):
            if values.dtype.kind not in "iu":
                raise TypeError(f"values must be an integer array (ns), got dtype {values.dtype}")
            arr = values.ravel()
        elif isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"values must be an integer array or an iterable of ints (ns), got {type(values).__name__}")
        else:
            arr = np.asarray(list(values) if not hasattr(values, "__len__") else values)
            if arr.size and arr.dtype.kind not in "iu":
                raise TypeError(f"values must be integers (ns), got {arr.dtype}")
        if arr.size and arr.dtype.kind == "i" and arr.min() < 0:
            raise ValueError(f"values must be >= 0, got a minimum of {arr.min()}")
        if arr.size and int(arr.max()) > self.layout.highest_trackable:
            raise ValueError(
                f"value {int(arr.max())} is above the histogram's range "
                f"(highest trackable {self.layout.highest_trackable}); create it with a larger highest="
            )
        return np.ascontiguousarray(arr, dtype=U64)

    def record_many(self, values: Iterable[int] | np.ndarray) -> None:
        """Records every value of an integer array (one C call).  Ctrl-C
        during a long one raises :class:`lowlat.core.stop.Interrupted`; the
        values before the stop stay recorded."""
        arr = self._values_array(values)
        if arr.size:
            self._room(int(arr.size))
            ptr = ffi.cast("uint64_t *", ffi.from_buffer(arr))
            self._long_call(lambda: lib.ll_hist_record_array(self._h, ptr, arr.size), arr.size, _POLL, _LONG)

    def record_many_corrected(self, values: Iterable[int] | np.ndarray, expected_interval: int) -> None:
        """``record_corrected`` for every value of an array (one C call).
        Ctrl-C during a long one raises :class:`lowlat.core.stop.Interrupted`;
        the values before the stop stay recorded, with their back-fill."""
        iv = int_arg(expected_interval, "expected_interval", minimum=0, maximum=UINT64_MAX)
        if isinstance(values, Sized) and len(values) <= _LONG_CORRECTED:  # an iterable without a length may be long
            self._record_corrected(values, iv)
            return
        # A long array's checks and back-fill count are long passes too: a Ctrl-C during them is held by the
        # same stoppable() as the record, which then stops at its first poll and says what it kept.
        try:
            with stoppable():
                self._record_corrected(values, iv)
        except Interrupted as exc:
            exc.partial = self
            raise

    def _record_corrected(self, values: Iterable[int] | np.ndarray, iv: int) -> None:
        arr = self._values_array(values)
        if arr.size:
            self._room(self._backfill_total(arr, iv))
            ptr = ffi.cast("uint64_t *", ffi.from_buffer(arr))
            self._long_call(
                lambda: lib.ll_hist_record_corrected_array(self._h, ptr, arr.size, iv),
                arr.size,
                _POLL_CORRECTED,
                _LONG_CORRECTED,
            )

    @staticmethod
    def _backfill_total(arr: np.ndarray, iv: int) -> int:
        """The counts record_many_corrected(arr, iv) adds, exactly, in a few
        vectorised passes (no Python loop over the values)."""
        if iv == 0 or 2 * iv > int(arr.max()):  # no value has a back-fill
            return int(arr.size)
        # Each value's back-fill fits in uint64; their sum may not, so it is
        # summed exactly in two 32-bit halves (each half's sum fits for any
        # array below 2**32 values) and joined in Python ints.
        iv64 = np.uint64(iv)
        n = np.where(arr >= 2 * iv64, (arr - 2 * iv64) // iv64 + np.uint64(1), np.uint64(0)).astype(np.uint64)
        hi = int(np.sum(n >> np.uint64(32), dtype=np.uint64))
        lo = int(np.sum(n & np.uint64(0xFFFFFFFF), dtype=np.uint64))
        return int(arr.size) + (hi << 32) + lo

    def _long_call(self, call: Any, n: int, poll: int, long_n: int) -> None:
        """Runs an array record of ``n`` values; under stoppable() when it
        may be long, and says so when a stop cut it short."""
        if n > long_n:
            try:
                with stoppable():
                    call()
                    self._check_stopped(n, poll)
            except Interrupted as exc:
                exc.partial = self
                raise
        else:
            call()
            self._check_stopped(n, poll)

    def _check_stopped(self, n: int, poll: int) -> None:
        if n > poll and requested():
            raise Interrupted(
                f"recorded only the values before the stop, of {n:,} (the histogram now holds {self.count:,} counts)",
                self,
            )

    def merge(self, other: Histogram) -> None:
        """Adds every count of ``other`` into this histogram, exactly: each
        of ``other``'s counters lands whole in one of this one's (the same
        layout, or this one coarser), min, max and mean stay exact.  Refused
        with ValueError, nothing added, when ``other`` holds values above
        this histogram's range, when a counter of ``other`` spans several of
        this one's (this one is finer: where its values lie is unknown), or
        when the total count would pass 2**64 - 1."""
        if not isinstance(other, Histogram):
            raise TypeError(f"merge() takes a Histogram, got {type(other).__name__}")
        rc = lib.ll_hist_merge_check(self._h, other._h)
        if rc == lib.LL_ERANGE and self.count + other.count > UINT64_MAX:
            raise ValueError(
                f"merging {other.count:,} counts into {self.count:,} would take the total past 2**64 - 1: "
                "counts never wrap; nothing was merged"
            )
        if rc == lib.LL_ERANGE:
            raise ValueError(
                f"other holds values up to {other.max}, above this histogram's range "
                f"(highest trackable {self.layout.highest_trackable}); nothing was merged"
            )
        if rc != lib.LL_OK:
            raise ValueError(
                f"cannot merge exactly: other (lowest={other.lowest}, sig_figs={other.sig_figs}) has counters that "
                f"span several of this histogram's (lowest={self.lowest}, sig_figs={self.sig_figs}); merge into "
                "one with the same or a coarser layout; nothing was merged"
            )
        lib.ll_hist_merge(self._h, other._h)

    def reset(self) -> None:
        """Forgets every recorded value (memory is kept)."""
        lib.ll_hist_reset(self._h)

    # -- queries -----------------------------------------------------------------
    def percentile(self, p: float) -> int:
        """The value (ns) at percentile ``p`` in [0, 100], HdrHistogram's rule:
        the highest value equivalent to the bucket of the ceil-rounded sample,
        clamped into [min, max] (see the module's docstring).  Raises ValueError when the histogram is empty (no value, no percentile)."""
        if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
            raise TypeError(f"percentile must be a number in [0, 100], got {type(p).__name__}")
        pf = float(p)
        if not 0.0 <= pf <= 100.0:
            raise ValueError(f"percentile must be in [0, 100], got {pf}")
        if not lib.ll_hist_count(self._h):
            raise ValueError(
                f"P{pf:g} of an empty histogram: no value has been recorded, so there is no percentile "
                "(check .count first)"
            )
        return int(lib.ll_hist_value_at_percentile(self._h, pf))

    def percentiles(self, ps: Iterable[float] = (50, 90, 99, 99.9, 99.99)) -> dict[float, int]:
        """{p: percentile(p)} for each p of ``ps`` (an iterable of numbers in [0, 100])."""
        if isinstance(ps, (str, bytes)) or not hasattr(ps, "__iter__"):
            raise TypeError(f"percentiles() takes an iterable of numbers in [0, 100], got {type(ps).__name__} {ps!r}")
        return {p: self.percentile(p) for p in ps}

    @property
    def count(self) -> int:
        return int(lib.ll_hist_count(self._h))

    @property
    def min(self) -> int:
        return int(lib.ll_hist_min(self._h))

    @property
    def max(self) -> int:
        return int(lib.ll_hist_max(self._h))

    @property
    def mean(self) -> float:
        return float(lib.ll_hist_mean(self._h))

    @property
    def stddev(self) -> float:
        return float(lib.ll_hist_stddev(self._h))

    @property
    def out_of_range(self) -> int:
        """Values refused because they were above the range (C callers)."""
        return int(lib.ll_hist_out_of_range(self._h))

    def __len__(self) -> int:
        return self.count

    # -- buckets -------------------------------------------------------------------
    def counts(self) -> np.ndarray:
        """A copy of all ``counts_len`` counters (uint64)."""
        out = np.zeros(self.layout.counts_len, U64)
        lib.ll_hist_copy_counts(self._h, ffi.cast("uint64_t *", ffi.from_buffer(out, require_writable=True)))
        return out

    def bucket_values(self) -> np.ndarray:
        """The lowest value of each counter (same length as ``counts()``)."""
        n = self.layout.counts_len
        return np.array([lib.ll_hist_value_at_index(self._h, i) for i in range(n)], dtype=U64)

    def to_numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, counts) of the non-empty buckets, values ascending: each
        value is its bucket's lowest equivalent value."""
        c = self.counts()
        idx = np.nonzero(c)[0]
        values = np.array([lib.ll_hist_value_at_index(self._h, int(i)) for i in idx], dtype=U64)
        return values, c[idx]

    def index_of(self, value: int) -> int:
        return int(lib.ll_hist_index_of(self._h, self._value(value)))

    def lowest_equivalent(self, value: int) -> int:
        return int(lib.ll_hist_lowest_equivalent(self._h, self._value(value)))

    def highest_equivalent(self, value: int) -> int:
        return int(lib.ll_hist_highest_equivalent(self._h, self._value(value)))

    def equivalent(self, a: int, b: int) -> bool:
        """True when ``a`` and ``b`` fall in the same counter."""
        return self.lowest_equivalent(a) == self.lowest_equivalent(b)

    def summary(self) -> dict[str, float]:
        """count, min, mean, p50, p90, p99, p99.9, max: one dict (ns).
        Raises ValueError when the histogram is empty."""
        return {
            "count": self.count,
            "min": self.min,
            "mean": self.mean,
            "p50": self.percentile(50),
            "p90": self.percentile(90),
            "p99": self.percentile(99),
            "p99.9": self.percentile(99.9),
            "max": self.max,
        }

    def __repr__(self) -> str:
        if not self.count:
            return f"<Histogram empty, {self.layout.counts_len} counters>"
        return f"<Histogram n={self.count} p50={self.percentile(50)} p99={self.percentile(99)} max={self.max} ns>"
