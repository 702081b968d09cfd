"""Chapter 06b, section 2: bubbles on a real GPU.

The same compute fed two ways.  **Serial**: read a batch into ordinary
(pageable) host memory, copy it with a blocking ``.to("cuda")``, compute,
read the loss (a sync) - the GPU idles during every read and copy.
**Prefetch**: chapter 06's :class:`~lowlat.train.loader.PrefetchLoader`
runs the reads on its thread, each into a pinned buffer from a ring, and
starts a ``non_blocking`` copy on a side stream with an event after it; the
training loop makes its stream wait for that event (not the host), computes,
and keeps at most two steps in flight.  Reads are the seeded heavy-tailed
times of :class:`~lowlat.train.loader.HeavyTailSource` (a read sleeps: it
waits, it does not compute).

Both loops record CUDA events around each step's compute, so the numbers
come from the GPU's clock: busy fraction = compute time / (last end - first
start); step time = the time between consecutive steps' ends (ms).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core.validate import int_arg
from lowlat.train._args import real_arg
from lowlat.train.gpu import MIB, event_ms, median, require
from lowlat.train.loader import HeavyTailSource, PrefetchLoader

WIDTH = 4096  # the compute's hidden width: bf16 matmuls of (rows x 4096) @ (4096 x 4096)
ROWS = 2048


class GpuCompute:
    """A fixed-cost step: ``matmuls`` bf16 matmuls of 2,048 x 4,096 by
    4,096 x 4,096 (each followed by a tanh) on the batch, the count chosen
    (:meth:`calibrated`) so that the step takes about ``step_ms`` of GPU
    time.  Owns its weights (device memory, about 32 MiB)."""

    def __init__(self, matmuls: int) -> None:
        self.matmuls = int_arg(matmuls, "matmuls", minimum=1, maximum=10_000)
        torch = require()
        g = torch.Generator(device="cuda").manual_seed(0)
        self.w = (torch.randn(WIDTH, WIDTH, device="cuda", generator=g) / WIDTH**0.5).to(torch.bfloat16)

    @classmethod
    def calibrated(cls, step_ms: float = 2.5) -> GpuCompute:
        step_ms = real_arg(step_ms, "step_ms", positive=True, maximum=1000.0)
        one = cls(1)
        x = one._input(one._fake_batch())
        per = median(event_ms(lambda: one._chain(x), repeats=10, warmup=3))
        one.matmuls = max(1, min(10_000, round(step_ms / per)))
        return one

    def _fake_batch(self) -> Any:
        torch = require()
        return torch.zeros(ROWS * WIDTH // 2, dtype=torch.float32, device="cuda")  # a 16 MiB batch's worth

    def _input(self, batch: Any) -> Any:
        """The batch (float32, any length) as the matmuls' (2048 x 4096) bf16 input: its first elements,
        repeated to fill (the data is not the point; reading it on the device is)."""
        torch = require()
        need = ROWS * WIDTH
        flat = batch.reshape(-1)
        reps = -(-need // flat.numel())
        return flat.repeat(reps)[:need].view(ROWS, WIDTH).to(torch.bfloat16)

    def _chain(self, h: Any) -> Any:
        torch = require()
        for _ in range(self.matmuls):
            h = torch.tanh(h @ self.w)
        return h

    def __call__(self, batch: Any) -> Any:
        """One step on ``batch`` (a float32 CUDA tensor); returns the loss (a 0-d CUDA tensor, not read)."""
        return self._chain(self._input(batch)).float().mean()


@dataclass
class GpuEpoch:
    """One epoch on the GPU: ``mode`` "serial" or "prefetch" (``depth``);
    ``compute_ms`` per step (CUDA events), ``step_ms`` between consecutive
    steps' ends (the first step has none), ``span_ms`` first start to last
    end."""

    mode: str
    depth: int
    batch_bytes: int
    matmuls: int
    compute_ms: np.ndarray = field(repr=False)
    step_ms: np.ndarray = field(repr=False)
    span_ms: float

    @property
    def busy(self) -> float:
        """Share of the epoch's GPU span spent in the step's compute."""
        return float(self.compute_ms.sum() / self.span_ms) if self.span_ms > 0 else 0.0

    def percentiles(self) -> dict[str, float]:
        s = self.step_ms
        return {"p50": float(np.percentile(s, 50)), "p99": float(np.percentile(s, 99)), "max": float(s.max())}


def default_source(steps: int = 150, seed: int = 0) -> HeavyTailSource:
    """Reads of about 1 ms (lognormal, sigma 0.3) with a 20 ms stall in 4% of them."""
    return HeavyTailSource(n=steps, median_ms=1.0, sigma=0.3, stall_prob=0.04, stall_ms=20.0, item_len=1, seed=seed)


def _read_into(times_s: np.ndarray, i: int, out: np.ndarray) -> None:
    """Item ``i``'s read: waits its read time, then stamps ``i`` into ``out`` (a reader fills memory it was given)."""
    time.sleep(float(times_s[i]))
    out[0] = i


def _events(torch: Any) -> tuple[Any, Any]:
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def _finish(
    torch: Any, mode: str, depth: int, nbytes: int, compute: GpuCompute, marks: list[tuple[Any, Any]]
) -> GpuEpoch:
    torch.cuda.synchronize()
    comp = np.array([a.elapsed_time(b) for a, b in marks])
    steps = np.array([marks[i - 1][1].elapsed_time(marks[i][1]) for i in range(1, len(marks))])
    span = marks[0][0].elapsed_time(marks[-1][1])
    return GpuEpoch(mode, depth, nbytes, compute.matmuls, comp, steps, span)


