"""``Pool``: the fixed-size block pool of ``csrc/pool.c``, from Python.

The Python face always runs the pool in its checked mode, so a double free or
a foreign block raises instead of corrupting the free list.  (The unchecked
mode exists for C callers and is what the benchmarks time.)  A :class:`Block`
is valid from its ``alloc()`` to its ``free()`` or the pool's ``reset()``;
used after that (freed again, or its ``view()``), it raises
:class:`StaleBlockError` rather than reach a block that may by then belong to
another ``alloc()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.errors import DoubleFreeError, ForeignPointerError, PoolError, PoolExhaustedError
from lowlat.core.validate import int_arg

CACHE_LINE = 64


class StaleBlockError(DoubleFreeError):
    """A :class:`Block` used after its allocation ended (it was freed, or the
    pool was reset): its memory may belong to another ``alloc()`` now."""


@dataclass(frozen=True)
class PoolStats:
    """Counters of a pool.  Sizes in bytes."""

    block_size: int
    block_count: int
    in_use: int
    high_water: int
    exhausted: int
    bad_frees: int
    bytes_reserved: int


class Block:
    """A block handed out by a :class:`Pool`, valid until it is freed or the
    pool is reset.

    It keeps its pool alive.  ``view()`` is a writable memoryview of the
    block's bytes (only while the block is valid: a view taken earlier stays
    memory of the pool, but once the block is freed its contents belong to
    whoever allocates it next).
    """

    __slots__ = ("_gen", "_index", "_pool", "_ptr", "_serial")

    def __init__(self, pool: Pool, ptr: Any, index: int, serial: int = 0, gen: int = 0) -> None:
        self._pool = pool
        self._ptr = ptr
        self._index = index
        self._serial = serial  # this allocation's number in its pool
        self._gen = gen  # the pool's reset count when it was allocated

    @property
    def address(self) -> int:
        """The block's address (an int), as C sees it."""
        return int(ffi.cast("uintptr_t", self._ptr))

    @property
    def index(self) -> int:
        """Position of the block in the pool's storage (0-based)."""
        return self._index

    @property
    def pool(self) -> Pool:
        return self._pool

    @property
    def valid(self) -> bool:
        """True from its ``alloc()`` until its ``free()`` or the pool's ``reset()``."""
        return self._pool._stale_reason(self) is None

    def view(self) -> memoryview:
        """The block's ``block_size`` bytes, writable; StaleBlockError once
        the block was freed or the pool reset."""
        self._pool._check_valid(self, "view() of")
        return memoryview(ffi.buffer(self._ptr, self._pool.block_size))

    def __repr__(self) -> str:
        return f"<Block {self._index} of {self._pool!r} at {self.address:#x}>"


