/* pipeline_run.c - the pipeline's owner side (see pipeline.h): the config
 * check, the setup of a run (ring, pool, histograms, sample storage) before
 * its threads start, and what the monitor calls while it runs (snapshot,
 * cut, stop) and after (join, destroy).  The threads are in pipeline.c. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "ll_util.h"
#include "pipeline.h"
#include "pipeline_impl.h"
#include "pool.h"
#include "slotring_inline.h"
#include "spsc.h"
#include "stop.h"

static int check_cfg(const ll_pipeline_cfg *c, const ll_pipeline_sample *samples)
{
    if (c->ticks == 0 || c->capacity < 2 || (c->capacity & (c->capacity - 1)) != 0 || c->pool_blocks == 0)
        return LL_EINVAL;
    if (c->producer_mode != LL_PRODUCER_CLOSED && c->producer_mode != LL_PRODUCER_OPEN)
        return LL_EINVAL;
    /* 1..1e9 ticks/s: an interval from 1 ns to 1 s; and a schedule of at most
     * LL_PIPELINE_MAX_SCHEDULE_S, so that i * interval (clock units, see
     * producer_main) stays far inside uint64 and its conversion is defined. */
    if (c->producer_mode == LL_PRODUCER_OPEN &&
        !(isfinite(c->rate_per_s) && c->rate_per_s >= 1.0 && c->rate_per_s <= 1e9 &&
          (double)c->ticks / c->rate_per_s <= LL_PIPELINE_MAX_SCHEDULE_S))
        return LL_EINVAL;
    if ((c->full_policy != LL_FULL_WAIT && c->full_policy != LL_FULL_DROP) || !ll_pair_ok(&c->pair, 0))
        return LL_EINVAL;
    if ((c->handoff != LL_HANDOFF_CURSORS && c->handoff != LL_HANDOFF_SLOTS) ||
        (c->clock != LL_CLOCK_MONOTONIC && c->clock != LL_CLOCK_TSC))
        return LL_EINVAL;
    if ((c->sample_mode != LL_SAMPLES_PREALLOCATED && c->sample_mode != LL_SAMPLES_GROWING) ||
        (c->sample_capacity > 0 && samples == NULL))
        return LL_EINVAL;
    /* The faults: each length at most LL_INJECT_MAX_NS (sums stay far inside
     * uint64), growth at most 1 ms per second, a probability in ppm. */
    const ll_pipeline_inject *in = &c->inject;
    if (in->stall_ns > LL_INJECT_MAX_NS || in->slow_ns > LL_INJECT_MAX_NS || in->pause_ns > LL_INJECT_MAX_NS ||
        in->grow_ns_per_s > 1000000u || in->slow_ppm > 1000000u)
        return LL_EINVAL;
    return LL_OK;
}

static void release(ll_pipeline *r)
{
    free(r->held);
    ll_pool_destroy(r->pool);
    if (r->h.slots)
        ll_slotring_free(&r->h.r);
    else
        ll_spsc_destroy(r->h.q);
    ll_hist_destroy(r->iv[0]);
    ll_hist_destroy(r->iv[1]);
    free(r);
}

