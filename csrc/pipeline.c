/* pipeline.c - producer -> SPSC ring -> consumer, with pooled feature
 * objects and latency stats, all in C threads (see pipeline.h).  Setup
 * (ring, pool, window, sample storage) happens before the start gate; the
 * only allocation after it is the growing sample array, on purpose. */
#define _GNU_SOURCE
#include "pipeline.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hist_inline.h"
#include "ll_util.h"
#include "pool_inline.h"
#include "spsc_inline.h"
#include "stop.h"

/* What travels through the ring: 40 bytes, copied in and out. */
typedef struct {
    uint64_t seq;
    double bid, ask;
    uint64_t intended_ns;
    uint64_t sent_ns;
} ll_tick;

/* A feature object: exactly one cache line, taken from the pool per tick. */
typedef struct {
    uint64_t seq;
    double mid, spread, ema, ret, bid, ask;
    uint64_t order_id;
} ll_features;
_Static_assert(sizeof(ll_features) == 64, "a feature object is one cache line");

/* A feature object still in use, and when it is given back. */
struct held {
    ll_features *f;
    uint64_t release_ns;
};

struct producer {
    const ll_pipeline_cfg *cfg;
    ll_spsc *q;
    struct ll_duo *duo;
    atomic_int *done;
    uint64_t produced, dropped_full, waits, late;
    int pinned;
    int stopped; /* ended early on a stop request (stop.h) */
};

struct consumer {
    const ll_pipeline_cfg *cfg;
    ll_spsc *q;
    ll_pool *pool;
    struct ll_duo *duo;
    atomic_int *done;
    ll_hist *lat_intended, *lat_sent;
    struct held *held;           /* objects still in use, oldest first: a ring of pool_blocks */
    ll_pipeline_sample *samples; /* preallocated: the caller's; growing: our own */
    size_t sample_cap;
    uint64_t n_samples, not_kept, reallocs;
    uint64_t consumed, dropped_pool, waits;
    uint64_t t_end;
    double checksum;
    int pinned;
};

/* The stop flag (stop.h) is polled every POLL_TICKS ticks and every
 * POLL_WAITS failed attempts of a wait: often enough to stop within a
 * millisecond, rarely enough to cost nothing measurable. */
enum { POLL_TICKS = 64, POLL_WAITS = 64, POLL_BUSY = 256 };

/* Busy work standing in for a stage's computation: spins on the clock.  It
 * ends early on a stop request, so a stopped run drains its ring quickly. */
static void busy_ns(uint64_t ns)
{
    if (ns == 0)
        return;
    uint64_t end = ll_now_ns() + ns;
    for (unsigned n = 1; ll_now_ns() < end; n++) {
        if (n % POLL_BUSY == 0 && ll_stop_requested())
            return;
        ll_compiler_barrier();
    }
}

static void *producer_main(void *arg)
{
    struct producer *p = arg;
    const ll_pipeline_cfg *c = p->cfg;
    p->pinned = ll_pin_if(c->producer_cpu);
    if (!ll_duo_arrive(p->duo))
        return NULL;
    const int open = c->producer_mode == LL_PRODUCER_OPEN;
    const double interval = open ? 1e9 / c->rate_per_s : 0.0;
    const uint64_t start = ll_now_ns();
    uint64_t rng = 0x5eed5eedull, waits = 0, dropped = 0, late = 0, i;
    double mid = 100.0;
    /* A stop ends the loop before tick i is made or while it waits to be
     * pushed: ticks 0..i-1 were all pushed or dropped, so produced = i keeps
     * produced = consumed + dropped. */
    for (i = 0; i < c->ticks; i++) {
        ll_tick t;
        unsigned spins = 0;
        if (i % POLL_TICKS == 0 && ll_stop_requested())
            break;
        if (open) {
            /* The schedule: tick i is due at start + i * interval, whatever
             * happened to earlier ticks (no coordinated omission). */
            t.intended_ns = start + (uint64_t)((double)i * interval);
            uint64_t now;
            unsigned polls = 0;
            while ((now = ll_now_ns()) < t.intended_ns) {
                ll_wait_once(c->producer_wait, &spins);
                if (++polls % POLL_WAITS == 0 && ll_stop_requested())
                    goto stopped;
            }
            if ((double)(now - t.intended_ns) > interval)
                late++;
            spins = 0;
        }
        mid += ((double)(ll_rng_next(&rng) >> 11) * 0x1.0p-53 - 0.5) * 0.01; /* a random walk */
        t.seq = i + 1;
        t.bid = mid - 0.005;
        t.ask = mid + 0.005;
        if (!open)
            t.intended_ns = ll_now_ns(); /* closed loop: "due" the moment it is made */
        for (;;) {
            t.sent_ns = ll_now_ns();
            if (ll_spsc_push_many_inline(p->q, &t, 1) == 1)
                break;
            if (c->full_policy == LL_FULL_DROP) {
                dropped++;
                break;
            }
            waits++;
            ll_wait_once(c->producer_wait, &spins);
            if (waits % POLL_WAITS == 0 && ll_stop_requested())
                goto stopped;
        }
    }
stopped:
    p->stopped = i < c->ticks;
    p->produced = i;
    p->dropped_full = dropped;
    p->waits = waits;
    p->late = late;
    /* release: every push above happens before the consumer sees done. */
    atomic_store_explicit(p->done, 1, memory_order_release);
    return NULL;
}

