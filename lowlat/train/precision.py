"""float32 against float64 on the roofline: the mixed-precision trade,
measured on one core with numpy.

Halving the bytes per element halves the bytes a kernel moves for the same
FLOPs, so its arithmetic intensity (FLOP/byte) doubles: a bandwidth-bound
kernel can then run about twice the FLOP/s under the same bandwidth roof.
The compute roof moves too when the vector units hold twice as many
float32 lanes as float64 ones (a 256-bit AVX2 register: 8 against 4), which
a BLAS matmul uses.  The price is precision: float32 keeps 24 significant
bits against float64's 53.

Three kernels run in both dtypes, interleaved round by round (one BLAS
thread, :func:`lowlat.core.blas.quiet_blas`): a ``peak_n`` square matmul (the
compute roof), a copy (the bandwidth roof: bytes read + written per second)
and a vector add ``c = a + b`` (the bandwidth-bound kernel placed under
it), the streams on arrays larger than the last-level cache.  Times in s,
rates per second, bytes counted as the program reads and writes them."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from lowlat.core.blas import quiet_blas
from lowlat.core.validate import int_arg
from lowlat.method.interleave import interleave, median, ratios, timed
from lowlat.train.roofline import PEAK_N, Kernel, Roofline, llc_bytes

DTYPES = ("float32", "float64")
KERNELS = ("matmul", "copy", "add")
# per element of n: arrays a kernel reads + writes (copy: dst = src; add: c = a + b)
STREAMS = {"copy": 2, "add": 3}


def _dtype(dtype: Any) -> np.dtype:
    """float32 or float64, refusing every other dtype."""
    if dtype is None:  # np.dtype(None) would be float64
        raise TypeError("dtype must be float32 or float64, got None")
    try:
        d = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from exc
    if d.name not in DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {d.name}")
    return d


def _kernel(kernel: Any) -> str:
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    return kernel


def kernel_flops(kernel: str, n: int) -> float:
    """FLOPs of one run: matmul of ``n x n`` 2 n^3, add n, copy 0."""
    kernel, n = _kernel(kernel), int_arg(n, "n", minimum=1, maximum=10**12)
    if kernel == "matmul":
        return 2.0 * n**3
    return float(n) if kernel == "add" else 0.0


def kernel_bytes(kernel: str, n: int, dtype: Any) -> float:
    """Bytes one run moves at least once (compulsory traffic): matmul
    3 n^2 x itemsize (two inputs, one output), copy 2 n, add 3 n."""
    kernel, n, size = _kernel(kernel), int_arg(n, "n", minimum=1, maximum=10**12), _dtype(dtype).itemsize
    if kernel == "matmul":
        return 3.0 * n * n * size
    return float(STREAMS[kernel] * n * size)


def intensity(kernel: str, n: int, dtype: Any) -> float:
    """Arithmetic intensity (FLOP/byte) from the counts alone: float32's is
    exactly twice float64's for every kernel (half the bytes, same FLOPs)."""
    return kernel_flops(kernel, n) / kernel_bytes(kernel, n, dtype)


def default_stream_n() -> int:
    """Elements per streamed array: the float32 array at least the size of
    the last-level cache (32 MiB at least, 128 MiB at most), so an add's
    three float32 arrays are three times the cache and stream from memory."""
    return min(max(llc_bytes(), 32 << 20), 128 << 20) // 4


# the widest vector extension a /proc/cpuinfo flag names, widest first: (flag, name, bits)
_VECTOR_FLAGS = (("avx512f", "AVX-512", 512), ("avx2", "AVX2", 256), ("avx", "AVX", 256), ("sse2", "SSE2", 128))


def vector_unit() -> tuple[str, int] | None:
    """The widest SIMD extension this CPU reports, as (name, register bits):
    x86 from the ``flags`` of /proc/cpuinfo, ARM64 NEON (128 bits; wider SVE
    is not looked for); None where the OS does not say."""
    import platform

    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            for flag, name, bits in _VECTOR_FLAGS:
                if flag in flags:
                    return name, bits
            return None
        if key.strip() == "Features" and "asimd" in value.split():
            return "NEON", 128
    if platform.machine().lower() in ("arm64", "aarch64"):
        return "NEON", 128
    return None


