"""``Pool``: the fixed-size block pool of ``csrc/pool.c``, from Python.

The Python face always runs the pool in its checked mode, so a double free or
a foreign block raises instead of corrupting the free list.  (The unchecked
mode exists for C callers and is what the benchmarks time.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lowlat._check import int_arg
from lowlat._lib import ffi, lib
from lowlat.errors import DoubleFreeError, ForeignPointerError, PoolError, PoolExhaustedError

CACHE_LINE = 64


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
    """A block handed out by a :class:`Pool`.

    It keeps its pool alive.  ``view()`` is a writable memoryview of the
    block's bytes; it stays valid memory for as long as the pool lives, but
    its contents belong to whoever allocates the block next once freed.
    """

    __slots__ = ("_index", "_pool", "_ptr")

    def __init__(self, pool: Pool, ptr: Any, index: int) -> None:
        self._pool = pool
        self._ptr = ptr
        self._index = index

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

    def view(self) -> memoryview:
        """The block's ``block_size`` bytes, writable."""
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
        return Block(self, ptr, int(lib.ll_pool_index_of(self._p, ptr)))

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

        Raises :class:`DoubleFreeError` if it is already free and
        :class:`ForeignPointerError` if this pool never handed it out.
        """
        if isinstance(block, Block):
            if block.pool is not self:
                raise ForeignPointerError(f"{block!r} belongs to another pool; free it with that pool's free()")
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

    def reset(self) -> None:
        """Returns every block to the pool at once (all outstanding Blocks
        become free).  The exhaustion and bad-free counters are kept."""
        lib.ll_pool_reset(self._p)

    def owns(self, block: Block | int) -> bool:
        """True if ``block`` is the start of one of this pool's blocks."""
        addr = block.address if isinstance(block, Block) else int(block)
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
