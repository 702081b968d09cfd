"""SpscQueue: FIFO and capacity, records of any size, batches, bad input,
a stateful model test, and two-thread stress runs (Python threads and C)."""

from __future__ import annotations

import platform
import sys
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from lowlat import SpscQueue
from lowlat.core._lib import ffi, lib
from lowlat.core.spsc import default_layout
from lowlat.experiments import queues
from lowlat.experiments.queues import spsc_throughput

VARIANTS = [dict(padded=p, cached=c) for p in (True, False) for c in (True, False)]


@pytest.mark.parametrize("kw", VARIANTS)
def test_holds_exactly_capacity_in_fifo_order(kw: dict) -> None:
    q = SpscQueue(8, **kw)
    assert [q.try_push(i) for i in range(9)] == [True] * 8 + [False]
    assert len(q) == 8
    assert [q.try_pop() for _ in range(9)] == list(range(8)) + [None]
    assert len(q) == 0


def test_wraps_around_many_times() -> None:
    q = SpscQueue(4)
    for i in range(1000):
        assert q.try_push(i) and q.try_pop() == i


def test_batches_move_arrays_and_stop_at_capacity() -> None:
    q = SpscQueue(16)
    data = np.arange(20, dtype=np.uint64)
    assert q.push_many(data) == 16
    assert q.push_many(data) == 0
    out = np.zeros(10, np.uint64)
    assert q.pop_many(out) == 10 and list(out) == list(range(10))
    assert q.push_many(data[16:]) == 4  # across the wrap
    assert list(q.pop_array()) == list(range(10, 20))
    assert q.pop_many(out) == 0


def test_structured_records() -> None:
    tick = np.dtype([("seq", "<u8"), ("bid", "<f8"), ("ask", "<f8")])
    q = SpscQueue(4, tick)
    assert q.record_size == 24
    recs = np.zeros(3, tick)
    recs["seq"] = [1, 2, 3]
    recs["bid"] = [99.5, 99.6, 99.7]
    assert q.push_many(recs) == 3
    first = q.try_pop()
    assert first["seq"] == 1 and first["bid"] == 99.5
    assert list(q.pop_array()["seq"]) == [2, 3]
    raw = SpscQueue(2, 5)  # opaque 5-byte records
    assert raw.record_size == 5 and raw.try_push(b"hello") and bytes(raw.try_pop()) == b"hello"


def test_layout_variants_are_visible() -> None:
    assert SpscQueue(8).cursor_distance >= 64
    assert SpscQueue(8, padded=False).cursor_distance == 8


def test_default_layout_is_the_vendors_and_both_can_be_forced() -> None:
    """A ring made without a layout flag takes the placement named by
    default_layout(); either placement can be asked for, not both, and the
    ring's flags say which it got."""
    layout = default_layout()
    assert layout in ("adjacent", "spread")
    amd = (
        any(v in Path("/proc/cpuinfo").read_text() for v in ("AuthenticAMD", "HygonGenuine"))
        if sys.platform == "linux"
        else None
    )
    if amd is not None and platform.machine() in ("x86_64", "AMD64"):
        assert layout == ("spread" if amd else "adjacent")
    apart = {"adjacent": int(lib.LL_CACHELINE), "spread": int(lib.LL_FALSE_SHARING_RANGE)}
    assert SpscQueue(8).cursor_distance == apart[layout]
    want = {"adjacent": lib.LL_SPSC_ADJACENT, "spread": lib.LL_SPSC_SPREAD}
    for name, flag in want.items():
        ring = ffi.gc(lib.ll_spsc_create(8, 8, flag), lib.ll_spsc_destroy)
        assert lib.ll_spsc_cursor_distance(ring) == apart[name]
        assert lib.ll_spsc_flags(ring) == flag
    default = ffi.gc(lib.ll_spsc_create(8, 8, 0), lib.ll_spsc_destroy)
    assert lib.ll_spsc_flags(default) == want[layout]
    assert lib.ll_spsc_create(8, 8, lib.LL_SPSC_ADJACENT | lib.LL_SPSC_SPREAD) == ffi.NULL
    assert lib.ll_spsc_create(8, 8, lib.LL_SPSC_ADJACENT | lib.LL_SPSC_UNPADDED) == ffi.NULL
    with pytest.raises(ValueError, match="one at most"):
        queues.spsc_throughput(8, 10, spread=True, adjacent=True)
    run = queues.spsc_throughput(64, 10_000, adjacent=True, wait="yield")
    assert run.errors == 0


