"""Chapter 06b's GPU measurements, the common part: is there a CUDA GPU
(:func:`available`), the torch module when there is (:func:`require`),
timing with CUDA events (:func:`event_ms`), and section 1, host-to-device
transfers (:func:`transfers`, :func:`host_timer_mistake`).

torch is optional (``pip install -e ".[gpu]"``): this module imports
without it, and every measuring function raises :class:`GpuUnavailable`
with the reason (torch missing, no CUDA, an Apple GPU the course does not
time) before it does any work.  Times are in ms, sizes in bytes, rates in
GB/s (10^9 bytes/s) unless a name says otherwise.  The other sections:
:mod:`lowlat.train.gpu_sync` (sync points), :mod:`lowlat.train.gpu_feed`
(bubbles), :mod:`lowlat.train.gpu_compute` (precision, the roofline,
fusion), :mod:`lowlat.train.gpu_compile` (dynamic shapes),
:mod:`lowlat.train.gpu_alloc` (the caching allocator).
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lowlat.core.validate import int_arg

KIB, MIB = 1 << 10, 1 << 20
# The size sweep: 64 KiB .. 256 MiB, x4 per point (latency-bound at the left, bandwidth-bound at the right).
SIZES = tuple(64 * KIB * 4**k for k in range(7))
MAX_BYTES = 1 << 30  # one transfer buffer: at most 1 GiB (it is allocated three times: pageable, pinned, device)
MAX_REPEATS = 1000


class GpuUnavailable(RuntimeError):
    """Raised by every measuring function where there is no CUDA GPU; the
    message is the one-line reason :func:`available` gives."""


def _torch() -> Any | None:
    """The torch module, or None where it is not installed (imported only here, lazily)."""
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        return importlib.import_module("torch")
    except ImportError:  # a broken install (a missing shared library): as good as absent
        return None


def available() -> tuple[bool, str]:
    """(True, the GPU's name and torch's version) where torch sees a CUDA
    GPU; else (False, why): torch not installed, a CPU-only build of torch,
    no CUDA device visible, or an Apple GPU (MPS) that these measurements do
    not time (they rely on CUDA events, streams and pinned memory)."""
    torch = _torch()
    if torch is None:
        return False, 'torch is not installed; on a machine with a CUDA GPU: pip install -e ".[gpu]"'
    if not torch.cuda.is_available():
        mps = getattr(getattr(torch, "backends", None), "mps", None)
        if mps is not None and mps.is_available():
            return False, (
                f"an Apple GPU (MPS) is present with torch {torch.__version__}, but these measurements use CUDA "
                "events, streams and pinned memory, which MPS does not have: not measured"
            )
        if getattr(torch.version, "cuda", None) is None:
            return False, f"torch {torch.__version__} is a CPU-only build (no CUDA support compiled in)"
        return False, f"torch {torch.__version__} was built with CUDA {torch.version.cuda}, but no CUDA GPU is visible"
    return True, f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"


def require() -> Any:
    """The torch module, where a CUDA GPU is available; else raises
    :class:`GpuUnavailable` with :func:`available`'s reason."""
    ok, why = available()
    if not ok:
        raise GpuUnavailable(f"needs a CUDA GPU and torch: {why}")
    return _torch()


def device_name() -> str:
    """The GPU's name (for plot titles and the notebook's header)."""
    return str(require().cuda.get_device_name(0))


def repeats_arg(value: Any, name: str = "repeats", *, maximum: int = MAX_REPEATS) -> int:
    """A count of timed repeats: 1 .. ``maximum``."""
    return int_arg(value, name, minimum=1, maximum=maximum)


def event_ms(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> list[float]:
    """``fn()`` timed ``repeats`` times on the GPU's own clock: a CUDA event
    recorded before and after each call on the current stream, read after
    one synchronize at the end; ``warmup`` untimed calls first.  Each value
    is ms of GPU time from the first queued operation to the last."""
    torch = require()
    repeats = repeats_arg(repeats)
    warmup = int_arg(warmup, "warmup", minimum=0, maximum=MAX_REPEATS)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    for _ in range(warmup):
        fn()
    pairs = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in pairs]


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


# ---- section 1: transfers ------------------------------------------------------------------


