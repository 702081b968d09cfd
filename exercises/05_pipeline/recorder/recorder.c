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
    /* YOUR CODE HERE (see README.md) */
    int your_fields_here;
};

recorder *recorder_create(size_t keep)
{
    /* YOUR CODE HERE (see README.md) */
    (void)keep;
    return NULL;
}

void recorder_destroy(recorder *r)
{
    /* YOUR CODE HERE (see README.md) */
    (void)r;
}

/* The bit length of v: 0 for 0, 64 for values >= 2^63. */
static int bit_length(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

void recorder_record(recorder *r, uint64_t latency_ns)
{
    /* YOUR CODE HERE (see README.md) */
    (void)r;
    (void)latency_ns;
    (void)bit_length;
}

uint64_t recorder_count(const recorder *r)
{
    /* YOUR CODE HERE (see README.md) */
    (void)r;
    return 0;
}

uint64_t recorder_bucket(const recorder *r, int b)
{
    /* YOUR CODE HERE (see README.md) */
    (void)r;
    (void)b;
    return 0;
}

void recorder_debug_set_count(recorder *r, uint64_t n)
{
    /* YOUR CODE HERE (see README.md) */
    (void)r;
    (void)n;
}

size_t recorder_newest(const recorder *r, uint64_t *out, size_t max)
{
    /* YOUR CODE HERE (see README.md) */
    (void)r;
    (void)out;
    (void)max;
    return 0;
}
