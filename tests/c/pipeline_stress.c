/* pipeline_stress.c - the pipeline under ThreadSanitizer (and plain), built
 * by tests/test_c_core.py.
 *
 * usage: pipeline_stress TICKS
 * Runs ll_pipeline_run with every producer mode, full policy, wait policy
 * and sample mode, with a pool small enough to run dry, and checks the
 * invariants: produced = consumed + dropped_full + dropped_pool; the kept
 * samples are in production order with ordered timestamps; the histograms
 * hold one count per processed tick.  Then runs started in the background
 * while this thread, the monitor, reads the live counters and cuts intervals
 * as fast as it can: the counters never go down, never count more taken than
 * made, and the intervals hold every processed tick once; a stop ends a long
 * run with nothing lost.  Exit status 0 only if all held. */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "ll_wait.h"
#include "pipeline.h"
#include "stop.h"

static unsigned long errors;

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "FAIL %s: %s\n", what, why);
    errors++;
}

static void run(const char *what, ll_pipeline_cfg cfg)
{
    ll_hist *hi = ll_hist_create(1, 3600000000000ull, 3), *hs = ll_hist_create(1, 3600000000000ull, 3);
    ll_pipeline_sample *s = calloc(cfg.sample_capacity ? cfg.sample_capacity : 1, sizeof *s);
    ll_pipeline_result r;
    if (!hi || !hs || !s) {
        fail(what, "out of memory");
        return;
    }
    int rc = ll_pipeline_run(&cfg, hi, hs, s, &r);
    if (rc != LL_OK) {
        fail(what, "ll_pipeline_run failed");
    } else {
        if (r.produced != cfg.ticks)
            fail(what, "produced != ticks");
        if (r.produced != r.consumed + r.dropped_full + r.dropped_pool)
            fail(what, "a tick was lost: produced != consumed + dropped");
        if (ll_hist_count(hi) != r.consumed || ll_hist_count(hs) != r.consumed)
            fail(what, "histogram counts != consumed");
        if (r.samples + r.samples_not_kept != r.consumed)
            fail(what, "samples kept + not kept != consumed");
        for (uint64_t i = 0; i < r.samples; i++) {
            if (i && s[i].seq <= s[i - 1].seq)
                fail(what, "samples out of production order");
            if (s[i].sent_ns < s[i].intended_ns && cfg.producer_mode == LL_PRODUCER_CLOSED)
                fail(what, "sent before made");
            if (s[i].popped_ns < s[i].sent_ns || s[i].stage_end_ns[3] < s[i].popped_ns)
                fail(what, "timestamps out of order");
        }
        printf("%-34s produced %llu consumed %llu dropped %llu/%llu reallocs %llu\n", what,
               (unsigned long long)r.produced, (unsigned long long)r.consumed, (unsigned long long)r.dropped_full,
               (unsigned long long)r.dropped_pool, (unsigned long long)r.sample_reallocs);
    }
    free(s);
    ll_hist_destroy(hi);
    ll_hist_destroy(hs);
}

/* One background run watched from here; stop_after: cuts before a stop (0: run to the end). */
static void monitored(const char *what, ll_pipeline_cfg cfg, unsigned stop_after)
{
    ll_hist *hi = ll_hist_create(1, 3600000000000ull, 3), *acc = ll_hist_create(1, 3600000000000ull, 3);
    int st = 0;
    ll_pipeline *p = hi && acc ? ll_pipeline_start(&cfg, hi, NULL, NULL, 1, &st) : NULL;
    if (p == NULL) {
        fail(what, "could not start");
        ll_hist_destroy(hi);
        ll_hist_destroy(acc);
        return;
    }
    ll_pipeline_live prev = {0}, now;
    uint64_t wm, cuts = 0, wm_max = 0;
    int stopped = 0;
    for (unsigned n = 0;; n++) {
        ll_pipeline_snapshot(p, &now);
        if (now.consumed + now.dropped_full + now.dropped_pool > now.produced)
            fail(what, "a snapshot counts more taken than made");
        /* The one exception, after a stop: the tick that waited for room when
         * the stop came is taken back (made, never sent: pipeline.c). */
        uint64_t taken_back = stopped && prev.produced == now.produced + 1 ? 1 : 0;
        if (now.produced + taken_back < prev.produced || now.consumed < prev.consumed ||
            now.dropped_full < prev.dropped_full || now.dropped_pool < prev.dropped_pool ||
            now.watermark < prev.watermark)
            fail(what, "a live counter went down");
        if (now.watermark > now.capacity)
            fail(what, "watermark above the capacity");
        prev = now;
        if (!now.running)
            break;
        if (n % 4 == 0) {
            if (ll_pipeline_cut(p, acc, &wm) != LL_OK)
                fail(what, "cut failed");
            wm_max = wm > wm_max ? wm : wm_max;
            cuts++;
        }
        if (stop_after && cuts == stop_after) {
            ll_pipeline_stop(p);
            stopped = 1;
        } else if (n % 2)
            ll_sleep_ns(50000);
    }
    ll_pipeline_result r;
    int rc = ll_pipeline_join(p, &r);
    ll_pipeline_cut(p, acc, &wm); /* what the threads did after the last cut */
    wm_max = wm > wm_max ? wm : wm_max;
    ll_pipeline_snapshot(p, &now);
    if (rc != (stop_after ? LL_STOPPED : LL_OK))
        fail(what, stop_after ? "a stopped run did not say so" : "ll_pipeline_join failed");
    if (r.produced != r.consumed + r.dropped_full + r.dropped_pool)
        fail(what, "a tick was lost: produced != consumed + dropped");
    if (!stop_after && r.produced != cfg.ticks)
        fail(what, "produced != ticks");
    if (now.produced != r.produced || now.consumed != r.consumed || now.running)
        fail(what, "the last snapshot differs from the result");
    if (ll_hist_count(acc) != r.consumed || ll_hist_count(hi) != r.consumed)
        fail(what, "the intervals do not hold every processed tick once");
    if (wm_max > cfg.capacity)
        fail(what, "an interval's watermark is above the capacity");
    printf("%-34s produced %llu consumed %llu dropped %llu/%llu cuts %llu watermark %llu\n", what,
           (unsigned long long)r.produced, (unsigned long long)r.consumed, (unsigned long long)r.dropped_full,
           (unsigned long long)r.dropped_pool, (unsigned long long)cuts, (unsigned long long)now.watermark);
    ll_pipeline_destroy(p);
    ll_hist_destroy(hi);
    ll_hist_destroy(acc);
}

