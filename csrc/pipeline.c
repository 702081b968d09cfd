/* pipeline.c - producer -> SPSC ring -> consumer, with pooled feature
 * objects and latency stats, all in C threads (see pipeline.h): the two
 * threads' loops.  Setup (ring, pool, window, sample storage: pipeline_run.c)
 * happens before the start gate; the only allocation after it is the
 * growing sample array, on purpose. */
#define _GNU_SOURCE
#include "pipeline.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "hist_inline.h"
#include "ll_stamp.h"
#include "ll_util.h"
#include "pipeline_impl.h"
#include "pipeline_inject.h"
#include "pool_inline.h"
#include "slotring_inline.h"
#include "spsc_inline.h"
#include "stop.h"

static inline bool push_tick(struct handoff *h, const ll_tick *t)
{
    return h->slots ? ll_slotring_push(&h->r, t, sizeof *t) : ll_spsc__push1(h->q, t, sizeof *t);
}

static inline bool pop_tick(struct handoff *h, ll_tick *t)
{
    return h->slots ? ll_slotring_pop(&h->r, t, sizeof *t) : ll_spsc__pop1(h->q, t, sizeof *t);
}

/* The producer's bookkeeping of the ring's occupancy: the interval's and the
 * run's highest, the run's published when it grows (rarely, after warm-up). */
static inline void note_occupancy(struct producer *p, uint64_t occ)
{
    if (occ > p->wm_iv)
        p->wm_iv = occ;
    if (occ > p->wm_run) {
        p->wm_run = occ;
        /* relaxed: a number for the monitor, no data hangs on it. */
        atomic_store_explicit(&p->live.watermark, occ, memory_order_relaxed);
    }
}

/* Every POLL_TICKS ticks: the occupancy from the producer's side, made and
 * not yet taken.  One read of the consumer's line per POLL_TICKS ticks is
 * the whole cost of watching the ring. */
static inline void sample_occupancy(struct producer *p, uint64_t pushed)
{
    /* relaxed: an estimate; a stale value only overstates the occupancy. */
    uint64_t taken = atomic_load_explicit(&p->peer->consumed, memory_order_relaxed) +
                     atomic_load_explicit(&p->peer->dropped_pool, memory_order_relaxed);
    uint64_t occ = pushed > taken ? pushed - taken : 0;
    note_occupancy(p, occ < p->cfg->capacity ? occ : p->cfg->capacity);
}

/* The producer's poll point: switches interval when the monitor asked for a
 * new one; true when the run should stop. */
static bool producer_poll(struct producer *p)
{
    /* relaxed: the epoch brings the producer no data (it owns its watermark). */
    uint64_t e = atomic_load_explicit(&p->ctl->epoch, memory_order_relaxed);
    if (e != p->epoch) {
        p->epoch = e;
        atomic_store_explicit(&p->live.iv_watermark, p->wm_iv, memory_order_relaxed);
        /* release: the monitor's acquire of ack then reads this interval's watermark. */
        atomic_store_explicit(&p->live.ack, e, memory_order_release);
        p->wm_iv = 0;
    }
    return stop_asked(p->ctl);
}

/* The consumer's, once per loop: switches histogram when the monitor asked. */
static inline void consumer_poll(struct consumer *k)
{
    /* acquire: pairs with the monitor's release of the epoch, so the
     * histogram it reset is seen reset (a relaxed load and a fence would do;
     * ThreadSanitizer does not model fences; on x86 both are a plain load). */
    uint64_t e = atomic_load_explicit(&k->ctl->epoch, memory_order_acquire);
    if (e != k->epoch) {
        k->epoch = e;
        k->iv_cur = k->iv[e & 1];
        /* release: every record into the previous histogram happens before
         * the monitor, having seen this ack, reads it. */
        atomic_store_explicit(&k->live.ack, e, memory_order_release);
    }
}