ll_pipeline *ll_pipeline_start(const ll_pipeline_cfg *cfg, ll_hist *lat_intended, ll_hist *lat_sent,
                               ll_pipeline_sample *samples, int intervals, int *status)
{
    int st = cfg == NULL ? LL_EINVAL : check_cfg(cfg, samples);
    ll_pipeline *r = st == LL_OK ? ll_alloc_lines(sizeof *r) : NULL;
    if (st == LL_OK && r == NULL)
        st = LL_ENOMEM;
    if (st != LL_OK) {
        if (status)
            *status = st;
        return NULL;
    }
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    cfg = &r->cfg;
    r->samples = samples;
    r->h.slots = cfg->handoff == LL_HANDOFF_SLOTS;
    int ring_ok = r->h.slots ? ll_slotring_init(&r->h.r, cfg->capacity) == 0
                             : (r->h.q = ll_spsc_create(cfg->capacity, sizeof(ll_tick), 0)) != NULL;
    r->pool = ll_pool_create(sizeof(ll_features), cfg->pool_blocks, LL_POOL_CACHE_ALIGNED);
    r->held = cfg->hold_ns ? calloc(cfg->pool_blocks, sizeof *r->held) : NULL;
    if (intervals) {
        r->iv[0] = ll_hist_create(1, 3600000000000ull, 3); /* 1 ns to an hour, 3 digits: as lowlat.core.hist */
        r->iv[1] = ll_hist_create(1, 3600000000000ull, 3);
    }
    ll_stamp_init(&r->clk, cfg->clock == LL_CLOCK_TSC);
    if (!ring_ok || r->pool == NULL || (cfg->hold_ns && r->held == NULL) ||
        (intervals && (r->iv[0] == NULL || r->iv[1] == NULL))) {
        release(r);
        if (status)
            *status = LL_ENOMEM;
        return NULL;
    }
    /* Pre-fault the caller's sample array so first touches are not measured. */
    if (cfg->sample_mode == LL_SAMPLES_PREALLOCATED && cfg->sample_capacity)
        memset(samples, 0, cfg->sample_capacity * sizeof *samples);

    struct producer *p = &r->p;
    p->cfg = cfg, p->clk = &r->clk, p->h = &r->h, p->duo = &r->duo, p->done = &r->done.done;
    p->ctl = &r->ctl, p->peer = &r->k.live, p->pinned = 1;
    struct consumer *k = &r->k;
    k->cfg = cfg, k->clk = &r->clk, k->h = &r->h, k->pool = r->pool, k->duo = &r->duo, k->done = &r->done.done;
    k->ctl = &r->ctl, k->lat_intended = lat_intended, k->lat_sent = lat_sent, k->held = r->held, k->pinned = 1;
    k->iv[0] = r->iv[0], k->iv[1] = r->iv[1], k->iv_cur = r->iv[0];
    if (cfg->sample_mode == LL_SAMPLES_PREALLOCATED) {
        k->samples = samples;
        k->sample_cap = cfg->sample_capacity;
    }
    /* Both threads behind the start gate, opened here once both have
     * arrived (as ll_run_pair, but the joins come later). */
    if (pthread_create(&r->tp, NULL, ll_pipeline__producer_main, p) != 0) {
        release(r);
        if (status)
            *status = LL_ESYS;
        return NULL;
    }
    if (pthread_create(&r->tk, NULL, ll_pipeline__consumer_main, k) != 0) {
        /* Its partner never comes: tell the producer to return at once. */
        atomic_store_explicit(&r->duo.go, -1, memory_order_release);
        pthread_join(r->tp, NULL);
        release(r);
        if (status)
            *status = LL_ESYS;
        return NULL;
    }
    ll_duo_open(&r->duo, 2);
    r->started = 1;
    if (status)
        *status = LL_OK;
    return r;
}

void ll_pipeline_snapshot(ll_pipeline *r, ll_pipeline_live *out)
{
    /* The `finished` flags first, with acquire: once both are set, the
     * counters read below are the final ones. */
    int finished = atomic_load_explicit(&r->p.live.finished, memory_order_acquire) &&
                   atomic_load_explicit(&r->k.live.finished, memory_order_acquire);
    /* acquire, the consumer's counters before the producer's: each pairs
     * with its owner's release, so `produced`, read after them, covers every
     * tick they count (produced >= consumed + dropped). */
    out->consumed = atomic_load_explicit(&r->k.live.consumed, memory_order_acquire);
    out->dropped_pool = atomic_load_explicit(&r->k.live.dropped_pool, memory_order_acquire);
    out->dropped_full = atomic_load_explicit(&r->p.live.dropped_full, memory_order_acquire);
    /* relaxed: the acquires above already order this load after them. */
    out->produced = atomic_load_explicit(&r->p.live.produced, memory_order_relaxed);
    out->watermark = atomic_load_explicit(&r->p.live.watermark, memory_order_relaxed); /* relaxed: a number */
    out->capacity = r->cfg.capacity;
    out->running = !finished;
}

