/* hist.h - a log-linear ("HDR-style") latency histogram over integer values
 * (ns by convention).
 *
 * Values are grouped in buckets that double in range; each bucket is split
 * into the same number of linear sub-buckets, chosen so that any recorded
 * value is known to within 10^-sig_figs of itself.  Recording is O(1) and
 * never allocates: all counters are allocated by ll_hist_create.
 * Not thread-safe: one histogram per recording thread, merge afterwards.
 * Ownership: ll_hist_create allocates; ll_hist_destroy frees. */
#ifndef LL_HIST_H
#define LL_HIST_H

#include <stddef.h>
#include <stdint.h>

typedef struct ll_hist ll_hist;

/* lowest: smallest value to tell apart from 0 (>= 1; values below it share
 * bucket 0); highest: largest trackable value (>= 2 * lowest, <=
 * LL_HIST_MAX_HIGHEST: the buckets reach at least highest); sig_figs:
 * 1..5.  NULL on bad arguments or no memory. */
#define LL_HIST_MAX_HIGHEST ((uint64_t)INT64_MAX)
ll_hist *ll_hist_create(uint64_t lowest, uint64_t highest, int sig_figs);
void ll_hist_destroy(ll_hist *h);

/* LL_OK, or LL_ERANGE when value is above the trackable range: nothing is
 * recorded then, but the refusal is counted (ll_hist_out_of_range). */
int ll_hist_record(ll_hist *h, uint64_t value);
int ll_hist_record_n(ll_hist *h, uint64_t value, uint64_t count);
/* Records value, then the samples a fixed-rate generator stalled for `value`
 * would have sent meanwhile: value - interval, value - 2*interval, ... while
 * still >= interval (coordinated-omission correction; nothing extra when
 * interval is 0 or value <= interval). */
int ll_hist_record_corrected(ll_hist *h, uint64_t value, uint64_t expected_interval);
/* Records n values from an array; returns how many were out of range. */
size_t ll_hist_record_array(ll_hist *h, const uint64_t *values, size_t n);
size_t ll_hist_record_corrected_array(ll_hist *h, const uint64_t *values, size_t n, uint64_t expected_interval);

/* Adds every count of src into dst (any layouts: values are re-recorded at
 * their bucket's lowest equivalent value).  Returns the number of src counts
 * that fell outside dst's range (not added).  Exact only when
 * ll_hist_merge_check says LL_OK. */
uint64_t ll_hist_merge(ll_hist *dst, const ll_hist *src);
/* Whether merging src into dst is exact, changing nothing: LL_OK when every
 * non-empty counter of src lies inside one counter of dst (the same layout,
 * or dst coarser there) and dst's total stays below 2^64; LL_EMISMATCH when
 * a counter of src spans several of dst's (dst is finer: where its values lie
 * is not known); LL_ERANGE when src holds values above dst's range or the
 * total would pass 2^64 - 1. */
int ll_hist_merge_check(const ll_hist *dst, const ll_hist *src);
void ll_hist_reset(ll_hist *h);

/* The value at percentile p (0..100): the highest value equivalent to the
 * bucket holding the ceil-rounded p-th sample, the same rule as HdrHistogram,
 * clamped into [min, max] (the exact extremes): a value below lowest shares
 * the first counter, whose top may be above every recorded value.  0 when
 * empty. */
uint64_t ll_hist_value_at_percentile(const ll_hist *h, double p);
uint64_t ll_hist_min(const ll_hist *h);  /* exact; 0 when empty */
uint64_t ll_hist_max(const ll_hist *h);  /* exact; 0 when empty */
double ll_hist_mean(const ll_hist *h);   /* exact (from the raw sum) */
double ll_hist_stddev(const ll_hist *h); /* from bucket midpoints */
uint64_t ll_hist_count(const ll_hist *h);
uint64_t ll_hist_out_of_range(const ll_hist *h);

/* Layout, and the counters for export. */
typedef struct {
    uint64_t lowest;
    uint64_t highest;           /* as asked for */
    uint64_t highest_trackable; /* what the buckets actually reach */
    int sig_figs;
    int unit_magnitude;   /* floor(log2(lowest)) */
    int sub_bucket_count; /* linear sub-buckets per bucket */
    int bucket_count;
    size_t counts_len;   /* number of counters */
    size_t memory_bytes; /* bytes of counters */
} ll_hist_layout;

void ll_hist_get_layout(const ll_hist *h, ll_hist_layout *out);
/* Copies counts_len counters into out. */
void ll_hist_copy_counts(const ll_hist *h, uint64_t *out);
/* The counter index a value falls into (or -1 when above the range), and the
 * lowest / highest value sharing that counter. */
long long ll_hist_index_of(const ll_hist *h, uint64_t value);
uint64_t ll_hist_value_at_index(const ll_hist *h, size_t index);
uint64_t ll_hist_lowest_equivalent(const ll_hist *h, uint64_t value);
uint64_t ll_hist_highest_equivalent(const ll_hist *h, uint64_t value);

#endif
