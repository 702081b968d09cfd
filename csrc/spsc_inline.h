/* spsc_inline.h - internal: the ring's layout and its hot path as inline
 * functions, shared by spsc.c (the API), csrc/bench/bench_spsc.c (the measured loops)
 * and pipeline.c, so what is benchmarked is exactly what the API runs. */
#ifndef LL_SPSC_INLINE_H
#define LL_SPSC_INLINE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ll_arch.h"
#include "spsc.h"

/* Cursors are free-running 64-bit counters: `tail - head` is the fill level
 * and `counter & mask` the slot.  At 10^9 records/s they wrap after ~584
 * years, so no slot has to be kept empty to tell full from empty. */

/* Padded layouts: each side's cursor shares its line only with that side's
 * private cache of the other cursor, so a write by one thread never
 * invalidates a line the other thread is reading for its own work.  Where
 * the two lines go is measured, not derived, and the answer differs by CPU
 * vendor (interleaved medians, the same code, 2-vCPU KVM guests):
 * - Intel Xeon: cursors on adjacent lines moved from about as many to 5x
 *   more records per second than cursors 128 bytes apart, never clearly
 *   fewer.
 * - AMD EPYC (Zen 4): 128 bytes apart moved about 1.1x more while a line
 *   crossed between the cores in 25-40 ns, and 1.4-1.7x more while a
 *   crossing took 130-195 ns (medians over 6 processes, 40 rounds each).
 * The usual argument (the adjacent-line prefetcher pulls a line pair
 * together, so keep hot lines 128 bytes apart) predicts neither: each
 * cursor's neighbour is the other cursor, which each side reads anyway.
 * ll_spsc_default_layout() picks per vendor; `python -m lowlat bench`
 * measures both (spsc_adjacent_vs_spread). */
struct ll_spsc_padded {
    /* Producer-owned: written by push, read by pop only when its limit is reached. */
    alignas(LL_CACHELINE) _Atomic uint64_t tail;
    uint64_t tail_limit; /* push may go up to here: head last seen + capacity */
    /* Consumer-owned: written by pop, read by push only when its limit is reached. */
    alignas(LL_CACHELINE) _Atomic uint64_t head;
    uint64_t head_limit; /* pop may go up to here: tail last seen */
    /* Pads the struct so the next allocation cannot share the last line's pair. */
    alignas(LL_FALSE_SHARING_RANGE) char end[1];
};

/* Spread layout (LL_SPSC_SPREAD): the cursors a line pair apart, the
 * placement the adjacent-line prefetcher argues for. */
struct ll_spsc_spread {
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t tail;
    uint64_t tail_limit;
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t head;
    uint64_t head_limit;
    alignas(LL_FALSE_SHARING_RANGE) char end[1];
};

/* Unpadded layout: everything in one line, the classic false-sharing
 * mistake: every push invalidates the consumer's copy of the line and every
 * pop the producer's, whatever they read. */
struct ll_spsc_packed {
    _Atomic uint64_t tail;
    _Atomic uint64_t head;
    uint64_t tail_limit;
    uint64_t head_limit;
};

struct ll_spsc {
    /* Line 0: written only by ll_spsc_create, read by both sides on every
     * call: stays Shared in both caches, never bounces. */
    alignas(LL_FALSE_SHARING_RANGE) unsigned char *slots;
    uint64_t mask; /* capacity - 1 */
    size_t record_size;
    /* Into `cursors`, per the layout flag.  Every call reaches the cursors
     * through these.  Reaching the two cached layouts at fixed offsets from
     * q instead (no pointer to load before the cursor) was measured and
     * lost on an AMD EPYC VM: one thread's inlined push+pop took 3.9 ns at
     * fixed offsets against 2.2 ns through these, and two cores moved 0.82x
     * against 1.14x the records per second of rigtorp's SPSCQueue. */
    _Atomic uint64_t *tail;
    _Atomic uint64_t *head;
    uint64_t *tail_limit;
    uint64_t *head_limit;
    unsigned flags;
    bool cached; /* !(flags & LL_SPSC_NO_CACHE), read only when a limit is reached */
    /* The cursors, in one of three layouts chosen at creation. */
    union {
        struct ll_spsc_padded padded;
        struct ll_spsc_spread spread;
        struct ll_spsc_packed packed;
    } cursors;
};

/* Free slots as the producer sees them.  Its limit (head last seen plus the
 * capacity) is trusted while it leaves room for `want` records; only then is
 * the consumer's line read (most calls touch no shared line).  Without the
 * cache the limit is set to what this call may move, so the next one reads.
 * The common case is then one load and one compare, the same whether the
 * ring caches or not: the check for the flag is off the fast path. */
static inline __attribute__((always_inline)) uint64_t ll_spsc__free_slots(ll_spsc *q, uint64_t tail, uint64_t want)
{
    uint64_t room = *q->tail_limit - tail;
    if (__builtin_expect(room >= want, 1))
        return room;
    /* acquire: pairs with pop's release of head; the consumer has finished
     * reading every slot below head before we overwrite any of them. */
    room = atomic_load_explicit(q->head, memory_order_acquire) + q->mask + 1 - tail;
    *q->tail_limit = tail + (q->cached || room < want ? room : want);
    return room;
}

/* Records ready as the consumer sees them; same rule, the limit being the
 * tail last seen.  An unchanged tail is not stored again: an empty ring
 * polled leaves the consumer's line alone. */