def blas_library() -> str:
    """numpy's BLAS as threadpoolctl names it (library, version and, for
    OpenBLAS, the CPU its kernels were picked for), or "unknown"."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    for lib in threadpool_info():
        if lib.get("user_api") == "blas":
            arch = lib.get("architecture")
            return f"{lib.get('internal_api')} {lib.get('version')}" + (f", {arch} kernels" if arch else "")
    return "unknown"


@dataclass
class PrecisionRun:
    """Per-round times (s) of each kernel in each dtype, ``seconds[kernel][dtype]``,
    all measured interleaved in one run."""

    peak_n: int
    stream_n: int
    seconds: dict[str, dict[str, list[float]]]
    blas_one_thread: bool = False

    @property
    def rounds(self) -> int:
        """Rounds measured (every kernel and dtype ran in each)."""
        return len(next(iter(next(iter(self.seconds.values())).values()))) if self.seconds else 0

    def _measured(self, kernel: Any) -> str:
        k = _kernel(kernel)
        if k not in self.seconds:
            raise ValueError(f"kernel {k!r} was not measured in this run (it measured {', '.join(self.seconds)})")
        return k

    def n_of(self, kernel: str) -> int:
        return self.peak_n if _kernel(kernel) == "matmul" else self.stream_n

    def kernel(self, kernel: str, dtype: Any) -> Kernel:
        """The kernel's best round as a :class:`Kernel` (spread: median/best - 1)."""
        kernel = self._measured(kernel)
        d = _dtype(dtype).name
        ts = self.seconds[kernel][d]
        best = min(ts)
        n = self.n_of(kernel)
        name = f"{kernel} {n}" if kernel == "matmul" else f"{kernel} {n * _dtype(d).itemsize >> 20} MiB"
        return Kernel(
            f"{name} {d}",
            kernel_flops(kernel, n),
            kernel_bytes(kernel, n, d),
            best,
            statistics.median(ts) / best - 1,
        )

    def roofline(self, dtype: Any) -> Roofline:
        """The dtype's own roofline: compute roof from its matmul, bandwidth
        roof from its copy, the add (and the matmul) placed under them."""
        mm, cp, add = (self.kernel(k, dtype) for k in ("matmul", "copy", "add"))
        return Roofline(mm.flops_per_s, cp.bytes_per_s, [add, mm], mm, [cp], self.blas_one_thread)

    def speedups(self, kernel: str) -> list[float]:
        """Per round: float64 time / float32 time (> 1: float32 faster)."""
        kernel = self._measured(kernel)
        return ratios(self.seconds[kernel]["float64"], self.seconds[kernel]["float32"])

    def bandwidth_ratios(self) -> list[float]:
        """Per round: float32 copy bytes/s over float64 copy bytes/s (1 when
        the memory moves bytes at the same rate whatever they hold)."""
        half = kernel_bytes("copy", self.stream_n, "float32") / kernel_bytes("copy", self.stream_n, "float64")
        return [half * s for s in self.speedups("copy")]

    def ms(self, kernel: str, dtype: Any) -> list[float]:
        """Per-round times in ms (for :func:`lowlat.method.readings.compare`)."""
        return [t * 1e3 for t in self.seconds[self._measured(kernel)][_dtype(dtype).name]]


def measure(
    peak_n: int = PEAK_N,
    stream_n: int | None = None,
    rounds: int = 7,
    *,
    kernels: tuple[str, ...] = KERNELS,
) -> PrecisionRun:
    """Each of ``kernels`` in float32 and float64, ``rounds`` interleaved
    rounds after one warm-up each, BLAS on one thread.  Memory: the streams
    take 3 x ``stream_n`` x 12 bytes (both dtypes' arrays), the matmuls
    3 x ``peak_n``^2 x 12."""
    peak_n = int_arg(peak_n, "peak_n", minimum=1, maximum=4096)
    stream_n = int_arg(default_stream_n() if stream_n is None else stream_n, "stream_n", minimum=1, maximum=10**8)
    rounds = int_arg(rounds, "rounds", minimum=1, maximum=1000)
    if not isinstance(kernels, (tuple, list)) or not kernels or any(k not in KERNELS for k in kernels):
        raise ValueError(f"kernels must be a non-empty tuple of {', '.join(KERNELS)}, got {kernels!r}")
    rng = np.random.default_rng(0)
    variants: dict[str, Callable[[], float]] = {}
    for d in DTYPES:
        if "matmul" in kernels:
            a, b = rng.random((peak_n, peak_n)).astype(d), rng.random((peak_n, peak_n)).astype(d)
            variants[f"matmul/{d}"] = timed(partial(np.matmul, a, b, out=np.empty((peak_n, peak_n), d)))
        x, y, z = np.ones(stream_n, d), np.ones(stream_n, d), np.empty(stream_n, d)
        if "copy" in kernels:
            variants[f"copy/{d}"] = timed(partial(np.copyto, z, x))
        if "add" in kernels:
            variants[f"add/{d}"] = timed(partial(np.add, x, y, out=z))
    with quiet_blas() as quiet:
        for fn in variants.values():
            fn()  # warm-up: first touch of the output pages, BLAS start
        got = interleave(variants, rounds)
    seconds: dict[str, dict[str, list[float]]] = {}
    for key, ts in got.items():
        k, d = key.split("/")
        seconds.setdefault(k, {})[d] = ts
    return PrecisionRun(peak_n, stream_n, seconds, quiet.capped)


