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
#include "ll_stamp.h"
#include "ll_util.h"
#include "pool_inline.h"
#include "slotring_inline.h"
#include "spsc_inline.h"
#include "stop.h"

/* What travels through the ring: 40 bytes, copied in and out with moves of
 * fixed size.  Times in stamp units (struct ll_stamp). */
typedef struct {
    uint64_t seq;
    double bid, ask;
    uint64_t intended;
    uint64_t sent;
} ll_tick;
_Static_assert(sizeof(ll_tick) <= LL_SLOT_BYTES, "a tick fits a slot");

/* The hand-off, either ring (cfg->handoff). */
struct handoff {
    int slots; /* 1: the slot-sequence ring; 0: the SPSC ring of spsc.h */
    ll_spsc *q;
    struct ll_slotring r;
};

static inline bool push_tick(struct handoff *h, const ll_tick *t)
{
    return h->slots ? ll_slotring_push(&h->r, t, sizeof *t) : ll_spsc__push1(h->q, t, sizeof *t);
}

static inline bool pop_tick(struct handoff *h, ll_tick *t)
{
    return h->slots ? ll_slotring_pop(&h->r, t, sizeof *t) : ll_spsc__pop1(h->q, t, sizeof *t);
}

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
    uint64_t release; /* stamp units */
};

struct producer {
    const ll_pipeline_cfg *cfg;
    const struct ll_stamp *clk;
    struct handoff *h;
    struct ll_duo *duo;
    atomic_int *done;
    uint64_t produced, dropped_full, waits, late;
    int pinned;
    int stopped; /* ended early on a stop request (stop.h) */
};

