"""What a ring's record size costs (chapter 03), run by
``csrc/bench/bench_payload.c``: a ring whose slots are 64-byte messages
against a ring of 32-bit indices into a preallocated pool of the same
messages, between two C threads.  Throughput in items/s, round trips in ns.

The consumer reads every message (through the index for the index ring) and
sums one field; the producer sums what it wrote: equal sums show that both
rings moved the payload, not just the slot."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_pair
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.hist import Histogram
from lowlat.core.validate import int_arg, power_of_two
from lowlat.core.wait import wait_code
from lowlat.experiments.common import pins
from lowlat.machine.placement import default_wait
from lowlat.method.interleave import interleave, median

KINDS = {"struct64": 0, "index": 1}  # enum ll_payload_kind


@dataclass
class PayloadRun:
    """One run: ``kind`` "struct64" or "index"; ``moved`` messages received
    (or round trips); ``sent_sum`` / ``received_sum`` the checksum each side
    computed (equal when every message's payload arrived); ``ring_node`` and
    ``pool_node`` the NUMA node of the ring's slots and of the pool (-1:
    unknown, or no pool); ``rtt`` each round trip in ns (round trips only)."""

    kind: str
    items: int
    moved: int
    seconds: float
    items_per_s: float
    sent_sum: int
    received_sum: int
    errors: int
    full_waits: int
    empty_waits: int
    pinned: bool
    ring_node: int
    pool_node: int
    rtt: Histogram | None = field(repr=False, default=None)

    @property
    def checksum_ok(self) -> bool:
        """Every message arrived, in order, with the payload the producer wrote."""
        return self.errors == 0 and self.moved == self.items and self.sent_sum == self.received_sum


def expected_sum(items: int) -> int:
    """The checksum of ``items`` messages: message i carries the value i."""
    return items * (items + 1) // 2


def payload_run(
    kind: str = "struct64",
    items: int = 1_000_000,
    *,
    capacity: int = 1024,
    round_trip: bool = False,
    pin: bool = True,
    cpus: tuple[int, int] | None = None,
    wait: str | None = None,
) -> PayloadRun:
    """Moves ``items`` 64-byte messages from a producer thread to a consumer
    thread through a ``capacity``-slot ring of the messages themselves
    (``kind="struct64"``) or of uint32 indices into a pool of 2 x capacity
    messages (``kind="index"``).  ``round_trip``: one message in flight, its
    value sent back on a second ring, every round trip timed into ``rtt``.
    Pinned as :func:`lowlat.machine.placement.bench_cpus` says (unpinned with one
    usable CPU) unless ``cpus=(producer, consumer)`` ((-1, -1): unpinned; checked by
    :func:`lowlat.core.affinity.cpu_pair`).
    ``wait`` one of spin, yield, spin_yield (default: spin with a CPU per
    thread, else yield)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    n = int_arg(items, "items", minimum=1, maximum=10**10)
    cap = power_of_two(capacity, "capacity")
    if cap > 1 << 30:
        raise ValueError(f"capacity must be at most 2**30 (the pool is indexed by uint32), got {cap}")
    prod, cons = cpu_pair(cpus) if cpus is not None else pins(pin)
    w = wait_code(wait or default_wait())
    cfg = ffi.new(
        "ll_payload_cfg *",
        {
            "kind": KINDS[kind],
            "round_trip": int(bool(round_trip)),
            "capacity": cap,
            "items": n,
            "pair": {"producer_cpu": prod, "consumer_cpu": cons, "producer_wait": w, "consumer_wait": w},
        },
    )
    h = Histogram(1, 10**10, 3) if round_trip else None
    out = ffi.new("ll_payload_result *")
    with quiet_blas():  # no spinning BLAS worker on the pinned CPUs
        check_status(lib.ll_bench_payload(cfg, h.c_handle if h is not None else ffi.NULL, out), "payload benchmark")
    return _run(kind, n, out, h)


