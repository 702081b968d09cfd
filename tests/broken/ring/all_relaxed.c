/* BROKEN: every cursor read and write relaxed, the slots atomics too: no race for TSan, right on x86, wrong on ARM64. EXPECT ordering: memory_order_relaxed */
#include "ring.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

struct ring {
    /* Cursors are free-running counters: tail - head is the fill level. */
    alignas(128) _Atomic uint64_t tail; /* written by the producer */
    uint64_t head_cache;                /* the producer's copy of head */
    alignas(128) _Atomic uint64_t head; /* written by the consumer */
    uint64_t tail_cache;                /* the consumer's copy of tail */
    alignas(128) uint64_t mask;         /* read-only after create */
    _Atomic uint64_t *slots;
};

ring *ring_create(size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) || capacity > SIZE_MAX / sizeof(uint64_t))
        return NULL;
    ring *r = aligned_alloc(128, sizeof *r);
    if (!r)
        return NULL;
    r->slots = malloc(capacity * sizeof *r->slots);
    if (!r->slots) {
        free(r);
        return NULL;
    }
    r->mask = capacity - 1;
    r->head_cache = r->tail_cache = 0;
    atomic_init(&r->tail, 0);
    atomic_init(&r->head, 0);
    return r;
}

void ring_destroy(ring *r)
{
    if (!r)
        return;
    free(r->slots);
    free(r);
}

void ring_debug_set_position(ring *r, uint64_t pos)
{
    /* relaxed: the ring is empty and no other thread uses it (ring.h). */
    atomic_store_explicit(&r->tail, pos, memory_order_relaxed);
    atomic_store_explicit(&r->head, pos, memory_order_relaxed);
    r->head_cache = r->tail_cache = pos;
}

bool ring_try_push(ring *r, uint64_t v)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed); /* our own cursor */
    if (tail - r->head_cache > r->mask) {
        /* acquire: pairs with pop's release; the consumer is done with the
         * slots below head before we overwrite them. */
        r->head_cache = REMOTE_LOAD(&r->head, memory_order_relaxed);
        if (tail - r->head_cache > r->mask)
            return false;
    }
    atomic_store_explicit(&r->slots[tail & r->mask], v, memory_order_relaxed);
    /* release: the slot's value is visible before the new tail is. */
    atomic_store_explicit(&r->tail, tail + 1, memory_order_relaxed);
    return true;
}

bool ring_try_pop(ring *r, uint64_t *out)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed); /* our own cursor */
    if (head == r->tail_cache) {
        /* acquire: pairs with push's release; the slot's value is visible. */
        r->tail_cache = REMOTE_LOAD(&r->tail, memory_order_relaxed);
        if (head == r->tail_cache)
            return false;
    }
    *out = atomic_load_explicit(&r->slots[head & r->mask], memory_order_relaxed);
    /* release: our read is done before the producer may reuse the slot. */
    atomic_store_explicit(&r->head, head + 1, memory_order_relaxed);
    return true;
}