struct consumer {
    const ll_pipeline_cfg *cfg;
    const struct ll_stamp *clk;
    struct handoff *h;
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
    const struct ll_stamp *clk = p->clk;
    p->pinned = ll_pin_if(c->producer_cpu);
    if (!ll_duo_arrive(p->duo))
        return NULL;
    const int open = c->producer_mode == LL_PRODUCER_OPEN;
    const double interval = open ? ll_stamp_units(clk, 1e9 / c->rate_per_s) : 0.0; /* in stamp units */
    const uint64_t start = ll_stamp_now(clk);
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
        mid += ((double)(ll_rng_next(&rng) >> 11) * 0x1.0p-53 - 0.5) * 0.01; /* a random walk */
        t.seq = i + 1;
        t.bid = mid - 0.005;
        t.ask = mid + 0.005;
        uint64_t now;
        if (open) {
            /* The schedule: tick i is due at start + i * interval, whatever
             * happened to earlier ticks (no coordinated omission).  The tick
             * is made before its due time, so the push follows the clock
             * read that found it due. */
            t.intended = start + (uint64_t)((double)i * interval);
            unsigned polls = 0;
            while ((now = ll_stamp_now(clk)) < t.intended) {
                ll_wait_once(c->producer_wait, &spins);
                if (++polls % POLL_WAITS == 0 && ll_stop_requested())
                    goto stopped;
            }
            if ((double)(now - t.intended) > interval)
                late++;
            spins = 0;
        } else {
            t.intended = now = ll_stamp_now(clk); /* closed loop: "due" the moment it is made */
        }
        for (;;) {
            t.sent = now; /* the read that found it due (or ready): no second one */
            if (push_tick(p->h, &t))
                break;
            if (c->full_policy == LL_FULL_DROP) {
                dropped++;
                break;
            }
            waits++;
            ll_wait_once(c->producer_wait, &spins);
            if (waits % POLL_WAITS == 0 && ll_stop_requested())
                goto stopped;
            now = ll_stamp_now(clk);
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
    const struct ll_stamp *clk = k->clk;
    k->pinned = ll_pin_if(c->consumer_cpu);
    if (!ll_duo_arrive(k->duo))
        return NULL;
    int stamps = 0;
    for (int i = 0; i < LL_PIPELINE_STAGES; i++)
        stamps |= c->work_ns[i] != 0;
    const int pop_stamp = stamps || c->hold_ns; /* held objects are released against the pop's time */
    const uint64_t hold = (uint64_t)ll_stamp_units(clk, (double)c->hold_ns); /* in stamp units */
    size_t held_n = 0, held_head = 0;
    double ema = 0.0, inv_prev_mid = 0.0, checksum = 0.0; /* 1 / the previous mid, 0 before the first */
    uint64_t waits = 0, end[LL_PIPELINE_STAGES], popped = 0;
    unsigned spins = 0;
    ll_tick t;
    for (;;) {
        if (!pop_tick(k->h, &t)) {
            /* acquire: pairs with the producer's release of done, so a pop
             * after seeing it finds every tick that was ever pushed. */
            if (!atomic_load_explicit(k->done, memory_order_acquire)) {
                waits++;
                ll_wait_once(c->consumer_wait, &spins);
                continue;
            }
            if (!pop_tick(k->h, &t))
                break;
        }
        spins = 0;
        /* With stage stamps (or held objects to release), one stamp at the
         * pop; without, the only stamp is `done` below: a pop stamp would be
         * a clock read on the measured path that no figure needs. */
        if (pop_stamp)
            popped = ll_stamp_after(clk);
        /* Objects whose time is up go back to the pool first. */
        while (held_n > 0 && k->held[held_head].release <= popped) {
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
        if (stamps) {
            busy_ns(c->work_ns[0]);
            end[0] = ll_stamp_after(clk);
        }
        /* features */
        f->mid = 0.5 * (t.bid + t.ask);
        f->spread = t.ask - t.bid;
        f->ret = inv_prev_mid != 0.0 ? f->mid * inv_prev_mid - 1.0 : 0.0; /* a multiply: the divide is below */
        ema = ema == 0.0 ? f->mid : ema + 0.05 * (f->mid - ema);
        f->ema = ema;
        if (stamps) {
            busy_ns(c->work_ns[1]);
            end[1] = ll_stamp_after(clk);
        }
        /* risk: a position-limit style check on the features */
        checksum += fabs(f->ret) < 0.1 ? f->mid : 0.0;
        if (stamps) {
            busy_ns(c->work_ns[2]);
            end[2] = ll_stamp_after(clk);
        }
        /* encode */
        f->order_id = t.seq * 2654435761u;
        if (stamps)
            busy_ns(c->work_ns[3]);
        uint64_t done = ll_stamp_after(clk);
        /* Everything below is bookkeeping after the tick's last stamp: the
         * next tick's divisor too (a divide takes ~15 cycles; here nobody
         * waits for it). */
        inv_prev_mid = 1.0 / f->mid;
        if (!stamps) {
            end[0] = end[1] = end[2] = done;
            if (!pop_stamp)
                popped = done;
        }
        end[3] = done;
        if (c->hold_ns == 0) {
            ll_pool_free_inline(k->pool, f);
        } else { /* in use until done + hold; the ring cannot overflow: it has a slot per block */
            k->held[(held_head + held_n++) % c->pool_blocks] = (struct held){f, done + hold};
        }
        if (k->lat_intended)
            ll_hist_record_n_inline(k->lat_intended, ll_stamp_span_ns(clk, done - t.intended), 1);
        if (k->lat_sent)
            ll_hist_record_n_inline(k->lat_sent, ll_stamp_span_ns(clk, done - t.sent), 1);
        ll_pipeline_sample s;
        s.seq = t.seq;
        s.intended_ns = ll_stamp_ns(clk, t.intended);
        s.sent_ns = ll_stamp_ns(clk, t.sent);
        s.popped_ns = ll_stamp_ns(clk, popped);
        for (int i = 0; i < LL_PIPELINE_STAGES; i++)
            s.stage_end_ns[i] = ll_stamp_ns(clk, end[i]);
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
    if ((c->handoff != LL_HANDOFF_CURSORS && c->handoff != LL_HANDOFF_SLOTS) ||
        (c->clock != LL_CLOCK_MONOTONIC && c->clock != LL_CLOCK_TSC))
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
    struct handoff h = {.slots = cfg->handoff == LL_HANDOFF_SLOTS};
    int ring_ok = h.slots ? ll_slotring_init(&h.r, cfg->capacity) == 0
                          : (h.q = ll_spsc_create(cfg->capacity, sizeof(ll_tick), 0)) != NULL;
    ll_pool *pool = ll_pool_create(sizeof(ll_features), cfg->pool_blocks, LL_POOL_CACHE_ALIGNED);
    struct held *held = cfg->hold_ns ? calloc(cfg->pool_blocks, sizeof *held) : NULL;
    struct ll_stamp clk;
    ll_stamp_init(&clk, cfg->clock == LL_CLOCK_TSC);
    if (!ring_ok || pool == NULL || (cfg->hold_ns && held == NULL)) {
        rc = LL_ENOMEM;
        goto cleanup;
    }
    /* Pre-fault the caller's sample array so first touches are not measured. */
    if (cfg->sample_mode == LL_SAMPLES_PREALLOCATED && cfg->sample_capacity)
        memset(samples, 0, cfg->sample_capacity * sizeof *samples);

    struct ll_duo duo = {0};
    atomic_int done = 0;
    struct producer p = {.cfg = cfg, .clk = &clk, .h = &h, .duo = &duo, .done = &done, .pinned = 1};
    struct consumer k = {.cfg = cfg,
                         .clk = &clk,
                         .h = &h,
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
        uint64_t t_end = ll_stamp_ns(&clk, k.t_end);
        out->seconds = k.consumed && t_end > duo.t_start ? (double)(t_end - duo.t_start) / 1e9 : 0.0;
        out->tsc = clk.tsc;
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
    if (h.slots)
        ll_slotring_free(&h.r);
    else
        ll_spsc_destroy(h.q);
    return rc;
}