class Pool:
    """``count`` blocks of ``block_size`` bytes in one contiguous allocation.

    ``block_size`` is rounded up to a pointer (8 bytes) and, with
    ``cache_aligned=True``, to a 64-byte cache line.  ``alloc()`` and
    ``free()`` are O(1); not thread-safe (one pool per thread).  The C pool is
    owned by this object and freed with it.
    """

    def __init__(self, block_size: int, count: int, *, cache_aligned: bool = False) -> None:
        bs = int_arg(block_size, "block_size")
        n = int_arg(count, "count")
        if not isinstance(cache_aligned, (bool, np.bool_)):
            raise TypeError(
                f"cache_aligned must be True or False, got {type(cache_aligned).__name__} {cache_aligned!r}"
            )
        if bs < 1:
            raise ValueError(f"block_size must be >= 1 byte, got {bs}")
        if n < 1:
            raise ValueError(f"count must be >= 1 block, got {n}")
        align = CACHE_LINE if cache_aligned else ffi.sizeof("void *")
        rounded = -(-bs // align) * align
        limit = 2**63 - 1
        if rounded * n > limit:
            raise ValueError(
                f"block_size * count = {rounded} * {n} bytes overflows; the pool must fit in {limit} bytes"
            )
        flags = lib.LL_POOL_CHECKED | (lib.LL_POOL_CACHE_ALIGNED if cache_aligned else 0)
        ptr = lib.ll_pool_create(bs, n, flags)
        if ptr == ffi.NULL:
            raise MemoryError(f"could not allocate a pool of {n} blocks of {rounded} bytes ({rounded * n} bytes)")
        self._p = ffi.gc(ptr, lib.ll_pool_destroy)
        self._live: dict[int, int] = {}  # block index -> serial of the Block that holds it
        self._serial = 0
        self._gen = 0  # reset() count
        self.requested_block_size = bs
        self.cache_aligned = bool(cache_aligned)
        st = self.stats()
        self.block_size = st.block_size
        self.count = st.block_count

    # -- allocation ---------------------------------------------------------
    def try_alloc(self) -> Block | None:
        """A free block, or None when all are in use (the attempt is counted)."""
        ptr = lib.ll_pool_alloc(self._p)
        if ptr == ffi.NULL:
            return None
        index = int(lib.ll_pool_index_of(self._p, ptr))
        self._serial += 1
        self._live[index] = self._serial
        return Block(self, ptr, index, self._serial, self._gen)

    def _stale_reason(self, block: Block) -> str | None:
        """Why ``block`` (of this pool) is no longer valid, or None."""
        if block._gen != self._gen:
            return "the pool was reset since it was allocated (reset() returned every block)"
        serial = self._live.get(block._index)
        if serial == block._serial:
            return None
        if serial is None:
            return "it was freed"
        return "it was freed, and a later alloc() has been handed the same memory"

    def _check_valid(self, block: Block, what: str) -> None:
        why = self._stale_reason(block)
        if why is not None:
            raise StaleBlockError(
                f"{what} block {block._index} at {block.address:#x}, which is no longer yours: {why}; "
                "allocate a new block"
            )

    def alloc(self) -> Block:
        """A free block; raises :class:`PoolExhaustedError` when all are in use."""
        b = self.try_alloc()
        if b is None:
            raise PoolExhaustedError(
                f"pool exhausted: all {self.count} blocks are in use "
                f"({self.stats().exhausted} failed allocations so far); free a block or create a larger pool"
            )
        return b

    def free(self, block: Block | int) -> None:
        """Returns ``block`` (a :class:`Block`, or an int address) to the pool.

        Raises :class:`DoubleFreeError` if it is already free,
        :class:`StaleBlockError` for a Block freed before (or kept across
        ``reset()``) whose memory another ``alloc()`` now holds, and
        :class:`ForeignPointerError` if this pool never handed it out.  An int
        address carries no history: pass the Block where you have it.
        """
        if isinstance(block, Block):
            if block.pool is not self:
                raise ForeignPointerError(f"{block!r} belongs to another pool; free it with that pool's free()")
            why = self._stale_reason(block)
            if why is not None and why != "it was freed":  # a plain double free: the C pool says so, and counts it
                self._check_valid(block, "free() of")
            ptr = block._ptr
        elif isinstance(block, int) and not isinstance(block, bool):
            if block <= 0 or block >= 2**64:
                raise ForeignPointerError(f"address {block:#x} is not a block of this pool")
            ptr = ffi.cast("void *", block)
        else:
            raise TypeError(f"free() takes a Block or an int address, got {type(block).__name__}")
        rc = lib.ll_pool_free(self._p, ptr)
        if rc == lib.LL_EDOUBLE:
            raise DoubleFreeError(
                f"double free: block {lib.ll_pool_index_of(self._p, ptr)} at {int(ffi.cast('uintptr_t', ptr)):#x} "
                "is already free"
            )
        if rc == lib.LL_EFOREIGN:
            raise ForeignPointerError(
                f"address {int(ffi.cast('uintptr_t', ptr)):#x} is not the start of a block of this pool "
                f"(blocks are {self.block_size} bytes apart, {self.count} of them)"
            )
        if rc != lib.LL_OK:
            raise PoolError(f"free() refused the block (status {rc})")
        self._live.pop(int(lib.ll_pool_index_of(self._p, ptr)), None)

    def reset(self) -> None:
        """Returns every block to the pool at once: every outstanding Block
        becomes invalid (freeing it or taking its view() raises
        StaleBlockError).  The exhaustion and bad-free counters are kept."""
        lib.ll_pool_reset(self._p)
        self._gen += 1
        self._live.clear()

    def owns(self, block: Block | int) -> bool:
        """True if ``block`` (a Block or an int address) is the start of one
        of this pool's blocks."""
        if isinstance(block, Block):
            addr = block.address
        elif isinstance(block, int) and not isinstance(block, bool):
            addr = block
        else:
            raise TypeError(f"owns() takes a Block or an int address, got {type(block).__name__}")
        if not 0 < addr < 2**64:
            return False
        return bool(lib.ll_pool_owns(self._p, ffi.cast("void *", addr)))

    # -- counters -------------------------------------------------------------
    def stats(self) -> PoolStats:
        s = ffi.new("ll_pool_stats *")
        lib.ll_pool_get_stats(self._p, s)
        return PoolStats(
            block_size=int(s.block_size),
            block_count=int(s.block_count),
            in_use=int(s.in_use),
            high_water=int(s.high_water),
            exhausted=int(s.exhausted),
            bad_frees=int(s.bad_frees),
            bytes_reserved=int(s.bytes_reserved),
        )

    @property
    def in_use(self) -> int:
        return self.stats().in_use

    def __len__(self) -> int:
        """Blocks in use."""
        return self.in_use

    def __repr__(self) -> str:
        s = self.stats()
        return f"<Pool {s.in_use}/{s.block_count} blocks of {s.block_size} B in use>"
