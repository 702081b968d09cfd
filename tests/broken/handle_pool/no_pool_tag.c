/* BROKEN: every pool has the same tag (another pool's handles are accepted). EXPECT foreign: another pool */
#include "handle_pool.h"

#include <stdlib.h>

/* handle = | tag (8) | generation (8) | slot + 1 (16) | */
struct hpool {
    size_t block;
    uint32_t n, top, tag;
    unsigned char *mem;
    uint8_t *gen, *used;
    uint32_t *stack;
};

static uint32_t tags;

hpool *hpool_create(size_t block_size, size_t count)
{
    if (!block_size || !count || count > 0xffff || block_size > SIZE_MAX / count)
        return NULL;
    hpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->mem = malloc(block_size * count);
    p->gen = calloc(count, 1);
    p->used = calloc(count, 1);
    p->stack = malloc(count * sizeof *p->stack);
    if (!p->mem || !p->gen || !p->used || !p->stack) {
        hpool_destroy(p);
        return NULL;
    }
    p->block = block_size;
    p->n = p->top = (uint32_t)count;
    p->tag = 1;
    for (uint32_t i = 0; i < p->n; i++)
        p->stack[i] = p->n - 1 - i;
    return p;
}

void hpool_destroy(hpool *p)
{
    if (!p)
        return;
    free(p->mem);
    free(p->gen);
    free(p->used);
    free(p->stack);
    free(p);
}

uint32_t hpool_alloc(hpool *p)
{
    if (!p->top)
        return 0;
    uint32_t i = p->stack[--p->top];
    p->used[i] = 1;
    return (p->tag << 24) | ((uint32_t)p->gen[i] << 16) | (i + 1);
}

/* The slot of a live handle of this pool, or -1. */
static long slot(const hpool *p, uint32_t h)
{
    uint32_t i = (h & 0xffff) - 1;
    if ((h & 0xffff) == 0 || i >= p->n || (h >> 24) != p->tag)
        return -1;
    if (!p->used[i] || p->gen[i] != ((h >> 16) & 0xff))
        return -1;
    return (long)i;
}

void *hpool_get(hpool *p, uint32_t handle)
{
    long i = slot(p, handle);
    return i < 0 ? NULL : p->mem + (size_t)i * p->block;
}

int hpool_free(hpool *p, uint32_t handle)
{
    long i = slot(p, handle);
    if (i < 0)
        return -1;
    p->used[i] = 0;
    p->gen[i]++;
    p->stack[p->top++] = (uint32_t)i;
    return 0;
}
