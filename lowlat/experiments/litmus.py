"""Hardware reordering caught in the act (chapter 03b), run by
``csrc/bench/lesson_litmus.c``, and the seqlock's retries exercised.

- :func:`store_buffering`: the Dekker test, A: ``x = 1; r1 = y``, B:
  ``y = 1; r2 = x``.  ``r1 == r2 == 0`` means each load ran before the other
  thread's store was visible: the stores waited in the store buffers.  x86
  and ARM both show it with relaxed orders, and with release/acquire (a
  release store orders only what comes *before* it); seq_cst forbids it.
  A 2-vCPU VM: 277 of 2,000,000 trials relaxed, 0 of 2,000,000 seq_cst.
- :func:`message_passing`: A: ``data = 1; flag = 1``, B: ``r1 = flag;
  r2 = data``; ``r1 == 1, r2 == 0`` means the flag arrived before the data.
  Only a weakly ordered CPU (ARM) can show it, with relaxed orders;
  release/acquire forbids it.  On x86 (stores leave in order, loads are kept
  in order) the expected count is 0 for both.
- :func:`seqlock_lesson`: the seqlock demo with both sides stretched so the
  reader overlaps the writer: the correct reader's retries, the unchecked
  reader's torn snapshots.

On one CPU the two threads take turns, and a context switch drains the
store buffer: no reordering is expected (``cpus_used`` says which case ran).
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass, field

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_pair, usable_cpus
from lowlat.core.argcheck import real_arg
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.validate import int_arg
from lowlat.core.wait import wait_code
from lowlat.experiments.memory_orders import SeqlockRun, seqlock_demo
from lowlat.machine.placement import bench_cpus, default_wait
from lowlat.method.interleave import interleave
from lowlat.method.readings import conditions

TESTS = {"store_buffering": 0, "message_passing": 1}
ORDERS = {"relaxed": 0, "acq_rel": 1, "seq_cst": 2}
ORDER_WORDS = {"relaxed": "relaxed", "acq_rel": "release/acquire", "seq_cst": "seq_cst"}
MAX_TRIALS = 20_000_000  # about 0.1-3 us a trial: at most a minute
MAX_ROUNDS = 100


def is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _pair(cpus: tuple[int, int] | None) -> tuple[int, int]:
    return bench_cpus() if cpus is None else cpu_pair(cpus, "cpus", ("thread A", "thread B"))


def _cpus_used(pair: tuple[int, int]) -> int:
    """2 when the two threads can run at once, 1 when they take turns."""
    return 2 if len(usable_cpus()) >= 2 and (pair[0] < 0 or pair[0] != pair[1]) else 1


@dataclass(frozen=True)
class LitmusRun:
    """One litmus run: ``outcomes[(r1, r2)]`` trials each, ``reorders`` the
    trials with the outcome sequential consistency forbids (SB: (0, 0); MP:
    (1, 0)), ``seconds`` the run's wall time."""

    test: str
    order: str
    trials: int
    outcomes: dict[tuple[int, int], int]
    reorders: int
    seconds: float


def litmus(test: str, order: str, trials: int = 200_000, *, cpus: tuple[int, int] | None = None) -> LitmusRun:
    """``trials`` trials of ``test`` ("store_buffering" or
    "message_passing") with ``order`` ("relaxed", "acq_rel": release stores
    and acquire loads, "seq_cst"), the two threads pinned to ``cpus`` (None:
    :func:`lowlat.machine.placement.bench_cpus`; (-1, -1): not pinned; the
    same CPU twice: they take turns on it).  The threads spin for each
    other where two CPUs allow it, else yield."""
    if not isinstance(test, str) or test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    n = int_arg(trials, "trials", minimum=1, maximum=MAX_TRIALS)
    a, b = _pair(cpus)
    out = ffi.new("ll_litmus_result *")
    wait = wait_code(default_wait() if _cpus_used((a, b)) >= 2 else "yield")
    with quiet_blas():
        check_status(lib.ll_lesson_litmus(TESTS[test], ORDERS[order], n, a, b, wait, out), f"{test} litmus run")
    counts = {(r1, r2): int(out.outcomes[r1 * 2 + r2]) for r1 in (0, 1) for r2 in (0, 1)}
    return LitmusRun(test, order, n, counts, int(out.reorders), float(out.seconds))


