/* pool_hist_check.c - single-threaded checks of the pool, the histogram and
 * the memory benchmark loops, built with -fsanitize=address,undefined by
 * tests/test_c_core.py.  Any out-of-bounds access, use after free, leak
 * or undefined behaviour is reported by the sanitizers; logic errors are
 * counted here.  Exit status 0 only if all checks pass. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_alloc.h"
#include "bench/bench_taxes.h"
#include "hist.h"
#include "ll_common.h"
#include "pool.h"

static int failures;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)

static void pool_checks(unsigned flags)
{
    enum { N = 100 };
    ll_pool *p = ll_pool_create(24, N, flags | LL_POOL_CHECKED);
    CHECK(p != NULL);
    ll_pool_stats st;
    ll_pool_get_stats(p, &st);
    CHECK(st.block_size == ((flags & LL_POOL_CACHE_ALIGNED) ? 64u : 24u));
    void *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = ll_pool_alloc(p);
        CHECK(b[i] != NULL);
        memset(b[i], 0xAB, st.block_size); /* the whole block is ours */
    }
    CHECK(ll_pool_alloc(p) == NULL);
    ll_pool_get_stats(p, &st);
    CHECK(st.in_use == N && st.high_water == N && st.exhausted == 1);
    CHECK(ll_pool_free(p, b[3]) == LL_OK);
    CHECK(ll_pool_free(p, b[3]) == LL_EDOUBLE);
    int local;
    CHECK(ll_pool_free(p, &local) == LL_EFOREIGN);
    CHECK(ll_pool_free(p, (char *)b[4] + 1) == LL_EFOREIGN);
    CHECK(ll_pool_free(p, NULL) == LL_EINVAL);
    CHECK(ll_pool_alloc(p) == b[3]); /* LIFO reuse: the hottest block first */
    ll_pool_reset(p);
    ll_pool_get_stats(p, &st);
    CHECK(st.in_use == 0 && st.bad_frees == 3);
    for (int i = 0; i < N; i++)
        CHECK(ll_pool_alloc(p) != NULL);
    ll_pool_destroy(p);
    CHECK(ll_pool_create(0, 10, 0) == NULL);
    CHECK(ll_pool_create(8, 0, 0) == NULL);
    CHECK(ll_pool_create(SIZE_MAX / 2, 4, 0) == NULL);
    CHECK(ll_pool_create(SIZE_MAX, 1, 0) == NULL);
    /* Unchecked mode, the benchmark's: plain alloc/free. */
    p = ll_pool_create(1, 3, 0);
    void *x = ll_pool_alloc(p), *y = ll_pool_alloc(p);
    CHECK(ll_pool_free(p, x) == LL_OK && ll_pool_free(p, y) == LL_OK);
    ll_pool_destroy(p);
}

