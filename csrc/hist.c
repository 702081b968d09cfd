/* hist.c - the log-linear histogram: layout, queries, merge, export.  The
 * record hot path is in hist_inline.h.  The layout follows HdrHistogram's, so
 * its percentiles can be cross-checked against that library bucket for
 * bucket. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist_inline.h"
#include "stop.h"

static uint64_t value_from(const ll_hist *h, int bucket, uint64_t sub) { return sub << (bucket + h->unit_magnitude); }

uint64_t ll_hist_value_at_index(const ll_hist *h, size_t index)
{
    int bucket = (int)(index >> h->sub_bucket_half_count_magnitude) - 1;
    uint64_t sub = (index & (size_t)(h->sub_bucket_half_count - 1)) + (uint64_t)h->sub_bucket_half_count;
    if (bucket < 0) {
        sub -= (uint64_t)h->sub_bucket_half_count;
        bucket = 0;
    }
    return value_from(h, bucket, sub);
}

static uint64_t equivalent_range(const ll_hist *h, uint64_t v)
{
    int b = ll_hist__bucket(h, v);
    uint64_t sub = v >> (b + h->unit_magnitude);
    int adjusted = sub >= (uint64_t)h->sub_bucket_count ? b + 1 : b;
    return (uint64_t)1 << (h->unit_magnitude + adjusted);
}

uint64_t ll_hist_lowest_equivalent(const ll_hist *h, uint64_t v)
{
    int b = ll_hist__bucket(h, v);
    return value_from(h, b, v >> (b + h->unit_magnitude));
}

uint64_t ll_hist_highest_equivalent(const ll_hist *h, uint64_t v)
{
    return ll_hist_lowest_equivalent(h, v) + equivalent_range(h, v) - 1;
}

long long ll_hist_index_of(const ll_hist *h, uint64_t v)
{
    if (v > h->highest_trackable)
        return -1;
    return (long long)ll_hist__index(h, v);
}

ll_hist *ll_hist_create(uint64_t lowest, uint64_t highest, int sig_figs)
{
    if (lowest < 1 || sig_figs < 1 || sig_figs > 5 || highest / 2 < lowest || highest > LL_HIST_MAX_HIGHEST)
        return NULL;
    uint64_t single_unit = 2;
    for (int i = 0; i < sig_figs; i++)
        single_unit *= 10;
    int count_mag = 0;
    while (((uint64_t)1 << count_mag) < single_unit)
        count_mag++;
    int half_mag = (count_mag > 1 ? count_mag : 1) - 1;
    int unit_mag = ll_hist__bits(lowest) - 1;
    if (unit_mag + half_mag + 1 > 62)
        return NULL;
    ll_hist *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->unit_magnitude = unit_mag;
    h->sub_bucket_half_count_magnitude = half_mag;
    h->sub_bucket_count = 1 << (half_mag + 1);
    h->sub_bucket_half_count = h->sub_bucket_count / 2;
    h->sub_bucket_mask = ((uint64_t)h->sub_bucket_count - 1) << unit_mag;
    h->index_shift = (unsigned)half_mag;
    h->index_offset = (size_t)(unit_mag + half_mag) << half_mag;
    /* Smallest number of doubling buckets whose top reaches `highest`. */
    uint64_t untrackable = (uint64_t)h->sub_bucket_count << unit_mag;
    int buckets = 1;
    while (untrackable <= highest) {
        if (untrackable > (UINT64_MAX >> 2)) {
            buckets++;
            break;
        }
        untrackable <<= 1;
        buckets++;
    }
    h->bucket_count = buckets;
    h->counts_len = (size_t)(buckets + 1) * (size_t)h->sub_bucket_half_count;
    h->counts = calloc(h->counts_len, sizeof *h->counts);
    if (!h->counts) {
        free(h);
        return NULL;
    }
    h->lowest = lowest;
    h->highest = highest;
    h->sig_figs = sig_figs;
    h->highest_trackable = ll_hist_highest_equivalent(h, ll_hist_value_at_index(h, h->counts_len - 1));
    ll_hist_reset(h);
    return h;
}

void ll_hist_destroy(ll_hist *h)
{
    if (!h)
        return;
    free(h->counts);
    free(h);
}

