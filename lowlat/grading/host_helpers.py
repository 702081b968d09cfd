"""Objects the grader creates in the child to drive a learner's code (a
source that counts its reads, an epoch that times a loader).  Standard
library (and numpy, imported only when the epoch runs); copied with
``host.py`` into the child's folder, never imported by the grader.

They live in the learner's process, so a learner who sets out to can change
them: what a check must be sure of (how many threads the child runs) it
reads from the grader's side instead (``/proc/<pid>/task``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any


class SourceAborted(BaseException):
    """Raised by a CountingSource with ``fail_with="base"``: an exception that
    is not an Exception (as KeyboardInterrupt is not)."""


def broken_read(i: int, kind: str) -> None:
    """Where a CountingSource fails (the consumer's traceback must show it)."""
    if kind == "base":
        raise SourceAborted(f"source aborted at record {i}")
    raise ValueError(f"bad record {i}")


def broken_open() -> None:
    """Where a CountingSource with ``fail_on_iter`` fails: in ``iter()``."""
    raise OSError("the source could not be opened")


class CountingSource:
    """Yields 0, 1, 2, ... (``n`` items, or forever), counting its reads, the
    threads that read, whether a read is under way, and whether it was
    closed.  ``fail_at`` raises from :func:`broken_read`; ``slow_at`` makes
    that read take ``slow_s`` seconds; ``fail_on_iter`` makes ``iter()``
    itself raise (:func:`broken_open`)."""

    def __init__(
        self,
        n: int | None = None,
        fail_at: int | None = None,
        delay_s: float = 0.0,
        fail_with: str = "value",
        slow_at: int | None = None,
        slow_s: float = 0.0,
        fail_on_iter: bool = False,
    ) -> None:
        self.n, self.fail_at, self.delay_s, self.fail_with = n, fail_at, delay_s, fail_with
        self.slow_at, self.slow_s, self.fail_on_iter = slow_at, slow_s, fail_on_iter
        self.reads = 0
        self.iters = 0
        self.threads: set[int] = set()
        self.closed = False
        self.reading = False

    def __iter__(self) -> Iterator[int]:
        self.iters += 1
        if self.fail_on_iter:
            broken_open()
        return self._gen()

    def _gen(self) -> Iterator[int]:
        try:
            i = 0
            while self.n is None or i < self.n:
                if i == self.fail_at:
                    broken_read(i, self.fail_with)
                self.reading = True
                try:
                    self.reads += 1
                    self.threads.add(threading.get_ident())
                    if i == self.slow_at:
                        time.sleep(self.slow_s)
                    elif self.delay_s:
                        time.sleep(self.delay_s)
                finally:
                    self.reading = False
                yield i
                i += 1
        finally:
            self.closed = True


class ScheduledSource:
    """``len(read_times_s)`` items; reading item i sleeps ``read_times_s[i]``
    (a read waits, it does not compute) and gives ``np.full(item_len, i)``.
    The grader computes the schedule (chapter 06's heavy-tailed source)."""

    def __init__(self, read_times_s: list[float], item_len: int = 64) -> None:
        self.times = [float(t) for t in read_times_s]
        self.item_len = int(item_len)

    def __iter__(self) -> Iterator[Any]:
        import numpy as np

        for i, t in enumerate(self.times):
            time.sleep(t)
            yield np.full(self.item_len, i, dtype=np.float32)


class MatmulStep:
    """An "accelerator step" of about ``step_ms``: one numpy matmul, its size
    calibrated here (numpy releases the GIL in it, as a training loop does
    while it waits for the device)."""

    def __init__(self, step_ms: float = 2.0) -> None:
        import numpy as np

        self._np = np
        n = 128
        for _ in range(4):  # FLOPs grow as n^3: rescale n from the measured time
            self._alloc(n)
            t = min(self._time_once() for _ in range(5))
            n = int(min(4096, max(16, n * (step_ms / 1e3 / t) ** (1 / 3))))
        self._alloc(n)

    def _alloc(self, n: int) -> None:
        rng = self._np.random.default_rng(0)
        self._a, self._b = rng.random((n, n)), rng.random((n, n))
        self._out = self._np.empty((n, n))

    def _time_once(self) -> float:
        t0 = time.perf_counter()
        self()
        return max(time.perf_counter() - t0, 1e-9)

    def __call__(self, batch: Any = None) -> None:
        self._np.matmul(self._a, self._b, out=self._out)


def epoch_idle_share(loader_cls: Any, source: Any, depth: int, step: Any) -> float:
    """One epoch, ``for batch in loader_cls(source, depth): step(batch)``:
    the share of its wall time spent waiting for batches (0..1)."""
    waited = 0.0
    t_start = time.perf_counter()
    it = iter(loader_cls(source, depth))
    try:
        while True:
            t0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            waited += time.perf_counter() - t0
            step(batch)
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    total = time.perf_counter() - t_start
    return waited / total if total > 0 else 0.0


HELPERS: dict[str, Any] = {
    "CountingSource": CountingSource,
    "ScheduledSource": ScheduledSource,
    "MatmulStep": MatmulStep,
    "epoch_idle_share": epoch_idle_share,
}
