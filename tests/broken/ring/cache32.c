/* BROKEN: 32-bit cached cursor copies. EXPECT wrap: pop from an empty ring returned */
#include "ring.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

struct ring {
    alignas(128) _Atomic uint64_t tail;
    uint32_t tail_seen_by_producer; /* unused */
    uint32_t head_copy;             /* the producer's copy of head: only 32 bits */
    alignas(128) _Atomic uint64_t head;
    uint32_t tail_copy; /* the consumer's copy of tail: only 32 bits */
    alignas(128) uint64_t mask;
    uint64_t *cells;
};

ring *ring_create(size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) != 0 || capacity > SIZE_MAX / 8)
        return NULL;
    ring *r = aligned_alloc(128, sizeof *r);
    if (!r)
        return NULL;
    r->cells = calloc(capacity, sizeof *r->cells);
    if (!r->cells) {
        free(r);
        return NULL;
    }
    r->mask = capacity - 1;
    r->head_copy = r->tail_copy = 0;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    return r;
}

void ring_destroy(ring *r)
{
    if (r) {
        free(r->cells);
        free(r);
    }
}

void ring_debug_set_position(ring *r, uint64_t pos)
{
    atomic_store_explicit(&r->tail, pos, memory_order_relaxed);
    atomic_store_explicit(&r->head, pos, memory_order_relaxed);
    r->head_copy = (uint32_t)pos;
    r->tail_copy = (uint32_t)pos;
}

bool ring_try_push(ring *r, uint64_t v)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - r->head_copy > r->mask) {
        r->head_copy = (uint32_t)REMOTE_LOAD(&r->head, memory_order_acquire);
        if (t - r->head_copy > r->mask)
            return false;
    }
    r->cells[t & r->mask] = v;
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return true;
}

bool ring_try_pop(ring *r, uint64_t *out)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h == r->tail_copy) {
        r->tail_copy = (uint32_t)REMOTE_LOAD(&r->tail, memory_order_acquire);
        if (h == r->tail_copy)
            return false;
    }
    *out = r->cells[h & r->mask];
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return true;
}
