/* BROKEN: mpmc_debug_set_position does nothing (the getter reports the real tickets, which start at 0), so the wrap checks would test no wrap-around. EXPECT hook: mpmc_debug_set_position does nothing */
#include "mpmc.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

/* A correct 64-bit sequence-numbered queue: only the hook is missing. */
typedef struct {
    _Atomic uint64_t turn; /* t: free for ticket t; t + 1: holds ticket t's item */
    uint64_t item;
} slot;

struct mpmc_queue {
    alignas(64) _Atomic uint64_t put;
    alignas(64) _Atomic uint64_t take;
    alignas(64) uint64_t mask;
    slot *slots;
};

mpmc_queue *mpmc_create(size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) || capacity > SIZE_MAX / sizeof(slot))
        return NULL;
    mpmc_queue *q = aligned_alloc(64, sizeof *q);
    if (!q)
        return NULL;
    q->slots = calloc(capacity, sizeof *q->slots);
    if (!q->slots) {
        free(q);
        return NULL;
    }
    for (uint64_t i = 0; i < capacity; i++)
        atomic_init(&q->slots[i].turn, i);
    q->mask = capacity - 1;
    atomic_init(&q->put, 0);
    atomic_init(&q->take, 0);
    return q;
}

void mpmc_destroy(mpmc_queue *q)
{
    if (q)
        free(q->slots);
    free(q);
}

void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos)
{
    (void)q; /* the defect: the tickets stay where they are */
    (void)pos;
}

void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue)
{
    /* relaxed: no other thread pushes or pops now (mpmc.h). */
    *enqueue = atomic_load_explicit(&q->put, memory_order_relaxed);
    *dequeue = atomic_load_explicit(&q->take, memory_order_relaxed);
}

bool mpmc_try_push(mpmc_queue *q, uint64_t value)
{
    uint64_t t = atomic_load_explicit(&q->put, memory_order_relaxed); /* relaxed: a ticket counter */
    for (;;) {
        slot *s = &q->slots[t & q->mask];
        /* acquire: the consumer of the last lap has finished reading. */
        int64_t d = (int64_t)(atomic_load_explicit(&s->turn, memory_order_acquire) - t);
        if (d < 0)
            return false;
        if (d > 0) {
            t = atomic_load_explicit(&q->put, memory_order_relaxed);
            continue;
        }
        /* relaxed: the slot's turn carries the ordering. */
        if (atomic_compare_exchange_weak_explicit(&q->put, &t, t + 1, memory_order_relaxed, memory_order_relaxed)) {
            s->item = value;
            atomic_store_explicit(&s->turn, t + 1, memory_order_release); /* release: publishes the item */
            return true;
        }
    }
}

bool mpmc_try_pop(mpmc_queue *q, uint64_t *out)
{
    uint64_t t = atomic_load_explicit(&q->take, memory_order_relaxed); /* relaxed: a ticket counter */
    for (;;) {
        slot *s = &q->slots[t & q->mask];
        /* acquire: the producer's item is visible. */
        int64_t d = (int64_t)(atomic_load_explicit(&s->turn, memory_order_acquire) - (t + 1));
        if (d < 0)
            return false;
        if (d > 0) {
            t = atomic_load_explicit(&q->take, memory_order_relaxed);
            continue;
        }
        /* relaxed: the slot's turn carries the ordering. */
        if (atomic_compare_exchange_weak_explicit(&q->take, &t, t + 1, memory_order_relaxed, memory_order_relaxed)) {
            *out = s->item;
            atomic_store_explicit(&s->turn, t + q->mask + 1, memory_order_release); /* release: the read is done */
            return true;
        }
    }
}
