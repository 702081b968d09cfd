"""Chapter 06b, section 4: precision and the roofline on the GPU.

The roofs are measured apart from the kernels they judge: the compute
roof of each dtype is the best of a large square matmul (fp32, tf32 - fp32
storage, tensor cores with a 10-bit mantissa - bf16, fp16), the bandwidth
roof the best of two streaming kernels (copy, add) on arrays far larger
than the GPU's L2 cache.  Kernels are then placed under them by their
arithmetic intensity (FLOP per byte moved, counted as the program reads and
writes).  Also: the error bf16 adds against fp32 (measured against an fp64
reference), and fusion (a chain of elementwise ops, eager against
``torch.compile``).  Rates: TFLOP/s (10^12) and GB/s (10^9).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lowlat.core.validate import int_arg
from lowlat.train.gpu import MIB, event_ms, median, repeats_arg, require

DTYPES = ("fp32", "tf32", "bf16", "fp16")
_TORCH_DTYPE = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@contextlib.contextmanager
def _matmul_precision(torch: Any, dtype: str) -> Iterator[None]:
    """tf32 on for ``"tf32"``, strict fp32 otherwise; restored afterwards."""
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(old)


def _dtype_arg(dtype: Any) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return str(dtype)


def matmul_tflops(dtype: str = "bf16", n: int = 8192, repeats: int = 5) -> float:
    """TFLOP/s of one ``n`` x ``n`` matmul (2 n^3 FLOP) in ``dtype``
    (median of ``repeats``; ``n`` from 64 to 16,384)."""
    dtype = _dtype_arg(dtype)
    n = int_arg(n, "n", minimum=64, maximum=16_384)
    repeats = repeats_arg(repeats, maximum=100)
    torch = require()
    dt = getattr(torch, _TORCH_DTYPE[dtype])
    a = torch.randn(n, n, device="cuda").to(dt)
    b = torch.randn(n, n, device="cuda").to(dt)
    with _matmul_precision(torch, dtype):
        ms = median(event_ms(lambda: a @ b, repeats, warmup=2))
    return 2 * n**3 / (ms / 1e3) / 1e12


def stream_gbps(mib: int = 1024, repeats: int = 5) -> dict[str, float]:
    """GB/s of a copy (reads one array, writes one) and an add (reads two,
    writes one) over arrays of ``mib`` MiB each (64 to 8,192)."""
    mib = int_arg(mib, "mib", minimum=64, maximum=8192)
    repeats = repeats_arg(repeats, maximum=100)
    torch = require()
    n = mib * MIB // 4
    a = torch.ones(n, device="cuda")
    b = torch.ones(n, device="cuda")
    out = torch.empty(n, device="cuda")
    copy = median(event_ms(lambda: out.copy_(a), repeats, warmup=2))
    add = median(event_ms(lambda: torch.add(a, b, out=out), repeats, warmup=2))
    return {"copy": 2 * n * 4 / (copy / 1e3) / 1e9, "add": 3 * n * 4 / (add / 1e3) / 1e9}


@dataclass(frozen=True)
class Kernel:
    """A kernel placed on the roofline: FLOP and bytes as counted, its time (ms, median)."""

    name: str
    dtype: str
    flop: float
    bytes: float
    ms: float

    @property
    def intensity(self) -> float:
        return self.flop / self.bytes

    @property
    def tflops(self) -> float:
        return self.flop / (self.ms / 1e3) / 1e12


@dataclass(frozen=True)
class GpuRoofline:
    """The roofs (``peak_tflops`` per dtype, ``bandwidth_gbps`` the best
    stream, ``streams`` both) and the kernels measured under them."""

    peak_tflops: dict[str, float]
    bandwidth_gbps: float
    streams: dict[str, float]
    kernels: list[Kernel]

    def ridge(self, dtype: str) -> float:
        """FLOP/byte where ``dtype``'s compute roof meets the bandwidth roof."""
        return self.peak_tflops[_dtype_arg(dtype)] * 1e12 / (self.bandwidth_gbps * 1e9)

    def roof_tflops(self, k: Kernel) -> float:
        return min(self.peak_tflops[k.dtype], k.intensity * self.bandwidth_gbps / 1e3)

    def bound(self, k: Kernel) -> str:
        return "compute" if k.intensity >= self.ridge(k.dtype) else "bandwidth"

    def reading(self, k: Kernel) -> str:
        share = k.tflops / self.roof_tflops(k)
        return (
            f"{k.name} ({k.dtype}): {k.intensity:,.3g} FLOP/byte, {k.tflops:,.3g} TFLOP/s, "
            f"{share:.0%} of its roof: {self.bound(k)}-bound (the {k.dtype} ridge is at {self.ridge(k.dtype):,.0f})"
        )


