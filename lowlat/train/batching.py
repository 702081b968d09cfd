"""Batching: the fixed cost of a call (an interpreter round, a Python -> C
crossing, a kernel launch) is paid once per call, so fewer, larger calls
amortise it.  Two levels, measured: numpy row norms one row at a time vs
one call over the matrix, and single-item calls into the C core vs one
batched call.  Times in ns; every comparison runs interleaved (A B A B ...)
and reports medians."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from lowlat.core._lib import lib
from lowlat.core.hist import Histogram
from lowlat.core.stop import check
from lowlat.core.validate import int_arg
from lowlat.method.interleave import interleave, medians, timed

MAX_REPEATS = 100  # interleaved rounds of one comparison
MAX_CALLS = 10**6  # calls into the core in one round of a batch sweep (total / smallest batch): about a second


def _stoppable(variants: dict[str, Callable[[], float]]) -> dict[str, Callable[[], float]]:
    """Each timed variant preceded by a stop check (outside its timing), so
    Ctrl-C inside lowlat.core.stop.stoppable ends a comparison between runs."""

    def checked(fn: Callable[[], float]) -> Callable[[], float]:
        def run() -> float:
            check("stopped between two timed runs")
            return fn()

        return run

    return {k: checked(v) for k, v in variants.items()}


def _matrix(x: object) -> np.ndarray:
    """``x`` as a 2-D array of real numbers (rows x columns)."""
    if not isinstance(x, np.ndarray) or x.ndim != 2 or x.dtype.kind not in "iuf":
        what = f"{x.ndim}-D {x.dtype} array" if isinstance(x, np.ndarray) else type(x).__name__
        raise TypeError(f"x must be a 2-D numpy array of numbers (rows x columns), got a {what}")
    return x


def row_norms_per_row(x: np.ndarray) -> np.ndarray:
    """Euclidean norm of every row, one numpy call per row (the slow way)."""
    return np.array([np.linalg.norm(row) for row in _matrix(x)])


def row_norms_batched(x: np.ndarray) -> np.ndarray:
    """The same norms in one call over the whole matrix."""
    return np.linalg.norm(_matrix(x), axis=1)


@dataclass
class BatchingResult:
    """Per-row vs batched row norms of a ``rows`` x ``cols`` float64 matrix.
    ``max_rel_diff``: the largest relative difference between the two answers
    (they sum in different orders, so equal means within rounding, not
    bit-identical); ``equal``: ``np.allclose`` at rtol 1e-12."""

    rows: int
    cols: int
    per_row_ns: float  # per row, one call per row
    batched_ns: float  # per row, one call for all
    max_rel_diff: float
    equal: bool

    @property
    def speedup(self) -> float:
        return self.per_row_ns / self.batched_ns


def compare_row_norms(rows: int = 2000, cols: int = 256, repeats: int = 5, seed: int = 0) -> BatchingResult:
    """Checks the two versions agree, then times them interleaved."""
    rows = int_arg(rows, "rows", minimum=1, maximum=10**6)
    cols = int_arg(cols, "cols", minimum=1, maximum=10**6)
    repeats = int_arg(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)
    seed = int_arg(seed, "seed", minimum=0)
    if rows * cols > 10**8:
        raise ValueError(f"rows x cols = {rows * cols:,} float64s; at most 10**8 (800 MB) are allowed")
    x = np.random.default_rng(seed).standard_normal((rows, cols))
    a, b = row_norms_per_row(x), row_norms_batched(x)
    rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), np.finfo(float).tiny)))
    t = medians(
        interleave(
            _stoppable({"row": timed(lambda: row_norms_per_row(x)), "batch": timed(lambda: row_norms_batched(x))}),
            repeats,
        )
    )
    return BatchingResult(
        rows, cols, t["row"] / rows * 1e9, t["batch"] / rows * 1e9, rel, bool(np.allclose(a, b, rtol=1e-12))
    )


@dataclass
class FfiCosts:
    """What a call into the C core costs from Python (ns): ``call_ns`` one
    bare cffi call (``lib.ll_hist_record``), ``wrapper_call_ns`` the same
    through :meth:`Histogram.record` (argument checks included),
    ``batched_item_ns`` per item of one :meth:`Histogram.record_many` call
    over ``n`` items, ``c_item_ns`` per item inside C (no crossing)."""

    n: int
    call_ns: float
    wrapper_call_ns: float
    batched_item_ns: float
    c_item_ns: float


def ffi_costs(n: int = 100_000, repeats: int = 5) -> FfiCosts:
    """Records the same ``n`` values three ways, interleaved, and checks that
    every way counted all of them."""
    n = int_arg(n, "n", minimum=1, maximum=MAX_CALLS)  # n Python-level calls per way and round
    repeats = int_arg(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)
    values = np.random.default_rng(1).integers(100, 100_000, n).astype(np.uint64)
    as_list = values.tolist()
    h = Histogram()
    raw, rec = lib.ll_hist_record, h.record

    def bare() -> None:
        p = h.c_handle
        for v in as_list:
            raw(p, v)

    def wrapped() -> None:
        for v in as_list:
            rec(v)

    t = medians(
        interleave(
            _stoppable(
                {"bare": timed(bare), "wrapped": timed(wrapped), "batched": timed(lambda: h.record_many(values))}
            ),
            repeats,
        )
    )
    check("stopped during the last timed run")
    if h.count != 3 * n * repeats:
        raise AssertionError(f"histogram holds {h.count} records, expected {3 * n * repeats}")
    c_item = lib.ll_bench_hist_record(h.c_handle, max(n, 1_000_000), 5, 1)
    check("stopped during the C loop")
    return FfiCosts(n, t["bare"] / n * 1e9, t["wrapped"] / n * 1e9, t["batched"] / n * 1e9, float(c_item))


@dataclass
class BatchSweep:
    """ns per item when ``total`` items are recorded in calls of each batch
    size.  ``knee``: the smallest batch within 25% of the best per-item
    cost, i.e. where batching stops paying."""

    sizes: np.ndarray
    item_ns: np.ndarray
    total: int

    @property
    def knee(self) -> int:
        best = float(self.item_ns.min())
        return int(self.sizes[np.argmax(self.item_ns <= 1.25 * best)])


def batch_sweep(
    sizes: Iterable[int] = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536), total: int = 1 << 16, repeats: int = 3
) -> BatchSweep:
    """Records ``total`` values through :meth:`Histogram.record_many` in
    calls of each batch size (sizes interleaved, ``repeats`` rounds,
    median per size)."""
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes must be a sequence of batch sizes, got {type(sizes).__name__} {sizes!r}")
    sizes_arr = np.array(sorted({int_arg(s, "batch size", minimum=1, maximum=10**8) for s in sizes}))
    if sizes_arr.size == 0:
        raise ValueError("sizes must hold at least one batch size")
    total = int_arg(total, "total", minimum=int(sizes_arr.max()), maximum=10**8)
    repeats = int_arg(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)
    calls = -(-total // int(sizes_arr.min()))
    if calls > MAX_CALLS:
        raise ValueError(
            f"total / the smallest batch size = {calls:,} calls per round; at most {MAX_CALLS:,} "
            f"(a smaller total, or batch sizes of at least {-(-total // MAX_CALLS):,})"
        )
    values = np.random.default_rng(2).integers(100, 100_000, total).astype(np.uint64)
    h = Histogram()

    def run(b: int) -> Callable[[], None]:
        chunks = [values[i : i + b] for i in range(0, total, b)]

        def go() -> None:
            for c in chunks:
                h.record_many(c)

        return go

    t = medians(interleave(_stoppable({str(b): timed(run(int(b))) for b in sizes_arr}), repeats))
    item_ns = np.array([t[str(b)] / total * 1e9 for b in sizes_arr])
    return BatchSweep(sizes_arr, item_ns, total)


__all__ = [
    "BatchSweep",
    "BatchingResult",
    "FfiCosts",
    "batch_sweep",
    "compare_row_norms",
    "ffi_costs",
    "row_norms_batched",
    "row_norms_per_row",
]
