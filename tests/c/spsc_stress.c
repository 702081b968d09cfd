/* spsc_stress.c - two-thread stress of the SPSC ring, built with
 * -fsanitize=thread by tests/test_c_core.py.
 *
 * usage: spsc_stress ITEMS
 * Moves ITEMS records producer -> consumer for every layout/cache variant,
 * per record and in batches, with records of 8 to 64 bytes (the sizes the
 * exported calls copy with fixed-size moves, and others), and through the
 * u64 calls; the consumer checks every record arrives once and in order.
 * Then runs the benchmark loops of csrc/bench/ briefly (inlined and exported
 * paths, the pipeline floor), so their thread hand-offs are checked too.
 * Exit status 0 only if every record arrived intact. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_floor.h"
#include "bench/bench_spsc.h"
#include "bench/bench_taxes.h"
#include "hist.h"
#include "pipeline.h"
#include "ll_wait.h"
#include "spsc.h"

#define MAGIC 0x5DEECE66Dull

struct job {
    ll_spsc *q;
    uint64_t items;
    size_t rec;   /* bytes per record: a multiple of 8 */
    size_t batch; /* 0: per record */
    int u64;      /* per record through ll_spsc_try_push_u64 / try_pop_u64 */
    uint64_t errors;
};

/* Word k of record seq: every word differs, so a torn or misplaced copy shows. */
static uint64_t word(uint64_t seq, size_t k) { return (seq * (k + 1)) ^ (MAGIC + k); }

static void fill(void *dst, size_t rec, uint64_t seq)
{
    for (size_t k = 0; k < rec / 8; k++) {
        uint64_t w = k == 0 ? seq : word(seq, k);
        memcpy((unsigned char *)dst + 8 * k, &w, 8);
    }
}

static int ok(const void *src, size_t rec, uint64_t seq)
{
    for (size_t k = 0; k < rec / 8; k++) {
        uint64_t w;
        memcpy(&w, (const unsigned char *)src + 8 * k, 8);
        if (w != (k == 0 ? seq : word(seq, k)))
            return 0;
    }
    return 1;
}

static void *producer(void *arg)
{
    struct job *j = arg;
    size_t b = j->batch ? j->batch : 1;
    unsigned char *buf = malloc(b * j->rec);
    uint64_t seq = 0;
    while (seq < j->items) {
        size_t n = j->items - seq < b ? (size_t)(j->items - seq) : b;
        for (size_t k = 0; k < n; k++)
            fill(buf + k * j->rec, j->rec, seq + k);
        size_t done = 0;
        while (done < n) {
            size_t m = j->batch ? ll_spsc_push_many(j->q, buf + done * j->rec, n - done)
                       : j->u64 ? (size_t)ll_spsc_try_push_u64(j->q, seq)
                                : (size_t)ll_spsc_try_push(j->q, buf);
            if (!m)
                sched_yield();
            done += m;
        }
        seq += n;
    }
    free(buf);
    return NULL;
}

static void *consumer(void *arg)
{
    struct job *j = arg;
    size_t b = j->batch ? j->batch : 1;
    unsigned char *buf = malloc(b * j->rec);
    uint64_t seq = 0;
    while (seq < j->items) {
        size_t m = j->batch ? ll_spsc_pop_many(j->q, buf, b)
                   : j->u64 ? (size_t)ll_spsc_try_pop_u64(j->q, (uint64_t *)(void *)buf)
                            : (size_t)ll_spsc_try_pop(j->q, buf);
        if (!m) {
            sched_yield();
            continue;
        }
        for (size_t k = 0; k < m; k++)
            j->errors += !ok(buf + k * j->rec, j->rec, seq + k);
        seq += m;
    }
    free(buf);
    return NULL;
}

static uint64_t run_job(uint64_t items, size_t cap, size_t rec, unsigned flags, size_t batch, int u64)
{
    struct job j = {ll_spsc_create(cap, rec, flags), items, rec, batch, u64, 0};
    if (!j.q) {
        fprintf(stderr, "create failed\n");
        return 1;
    }
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, &j);
    pthread_create(&p, NULL, producer, &j);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    if (ll_spsc_size(j.q) != 0)
        j.errors++;
    ll_spsc_destroy(j.q);
    printf("items=%llu cap=%zu rec=%zu flags=%u batch=%zu u64=%d errors=%llu\n", (unsigned long long)items, cap, rec,
           flags, batch, u64, (unsigned long long)j.errors);
    return j.errors;
}

static uint64_t run(uint64_t items, size_t cap, size_t rec, unsigned flags, size_t batch)
{
    return run_job(items, cap, rec, flags, batch, 0);
}

