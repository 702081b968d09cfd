"""Stragglers: a synchronous data-parallel step ends when its slowest
worker ends, so the step's typical time climbs toward one worker's tail as
workers are added.  Measured with real worker processes and a barrier on
this machine, then extrapolated by simulation to 8..1024 workers, with
backup workers (run W + k, wait for the first W) as the mitigation.

Times in ms.  Each worker's time per step is drawn from a
:class:`WorkerModel`; in the real run the worker *sleeps* that long (it
stands for compute that would have its own core or accelerator), so more
workers than cores still measure the synchronisation, not CPU contention.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from dataclasses import astuple, dataclass
from typing import Any

import numpy as np

from lowlat.core.validate import int_arg
from lowlat.train._args import probability_arg, real_arg

# The most worker-step draws one simulation makes (a steps x workers array).
MAX_DRAWS = 10**8
# A worker's base and slow times: at most a day (ms); a real run sleeps them.
MAX_MS = 86_400_000.0


@dataclass(frozen=True)
class WorkerModel:
    """One worker's time per step: lognormal around ``base_ms`` (shape
    ``sigma``), and with probability ``slow_prob`` an extra ``slow_ms`` (a
    GC pause, a noisy neighbour, a slow disk read)."""

    base_ms: float = 2.0
    sigma: float = 0.1
    slow_prob: float = 0.01
    slow_ms: float = 10.0

    def __post_init__(self) -> None:
        real_arg(self.base_ms, "base_ms", positive=True, maximum=MAX_MS)
        real_arg(self.sigma, "sigma", minimum=0.0, maximum=10.0)  # lognormal shape: e^(10 sigma) is already absurd
        real_arg(self.slow_ms, "slow_ms", minimum=0.0, maximum=MAX_MS)
        probability_arg(self.slow_prob, "slow_prob")

    def sample(self, rng: np.random.Generator, shape: Any) -> np.ndarray:
        """Per-step times (ms) of the given shape."""
        t = self.base_ms * rng.lognormal(0.0, self.sigma, shape)
        return t + (rng.random(shape) < self.slow_prob) * self.slow_ms

    def percentile(self, p: float, n: int = 200_000, seed: int = 99) -> float:
        """One worker's P``p`` (ms), estimated from ``n`` draws."""
        p = real_arg(p, "p", minimum=0.0, maximum=100.0)
        n = int_arg(n, "n", minimum=1, maximum=MAX_DRAWS)
        seed = int_arg(seed, "seed", minimum=0)
        return float(np.percentile(self.sample(np.random.default_rng(seed), n), p))


def slow_step_probability(workers: int, p: float) -> float:
    """P(at least one of ``workers`` independent workers is slow) = 1 - (1-p)^W."""
    workers = int_arg(workers, "workers", minimum=0, maximum=10**12)
    return 1.0 - (1.0 - probability_arg(p, "p")) ** workers


# ---- the real run ------------------------------------------------------------------------


def _sync_worker(
    rank: int, steps: int, model: tuple, seed: int, slow_factor: float, barrier: Any, out: Any, ready: Any
) -> None:
    """One worker process: each step, work (sleep) for its drawn time, then
    wait at the barrier.  Writes its own times (ms) to ``out[rank, :]``."""
    m = WorkerModel(*model)
    times = m.sample(np.random.default_rng([seed, rank]), steps) * slow_factor
    with ready.get_lock():
        ready.value += 1
    barrier.wait(60)  # every process started
    for s in range(steps):
        t0 = time.perf_counter()
        time.sleep(times[s] / 1e3)
        out[rank * steps + s] = (time.perf_counter() - t0) * 1e3
        barrier.wait(60)


@dataclass
class SyncRun:
    """A real synchronous run: ``worker_ms[w, s]`` each worker's work in step
    s, ``step_ms[s]`` the step as the coordinator saw it (barrier to barrier)."""

    worker_ms: np.ndarray
    step_ms: np.ndarray

    @property
    def slowest_ms(self) -> np.ndarray:
        return self.worker_ms.max(axis=0)

    @property
    def sync_overhead_ms(self) -> np.ndarray:
        """Step time beyond the slowest worker: the barrier's own cost."""
        return self.step_ms - self.slowest_ms


