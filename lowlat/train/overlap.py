"""Communication/compute overlap in a data-parallel step, with real threads.

A data-parallel step computes the gradients (the backward pass), then
all-reduces them across workers.  The gradients are cut into buckets; a
bucket is ready when the backward pass has produced its part, and its
all-reduce can start then, in the background, while backward goes on.  If a
share ``f`` of the communication runs behind compute, the step takes about

    step = max(compute, f x comm) + (1 - f) x comm          (:func:`predict_step_ms`)

that is ``compute + (1 - f) x comm`` while the hidden part fits inside
compute, and ``max(compute, comm)`` at full overlap.  The schedule run here
(:func:`schedule_step_ms`) is more exact: bucket ``i`` of ``B`` is ready
only after ``i/B`` of backward, so the last bucket's all-reduce always
starts after backward ends and one bucket's worth is never hidden.

The measured step (:func:`run_overlap`): backward is ``B`` chunks of numpy
matmuls (fixed work, calibrated to a duration, BLAS on one thread); after
chunk ``i``, if bucket ``i`` is one of the overlapped ones, a thread is
started that waits for the previous bucket (one link: transfers go one after
another) and then transfers it; the buckets not overlapped are transferred
by the main thread after backward.  A transfer is either

- ``"sleep"``: the thread sleeps for the bucket's time, standing for a
  network card or an interconnect moving the bytes by DMA while the CPU
  computes: it needs no CPU, so it overlaps even on one CPU; or
- ``"copy"``: the thread copies buffers with numpy (which releases the
  GIL) for the bucket's time, standing for an all-reduce the CPU does itself
  (reducing buffers in host memory): it needs a CPU of its own, so on one
  CPU it takes turns with backward and overlap cannot shorten the step.

Times in ms.  The threads are the caller's, started and joined per step.
"""

from __future__ import annotations

import os
import queue
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from lowlat.core.affinity import cpu_arg
from lowlat.core.blas import quiet_blas
from lowlat.core.validate import int_arg
from lowlat.method.interleave import interleave
from lowlat.train._args import probability_arg, real_arg

MODES = ("sleep", "copy")
FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
COPY_BYTES = 1 << 20  # one copy of the "copy" transfer: 1 MiB, short enough to calibrate finely
MAX_MODEL_MS = 1e12  # the models' times: 31 years, far beyond any step, and every sum stays finite


def predict_step_ms(compute_ms: float, comm_ms: float, fraction: float) -> float:
    """The simple overlap model (ms): a share ``fraction`` of the
    communication runs behind compute, the rest after it:
    ``max(compute, f x comm) + (1 - f) x comm``."""
    c = real_arg(compute_ms, "compute_ms", minimum=0.0, maximum=MAX_MODEL_MS)
    m = real_arg(comm_ms, "comm_ms", minimum=0.0, maximum=MAX_MODEL_MS)
    f = probability_arg(fraction, "fraction")
    return max(c, f * m) + (1.0 - f) * m


def overlapped_buckets(fraction: float, buckets: int) -> int:
    """How many of ``buckets`` are all-reduced behind compute for an overlap
    ``fraction``: it must be a whole number of buckets (k / buckets)."""
    f = probability_arg(fraction, "fraction")
    b = int_arg(buckets, "buckets", minimum=1, maximum=1024)
    k = round(f * b)
    if abs(k - f * b) > 1e-9:
        raise ValueError(f"fraction must be a multiple of 1/buckets = 1/{b}, got {fraction!r}")
    return k


def schedule_step_ms(compute_ms: float, comm_ms: float, fraction: float, buckets: int = 8) -> float:
    """The step time (ms) of the schedule :func:`run_overlap` runs: bucket
    ``i`` (1..B) is ready at ``i/B`` of compute; the first ``k = f x B``
    buckets start when ready (or when the link frees), the others after
    compute; one link, each bucket ``comm / B``."""
    c = real_arg(compute_ms, "compute_ms", minimum=0.0, maximum=MAX_MODEL_MS)
    m = real_arg(comm_ms, "comm_ms", minimum=0.0, maximum=MAX_MODEL_MS)
    k = overlapped_buckets(fraction, buckets)
    per = m / buckets
    link = 0.0  # when the link is next free
    for i in range(1, buckets + 1):
        ready = c * i / buckets if i <= k else c
        link = max(ready, link) + per
    return max(c, link)


# ---- the measured step -------------------------------------------------------------------


