"""The kernels the roofline (:mod:`lowlat.train.roofline`) places under its
roofs, and how each is timed: a matmul (compute-bound at large sizes), a
vector add and a sum (bandwidth-bound), the streams that measure the
bandwidth roof, and the last-level cache size they must exceed.  Each figure
is the best of several repeats after a warm-up, with their spread; FLOPs and
bytes are counted as the program does and moves them (float64)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lowlat.core.validate import int_arg

F8 = 8  # bytes per float64
PEAK_N = 1024  # the compute roof's matmul: larger than the kernels' default sizes
LLC_FALLBACK = 32 << 20  # bytes, when the last-level cache cannot be read
MAX_REPEATS = 100  # timed runs of one kernel: the best of more says nothing new, and each may take seconds
MAX_CALLS = 1000  # calls of a small matmul within one timing: enough that the timer does not dominate


def _times(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(best, median) seconds of ``repeats`` runs after one warm-up run."""
    int_arg(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)  # before the warm-up: nothing runs on a bad count
    fn()  # warm-up: page faults, BLAS thread start
    ts = []
    for _ in range(int_arg(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), statistics.median(ts)


def _best_s(fn: Callable[[], object], repeats: int) -> float:
    return _times(fn, repeats)[0]


def llc_bytes() -> int:
    """The largest CPU cache of this machine in bytes (sysfs on Linux,
    ``sysctl`` on macOS); 32 MiB when neither says."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = f.read_text().strip().upper()
        except OSError:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * mult)
    if not sizes and sys.platform == "darwin":
        for key in ("hw.l3cachesize", "hw.l2cachesize"):
            try:
                out = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=5).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                continue
            if out.isdigit() and int(out) > 0:
                sizes.append(int(out))
    return max(sizes) if sizes else LLC_FALLBACK


@dataclass(frozen=True)
class Kernel:
    """One measured kernel: FLOPs done, bytes that must move at least once
    (compulsory traffic), the best time and the spread of its timings
    (median time / best time - 1; for a roof measured twice, also the gap
    between the two).  ``pattern`` names its memory access pattern when it
    is one of the bandwidth roof's streams ("copy", "add", "sum"), so a
    kernel can be compared with its own stream as well as with the best."""

    name: str
    flops: float
    bytes: float
    seconds: float
    spread: float = 0.0
    pattern: str = ""

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds


def matmul_kernel(n: int, repeats: int = 5) -> Kernel:
    """``n x n`` float64 matmul into a preallocated output: 2 n^3 FLOP,
    3 n^2 x 8 bytes."""
    n = int_arg(n, "n", minimum=1, maximum=8192)  # three n x n float64 matrices: 1.5 GiB at the top
    rng = np.random.default_rng(0)
    a, b, out = rng.random((n, n)), rng.random((n, n)), np.empty((n, n))
    int_arg(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)
    # small sizes: several per timing, so the timer does not dominate (at most MAX_CALLS: each call costs ~1 us)
    reps = max(1, min(MAX_CALLS, int(2e7 // (2 * n**3))))
    best, med = _times(lambda: [np.matmul(a, b, out=out) for _ in range(reps)], repeats)
    return Kernel(f"matmul {n}", 2.0 * n**3, 3.0 * n * n * F8, best / reps, med / best - 1)


def add_kernel(n: int = 4_000_000, repeats: int = 5) -> Kernel:
    """``c = a + b`` over ``n`` float64 (out=): n FLOP, 3 n x 8 bytes."""
    n = int_arg(n, "n", minimum=1, maximum=10**8)
    a, b, c = np.ones(n), np.ones(n), np.empty(n)
    best, med = _times(lambda: np.add(a, b, out=c), repeats)
    return Kernel("vector add", float(n), 3.0 * n * F8, best, med / best - 1, "add")


def sum_kernel(n: int = 4_000_000, repeats: int = 5) -> Kernel:
    """``a.sum()`` over ``n`` float64: n FLOP, n x 8 bytes."""
    n = int_arg(n, "n", minimum=1, maximum=10**8)
    a = np.ones(n)
    best, med = _times(a.sum, repeats)
    return Kernel("reduction (sum)", float(n), float(n) * F8, best, med / best - 1, "sum")


def copy_bandwidth(nbytes: int = 64 << 20, repeats: int = 5) -> float:
    """Streaming bandwidth (bytes/s): ``np.copyto`` of ``nbytes``, counted
    as read + write."""
    n = int_arg(nbytes, "nbytes", minimum=F8, maximum=2**32) // F8
    src, dst = np.ones(n), np.empty(n)
    return 2.0 * n * F8 / _best_s(lambda: np.copyto(dst, src), repeats)


def stream_kernels(nbytes: int | None = None, repeats: int = 5) -> list[Kernel]:
    """The bandwidth roof's candidates on arrays of ``nbytes`` each (default:
    4x the last-level cache, at least 64 MiB, at most 256 MiB): copy (read +
    write), add (two reads + one write) and sum (one read), bytes counted as
    the program reads and writes them."""
    if nbytes is None:
        nbytes = min(max(4 * llc_bytes(), 64 << 20), 256 << 20)
    n = int_arg(nbytes, "nbytes", minimum=F8, maximum=2**32) // F8
    mib = n * F8 >> 20
    a, b, c = np.ones(n), np.ones(n), np.empty(n)
    out = []
    for pattern, flops, streams, fn in (
        ("copy", 0.0, 2, lambda: np.copyto(c, a)),
        ("add", float(n), 3, lambda: np.add(a, b, out=c)),
        ("sum", float(n), 1, a.sum),
    ):
        best, med = _times(fn, repeats)
        out.append(Kernel(f"{pattern} {mib} MiB", flops, float(streams * n * F8), best, med / best - 1, pattern))
    return out


__all__ = [
    "F8",
    "LLC_FALLBACK",
    "MAX_CALLS",
    "MAX_REPEATS",
    "PEAK_N",
    "Kernel",
    "add_kernel",
    "copy_bandwidth",
    "llc_bytes",
    "matmul_kernel",
    "stream_kernels",
    "sum_kernel",
]