/* The open loop's pacing: waits (per the producer's wait policy) until the
 * stamp clock reaches `due`; *now is the read that found it due.  False on a
 * stop.  Inlined into the producer's loop: no call per tick. */
static inline __attribute__((always_inline)) bool wait_until(struct producer *p, uint64_t due, uint64_t *now)
{
    unsigned spins = 0, polls = 0;
    while ((*now = ll_stamp_now(p->clk)) < due) {
        ll_wait_once(p->cfg->pair.producer_wait, &spins);
        if (++polls % POLL_WAITS == 0 && producer_poll(p))
            return false;
    }
    return true;
}

void *ll_pipeline__producer_main(void *arg)
{
    struct producer *p = arg;
    const ll_pipeline_cfg *c = p->cfg;
    const struct ll_stamp *clk = p->clk;
    p->pinned = ll_pin_if(c->pair.producer_cpu);
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
        if (i % POLL_TICKS == 0) {
            if (producer_poll(p))
                break;
            inject_producer_pause(&c->inject, i, p->ctl); /* one compare when off, here only every 64 ticks */
            sample_occupancy(p, i - dropped);             /* ticks 0..i-1 were pushed or dropped */
        }
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
            /* Defined: check_cfg bounds the schedule to 31 days, so i * interval
             * < 2.7e16 clock units (10 per ns at 10 GHz), far below 2^64. */
            t.intended = start + (uint64_t)((double)i * interval);
            if (!wait_until(p, t.intended, &now))
                goto stopped;
            if ((double)(now - t.intended) > interval)
                late++;
        } else {
            t.intended = now = ll_stamp_now(clk); /* closed loop: "due" the moment it is made */
        }
        /* relaxed: the push's release below publishes it before the tick, so
         * whoever counts the tick as taken finds it counted as made. */
        atomic_store_explicit(&p->live.produced, i + 1, memory_order_relaxed);
        for (;;) {
            t.sent = now; /* the read that found it due (or ready): no second one */
            if (push_tick(p->h, &t))
                break;
            note_occupancy(p, c->capacity); /* full: the watermark is exact here */
            if (c->full_policy == LL_FULL_DROP) {
                dropped++;
                /* release: a monitor that reads this with acquire finds
                 * `produced` covering the dropped tick. */
                atomic_store_explicit(&p->live.dropped_full, dropped, memory_order_release);
                break;
            }
            waits++;
            ll_wait_once(c->pair.producer_wait, &spins);
            if (waits % POLL_WAITS == 0 && producer_poll(p))
                goto stopped;
            now = ll_stamp_now(clk);
        }
    }
stopped:
    p->stopped = i < c->ticks;
    /* A stop while tick i waited for room takes it back: it was never sent. */
    atomic_store_explicit(&p->live.produced, i, memory_order_relaxed); /* relaxed: ordered by `finished` */
    atomic_store_explicit(&p->live.final_watermark, p->wm_iv, memory_order_relaxed);
    p->produced = i;
    p->dropped_full = dropped;
    p->waits = waits;
    p->late = late;
    /* release: every push above happens before the consumer sees done. */
    atomic_store_explicit(p->done, 1, memory_order_release);
    /* release: the monitor's acquire of `finished` then reads final values. */
    atomic_store_explicit(&p->live.finished, 1, memory_order_release);
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

/* The consumer's loop, split by stage below.  Every helper is static inline
 * and always inlined into ll_pipeline__consumer_main, so the per-tick path
 * has no more calls than it had as one function; the state they share lives
 * in a local struct the compiler keeps in registers. */
struct consumer_loop {
    const ll_pipeline_cfg *c;
    const struct ll_stamp *clk;
    int stamps;    /* some stage has busy work: stamp each stage's end */
    int pop_stamp; /* stamp the pop (stage stamps, or held objects to release against it) */
    int intervals; /* per-interval histograms to record into */
    uint64_t hold; /* hold_ns in stamp units */
    size_t held_n, held_head;
    double ema, inv_prev_mid, checksum; /* inv_prev_mid: 1 / the previous mid, 0 before the first */
    int inject;                         /* some consumer-side fault is asked for (pipeline_inject.h) */
    struct inject_state inj;
    uint64_t waits;
    unsigned spins;
};