/* Stores one sample; in growing mode the array doubles when full, on this
 * (the hot) path, as std::vector::push_back does. */
static void keep_sample(struct consumer *k, const ll_pipeline_sample *s)
{
    if (k->n_samples == k->sample_cap) {
        if (k->cfg->sample_mode != LL_SAMPLES_GROWING) {
            k->not_kept++;
            return;
        }
        size_t cap = k->sample_cap ? 2 * k->sample_cap : 16;
        ll_pipeline_sample *grown = realloc(k->samples, cap * sizeof *grown);
        if (grown == NULL) {
            k->not_kept++;
            return;
        }
        k->samples = grown;
        k->sample_cap = cap;
        k->reallocs++;
    }
    k->samples[k->n_samples++] = *s;
}

static void *consumer_main(void *arg)
{
    struct consumer *k = arg;
    const ll_pipeline_cfg *c = k->cfg;
    k->pinned = ll_pin_if(c->consumer_cpu);
    if (!ll_duo_arrive(k->duo))
        return NULL;
    int stamps = 0;
    for (int i = 0; i < LL_PIPELINE_STAGES; i++)
        stamps |= c->work_ns[i] != 0;
    size_t held_n = 0, held_head = 0;
    double ema = 0.0, prev_mid = 0.0, checksum = 0.0;
    uint64_t waits = 0;
    unsigned spins = 0;
    ll_tick t;
    for (;;) {
        if (ll_spsc_pop_many_inline(k->q, &t, 1) == 0) {
            /* acquire: pairs with the producer's release of done, so a pop
             * after seeing it finds every tick that was ever pushed. */
            if (!atomic_load_explicit(k->done, memory_order_acquire)) {
                waits++;
                ll_wait_once(c->consumer_wait, &spins);
                continue;
            }
            if (ll_spsc_pop_many_inline(k->q, &t, 1) == 0)
                break;
        }
        spins = 0;
        ll_pipeline_sample s;
        s.popped_ns = ll_now_ns();
        /* Objects whose time is up go back to the pool first. */
        while (held_n > 0 && k->held[held_head].release_ns <= s.popped_ns) {
            ll_pool_free_inline(k->pool, k->held[held_head].f);
            held_head = (held_head + 1) % c->pool_blocks;
            held_n--;
        }
        ll_features *f = ll_pool_alloc_inline(k->pool);
        if (f == NULL) {
            k->dropped_pool++; /* counted, never silent */
            continue;
        }
        /* parse */
        f->seq = t.seq;
        f->bid = t.bid;
        f->ask = t.ask;
        busy_ns(c->work_ns[0]);
        if (stamps)
            s.stage_end_ns[0] = ll_now_ns();
        /* features */
        f->mid = 0.5 * (t.bid + t.ask);
        f->spread = t.ask - t.bid;
        f->ret = prev_mid != 0.0 ? f->mid / prev_mid - 1.0 : 0.0;
        ema = ema == 0.0 ? f->mid : ema + 0.05 * (f->mid - ema);
        f->ema = ema;
        prev_mid = f->mid;
        busy_ns(c->work_ns[1]);
        if (stamps)
            s.stage_end_ns[1] = ll_now_ns();
        /* risk: a position-limit style check on the features */
        checksum += fabs(f->ret) < 0.1 ? f->mid : 0.0;
        busy_ns(c->work_ns[2]);
        if (stamps)
            s.stage_end_ns[2] = ll_now_ns();
        /* encode */
        f->order_id = t.seq * 2654435761u;
        busy_ns(c->work_ns[3]);
        uint64_t done = ll_now_ns();
        if (!stamps)
            s.stage_end_ns[0] = s.stage_end_ns[1] = s.stage_end_ns[2] = done;
        s.stage_end_ns[3] = done;
        if (c->hold_ns == 0) {
            ll_pool_free_inline(k->pool, f);
        } else { /* in use until done + hold_ns; the ring cannot overflow: it has a slot per block */
            k->held[(held_head + held_n++) % c->pool_blocks] = (struct held){f, done + c->hold_ns};
        }
        if (k->lat_intended)
            ll_hist_record_n_inline(k->lat_intended, done - t.intended_ns, 1);
        if (k->lat_sent)
            ll_hist_record_n_inline(k->lat_sent, done - t.sent_ns, 1);
        s.seq = t.seq;
        s.intended_ns = t.intended_ns;
        s.sent_ns = t.sent_ns;
        keep_sample(k, &s);
        k->consumed++;
        k->t_end = done;
    }
    for (size_t i = 0; i < held_n; i++)
        ll_pool_free_inline(k->pool, k->held[(held_head + i) % c->pool_blocks].f);
    k->waits = waits;
    k->checksum = checksum;
    return NULL;
}

