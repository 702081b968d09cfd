/* pipeline.c - producer -> SPSC ring -> consumer, with pooled feature
 * objects and latency stats, all in C threads (see pipeline.h).  Setup
 * (ring, pool, window, sample storage) happens before the start gate; the
 * only allocation after it is the growing sample array, on purpose. */
#define _GNU_SOURCE
#include "pipeline.h"

#include <math.h>
#include <pthread.h>
#include <stdalign.h>
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

/* What the monitor writes and both threads read at their poll points: a
 * line of its own, written at most once per interval. */
struct control {
    alignas(LL_FALSE_SHARING_RANGE) atomic_int stop; /* 1: end soon (ll_pipeline_stop) */
    _Atomic uint64_t epoch;                          /* the interval the threads should record into */
};

/* The producer's monitor-visible counters: written by the producer alone,
 * on its own lines (a monitor's read costs the producer one line transfer). */
struct producer_live {
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t produced;
    _Atomic uint64_t dropped_full;
    _Atomic uint64_t watermark;       /* since the start */
    _Atomic uint64_t iv_watermark;    /* the interval closed when it switched to epoch `ack` */
    _Atomic uint64_t final_watermark; /* its last interval's, stored as it ends */
    _Atomic uint64_t ack;             /* the last epoch it switched to */
    atomic_int finished;              /* 1: it writes nothing more */
};

/* The consumer's, likewise written by the consumer alone. */
struct consumer_live {
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t consumed;
    _Atomic uint64_t dropped_pool;
    _Atomic uint64_t ack;
    atomic_int finished;
};

/* One flag on a line of its own: the consumer reads it on every failed pop,
 * so it must not share a line the producer writes per tick. */
struct done_flag {
    alignas(LL_FALSE_SHARING_RANGE) atomic_int done;
};

struct producer {
    struct producer_live live; /* first: its own lines */
    const ll_pipeline_cfg *cfg;
    const struct ll_stamp *clk;
    struct handoff *h;
    struct ll_duo *duo;
    atomic_int *done;
    struct control *ctl;
    struct consumer_live *peer; /* read every POLL_TICKS ticks, for the occupancy */
    uint64_t produced, dropped_full, waits, late;
    uint64_t epoch, wm_iv, wm_run; /* its interval, the interval's and the run's watermark */
    int pinned;
    int stopped; /* ended early on a stop request (stop.h or ll_pipeline_stop) */
};