/* The next tick: 1 when *t holds one, 0 after a failed pop (waited: try
 * again), -1 when the producer is done and the ring is empty. */
static inline __attribute__((always_inline)) int next_tick(struct consumer *k, struct consumer_loop *L, ll_tick *t)
{
    if (pop_tick(k->h, t))
        return 1;
    /* acquire: pairs with the producer's release of done, so a pop after
     * seeing it finds every tick that was ever pushed. */
    if (!atomic_load_explicit(k->done, memory_order_acquire)) {
        L->waits++;
        ll_wait_once(L->c->pair.consumer_wait, &L->spins);
        return 0;
    }
    return pop_tick(k->h, t) ? 1 : -1;
}

/* Objects whose hold time is up by `now` go back to the pool, oldest first. */
static inline __attribute__((always_inline)) void release_held(struct consumer *k, struct consumer_loop *L,
                                                               uint64_t now)
{
    while (L->held_n > 0 && k->held[L->held_head].release <= now) {
        ll_pool_free_inline(k->pool, k->held[L->held_head].f);
        L->held_head = (L->held_head + 1) % L->c->pool_blocks;
        L->held_n--;
    }
}

/* The four stages on feature object f (parse, features, risk, encode), each
 * followed by its busy work and its end stamp when L->stamps; returns the
 * tick's `done` stamp (the only stamp without busy work). */
static inline __attribute__((always_inline)) uint64_t run_stages(struct consumer *k, struct consumer_loop *L,
                                                                 ll_features *f, const ll_tick *t, uint64_t *end)
{
    const ll_pipeline_cfg *c = L->c;
    /* parse */
    f->seq = t->seq;
    f->bid = t->bid;
    f->ask = t->ask;
    if (L->inject) /* the one branch the faults cost per tick; predicted, as it never changes */
        busy_ns(inject_consumer_ns(&c->inject, &L->inj, t->seq), k->ctl);
    if (L->stamps) {
        busy_ns(c->work_ns[0], k->ctl);
        end[0] = ll_stamp_after(L->clk);
    }
    /* features */
    f->mid = 0.5 * (t->bid + t->ask);
    f->spread = t->ask - t->bid;
    f->ret = L->inv_prev_mid != 0.0 ? f->mid * L->inv_prev_mid - 1.0 : 0.0; /* a multiply: the divide is later */
    L->ema = L->ema == 0.0 ? f->mid : L->ema + 0.05 * (f->mid - L->ema);
    f->ema = L->ema;
    if (L->stamps) {
        busy_ns(c->work_ns[1], k->ctl);
        end[1] = ll_stamp_after(L->clk);
    }
    /* risk: a position-limit style check on the features */
    L->checksum += fabs(f->ret) < 0.1 ? f->mid : 0.0;
    if (L->stamps) {
        busy_ns(c->work_ns[2], k->ctl);
        end[2] = ll_stamp_after(L->clk);
    }
    /* encode */
    f->order_id = t->seq * 2654435761u;
    if (L->stamps)
        busy_ns(c->work_ns[3], k->ctl);
    return ll_stamp_after(L->clk);
}

/* After the tick's last stamp: its latencies into the histograms and its
 * sample kept, then the count the monitor reads. */
