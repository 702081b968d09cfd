"""Data loading, training's first hot path: a seeded data source with
heavy-tailed read times, a prefetching loader (a background producer and a
bounded queue), and one simulated epoch that measures how long the
accelerator sat idle waiting for data (its "bubbles").

Times are in seconds in the objects and in ms in the reports (their field
names say which).
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

import numpy as np

from lowlat.core.stop import check
from lowlat.core.validate import int_arg
from lowlat.train._args import probability_arg, real_arg

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


# ---- the loader ----------------------------------------------------------------------

_ITEM, _END, _ERROR = 0, 1, 2


class _Pass:
    """One pass (epoch) of a :class:`PrefetchLoader`: its producer's stop,
    queue and thread, and, once it has ended, why."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.queue: queue.Queue | None = None
        self.thread: threading.Thread | None = None
        self.ended: str | None = None

    def check(self) -> None:
        if self.ended is not None:
            raise RuntimeError(
                f"this pass over the PrefetchLoader has ended: {self.ended}; "
                "start a new pass with iter(loader) (or a new for loop)"
            )


class PrefetchLoader(Generic[T]):
    """Iterates ``iterable`` in order while a background thread reads up to
    ``depth`` items ahead into a bounded queue.

    - ``depth=0``: no thread; items are read on the caller's thread.
    - An exception raised by the source reaches the consumer at the point in
      the stream where it happened, as the same exception object (its
      traceback still shows the source's frames).
    - ``close()``, leaving a ``with`` block, or breaking out of a ``for``
      loop stops the producer: it reads no further item once it sees the
      stop (it finishes the read it is in) and its thread ends.
    - Each ``iter()`` starts a fresh pass (an epoch) and ends the previous one:
      one pass at a time.  An iterator whose pass has ended (``close()``, the
      end of a ``with`` block, a newer ``iter()``) raises RuntimeError when
      asked for more, rather than skip items or wait forever.

    Counters (read them after a pass): ``produced`` items read from the
    source, ``consumed`` items handed out, ``wait_s`` seconds the consumer
    spent blocked waiting for an item.
    """

    def __init__(self, iterable: Iterable[T], depth: int = 2) -> None:
        self.depth = int_arg(depth, "depth", minimum=0, maximum=1_000_000)
        if not hasattr(iterable, "__iter__") and not hasattr(iterable, "__getitem__"):
            raise TypeError(
                f"PrefetchLoader reads an iterable (a dataset, a list, a generator), got {type(iterable).__name__}"
            )
        self._iterable = iterable
        self._pass: _Pass | None = None
        self.produced = 0
        self.consumed = 0
        self.wait_s = 0.0

    def __iter__(self) -> Iterator[T]:
        self._end(self._pass, "a newer iter() over the same loader started another pass (one pass at a time)")
        self.produced = self.consumed = 0
        self.wait_s = 0.0
        run = self._pass = _Pass()
        return self._inline(run) if self.depth == 0 else self._prefetched(run)

    def _inline(self, run: _Pass) -> Iterator[T]:
        it = iter(self._iterable)
        while True:
            run.check()
            t0 = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                self.wait_s += time.perf_counter() - t0
            self.produced += 1
            self.consumed += 1
            yield item

    def _prefetched(self, run: _Pass) -> Iterator[T]:
        q: queue.Queue = queue.Queue(maxsize=self.depth)
        t = threading.Thread(target=self._produce, args=(q, run.stop), name="lowlat-prefetch", daemon=True)
        run.queue, run.thread = q, t
        t.start()
        try:
            while True:
                t0 = time.perf_counter()
                kind, payload = _get(q, run)  # raises if the pass was ended meanwhile (close(), a newer iter())
                self.wait_s += time.perf_counter() - t0
                if kind == _END:
                    return
                if kind == _ERROR:
                    raise payload
                self.consumed += 1
                yield payload
        finally:
            self._end(run, "it ended")

    def _produce(self, q: queue.Queue, stop: threading.Event) -> None:
        it: Iterator[Any] | None = None
        try:
            it = iter(self._iterable)
            while not stop.is_set():
                try:
                    item = next(it)
                except StopIteration:
                    _put(q, (_END, None), stop)
                    return
                self.produced += 1
                if not _put(q, (_ITEM, item), stop):
                    return
        except BaseException as exc:
            _put(q, (_ERROR, exc), stop)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()  # a generator source runs its own cleanup, here, in this thread

    def close(self, timeout_s: float = 5.0) -> None:
        """Ends the current pass: stops the producer and waits up to
        ``timeout_s`` for its thread to end (a warning says so if the
        source's read outlasts that).  Its iterator then raises RuntimeError;
        ``iter()`` starts a new pass."""
        timeout_s = real_arg(timeout_s, "timeout_s", minimum=0.0, maximum=86_400.0)
        self._end(self._pass, "the loader was closed (close(), or the end of its with block)", timeout_s)

    def _end(self, run: _Pass | None, reason: str, timeout_s: float = 5.0) -> None:
        """Ends ``run`` (a no-op if it has ended already), saying why."""
        if run is None or run.ended is not None:
            return
        run.ended = reason
        run.stop.set()
        t, q = run.thread, run.queue
        if q is not None:
            _drain(q)  # unblocks a producer waiting on a full queue
        if t is not None and t is not threading.current_thread():
            t.join(timeout_s)
            if t.is_alive():
                warnings.warn(
                    f"PrefetchLoader: the producer is still inside a read after {timeout_s:g} s; "
                    "it will stop when that read returns",
                    RuntimeWarning,
                    stacklevel=3,
                )

    @property
    def running(self) -> bool:
        """True while a producer thread is alive."""
        run = self._pass
        return run is not None and run.thread is not None and run.thread.is_alive()

    def __enter__(self) -> PrefetchLoader[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: nothing left to report to
            self.close(timeout_s=0.5)


def _put(q: queue.Queue, msg: tuple[int, Any], stop: threading.Event) -> bool:
    """Blocking put that gives up when ``stop`` is set; True if it was put."""
    while not stop.is_set():
        try:
            q.put(msg, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _get(q: queue.Queue, run: _Pass) -> tuple[int, Any]:
    """Blocking get that raises (``run.check()``) once ``run`` has ended."""
    while True:
        run.check()
        try:
            return q.get(timeout=0.05)
        except queue.Empty:
            continue


def _drain(q: queue.Queue) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


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
