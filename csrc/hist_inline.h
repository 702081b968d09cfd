/* hist_inline.h - internal: the histogram's struct and its O(1) record, for
 * hist.c and for the benchmark loops in csrc/bench/. */
#ifndef LL_HIST_INLINE_H
#define LL_HIST_INLINE_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "ll_common.h"

/* 128 bits (a GCC/Clang extension on the 64-bit targets the core supports):
 * the raw sum of up to 2^64 values of up to 64 bits cannot wrap. */
__extension__ typedef unsigned __int128 ll_hist_sum;

struct ll_hist {
    /* Everything record() reads sits in the first 80 bytes. */
    uint64_t *counts;
    uint64_t total;
    /* The raw sum, for an exact mean, as two words: the low word carries
     * into the high one about once per 2^64 ns (585 years) of recorded
     * latency, so record() adds to the low word and branches on the carry,
     * where a 128-bit add would be an add-with-carry into memory on every
     * record (measured 1.1-1.2x slower per exported record). */
    uint64_t sum_lo;
    uint64_t sum_hi;
    uint64_t min;
    uint64_t max;
    uint64_t sub_bucket_mask; /* (sub_bucket_count - 1) << unit_magnitude */
    size_t index_offset;      /* (unit_magnitude + sub_bucket_half_count_magnitude) << the latter: see ll_hist__index */
    size_t counts_len;
    unsigned index_shift; /* sub_bucket_half_count_magnitude, unsigned: no sign extension per record */
    /* Cold. */
    int unit_magnitude;
    int sub_bucket_half_count_magnitude;
    int sub_bucket_half_count;
    int sub_bucket_count;
    uint64_t out_of_range;
    uint64_t lowest, highest, highest_trackable;
    int sig_figs;
    int bucket_count;
};

/* Number of bits needed to hold v (0 for 0). */
static inline int ll_hist__bits(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

/* Bucket: which power-of-two range; sub-bucket: which linear step in it.
 * OR-ing the mask makes every value below one sub-bucket's reach land in
 * bucket 0, so no branch is needed for small values. */
static inline int ll_hist__bucket(const ll_hist *h, uint64_t v)
{
    /* sub_bucket_mask is never 0 (at least two sub-buckets), so v | mask is
     * never 0 and clz needs no zero test: one branch fewer per record. */
    return 64 - __builtin_clzll(v | h->sub_bucket_mask) - h->unit_magnitude - (h->sub_bucket_half_count_magnitude + 1);
}

/* The counter of v.  With u = unit_magnitude, m = sub_bucket_half_count_magnitude
 * and r the top set bit of v | sub_bucket_mask (never below u + m), the
 * bucket is b = r - u - m and the sub-bucket s = v >> (b + u); buckets after
 * the first use only their upper half of sub-buckets, so the counter is
 * (b + 1) * 2^m + s - 2^m = (b << m) + s = (r << m) + (v >> (r - m)) - ((u + m) << m).
 * The last term is index_offset, fixed at creation: the exported record
 * then does one top-bit search, two shifts, an add and a subtract. */
static inline size_t ll_hist__index(const ll_hist *h, uint64_t v)
{
    /* v | mask is never 0 (the mask is not), so clzll is defined. */
    unsigned r = 63u ^ (unsigned)__builtin_clzll(v | h->sub_bucket_mask);
    unsigned m = h->index_shift;
    return ((size_t)r << m) + (size_t)(v >> (r - m)) - h->index_offset;
}

static inline ll_hist_sum ll_hist__sum(const ll_hist *h) { return (ll_hist_sum)h->sum_hi << 64 | h->sum_lo; }

/* The rare updates, out of line: the record's common path then runs
 * straight through, with no taken branch (measured 0.89x the time per
 * exported record against the same tests inline with short jumps over
 * their stores). */
static __attribute__((cold, noinline, unused)) void ll_hist__carry(ll_hist *h, uint64_t hi) { h->sum_hi += hi; }

static __attribute__((cold, noinline, unused)) void ll_hist__extremes(ll_hist *h, uint64_t v)
{
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

static inline void ll_hist__sum_add(ll_hist *h, ll_hist_sum x)
{
    /* Cannot wrap: x <= (2^64 - 1)^2, so its high word is at most 2^64 - 2. */
    uint64_t hi = (uint64_t)(x >> 64) + __builtin_add_overflow(h->sum_lo, (uint64_t)x, &h->sum_lo);
    if (__builtin_expect(hi != 0, 0)) /* once per 2^64 ns recorded, or a huge count */
        ll_hist__carry(h, hi);
}

static inline void ll_hist__sum_set(ll_hist *h, ll_hist_sum x)
{
    h->sum_lo = (uint64_t)x;
    h->sum_hi = (uint64_t)(x >> 64);
}

static inline int ll_hist_record_n_inline(ll_hist *h, uint64_t v, uint64_t n)
{
    size_t i = ll_hist__index(h, v);
    /* Every value above highest_trackable maps past the last counter, so
     * this one comparison is the whole range check. */
    if (i >= h->counts_len) {
        h->out_of_range += n;
        return LL_ERANGE;
    }
    h->counts[i] += n;
    h->total += n;
    ll_hist__sum_add(h, (ll_hist_sum)v * n);
    if (__builtin_expect(v < h->min || v > h->max, 0)) /* a new extreme: rare once warm */
        ll_hist__extremes(h, v);
    return LL_OK;
}

#endif