@pytest.mark.parametrize(
    "cap, msg",
    [
        (0, "capacity must be a power of two >= 2, got 0"),
        (1, "capacity must be a power of two >= 2, got 1"),
        (3, r"got 3 \(nearest allowed: 2 or 4\)"),
        (1000, r"got 1000 \(nearest allowed: 512 or 1024\)"),
        (-8, "must be a power of two >= 2, got -8"),
    ],
)
def test_bad_capacity(cap: int, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        SpscQueue(cap)


def test_bad_capacity_type_and_record_size() -> None:
    with pytest.raises(TypeError, match="capacity must be an integer, got float"):
        SpscQueue(8.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="record size must be >= 1 byte, got 0"):
        SpscQueue(8, 0)
    with pytest.raises(TypeError, match="holds Python objects"):
        SpscQueue(8, object)
    with pytest.raises(TypeError, match="numpy dtype or a record size"):
        SpscQueue(8, "not-a-dtype")


def test_bad_arrays() -> None:
    q = SpscQueue(8)
    with pytest.raises(TypeError, match=r"records must have dtype uint64, got int32 \(convert with arr.astype"):
        q.push_many(np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match="records must be a numpy array of dtype uint64, got list"):
        q.push_many([1, 2, 3])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="records must be C-contiguous"):
        q.push_many(np.arange(8, dtype=np.uint64)[::2])
    with pytest.raises(ValueError, match=r"records must be 1-D, got shape \(2, 2\)"):
        q.push_many(np.zeros((2, 2), np.uint64))
    ro = np.zeros(4, np.uint64)
    ro.flags.writeable = False
    assert q.push_many(ro) == 4  # reading from a read-only array is fine
    with pytest.raises(ValueError, match="out must be writable"):
        q.pop_many(ro)
    with pytest.raises(OverflowError, match="cannot store -1 as a uint64 record"):
        q.try_push(-1)


class SpscModel(RuleBasedStateMachine):
    """Single-threaded push/pop/batch sequences against a deque."""

    def __init__(self) -> None:
        super().__init__()
        self.q = SpscQueue(8, padded=False, cached=True)
        self.model: deque[int] = deque()
        self.next = 0

    @rule()
    def push(self):
        ok = self.q.try_push(self.next)
        assert ok == (len(self.model) < 8)
        if ok:
            self.model.append(self.next)
            self.next += 1

    @rule()
    def pop(self):
        v = self.q.try_pop()
        assert v == (self.model.popleft() if self.model else None)

    @rule(n=st.integers(0, 12))
    def push_many(self, n):
        data = np.arange(self.next, self.next + n, dtype=np.uint64)
        k = self.q.push_many(data)
        assert k == min(n, 8 - len(self.model))
        self.model.extend(range(self.next, self.next + k))
        self.next += k

    @rule(n=st.integers(0, 12))
    def pop_many(self, n):
        out = np.zeros(n, np.uint64)
        k = self.q.pop_many(out)
        expect = [self.model.popleft() for _ in range(min(n, len(self.model)))]
        assert list(out[:k]) == expect

    @invariant()
    def size_matches(self):
        assert len(self.q) == len(self.model)


SpscModel.TestCase.settings = settings(max_examples=80, stateful_step_count=50, deadline=None)
TestSpscModel = SpscModel.TestCase