def _merge(runs: list[LitmusRun]) -> LitmusRun:
    first = runs[0]
    counts = {k: sum(r.outcomes[k] for r in runs) for k in first.outcomes}
    return LitmusRun(
        first.test,
        first.order,
        sum(r.trials for r in runs),
        counts,
        sum(r.reorders for r in runs),
        sum(r.seconds for r in runs),
    )


@dataclass(frozen=True)
class Litmus:
    """A litmus demonstration: each order's run (``runs[order]``, its
    trials split over interleaved rounds), the pinned pair, ``cpus_used``
    (1: the threads took turns, no reordering expected) and the CPU
    architecture."""

    test: str
    runs: dict[str, LitmusRun]
    cpus: tuple[int, int]
    cpus_used: int
    arch: str
    reasons: list[str] = field(default_factory=list)

    @property
    def weak(self) -> str:
        """The order expected to show reorderings (where the CPU can)."""
        return "relaxed"

    @property
    def strong(self) -> str:
        """The order that forbids the outcome: seq_cst (SB), release/acquire (MP)."""
        return "seq_cst" if self.test == "store_buffering" else "acq_rel"

    @property
    def expected(self) -> bool:
        """Whether the weak order is expected to show reorderings here: SB on
        any CPU, MP only on a weakly ordered one; never on one CPU."""
        return self.cpus_used >= 2 and (self.test == "store_buffering" or not self.arch.startswith("x86"))

    @property
    def shown(self) -> bool:
        """The decision: the weak order showed more than 0 reorderings and the strong one exactly 0."""
        return self.runs[self.weak].reorders > 0 and self.runs[self.strong].reorders == 0

    def reading(self) -> str:
        """The counts per order and what they mean here; the rule printed."""
        name = (
            "store buffering (r1 == r2 == 0)" if self.test == "store_buffering" else "message passing (flag, no data)"
        )
        counts = ", ".join(
            f"{ORDER_WORDS[o]} {r.reorders:,} of {r.trials:,} ({r.seconds:.2f} s)" for o, r in self.runs.items()
        )
        rule = (
            f"  rule: an effect when {ORDER_WORDS[self.weak]} shows > 0 and {ORDER_WORDS[self.strong]} exactly 0 "
            "(any under the strong order would be a bug)"
        )
        if self.test == "store_buffering" and "acq_rel" in self.runs:
            rule += f"; {ORDER_WORDS['acq_rel']} may show some, as relaxed does: a release orders only what precedes it"
        strong = self.runs[self.strong].reorders
        if strong:
            verdict = f"{ORDER_WORDS[self.strong]} showed {strong:,}: the order did not hold, a bug to report."
        elif self.cpus_used < 2:
            verdict = "one CPU: the threads took turns and a switch drains the store buffer: 0 is the expected outcome."
        elif not self.expected:
            verdict = (
                f"{self.arch} keeps stores in order and loads in order: 0 is the expected outcome for every order "
                "here; an ARM CPU can show it with relaxed."
            )
        elif self.shown:
            verdict = (
                f"an effect: the CPU reordered under {ORDER_WORDS[self.weak]}; {ORDER_WORDS[self.strong]} forbade it."
            )
        else:
            why = "; ".join(self.reasons) if self.reasons else "nothing unusual detected"
            verdict = f"not decided: no reordering caught ({why}); more trials would decide."
        return f"{name}: {counts}\n{rule}\n  -> {verdict}"


