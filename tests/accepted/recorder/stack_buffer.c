/* ACCEPTED: a recorder whose newest() gathers through a 512-byte block-scoped buffer (ASan poisons and unpoisons its stack memory). */
#include "recorder.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct recorder {
    /* Read by the monitor while the recorder writes: atomics.  One writer,
     * so relaxed load + relaxed store is enough (no read-modify-write). */
    _Atomic uint64_t count;
    _Atomic uint64_t buckets[RECORDER_BUCKETS];
    /* Touched by the writer only (read after it stopped): plain memory. */
    uint64_t *ring; /* keep slots, allocated once */
    size_t keep;
};

recorder *recorder_create(size_t keep)
{
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
}

void recorder_destroy(recorder *r)
{
    if (r == NULL)
        return;
    free(r->ring);
    free(r);
}

/* The bit length of v: 0 for 0, 64 for values >= 2^63. */
static int bit_length(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

void recorder_record(recorder *r, uint64_t latency_ns)
{
    /* relaxed: only this thread writes count; the monitor needs no ordering
     * with the samples, only an untorn value. */
    uint64_t n = atomic_load_explicit(&r->count, memory_order_relaxed);
    r->ring[n % r->keep] = latency_ns;
    _Atomic uint64_t *b = &r->buckets[bit_length(latency_ns)];
    /* relaxed: same single-writer argument for each bucket. */
    atomic_store_explicit(b, atomic_load_explicit(b, memory_order_relaxed) + 1, memory_order_relaxed);
    atomic_store_explicit(&r->count, n + 1, memory_order_relaxed);
}

uint64_t recorder_count(const recorder *r)
{
    return atomic_load_explicit(&r->count, memory_order_relaxed); /* a snapshot */
}

uint64_t recorder_bucket(const recorder *r, int b)
{
    if (b < 0 || b >= RECORDER_BUCKETS)
        return 0;
    return atomic_load_explicit(&r->buckets[b], memory_order_relaxed); /* a snapshot */
}

void recorder_debug_set_count(recorder *r, uint64_t n)
{
    /* relaxed: no thread is using the recorder (recorder.h). */
    atomic_store_explicit(&r->count, n, memory_order_relaxed);
    atomic_store_explicit(&r->buckets[0], n, memory_order_relaxed);
}

size_t recorder_newest(const recorder *r, uint64_t *out, size_t max)
{
    uint64_t n = atomic_load_explicit(&r->count, memory_order_relaxed);
    size_t have = n < r->keep ? (size_t)n : r->keep;
    size_t k = have < max ? have : max;
    for (size_t done = 0; done < k;) {
        uint64_t chunk[64]; /* 512 bytes, block-scoped: gathered here, then copied out */
        size_t m = k - done < 64 ? k - done : 64;
        for (size_t i = 0; i < m; i++) /* oldest first: sample n - k + done + i */
            chunk[i] = r->ring[(n - k + done + i) % r->keep];
        memcpy(out + done, chunk, m * sizeof chunk[0]);
        done += m;
    }
    return k;
}
