"""Chapter 06b, section 3: sync points in the hot path.

A GPU step is queued, not run: the host returns from each launch in
microseconds and runs ahead.  Anything that needs a value the GPU has not
produced yet (``.item()``, ``.cpu()``, printing a tensor,
``torch.cuda.synchronize()``) makes the host wait until the queue drains;
the host then launches the next step onto an idle GPU.  On a launch-bound
step (small kernels) that wait and the launches after it are the step.
:func:`sync_costs` times the step with each kind of sync inside it, and with
the loss kept on the device and read once at the end (deferred);
:func:`profile_gap` shows the same in ``torch.profiler``'s table.  Times are
in us per step.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lowlat.core.validate import int_arg
from lowlat.train.gpu import median, repeats_arg, require

SYNCS = ("none", "deferred", "item", "cpu", "print", "synchronize")


def _sync_arg(kinds: Any) -> tuple[str, ...]:
    if isinstance(kinds, str) or not hasattr(kinds, "__iter__"):
        raise TypeError(f"kinds must be a sequence of sync kinds from {SYNCS}, got {type(kinds).__name__} {kinds!r}")
    out = tuple(kinds)
    bad = [k for k in out if k not in SYNCS]
    if bad or not out:
        raise ValueError(f"kinds must name at least one of {SYNCS}, got {bad or 'none'}")
    return out


def _step_fn(torch: Any, n: int, kind: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """(one training-like step with sync ``kind`` inside it, what runs once after the steps)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, n, device="cuda", generator=g)
    w = torch.randn(n, n, device="cuda", generator=g) / n**0.5
    total = torch.zeros((), device="cuda")
    sink = io.StringIO()

    def step() -> None:
        loss = torch.tanh(x @ w).square().mean()
        if kind == "item":
            loss.item()
        elif kind == "cpu":
            loss.cpu()
        elif kind == "print":
            with contextlib.redirect_stdout(sink):
                print(loss)  # formatting a CUDA tensor copies it to the host: a sync
            sink.seek(0)
            sink.truncate()
        elif kind == "synchronize":
            torch.cuda.synchronize()
        elif kind == "deferred":
            total.add_(loss.detach())  # stays on the device: no sync

    def finish() -> None:
        if kind == "deferred":
            total.item()  # the one read, after all the steps
        torch.cuda.synchronize()

    return step, finish


@dataclass
class SyncCosts:
    """Per-step host wall time (us) of ``steps`` steps, each run of them
    ending with one synchronize so that all the work is counted; one value
    per round, the kinds interleaved in each round."""

    n: int
    steps: int
    us: dict[str, list[float]] = field(repr=False)

    def median(self, kind: str) -> float:
        if kind not in self.us:
            raise ValueError(f"kind must be one of {tuple(self.us)}, got {kind!r}")
        return median(self.us[kind])

    def extra_us(self, kind: str) -> float:
        """What ``kind`` adds to a step over no sync at all (us, medians)."""
        return self.median(kind) - self.median("none")


def sync_costs(kinds: Any = SYNCS, *, n: int = 256, steps: int = 200, rounds: int = 5) -> SyncCosts:
    """A launch-bound step (an ``n`` x ``n`` fp32 matmul, a tanh, a mean)
    run ``steps`` times per kind, ``rounds`` interleaved rounds.  ``n`` from
    16 to 8,192 (a larger one is compute-bound, and a sync then costs little
    beside it); ``steps`` up to 100,000; ``rounds`` up to 100."""
    kinds = _sync_arg(kinds)
    if "none" not in kinds:
        kinds = ("none", *kinds)
    n = int_arg(n, "n", minimum=16, maximum=8192)
    steps = int_arg(steps, "steps", minimum=1, maximum=100_000)
    rounds = repeats_arg(rounds, "rounds", maximum=100)
    torch = require()
    fns = {k: _step_fn(torch, n, k) for k in kinds}
    for step, finish in fns.values():  # warm-up: kernels chosen, memory cached
        for _ in range(10):
            step()
        finish()
    us: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(rounds):
        for k, (step, finish) in fns.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            finish()
            us[k].append((time.perf_counter() - t0) * 1e6 / steps)
    return SyncCosts(n, steps, us)


@dataclass(frozen=True)
class ProfileGap:
    """``torch.profiler`` over ``steps`` steps with a sync each: ``table``
    is its summary (top operators by host time), ``sync_ms`` the host time
    spent in CUDA's synchronising calls, ``gpu_ms`` the kernels' total and
    ``wall_ms`` the whole run, so that ``1 - gpu_ms / wall_ms`` is the share
    of the run the GPU sat idle."""

    kind: str
    steps: int
    table: str
    sync_ms: float
    gpu_ms: float
    wall_ms: float

    @property
    def idle_fraction(self) -> float:
        return max(0.0, 1.0 - self.gpu_ms / self.wall_ms) if self.wall_ms > 0 else 0.0


def profile_gap(kind: str = "item", *, n: int = 256, steps: int = 50, rows: int = 8) -> ProfileGap:
    """Profiles ``steps`` steps (up to 1,000) with sync ``kind`` in each
    (one of :data:`SYNCS`); ``rows`` (1 to 50) rows of the table."""
    kind = _sync_arg([kind])[0]
    n = int_arg(n, "n", minimum=16, maximum=8192)
    steps = int_arg(steps, "steps", minimum=1, maximum=1000)
    rows = int_arg(rows, "rows", minimum=1, maximum=50)
    torch = require()
    from torch.profiler import ProfilerActivity, profile

    step, finish = _step_fn(torch, n, kind)
    for _ in range(10):
        step()
    finish()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        finish()
        wall_ms = (time.perf_counter() - t0) * 1e3
    avgs = prof.key_averages()
    sync_us = sum(e.self_cpu_time_total for e in avgs if "Synchronize" in e.key or "cudaMemcpy" in e.key)
    gpu_us = sum(_device_self_us(e) for e in avgs)
    table = avgs.table(sort_by="self_cpu_time_total", row_limit=rows)
    return ProfileGap(kind, steps, table, sync_us / 1e3, gpu_us / 1e3, wall_ms)


def _device_self_us(event: Any) -> float:
    """A profiler row's own GPU time (us); the attribute's name changed across torch versions."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        v = getattr(event, name, None)
        if v is not None:
            return float(v)
    return 0.0


__all__ = ["SYNCS", "ProfileGap", "SyncCosts", "profile_gap", "sync_costs"]