def _demo(test: str, orders: tuple[str, ...], trials: int, rounds: int, cpus: tuple[int, int] | None) -> Litmus:
    n = int_arg(trials, "trials", minimum=1, maximum=MAX_TRIALS)
    rounds = int_arg(rounds, "rounds", minimum=1, maximum=MAX_ROUNDS)
    if rounds > n:
        raise ValueError(f"rounds must be <= trials ({n}), got {rounds}")
    pair = _pair(cpus)
    # the trials split over the rounds, the orders interleaved: a busy spell hits each alike
    shares = [n // rounds + (1 if i < n % rounds else 0) for i in range(rounds)]
    done = {o: 0 for o in orders}

    def one(order: str) -> Callable[[], LitmusRun]:
        def run() -> LitmusRun:
            k = done[order]
            done[order] += 1
            return litmus(test, order, shares[k], cpus=pair)

        return run

    res = interleave({o: one(o) for o in orders}, rounds)
    used = _cpus_used(pair)
    reasons = conditions()
    if used >= 2 and pair[0] < 0:
        reasons.append("the threads were not pinned: they may have shared a CPU for part of the run")
    return Litmus(test, {o: _merge(res[o]) for o in orders}, pair, used, platform.machine() or "unknown", reasons)


def store_buffering(
    trials: int = 200_000, *, rounds: int = 4, acq_rel: bool = True, cpus: tuple[int, int] | None = None
) -> Litmus:
    """The store-buffering demonstration: ``trials`` trials per order,
    relaxed, release/acquire (unless ``acq_rel`` is False) and seq_cst,
    split over ``rounds`` interleaved rounds.  About 0.1-3 us a trial."""
    if not isinstance(acq_rel, bool):
        raise TypeError(f"acq_rel must be True or False, got {type(acq_rel).__name__} {acq_rel!r}")
    orders = ("relaxed", "acq_rel", "seq_cst") if acq_rel else ("relaxed", "seq_cst")
    return _demo("store_buffering", orders, trials, rounds, cpus)


def message_passing(trials: int = 200_000, *, rounds: int = 4, cpus: tuple[int, int] | None = None) -> Litmus:
    """The message-passing demonstration: ``trials`` trials each of relaxed
    and release/acquire, split over ``rounds`` interleaved rounds.  On x86
    both count 0 (the reading says why); ARM can show relaxed ones."""
    return _demo("message_passing", ("relaxed", "acq_rel"), trials, rounds, cpus)


# ---- the seqlock, exercised -------------------------------------------------------------


@dataclass(frozen=True)
class SeqlockLesson:
    """The correct seqlock's run (its ``retries``: overlaps caught and
    re-read) and the unchecked one's (its ``torn`` snapshots: overlaps
    missed), both with the writer and reader stretched by ``hold_ns``."""

    correct: SeqlockRun
    unchecked: SeqlockRun
    hold_ns: int
    cpus_used: int

    @property
    def shown(self) -> bool:
        """Retries caught overlaps (> 0), the correct reader tore none, the unchecked one tore some."""
        return self.correct.retries > 0 and self.correct.torn == 0 and self.unchecked.torn > 0

    def reading(self) -> str:
        c, u = self.correct, self.unchecked
        counts = (
            f"seqlock, writes held {self.hold_ns} ns: correct {c.retries:,} retries, {c.torn} torn of {c.snapshots:,}; "
            f"unchecked {u.torn:,} torn of {u.snapshots:,}"
        )
        rule = "  rule: correct retries > 0 with 0 torn, unchecked torn > 0"
        if c.torn:
            verdict = f"the correct reader returned {c.torn} torn snapshots: a bug to report."
        elif self.shown:
            verdict = "the overlaps happened: the correct reader retried them, the unchecked one returned them torn."
        elif self.cpus_used < 2:
            verdict = (
                "one CPU: overlaps happen only when the scheduler switches mid-read or mid-write, a few per time "
                "slice, so few or no retries and torn snapshots are the expected outcome."
            )
        else:
            verdict = "not decided: too few overlaps in this run; more snapshots or a longer hold_ns would decide."
        return f"{counts}\n{rule}\n  -> {verdict}"


def seqlock_lesson(snapshots: int = 20_000, *, hold_ns: int = 300, timeout_s: float = 120) -> SeqlockLesson:
    """The correct and the unchecked seqlock demo
    (:func:`lowlat.experiments.memory_orders.seqlock_demo`), each taking
    ``snapshots`` snapshots with the writer and reader stretched by
    ``hold_ns`` (1..100,000) and pinned to two CPUs where possible."""
    hold = int_arg(hold_ns, "hold_ns", minimum=1, maximum=100_000)
    timeout_s = real_arg(timeout_s, "timeout_s", positive=True, maximum=3600.0)
    pair = bench_cpus()
    correct = seqlock_demo("correct", sanitize=False, snapshots=snapshots, hold_ns=hold, timeout_s=timeout_s)
    unchecked = seqlock_demo("unchecked", sanitize=False, snapshots=snapshots, hold_ns=hold, timeout_s=timeout_s)
    return SeqlockLesson(correct, unchecked, hold, _cpus_used(pair))


__all__ = [
    "MAX_TRIALS",
    "ORDERS",
    "TESTS",
    "Litmus",
    "LitmusRun",
    "SeqlockLesson",
    "is_x86",
    "litmus",
    "message_passing",
    "seqlock_lesson",
    "store_buffering",
]