def _run(kind: str, items: int, out: Any, h: Histogram | None) -> PayloadRun:
    return PayloadRun(
        kind,
        items,
        int(out.moved),
        float(out.seconds),
        float(out.items_per_s),
        int(out.sent_sum),
        int(out.received_sum),
        int(out.errors),
        int(out.full_waits),
        int(out.empty_waits),
        out.producer_pinned == 0 and out.consumer_pinned == 0,
        int(out.ring_node),
        int(out.pool_node),
        h,
    )


def compare(
    items: int = 500_000,
    round_trips: int = 20_000,
    rounds: int = 5,
    *,
    capacity: int = 1024,
    between: Callable[[], object] | None = None,
) -> dict[str, list[PayloadRun]]:
    """The two rings' throughput and round trips, interleaved over ``rounds``
    rounds (after one warm-up round, not returned).  Keys: "struct64",
    "index" (throughput) and "struct64 rtt", "index rtt".  ``between`` runs
    before each measured round (e.g. to sample the core-to-core latency).
    Raises AssertionError if any run lost, reordered or corrupted a message."""
    rounds = int_arg(rounds, "rounds", minimum=1)

    def run(kind: str, rt: bool) -> Callable[[], PayloadRun]:
        def go() -> PayloadRun:
            r = payload_run(kind, round_trips if rt else items, capacity=capacity, round_trip=rt)
            if not r.checksum_ok:
                raise AssertionError(
                    f"{kind}: {r.moved:,} of {r.items:,} messages, {r.errors} out of order, "
                    f"sums {r.sent_sum} sent vs {r.received_sum} received"
                )
            return r

        return go

    variants = {"struct64": run("struct64", False), "index": run("index", False)}
    variants |= {"struct64 rtt": run("struct64", True), "index rtt": run("index", True)}
    interleave(variants, 1)
    return interleave(variants, rounds, between=between)


TIE = 1.15  # a lead smaller than this, round after round, is "less than 15%"
CLOSE = 1.5  # the chapter's prediction for throughput: within about 1.5x either way


def _quartiles(xs: Sequence[float]) -> tuple[float, float, float]:
    """Lower quartile, median and upper quartile (the middle half of the rounds)."""
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], median(xs), q[2]


def _series(what: str, *series: Sequence[float]) -> None:
    if len({len(s) for s in series}) != 1 or not series[0]:
        raise ValueError(f"{what}: the series must be non-empty and of equal length")
    if any(not (math.isfinite(x) and x > 0) for s in series for x in s):
        raise ValueError(f"{what}: every value must be a positive finite number")