struct consumer {
    struct consumer_live live; /* first: its own lines */
    struct control *ctl;
    ll_hist *iv[2];  /* per-interval latency histograms (NULL: none); iv[epoch & 1] is recorded into */
    ll_hist *iv_cur; /* iv[epoch & 1] */
    uint64_t epoch;
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
/* The longest open-loop schedule (s), as lowlat.core.pipeline.MAX_SCHEDULE_S: see check_cfg. */
#define LL_PIPELINE_MAX_SCHEDULE_S (31.0 * 86400.0)

/* A stop asked for this run or for every long call (Ctrl-C, stop.h).
 * relaxed: the flag carries no data, only a request to end soon; what a
 * stopped thread leaves behind is ordered by the join that follows. */
static inline bool stop_asked(struct control *ctl)
{
    return ll_stop_requested() || atomic_load_explicit(&ctl->stop, memory_order_relaxed);
}

/* Busy work standing in for a stage's computation: spins on the clock.  It
 * ends early on a stop request, so a stopped run drains its ring quickly. */
static void busy_ns(uint64_t ns, struct control *ctl)
{
    if (ns == 0)
        return;
    uint64_t end = ll_now_ns() + ns;
    for (unsigned n = 1; ll_now_ns() < end; n++) {
        if (n % POLL_BUSY == 0 && stop_asked(ctl))
            return;
        ll_compiler_barrier();
    }
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
        if (i % POLL_TICKS == 0) {
            if (producer_poll(p))
                break;
            sample_occupancy(p, i - dropped); /* ticks 0..i-1 were pushed or dropped */
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
            /* Defined: check_cfg bounds ticks / rate to 31 days, so i * interval
             * is below 31 days x (clock units per ns: 10 at 10 GHz) ~ 2.7e16,
             * exact enough in a double and far below 2^64. */
            t.intended = start + (uint64_t)((double)i * interval);
            unsigned polls = 0;
            while ((now = ll_stamp_now(clk)) < t.intended) {
                ll_wait_once(c->producer_wait, &spins);
                if (++polls % POLL_WAITS == 0 && producer_poll(p))
                    goto stopped;
            }
            if ((double)(now - t.intended) > interval)
                late++;
            spins = 0;
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
            ll_wait_once(c->producer_wait, &spins);
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
    const int intervals = k->iv[0] != NULL;
    for (;;) {
        if (intervals)
            consumer_poll(k);
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
            /* release: a monitor reading this with acquire, then the
             * producer's counters, finds the tick counted as made. */
            atomic_store_explicit(&k->live.dropped_pool, k->dropped_pool, memory_order_release);
            continue;
        }
        /* parse */
        f->seq = t.seq;
        f->bid = t.bid;
        f->ask = t.ask;
        if (stamps) {
            busy_ns(c->work_ns[0], k->ctl);
            end[0] = ll_stamp_after(clk);
        }
        /* features */
        f->mid = 0.5 * (t.bid + t.ask);
        f->spread = t.ask - t.bid;
        f->ret = inv_prev_mid != 0.0 ? f->mid * inv_prev_mid - 1.0 : 0.0; /* a multiply: the divide is below */
        ema = ema == 0.0 ? f->mid : ema + 0.05 * (f->mid - ema);
        f->ema = ema;
        if (stamps) {
            busy_ns(c->work_ns[1], k->ctl);
            end[1] = ll_stamp_after(clk);
        }
        /* risk: a position-limit style check on the features */
        checksum += fabs(f->ret) < 0.1 ? f->mid : 0.0;
        if (stamps) {
            busy_ns(c->work_ns[2], k->ctl);
            end[2] = ll_stamp_after(clk);
        }
        /* encode */
        f->order_id = t.seq * 2654435761u;
        if (stamps)
            busy_ns(c->work_ns[3], k->ctl);
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
        if (intervals)
            ll_hist_record_n_inline(k->iv_cur, ll_stamp_span_ns(clk, done - t.intended), 1);
        ll_pipeline_sample s;
        s.seq = t.seq;
        s.intended_ns = ll_stamp_ns(clk, t.intended);
        s.sent_ns = ll_stamp_ns(clk, t.sent);
        s.popped_ns = ll_stamp_ns(clk, popped);
        for (int i = 0; i < LL_PIPELINE_STAGES; i++)
            s.stage_end_ns[i] = ll_stamp_ns(clk, end[i]);
        keep_sample(k, &s);
        k->consumed++;
        /* release: as dropped_pool's (the monitor's invariant). */
        atomic_store_explicit(&k->live.consumed, k->consumed, memory_order_release);
        k->t_end = done;
    }
    for (size_t i = 0; i < held_n; i++)
        ll_pool_free_inline(k->pool, k->held[(held_head + i) % c->pool_blocks].f);
    k->waits = waits;
    k->checksum = checksum;
    /* release: every record above happens before the monitor's acquire of it. */
    atomic_store_explicit(&k->live.finished, 1, memory_order_release);
    return NULL;
}

static int valid_wait(int w) { return w >= LL_WAIT_SPIN && w <= LL_WAIT_BACKOFF; }

static int valid_cpu(int cpu) { return cpu >= -1 && cpu < ll_cpu_count(); }

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

/* A run: everything its threads touch, in one allocation that starts on a
 * line pair (ll_alloc_lines), so each aligned block below has its lines. */
struct ll_pipeline {
    struct producer p;
    struct consumer k;
    struct control ctl;
    struct done_flag done;
    struct handoff h;
    ll_pipeline_cfg cfg; /* the caller's, copied */
    struct ll_stamp clk;
    struct ll_duo duo;
    ll_pool *pool;
    struct held *held;
    ll_hist *iv[2];
    ll_pipeline_sample *samples; /* the caller's */
    pthread_t tp, tk;
    int started, joined, rc; /* rc: join's status */
    uint64_t epoch;          /* the monitor's: the last interval it asked for */
    ll_pipeline_result result;
};

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
    if (pthread_create(&r->tp, NULL, producer_main, p) != 0) {
        release(r);
        if (status)
            *status = LL_ESYS;
        return NULL;
    }
    if (pthread_create(&r->tk, NULL, consumer_main, k) != 0) {
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
