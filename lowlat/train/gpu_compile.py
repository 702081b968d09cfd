"""Chapter 06b, section 5: dynamic shapes under ``torch.compile``.

A small model (linear, GELU, linear over a sequence) is compiled and fed
batches whose sequence length varies.  Compiles are counted by the backend
itself: ``torch.compile`` hands each graph it captures (a first compile or
a recompile after a guard on a shape failed) to its backend, and the
backend here counts the call and passes the graph on to inductor, the
default.  Four policies:

- ``"static"`` (``dynamic=False``): one compile per distinct length;
- ``"automatic"`` (torch's default): a compile for the first length, a
  recompile with the length marked dynamic at the second, then none;
- ``"bucketed"``: lengths padded up to the next bucket, ``dynamic=False``:
  one compile per bucket used;
- ``"mark_dynamic"``: ``torch._dynamo.mark_dynamic`` on the length before
  the first call: one compile, shape-generic.

Times: ms per call (host wall clock with a synchronize: a call that
compiles takes the compile's time).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core.validate import int_arg
from lowlat.train.gpu import require

POLICIES = ("static", "automatic", "bucketed", "mark_dynamic")
BUCKETS = (64, 128, 256)
LENGTHS = (37, 64, 91, 128, 150, 200)  # six distinct lengths: under dynamo's default limit of 8 per function
MAX_LENGTH = 4096


class CountingBackend:
    """A ``torch.compile`` backend that counts the graphs it is given and
    compiles each with ``inner`` (inductor by default)."""

    def __init__(self, inner: str = "inductor") -> None:
        self.compiles = 0
        self.inner = inner

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.compiles += 1
        torch = require()
        return torch._dynamo.lookup_backend(self.inner)(gm, example_inputs)


@dataclass
class CompileRun:
    """One policy's run: ``calls_ms`` per call in order, the ``lengths`` fed
    (before padding), ``compiles`` counted, ``first_ms``: for each call that
    compiled, its time."""

    policy: str
    lengths: list[int]
    calls_ms: np.ndarray = field(repr=False)
    compiles: int
    first_ms: list[float]
    buckets: tuple[int, ...] = ()

    def percentiles(self) -> dict[str, float]:
        s = self.calls_ms
        return {"p50": float(np.percentile(s, 50)), "p99": float(np.percentile(s, 99)), "max": float(s.max())}

    @property
    def buckets_used(self) -> int:
        return len({bucket_of(n, self.buckets) for n in self.lengths}) if self.buckets else 0


def bucket_of(length: int, buckets: Sequence[int]) -> int:
    """The smallest bucket >= ``length``; ValueError if none is."""
    for b in sorted(buckets):
        if b >= length:
            return int(b)
    raise ValueError(f"length {length} is longer than the largest bucket {max(buckets)}: add a bucket or truncate")


def _lengths_arg(lengths: Any, name: str) -> list[int]:
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise TypeError(f"{name} must be a sequence of sequence lengths, got {type(lengths).__name__} {lengths!r}")
    out = [int_arg(n, name[:-1], minimum=1, maximum=MAX_LENGTH) for n in lengths]
    if not out:
        raise ValueError(f"{name} must name at least one length")
    return out


def run_policy(
    policy: str,
    lengths: Sequence[int] = LENGTHS,
    *,
    calls: int = 60,
    buckets: Sequence[int] = BUCKETS,
    batch: int = 8,
    width: int = 256,
    seed: int = 0,
) -> CompileRun:
    """``calls`` calls (1 to 10,000) of the compiled model under ``policy``
    (one of :data:`POLICIES`), each on a batch of ``batch`` sequences of a
    length drawn (seeded) from ``lengths`` (at most 8 distinct, each 1 to
    4,096; every length is used once before any repeats, so each shape's
    first call is seen), hidden ``width`` (16 to 4,096).  dynamo's caches
    are reset first, so each run starts cold."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    ls = _lengths_arg(lengths, "lengths")
    if len(set(ls)) > 8:
        raise ValueError(f"lengths may hold at most 8 distinct lengths (dynamo's recompile limit), got {len(set(ls))}")
    bs = tuple(sorted(set(_lengths_arg(buckets, "buckets")))) if policy == "bucketed" else ()
    if policy == "mark_dynamic" and min(ls) < 2:
        raise ValueError(f"lengths must be >= 2 under mark_dynamic (torch specialises sizes 0 and 1), got {min(ls)}")
    if bs:
        for n in ls:
            bucket_of(n, bs)
    calls = int_arg(calls, "calls", minimum=1, maximum=10_000)
    batch = int_arg(batch, "batch", minimum=1, maximum=1024)
    width = int_arg(width, "width", minimum=16, maximum=4096)
    seed = int_arg(seed, "seed", minimum=0)
    torch = require()
    rng = np.random.default_rng(seed)
    distinct = sorted(set(ls))
    order = list(rng.permutation(distinct)) + list(rng.choice(ls, size=max(0, calls - len(distinct))))
    order = [int(n) for n in order[:calls]]

    torch._dynamo.reset()
    g = torch.Generator(device="cuda").manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))
    model = model.to("cuda")
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, dynamic=False if policy in ("static", "bucketed") else None)
    times, first = [], []
    with torch.no_grad():
        for n in order:
            padded = bucket_of(n, bs) if bs else n
            x = torch.randn(batch, padded, width, device="cuda", generator=g)
            if policy == "mark_dynamic":
                torch._dynamo.mark_dynamic(x, 1)
            before = backend.compiles
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            compiled(x)
            torch.cuda.synchronize()
            ms = (time.perf_counter() - t0) * 1e3
            times.append(ms)
            if backend.compiles > before:
                first.append(ms)
    return CompileRun(policy, order, np.array(times), backend.compiles, first, bs)


def compare(
    lengths: Sequence[int] = LENGTHS, *, calls: int = 60, policies: Sequence[str] = POLICIES, **kw: Any
) -> dict[str, CompileRun]:
    """:func:`run_policy` for each of ``policies`` on the same lengths."""
    if isinstance(policies, str) or not hasattr(policies, "__iter__"):
        raise TypeError(f"policies must be a sequence of names from {POLICIES}, got {policies!r}")
    bad = [p for p in policies if p not in POLICIES]
    if bad or not list(policies):
        raise ValueError(f"policies must name at least one of {POLICIES}, got {bad or 'none'}")
    return {p: run_policy(p, lengths, calls=calls, **kw) for p in policies}


__all__ = ["BUCKETS", "LENGTHS", "POLICIES", "CompileRun", "CountingBackend", "bucket_of", "compare", "run_policy"]