void ll_hist_reset(ll_hist *h)
{
    memset(h->counts, 0, h->counts_len * sizeof *h->counts);
    h->total = 0;
    ll_hist__sum_set(h, 0);
    h->min = UINT64_MAX;
    h->max = 0;
    h->out_of_range = 0;
}

int ll_hist_record(ll_hist *h, uint64_t v) { return ll_hist_record_n_inline(h, v, 1); }
int ll_hist_record_n(ll_hist *h, uint64_t v, uint64_t n) { return ll_hist_record_n_inline(h, v, n); }

/* The back-fill of ll_hist_record_corrected: the values m, m - iv, m - 2 iv,
 * ... down to the smallest that is still >= iv (m = v - iv), recorded one
 * counter at a time instead of one value at a time.  The values that share a
 * counter are a run of the progression: its length, its sum and the counter
 * follow from the counter's lowest equivalent value, so the work is bounded
 * by the counters the back-fill spans (at most counts_len), whatever v / iv.
 * Counts, total, sum and min come out exactly as if each value had been
 * recorded by itself. */
static void backfill(ll_hist *h, uint64_t v, uint64_t iv)
{
    uint64_t m = v - iv;
    if (m < iv)
        return;
    uint64_t left = (m - iv) / iv + 1;   /* values to record */
    uint64_t last = m - (left - 1) * iv; /* the smallest of them, >= iv */
    for (;;) {
        size_t i = ll_hist__index(h, m);
        uint64_t lo = ll_hist_value_at_index(h, i); /* lowest value sharing m's counter */
        uint64_t bottom = lo > last ? lo : last;
        uint64_t k = (m - bottom) / iv + 1; /* values m, m - iv, ..., >= bottom: all in counter i */
        /* The run's sum, k m - iv k (k - 1) / 2, halving the even factor first.
         * Products may pass 2^128 on the way, but the sum itself is below 2^127
         * (at most v^2 / 2iv), so arithmetic mod 2^128 gives it exactly. */
        ll_hist_sum pairs = (k % 2 == 0) ? (ll_hist_sum)(k / 2) * (k - 1) : (ll_hist_sum)k * ((k - 1) / 2);
        h->counts[i] += k;
        h->total += k;
        ll_hist__sum_add(h, (ll_hist_sum)k * m - (ll_hist_sum)iv * pairs);
        left -= k;
        if (left == 0)
            break;
        m -= k * iv;
    }
    if (last < h->min)
        h->min = last;
}

int ll_hist_record_corrected(ll_hist *h, uint64_t v, uint64_t interval)
{
    int rc = ll_hist_record_n_inline(h, v, 1);
    if (rc != LL_OK || interval == 0 || v <= interval)
        return rc;
    backfill(h, v, interval);
    return LL_OK;
}

/* The array records poll the stop flag (stop.h) after every POLL values and
 * end early when it is set: the values before the stop are recorded, the
 * rest are not (the caller checks ll_stop_requested).  An array no longer
 * than its poll interval is always recorded whole. */
enum { POLL = 4096, POLL_CORRECTED = 64 };

size_t ll_hist_record_array(ll_hist *h, const uint64_t *values, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && i % POLL == 0 && ll_stop_requested())
            break;
        bad += ll_hist_record_n_inline(h, values[i], 1) != LL_OK;
    }
    return bad;
}

size_t ll_hist_record_corrected_array(ll_hist *h, const uint64_t *values, size_t n, uint64_t interval)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        /* A back-fill can span every counter: poll more often than above. */
        if (i > 0 && i % POLL_CORRECTED == 0 && ll_stop_requested())
            break;
        bad += ll_hist_record_corrected(h, values[i], interval) != LL_OK;
    }
    return bad;
}

int ll_hist_merge_check(const ll_hist *dst, const ll_hist *src)
{
    if (src->total > UINT64_MAX - dst->total)
        return LL_ERANGE;
    for (size_t i = 0; i < src->counts_len; i++) {
        if (!src->counts[i])
            continue;
        /* The counter's values lie in [lo, hi], narrowed by the exact
         * extremes: the first counter of a histogram with a large lowest
         * (0..511 for 1000) may hold only a 5, the top one only up to max. */
        uint64_t lo = ll_hist_value_at_index(src, i);
        uint64_t hi = ll_hist_highest_equivalent(src, lo);
        lo = lo < src->min ? src->min : lo;
        hi = hi > src->max ? src->max : hi;
        if (hi > dst->highest_trackable)
            return LL_ERANGE;
        if (ll_hist__index(dst, lo) != ll_hist__index(dst, hi))
            return LL_EMISMATCH;
    }
    return LL_OK;
}

