"""Compute-bound or bandwidth-bound: this machine's roofline, measured with
numpy.  A kernel doing F floating-point operations while moving B bytes has
an arithmetic intensity I = F / B (FLOP/byte); it cannot run faster than
``min(peak FLOP/s, I x bandwidth)``.

Both roofs are measured apart from the kernels placed under them, on one
core (BLAS capped to one thread while measuring, by
:func:`lowlat.core.blas.quiet_blas`, as in the rest of the course): the compute roof by a large matmul (1,024 by
default), the bandwidth roof by the best of three streaming kernels (copy,
add, sum) on arrays several times the last-level cache, bytes counted as the
program reads and writes them.  A kernel is bandwidth- or compute-bound by its
intensity alone (left or right of the ridge); how close it runs to its roof
is a separate figure.  Rates are per second; each figure is the best of
several repeats (the least disturbed run) and carries their spread."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lowlat.core.blas import quiet_blas
from lowlat.core.validate import int_arg
from lowlat.method.interleave import interleave, medians, timed
from lowlat.train.kernels import (  # the kernels and their timing: their own module, importable from here too
    F8,
    LLC_FALLBACK,
    MAX_CALLS,
    MAX_REPEATS,
    PEAK_N,
    Kernel,
    add_kernel,
    copy_bandwidth,
    llc_bytes,
    matmul_kernel,
    stream_kernels,
    sum_kernel,
)

NOISY = 0.25  # a spread above this says nothing about a kernel's distance to its roof
CALL_FIXED_S = 20e-6  # generous upper bound on one numpy/BLAS call's fixed cost (dispatch, checks): microseconds


@dataclass
class Roofline:
    """This machine's two ceilings and the kernels placed under them."""

    peak_flops: float  # FLOP/s, from ``peak_kernel`` (a matmul measured apart from ``kernels``)
    bandwidth: float  # bytes/s, the best of ``stream_kernels``
    kernels: list[Kernel]
    peak_kernel: Kernel | None = None  # what defined the compute roof
    stream: list[Kernel] = field(default_factory=list)  # the bandwidth roof's candidates
    blas_one_thread: bool = False  # BLAS capped to one thread while measuring

    @property
    def ridge_text(self) -> str:
        """The ridge as every printed line writes it (one rounding)."""
        return f"{self.ridge:.3g}"

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the two roofs meet: below it a
        kernel is bandwidth-bound, above it compute-bound."""
        return self.peak_flops / self.bandwidth

    def bound(self, k: Kernel) -> str:
        """Which roof is over the kernel, from its intensity alone."""
        return "compute-bound" if k.intensity >= self.ridge else "bandwidth-bound"

    def attainable(self, intensity: float) -> float:
        return min(self.peak_flops, intensity * self.bandwidth)

    def share(self, k: Kernel) -> float:
        """The kernel's FLOP/s as a fraction of its roof."""
        return k.flops_per_s / self.attainable(k.intensity)

    def _roof_spread(self, k: Kernel) -> float:
        """The spread of the measurement behind the kernel's roof."""
        if self.bound(k) == "compute-bound":
            return self.peak_kernel.spread if self.peak_kernel else 0.0
        best = max(self.stream, key=lambda s: s.bytes_per_s, default=None)
        return best.spread if best else 0.0

    def tolerance(self, k: Kernel) -> float:
        """How far above its roof a kernel may run before it says more than
        noise: its timings' spread plus its roof's, at least 5%."""
        return max(0.05, k.spread + self._roof_spread(k))

    def reading(self, k: Kernel) -> str:
        """One sentence on a kernel: its side of the ridge, then how close to
        its roof it ran, said plainly when above it or far below it."""
        share, tol = self.share(k), self.tolerance(k)
        side = "left of" if k.intensity < self.ridge else "right of"
        roof = "bandwidth" if side == "left of" else "compute"
        head = f"{k.name} (intensity {k.intensity:.3g}, {side} the ridge at {self.ridge_text}): {self.bound(k)} by intensity; "
        if tol > NOISY:
            return head + (
                f"it ran at {share:.0%} of its {roof} roof, but its timings and its roof's spread by {tol:.0%} in this "
                "run (the machine was busy): too noisy to say how close to its roof it ran; run the cell again"
            )
        if share > 1 + tol:
            return head + (
                f"it ran at {share:.0%} of its {roof} roof, more than the measurements' spread ({tol:.0%}) allows: the roof "
                "is mis-measured for this kernel"
                + (
                    " (its data fit a cache the roof's larger arrays did not, or it reached a higher rate than the "
                    "roof's streams)"
                    if roof == "bandwidth"
                    else " (the machine was quieter while it ran than while the roof was measured, or this size "
                    "suits the BLAS better than the peak's size)"
                )
            )
        if share >= 1 - tol:
            return head + f"on its {roof} roof ({share:.0%}, within the measurements' spread of {tol:.0%})"
        own = self.own_stream(k) if roof == "bandwidth" else None
        if own is not None:
            return head + self._against_own_stream(k, share, own)
        if share < 0.5:
            return head + f"at {share:.0%} of its {roof} roof, far below it: " + self._shortfall(k, share)
        return head + f"at {share:.0%} of its {roof} roof"

    def own_stream(self, k: Kernel) -> Kernel | None:
        """The roof's stream with the kernel's access pattern, when it is
        not the best stream (the roof itself): None otherwise."""
        best = max(self.stream, key=lambda s: s.bytes_per_s, default=None)
        own = next((s for s in self.stream if k.pattern and s.pattern == k.pattern), None)
        return None if own is None or own is best else own

    def _against_own_stream(self, k: Kernel, share: float, own: Kernel) -> str:
        """Below the bandwidth roof (the best stream): how the kernel ran
        against its own stream pattern's rate, measured with the roof."""
        best = max(self.stream, key=lambda s: s.bytes_per_s)
        mine, tol = k.bytes_per_s / own.bytes_per_s, max(0.05, k.spread + own.spread)
        head = (
            f"at {share:.0%} of its bandwidth roof (the best stream, {best.name}, {best.bytes_per_s / 1e9:.1f} GB/s) "
            f"and at {mine:.0%} of its own stream's rate ({own.name}, {own.bytes_per_s / 1e9:.1f} GB/s)"
        )
        if tol > NOISY:
            return head + f", but their timings spread by {tol:.0%}: too noisy to say more; run the cell again"
        if mine > 1 + tol:
            return head + (
                f", above it by more than the spread ({tol:.0%}): its smaller arrays partly stayed in a cache the "
                "stream's larger ones did not"
            )
        if mine >= 1 - tol:
            return head + (
                f", within the spread of {tol:.0%}: bandwidth-bound at its own access pattern; its distance below "
                f"the roof is the gap between the two streams ({own.pattern} streams slower than {best.pattern} on "
                "this machine), not per-call overhead"
            )
        if mine >= 0.5:
            return head + (
                f": most of its distance below the roof is the gap between the streams; the rest, {1 - mine:.0%} "
                f"below its own stream, is more than the spread ({tol:.0%}): the machine's load while it ran, or its "
                "smaller arrays streaming less well than the stream's; this run does not say which"
            )
        return head + ", far below even its own stream: " + self._shortfall(k, mine)

    def _shortfall(self, k: Kernel, share: float) -> str:
        """Why a kernel ran far below what limits it: per-call overhead only
        when the time it lost fits a call's fixed cost (microseconds)."""
        lost = k.seconds * (1 - share)
        if lost <= CALL_FIXED_S:
            return (
                f"the roof is not what limits it here; it lost {lost * 1e6:.1f} us of a {k.seconds * 1e6:.1f} us call, "
                "the size of a call's fixed cost: likely per-call overhead and small-size inefficiency (the case "
                "for batching)"
            )
        return (
            f"it lost {lost * 1e3:,.2f} ms of a {k.seconds * 1e3:,.2f} ms call, far more than a call's fixed cost "
            "(microseconds), so per-call overhead does not explain it: "
            + (
                "its size suits the BLAS worse than the roof's larger matmul, or the machine was busy while it ran"
                if self.bound(k) == "compute-bound"
                else "its access pattern streams slower than the roof's streams, or the machine was busy while it ran"
            )
        )

    def table(self) -> str:
        lines = [
            f"{'kernel':<18} {'FLOP/byte':>10} {'GFLOP/s':>9} {'roof':>9} {'% of roof':>10}  bound by (intensity vs ridge)"
        ]
        for k in self.kernels:
            lines.append(
                f"{k.name:<18} {k.intensity:>10.3f} {k.flops_per_s / 1e9:>9.2f} "
                f"{self.attainable(k.intensity) / 1e9:>9.2f} {self.share(k) * 100:>9.0f}%  {self.bound(k)}"
            )
        return "\n".join(lines)

    def roofs(self) -> str:
        """Where the two roofs come from, with their spread."""
        threads = "BLAS on one thread" if self.blas_one_thread else "BLAS threads as configured"
        out = []
        if self.peak_kernel is not None:
            k = self.peak_kernel
            out.append(
                f"compute roof: {self.peak_flops / 1e9:,.1f} GFLOP/s, the best of {k.name} measured before and "
                f"after the kernels ({threads}; spread {k.spread:.0%})"
            )
        else:
            out.append(f"compute roof: {self.peak_flops / 1e9:,.1f} GFLOP/s")
        if self.stream:
            rates = ", ".join(f"{s.name} {s.bytes_per_s / 1e9:,.1f}" for s in self.stream)
            best = max(self.stream, key=lambda s: s.bytes_per_s)
            out.append(
                f"bandwidth roof: {self.bandwidth / 1e9:,.1f} GB/s, the best of three streams measured before "
                f"and after the kernels ({rates} GB/s, bytes read + written; spread of the best {best.spread:.0%})"
            )
        else:
            out.append(f"bandwidth roof: {self.bandwidth / 1e9:,.1f} GB/s")
        out.append(f"ridge: {self.ridge_text} FLOP/byte")
        return "\n".join(out)


