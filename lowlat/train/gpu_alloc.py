"""Chapter 06b, section 6: PyTorch's caching allocator.

Freed device memory goes back to torch's cache, not to the driver, and is
handed out again without a ``cudaMalloc``.  With varying sizes the cached
blocks split into pieces later requests do not fit: *reserved* memory (held
from the driver) grows past *allocated* memory (in live tensors).  Under a
memory cap the allocator then frees its cache and retries (counted in
``num_alloc_retries``), or fails "out of memory" although the free memory,
added up, would have been enough.  ``expandable_segments:True`` maps
memory into segments that grow instead, which keeps reserved near
allocated.  The setting is read when CUDA starts, once per process, so
each configuration runs in a child process of its own (:func:`compare`).
Sizes in MiB, times in ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

from lowlat.core.validate import int_arg
from lowlat.train.gpu import MIB, median, repeats_arg, require

CONFIGS = {"default": "", "expandable_segments": "expandable_segments:True"}


@dataclass(frozen=True)
class Churn:
    """One run of varying-size allocations: the peaks of reserved and
    allocated memory (MiB), the allocator's retries and the requests that
    failed out of memory, the driver's segments at the end, wall time."""

    config: str
    allocs: int
    live: int
    peak_reserved_mib: float
    peak_allocated_mib: float
    retries: int
    ooms: int
    segments: int
    ms: float

    @property
    def overhead(self) -> float:
        """Peak reserved / peak allocated: 1.0 means no memory held idle."""
        return self.peak_reserved_mib / self.peak_allocated_mib if self.peak_allocated_mib else float("nan")


def _args(allocs: int, live: int, min_mib: int, max_mib: int, cap_mib: int, seed: int) -> tuple[int, ...]:
    allocs = int_arg(allocs, "allocs", minimum=1, maximum=100_000)
    live = int_arg(live, "live", minimum=1, maximum=10_000)
    min_mib = int_arg(min_mib, "min_mib", minimum=1, maximum=4096)
    max_mib = int_arg(max_mib, "max_mib", minimum=min_mib, maximum=4096)
    cap_mib = int_arg(cap_mib, "cap_mib", minimum=0, maximum=1 << 20)
    seed = int_arg(seed, "seed", minimum=0)
    if live * max_mib > 64 * 1024:
        raise ValueError(f"live x max_mib must be <= 65,536 MiB (64 GiB held at once), got {live * max_mib:,}")
    return allocs, live, min_mib, max_mib, cap_mib, seed


def churn(
    allocs: int = 400, live: int = 40, *, min_mib: int = 1, max_mib: int = 63, cap_mib: int = 0, seed: int = 0
) -> Churn:
    """``allocs`` allocations of seeded random sizes from ``min_mib`` to
    ``max_mib`` MiB, at most ``live`` alive at once (the oldest freed
    first), in this process.  ``cap_mib`` > 0 caps this process's device
    memory (``set_per_process_memory_fraction``) so fragmentation shows as
    retries and out-of-memory failures (counted, not raised).  The cache is
    emptied and the peak statistics reset first."""
    allocs, live, min_mib, max_mib, cap_mib, seed = _args(allocs, live, min_mib, max_mib, cap_mib, seed)
    torch = require()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_stats().get("num_alloc_retries", 0)
    if cap_mib:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap_mib * MIB / total))
    sizes = np.random.default_rng(seed).integers(min_mib, max_mib + 1, size=allocs)
    held: list[object] = []
    ooms = 0
    t0 = time.perf_counter()
    try:
        for s in sizes:
            if len(held) >= live:
                held.pop(0)
            try:
                held.append(torch.empty(int(s) * MIB, dtype=torch.uint8, device="cuda"))
            except torch.cuda.OutOfMemoryError:
                ooms += 1
        torch.cuda.synchronize()
    finally:
        ms = (time.perf_counter() - t0) * 1e3
        stats = torch.cuda.memory_stats()
        held.clear()
        if cap_mib:
            torch.cuda.set_per_process_memory_fraction(1.0)
    cfg = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") or "default"
    return Churn(
        cfg,
        allocs,
        live,
        stats.get("reserved_bytes.all.peak", 0) / MIB,
        stats.get("allocated_bytes.all.peak", 0) / MIB,
        int(stats.get("num_alloc_retries", 0) - base),
        ooms,
        int(stats.get("segment.all.current", 0)),
        ms,
    )


def compare(
    allocs: int = 400,
    live: int = 40,
    *,
    min_mib: int = 1,
    max_mib: int = 63,
    cap_mib: int = 0,
    seed: int = 0,
    timeout_s: float = 120.0,
) -> dict[str, Churn]:
    """:func:`churn` in one child process per configuration of
    :data:`CONFIGS` (``PYTORCH_CUDA_ALLOC_CONF`` must be set before CUDA
    starts), same sizes; a child that fails raises RuntimeError with its last line of stderr."""
    args = _args(allocs, live, min_mib, max_mib, cap_mib, seed)
    if not (isinstance(timeout_s, (int, float)) and 1 <= timeout_s <= 3600):
        raise ValueError(f"timeout_s must be a number from 1 to 3600, got {timeout_s!r}")
    require()
    out = {}
    for name, conf in CONFIGS.items():
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        if not conf:
            env.pop("PYTORCH_CUDA_ALLOC_CONF")
        code = f"import json, dataclasses; from lowlat.train.gpu_alloc import churn; print(json.dumps(dataclasses.asdict(churn(*{args[:2]!r}, min_mib={args[2]}, max_mib={args[3]}, cap_mib={args[4]}, seed={args[5]}))))"
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout_s)
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or ["(no stderr)"])[-1]
            raise RuntimeError(f"the {name} child exited with {res.returncode}: {last}")
        data = json.loads(res.stdout.strip().splitlines()[-1])
        data["config"] = name
        out[name] = Churn(**data)
    return out


@dataclass(frozen=True)
class EmptyCache:
    """What ``torch.cuda.empty_cache()`` costs (ms, medians): the call
    itself with ``mib`` MiB cached, and the next allocation of that size
    after it (a ``cudaMalloc`` from the driver) against the same allocation
    served from the cache."""

    mib: int
    empty_ms: float
    alloc_after_empty_ms: float
    alloc_cached_ms: float

    @property
    def ratio(self) -> float:
        return self.alloc_after_empty_ms / self.alloc_cached_ms


def empty_cache_cost(mib: int = 1024, repeats: int = 5) -> EmptyCache:
    """``mib`` from 1 to 16,384; ``repeats`` up to 100."""
    mib = int_arg(mib, "mib", minimum=1, maximum=16_384)
    repeats = repeats_arg(repeats, maximum=100)
    torch = require()
    empty, fresh, cached = [], [], []

    def alloc() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        x = torch.empty(mib * MIB, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        del x
        return ms

    alloc()
    for _ in range(repeats):
        cached.append(alloc())  # the block freed by the last call is reused
        t0 = time.perf_counter()
        torch.cuda.empty_cache()
        empty.append((time.perf_counter() - t0) * 1e3)
        fresh.append(alloc())
    return EmptyCache(mib, median(empty), median(fresh), median(cached))


__all__ = ["CONFIGS", "Churn", "EmptyCache", "churn", "compare", "empty_cache_cost"]
