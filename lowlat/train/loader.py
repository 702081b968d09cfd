"""Data loading, training's first hot path: a seeded data source with
heavy-tailed read times, a prefetching loader (a background producer and a
bounded queue), and one simulated epoch that measures how long the
accelerator sat idle waiting for data (its "bubbles").

Times are in seconds in the objects and in ms in the reports (their field
names say which).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from lowlat.core.stop import check
from lowlat.core.validate import int_arg
from lowlat.train._args import probability_arg, real_arg
from lowlat.train.prefetch import PrefetchLoader  # its own module, importable from here too

T = TypeVar("T")
MAX_READ_S = 60.0  # the longest one item's read sleeps (s)
MAX_SIGMA = 3.0  # the read times' lognormal shape


# ---- the data source ---------------------------------------------------------------


@dataclass(frozen=True)
class HeavyTailSource:
    """``n`` items whose read times are lognormal (median ``median_ms``,
    shape ``sigma``) plus, with probability ``stall_prob``, a stall of
    ``stall_ms`` (a cold cache, a slow disk, a remote store hiccup).  The
    schedule is fixed by ``seed``; reading item i sleeps its read time (a
    read waits, it does not compute) and returns ``np.full(item_len, i)``
    (float32), so order can be checked.  Map-style (``len``, ``[i]``) and
    iterable, so it also feeds ``torch.utils.data.DataLoader``."""

    n: int = 300
    median_ms: float = 1.0
    sigma: float = 0.5
    stall_prob: float = 0.02
    stall_ms: float = 20.0
    item_len: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        int_arg(self.n, "n", minimum=0, maximum=10**8)
        int_arg(self.item_len, "item_len", minimum=1, maximum=10**8)
        int_arg(self.seed, "seed", minimum=0)
        # A read sleeps its time: bounded so that no item can take more than a minute (MAX_READ_S, also
        # the cap of each drawn read time: a lognormal's tail is unbounded).  A shape above 3 puts a
        # draw in a thousand beyond e^(3 x 3.1) = 11,000 times the median: heavy enough for any lesson.
        real_arg(self.median_ms, "median_ms", minimum=0.0, maximum=60_000.0)
        real_arg(self.sigma, "sigma", minimum=0.0, maximum=MAX_SIGMA)
        real_arg(self.stall_ms, "stall_ms", minimum=0.0, maximum=60_000.0)
        probability_arg(self.stall_prob, "stall_prob")

    def read_times_s(self) -> np.ndarray:
        """Every item's read time (s), as the seed fixes them, each at most
        :data:`MAX_READ_S` (a minute)."""
        rng = np.random.default_rng(self.seed)
        base = self.median_ms * rng.lognormal(0.0, self.sigma, self.n) if self.median_ms > 0 else np.zeros(self.n)
        stalls = rng.random(self.n) < self.stall_prob
        return np.minimum((base + stalls * self.stall_ms) / 1e3, MAX_READ_S)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> np.ndarray:
        i = int_arg(i, "index", minimum=0, maximum=self.n - 1)
        time.sleep(float(self._times[i]))
        return np.full(self.item_len, i, dtype=np.float32)

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(self.n):
            yield self[i]

    @cached_property
    def _times(self) -> np.ndarray:
        return self.read_times_s()  # cached_property writes __dict__ directly, so frozen is no obstacle


# ---- the training loop, with a simulated accelerator -------------------------------------


class SimulatedStep:
    """A fixed-cost "accelerator step": one numpy matmul sized so that it
    takes about ``step_ms`` on this machine (calibrated once).  numpy
    releases the GIL inside the matmul, as a real training loop releases it
    while it waits for the device, so a loader thread runs meanwhile."""

    def __init__(self, step_ms: float = 2.0) -> None:
        # At most 10 s: the calibration runs the step some twenty times.
        self.step_ms = real_arg(step_ms, "step_ms", positive=True, maximum=10_000.0)
        n = 128
        for _ in range(4):  # FLOPs grow as n^3: rescale n from the measured time
            self._alloc(n)
            t = min(self._time_once() for _ in range(5))
            n = int(np.clip(n * (self.step_ms / 1e3 / t) ** (1 / 3), 16, 4096))
        self._alloc(n)
        self.n = n

    def _alloc(self, n: int) -> None:
        rng = np.random.default_rng(0)
        self._a = rng.random((n, n))
        self._b = rng.random((n, n))
        self._out = np.empty((n, n))

    def _time_once(self) -> float:
        t0 = time.perf_counter()
        self()
        return time.perf_counter() - t0

    def __call__(self, batch: Any = None) -> None:
        np.matmul(self._a, self._b, out=self._out)


@dataclass
class EpochStats:
    """One epoch of a training loop fed by a loader.  Per step: ``wait_ms``
    (the accelerator idle, waiting for data) and ``step_ms`` (wait + compute).
    ``bubble_fraction`` = total wait / epoch wall time."""

    depth: int
    steps: int
    epoch_s: float
    wait_ms: np.ndarray = field(repr=False)
    step_ms: np.ndarray = field(repr=False)

    @property
    def bubble_fraction(self) -> float:
        return float(self.wait_ms.sum() / 1e3 / self.epoch_s) if self.epoch_s > 0 else 0.0

    def percentiles(self) -> dict[str, float]:
        """Step time P50/P99/max in ms (NaN each for an epoch of no steps)."""
        s = self.step_ms
        if s.size == 0:
            return {"p50": math.nan, "p99": math.nan, "max": math.nan}
        return {"p50": float(np.percentile(s, 50)), "p99": float(np.percentile(s, 99)), "max": float(s.max())}


def train_epoch(source: Iterable[Any], depth: int, step: SimulatedStep, *, loader_cls: Any = None) -> EpochStats:
    """Runs one epoch: ``for batch in loader: step(batch)``, with the wait
    for each batch timed apart from the step.  ``loader_cls(source, depth)``
    defaults to :class:`PrefetchLoader` (the exercise passes its own).
    Inside :func:`lowlat.core.stop.stoppable`, Ctrl-C ends the epoch after
    the step in progress (:class:`lowlat.core.stop.Interrupted`)."""
    if not callable(step):
        raise TypeError(
            f"step must be callable (a SimulatedStep, or a function of one batch), got {type(step).__name__}"
        )
    depth = int_arg(depth, "depth", minimum=0, maximum=1_000_000)
    if loader_cls is not None and not callable(loader_cls):
        raise TypeError(f"loader_cls must be a class or function (source, depth) -> loader, got {loader_cls!r:.60}")
    cls = PrefetchLoader if loader_cls is None else loader_cls
    loader = cls(source, depth)
    waits: list[float] = []
    steps: list[float] = []
    t_start = time.perf_counter()
    it = iter(loader)
    try:
        while True:
            t0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            step(batch)
            t2 = time.perf_counter()
            waits.append(t1 - t0)
            steps.append(t2 - t0)
            check(f"training epoch stopped after {len(steps)} steps")
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    epoch_s = time.perf_counter() - t_start
    return EpochStats(int(depth), len(steps), epoch_s, np.array(waits) * 1e3, np.array(steps) * 1e3)


def depth_sweep(
    source: Iterable[Any], depths: Iterable[int], step: SimulatedStep, *, loader_cls: Any = None
) -> dict[int, EpochStats]:
    """One epoch per prefetch depth, in the order given."""
    if isinstance(depths, (str, bytes)) or not hasattr(depths, "__iter__"):
        raise TypeError(
            f"depths must be a sequence of prefetch depths (ints >= 0), got {type(depths).__name__} {depths!r}"
        )
    return {d: train_epoch(source, d, step, loader_cls=loader_cls) for d in depths}


def torch_epoch(
    source: HeavyTailSource, step: SimulatedStep, *, num_workers: int = 2, prefetch_factor: int = 2
) -> EpochStats | None:
    """The same epoch through ``torch.utils.data.DataLoader`` (``batch_size=
    None``: one item per step, workers reading ahead ``prefetch_factor``
    items each).  None when torch is not installed."""
    try:
        from torch.utils.data import DataLoader
    except ImportError:
        return None
    if not isinstance(source, HeavyTailSource):
        raise TypeError(f"source must be a HeavyTailSource, got {type(source).__name__}")
    num_workers = int_arg(num_workers, "num_workers", minimum=1, maximum=256)
    prefetch_factor = int_arg(prefetch_factor, "prefetch_factor", minimum=1, maximum=1024)

    def make(src: Any, depth: int) -> Any:
        return DataLoader(src, batch_size=None, num_workers=num_workers, prefetch_factor=prefetch_factor)

    return train_epoch(source, num_workers * prefetch_factor, step, loader_cls=make)


def depth_against_estimate(depths: Sequence[int], found: int, estimate: float) -> tuple[str, int, int]:
    """How the depth an epoch sweep found compares with the stall / step
    estimate, on the sweep's own grid (depths that double cannot land on an
    estimate of 7.8): ``"as predicted"`` when ``found`` is the first grid
    depth at or above the estimate or the next one up, ``"close"`` when it is
    one grid step beyond that window (either side), else ``"not"``.  Returns
    (grade, first depth at or above the estimate, the next one up); the two
    depths are the window's ends (the largest grid depth when the estimate
    is beyond the grid)."""
    if isinstance(depths, (str, bytes)) or not hasattr(depths, "__iter__"):
        raise TypeError(f"depths must be a sequence of prefetch depths, got {type(depths).__name__} {depths!r}")
    grid = sorted({int_arg(d, "depth", minimum=0) for d in depths})
    found = int_arg(found, "found", minimum=0)
    if not grid or found not in grid:
        raise ValueError(f"found must be one of the depths {grid}, got {found!r}")
    estimate = real_arg(estimate, "estimate", minimum=0.0)
    at = next((i for i, d in enumerate(grid) if d >= estimate), len(grid))
    i = grid.index(found)
    lo, hi = min(at, len(grid) - 1), min(at + 1, len(grid) - 1)
    grade = "as predicted" if at <= i <= at + 1 else "close" if i in (at - 1, at + 2) else "not"
    return grade, grid[lo], grid[hi]
