/* pool.h - a fixed-size block pool: one allocation up front, O(1) alloc and
 * free from an intrusive free list, no system call or lock afterwards.
 *
 * Not thread-safe by design: a pool belongs to one thread (the hot path's).
 * Ownership: ll_pool_create allocates the pool and all its blocks;
 * ll_pool_destroy frees them; blocks handed out are valid until then. */
#ifndef LL_POOL_H
#define LL_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct ll_pool ll_pool;

enum ll_pool_flags {
    LL_POOL_CACHE_ALIGNED = 1, /* round blocks up to a cache line, storage line-aligned */
    LL_POOL_CHECKED = 2        /* detect double free and foreign pointers */
};

/* block_size is rounded up to a pointer (8 bytes on 64-bit) and, with
 * LL_POOL_CACHE_ALIGNED, to the cache line LL_CACHELINE (common/ll_arch.h:
 * 64 bytes; 128 on Apple arm64).  NULL when block_size or block_count is 0,
 * when block_size * block_count overflows, or when memory is short. */
ll_pool *ll_pool_create(size_t block_size, size_t block_count, unsigned flags);
void ll_pool_destroy(ll_pool *pool);

/* A free block, or NULL when all are in use (counted in `exhausted`). */
void *ll_pool_alloc(ll_pool *pool);
/* LL_OK.  In checked mode also LL_EDOUBLE (already free) and LL_EFOREIGN (not
 * a block of this pool: outside it, or not at a block boundary); the pool is
 * unchanged then.  Unchecked mode trusts the caller. NULL gives LL_EINVAL. */
int ll_pool_free(ll_pool *pool, void *block);
/* Returns every block to the free list (all handed-out pointers become
 * free blocks).  Counters other than in_use are kept. */
void ll_pool_reset(ll_pool *pool);

/* 1 if `p` is the start of one of this pool's blocks, else 0. */
int ll_pool_owns(const ll_pool *pool, const void *p);
/* Index of the block at `p` (0..block_count-1), or -1 if not a block start. */
long long ll_pool_index_of(const ll_pool *pool, const void *p);

typedef struct {
    size_t block_size; /* after rounding, bytes */
    size_t block_count;
    size_t in_use;         /* blocks handed out now */
    size_t high_water;     /* most blocks ever in use at once */
    uint64_t exhausted;    /* allocs that returned NULL */
    uint64_t bad_frees;    /* frees refused in checked mode */
    size_t bytes_reserved; /* storage bytes: block_size * block_count */
    unsigned flags;
} ll_pool_stats;

void ll_pool_get_stats(const ll_pool *pool, ll_pool_stats *out);

#endif
