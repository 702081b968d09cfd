"""What a ring's record size costs (chapter 03), run by
``csrc/bench/bench_payload.c``: a ring whose slots are 64-byte messages
against a ring of 32-bit indices into a preallocated pool of the same
messages, between two C threads.  Throughput in items/s, round trips in ns.

The consumer reads every message (through the index for the index ring) and
sums one field; the producer sums what it wrote: equal sums show that both
rings moved the payload, not just the slot."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lowlat._check import int_arg, power_of_two
from lowlat._lib import ffi, lib
from lowlat.affinity import cpu_count, usable_cpus
from lowlat.blas import quiet_blas
from lowlat.errors import check_status
from lowlat.experiments._common import pins
from lowlat.hist import Histogram
from lowlat.interleave import interleave, median
from lowlat.wait import default_wait, wait_code

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
    Pinned as :func:`lowlat.affinity.bench_cpus` says (unpinned with one
    usable CPU) unless ``cpus=(producer, consumer)`` (-1: unpinned).
    ``wait`` one of spin, yield, spin_yield (default: spin with a CPU per
    thread, else yield)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    n = int_arg(items, "items", minimum=1, maximum=10**10)
    cap = power_of_two(capacity, "capacity")
    if cap > 1 << 30:
        raise ValueError(f"capacity must be at most 2**30 (the pool is indexed by uint32), got {cap}")
    if cpus is not None:
        usable = usable_cpus()
        for c in cpus:
            int_arg(c, "cpu", minimum=-1, maximum=cpu_count() - 1)
            if c >= 0 and c not in usable:
                raise ValueError(f"cpus {cpus}: CPU {c} is outside this process's affinity mask")
        prod, cons = cpus
    else:
        prod, cons = pins(pin)
    cfg = ffi.new(
        "ll_payload_cfg *",
        {
            "kind": KINDS[kind],
            "round_trip": int(bool(round_trip)),
            "capacity": cap,
            "items": n,
            "producer_cpu": prod,
            "consumer_cpu": cons,
            "wait": wait_code(wait or default_wait()),
        },
    )
    h = Histogram(1, 10**10, 3) if round_trip else None
    out = ffi.new("ll_payload_result *")
    with quiet_blas():  # no spinning BLAS worker on the pinned CPUs
        check_status(lib.ll_bench_payload(cfg, h._h if h is not None else ffi.NULL, out), "payload benchmark")
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
    items: int = 500_000, round_trips: int = 20_000, rounds: int = 5, *, capacity: int = 1024
) -> dict[str, list[PayloadRun]]:
    """The two rings' throughput and round trips, interleaved over ``rounds``
    rounds (after one warm-up round, not returned).  Keys: "struct64",
    "index" (throughput) and "struct64 rtt", "index rtt".  Raises
    AssertionError if any run lost, reordered or corrupted a message."""
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
    return interleave(variants, rounds)


def bench_keys(quick: bool) -> dict[str, float]:
    """``ring_struct64_items_per_s`` and ``ring_index_items_per_s``: 64-byte
    messages per second through a 1,024-slot ring of the messages and of
    uint32 indices into a pool (medians of interleaved rounds; the consumer
    reads every payload, checksums verified).  About 0.1 s (quick) or 0.5 s on an idle machine."""
    items, rounds = (100_000, 3) if quick else (500_000, 7)

    def one(kind: str) -> Callable[[], PayloadRun]:
        return lambda: payload_run(kind, items)

    res = interleave({k: one(k) for k in KINDS}, rounds)
    out: dict[str, float] = {}
    for k, runs in res.items():
        if not all(r.checksum_ok for r in runs):
            raise AssertionError(f"{k} ring: a message was lost, reordered or corrupted")
        rates = [r.items_per_s for r in runs if r.items_per_s > 0]
        out[f"ring_{k}_items_per_s"] = median(rates) if rates else math.nan
    return out


__all__ = ["KINDS", "PayloadRun", "bench_keys", "compare", "expected_sum", "payload_run"]
