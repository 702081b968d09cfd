/* slotring_inline.h - internal: the pipeline's slot-sequence ring, one
 * producer and one consumer, records of up to LL_SLOT_BYTES bytes.
 *
 * The SPSC ring of spsc.h tells the consumer that a record is there through
 * the producer's cursor: the consumer's poll misses on the cursor's line,
 * then its copy misses on the slot's line, two cache-line transfers one
 * after the other.  Here each slot carries its own sequence word, so the
 * consumer polls the very line it will read: one transfer per hand-off, the
 * same as one line carrying a time stamp (the pipeline's floor).
 *
 * The consumer never writes a slot: a full slot says so by its seq (the
 * push's tail + 1), and the producer learns which slots are free from the
 * consumer's cursor, read only when its cached copy says the ring is full
 * (once a lap at most).  So the producer's push is stores only, no load that
 * could miss first: on the latency path there is one store's ownership
 * request and the consumer's one read. */
#ifndef LL_SLOTRING_INLINE_H
#define LL_SLOTRING_INLINE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ll_arch.h"

#define LL_SLOT_BYTES 56 /* with the seq word, 64 bytes: one slot per cache line */

struct ll_slot {
    alignas(LL_CACHELINE) _Atomic uint64_t seq;
    unsigned char rec[LL_SLOT_BYTES];
};

struct ll_slotring {
    struct ll_slot *slots; /* read-only after init */
    uint64_t mask;
    /* The producer's own line. */
    alignas(LL_FALSE_SHARING_RANGE) uint64_t tail;
    uint64_t head_cache; /* its last view of head */
    /* The consumer's own line; the producer reads it once a lap at most. */
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t head;
    alignas(LL_FALSE_SHARING_RANGE) char end[1]; /* nothing else shares head's line */
};

/* capacity: a power of two >= 2.  0, or -1 without memory. */
static inline int ll_slotring_init(struct ll_slotring *r, size_t capacity)
{
    r->slots = ll_alloc_lines(capacity * sizeof *r->slots);
    if (!r->slots)
        return -1;
    memset(r->slots, 0, capacity * sizeof *r->slots);
    for (size_t i = 0; i < capacity; i++)
        atomic_init(&r->slots[i].seq, 0); /* 0: no push ever wrote it (a push writes tail + 1 >= 1) */
    r->mask = capacity - 1;
    r->tail = r->head_cache = 0;
    atomic_init(&r->head, 0);
    return 0;
}

static inline void ll_slotring_free(struct ll_slotring *r) { free(r->slots); }

/* Producer: copies `size` (<= LL_SLOT_BYTES, a constant at the call site:
 * plain moves) bytes in; false when the ring is full. */
static inline bool ll_slotring_push(struct ll_slotring *r, const void *rec, size_t size)
{
    if (r->tail - r->head_cache > r->mask) {
        /* acquire: pairs with the consumer's release of head: its reads of
         * the slots below head are done before we overwrite them. */
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        if (r->tail - r->head_cache > r->mask)
            return false;
    }
    struct ll_slot *s = &r->slots[r->tail & r->mask];
    memcpy(s->rec, rec, size);
    /* release: the record is visible no later than the seq saying it is there. */
    atomic_store_explicit(&s->seq, r->tail + 1, memory_order_release);
    r->tail++;
    return true;
}

/* Consumer: copies the next record out; false when its slot is still empty. */
static inline bool ll_slotring_pop(struct ll_slotring *r, void *out, size_t size)
{
    /* relaxed: only this thread writes head. */
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    struct ll_slot *s = &r->slots[head & r->mask];
    /* acquire: pairs with the producer's release of seq: the record written
     * before that store is visible to the copy below. */
    if (atomic_load_explicit(&s->seq, memory_order_acquire) != head + 1)
        return false;
    memcpy(out, s->rec, size);
    /* release: our read of the record completes before the producer, seeing
     * this head, may overwrite the slot. */
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return true;
}

#endif