static inline __attribute__((always_inline)) void record_tick(struct consumer *k, struct consumer_loop *L,
                                                              const ll_tick *t, uint64_t popped, const uint64_t *end)
{
    const struct ll_stamp *clk = L->clk;
    const uint64_t done = end[3];
    if (k->lat_intended)
        ll_hist_record_n_inline(k->lat_intended, ll_stamp_span_ns(clk, done - t->intended), 1);
    if (k->lat_sent)
        ll_hist_record_n_inline(k->lat_sent, ll_stamp_span_ns(clk, done - t->sent), 1);
    if (L->intervals)
        ll_hist_record_n_inline(k->iv_cur, ll_stamp_span_ns(clk, done - t->intended), 1);
    ll_pipeline_sample s;
    s.seq = t->seq;
    s.intended_ns = ll_stamp_ns(clk, t->intended);
    s.sent_ns = ll_stamp_ns(clk, t->sent);
    s.popped_ns = ll_stamp_ns(clk, popped);
    for (int i = 0; i < LL_PIPELINE_STAGES; i++)
        s.stage_end_ns[i] = ll_stamp_ns(clk, end[i]);
    keep_sample(k, &s);
    k->consumed++;
    /* release: as dropped_pool's (the monitor's invariant). */
    atomic_store_explicit(&k->live.consumed, k->consumed, memory_order_release);
    k->t_end = done;
}

void *ll_pipeline__consumer_main(void *arg)
{
    struct consumer *k = arg;
    const ll_pipeline_cfg *c = k->cfg;
    k->pinned = ll_pin_if(c->pair.consumer_cpu);
    if (!ll_duo_arrive(k->duo))
        return NULL;
    struct consumer_loop L = {.c = c,
                              .clk = k->clk,
                              .intervals = k->iv[0] != NULL,
                              .inject = inject_consumer_on(&c->inject),
                              .inj = {.rng = 0x51077ull}};
    for (int i = 0; i < LL_PIPELINE_STAGES; i++)
        L.stamps |= c->work_ns[i] != 0;
    L.pop_stamp = L.stamps || c->hold_ns; /* held objects are released against the pop's time */
    L.hold = (uint64_t)ll_stamp_units(L.clk, (double)c->hold_ns);
    uint64_t end[LL_PIPELINE_STAGES], popped = 0;
    ll_tick t;
    for (;;) {
        if (L.intervals)
            consumer_poll(k);
        int got = next_tick(k, &L, &t);
        if (got < 0)
            break;
        if (got == 0)
            continue;
        L.spins = 0;
        /* With stage stamps (or held objects to release), one stamp at the
         * pop; without, the only stamp is `done`: a pop stamp would be a
         * clock read on the measured path that no figure needs. */
        if (L.pop_stamp)
            popped = ll_stamp_after(L.clk);
        release_held(k, &L, popped);
        ll_features *f = ll_pool_alloc_inline(k->pool);
        if (f == NULL) {
            k->dropped_pool++; /* counted, never silent */
            /* release: a monitor reading this with acquire, then the
             * producer's counters, finds the tick counted as made. */
            atomic_store_explicit(&k->live.dropped_pool, k->dropped_pool, memory_order_release);
            continue;
        }
        uint64_t done = run_stages(k, &L, f, &t, end);
        /* Everything below is bookkeeping after the tick's last stamp: the
         * next tick's divisor too (a divide takes ~15 cycles; here nobody
         * waits for it). */
        L.inv_prev_mid = 1.0 / f->mid;
        if (!L.stamps) {
            end[0] = end[1] = end[2] = done;
            if (!L.pop_stamp)
                popped = done;
        }
        end[3] = done;
        if (c->hold_ns == 0) {
            ll_pool_free_inline(k->pool, f);
        } else { /* in use until done + hold; the ring cannot overflow: it has a slot per block */
            k->held[(L.held_head + L.held_n++) % c->pool_blocks] = (struct held){f, done + L.hold};
        }
        record_tick(k, &L, &t, popped, end);
    }
    for (size_t i = 0; i < L.held_n; i++)
        ll_pool_free_inline(k->pool, k->held[(L.held_head + i) % c->pool_blocks].f);
    k->waits = L.waits;
    k->checksum = L.checksum;
    /* release: every record above happens before the monitor's acquire of it. */
    atomic_store_explicit(&k->live.finished, 1, memory_order_release);
    return NULL;
}