uint64_t ll_hist_merge(ll_hist *dst, const ll_hist *src)
{
    uint64_t old_min = dst->min, old_max = dst->max, lost = 0;
    ll_hist_sum old_sum = ll_hist__sum(dst);
    for (size_t i = 0; i < src->counts_len; i++) {
        uint64_t c = src->counts[i];
        if (!c)
            continue;
        /* At the counter's lowest value, or src's exact min when that is
         * higher (the one counter ll_hist_merge_check compared). */
        uint64_t v = ll_hist_value_at_index(src, i);
        if (ll_hist_record_n_inline(dst, v < src->min ? src->min : v, c) != LL_OK)
            lost += c;
    }
    /* Re-recorded values are bucket floors.  When everything fitted, restore
     * the exact extremes and sum from the source, so min, max and mean stay
     * exact after a merge. */
    if (lost == 0 && src->total) {
        dst->min = old_min < src->min ? old_min : src->min;
        dst->max = old_max > src->max ? old_max : src->max;
        ll_hist__sum_set(dst, old_sum + ll_hist__sum(src));
    }
    dst->out_of_range += src->out_of_range;
    return lost;
}

uint64_t ll_hist_value_at_percentile(const ll_hist *h, double p)
{
    if (h->total == 0)
        return 0;
    if (p > 100.0)
        p = 100.0;
    if (p < 0.0)
        p = 0.0;
    uint64_t target = (uint64_t)(p / 100.0 * (double)h->total + 0.5);
    if (target < 1)
        target = 1;
    if (target > h->total)
        target = h->total;
    uint64_t seen = 0;
    for (size_t i = 0; i < h->counts_len; i++) {
        seen += h->counts[i];
        if (seen >= target) {
            uint64_t v = ll_hist_highest_equivalent(h, ll_hist_value_at_index(h, i));
            /* Clamped into [min, max]: below lowest the first counter's top can
             * pass every value recorded (lowest 1000: 0..511 share it). */
            return v > h->max ? h->max : v < h->min ? h->min : v;
        }
    }
    return h->max;
}

uint64_t ll_hist_min(const ll_hist *h) { return h->total ? h->min : 0; }
uint64_t ll_hist_max(const ll_hist *h) { return h->max; }
uint64_t ll_hist_count(const ll_hist *h) { return h->total; }
uint64_t ll_hist_out_of_range(const ll_hist *h) { return h->out_of_range; }
double ll_hist_mean(const ll_hist *h) { return h->total ? (double)ll_hist__sum(h) / (double)h->total : 0.0; }

double ll_hist_stddev(const ll_hist *h)
{
    if (h->total == 0)
        return 0.0;
    double mean = ll_hist_mean(h), acc = 0.0;
    for (size_t i = 0; i < h->counts_len; i++) {
        if (!h->counts[i])
            continue;
        uint64_t lo = ll_hist_value_at_index(h, i);
        double mid = (double)lo + (double)(equivalent_range(h, lo) / 2);
        acc += (double)h->counts[i] * (mid - mean) * (mid - mean);
    }
    return sqrt(acc / (double)h->total);
}

void ll_hist_get_layout(const ll_hist *h, ll_hist_layout *out)
{
    out->lowest = h->lowest;
    out->highest = h->highest;
    out->highest_trackable = h->highest_trackable;
    out->sig_figs = h->sig_figs;
    out->unit_magnitude = h->unit_magnitude;
    out->sub_bucket_count = h->sub_bucket_count;
    out->bucket_count = h->bucket_count;
    out->counts_len = h->counts_len;
    out->memory_bytes = h->counts_len * sizeof *h->counts;
}

void ll_hist_copy_counts(const ll_hist *h, uint64_t *out) { memcpy(out, h->counts, h->counts_len * sizeof *h->counts); }