def _better(a: Kernel, b: Kernel) -> Kernel:
    """Of two measurements of the same kernel, the faster; its spread is the
    larger of the two runs' own spreads and the gap between the runs (the
    machine's load can change between them, which one run's repeats miss)."""
    best, other = (a, b) if a.seconds <= b.seconds else (b, a)
    gap = other.seconds / best.seconds - 1
    return replace(best, spread=max(a.spread, b.spread, gap))


def measure(
    matmul_sizes: tuple[int, ...] = (32, 128, 512),
    vector_n: int | None = None,
    repeats: int = 5,
    *,
    peak_n: int = PEAK_N,
    stream_bytes: int | None = None,
) -> Roofline:
    """Measures the roofs, the kernels placed under them, then the roofs
    again (a few seconds), with BLAS on one thread.  The compute roof is a
    ``peak_n`` matmul measured on its own, the bandwidth roof the best of
    :func:`stream_kernels`; neither is taken from ``kernels``.  Each roof
    keeps the better of its two measurements.  ``vector_n``: the add's and
    the sum's float64 elements per array (default: arrays of twice the
    last-level cache, 32-256 MiB, so the sum's one array streams from DRAM
    too, not from a cache that holds it)."""
    if isinstance(matmul_sizes, (str, bytes)) or not hasattr(matmul_sizes, "__iter__") or not len(matmul_sizes):
        raise TypeError(f"matmul_sizes must be a non-empty tuple of matrix sizes, got {matmul_sizes!r}")
    sizes = [int_arg(n, "matmul size", minimum=1, maximum=8192) for n in matmul_sizes]
    if vector_n is None:
        vector_n = min(max(2 * llc_bytes(), 32 << 20), 256 << 20) // F8
    with quiet_blas() as quiet:
        # the roofs before and after the kernels, the better of the two kept: a machine whose load
        # changes during the run then does not hand the kernels a quieter moment than the roofs had
        peak_k = matmul_kernel(peak_n, repeats)
        stream = stream_kernels(stream_bytes, repeats)
        kernels = [add_kernel(vector_n, repeats), sum_kernel(vector_n, repeats)]
        kernels += [matmul_kernel(n, repeats) for n in sizes]
        peak_k = _better(peak_k, matmul_kernel(peak_n, repeats))
        stream = [_better(a, b) for a, b in zip(stream, stream_kernels(stream_bytes, repeats))]
    bandwidth = max(s.bytes_per_s for s in stream)
    return Roofline(peak_k.flops_per_s, bandwidth, kernels, peak_k, stream, quiet.capped)