def throughput_reading(
    struct_rates: Sequence[float],
    index_rates: Sequence[float],
    *,
    one_cpu: bool = False,
    reasons: Sequence[str] = (),
) -> str:
    """The chapter's reading of the throughput comparison, from one rate per
    interleaved round of each ring (any unit, the same for both).  Predicted
    with a CPU per thread: close, within about 1.5x either way (both rings
    move about one line per message); with one usable CPU no line crosses
    between cores and the index ring, which saves two copies, should lead.

    Judged on the per-round ratio index / struct: its middle half entirely
    on one side of 1 is a consistent lead (named by its size: under 15%,
    within 1.5x, beyond); a middle half straddling 1 is a tie when it lies
    within 15%, close-but-undecided within 1.5x, and only wider than that
    does the run fail to tell the two apart."""
    _series("throughput", struct_rates, index_rates)
    lo, mid, hi = _quartiles([i / s for i, s in zip(index_rates, struct_rates)])
    spread = f"median round {mid:.2f}x, middle half of the rounds {lo:.2f}x-{hi:.2f}x (index / struct)"
    why = "; ".join(reasons)
    if lo > 1 or hi < 1:  # the same ring ahead in most rounds
        index_won = lo > 1
        winner = "index ring" if index_won else "struct ring"
        factor = mid if index_won else 1 / mid
        cause = (
            "the copies and ring lines it saved weighed more than its dependent load"
            if index_won
            else "the dependent load through each index cost more than the copies it saved"
        )
        if one_cpu:
            if index_won:
                return (
                    f"-> the index ring ahead ({spread}): with one usable CPU no line crosses between cores, so "
                    "the copies it saves are what showed, as predicted for one CPU"
                )
            return (
                f"-> the struct ring ahead ({spread}), against the prediction for one CPU (the copies the index "
                "ring saves should have put it ahead)"
                + (
                    f"; likely because {why}"
                    if why
                    else ": run it again; if it repeats, the copies cost less here than the dependent load"
                )
            )
        if factor < TIE:
            return (
                f"-> the {winner} ahead in most rounds, by less than 15% in the median round ({spread}): a small, "
                f"consistent lead, within the predicted 1.5x: {cause}, by a little"
            )
        if factor <= CLOSE:
            return f"-> the {winner} ahead ({spread}): within the predicted 1.5x: {cause}"
        return f"-> the {winner} ahead by {factor:.2f}x ({spread}): more than the 1.5x predicted" + (
            f"; this run's conditions may have moved it: {why}"
            if why
            else f": run it again, and if it repeats, {cause}, by more than the line count suggests"
        )
    # the rounds disagree about the winner
    if lo >= 1 / TIE and hi <= TIE:
        return (
            f"-> a tie within 15% ({spread}): neither ring ahead in most rounds, inside the predicted 1.5x: "
            "about one line per message either way"
            + (
                " (with one usable CPU the copies the index ring saves were predicted to show; they did not)"
                if one_cpu
                else ""
            )
        )
    if lo >= 1 / CLOSE and hi <= CLOSE:
        return (
            f"-> no consistent winner ({spread}): the rounds disagree about which ring is ahead, but all of the "
            "middle half lies within the predicted 1.5x: close, as predicted; this run cannot say which way it tips"
        )
    return (
        f"-> no clear winner ({spread}): the rounds disagree about which ring is ahead, and their middle half "
        "reaches beyond the predicted 1.5x: this run cannot tell the two apart"
        + (f"; likely because {why}" if why else "; run it again")
    )


