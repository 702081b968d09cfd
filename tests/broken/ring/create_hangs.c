/* BROKEN: ring_create loops forever on a capacity it dislikes. EXPECT create_args: ring_create did not return */
#include "ring.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

struct ring {
    alignas(128) _Atomic uint64_t tail;
    uint64_t head_cache;
    alignas(128) _Atomic uint64_t head;
    uint64_t tail_cache;
    alignas(128) uint64_t mask;
    uint64_t *slots;
};

ring *ring_create(size_t capacity)
{
    /* "rounds up" to a power of two by doubling until it matches: never, for 0 */
    size_t cap = 1;
    while (cap != capacity)
        cap = cap * 2 ? cap * 2 : 1;
    ring *r = aligned_alloc(128, sizeof *r);
    if (!r)
        return NULL;
    r->slots = malloc(cap * sizeof *r->slots);
    if (!r->slots) {
        free(r);
        return NULL;
    }
    r->mask = cap - 1;
    r->head_cache = r->tail_cache = 0;
    atomic_init(&r->tail, 0);
    atomic_init(&r->head, 0);
    return r;
}

void ring_destroy(ring *r)
{
    if (r)
        free(r->slots);
    free(r);
}

void ring_debug_set_position(ring *r, uint64_t pos)
{
    atomic_store_explicit(&r->tail, pos, memory_order_relaxed);
    atomic_store_explicit(&r->head, pos, memory_order_relaxed);
    r->head_cache = r->tail_cache = pos;
}

bool ring_try_push(ring *r, uint64_t v)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - r->head_cache > r->mask) {
        r->head_cache = REMOTE_LOAD(&r->head, memory_order_acquire);
        if (t - r->head_cache > r->mask)
            return false;
    }
    r->slots[t & r->mask] = v;
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return true;
}

bool ring_try_pop(ring *r, uint64_t *out)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h == r->tail_cache) {
        r->tail_cache = REMOTE_LOAD(&r->tail, memory_order_acquire);
        if (h == r->tail_cache)
            return false;
    }
    *out = r->slots[h & r->mask];
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return true;
}
