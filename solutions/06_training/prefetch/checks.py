"""Checks of the prefetch exercise, run one per process by
``lowlat.grading.pyharness``.  Every check is decided
by events and counters (what was read, on which thread, which threads are
alive), never by how long something took; waits are bounded polls with
generous limits."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from lowlat.grading.pyharness import refuses_reference

PATIENCE_S = 3.0  # how long a check waits for something that should happen at once


class Source:
    """Yields 0, 1, 2, ... (``n`` items, or forever), counting its reads and
    the threads that read; ``fail_at`` raises from :func:`broken_read`."""

    def __init__(self, n: int | None = None, fail_at: int | None = None, delay_s: float = 0.0) -> None:
        self.n, self.fail_at, self.delay_s = n, fail_at, delay_s
        self.reads = 0
        self.threads: set[int] = set()
        self.closed = False

    def __iter__(self) -> Iterator[int]:
        return self._gen()

    def _gen(self) -> Iterator[int]:
        try:
            i = 0
            while self.n is None or i < self.n:
                if i == self.fail_at:
                    broken_read(i)
                self.reads += 1
                self.threads.add(threading.get_ident())
                if self.delay_s:
                    time.sleep(self.delay_s)
                yield i
                i += 1
        finally:
            self.closed = True


def broken_read(i: int) -> None:
    raise ValueError(f"bad record {i}")


def _until(cond: Callable[[], bool], timeout_s: float = PATIENCE_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _no_thread_left(baseline: int) -> bool:
    return _until(lambda: threading.active_count() <= baseline)


def _leak(baseline: int) -> str:
    extra = [t.name for t in threading.enumerate()][baseline:]
    return f"{threading.active_count() - baseline} thread(s) still alive after {PATIENCE_S:g} s: {extra}"


def check_no_reference(mod: ModuleType, path: str) -> str | None:
    return refuses_reference(path, ["lowlat.train"], "write the loader yourself (the grader compares against it)")


def check_order(mod: ModuleType, path: str) -> str | None:
    for depth in (0, 1, 2, 5, 64):
        got = list(mod.PrefetchLoader(range(300), depth))
        if got != list(range(300)):
            bad = next((i for i, (a, b) in enumerate(zip(got, range(300))) if a != b), min(len(got), 300))
            return (
                f"depth={depth}: got {len(got)} items, expected 300 in order; first difference at position "
                f"{bad}: {got[bad : bad + 3]!r}"
            )
    if list(mod.PrefetchLoader([], 3)) != []:
        return "an empty source must give an empty loop"
    src = Source(20, delay_s=0.001)
    loader = mod.PrefetchLoader(src, 4)
    first, second = list(loader), list(loader)
    if first != list(range(20)) or second != list(range(20)):
        return f"iterating the same loader twice (two epochs) gave {len(first)} then {len(second)} items, not 20 and 20"
    return None


def check_depth0(mod: ModuleType, path: str) -> str | None:
    baseline = threading.active_count()
    src = Source(50)
    seen = []
    for x in mod.PrefetchLoader(src, 0):
        if threading.active_count() > baseline:
            return f"depth=0 started a thread ({threading.active_count() - baseline} more alive during the loop)"
        seen.append(x)
    if seen != list(range(50)):
        return f"depth=0 gave {seen[:5]}... ({len(seen)} items), expected 0..49 in order"
    if src.threads != {threading.get_ident()}:
        return "depth=0 must read on the caller's thread, but another thread read the source"
    return None


def check_bounded(mod: ModuleType, path: str) -> str | None:
    depth = 3
    src = Source()  # endless
    loader = mod.PrefetchLoader(src, depth)
    it = iter(loader)
    try:
        taken = 0
        for round_ in range(3):
            next(it)
            taken += 1
            if not _until(lambda: src.reads >= taken + depth):  # noqa: B023 - called right here
                return (
                    f"after the consumer took {taken} item(s), the producer read only {src.reads} in "
                    f"{PATIENCE_S:g} s: it should read ahead until {depth} items wait in the queue"
                )
            time.sleep(0.2)  # give an unbounded producer time to overshoot
            if src.reads > taken + depth + 1:
                return (
                    f"with depth={depth} the producer read {src.reads} items while the consumer had taken "
                    f"{taken}: at most {depth} may wait in the queue (+1 in the producer's hands)"
                )
            for _ in range(round_ + 1):
                next(it)
                taken += 1
        return None
    finally:
        close = getattr(it, "close", None)
        if close:
            close()
        loader.close()


def check_exception(mod: ModuleType, path: str) -> str | None:
    baseline = threading.active_count()
    for depth in (0, 2):
        got: list[int] = []
        try:
            for x in mod.PrefetchLoader(Source(10, fail_at=5), depth):
                got.append(x)
        except ValueError as exc:
            if str(exc) != "bad record 5":
                return f"depth={depth}: the ValueError says {str(exc)!r}, expected the source's 'bad record 5'"
            frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
            if "broken_read" not in frames:
                return (
                    f"depth={depth}: the exception reached the consumer without the source's traceback (frames: "
                    f"{frames}); raise the producer's exception object itself"
                )
        else:
            return f"depth={depth}: the source raised ValueError after 5 items, but the loop ended normally"
        if got != [0, 1, 2, 3, 4]:
            return f"depth={depth}: before the error the consumer must get 0..4, got {got}"
    if not _no_thread_left(baseline):
        return "after the exception: " + _leak(baseline)
    return None


def _stops(src: Source, baseline: int, how: str) -> str | None:
    if not _no_thread_left(baseline):
        return f"after {how}: " + _leak(baseline)
    reads = src.reads
    time.sleep(0.2)
    if src.reads != reads:
        return f"after {how} the producer kept reading ({src.reads - reads} more reads in 0.2 s)"
    if not src.closed:
        return f"after {how} the source's iterator was not closed (call its close() when the producer stops)"
    return None


def check_close(mod: ModuleType, path: str) -> str | None:
    baseline = threading.active_count()
    src = Source(delay_s=0.0005)  # endless
    loader = mod.PrefetchLoader(src, 2)
    it = iter(loader)
    got = [next(it) for _ in range(3)]
    if got != [0, 1, 2]:
        return f"the first three items were {got}, expected [0, 1, 2]"
    _until(lambda: src.reads >= 5)  # the producer is now blocked on a full queue
    loader.close()
    return _stops(src, baseline, "close()")


def check_break(mod: ModuleType, path: str) -> str | None:
    baseline = threading.active_count()
    src = Source(delay_s=0.0005)  # endless
    loader = mod.PrefetchLoader(src, 4)
    for x in loader:
        if x == 3:
            break
    return _stops(src, baseline, "an early break (without close())")


def check_bad_depth(mod: ModuleType, path: str) -> str | None:
    for bad, kinds in ((-1, (ValueError,)), (2.5, (TypeError, ValueError)), ("4", (TypeError, ValueError))):
        try:
            mod.PrefetchLoader(range(3), bad)
        except kinds:
            continue
        except Exception as exc:  # any other exception is the wrong one
            return f"depth={bad!r} raised {type(exc).__name__}, expected {' or '.join(k.__name__ for k in kinds)}"
        return f"depth={bad!r} was accepted; refuse it with {kinds[0].__name__}"
    return None


def timing(mod: ModuleType, path: str) -> str | None:
    """Reported, never graded: the accelerator's idle share without and with
    the learner's prefetching."""
    from lowlat.train.loader import HeavyTailSource, SimulatedStep, train_epoch

    src, step = HeavyTailSource(n=200), SimulatedStep(2.0)
    for depth in (0, 16):
        stats = train_epoch(src, depth, step, loader_cls=mod.PrefetchLoader)
        print(f"INFO idle_percent_depth{depth}={stats.bubble_fraction * 100:.2f}")
    return None


CHECKS: dict[str, Callable[[ModuleType, str], Any]] = {
    "no_reference": check_no_reference,
    "order": check_order,
    "depth0": check_depth0,
    "bounded": check_bounded,
    "exception": check_exception,
    "close": check_close,
    "break": check_break,
    "bad_depth": check_bad_depth,
    "timing": timing,
}
