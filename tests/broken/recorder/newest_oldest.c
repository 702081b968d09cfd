/* BROKEN: newest(max) before wrap-around returns the oldest samples. EXPECT ring_wrap: the two newest */
#include "recorder.h"

#include <stdatomic.h>
#include <stdlib.h>

struct recorder {
    _Atomic uint64_t n;
    _Atomic uint64_t hist[RECORDER_BUCKETS];
    size_t keep;
    uint64_t *last; /* the newest `keep` samples, sample i at i % keep */
};

recorder *recorder_create(size_t keep)
{
    if (keep == 0)
        return NULL;
    recorder *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->last = calloc(keep, sizeof *r->last);
    if (!r->last) {
        free(r);
        return NULL;
    }
    r->keep = keep;
    return r;
}

void recorder_destroy(recorder *r)
{
    if (!r)
        return;

    free(r->last);
    free(r);
}

static int bits(uint64_t v)
{
    int b = 0;
    while (v) {
        b++;
        v >>= 1;
    }
    return b;
}

void recorder_record(recorder *r, uint64_t latency_ns)
{
    uint64_t n = atomic_load_explicit(&r->n, memory_order_relaxed);
    r->last[n % r->keep] = latency_ns;

    _Atomic uint64_t *h = &r->hist[bits(latency_ns)];
    atomic_store_explicit(h, atomic_load_explicit(h, memory_order_relaxed) + 1, memory_order_relaxed);
    atomic_store_explicit(&r->n, n + 1, memory_order_relaxed);
}

uint64_t recorder_count(const recorder *r) { return atomic_load_explicit(&r->n, memory_order_relaxed); }

uint64_t recorder_bucket(const recorder *r, int b)
{
    return b < 0 || b >= RECORDER_BUCKETS ? 0 : atomic_load_explicit(&r->hist[b], memory_order_relaxed);
}

size_t recorder_newest(const recorder *r, uint64_t *out, size_t max)
{
    uint64_t n = atomic_load_explicit(&r->n, memory_order_relaxed);
    size_t kept = n < r->keep ? (size_t)n : r->keep;
    size_t k = kept < max ? kept : max;
    uint64_t first = n <= r->keep ? 0 : n - k /* before the wrap: from the first sample */;
    for (size_t i = 0; i < k; i++)
        out[i] = r->last[(first + i) % r->keep];
    return k;
}

void recorder_debug_set_count(recorder *r, uint64_t n)
{
    atomic_store(&r->n, n);
    atomic_store(&r->hist[0], n);
}
