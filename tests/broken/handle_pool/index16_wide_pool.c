/* BROKEN: 70,000 blocks accepted with a 16-bit index field. EXPECT large: narrower than the pool */
#include "handle_pool.h"

#include <stdatomic.h>
#include <stdlib.h>

/* A handle is 32 bits: | pool tag (6) | generation (10) | index + 1 (16) |.
 * index + 1 keeps every valid handle nonzero; the generation of a slot
 * advances on every free, so old handles to it stop matching; the tag
 * differs between pools created one after another (1..63, then it wraps),
 * so a handle from the pool next door does not match either.  Limits: 65,535
 * blocks; a handle 1,024 generations stale matches again (the price of 32
 * bits; 64-bit handles push that out of reach). */
#define INDEX_BITS 16
#define GEN_BITS 10
#define TAG_BITS 6
#define MAX_COUNT ((1u << INDEX_BITS) - 1)
#define GEN_MASK ((1u << GEN_BITS) - 1)
#define TAG_MASK ((1u << TAG_BITS) - 1)

struct hpool {
    unsigned char *storage; /* count * block_size bytes */
    size_t block_size;
    uint32_t count;
    uint32_t tag;
    uint16_t *generation; /* per slot */
    unsigned char *live;  /* per slot: 1 while handed out */
    uint16_t *free_stack; /* indices of free slots */
    uint32_t free_top;
};

static _Atomic uint32_t next_tag = 0;

static uint32_t make_handle(const hpool *p, uint32_t index)
{
    return (p->tag << (GEN_BITS + INDEX_BITS)) | ((uint32_t)p->generation[index] << INDEX_BITS) | (index + 1);
}

/* The slot a handle names, or -1 if it names none of this pool's live blocks. */
static long slot_of(const hpool *p, uint32_t h)
{
    uint32_t index1 = h & MAX_COUNT;
    uint32_t gen = (h >> INDEX_BITS) & GEN_MASK;
    uint32_t tag = h >> (GEN_BITS + INDEX_BITS);
    if (h == 0 || index1 == 0 || index1 > p->count || tag != p->tag)
        return -1;
    uint32_t i = index1 - 1;
    if (!p->live[i] || p->generation[i] != gen)
        return -1;
    return (long)i;
}

hpool *hpool_create(size_t block_size, size_t count)
{
    if (block_size == 0 || count == 0 || block_size > SIZE_MAX / count)
        return NULL;
    hpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->storage = malloc(block_size * count);
    p->generation = calloc(count, sizeof *p->generation);
    p->live = calloc(count, 1);
    p->free_stack = malloc(count * sizeof *p->free_stack);
    if (!p->storage || !p->generation || !p->live || !p->free_stack) {
        hpool_destroy(p);
        return NULL;
    }
    p->block_size = block_size;
    p->count = (uint32_t)count;
    /* relaxed: the tag only has to differ from the previous pools' tags. */
    p->tag = atomic_fetch_add_explicit(&next_tag, 1, memory_order_relaxed) % TAG_MASK + 1;
    for (uint32_t i = 0; i < p->count; i++)
        p->free_stack[i] = (uint16_t)(p->count - 1 - i); /* slot 0 is handed out first */
    p->free_top = p->count;
    return p;
}

void hpool_destroy(hpool *p)
{
    if (!p)
        return;
    free(p->storage);
    free(p->generation);
    free(p->live);
    free(p->free_stack);
    free(p);
}

uint32_t hpool_alloc(hpool *p)
{
    if (p->free_top == 0)
        return 0;
    uint32_t i = p->free_stack[--p->free_top];
    p->live[i] = 1;
    return make_handle(p, i);
}

void *hpool_get(hpool *p, uint32_t handle)
{
    long i = slot_of(p, handle);
    return i < 0 ? NULL : p->storage + (size_t)i * p->block_size;
}

int hpool_free(hpool *p, uint32_t handle)
{
    long i = slot_of(p, handle);
    if (i < 0)
        return -1;
    p->live[i] = 0;
    p->generation[i] = (uint16_t)((p->generation[i] + 1) & GEN_MASK); /* old handles stop matching */
    p->free_stack[p->free_top++] = (uint16_t)i;
    return 0;
}
