/* pool_inline.h - internal: the pool's struct and its hot path as inline
 * functions, so ll_pool_alloc/ll_pool_free (pool.c) and the benchmark loops
 * (csrc/bench/bench_alloc.c) run the same code without a call in between. */
#ifndef LL_POOL_INLINE_H
#define LL_POOL_INLINE_H

#include <stddef.h>
#include <stdint.h>

#include "ll_common.h"
#include "pool.h"

/* A free block's first bytes hold the pointer to the next free block
 * (intrusive list: the free list costs no memory of its own). */
typedef struct ll_free_block {
    struct ll_free_block *next;
} ll_free_block;

struct ll_pool {
    ll_free_block *free_list; /* touched by every alloc/free: first field */
    size_t in_use;
    size_t high_water;
    uint64_t exhausted;
    unsigned char *storage; /* block_count * block_size bytes, contiguous */
    size_t block_size;
    size_t block_count;
    unsigned char *live; /* checked mode: 1 byte per block, 1 = handed out */
    uint64_t bad_frees;
    unsigned flags;
};

static inline void *ll_pool_alloc_inline(ll_pool *p)
{
    ll_free_block *b = p->free_list;
    if (b == NULL) {
        p->exhausted++;
        return NULL;
    }
    p->free_list = b->next;
    if (++p->in_use > p->high_water)
        p->high_water = p->in_use;
    if (p->live)
        p->live[((unsigned char *)b - p->storage) / p->block_size] = 1;
    return b;
}

/* Index of the block starting at `ptr`, or -1 if `ptr` is not the start of
 * one of this pool's blocks.  Compares as integers: pointer comparison
 * outside one object is undefined, and a foreign pointer is exactly that. */
static inline long long ll_pool__index(const ll_pool *p, const void *ptr)
{
    uintptr_t lo = (uintptr_t)p->storage, at = (uintptr_t)ptr;
    if (at < lo || at - lo >= p->block_size * p->block_count || (at - lo) % p->block_size != 0)
        return -1;
    return (long long)((at - lo) / p->block_size);
}

static inline int ll_pool_free_inline(ll_pool *p, void *block)
{
    if (p->live) {
        long long i = ll_pool__index(p, block);
        if (i < 0) {
            p->bad_frees++;
            return LL_EFOREIGN;
        }
        if (!p->live[i]) {
            p->bad_frees++;
            return LL_EDOUBLE;
        }
        p->live[i] = 0;
    }
    ll_free_block *b = block;
    b->next = p->free_list;
    p->free_list = b;
    p->in_use--;
    return LL_OK;
}

#endif
