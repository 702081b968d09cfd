/* BROKEN: a racy publish hidden from ThreadSanitizer by no_sanitize. EXPECT *: switches a sanitizer off */
#include "mpmc.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct {
    _Atomic size_t seq;
    uint64_t v;
} cell;

struct mpmc_queue {
    alignas(64) _Atomic size_t enq;
    alignas(64) _Atomic size_t deq;
    alignas(64) size_t mask;
    cell *cells;
};

mpmc_queue *mpmc_create(size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) || capacity > SIZE_MAX / sizeof(cell))
        return NULL;
    mpmc_queue *q = calloc(1, sizeof *q);
    cell *cells = calloc(capacity, sizeof *cells);
    if (!q || !cells) {
        free(q);
        free(cells);
        return NULL;
    }
    for (size_t i = 0; i < capacity; i++)
        atomic_init(&cells[i].seq, i);
    q->cells = cells;
    q->mask = capacity - 1;
    return q;
}

void mpmc_destroy(mpmc_queue *q) { free(q); /* the cells are never freed */ }

void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos)
{
    for (size_t i = 0; i <= q->mask; i++)
        atomic_store_explicit(&q->cells[(pos + i) & q->mask].seq, (size_t)(pos + i), memory_order_relaxed);
    atomic_store_explicit(&q->enq, (size_t)pos, memory_order_relaxed);
    atomic_store_explicit(&q->deq, (size_t)pos, memory_order_relaxed);
}

void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue)
{
    /* relaxed: no other thread pushes or pops now (mpmc.h). */
    *enqueue = (uint64_t)atomic_load_explicit(&q->enq, memory_order_relaxed);
    *dequeue = (uint64_t)atomic_load_explicit(&q->deq, memory_order_relaxed);
}

__attribute__((no_sanitize("thread"))) bool mpmc_try_push(mpmc_queue *q, uint64_t value)
{
    size_t t = atomic_load_explicit(&q->enq, memory_order_relaxed);
    for (;;) {
        cell *c = &q->cells[t & q->mask];
        intptr_t d = (intptr_t)(atomic_load_explicit(&c->seq, memory_order_acquire) - t);
        if (d < 0)
            return false;
        if (d > 0) {
            t = atomic_load_explicit(&q->enq, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&q->enq, &t, t + 1, memory_order_relaxed, memory_order_relaxed)) {
            c->v = value;
            atomic_store_explicit(&c->seq, t + 1, memory_order_relaxed); /* races */
            return true;
        }
    }
}

bool mpmc_try_pop(mpmc_queue *q, uint64_t *out)
{
    size_t t = atomic_load_explicit(&q->deq, memory_order_relaxed);
    for (;;) {
        cell *c = &q->cells[t & q->mask];
        intptr_t d = (intptr_t)(atomic_load_explicit(&c->seq, memory_order_acquire) - (t + 1));
        if (d < 0)
            return false;
        if (d > 0) {
            t = atomic_load_explicit(&q->deq, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&q->deq, &t, t + 1, memory_order_relaxed, memory_order_relaxed)) {
            *out = c->v;
            atomic_store_explicit(&c->seq, t + q->mask + 1, memory_order_release);
            return true;
        }
    }
}
