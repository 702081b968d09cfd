"""Compute-bound or bandwidth-bound: this machine's roofline, measured with
numpy.  A kernel doing F floating-point operations while moving B bytes has
an arithmetic intensity I = F / B (FLOP/byte); it cannot run faster than
``min(peak FLOP/s, I x bandwidth)``.  Peak is taken from a large matmul,
bandwidth from a large copy (read + write counted).  Rates are per second;
the best of several repeats is kept (the least disturbed run)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowlat._check import int_arg
from lowlat.interleave import interleave, medians, timed

F8 = 8  # bytes per float64


def _best_s(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: page faults, BLAS thread start
    best = float("inf")
    for _ in range(int_arg(repeats, "repeats", minimum=1)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@dataclass(frozen=True)
class Kernel:
    """One measured kernel: FLOPs done, bytes that must move at least once
    (compulsory traffic), and the best time."""

    name: str
    flops: float
    bytes: float
    seconds: float

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds


def matmul_kernel(n: int, repeats: int = 5) -> Kernel:
    """``n x n`` float64 matmul into a preallocated output: 2 n^3 FLOP,
    3 n^2 x 8 bytes."""
    n = int_arg(n, "n", minimum=1, maximum=8192)  # three n x n float64 matrices: 1.5 GiB at the top
    rng = np.random.default_rng(0)
    a, b, out = rng.random((n, n)), rng.random((n, n)), np.empty((n, n))
    reps = max(1, int(2e7 // (2 * n**3)))  # small sizes: several per timing, so the timer does not dominate
    s = _best_s(lambda: [np.matmul(a, b, out=out) for _ in range(reps)], repeats) / reps
    return Kernel(f"matmul {n}", 2.0 * n**3, 3.0 * n * n * F8, s)


def add_kernel(n: int = 4_000_000, repeats: int = 5) -> Kernel:
    """``c = a + b`` over ``n`` float64 (out=): n FLOP, 3 n x 8 bytes."""
    n = int_arg(n, "n", minimum=1, maximum=10**8)
    a, b, c = np.ones(n), np.ones(n), np.empty(n)
    return Kernel("vector add", float(n), 3.0 * n * F8, _best_s(lambda: np.add(a, b, out=c), repeats))


def sum_kernel(n: int = 4_000_000, repeats: int = 5) -> Kernel:
    """``a.sum()`` over ``n`` float64: n FLOP, n x 8 bytes."""
    n = int_arg(n, "n", minimum=1, maximum=10**8)
    a = np.ones(n)
    return Kernel("reduction (sum)", float(n), float(n) * F8, _best_s(a.sum, repeats))


def copy_bandwidth(nbytes: int = 64 << 20, repeats: int = 5) -> float:
    """Streaming bandwidth (bytes/s): ``np.copyto`` of ``nbytes``, counted
    as read + write."""
    n = int_arg(nbytes, "nbytes", minimum=F8, maximum=2**32) // F8
    src, dst = np.ones(n), np.empty(n)
    return 2.0 * n * F8 / _best_s(lambda: np.copyto(dst, src), repeats)


@dataclass
class Roofline:
    """This machine's two ceilings and the kernels placed under them."""

    peak_flops: float  # FLOP/s, from the largest matmul
    bandwidth: float  # bytes/s, from a large copy
    kernels: list[Kernel]

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the two roofs meet: below it a
        kernel is bandwidth-bound, above it compute-bound."""
        return self.peak_flops / self.bandwidth

    def bound(self, k: Kernel) -> str:
        return "compute-bound" if k.intensity >= self.ridge else "bandwidth-bound"

    def attainable(self, intensity: float) -> float:
        return min(self.peak_flops, intensity * self.bandwidth)

    def table(self) -> str:
        lines = [f"{'kernel':<18} {'FLOP/byte':>10} {'GFLOP/s':>9} {'% of roof':>10}  bound by"]
        for k in self.kernels:
            share = k.flops_per_s / self.attainable(k.intensity) * 100
            lines.append(
                f"{k.name:<18} {k.intensity:>10.3f} {k.flops_per_s / 1e9:>9.2f} {share:>9.0f}%  {self.bound(k)}"
            )
        return "\n".join(lines)


def measure(matmul_sizes: tuple[int, ...] = (32, 128, 512), vector_n: int = 4_000_000, repeats: int = 5) -> Roofline:
    """Measures the roofs and the kernels (a few seconds)."""
    if isinstance(matmul_sizes, (str, bytes)) or not hasattr(matmul_sizes, "__iter__") or not len(matmul_sizes):
        raise TypeError(f"matmul_sizes must be a non-empty tuple of matrix sizes, got {matmul_sizes!r}")
    kernels = [add_kernel(vector_n, repeats), sum_kernel(vector_n, repeats)]
    kernels += [matmul_kernel(n, repeats) for n in matmul_sizes]
    big = max(matmul_sizes)
    peak = max(k.flops_per_s for k in kernels if k.name == f"matmul {big}")
    return Roofline(peak, copy_bandwidth(repeats=repeats), kernels)


def plot(ax: Any, roof: Roofline) -> Any:
    """The roofline on log-log axes, each kernel a labelled point."""
    xs = np.logspace(-2.5, 3, 200)
    ax.loglog(xs, [roof.attainable(x) / 1e9 for x in xs], color="k", linewidth=1.5, label="roofline (attainable)")
    ax.axvline(roof.ridge, color="gray", linestyle=":", linewidth=1)
    ax.text(roof.ridge, roof.peak_flops / 1e9 * 1.15, f" ridge {roof.ridge:.1f} FLOP/B", fontsize=8, color="gray")
    for k in roof.kernels:
        ax.plot(k.intensity, k.flops_per_s / 1e9, "o")
        ax.annotate(k.name, (k.intensity, k.flops_per_s / 1e9), textcoords="offset points", xytext=(5, -10), fontsize=8)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved, log)")
    ax.set_ylabel("GFLOP/s (log)")
    return ax


@dataclass
class OutResult:
    """``y = a * b + c`` on ``n`` float64, with numpy allocating the result
    (``temp_ms``) vs writing into a preallocated array (``out_ms``);
    medians of interleaved repeats.  ``equal`` checks the answers match."""

    n: int
    temp_ms: float
    out_ms: float
    equal: bool

    @property
    def ratio(self) -> float:
        return self.temp_ms / self.out_ms


def out_vs_temporaries(n: int = 4_000_000, repeats: int = 9) -> OutResult:
    n = int_arg(n, "n", minimum=1, maximum=10**8)
    rng = np.random.default_rng(3)
    a, b, c = rng.random(n), rng.random(n), rng.random(n)
    y = np.empty(n)

    def temp() -> np.ndarray:
        return a * b + c

    def out() -> np.ndarray:
        np.multiply(a, b, out=y)
        return np.add(y, c, out=y)

    equal = bool(np.array_equal(temp(), out()))
    ts = medians(interleave({"temp": timed(temp), "out": timed(out)}, int_arg(repeats, "repeats", minimum=1)))
    return OutResult(n, ts["temp"] * 1e3, ts["out"] * 1e3, equal)


__all__ = [
    "Kernel",
    "OutResult",
    "Roofline",
    "add_kernel",
    "copy_bandwidth",
    "matmul_kernel",
    "measure",
    "out_vs_temporaries",
    "plot",
    "sum_kernel",
]