def round_trip_reading(
    struct_ns: Sequence[float],
    index_ns: Sequence[float],
    c2c_ns: Sequence[float] = (),
    *,
    one_cpu: bool = False,
    reasons: Sequence[str] = (),
) -> str:
    """The chapter's reading of the round trips (one median round trip per
    interleaved round of each ring, ns), judged against the one-way
    core-to-core latency sampled in the same run (``c2c_ns``; NaN or empty
    where it could not be measured).  Predicted with a CPU per thread: the
    index ring's round trip longer by up to one one-way latency (its two
    transfers cannot overlap), a small share of the round trip: so the
    extra is sized in transfers, not against a generic percentage.  With
    one usable CPU no line crosses between cores: there is no transfer to
    size it by, and the reading says so."""
    _series("round trip", struct_ns, index_ns)
    extra = [i - s for i, s in zip(index_ns, struct_ns)]
    e_lo, e_mid, e_hi = _quartiles(extra)
    ms, mi = median(struct_ns), median(index_ns)
    head = (
        f"round trip, one message in flight: struct ring {ms:,.0f} ns, index ring {mi:,.0f} ns (medians of "
        f"{len(extra)} interleaved rounds); index minus struct, per round: median {e_mid:+,.0f} ns, middle half "
        f"{e_lo:+,.0f} to {e_hi:+,.0f} ns"
    )
    why = "; ".join(reasons)
    if one_cpu:
        return head + (
            "\n  -> one usable CPU: no line crosses between cores, so the extra transfer the prediction sizes does "
            "not exist here; a round trip is two switches between the threads, and what differs between the rings "
            "is their copies and the dependent load"
        )
    c2c = [x for x in c2c_ns if math.isfinite(x) and x > 0]
    if not c2c:
        return head + (
            "\n  -> the core-to-core latency could not be measured in this run (the threads could not be pinned to "
            "a pair), so the extra cannot be sized in line transfers: read the difference in ns only"
        )
    c, cmin, cmax = median(c2c), min(c2c), max(c2c)
    unit = f"this run's one-way core-to-core latency ({c:,.0f} ns median, {cmin:,.0f}-{cmax:,.0f} ns over the rounds)"
    sized = (
        f"{e_mid:+,.0f} ns, {e_mid / c:.2f} of {unit} (middle half of the rounds {e_lo / c:.2f}-{e_hi / c:.2f} of it)"
    )
    if e_lo > 0:  # index longer in most rounds
        if e_hi <= cmax:
            return head + (
                f"\n  -> the index ring's round trip was longer in most rounds, by {sized}: within the one extra "
                "transfer predicted (the dependent load through the index)"
                + (": most of that transfer overlapped here" if e_hi < 0.25 * c else "")
            )
        if e_mid <= cmax:  # the median within the longest latency sampled, some rounds beyond it
            return head + (
                f"\n  -> the index ring's round trip was longer in most rounds, by {sized}: about one transfer, "
                "the size predicted at its upper end (some rounds a little beyond the longest one-way latency "
                "sampled" + (f"; this run's conditions may have added to them: {why})" if why else ")")
            )
        return head + (
            f"\n  -> the index ring's round trip was longer in most rounds, by {sized}: more than the one extra "
            "transfer predicted"
            + (
                f"; this run's conditions may have added to it: {why}"
                if why
                else ": run it again; if it repeats, something beyond the dependent load costs the index ring time"
            )
        )
    if e_hi < 0:
        return head + (
            f"\n  -> the index ring's round trip was shorter in most rounds, by {-e_mid / c:.2f}x {unit}: against "
            "the prediction"
            + (
                f"; likely because {why}"
                if why
                else ": run it again; if it repeats, the copies "
                "the index ring saves outweigh its extra transfer on this machine"
            )
        )
    if e_hi - e_lo > c:
        return head + (
            f"\n  -> the rounds disagree, and their middle half spans more than {unit}: this run cannot resolve an "
            "effect of one transfer" + (f"; likely because {why}" if why else "; run it again")
        )
    return head + (
        f"\n  -> no consistent extra: the rounds disagree about which ring's round trip is longer, within "
        f"{(e_hi - e_lo) / c:.2f}x {unit}: the predicted extra transfer did not show in this run"
        + (
            f"; likely because {why}"
            if why
            else "; run it again, and if it repeats, the second transfer overlaps with the first on this machine"
        )
    )


def bench_keys(quick: bool, between: Callable[[], object] | None = None) -> dict[str, float]:
    """``ring_struct64_items_per_s`` and ``ring_index_items_per_s``: 64-byte
    messages per second through a 1,024-slot ring of the messages and of
    uint32 indices into a pool (medians of interleaved rounds; the consumer
    reads every payload, checksums verified).  ``between`` runs before each
    round (e.g. a core-to-core sample).  About 0.1 s (quick) or 0.5 s on an
    idle machine."""
    items, rounds = (100_000, 3) if quick else (500_000, 7)

    def one(kind: str) -> Callable[[], PayloadRun]:
        return lambda: payload_run(kind, items)

    res = interleave({k: one(k) for k in KINDS}, rounds, between=between)
    out: dict[str, float] = {}
    for k, runs in res.items():
        if not all(r.checksum_ok for r in runs):
            raise AssertionError(f"{k} ring: a message was lost, reordered or corrupted")
        rates = [r.items_per_s for r in runs if r.items_per_s > 0]
        out[f"ring_{k}_items_per_s"] = median(rates) if rates else math.nan
    return out


__all__ = [
    "KINDS",
    "PayloadRun",
    "bench_keys",
    "compare",
    "expected_sum",
    "payload_run",
    "round_trip_reading",
    "throughput_reading",
]
