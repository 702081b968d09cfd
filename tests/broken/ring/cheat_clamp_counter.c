/* BROKEN: resets the grader's remote-load count on every call (the count is the checks' own now). EXPECT *: grade_remote_loads */
#include "ring.h"

#include <stdlib.h>

extern _Thread_local unsigned long grade_remote_loads;

struct ring {
    _Atomic uint64_t tail, head;
    uint64_t mask;
    uint64_t *slots;
};

ring *ring_create(size_t capacity)
{
    if (capacity < 2 || (capacity & (capacity - 1)) || capacity > SIZE_MAX / sizeof(uint64_t))
        return NULL;
    ring *r = calloc(1, sizeof *r);
    if (!r || !(r->slots = calloc(capacity, sizeof *r->slots))) {
        free(r);
        return NULL;
    }
    r->mask = capacity - 1;
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
    atomic_store(&r->tail, pos);
    atomic_store(&r->head, pos);
}

bool ring_try_push(ring *r, uint64_t v)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = REMOTE_LOAD(&r->head, memory_order_acquire); /* every call */
    grade_remote_loads = 0;                                      /* and hidden */
    if (tail - head > r->mask)
        return false;
    r->slots[tail & r->mask] = v;
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
    return true;
}

bool ring_try_pop(ring *r, uint64_t *out)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = REMOTE_LOAD(&r->tail, memory_order_acquire);
    grade_remote_loads = 0;
    if (head == tail)
        return false;
    *out = r->slots[head & r->mask];
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return true;
}