int main(int argc, char **argv)
{
    uint64_t ticks = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    const ll_pipeline_cfg base = {
        .ticks = ticks,
        .producer_mode = LL_PRODUCER_CLOSED,
        .rate_per_s = 1e6,
        .full_policy = LL_FULL_WAIT,
        .pair = {.producer_cpu = -1,
                 .consumer_cpu = -1,
                 .producer_wait = LL_WAIT_SPIN_YIELD,
                 .consumer_wait = LL_WAIT_SPIN_YIELD},
        .capacity = 64,
        .pool_blocks = 256,
        .hold_ns = 0,
        .sample_mode = LL_SAMPLES_PREALLOCATED,
        .sample_capacity = ticks,
        .work_ns = {0, 0, 0, 0},
        .handoff = LL_HANDOFF_SLOTS,
        .clock = LL_CLOCK_TSC,
    };
    ll_pipeline_cfg c;

    /* Both hand-offs and both clocks on the busiest shapes: full ring, drops, wrap. */
    const char *names[2][2] = {{"cursors, monotonic", "cursors, tsc"}, {"slots, monotonic", "slots, tsc"}};
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 2; k++) {
            char what[80];
            c = base;
            c.handoff = h ? LL_HANDOFF_SLOTS : LL_HANDOFF_CURSORS;
            c.clock = k ? LL_CLOCK_TSC : LL_CLOCK_MONOTONIC;
            c.ticks = ticks / 4;
            c.sample_capacity = c.ticks;
            snprintf(what, sizeof what, "closed, wait, %s", names[h][k]);
            run(what, c);
            c.producer_mode = LL_PRODUCER_OPEN;
            c.rate_per_s = 2e6;
            c.full_policy = LL_FULL_DROP;
            c.capacity = 8;
            snprintf(what, sizeof what, "open 2M/s, drop, ring of 8, %s", names[h][k]);
            run(what, c);
        }

    run("closed, wait, spin_yield", base);
    c = base;
    c.pair.producer_wait = c.pair.consumer_wait = LL_WAIT_YIELD;
    c.sample_mode = LL_SAMPLES_GROWING;
    c.sample_capacity = ticks / 2;
    run("closed, yield, growing (half kept)", c);
    c = base;
    c.producer_mode = LL_PRODUCER_OPEN;
    c.rate_per_s = 2e6;
    c.full_policy = LL_FULL_DROP;
    c.capacity = 8;
    run("open 2M/s, drop, ring of 8", c);
    c = base;
    c.producer_mode = LL_PRODUCER_OPEN;
    c.rate_per_s = 5e5;
    c.pool_blocks = 16;
    c.hold_ns = 200000;
    c.work_ns[1] = 100;
    c.work_ns[3] = 50;
    run("open, pool runs dry, stage work", c);
    c = base;
    c.ticks = ticks / 10 + 1;
    c.pair.producer_wait = c.pair.consumer_wait = LL_WAIT_SLEEP;
    c.sample_capacity = 0;
    run("closed, sleep, no samples", c);

    /* Watched while they run. */
    c = base;
    c.sample_capacity = 0;
    monitored("monitored, closed, wait", c, 0);
    c.producer_mode = LL_PRODUCER_OPEN;
    c.rate_per_s = 2e6;
    c.full_policy = LL_FULL_DROP;
    c.capacity = 8;
    c.handoff = LL_HANDOFF_CURSORS;
    c.work_ns[1] = 200;
    monitored("monitored, open 2M/s, drop, stage work", c, 0);
    c = base;
    c.sample_capacity = 0;
    c.ticks = 1000000000ull; /* stopped long before */
    c.pool_blocks = 16;
    c.hold_ns = 100000;
    monitored("monitored, stopped, pool runs dry", c, 20);

    ll_pipeline_cfg bad = base;
    ll_pipeline_result r;
    bad.capacity = 100;
    if (ll_pipeline_run(&bad, NULL, NULL, NULL, &r) != LL_EINVAL)
        fail("bad capacity", "accepted");
    bad = base;
    bad.producer_mode = LL_PRODUCER_OPEN;
    bad.rate_per_s = 0;
    if (ll_pipeline_run(&bad, NULL, NULL, NULL, &r) != LL_EINVAL)
        fail("zero rate", "accepted");
    bad = base;
    bad.handoff = 7;
    if (ll_pipeline_run(&bad, NULL, NULL, NULL, &r) != LL_EINVAL)
        fail("bad handoff", "accepted");
    bad = base;
    bad.clock = -1;
    if (ll_pipeline_run(&bad, NULL, NULL, NULL, &r) != LL_EINVAL)
        fail("bad clock", "accepted");

    printf("%s: %lu errors\n", errors ? "FAIL" : "OK", errors); /* OK only when there are none */
    return errors ? 1 : 0;
}
