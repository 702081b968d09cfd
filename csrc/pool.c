/* pool.c - creation, destruction and bookkeeping of the block pool; the hot
 * path itself is in pool_inline.h. */
#include <stdlib.h>
#include <string.h>

#include "ll_arch.h"
#include "pool_inline.h"

static void link_all(ll_pool *p)
{
    /* Thread the free list through the blocks in address order, so the first
     * allocations walk memory forwards (friendly to the prefetcher). */
    p->free_list = NULL;
    for (size_t i = p->block_count; i-- > 0;) {
        ll_free_block *b = (ll_free_block *)(p->storage + i * p->block_size);
        b->next = p->free_list;
        p->free_list = b;
    }
    p->in_use = 0;
    if (p->live)
        memset(p->live, 0, p->block_count);
}

ll_pool *ll_pool_create(size_t block_size, size_t block_count, unsigned flags)
{
    if (block_size == 0 || block_count == 0)
        return NULL;
    size_t align = (flags & LL_POOL_CACHE_ALIGNED) ? LL_CACHELINE : sizeof(void *);
    if (block_size > SIZE_MAX - align)
        return NULL;
    size_t bs = (block_size + align - 1) / align * align;
    if (block_count > SIZE_MAX / bs)
        return NULL;
    size_t bytes = bs * block_count;
    /* aligned_alloc wants a size that is a multiple of its alignment (at
     * least 16 here, malloc's own); the tail beyond bytes is unused. */
    size_t storage_align = align < 16 ? 16 : align;
    if (bytes > SIZE_MAX - storage_align)
        return NULL;
    size_t storage_bytes = (bytes + storage_align - 1) / storage_align * storage_align;
    ll_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->storage = aligned_alloc(storage_align, storage_bytes);
    if (!p->storage) {
        free(p);
        return NULL;
    }
    if (flags & LL_POOL_CHECKED) {
        p->live = calloc(block_count, 1);
        if (!p->live) {
            free(p->storage);
            free(p);
            return NULL;
        }
    }
    p->block_size = bs;
    p->block_count = block_count;
    p->flags = flags;
    link_all(p);
    return p;
}

void ll_pool_destroy(ll_pool *p)
{
    if (!p)
        return;
    free(p->live);
    free(p->storage);
    free(p);
}

void *ll_pool_alloc(ll_pool *p) { return ll_pool_alloc_inline(p); }

int ll_pool_free(ll_pool *p, void *block)
{
    if (!block)
        return LL_EINVAL;
    return ll_pool_free_inline(p, block);
}

void ll_pool_reset(ll_pool *p) { link_all(p); }

long long ll_pool_index_of(const ll_pool *p, const void *ptr) { return ll_pool__index(p, ptr); }

int ll_pool_owns(const ll_pool *p, const void *ptr) { return ll_pool_index_of(p, ptr) >= 0; }

void ll_pool_get_stats(const ll_pool *p, ll_pool_stats *out)
{
    out->block_size = p->block_size;
    out->block_count = p->block_count;
    out->in_use = p->in_use;
    out->high_water = p->high_water;
    out->exhausted = p->exhausted;
    out->bad_frees = p->bad_frees;
    out->bytes_reserved = p->block_size * p->block_count;
    out->flags = p->flags;
}