int main(int argc, char **argv)
{
    uint64_t items = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    uint64_t errors = 0;
    /* The headline case at full length, every variant at a tenth of it. */
    errors += run(items, 1024, 8, 0, 0);
    const unsigned spread = LL_SPSC_SPREAD, adjacent = LL_SPSC_ADJACENT, uncached = LL_SPSC_NO_CACHE;
    const unsigned layouts[] = {0, 1, 2, 3, spread, spread | uncached, adjacent, adjacent | uncached};
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        errors += run(items / 10, 1024, 8, layouts[i], 0);
        errors += run(items / 10, 64, 24, layouts[i], 7); /* odd batch: exercises the wrap */
    }
    /* Two layouts at once, or a flag that does not exist: no ring. */
    if (ll_spsc_create(8, 8, LL_SPSC_UNPADDED | LL_SPSC_SPREAD) ||
        ll_spsc_create(8, 8, LL_SPSC_SPREAD | LL_SPSC_ADJACENT) ||
        ll_spsc_create(8, 8, LL_SPSC_UNPADDED | LL_SPSC_ADJACENT) || ll_spsc_create(8, 8, 16)) {
        fprintf(stderr, "contradictory or unknown flags accepted\n");
        errors++;
    }
    errors += run(items / 10, 2, 8, 0, 0);           /* smallest ring: full/empty every call */
    errors += run_job(items / 10, 1024, 8, 0, 0, 1); /* the exported u64 calls */
    const size_t sizes[] = {16, 32, 40, 64};         /* fixed-size copies, and one that is not */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        errors += run(items / 10, 64, sizes[i], 0, 0);

    /* The benchmark loops: gate, counters, ping-pong, c2c, contended mutex. */
    ll_spsc_bench_cfg cfg = {1024, items / 10, 0, {-1, -1, LL_WAIT_SPIN_YIELD, LL_WAIT_SPIN_YIELD}, 0, 0, 0};
    ll_spsc_bench_result r;
    if (ll_bench_spsc_throughput(&cfg, &r) != 0 || r.errors) {
        fprintf(stderr, "bench throughput failed\n");
        errors++;
    }
    cfg.refill = 128; /* the producer waits for a stretch of free slots, reading the size */
    if (ll_bench_spsc_throughput(&cfg, &r) != 0 || r.errors) {
        fprintf(stderr, "bench throughput (refill) failed\n");
        errors++;
    }
    cfg.refill = 1025; /* more than the ring holds: refused */
    if (ll_bench_spsc_throughput(&cfg, &r) != LL_EINVAL) {
        fprintf(stderr, "a refill above the capacity was accepted\n");
        errors++;
    }
    cfg.refill = 0;
    for (int api = 0; api <= 3; api++) { /* inlined, u64 calls, record calls, an empty call after each */
        double per = 0.0;
        uint64_t op_errors = 1;
        if (ll_bench_spsc_op(100001, api, &per, &op_errors) != 0 || op_errors || per <= 0.0) {
            fprintf(stderr, "bench one-thread push+pop failed (api %d)\n", api);
            errors++;
        }
        cfg.api = api;
        if (ll_bench_spsc_throughput(&cfg, &r) != 0 || r.errors || r.items_per_s <= 0.0) {
            fprintf(stderr, "bench throughput failed (api %d)\n", api);
            errors++;
        }
    }
    double per = 0.0;
    uint64_t op_errors = 0;
    cfg.api = 4; /* no such path: refused by both */
    if (ll_bench_spsc_op(100, 4, &per, &op_errors) != LL_EINVAL || ll_bench_spsc_throughput(&cfg, &r) != LL_EINVAL) {
        fprintf(stderr, "an unknown api path was accepted\n");
        errors++;
    }
    cfg.api = 0;
    cfg.batch = 100;
    if (ll_bench_spsc_throughput(&cfg, &r) != 0 || r.errors) {
        fprintf(stderr, "bench batch throughput failed\n");
        errors++;
    }
    cfg.items = 2000;
    if (ll_bench_spsc_rtt(&cfg, NULL, &r) != 0 || r.errors) {
        fprintf(stderr, "bench rtt failed\n");
        errors++;
    }
    cfg.api = 1;
    if (ll_bench_spsc_rtt(&cfg, NULL, &r) != 0 || r.errors) {
        fprintf(stderr, "bench rtt (exported calls) failed\n");
        errors++;
    }
    ll_floor_cfg fc = {20000, 200000.0, {-1, -1, LL_WAIT_SPIN_YIELD, LL_WAIT_SPIN_YIELD}, LL_CLOCK_TSC};
    ll_floor_result fr;
    ll_hist *lat = ll_hist_create(1, 3600000000000ULL, 3);
    if (!lat || ll_bench_pipeline_floor(&fc, lat, &fr) != 0 || fr.seen + fr.missed != fc.ticks || fr.seen == 0) {
        fprintf(stderr, "bench floor failed\n");
        errors++;
    }
    ll_hist_destroy(lat);
    if (ll_bench_c2c(2000, -1, -1, LL_WAIT_SPIN_YIELD) <= 0) {
        fprintf(stderr, "bench c2c failed\n");
        errors++;
    }
    if (ll_bench_mutex(20000, 1, -1, -1) <= 0) {
        fprintf(stderr, "bench mutex failed\n");
        errors++;
    }
    printf("%s: %llu errors\n", errors ? "FAIL" : "OK", (unsigned long long)errors);
    return errors ? 1 : 0;
}