static inline __attribute__((always_inline)) uint64_t ll_spsc__used_slots(ll_spsc *q, uint64_t head, uint64_t want)
{
    uint64_t ready = *q->head_limit - head;
    if (__builtin_expect(ready >= want, 1))
        return ready;
    /* acquire: pairs with push's release of tail; the slot contents
     * written before that store are visible to our reads below. */
    ready = atomic_load_explicit(q->tail, memory_order_acquire) - head;
    uint64_t limit = head + (q->cached || ready < want ? ready : want);
    if (limit != *q->head_limit)
        *q->head_limit = limit;
    return ready;
}

/* Copies n records between the ring, starting at counter `at`, and a flat
 * buffer: at most two memcpy calls (before and after the wrap). */
static inline void ll_spsc__copy_in(ll_spsc *q, uint64_t at, const unsigned char *src, size_t n)
{
    size_t cap = (size_t)q->mask + 1, first = (size_t)(at & q->mask);
    size_t k = n < cap - first ? n : cap - first;
    memcpy(q->slots + first * q->record_size, src, k * q->record_size);
    if (n > k)
        memcpy(q->slots, src + k * q->record_size, (n - k) * q->record_size);
}

static inline void ll_spsc__copy_out(ll_spsc *q, uint64_t at, unsigned char *dst, size_t n)
{
    size_t cap = (size_t)q->mask + 1, first = (size_t)(at & q->mask);
    size_t k = n < cap - first ? n : cap - first;
    memcpy(dst, q->slots + first * q->record_size, k * q->record_size);
    if (n > k)
        memcpy(dst + k * q->record_size, q->slots, (n - k) * q->record_size);
}

static inline size_t ll_spsc_push_many_inline(ll_spsc *q, const void *records, size_t n)
{
    /* relaxed: only this thread (the producer) ever writes tail. */
    uint64_t tail = atomic_load_explicit(q->tail, memory_order_relaxed);
    uint64_t room = ll_spsc__free_slots(q, tail, n);
    if (n > room)
        n = (size_t)room;
    if (n == 0)
        return 0;
    ll_spsc__copy_in(q, tail, records, n);
    /* release: the records copied above become visible to the consumer no
     * later than the new tail that tells it they are there. */
    atomic_store_explicit(q->tail, tail + n, memory_order_release);
    return n;
}

static inline size_t ll_spsc_pop_many_inline(ll_spsc *q, void *out, size_t max)
{
    /* relaxed: only this thread (the consumer) ever writes head. */
    uint64_t head = atomic_load_explicit(q->head, memory_order_relaxed);
    uint64_t avail = ll_spsc__used_slots(q, head, max);
    size_t n = max < avail ? max : (size_t)avail;
    if (n == 0)
        return 0;
    ll_spsc__copy_out(q, head, out, n);
    /* release: our reads of those slots are complete before the producer can
     * see them free and overwrite them. */
    atomic_store_explicit(q->head, head + n, memory_order_release);
    return n;
}

/* LL_SPSC_BROKEN_RELAXED_PUBLISH: a deliberately wrong build for the course
 * (csrc/demos/spsc_relaxed_demo.c).  The producer publishes tail with a relaxed
 * store, so nothing orders its slot write before the consumer's read.  x86
 * keeps stores in order anyway, so it "works" there; the C memory model does
 * not promise it, ARM may reorder it, and ThreadSanitizer reports the race.
 * Never defined in the library build. */
#ifdef LL_SPSC_BROKEN_RELAXED_PUBLISH
#define LL_SPSC_PUBLISH_ORDER memory_order_relaxed
#else
#define LL_SPSC_PUBLISH_ORDER memory_order_release
#endif

/* One record of `size` bytes.  Called with a constant size (8, 64...) and
 * inlined, the memcpy becomes a few plain moves instead of a call that
 * dispatches on a run-time length: the exported API and the benchmark loops
 * use it for the sizes they know.  The orders are those above. */
static inline __attribute__((always_inline)) bool ll_spsc__push1(ll_spsc *q, const void *rec, size_t size)
{
    /* The cursor's address read once: the copy below may alias the header. */
    _Atomic uint64_t *cursor = q->tail;
    uint64_t tail = atomic_load_explicit(cursor, memory_order_relaxed); /* own cursor */
    if (ll_spsc__free_slots(q, tail, 1) == 0)
        return false;
    memcpy(q->slots + (size_t)(tail & q->mask) * size, rec, size);
    atomic_store_explicit(cursor, tail + 1, LL_SPSC_PUBLISH_ORDER); /* publish the slot: release */
    return true;
}

static inline __attribute__((always_inline)) bool ll_spsc__pop1(ll_spsc *q, void *out, size_t size)
{
    _Atomic uint64_t *cursor = q->head;                                 /* read once, as in push */
    uint64_t head = atomic_load_explicit(cursor, memory_order_relaxed); /* own cursor */
    if (ll_spsc__used_slots(q, head, 1) == 0)
        return false;
    memcpy(out, q->slots + (size_t)(head & q->mask) * size, size);
    atomic_store_explicit(cursor, head + 1, memory_order_release); /* hand the slot back */
    return true;
}

/* The common case, 8-byte records, inlined into the caller: what the core's
 * own loops (the per-item benchmark, the demos) call.  The exported
 * ll_spsc_try_push_u64 / ll_spsc_try_pop_u64 are these, behind a call. */
static inline bool ll_spsc_push_u64_inline(ll_spsc *q, uint64_t v) { return ll_spsc__push1(q, &v, sizeof v); }
static inline bool ll_spsc_pop_u64_inline(ll_spsc *q, uint64_t *v) { return ll_spsc__pop1(q, v, sizeof *v); }

#endif
