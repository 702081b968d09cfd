"""Checks of the prefetch exercise.  They run in the grader's process (see
``lowlat.grading.pyharness``); the learner's loader runs in a child, and the
checks drive it there step by step over the pipe: they create the source in
the child (the host's ``CountingSource``, which counts its reads and
the threads that read, says whether a read is under way and whether it was
closed), call the loader, take one item at a time with ``next``, and count
the child's threads.  Every check is decided by events and counters (what was
read, on which thread, which threads are alive), never by how long something
took; waits are bounded polls with generous limits."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lowlat.grading.pyharness import Learner, LearnerRaised, LearnerStopped, Remote, no_reference

FORBIDDEN = ["lowlat.train"]
ADVICE = "write the loader yourself (the grader compares against it)"
PATIENCE_S = 3.0  # how long a check waits for something that should happen at once


def _until(cond: Callable[[], bool], timeout_s: float = PATIENCE_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _no_thread_left(mod: Learner, baseline: int) -> bool:
    return _until(lambda: mod.threads() <= baseline)


def _leak(mod: Learner, baseline: int) -> str:
    extra = mod.threads() - baseline  # the kernel's count; the names are what the child says
    return f"{extra} thread(s) still alive after {PATIENCE_S:g} s (the child's threads: {mod.thread_names()})"


def _close(it: Any) -> None:
    close = getattr(it, "close", None)
    if close is not None:
        close()


def check_no_reference(mod: Learner, path: str) -> str | None:
    return no_reference(mod, path, FORBIDDEN, ADVICE)


def check_order(mod: Learner, path: str) -> str | None:
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
    src = mod.helper("CountingSource", 20, delay_s=0.001)
    loader = mod.PrefetchLoader(src, 4)
    first, second = list(loader), list(loader)
    if first != list(range(20)) or second != list(range(20)):
        return f"iterating the same loader twice (two epochs) gave {len(first)} then {len(second)} items, not 20 and 20"
    return None


def check_depth0(mod: Learner, path: str) -> str | None:
    baseline = mod.threads()
    src = mod.helper("CountingSource", 50)
    seen = []
    for x in mod.PrefetchLoader(src, 0):
        if mod.threads() > baseline:
            return f"depth=0 started a thread ({mod.threads() - baseline} more alive during the loop)"
        seen.append(x)
    if seen != list(range(50)):
        return f"depth=0 gave {seen[:5]}... ({len(seen)} items), expected 0..49 in order"
    if src.threads != {mod.main_thread()}:
        return "depth=0 must read on the caller's thread, but another thread read the source"
    return None


def check_bounded(mod: Learner, path: str) -> str | None:
    for depth in (1, 3):
        src = mod.helper("CountingSource")  # endless
        loader = mod.PrefetchLoader(src, depth)
        it = iter(loader)
        try:
            taken = 0
            for round_ in range(3):
                it.next()
                taken += 1
                if not _until(lambda: src.reads >= taken + depth):  # noqa: B023 - called right here
                    return (
                        f"depth={depth}: after the consumer took {taken} item(s), the producer read only "
                        f"{src.reads} in {PATIENCE_S:g} s: it should read ahead until {depth} items wait in the queue"
                    )
                time.sleep(0.2)  # give an unbounded producer time to overshoot
                reads = src.reads
                if reads > taken + depth + 1:
                    return (
                        f"with depth={depth} the producer read {reads} items while the consumer had taken "
                        f"{taken}: at most {depth} may wait in the queue (+1 in the producer's hands; note that "
                        "queue.Queue(maxsize=0) has no bound at all)"
                    )
                for _ in range(round_ + 1):
                    it.next()
                    taken += 1
        finally:
            _close(it)
            loader.close()
    return None


def _exception_case(mod: Learner, depth: int, fail_with: str) -> str | None:
    what = "ValueError" if fail_with == "value" else "SourceAborted (a BaseException, not an Exception)"
    src = mod.helper("CountingSource", 10, fail_at=5, fail_with=fail_with)
    it = iter(mod.PrefetchLoader(src, depth))
    got: list[int] = []
    while True:
        try:
            got.append(it.next(timeout_s=PATIENCE_S))
        except StopIteration:
            return f"depth={depth}: the source raised {what} after 5 items, but the loop ended normally"
        except LearnerStopped:
            return (
                f"depth={depth}: after the source raised {what} at item 5 the consumer waited {PATIENCE_S:g} s "
                f"for the next item and got nothing (it had {got}): the producer must hand every exception to "
                "the consumer (catch BaseException, not only Exception)"
            )
        except LearnerRaised as exc:
            expected = "ValueError" if fail_with == "value" else "SourceAborted"
            message = "bad record 5" if fail_with == "value" else "source aborted at record 5"
            if exc.type_name != expected or str(exc) != message:
                return (
                    f"depth={depth}: the consumer got {exc.type_name}({str(exc)!r}), expected the source's own "
                    f"{expected}({message!r})"
                )
            if "broken_read" not in exc.frames:
                return (
                    f"depth={depth}: the exception reached the consumer without the source's traceback (frames: "
                    f"{exc.frames}); raise the producer's exception object itself"
                )
            break
    if got != [0, 1, 2, 3, 4]:
        return f"depth={depth}: before the error the consumer must get 0..4, got {got}"
    return None


def _iter_raises(mod: Learner, depth: int) -> str | None:
    """The source's ``iter()`` itself raises: the consumer must get that
    exception (from ``iter(loader)`` or its first ``next``)."""
    src = mod.helper("CountingSource", 10, fail_on_iter=True)
    try:
        it = iter(mod.PrefetchLoader(src, depth))
        got = it.next(timeout_s=PATIENCE_S)
    except LearnerRaised as exc:
        if exc.type_name != "OSError" or "broken_open" not in exc.frames:
            return (
                f"depth={depth}: iter(source) raised OSError('the source could not be opened'), but the consumer "
                f"got {exc.type_name}({str(exc)!r}) without it"
            )
        return None
    except StopIteration:
        return (
            f"depth={depth}: iter(source) itself raised OSError, and the loop ended normally: an exception from "
            "iter(source), not only from next(), must reach the consumer"
        )
    except LearnerStopped:
        return (
            f"depth={depth}: iter(source) itself raised OSError, and the consumer waited {PATIENCE_S:g} s for "
            "nothing: an exception from iter(source), not only from next(), must reach the consumer"
        )
    return f"depth={depth}: iter(source) raised OSError, but the consumer got an item ({got!r})"


def check_exception(mod: Learner, path: str) -> str | None:
    baseline = mod.threads()
    for fail_with in ("value", "base"):
        for depth in (0, 2):
            problem = _exception_case(mod, depth, fail_with)
            if problem:
                return problem
    for depth in (0, 2):
        problem = _iter_raises(mod, depth)
        if problem:
            return problem
    if not _no_thread_left(mod, baseline):
        return "after the exception: " + _leak(mod, baseline)
    return None


def _stops(mod: Learner, src: Remote, baseline: int, how: str) -> str | None:
    gone = _no_thread_left(mod, baseline)
    reads = src.reads
    time.sleep(0.2)
    if src.reads != reads:
        return f"after {how} the producer kept reading ({src.reads - reads} more reads in 0.2 s)"
    if not gone:
        return f"after {how}: " + _leak(mod, baseline)
    if not src.closed:
        return f"after {how} the source's iterator was not closed (call its close() when the producer stops)"
    return None


def check_close(mod: Learner, path: str) -> str | None:
    baseline = mod.threads()
    src = mod.helper("CountingSource", delay_s=0.0005)  # endless
    loader = mod.PrefetchLoader(src, 2)
    it = iter(loader)
    got = [it.next() for _ in range(3)]
    if got != [0, 1, 2]:
        return f"the first three items were {got}, expected [0, 1, 2]"
    # The producer fills the queue (2) and holds one more: 6 reads, then it
    # blocks on put().  close() must not let it read a 7th.
    _until(lambda: src.reads >= 6)
    time.sleep(0.1)
    blocked_at = src.reads
    loader.close()
    problem = _stops(mod, src, baseline, "close()")
    if problem:
        return problem
    if src.reads > blocked_at:
        return (
            f"the producer was blocked on a full queue after {blocked_at} reads; close() let it read "
            f"{src.reads - blocked_at} more item(s): after close() the producer must not read again (check the stop "
            "flag before every read)"
        )
    # close() must wait for the thread: call it while the producer is in the
    # middle of a slow read (item 2 takes 0.5 s); when close() returns, the
    # thread must be gone.
    src = mod.helper("CountingSource", slow_at=2, slow_s=1.0)
    loader = mod.PrefetchLoader(src, 2)
    it = iter(loader)
    it.next()
    if not _until(lambda: src.reading and src.reads == 3):
        return "the producer never started reading item 2 while the consumer held item 0"
    loader.method("close", timeout_s=PATIENCE_S + 2)
    # The kernel's count (not the learner's threading module); a joined
    # thread's last instructions take microseconds, the slow read most of a second.
    if not _until(lambda: mod.threads() <= baseline, 0.2):
        return (
            "close() returned while the producer's thread was still running (it was reading an item): close() "
            "must wait for the thread to end (join it)"
        )
    return None


def check_break(mod: Learner, path: str) -> str | None:
    baseline = mod.threads()
    src = mod.helper("CountingSource", delay_s=0.0005)  # endless
    loader = mod.PrefetchLoader(src, 4)
    for x in loader:
        if x == 3:
            break
    return _stops(mod, src, baseline, "an early break (without close())")


def check_bad_depth(mod: Learner, path: str) -> str | None:
    for bad, kinds in ((-1, (ValueError,)), (2.5, (TypeError, ValueError)), ("4", (TypeError, ValueError))):
        try:
            mod.PrefetchLoader(range(3), bad)
        except kinds:
            continue
        except LearnerRaised as exc:  # any other exception is the wrong one
            return f"depth={bad!r} raised {exc.type_name}, expected {' or '.join(k.__name__ for k in kinds)}"
        return f"depth={bad!r} was accepted; refuse it with {kinds[0].__name__}"
    return None


def timing(mod: Learner, path: str) -> dict[str, float]:
    """Reported, never graded: the accelerator's idle share without and with
    the learner's prefetching (chapter 06's heavy-tailed source, its schedule
    computed here; the epoch runs in the child, by the host's helpers)."""
    from lowlat.train.loader import HeavyTailSource

    cls = mod.get("PrefetchLoader")
    times = HeavyTailSource(n=200).read_times_s().tolist()
    src, step = mod.helper("ScheduledSource", times), mod.helper("MatmulStep", 2.0)
    out = {}
    for depth in (0, 16):
        share = mod.helper("epoch_idle_share", cls, src, depth, step)
        out[f"idle_percent_depth{depth}"] = float(share) * 100
    return out


CHECKS: dict[str, Callable[[Any, str], Any]] = {
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