int ll_pipeline_cut(ll_pipeline *r, ll_hist *lat, uint64_t *watermark)
{
    if (r->iv[0] == NULL || lat == NULL)
        return LL_EINVAL;
    uint64_t e = ++r->epoch;
    /* release: the reset of the histogram the consumer switches to (done at
     * the previous cut) happens before it sees the new epoch. */
    atomic_store_explicit(&r->ctl.epoch, e, memory_order_release);
    /* acquire (all four): pair with the threads' releases of ack/finished,
     * so what they wrote before is read complete below. */
    int k_acked, p_acked;
    for (;;) {
        k_acked = atomic_load_explicit(&r->k.live.ack, memory_order_acquire) == e;
        if (k_acked || atomic_load_explicit(&r->k.live.finished, memory_order_acquire))
            break;
        ll_sleep_ns(20000);
    }
    for (;;) {
        p_acked = atomic_load_explicit(&r->p.live.ack, memory_order_acquire) == e;
        if (p_acked || atomic_load_explicit(&r->p.live.finished, memory_order_acquire))
            break;
        ll_sleep_ns(20000);
    }
    /* Switched: the previous histogram is the monitor's now.  Ended without
     * switching: it writes nothing more, and its last records are in the
     * histogram it was on (the other one is empty). */
    for (int i = 0; i < 2; i++) {
        ll_hist *h = r->iv[i];
        if (k_acked && h != r->iv[(e - 1) & 1])
            continue;
        ll_hist_merge(lat, h);
        ll_hist_reset(h);
    }
    uint64_t wm;
    if (p_acked) {
        wm = atomic_load_explicit(&r->p.live.iv_watermark, memory_order_relaxed); /* ordered by ack's acquire */
    } else {
        /* relaxed (both): the producer has ended, ordered by `finished`; the
         * store makes a later cut report an empty interval. */
        wm = atomic_load_explicit(&r->p.live.final_watermark, memory_order_relaxed);
        atomic_store_explicit(&r->p.live.final_watermark, 0, memory_order_relaxed);
    }
    if (watermark)
        *watermark = wm;
    return LL_OK;
}

void ll_pipeline_stop(ll_pipeline *r)
{
    /* relaxed: a request to end soon, with no data; the join orders the rest. */
    atomic_store_explicit(&r->ctl.stop, 1, memory_order_relaxed);
}

int ll_pipeline_join(ll_pipeline *r, ll_pipeline_result *out)
{
    if (!r->joined) {
        pthread_join(r->tp, NULL);
        pthread_join(r->tk, NULL);
        r->joined = 1;
        const ll_pipeline_cfg *cfg = &r->cfg;
        struct producer *p = &r->p;
        struct consumer *k = &r->k;
        ll_pipeline_result *o = &r->result;
        /* Stopped: every result below holds the ticks made before the stop. */
        if (cfg->sample_mode == LL_SAMPLES_GROWING) {
            uint64_t keep = k->n_samples < cfg->sample_capacity ? k->n_samples : cfg->sample_capacity;
            if (keep)
                memcpy(r->samples, k->samples, keep * sizeof *r->samples);
            k->not_kept += k->n_samples - keep;
            k->n_samples = keep;
            free(k->samples);
            k->samples = NULL;
        }
        o->produced = p->produced;
        o->consumed = k->consumed;
        o->dropped_full = p->dropped_full;
        o->dropped_pool = k->dropped_pool;
        o->samples = k->n_samples;
        o->samples_not_kept = k->not_kept;
        o->sample_reallocs = k->reallocs;
        o->producer_waits = p->waits;
        o->consumer_waits = k->waits;
        o->late_sends = p->late;
        uint64_t t_end = ll_stamp_ns(&r->clk, k->t_end);
        o->seconds = k->consumed && t_end > r->duo.t_start ? (double)(t_end - r->duo.t_start) / 1e9 : 0.0;
        o->tsc = r->clk.tsc;
        o->feature_checksum = k->checksum;
        o->producer_pinned = p->pinned;
        o->consumer_pinned = k->pinned;
        r->rc = p->stopped ? LL_STOPPED : LL_OK;
    }
    if (out)
        *out = r->result;
    return r->rc;
}

void ll_pipeline_destroy(ll_pipeline *r)
{
    if (r == NULL)
        return;
    if (!r->joined) {
        ll_pipeline_stop(r);
        ll_pipeline_join(r, NULL);
    }
    release(r);
}

int ll_pipeline_run(const ll_pipeline_cfg *cfg, ll_hist *lat_intended, ll_hist *lat_sent, ll_pipeline_sample *samples,
                    ll_pipeline_result *out)
{
    if (cfg == NULL || out == NULL)
        return LL_EINVAL;
    int rc = check_cfg(cfg, samples);
    if (rc != LL_OK)
        return rc;
    memset(out, 0, sizeof *out);
    ll_pipeline *r = ll_pipeline_start(cfg, lat_intended, lat_sent, samples, 0, &rc);
    if (r == NULL)
        return rc;
    rc = ll_pipeline_join(r, out);
    ll_pipeline_destroy(r);
    return rc;
}