@dataclass(frozen=True)
class NumericCheck:
    """What float32 costs in accuracy, against float64 on the same inputs:
    relative errors (dimensionless) of a matmul (Frobenius norm), a sum
    (numpy's pairwise summation) and a running sum (``cumsum``: one
    accumulator, added to in order, as a naive loop does)."""

    n_matmul: int
    n_sum: int
    matmul_rel: float
    sum_rel: float
    running_sum_rel: float
    eps32: float = field(default=float(np.finfo(np.float32).eps))
    eps64: float = field(default=float(np.finfo(np.float64).eps))


def numeric_check(n_matmul: int = 512, n_sum: int = 4_000_000, seed: int = 0) -> NumericCheck:
    """The same random inputs (uniform in [0, 1)) computed in float32 and in
    float64; float64's answer is the reference."""
    n_matmul = int_arg(n_matmul, "n_matmul", minimum=1, maximum=4096)
    n_sum = int_arg(n_sum, "n_sum", minimum=1, maximum=10**8)
    rng = np.random.default_rng(int_arg(seed, "seed", minimum=0))
    a, b = rng.random((n_matmul, n_matmul)), rng.random((n_matmul, n_matmul))
    v = rng.random(n_sum)
    with quiet_blas():
        ref = a @ b
        got = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    mm = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    v32 = v.astype(np.float32)
    s64 = float(v.sum())
    s32 = float(v32.sum(dtype=np.float32))
    run32 = float(np.cumsum(v32, dtype=np.float32)[-1])
    return NumericCheck(n_matmul, n_sum, mm, abs(s32 - s64) / s64, abs(run32 - s64) / s64)


def plot(ax: Any, run: PrecisionRun) -> Any:
    """Both dtypes' rooflines on log-log axes (GFLOP/s against FLOP/byte),
    each with its add and its matmul; an arrow from each float64 point to
    its float32 twin."""
    colors = {"float32": "C0", "float64": "C3"}
    roofs = {d: run.roofline(d) for d in DTYPES}
    pts = [k.intensity for r in roofs.values() for k in r.kernels] + [r.ridge for r in roofs.values()]
    xs = np.logspace(np.log10(min(pts) / 3), np.log10(max(pts) * 3), 200)
    for d, r in roofs.items():
        ax.loglog(
            xs,
            [r.attainable(x) / 1e9 for x in xs],
            color=colors[d],
            linewidth=1.5,
            label=f"{d} roofline: {r.peak_flops / 1e9:,.0f} GFLOP/s, {r.bandwidth / 1e9:,.1f} GB/s",
        )
        for k in r.kernels:
            ax.plot(k.intensity, k.flops_per_s / 1e9, "o", color=colors[d])
            ax.annotate(
                k.name, (k.intensity, k.flops_per_s / 1e9), textcoords="offset points", xytext=(5, -11), fontsize=7
            )
    for k64, k32 in zip(roofs["float64"].kernels, roofs["float32"].kernels):
        ax.annotate(
            "",
            xy=(k32.intensity, k32.flops_per_s / 1e9),
            xytext=(k64.intensity, k64.flops_per_s / 1e9),
            arrowprops={"arrowstyle": "->", "color": "gray", "linewidth": 0.8},
        )
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved, log)")
    ax.set_ylabel("GFLOP/s (log)")
    ax.legend(fontsize=7, loc="lower right")
    return ax


def bench_keys(quick: bool) -> dict[str, float]:
    """``roofline_f32_over_f64`` (x): the vector add's FLOP/s in float32 over
    float64 (median of per-round ratios), arrays beyond the last-level cache.
    Quick: 4 M elements, 5 rounds (about 0.5 s); full: the default size,
    9 rounds."""
    n = 4_000_000 if quick else default_stream_n()
    run = measure(stream_n=n, rounds=5 if quick else 9, kernels=("add",))
    return {"roofline_f32_over_f64": median(run.speedups("add"))}


__all__ = [
    "DTYPES",
    "KERNELS",
    "NumericCheck",
    "PrecisionRun",
    "bench_keys",
    "blas_library",
    "default_stream_n",
    "intensity",
    "kernel_bytes",
    "kernel_flops",
    "measure",
    "numeric_check",
    "plot",
    "vector_unit",
]
