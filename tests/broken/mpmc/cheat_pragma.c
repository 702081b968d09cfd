/* BROKEN: a #pragma that switches optimisation (and with it what the grader inspected) for the rest of the file. EXPECT *: #pragma */
#include "mpmc.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Each cell carries a sequence number that says whose turn it is.  For the
 * ticket t that maps to this cell (t & mask):
 *   seq == t      the cell is empty and waits for the producer holding t;
 *   seq == t + 1  the cell is full and waits for the consumer holding t;
 * after that consumer, seq == t + capacity: empty, for the next lap.
 * Producers and consumers take tickets from their own counter with a CAS; the
 * cell's seq, not the counters, publishes the value. */
/* Each cell on a cache line of its own: a producer filling cell i and a
 * consumer emptying cell i - 1 would otherwise write the same line (four
 * 16-byte cells to a line), and every such pair of calls would move the line
 * between their cores.  It costs 64 bytes per item of capacity, not 16. */
typedef struct {
    alignas(64) _Atomic size_t seq;
    uint64_t value;
} mpmc_cell;

struct mpmc_queue {
    /* Producers all write tail and consumers all write head: each on its own
     * line pair, so the two groups do not slow each other down. */
    alignas(128) _Atomic size_t tail;
    alignas(128) _Atomic size_t head;
    alignas(128) size_t mask; /* read-only after create */
    mpmc_cell *cells;
};

mpmc_queue *mpmc_create(size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) != 0 || capacity > SIZE_MAX / sizeof(mpmc_cell))
        return NULL;
    mpmc_queue *q = aligned_alloc(128, sizeof *q);
    if (!q)
        return NULL;
    q->cells = aligned_alloc(64, capacity * sizeof *q->cells); /* a multiple of 64: as aligned_alloc needs */
    if (!q->cells) {
        free(q);
        return NULL;
    }
    for (size_t i = 0; i < capacity; i++)
        atomic_init(&q->cells[i].seq, i);
    q->mask = capacity - 1;
    atomic_init(&q->tail, 0);
    atomic_init(&q->head, 0);
    return q;
}

void mpmc_destroy(mpmc_queue *q)
{
    if (!q)
        return;
    free(q->cells);
    free(q);
}

void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos)
{
    /* relaxed: the queue is empty and no other thread uses it (mpmc.h). */
    for (size_t i = 0; i <= q->mask; i++) {
        size_t t = (size_t)pos + i; /* the ticket that uses cell t & mask next */
        atomic_store_explicit(&q->cells[t & q->mask].seq, t, memory_order_relaxed);
    }
    atomic_store_explicit(&q->tail, (size_t)pos, memory_order_relaxed);
    atomic_store_explicit(&q->head, (size_t)pos, memory_order_relaxed);
}

void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue)
{
    /* relaxed: no other thread pushes or pops now (mpmc.h). */
    *enqueue = (uint64_t)atomic_load_explicit(&q->tail, memory_order_relaxed);
    *dequeue = (uint64_t)atomic_load_explicit(&q->head, memory_order_relaxed);
}

#pragma GCC optimize("O0")
bool mpmc_try_push(mpmc_queue *q, uint64_t value)
{
    /* relaxed: the ticket counter only hands out numbers; the cell's seq
     * carries all the ordering. */
    size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    mpmc_cell *c;
    for (;;) {
        c = &q->cells[pos & q->mask];
        /* acquire: pairs with the consumer's release below; its read of the
         * previous lap's value is done before we overwrite it. */
        size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        /* The difference of the unsigned counters, read as signed: right across
         * wrap-around (subtracting two signed values could overflow). */
        intptr_t diff = (intptr_t)(seq - pos);
        if (diff == 0) {
            /* relaxed: winning the ticket is all we need; on failure pos is
             * reloaded with the current tail. */
            if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (diff < 0) {
            return false; /* the cell still holds last lap's item: full */
        } else {
            pos = atomic_load_explicit(&q->tail, memory_order_relaxed); /* another producer took it */
        }
    }
    c->value = value;
    /* release: the value is written before a consumer can see the cell full. */
    atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
    return true;
}

bool mpmc_try_pop(mpmc_queue *q, uint64_t *out)
{
    size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed); /* ticket: as in push */
    mpmc_cell *c;
    for (;;) {
        c = &q->cells[pos & q->mask];
        /* acquire: pairs with the producer's release; the value is visible. */
        size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        intptr_t diff = (intptr_t)(seq - (pos + 1));
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (diff < 0) {
            return false; /* no producer has filled this cell yet: empty */
        } else {
            pos = atomic_load_explicit(&q->head, memory_order_relaxed); /* another consumer took it */
        }
    }
    *out = c->value;
    /* release: our read is done before a producer can reuse the cell. */
    atomic_store_explicit(&c->seq, pos + q->mask + 1, memory_order_release);
    return true;
}