def plot(ax: Any, roof: Roofline) -> Any:
    """The roofline on log-log axes, each kernel a labelled point."""
    lo = min([k.intensity for k in roof.kernels] + [roof.ridge]) / 3
    hi = max([k.intensity for k in roof.kernels] + [roof.ridge]) * 3
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.loglog(xs, [roof.attainable(x) / 1e9 for x in xs], color="k", linewidth=1.5, label="roofline (attainable)")
    ax.axvline(roof.ridge, color="gray", linestyle=":", linewidth=1)
    ax.text(roof.ridge, roof.peak_flops / 1e9 * 1.15, f" ridge {roof.ridge_text} FLOP/B", fontsize=8, color="gray")
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
    medians of interleaved repeats, each round's time in ``temp_rounds_ms``
    and ``out_rounds_ms``.  ``equal`` checks the answers match."""

    n: int
    temp_ms: float
    out_ms: float
    equal: bool
    temp_rounds_ms: list[float] = field(default_factory=list)
    out_rounds_ms: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.temp_ms / self.out_ms


def out_vs_temporaries(n: int = 4_000_000, repeats: int = 9) -> OutResult:
    """``a * b + c`` with temporaries against ``out=`` into one array, ``n``
    float64 each, ``repeats`` interleaved rounds (at most 100)."""
    n = int_arg(n, "n", minimum=1, maximum=10**8)
    repeats = int_arg(repeats, "repeats", minimum=1, maximum=MAX_REPEATS)
    rng = np.random.default_rng(3)
    a, b, c = rng.random(n), rng.random(n), rng.random(n)
    y = np.empty(n)

    def temp() -> np.ndarray:
        return a * b + c

    def out() -> np.ndarray:
        np.multiply(a, b, out=y)
        return np.add(y, c, out=y)

    equal = bool(np.array_equal(temp(), out()))
    rounds = interleave({"temp": timed(temp), "out": timed(out)}, repeats)
    ts = medians(rounds)
    return OutResult(
        n,
        ts["temp"] * 1e3,
        ts["out"] * 1e3,
        equal,
        [t * 1e3 for t in rounds["temp"]],
        [t * 1e3 for t in rounds["out"]],
    )


__all__ = [
    "CALL_FIXED_S",
    "F8",
    "LLC_FALLBACK",
    "MAX_CALLS",
    "MAX_REPEATS",
    "NOISY",
    "PEAK_N",
    "Kernel",
    "OutResult",
    "Roofline",
    "add_kernel",
    "copy_bandwidth",
    "llc_bytes",
    "matmul_kernel",
    "measure",
    "out_vs_temporaries",
    "plot",
    "stream_kernels",
    "sum_kernel",
]