@pytest.mark.parametrize("kw", VARIANTS)
def test_two_python_threads_every_record_once_in_order(kw: dict) -> None:
    n, batch = 2_000_000, 1000
    q = SpscQueue(1024, **kw)
    data = np.arange(n, dtype=np.uint64)
    received = np.zeros(n, np.uint64)

    # A side that moved nothing gives up the GIL at once (time.sleep(0)):
    # spinning on it would hold the other side off for the interpreter's
    # whole switch interval (5 ms) per lap, 15 s a run when both share a CPU.
    def produce() -> None:
        sent = 0
        while sent < n:
            k = q.push_many(data[sent : sent + batch])
            sent += k
            if not k:
                time.sleep(0)

    def consume() -> None:
        got = 0
        while got < n:
            k = q.pop_many(received[got : got + batch])
            got += k
            if not k:
                time.sleep(0)

    threads = [threading.Thread(target=consume), threading.Thread(target=produce)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "stress run did not finish"
    assert np.array_equal(received, data)
    assert len(q) == 0


@pytest.mark.parametrize("kw", VARIANTS + [dict(batch=100)])
def test_two_c_threads_every_record_once_in_order(kw: dict) -> None:
    run = spsc_throughput(1024, 2_000_000, wait="spin_yield", **kw)
    assert run.errors == 0
    assert run.items == 2_000_000


def test_one_producer_and_one_consumer_thread_are_enforced() -> None:
    """Two producers used to lose and duplicate records silently (and len()
    then raised OverflowError); the second thread now gets a clear error."""
    from lowlat.core.spsc import SpscContractError

    q = SpscQueue(8)
    assert q.try_push(1)  # the main thread is now the producer
    errors: list[BaseException] = []

    def second_producer() -> None:
        try:
            q.push_many(np.arange(3, dtype=np.uint64))
        except SpscContractError as exc:
            errors.append(exc)

    t = threading.Thread(target=second_producer, name="intruder")
    t.start()
    t.join()
    assert len(errors) == 1
    assert "push_many from thread 'intruder', but thread 'MainThread' is this queue's producer" in str(errors[0])
    assert "q.release_producer()" in str(errors[0])
    # Handing the side over: release it, and the next thread to push takes it.
    q.release_producer()
    t = threading.Thread(target=lambda: q.push_many(np.arange(2, 4, dtype=np.uint64)))
    t.start()
    t.join()
    assert [q.try_pop() for _ in range(4)] == [1, 2, 3, None]  # the main thread is the consumer
    got: list[str] = []

    def second_consumer() -> None:
        try:
            q.try_pop()
        except SpscContractError as exc:
            got.append(str(exc))

    t = threading.Thread(target=second_consumer)
    t.start()
    t.join()
    assert got and "is this queue's consumer" in got[0]


def test_a_dead_sides_thread_hands_over_by_itself() -> None:
    q = SpscQueue(8)
    t = threading.Thread(target=lambda: q.try_push(7))
    t.start()
    t.join()
    assert q.try_push(8)  # the first producer has ended: no release needed
    assert list(q.pop_array()) == [7, 8]


def test_concurrent_producers_never_corrupt_the_ring() -> None:
    """Four threads push at once: one becomes the producer, the others are
    refused; every record that went in comes out once, in order."""
    from lowlat.core.spsc import SpscContractError

    q = SpscQueue(1 << 16)
    refused: list[int] = []
    start = threading.Barrier(4)
    done = threading.Barrier(4)  # the producer stays alive until every thread has tried: a dead one's side is free

    def push(k: int) -> None:
        start.wait()
        try:
            for i in range(10_000):
                while not q.try_push(k * 100_000 + i):
                    pass
        except SpscContractError:
            refused.append(k)
        finally:
            done.wait()

    threads = [threading.Thread(target=push, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(refused) == 3
    (k,) = set(range(4)) - set(refused)
    assert len(q) == 10_000 and list(q.pop_array(1 << 16)) == [k * 100_000 + i for i in range(10_000)]


def test_ring_flags_is_the_one_builder_of_the_layout_bits() -> None:
    from lowlat.core._lib import lib
    from lowlat.core.spsc import ring_flags

    assert ring_flags() == 0
    assert ring_flags(padded=False, cached=False) == lib.LL_SPSC_UNPADDED | lib.LL_SPSC_NO_CACHE
    assert ring_flags(spread=True) == lib.LL_SPSC_SPREAD and ring_flags(adjacent=True) == lib.LL_SPSC_ADJACENT
    assert ring_flags(padded=False, spread=True) == lib.LL_SPSC_UNPADDED  # placement is for padded cursors
    with pytest.raises(ValueError, match="ask for one at most"):
        ring_flags(spread=True, adjacent=True)
    with pytest.raises(TypeError, match="cached must be True or False, got int 0"):
        ring_flags(cached=0)  # type: ignore[arg-type]