def _kernels(torch: Any, repeats: int, mib: int) -> list[Kernel]:
    out = []
    for n in (256, 1024, 8192):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        ms = median(event_ms(_matmul(a, b), repeats, warmup=2))
        out.append(Kernel(f"matmul {n}", "bf16", 2.0 * n**3, 3.0 * n * n * 2, ms))
    n = mib * MIB // 4
    x = torch.randn(n, device="cuda")
    ms = median(event_ms(lambda: _chain(torch, x), repeats, warmup=2))
    out.append(Kernel("elementwise chain x5, eager", "fp32", 5.0 * n, 5 * 2.0 * n * 4, ms))
    rows = n // 4096
    s = x[: rows * 4096].view(rows, 4096)
    ms = median(event_ms(lambda: torch.softmax(s, dim=1), repeats, warmup=2))
    out.append(Kernel("softmax rows of 4,096", "fp32", 5.0 * rows * 4096, 2.0 * rows * 4096 * 4, ms))
    return out


def _matmul(a: Any, b: Any) -> Callable[[], Any]:
    return lambda: a @ b


def _chain(torch: Any, x: Any) -> Any:
    """Five elementwise ops, each a kernel of its own when run eagerly (each reads and writes the whole array)."""
    y = x * 2.0
    y = y + 1.0
    y = torch.tanh(y)
    y = y * y
    return y - 0.5


def roofline(*, n: int = 8192, mib: int = 1024, repeats: int = 5) -> GpuRoofline:
    """The four compute roofs (matmuls of ``n``), the bandwidth roof
    (streams of ``mib`` MiB), then bf16 matmuls of 256, 1,024 and 8,192,
    an elementwise chain and a row softmax over ``mib`` MiB placed under them."""
    n = int_arg(n, "n", minimum=64, maximum=16_384)
    mib = int_arg(mib, "mib", minimum=64, maximum=8192)
    repeats = repeats_arg(repeats, maximum=100)
    torch = require()
    peaks = {d: matmul_tflops(d, n, repeats) for d in DTYPES}
    streams = stream_gbps(mib, repeats)
    return GpuRoofline(peaks, max(streams.values()), streams, _kernels(torch, repeats, mib))


@dataclass(frozen=True)
class Bf16Error:
    """Relative errors against an fp64 reference (max |err| / max |ref|): a
    matmul in fp32 and in bf16 (both accumulating in fp32 inside the
    kernel), and a sum of ``n_sum`` values in each."""

    n: int
    matmul_fp32: float
    matmul_bf16: float
    n_sum: int
    sum_fp32: float
    sum_bf16: float

    eps_fp32 = 2.0**-23
    eps_bf16 = 2.0**-7


def bf16_error(n: int = 1024, n_sum: int = 1 << 22) -> Bf16Error:
    """Inputs uniform in [0, 1), seeded; ``n`` 16 to 8,192, ``n_sum`` 1 to 2^28."""
    n = int_arg(n, "n", minimum=16, maximum=8192)
    n_sum = int_arg(n_sum, "n_sum", minimum=1, maximum=1 << 28)
    torch = require()
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(n, n, device="cuda", generator=g, dtype=torch.float64)
    b = torch.rand(n, n, device="cuda", generator=g, dtype=torch.float64)
    ref = a @ b

    def rel(got: Any, want: Any) -> float:
        return float((got.double() - want).abs().max() / want.abs().max())

    with _matmul_precision(torch, "fp32"):
        m32 = rel(a.float() @ b.float(), ref)
    m16 = rel(a.bfloat16() @ b.bfloat16(), ref)
    v = torch.rand(n_sum, device="cuda", generator=g, dtype=torch.float64)
    s = v.sum()
    return Bf16Error(n, m32, m16, n_sum, rel(v.float().sum(), s), rel(v.bfloat16().sum(), s))


@dataclass(frozen=True)
class Fusion:
    """The elementwise chain over ``mib`` MiB (ms, medians): eager (five
    kernels, five reads and five writes of the array) against compiled (one
    fused kernel: one read, one write); ``equal``: the answers agree within
    fp32 rounding."""

    mib: int
    eager_ms: float
    fused_ms: float
    equal: bool
    compile_s: float

    @property
    def speedup(self) -> float:
        return self.eager_ms / self.fused_ms


def fusion(mib: int = 256, repeats: int = 5) -> Fusion:
    """Eager against ``torch.compile``d (``mib`` from 16 to 4,096; the
    compile takes seconds, measured and returned as ``compile_s``)."""
    mib = int_arg(mib, "mib", minimum=16, maximum=4096)
    repeats = repeats_arg(repeats, maximum=100)
    torch = require()
    import time

    x = torch.randn(mib * MIB // 4, device="cuda")
    fn: Callable[[Any], Any] = lambda t: _chain(torch, t)  # noqa: E731
    fused = torch.compile(fn, dynamic=False)
    t0 = time.perf_counter()
    got = fused(x)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    equal = bool(torch.allclose(got, fn(x), rtol=1e-5, atol=1e-6))
    eager = median(event_ms(lambda: fn(x), repeats, warmup=1))
    f_ms = median(event_ms(lambda: fused(x), repeats, warmup=1))
    return Fusion(mib, eager, f_ms, equal, compile_s)


__all__ = [
    "DTYPES",
    "Bf16Error",
    "Fusion",
    "GpuRoofline",
    "Kernel",
    "bf16_error",
    "fusion",
    "matmul_tflops",
    "roofline",
    "stream_gbps",
]