def run_sync_steps(
    workers: int = 4,
    steps: int = 100,
    model: WorkerModel = WorkerModel(),
    *,
    slow_worker: int | None = None,
    slow_factor: float = 1.0,
    seed: int = 0,
    timeout_s: float = 120.0,
) -> SyncRun:
    """Starts ``workers`` processes that do ``steps`` synchronous steps
    behind one barrier.  ``slow_worker`` (an index) has its times multiplied
    by ``slow_factor`` (an injected straggler)."""
    workers = int_arg(workers, "workers", minimum=1, maximum=256)
    steps = int_arg(steps, "steps", minimum=1, maximum=1_000_000)
    if not isinstance(model, WorkerModel):
        raise TypeError(f"model must be a WorkerModel, got {type(model).__name__}")
    if slow_worker is not None:
        int_arg(slow_worker, "slow_worker", minimum=0, maximum=workers - 1)
    slow_factor = real_arg(slow_factor, "slow_factor", positive=True, maximum=1000.0)
    # multiprocessing's waits refuse timeouts beyond ~24 days; a day is plenty.
    timeout_s = real_arg(timeout_s, "timeout_s", positive=True, maximum=86_400.0)
    ctx = mp.get_context("spawn")  # fork from a threaded kernel is unsafe; spawn works everywhere
    barrier = ctx.Barrier(workers + 1)
    out = ctx.Array("d", workers * steps, lock=False)
    ready = ctx.Value("i", 0)
    procs = [
        ctx.Process(
            target=_sync_worker,
            daemon=True,
            args=(w, steps, astuple(model), seed, slow_factor if w == slow_worker else 1.0, barrier, out, ready),
        )
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    step_ms = np.empty(steps)
    try:
        _wait_started(procs, ready, timeout_s)
        barrier.wait(timeout_s)
        t_prev = time.perf_counter()
        for s in range(steps):
            barrier.wait(timeout_s)
            now = time.perf_counter()
            step_ms[s] = (now - t_prev) * 1e3
            t_prev = now
    except BaseException as exc:
        barrier.abort()  # releases the workers still waiting
        if isinstance(exc, threading.BrokenBarrierError):
            raise RuntimeError(
                f"synchronous run failed: a worker did not reach the barrier within {timeout_s:g} s "
                "(it died or hung; its error, if any, is on stderr)"
            ) from exc
        raise
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.terminate()
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    if bad:
        raise RuntimeError(f"{len(bad)} worker process(es) failed (exit codes {bad})")
    return SyncRun(np.frombuffer(out, dtype=np.float64).reshape(workers, steps).copy(), step_ms)


def _wait_started(procs: list, ready: Any, timeout_s: float) -> None:
    """Waits until every worker has started; fails at once, and says why,
    if one died on the way (the usual cause: the spawn start method
    re-imports the main script, which must be a notebook, a module run with
    ``-m``, or a file guarded by ``if __name__ == "__main__":``)."""
    deadline = time.monotonic() + timeout_s
    while ready.value < len(procs):
        dead = [p.exitcode for p in procs if p.exitcode is not None]
        if dead:
            raise RuntimeError(
                f"a worker process exited during start-up (exit code {dead[0]}); its error is on stderr. Worker "
                "processes are spawned, which re-imports the main script: run from a notebook, with `python -m`, "
                'or from a file whose top-level code is under `if __name__ == "__main__":`'
            )
        if time.monotonic() > deadline:
            raise RuntimeError(f"worker processes did not start within {timeout_s:g} s")
        time.sleep(0.005)


# ---- the simulation ----------------------------------------------------------------------


def simulate_steps(
    workers: int, steps: int = 2000, model: WorkerModel = WorkerModel(), *, backups: int = 0, seed: int = 0
) -> np.ndarray:
    """Step times (ms) of ``workers`` synchronous workers: each step waits
    for the slowest.  With ``backups = k``, W + k workers run and the step
    proceeds when the first W have finished (the k slowest are dropped)."""
    workers = int_arg(workers, "workers", minimum=1, maximum=MAX_DRAWS)
    backups = int_arg(backups, "backups", minimum=0, maximum=MAX_DRAWS)
    steps = int_arg(steps, "steps", minimum=1, maximum=MAX_DRAWS)
    seed = int_arg(seed, "seed", minimum=0)
    if not isinstance(model, WorkerModel):
        raise TypeError(f"model must be a WorkerModel, got {type(model).__name__}")
    if steps * (workers + backups) > MAX_DRAWS:
        raise ValueError(
            f"steps x (workers + backups) = {steps * (workers + backups):,} draws; at most {MAX_DRAWS:,} "
            "(fewer steps or workers)"
        )
    draws = model.sample(np.random.default_rng([seed, workers, backups]), (steps, workers + backups))
    if backups == 0:
        return draws.max(axis=1)
    return np.partition(draws, workers - 1, axis=1)[:, workers - 1]


@dataclass
class FanOut:
    """Step-time percentiles (ms) against the number of workers."""

    workers: np.ndarray
    p50: np.ndarray
    p99: np.ndarray
    slow_share: np.ndarray  # fraction of steps that waited for a slow worker


def fan_out(
    workers: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    steps: int = 2000,
    model: WorkerModel = WorkerModel(),
    *,
    backups: int = 0,
    seed: int = 0,
) -> FanOut:
    """:func:`simulate_steps` for each worker count."""
    if isinstance(workers, (str, bytes)) or not hasattr(workers, "__iter__"):
        raise TypeError(f"workers must be a sequence of worker counts, got {type(workers).__name__} {workers!r}")
    workers = tuple(int_arg(w, "workers", minimum=1, maximum=MAX_DRAWS) for w in workers)
    if not workers:
        raise ValueError("workers must hold at least one worker count")
    if not isinstance(model, WorkerModel):
        raise TypeError(f"model must be a WorkerModel, got {type(model).__name__}")
    p50, p99, slow = [], [], []
    threshold = model.base_ms * np.exp(4 * model.sigma) + model.slow_ms / 2  # well above any non-slow draw
    for w in workers:
        s = simulate_steps(w, steps, model, backups=backups, seed=seed)
        p50.append(np.percentile(s, 50))
        p99.append(np.percentile(s, 99))
        slow.append(float(np.mean(s > threshold)))
    return FanOut(np.array(workers), np.array(p50), np.array(p99), np.array(slow))


__all__ = ["FanOut", "SyncRun", "WorkerModel", "fan_out", "run_sync_steps", "simulate_steps", "slow_step_probability"]