class _Backward:
    """Fixed work split in chunks: ``reps`` float64 matmuls of ``n x n`` per
    chunk, sized on this machine to take about ``chunk_ms``."""

    def __init__(self, chunk_ms: float) -> None:
        rng = np.random.default_rng(1)
        self.n = 192
        self._a = rng.random((self.n, self.n))
        self._b = rng.random((self.n, self.n))
        self._out = np.empty((self.n, self.n))
        one = _best_ms(self._one, 7)
        self.reps = max(1, round(chunk_ms / one))

    def _one(self) -> None:
        np.matmul(self._a, self._b, out=self._out)

    def chunk(self) -> None:
        for _ in range(self.reps):
            np.matmul(self._a, self._b, out=self._out)


class _Transfer:
    """One bucket's transfer: a sleep of ``bucket_ms``, or ``reps`` copies of
    :data:`COPY_BYTES` sized to take about ``bucket_ms`` on this machine."""

    def __init__(self, mode: str, bucket_ms: float) -> None:
        self.mode, self.bucket_ms = mode, bucket_ms
        self._src = np.ones(COPY_BYTES // 8)
        self._dst = np.empty_like(self._src)
        self.reps = 0
        if mode == "copy":
            one = _best_ms(self._one, 7)
            self.reps = max(1, round(bucket_ms / one))

    def _one(self) -> None:
        np.copyto(self._dst, self._src)

    def __call__(self) -> None:
        if self.mode == "sleep":
            time.sleep(self.bucket_ms / 1e3)
        else:
            for _ in range(self.reps):
                np.copyto(self._dst, self._src)


def _best_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3


class _Link:
    """The communication link: one thread that runs the transfers handed to
    it, one after the other (one link), and reports each one done.  Started
    and stopped by :func:`run_overlap`, which owns it."""

    def __init__(self, transfer: _Transfer) -> None:
        self._transfer = transfer
        self._todo: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[float, float]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="lowlat-allreduce", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self._todo.get():  # False: stop
            start = time.perf_counter()
            self._transfer()
            self._done.put((start, time.perf_counter()))

    def send(self) -> None:
        """Queues one bucket's transfer (returns at once)."""
        self._todo.put(True)

    def wait(self, n: int) -> list[tuple[float, float]]:
        """Waits for ``n`` transfers to finish; returns when each one ran
        (start, end; perf_counter seconds)."""
        return [self._done.get() for _ in range(n)]

    def close(self) -> None:
        self._todo.put(False)
        self._thread.join()


def _step(backward: _Backward, link: _Link, buckets: int, k: int, hidden_ms: list[float]) -> float:
    """One step (ms): backward in ``buckets`` chunks; bucket ``i``'s
    transfer queued on the link right after chunk ``i`` for the first ``k``
    buckets, the rest queued after backward; the step ends when the last
    transfer is through.  Appends to ``hidden_ms`` how long transfers ran
    while backward was still running (ms)."""
    t0 = time.perf_counter()
    for i in range(buckets):
        backward.chunk()
        if i < k:
            link.send()
    t_backward = time.perf_counter()
    for _ in range(buckets - k):
        link.send()
    spans = link.wait(buckets)
    t_end = time.perf_counter()
    hidden_ms.append(sum(max(0.0, min(end, t_backward) - start) for start, end in spans) * 1e3)
    return (t_end - t0) * 1e3


@contextmanager
def _on_cpu(cpu: int | None) -> Iterator[None]:
    """Within the block the calling thread, and every thread it starts, runs
    on ``cpu`` only (Linux: ``sched_setaffinity`` of the thread); the previous
    mask is restored after.  ``None``: no change."""
    if cpu is None:
        yield
        return
    if not hasattr(os, "sched_setaffinity"):
        raise RuntimeError("this OS cannot pin a thread to a CPU (no sched_setaffinity): run unpinned")
    old = os.sched_getaffinity(0)
    if cpu not in old:
        raise ValueError(f"cpu {cpu} is not one this process may use ({sorted(old)})")
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def can_pin() -> bool:
    """Whether :func:`run_overlap` can put its threads on one CPU here."""
    return hasattr(os, "sched_setaffinity")


@dataclass
class OverlapRun:
    """A measured sweep: per overlap fraction, the step time of each round
    (ms); ``compute_ms`` and ``comm_ms`` each round's backward alone and all
    buckets' transfers alone (same rounds, interleaved with the steps);
    ``hidden_ms`` per fraction and round, how long transfers ran while
    backward was still running (ms): 0 without overlap, by construction."""

    mode: str
    buckets: int
    cpu: int | None
    fractions: tuple[float, ...]
    step_ms: dict[float, list[float]]
    compute_ms: list[float]
    comm_ms: list[float]
    hidden_ms: dict[float, list[float]] = field(default_factory=dict)  # per round: transfer time inside backward
    threads_left: int = 0
    target_ms: tuple[float, float] = field(default=(0.0, 0.0))  # (compute, comm) the run was sized for

    @property
    def compute(self) -> float:
        """Backward alone (ms), median over rounds."""
        return statistics.median(self.compute_ms)

    @property
    def comm(self) -> float:
        """All buckets' transfers alone (ms), median over rounds."""
        return statistics.median(self.comm_ms)

    def median(self, fraction: float) -> float:
        return statistics.median(self.step_ms[fraction])

    def predicted(self, fraction: float) -> float:
        """:func:`predict_step_ms` from this run's compute and comm."""
        return predict_step_ms(self.compute, self.comm, fraction)

    def scheduled(self, fraction: float) -> float:
        """:func:`schedule_step_ms` from this run's compute and comm."""
        return schedule_step_ms(self.compute, self.comm, fraction, self.buckets)

    def serial(self) -> float:
        """compute + comm (ms): the step when nothing overlaps."""
        return self.compute + self.comm


def run_overlap(
    mode: str = "sleep",
    *,
    compute_ms: float = 24.0,
    comm_ms: float = 16.0,
    buckets: int = 8,
    fractions: Sequence[float] = FRACTIONS,
    rounds: int = 5,
    cpu: int | None = None,
) -> OverlapRun:
    """Measures the step at each overlap fraction, ``rounds`` interleaved
    rounds (with backward alone and the transfers alone in each round),
    after one warm-up step each.  ``cpu``: every thread of the run on that
    one CPU (Linux only).  About ``rounds x (len(fractions) + 2) x
    (compute + comm)`` ms."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    compute_ms = real_arg(compute_ms, "compute_ms", positive=True, maximum=10_000.0)
    comm_ms = real_arg(comm_ms, "comm_ms", positive=True, maximum=10_000.0)
    buckets = int_arg(buckets, "buckets", minimum=1, maximum=1024)
    rounds = int_arg(rounds, "rounds", minimum=1, maximum=1000)
    if isinstance(fractions, (str, bytes)) or not hasattr(fractions, "__iter__"):
        raise TypeError(f"fractions must be a sequence of overlap fractions, got {fractions!r}")
    fracs = tuple(probability_arg(f, "fraction") + 0.0 for f in fractions)  # + 0.0: -0.0 is 0.0
    if not fracs:
        raise ValueError("fractions must hold at least one overlap fraction")
    twice = sorted({f for f in fracs if fracs.count(f) > 1})
    if twice:  # one series per fraction: a repeated one would silently come back once
        raise ValueError(f"fractions must be distinct, got {twice[0]:g} more than once in {tuple(fractions)!r}")
    ks = {f: overlapped_buckets(f, buckets) for f in fracs}
    if cpu is not None:
        cpu = cpu_arg(cpu, "cpu")
    before = threading.active_count()
    with quiet_blas(), _on_cpu(cpu):
        backward = _Backward(compute_ms / buckets)
        transfer = _Transfer(mode, comm_ms / buckets)

        def alone_compute() -> float:
            t0 = time.perf_counter()
            for _ in range(buckets):
                backward.chunk()
            return (time.perf_counter() - t0) * 1e3

        link = _Link(transfer)
        try:

            def alone_comm() -> float:
                t0 = time.perf_counter()
                for _ in range(buckets):
                    link.send()
                link.wait(buckets)
                return (time.perf_counter() - t0) * 1e3

            variants: dict[str, Callable[[], float]] = {"compute": alone_compute, "comm": alone_comm}
            hidden: dict[float, list[float]] = {f: [] for f in fracs}
            for f in fracs:
                variants[repr(f)] = partial(_step, backward, link, buckets, ks[f], hidden[f])
            for fn in variants.values():
                fn()  # warm-up
            for h in hidden.values():
                h.clear()  # the warm-up's
            got = interleave(variants, rounds)
        finally:
            link.close()
    left = threading.active_count() - before
    return OverlapRun(
        mode,
        buckets,
        cpu,
        fracs,
        {f: got[repr(f)] for f in fracs},
        got["compute"],
        got["comm"],
        hidden,
        left,
        (compute_ms, comm_ms),
    )


__all__ = [
    "FRACTIONS",
    "MODES",
    "OverlapRun",
    "can_pin",
    "overlapped_buckets",
    "predict_step_ms",
    "run_overlap",
    "schedule_step_ms",
]
