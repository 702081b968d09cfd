/* BROKEN: 32-bit tickets compared unsigned (a livelock after 2^32 - 1 operations). EXPECT wrap: 2^32 */
#include "mpmc.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

struct slot {
    _Atomic uint32_t turn; /* ticket t may use the slot when turn == t (push) or t + 1 (pop) */
    uint64_t item;
};

struct mpmc_queue {
    alignas(128) _Atomic uint32_t next_push;
    alignas(128) _Atomic uint32_t next_pop;
    alignas(128) uint32_t size;
    struct slot *slots;
};

mpmc_queue *mpmc_create(size_t capacity)
{
    if (capacity < 2 || capacity > (1u << 30) || (capacity & (capacity - 1)))
        return NULL;
    mpmc_queue *q = aligned_alloc(128, sizeof *q);
    if (!q)
        return NULL;
    q->slots = malloc(capacity * sizeof *q->slots);
    if (!q->slots) {
        free(q);
        return NULL;
    }
    q->size = (uint32_t)capacity;
    for (uint32_t i = 0; i < q->size; i++)
        atomic_init(&q->slots[i].turn, i);
    atomic_init(&q->next_push, 0);
    atomic_init(&q->next_pop, 0);
    return q;
}

void mpmc_destroy(mpmc_queue *q)
{
    if (q) {
        free(q->slots);
        free(q);
    }
}

void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos)
{
    uint32_t p = (uint32_t)pos;
    for (uint32_t i = 0; i < q->size; i++)
        atomic_store(&q->slots[(p + i) % q->size].turn, p + i);
    atomic_store(&q->next_push, p);
    atomic_store(&q->next_pop, p);
}

void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue)
{
    *enqueue = atomic_load(&q->next_push); /* the 32-bit tickets, as they are */
    *dequeue = atomic_load(&q->next_pop);
}

bool mpmc_try_push(mpmc_queue *q, uint64_t value)
{
    for (;;) {
        uint32_t t = atomic_load(&q->next_push);
        struct slot *s = &q->slots[t % q->size];
        uint32_t turn = atomic_load_explicit(&s->turn, memory_order_acquire);
        if (turn < t)
            return false; /* still last lap's item */
        if (turn == t && atomic_compare_exchange_strong(&q->next_push, &t, t + 1)) {
            s->item = value;
            atomic_store_explicit(&s->turn, t + 1, memory_order_release);
            return true;
        }
    }
}

bool mpmc_try_pop(mpmc_queue *q, uint64_t *out)
{
    for (;;) {
        uint32_t t = atomic_load(&q->next_pop);
        struct slot *s = &q->slots[t % q->size];
        uint32_t turn = atomic_load_explicit(&s->turn, memory_order_acquire);
        if (turn < t + 1)
            return false; /* nothing published here yet */
        if (turn == t + 1 && atomic_compare_exchange_strong(&q->next_pop, &t, t + 1)) {
            *out = s->item;
            atomic_store_explicit(&s->turn, t + q->size, memory_order_release);
            return true;
        }
    }
}
