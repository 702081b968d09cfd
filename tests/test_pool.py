"""Pool: behaviour, counters, misuse detection, and a stateful model test."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

import lowlat
from lowlat import DoubleFreeError, ForeignPointerError, Pool, PoolError, PoolExhaustedError


def test_alloc_until_exhausted_then_free_and_reuse() -> None:
    p = Pool(24, 4)
    blocks = [p.alloc() for _ in range(4)]
    assert p.try_alloc() is None
    with pytest.raises(PoolExhaustedError, match="all 4 blocks are in use"):
        p.alloc()
    st_ = p.stats()
    assert (st_.in_use, st_.high_water, st_.exhausted) == (4, 4, 2)
    p.free(blocks[2])
    again = p.alloc()
    assert again.address == blocks[2].address  # LIFO: the hottest block is reused first
    assert len({b.address for b in blocks}) == 4


def test_block_size_rounding_and_layout() -> None:
    assert Pool(1, 3).block_size == 8
    assert Pool(9, 3).block_size == 16
    assert Pool(1, 3, cache_aligned=True).block_size == 64
    assert Pool(65, 3, cache_aligned=True).block_size == 128
    p = Pool(64, 10, cache_aligned=True)
    addrs = sorted(p.alloc().address for _ in range(10))
    assert all(a % 64 == 0 for a in addrs)
    assert [b - a for a, b in itertools.pairwise(addrs)] == [64] * 9  # one contiguous allocation
    assert p.stats().bytes_reserved == 640


def test_block_view_is_the_blocks_memory() -> None:
    p = Pool(16, 2)
    b = p.alloc()
    v = b.view()
    assert len(v) == 16 and not v.readonly
    v[:] = bytes(range(16))
    assert bytes(b.view()) == bytes(range(16))


def test_double_free_is_detected() -> None:
    p = Pool(32, 2)
    b = p.alloc()
    p.free(b)
    with pytest.raises(DoubleFreeError, match="double free: block 0 .* is already free"):
        p.free(b)
    assert p.stats().bad_frees == 1
    assert p.in_use == 0  # the refused free changed nothing


def test_foreign_blocks_and_addresses_are_detected() -> None:
    p, q = Pool(32, 2), Pool(32, 2)
    b = q.alloc()
    with pytest.raises(ForeignPointerError, match="belongs to another pool"):
        p.free(b)
    with pytest.raises(ForeignPointerError, match="not the start of a block of this pool"):
        p.free(b.address)
    own = p.alloc()
    with pytest.raises(ForeignPointerError, match="not the start of a block"):
        p.free(own.address + 8)
    with pytest.raises(ForeignPointerError, match="is not a block of this pool"):
        p.free(0)
    with pytest.raises(TypeError, match="takes a Block or an int address"):
        p.free("block")  # type: ignore[arg-type]
    assert issubclass(DoubleFreeError, PoolError) and issubclass(PoolError, ValueError)


def test_reset_returns_everything() -> None:
    p = Pool(8, 3)
    for _ in range(3):
        p.alloc()
    p.reset()
    assert p.in_use == 0
    assert len([p.alloc() for _ in range(3)]) == 3


@pytest.mark.parametrize(
    "args, exc, msg",
    [
        ((0, 4), ValueError, "block_size must be >= 1 byte, got 0"),
        ((8, 0), ValueError, "count must be >= 1 block, got 0"),
        ((-1, 4), ValueError, "block_size must be >= 1 byte"),
        ((8.0, 4), TypeError, "block_size must be an integer, got float"),
        ((8, True), TypeError, "count must be an integer, got bool"),
        ((2**62, 4), ValueError, "overflows"),
    ],
)
def test_bad_arguments(args: tuple, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        Pool(*args)


def test_blocks_keep_their_pool_alive() -> None:
    b = Pool(8, 1).alloc()
    b.view()[0] = 7  # the pool object is gone from our scope but not freed
    assert b.pool.owns(b)
    assert repr(b).startswith("<Block 0 of <Pool 1/1")


class PoolModel(RuleBasedStateMachine):
    """Random alloc / free / double free / exhaustion sequences against a
    plain Python model of which blocks are out."""

    blocks = Bundle("blocks")

    def __init__(self) -> None:
        super().__init__()
        self.pool = Pool(16, 8)
        self.live: set[int] = set()
        self.freed: list[lowlat.Block] = []
        self.exhausted = 0

    @rule(target=blocks)
    def alloc(self):
        b = self.pool.try_alloc()
        if len(self.live) == 8:
            assert b is None
            self.exhausted += 1
            return None
        assert b is not None and b.address not in self.live
        self.live.add(b.address)
        b.view()[:] = b.address.to_bytes(8, "little") * 2  # mark it
        return b

    @rule(b=consumes(blocks))
    def free(self, b):
        if b is None:
            return
        assert bytes(b.view()[:8]) == b.address.to_bytes(8, "little") or b.address not in self.live
        self.pool.free(b)
        self.live.discard(b.address)
        self.freed.append(b)

    @rule(data=st.data())
    def free_again(self, data):
        if not self.freed:
            return
        b = data.draw(st.sampled_from(self.freed))
        if b.address in self.live:  # reallocated since: freeing it now is legitimate, skip
            return
        with pytest.raises(DoubleFreeError):
            self.pool.free(b)

    @invariant()
    def counters_match(self):
        s = self.pool.stats()
        assert s.in_use == len(self.live)
        assert s.exhausted == self.exhausted
        assert s.high_water >= s.in_use


PoolModel.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestPoolModel = PoolModel.TestCase


def test_status_names_come_from_the_core() -> None:
    from lowlat.core._lib import ffi
    from lowlat.core.errors import EXPLANATIONS, STATUS_NAMES, CoreError, check_status

    elements = ffi.typeof("enum ll_status").elements
    assert set(STATUS_NAMES) == set(elements) and set(EXPLANATIONS) <= set(elements.values())
    assert STATUS_NAMES[0] == "LL_OK" and STATUS_NAMES[-2] == "LL_EINVAL (invalid argument)"
    with pytest.raises(CoreError, match=r"resize failed: LL_EDOUBLE \(double free\)"):
        check_status(-3, "resize")
    assert check_status(5, "count") == 5


def test_blocks_become_invalid_on_reset_and_on_free() -> None:
    """A Block kept across reset() used to free another alloc()'s block (two
    alloc()s then returned the same memory); now it is refused."""
    from lowlat.core.pool import StaleBlockError

    p = Pool(16, 2)
    old = p.alloc()
    p.reset()
    live = p.alloc()
    assert live.address == old.address and live.valid and not old.valid
    with pytest.raises(StaleBlockError, match="the pool was reset since it was allocated"):
        p.free(old)
    with pytest.raises(StaleBlockError, match="view\\(\\) of block 0 .* no longer yours"):
        old.view()
    other = p.alloc()
    assert other.address != live.address  # the live block was not freed behind its owner's back
    p.free(live)
    again = p.alloc()  # the same memory, a new allocation
    with pytest.raises(StaleBlockError, match="freed, and a later alloc\\(\\) has been handed the same memory"):
        p.free(live)
    assert issubclass(StaleBlockError, DoubleFreeError) and p.in_use == 2
    p.free(again)
    with pytest.raises(DoubleFreeError, match="already free"):
        p.free(again)  # a plain double free is still the C pool's to detect (and count)
    assert p.stats().bad_frees == 1