@dataclass(frozen=True)
class TransferPoint:
    """One size of the host-to-device sweep (medians of ``repeats`` copies,
    CUDA events): ``pageable_ms`` from ordinary host memory, ``pinned_ms``
    from page-locked memory, both ``non_blocking=False``; ``*_return_ms``:
    host time until the copy call returned, blocking and ``non_blocking``
    (pinned), which shows that the second returns before the bytes moved."""

    size: int
    pageable_ms: float
    pinned_ms: float
    blocking_return_ms: float
    async_return_ms: float

    @property
    def pageable_gbps(self) -> float:
        return self.size / (self.pageable_ms / 1e3) / 1e9

    @property
    def pinned_gbps(self) -> float:
        return self.size / (self.pinned_ms / 1e3) / 1e9

    @property
    def speedup(self) -> float:
        """Pinned over pageable bandwidth."""
        return self.pageable_ms / self.pinned_ms


def _size_list(sizes: Any) -> list[int]:
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"sizes must be a sequence of byte counts, got {type(sizes).__name__} {sizes!r}")
    out = [int_arg(s, "size", minimum=1, maximum=MAX_BYTES) for s in sizes]
    if not out:
        raise ValueError("sizes must name at least one size")
    if len(out) > 32:
        raise ValueError(f"sizes may hold at most 32 sizes, got {len(out)}")
    return out


def _copy_ms(dst: Any, src: Any, repeats: int) -> list[float]:
    return event_ms(lambda: dst.copy_(src, non_blocking=False), repeats)


def transfers(sizes: Sequence[int] = SIZES, repeats: int = 5) -> list[TransferPoint]:
    """Host-to-device copies of each size in ``sizes`` (bytes, at most 1
    GiB each, at most 32 sizes): pageable against pinned, blocking against
    ``non_blocking``.  A few seconds for the default sweep on a recent GPU."""
    sizes = _size_list(sizes)
    repeats = repeats_arg(repeats, maximum=100)
    torch = require()
    out = []
    for size in sizes:
        dev = torch.empty(size, dtype=torch.uint8, device="cuda")
        pageable = torch.ones(size, dtype=torch.uint8)
        pinned = torch.ones(size, dtype=torch.uint8, pin_memory=True)
        page_ms, pin_ms = _copy_ms(dev, pageable, repeats), _copy_ms(dev, pinned, repeats)
        ret: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeats):
            for nb in (False, True):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                dev.copy_(pinned, non_blocking=nb)
                ret[nb].append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
        out.append(TransferPoint(size, median(page_ms), median(pin_ms), median(ret[False]), median(ret[True])))
        del dev, pageable, pinned
    return out


@dataclass(frozen=True)
class TimerMistake:
    """One fp32 matmul of ``n`` x ``n`` timed three ways (medians, ms): a
    host timer around the launch alone (the mistake: it times the queueing,
    not the work), a host timer with ``torch.cuda.synchronize()`` before it
    is read, and CUDA events."""

    n: int
    host_no_sync_ms: float
    host_sync_ms: float
    events_ms: float

    @property
    def understated(self) -> float:
        """How many times too small the mistaken reading was."""
        return self.events_ms / self.host_no_sync_ms


def host_timer_mistake(n: int = 8192, repeats: int = 5) -> TimerMistake:
    """The classic mis-measurement: ``time.perf_counter()`` around an
    asynchronous launch without a synchronize (``n`` from 64 to 16,384)."""
    n = int_arg(n, "n", minimum=64, maximum=16_384)
    repeats = repeats_arg(repeats, maximum=100)
    torch = require()
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    a @ b  # warm-up: the library picks its kernel once
    no_sync, synced = [], []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        no_sync.append((time.perf_counter() - t0) * 1e3)  # the mistake: read before the GPU finished
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        synced.append((time.perf_counter() - t0) * 1e3)
    ev = event_ms(lambda: a @ b, repeats)
    return TimerMistake(n, median(no_sync), median(synced), median(ev))


__all__ = [
    "SIZES",
    "GpuUnavailable",
    "TimerMistake",
    "TransferPoint",
    "available",
    "device_name",
    "event_ms",
    "host_timer_mistake",
    "require",
    "transfers",
]
