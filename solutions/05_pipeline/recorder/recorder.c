/* recorder.c - exercise 05: the consumer's latency recorder.  The task is in
 * README.md; check it with `python -m lowlat grade recorder recorder.c`.
 *
 * One thread (the consumer) records; any other thread (a monitor) may read
 * the count and the buckets at any time; the newest samples are read after
 * the recording thread has stopped.  recorder_record never allocates.  The
 * API is in recorder.h. */
#include "recorder.h"

#include <stdatomic.h>
#include <stdlib.h>

struct recorder {
    /* BEGIN SOLUTION */
    /* Read by the monitor while the recorder writes: atomics.  One writer,
     * so relaxed load + relaxed store is enough (no read-modify-write). */
    _Atomic uint64_t count;
    _Atomic uint64_t buckets[RECORDER_BUCKETS];
    /* Touched by the writer only (read after it stopped): plain memory. */
    uint64_t *ring; /* keep slots, allocated once */
    size_t keep;
    /* END SOLUTION */
    /* BEGIN STUB
    int your_fields_here;
    END STUB */
};

recorder *recorder_create(size_t keep)
{
    /* BEGIN SOLUTION */
    if (keep == 0 || keep > SIZE_MAX / sizeof(uint64_t))
        return NULL;
    recorder *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->ring = calloc(keep, sizeof *r->ring);
    if (r->ring == NULL) {
        free(r);
        return NULL;
    }
    r->keep = keep;
    return r;
    /* END SOLUTION */
    /* BEGIN STUB
    (void)keep;
    return NULL;
    END STUB */
}

void recorder_destroy(recorder *r)
{
    /* BEGIN SOLUTION */
    if (r == NULL)
        return;
    free(r->ring);
    free(r);
    /* END SOLUTION */
    /* BEGIN STUB
    (void)r;
    END STUB */
}

/* The bit length of v: 0 for 0, 64 for values >= 2^63. */
static int bit_length(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

void recorder_record(recorder *r, uint64_t latency_ns)
{
    /* BEGIN SOLUTION */
    /* relaxed: only this thread writes count; the monitor needs no ordering
     * with the samples, only an untorn value. */
    uint64_t n = atomic_load_explicit(&r->count, memory_order_relaxed);
    r->ring[n % r->keep] = latency_ns;
    _Atomic uint64_t *b = &r->buckets[bit_length(latency_ns)];
    /* relaxed: same single-writer argument for each bucket. */
    atomic_store_explicit(b, atomic_load_explicit(b, memory_order_relaxed) + 1, memory_order_relaxed);
    atomic_store_explicit(&r->count, n + 1, memory_order_relaxed);
    /* END SOLUTION */
    /* BEGIN STUB
    (void)r;
    (void)latency_ns;
    (void)bit_length;
    END STUB */
}

uint64_t recorder_count(const recorder *r)
{
    /* BEGIN SOLUTION */
    return atomic_load_explicit(&r->count, memory_order_relaxed); /* a snapshot */
    /* END SOLUTION */
    /* BEGIN STUB
    (void)r;
    return 0;
    END STUB */
}

uint64_t recorder_bucket(const recorder *r, int b)
{
    /* BEGIN SOLUTION */
    if (b < 0 || b >= RECORDER_BUCKETS)
        return 0;
    return atomic_load_explicit(&r->buckets[b], memory_order_relaxed); /* a snapshot */
    /* END SOLUTION */
    /* BEGIN STUB
    (void)r;
    (void)b;
    return 0;
    END STUB */
}

void recorder_debug_set_count(recorder *r, uint64_t n)
{
    /* BEGIN SOLUTION */
    /* relaxed: no thread is using the recorder (recorder.h). */
    atomic_store_explicit(&r->count, n, memory_order_relaxed);
    atomic_store_explicit(&r->buckets[0], n, memory_order_relaxed);
    /* END SOLUTION */
    /* BEGIN STUB
    (void)r;
    (void)n;
    END STUB */
}

size_t recorder_newest(const recorder *r, uint64_t *out, size_t max)
{
    /* BEGIN SOLUTION */
    uint64_t n = atomic_load_explicit(&r->count, memory_order_relaxed);
    size_t have = n < r->keep ? (size_t)n : r->keep;
    size_t k = have < max ? have : max;
    for (size_t i = 0; i < k; i++) /* oldest first: sample n - k + i */
        out[i] = r->ring[(n - k + i) % r->keep];
    return k;
    /* END SOLUTION */
    /* BEGIN STUB
    (void)r;
    (void)out;
    (void)max;
    return 0;
    END STUB */
}