def _check(source: Any, batch_mib: Any) -> tuple[np.ndarray, int]:
    if not isinstance(source, HeavyTailSource):
        raise TypeError(f"source must be a HeavyTailSource (its read times are used), got {type(source).__name__}")
    if source.n < 2:
        raise ValueError(f"source must hold at least 2 items (steps), got {source.n}")
    if source.n > 100_000:
        raise ValueError(f"source may hold at most 100,000 items (steps), got {source.n}")
    mib = int_arg(batch_mib, "batch_mib", minimum=1, maximum=512)
    return source.read_times_s(), mib * MIB // 4


def serial_epoch(source: HeavyTailSource, compute: GpuCompute, *, batch_mib: int = 64) -> GpuEpoch:
    """One epoch, serial: read into pageable memory, blocking copy of
    ``batch_mib`` MiB (1 to 512), compute, ``.item()`` on the loss."""
    times, n = _check(source, batch_mib)
    torch = require()
    host = np.zeros(n, dtype=np.float32)
    marks = []
    for i in range(source.n):
        _read_into(times, i, host)
        x = torch.from_numpy(host).to("cuda")  # pageable: staged through the driver's buffer, blocking
        a, b = _events(torch)
        a.record()
        loss = compute(x)
        b.record()
        loss.item()  # the loss read each step: a sync
        marks.append((a, b))
    return _finish(torch, "serial", 0, n * 4, compute, marks)


def _prefetched(torch: Any, times: np.ndarray, count: int, n: int, slots: int, side: Any) -> Iterator[tuple[Any, Any]]:
    """The producer: reads into a ring of pinned buffers and starts each
    copy on ``side``; yields (device tensor, its copy's event).  A buffer
    is reused only once its previous copy has finished."""
    ring = [torch.zeros(n, dtype=torch.float32, pin_memory=True) for _ in range(slots)]
    done: list[Any] = [None] * slots
    for i in range(count):
        s = i % slots
        if done[s] is not None:
            done[s].synchronize()  # this slot's previous copy must be over before its bytes change
        _read_into(times, i, ring[s].numpy())
        with torch.cuda.stream(side):
            x = ring[s].to("cuda", non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(side)
        done[s] = ev
        yield x, ev


def prefetch_epoch(source: HeavyTailSource, compute: GpuCompute, *, depth: int = 8, batch_mib: int = 64) -> GpuEpoch:
    """One epoch through a :class:`PrefetchLoader` of ``depth`` (0 to 64)
    over pinned buffers (``depth`` + 2 of ``batch_mib`` MiB), copies on a
    side stream, the compute stream waiting on each copy's event; the loss
    is read once, after the epoch."""
    times, n = _check(source, batch_mib)
    depth = int_arg(depth, "depth", minimum=0, maximum=64)
    torch = require()
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    marks: list[tuple[Any, Any]] = []
    total = torch.zeros((), device="cuda")
    with PrefetchLoader(_prefetched(torch, times, source.n, n, depth + 2, side), depth) as loader:
        for x, ready in loader:
            main.wait_event(ready)  # the GPU waits for the copy; the host does not
            x.record_stream(main)  # allocated on the side stream, used on this one
            if len(marks) >= 2:
                marks[-2][1].synchronize()  # at most two steps in flight, as a real loop's periodic loss read
            a, b = _events(torch)
            a.record()
            total.add_(compute(x))
            b.record()
            marks.append((a, b))
    total.item()
    return _finish(torch, "prefetch", depth, n * 4, compute, marks)


def bubbles(
    source: HeavyTailSource | None = None,
    *,
    step_ms: float = 2.5,
    depths: Any = (0, 1, 2, 4, 8, 16),
    batch_mib: int = 64,
) -> tuple[GpuCompute, GpuEpoch, dict[int, GpuEpoch]]:
    """The section's experiment: one serial epoch and one prefetching epoch
    per depth (at most 8 depths), the same compute (calibrated to about
    ``step_ms`` of GPU time) and the same reads.  Returns (the compute, the
    serial epoch, {depth: epoch})."""
    if isinstance(depths, (str, bytes)) or not hasattr(depths, "__iter__"):
        raise TypeError(f"depths must be a sequence of prefetch depths (0 to 64), got {type(depths).__name__}")
    ds = [int_arg(d, "depth", minimum=0, maximum=64) for d in depths]
    if not ds or len(ds) > 8:
        raise ValueError(f"depths must name 1 to 8 depths, got {len(ds)}")
    src = default_source() if source is None else source
    _check(src, batch_mib)
    real_arg(step_ms, "step_ms", positive=True, maximum=1000.0)
    require()
    compute = GpuCompute.calibrated(step_ms)
    prefetch_epoch(HeavyTailSource(n=4, median_ms=0.0, item_len=1), compute, depth=1, batch_mib=batch_mib)  # warm-up
    serial = serial_epoch(src, compute, batch_mib=batch_mib)
    return compute, serial, {d: prefetch_epoch(src, compute, depth=d, batch_mib=batch_mib) for d in ds}


__all__ = ["GpuCompute", "GpuEpoch", "bubbles", "default_source", "prefetch_epoch", "serial_epoch"]