static int valid_wait(int w) { return w >= LL_WAIT_SPIN && w <= LL_WAIT_SLEEP; }

static int valid_cpu(int cpu) { return cpu >= -1 && cpu < ll_cpu_count(); }

static int check_cfg(const ll_pipeline_cfg *c, const ll_pipeline_sample *samples)
{
    if (c->ticks == 0 || c->capacity < 2 || (c->capacity & (c->capacity - 1)) != 0 || c->pool_blocks == 0)
        return LL_EINVAL;
    if (c->producer_mode != LL_PRODUCER_CLOSED && c->producer_mode != LL_PRODUCER_OPEN)
        return LL_EINVAL;
    /* isfinite and <= 1e9: the schedule needs an interval of at least 1 ns. */
    if (c->producer_mode == LL_PRODUCER_OPEN && !(isfinite(c->rate_per_s) && c->rate_per_s > 0 && c->rate_per_s <= 1e9))
        return LL_EINVAL;
    if ((c->full_policy != LL_FULL_WAIT && c->full_policy != LL_FULL_DROP) || !valid_wait(c->producer_wait) ||
        !valid_wait(c->consumer_wait) || !valid_cpu(c->producer_cpu) || !valid_cpu(c->consumer_cpu))
        return LL_EINVAL;
    if ((c->sample_mode != LL_SAMPLES_PREALLOCATED && c->sample_mode != LL_SAMPLES_GROWING) ||
        (c->sample_capacity > 0 && samples == NULL))
        return LL_EINVAL;
    return LL_OK;
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
    ll_spsc *q = ll_spsc_create(cfg->capacity, sizeof(ll_tick), 0);
    ll_pool *pool = ll_pool_create(sizeof(ll_features), cfg->pool_blocks, LL_POOL_CACHE_ALIGNED);
    struct held *held = cfg->hold_ns ? calloc(cfg->pool_blocks, sizeof *held) : NULL;
    if (q == NULL || pool == NULL || (cfg->hold_ns && held == NULL)) {
        rc = LL_ENOMEM;
        goto cleanup;
    }
    /* Pre-fault the caller's sample array so first touches are not measured. */
    if (cfg->sample_mode == LL_SAMPLES_PREALLOCATED && cfg->sample_capacity)
        memset(samples, 0, cfg->sample_capacity * sizeof *samples);

    struct ll_duo duo = {0};
    atomic_int done = 0;
    struct producer p = {.cfg = cfg, .q = q, .duo = &duo, .done = &done, .pinned = 1};
    struct consumer k = {.cfg = cfg,
                         .q = q,
                         .pool = pool,
                         .duo = &duo,
                         .done = &done,
                         .lat_intended = lat_intended,
                         .lat_sent = lat_sent,
                         .held = held,
                         .pinned = 1};
    if (cfg->sample_mode == LL_SAMPLES_PREALLOCATED) {
        k.samples = samples;
        k.sample_cap = cfg->sample_capacity;
    }
    rc = ll_run_pair(producer_main, &p, consumer_main, &k, &duo);
    if (rc == LL_OK) {
        /* Stopped: every result below holds the ticks made before the stop. */
        if (cfg->sample_mode == LL_SAMPLES_GROWING) {
            uint64_t keep = k.n_samples < cfg->sample_capacity ? k.n_samples : cfg->sample_capacity;
            if (keep)
                memcpy(samples, k.samples, keep * sizeof *samples);
            k.not_kept += k.n_samples - keep;
            k.n_samples = keep;
        }
        out->produced = p.produced;
        out->consumed = k.consumed;
        out->dropped_full = p.dropped_full;
        out->dropped_pool = k.dropped_pool;
        out->samples = k.n_samples;
        out->samples_not_kept = k.not_kept;
        out->sample_reallocs = k.reallocs;
        out->producer_waits = p.waits;
        out->consumer_waits = k.waits;
        out->late_sends = p.late;
        out->seconds = k.t_end > duo.t_start ? (double)(k.t_end - duo.t_start) / 1e9 : 0.0;
        out->feature_checksum = k.checksum;
        out->producer_pinned = p.pinned;
        out->consumer_pinned = k.pinned;
        if (p.stopped)
            rc = LL_STOPPED;
    }
    if (cfg->sample_mode == LL_SAMPLES_GROWING)
        free(k.samples);
cleanup:
    free(held);
    ll_pool_destroy(pool);
    ll_spsc_destroy(q);
    return rc;
}
