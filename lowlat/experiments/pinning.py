"""What pinning buys, and when (chapter 03/05's lesson), on the real C
pipeline.

1. **Migrations**: how often the scheduler moved the pipeline's two C
   threads between CPUs, unpinned vs pinned.  Counted from the kernel's own
   per-thread counter, ``se.nr_migrations`` in ``/proc/self/task/<tid>/sched``
   (Linux), read while the run is still going for the tasks that appeared
   with it (the pipeline's threads: the C result needs no tids); no perf
   needed.  Pinned threads cannot migrate: their count stays at (about) 0.
2. **The tail of sharing a CPU**: P99 and max (us, from each tick's due time;
   not the median, which a share of a CPU barely moves) with a competing busy
   process (a spinning child) on the consumer's CPU vs "away".  On a 2-CPU
   machine there is no spare CPU: "away" is the producer's CPU, so both
   placements share a CPU with the spinner, and the reading compares each
   with no competitor (the A/A pair, run twice in every interleaved round,
   :func:`lowlat.method.interleave.interleave_aa`; chapter 04a's rule sets
   the threshold, printed).  A machine with spare cores would show what
   pinning buys: the competitor on a third CPU leaves both threads' tails
   as without it, while unpinned threads may be placed on its CPU.

Why the threads yield rather than spin here: a pinned *spinning* thread that
shares its CPU with another busy task is preempted for a whole time slice
(milliseconds) whenever the scheduler runs the other task, and its own spin
burns the share it has; a yielding thread gives the CPU back between ticks,
so the competitor runs in those gaps instead of in the middle of a tick.  On
a shared 2-CPU machine pinned spinners therefore have far worse tails than
yielding ones, and "pin and spin" pays only with CPUs reserved for the two
threads (isolated cores).  Latencies in us; Linux only (elsewhere the
counts read as unknown, -1).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lowlat.core.affinity import usable_cpus
from lowlat.core.argcheck import real_arg
from lowlat.core.pipeline import PipelineConfig, start
from lowlat.core.validate import int_arg
from lowlat.experiments.pipeline import demo_config
from lowlat.method.interleave import interleave_aa
from lowlat.method.readings import Reading, compare
from lowlat.method.rule import AABand


def _migrations(tid: int) -> int:
    """``se.nr_migrations`` of one task of this process (-1: unreadable)."""
    try:
        for line in Path(f"/proc/self/task/{tid}/sched").read_text().splitlines():
            if line.split(":")[0].strip() in ("se.nr_migrations", "nr_migrations"):
                return int(line.split(":")[1])
    except (OSError, ValueError, IndexError):
        pass
    return -1


def _tasks() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def count_migrations(cfg: PipelineConfig) -> int:
    """Runs ``cfg`` in the background and returns its threads' migrations,
    read just before the end (-1 when /proc cannot tell)."""
    before = _tasks()
    with start(cfg) as run:
        time.sleep(0.05)
        while run.snapshot().produced < cfg.ticks * 0.9 and run.snapshot().running:
            time.sleep(0.005)
        new = _tasks() - before - {threading.get_native_id()}
        counts = [_migrations(t) for t in new]
    if not counts or min(counts) < 0:
        return -1
    return sum(counts)


def _spin() -> None:  # the competitor: a busy process
    while True:
        pass


@dataclass(frozen=True)
class Pinning:
    """Migrations per run (``unpinned``, ``pinned``: lists), and per round
    the P99 and max (us) without a competitor (``alone``), with it on the
    consumer's CPU (``on_consumer``) and on the other CPU (``away``:
    the producer's on 2 CPUs); ``aa`` the A/A band of ``alone``'s P99."""

    cpus: tuple[int, int]
    other_cpu: int
    unpinned: list[int]
    pinned: list[int]
    p99_us: dict[str, list[float]]
    max_us: dict[str, list[float]]
    aa: AABand
    spare_cpus: int
    one_cpu: bool

    def sharing(self, where: str) -> Reading:
        """The rule's reading: the P99 alone vs with the competitor ``where``.
        Predicted: the competitor costs the tail on the consumer's CPU, and
        "away" too on 2 CPUs (no spare core: it shares the producer's); on a
        spare core it costs nothing beyond the threshold."""
        return compare(
            f"P99 with a busy process {where.replace('_', ' ')}",
            ("alone", self.p99_us["alone"]),
            (where.replace("_", " "), self.p99_us[where]),
            unit="us",
            aa=self.aa,
            expect_effect=not (where == "away" and self.spare_cpus > 0),
        )

    def prevented(self) -> str:
        """What pinning had to prevent in this run: the unpinned threads'
        migrations, and whether either tail reading decided."""
        moved = sum(x for x in self.unpinned if x > 0)
        tails = [self.sharing(w) for w in ("on_consumer", "away")]
        undecided = sum(1 for r in tails if not r.decided)
        tail = {0: "both tail comparisons decide", len(tails): "neither tail comparison decides"}.get(
            undecided, f"{len(tails) - undecided} of the {len(tails)} tail comparisons decides"
        )
        if any(x < 0 for x in self.unpinned):
            return f"the unpinned threads' migrations could not be read here; {tail}"
        runs = len(self.unpinned)
        if moved == 0:
            return (
                f"the unpinned threads migrated 0 times in {runs} runs (pinned: {sum(self.pinned)}, a pinned thread "
                f"can count its one move onto its CPU): pinning had nothing to prevent in this run; {tail}"
            )
        pinned = sum(x for x in self.pinned if x > 0)
        if moved <= pinned:
            return (
                f"the unpinned threads migrated {moved} times in {runs} runs, no more than the pinned ones ({pinned}, "
                f"their moves onto their CPUs included): pinning had little to prevent in this run; {tail}"
            )
        return (
            f"the unpinned threads migrated {moved} times in {runs} runs, the pinned ones {pinned}: the moves "
            f"pinning prevents; {tail}"
        )

    def reading(self) -> str:
        m = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        lines = [
            f"migrations of the pipeline's 2 threads per run (se.nr_migrations, /proc): unpinned {self.unpinned}, "
            f"pinned {self.cpus}: {self.pinned}",
            self.sharing("on_consumer").text,
            self.sharing("away").text,
            "  max (medians of rounds): "
            + ", ".join(f"{k.replace('_', ' ')} {m(v):,.0f} us" for k, v in self.max_us.items()),
        ]
        if not self.one_cpu:
            lines.append("  -> " + self.prevented())
        if self.one_cpu:
            lines.append(
                "  one usable CPU: nothing to pin to and nowhere away; every thread shares the one CPU, "
                "so the competitor costs the same wherever it is"
            )
        elif self.spare_cpus == 0:
            lines.append(
                f"  2 CPUs: 'away' is the producer's CPU {self.other_cpu}, so both placements share a CPU with the "
                "competitor; with a spare core the competitor would go there and pinned threads would keep their "
                "alone tail, while unpinned ones can be moved onto its CPU"
            )
        return "\n".join(lines)


def pinning(*, rate: float = 20_000.0, seconds: float = 0.2, rounds: int = 3) -> Pinning:
    """Counts migrations (``rounds`` runs unpinned, ``rounds`` pinned) and
    measures the tail alone / competitor on the consumer's CPU / away, each
    run ``seconds`` (0.05-60) at ``rate`` ticks/s (1,000-200,000), yielding
    waits, interleaved ``rounds`` rounds (3-20).  Needs Linux for the
    counts and the placement of the competitor."""
    rate = real_arg(rate, "rate", minimum=1_000.0, maximum=200_000.0)
    seconds = real_arg(seconds, "seconds", minimum=0.05, maximum=60.0)
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=20)
    cpus_all = sorted(usable_cpus())
    one_cpu = len(cpus_all) < 2
    ticks = max(1, round(rate * seconds))
    pair = (cpus_all[0], cpus_all[0]) if one_cpu else (cpus_all[0], cpus_all[1])
    free = [c for c in cpus_all if c not in pair]
    other = free[0] if free else pair[0]  # "away": a spare CPU, else the producer's
    unpinned_cfg = demo_config(ticks, rate)
    pinned_cfg = demo_config(ticks, rate, cpus=pair)
    unpinned = [count_migrations(unpinned_cfg) for _ in range(rounds)]
    pinned = [count_migrations(pinned_cfg) for _ in range(rounds)]

    ctx = mp.get_context("fork")
    spinner = ctx.Process(target=_spin, daemon=True)
    spinner.start()
    assert spinner.pid is not None
    pid = spinner.pid
    maxes: dict[str, list[float]] = {"alone": [], "on_consumer": [], "away": []}

    def variant(where: str) -> Callable[[], float]:
        def measure() -> float:
            os.sched_setaffinity(pid, {pair[1] if where == "on_consumer" else other})
            if where == "alone":
                os.kill(pid, signal.SIGSTOP)  #: the competitor holds no CPU
            try:
                res = start(pinned_cfg).join()
            finally:
                if where == "alone":
                    os.kill(pid, signal.SIGCONT)
            if len(maxes[where]) < rounds:
                maxes[where].append(max(res.intended.max / 1e3, 0.001))
            return max(res.intended.percentile(99) / 1e3, 0.001)

        return measure

    try:
        got, aa = interleave_aa({k: variant(k) for k in maxes}, rounds, baseline="alone")
    finally:
        spinner.kill()
        spinner.join(5)
    return Pinning(pair, other, unpinned, pinned, got, maxes, aa, len(free), one_cpu)


__all__ = ["Pinning", "count_migrations", "pinning"]