static void hist_checks(void)
{
    ll_hist *h = ll_hist_create(1, 3600000000000ull, 3);
    CHECK(h != NULL);
    ll_hist_layout lay;
    ll_hist_get_layout(h, &lay);
    CHECK(lay.counts_len == 33792 && lay.sub_bucket_count == 2048);
    CHECK(ll_hist_record(h, 0) == LL_OK);
    CHECK(ll_hist_record(h, lay.highest_trackable) == LL_OK);
    CHECK(ll_hist_record(h, lay.highest_trackable + 1) == LL_ERANGE);
    CHECK(ll_hist_record(h, UINT64_MAX) == LL_ERANGE);
    CHECK(ll_hist_out_of_range(h) == 2 && ll_hist_count(h) == 2);
    CHECK(ll_hist_index_of(h, UINT64_MAX) == -1);
    ll_hist_reset(h);
    uint64_t s = 12345;
    for (int i = 0; i < 100000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint64_t v = s % 10000000;
        CHECK(ll_hist_record(h, v) == LL_OK);
        uint64_t lo = ll_hist_lowest_equivalent(h, v), hi = ll_hist_highest_equivalent(h, v);
        CHECK(lo <= v && v <= hi);
        CHECK((double)(hi - lo) <= (double)v * 1e-3 + 1.0);
    }
    CHECK(ll_hist_count(h) == 100000);
    CHECK(ll_hist_value_at_percentile(h, 0) <= ll_hist_value_at_percentile(h, 50));
    CHECK(ll_hist_value_at_percentile(h, 50) <= ll_hist_value_at_percentile(h, 100));
    CHECK(ll_hist_value_at_percentile(h, 100) >= ll_hist_max(h));
    /* Every counter index maps back to a value in that counter. */
    for (size_t i = 0; i < lay.counts_len; i++)
        CHECK((size_t)ll_hist_index_of(h, ll_hist_value_at_index(h, i)) == i);
    uint64_t *counts = malloc(lay.counts_len * sizeof *counts);
    ll_hist_copy_counts(h, counts);
    uint64_t total = 0;
    for (size_t i = 0; i < lay.counts_len; i++)
        total += counts[i];
    CHECK(total == 100000);
    free(counts);
    /* Coordinated omission: 105 at interval 10 -> 105, 95, ..., 15: 10 values. */
    ll_hist *c = ll_hist_create(1, 1000000, 3);
    ll_hist_record_corrected(c, 105, 10);
    CHECK(ll_hist_count(c) == 10);
    ll_hist_record_corrected(c, 5, 10);
    ll_hist_record_corrected(c, 50, 0);
    CHECK(ll_hist_count(c) == 12);
    /* Merge into a smaller-range histogram: what does not fit is reported. */
    ll_hist *small = ll_hist_create(1, 1000, 2);
    uint64_t lost = ll_hist_merge(small, h);
    CHECK(lost > 0 && ll_hist_count(small) + lost == 100000);
    ll_hist *same = ll_hist_create(1, 3600000000000ull, 3);
    CHECK(ll_hist_merge(same, h) == 0 && ll_hist_count(same) == 100000);
    CHECK(ll_hist_min(same) == ll_hist_min(h) && ll_hist_max(same) == ll_hist_max(h));
    CHECK(ll_hist_mean(same) == ll_hist_mean(h));
    ll_hist_destroy(same);
    ll_hist_destroy(small);
    ll_hist_destroy(c);
    ll_hist_destroy(h);
    CHECK(ll_hist_create(0, 100, 3) == NULL);
    CHECK(ll_hist_create(1, 1, 3) == NULL);
    CHECK(ll_hist_create(1, 100, 0) == NULL);
    CHECK(ll_hist_create(1, 100, 6) == NULL);
    CHECK(ll_hist_create(1ull << 60, UINT64_MAX, 5) == NULL);
    /* Extremes of the layout must not shift out of range; a highest the
     * buckets cannot reach is refused, never silently lowered. */
    CHECK(ll_hist_create(1, UINT64_MAX, 1) == NULL);
    h = ll_hist_create(1, LL_HIST_MAX_HIGHEST, 1);
    CHECK(h != NULL);
    ll_hist_get_layout(h, &lay);
    CHECK(lay.highest_trackable >= LL_HIST_MAX_HIGHEST);
    CHECK(ll_hist_record(h, UINT64_MAX / 4) == LL_OK);
    CHECK(ll_hist_record(h, LL_HIST_MAX_HIGHEST) == LL_OK);
    ll_hist_destroy(h);
    /* A value below lowest shares the first counter (0..511 for 1000): its
     * percentile is clamped into [min, max], never above the max. */
    h = ll_hist_create(1000, 1000000000, 3);
    ll_hist_record(h, 5);
    CHECK(ll_hist_value_at_percentile(h, 50) == 5 && ll_hist_value_at_percentile(h, 100) == 5);
    /* Merges are exact or refused: into a finer layout, refused. */
    ll_hist *fine = ll_hist_create(1, 1000000000, 3);
    CHECK(ll_hist_merge_check(fine, h) == LL_OK); /* one value, 5: its place is known */
    ll_hist_record(h, 7);
    CHECK(ll_hist_merge_check(fine, h) == LL_EMISMATCH);
    CHECK(ll_hist_merge_check(h, fine) == LL_OK);
    ll_hist_destroy(fine);
    ll_hist_destroy(h);
}

static void bench_checks(void)
{
    ll_hist *h = ll_hist_create(1, 10000000000ull, 3);
    ll_alloc_bench_cfg cfg = {20000, 64, 16, 4096, 9, 0};
    ll_alloc_bench_result r;
    ll_heap_frag *f = ll_heap_fragment(5000, 16, 4096, 3);
    CHECK(f != NULL);
    CHECK(ll_bench_alloc(&cfg, h, &r) == LL_OK && r.failed == 0 && ll_hist_count(h) == 20000);
    cfg.use_pool = 1;
    CHECK(ll_bench_alloc(&cfg, NULL, &r) == LL_OK && r.failed == 0);
    cfg.live = 0;
    CHECK(ll_bench_alloc(&cfg, NULL, &r) == LL_EINVAL);
    ll_heap_fragment_release(f);
    CHECK(ll_bench_chase(16384, 10000, 1) > 0);
    CHECK(ll_bench_chase(64, 10, 1) == LL_EINVAL);
    ll_fault_result pf;
    CHECK(ll_bench_page_faults(64, &pf) == LL_OK && pf.pages == 64);
    CHECK(ll_bench_syscall(100) > 0);
    CHECK(ll_bench_mutex(1000, 0, -1, -1) > 0);
    CHECK(ll_bench_hist_record(h, 10000, 1, 1) > 0);
    CHECK(ll_bench_hist_record(h, 10000, 1, 0) > 0);
    ll_hist_destroy(h);
}

int main(void)
{
    pool_checks(0);
    pool_checks(LL_POOL_CACHE_ALIGNED);
    hist_checks();
    bench_checks();
    printf("%s: %d failures\n", failures ? "FAIL" : "OK", failures);
    return failures ? 1 : 0;
}
