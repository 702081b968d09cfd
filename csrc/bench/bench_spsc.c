/* bench_spsc.c - the SPSC ring between two C threads: throughput, round
 * trip, and core-to-core latency (see bench_spsc.h).  Each loop is set up
 * (memory allocated, threads started) before its clock starts, so what is
 * timed is only the operation under study. */
#define _GNU_SOURCE
#include "bench_spsc.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hist_inline.h"
#include "ll_arch.h"
#include "ll_util.h"
#include "spsc_inline.h"
#include "stop.h"

/* The stop flag (stop.h) is polled every POLL_ITEMS records or round trips
 * and every POLL_WAITS failed attempts of a wait: a stopped side leaves at
 * once, and its partner, then waiting for it, leaves at its next poll.  What
 * was moved before the stop is what the results count. */
enum { POLL_ITEMS = 4096, POLL_WAITS = 64 };
#define LL_STOP_POLL(count, every) ((count) % (every) == 0 && ll_stop_requested())

/* One record through the inlined hot path (api = 0) or the exported API
 * (api = 1: ll_spsc_try_push_u64 / try_pop_u64, a call into spsc.c, what a
 * user of the library pays).  Always
 * inlined with a constant api, so each loop below exists twice, without a
 * per-record branch on it. */
static inline __attribute__((always_inline)) bool push_item(ll_spsc *q, uint64_t v, int api)
{
    return api ? ll_spsc_try_push_u64(q, v) : ll_spsc_push_u64_inline(q, v);
}

static inline __attribute__((always_inline)) bool pop_item(ll_spsc *q, uint64_t *v, int api)
{
    return api ? ll_spsc_try_pop_u64(q, v) : ll_spsc_pop_u64_inline(q, v);
}

/* ---- SPSC throughput --------------------------------------------------------- */

struct spsc_side {
    ll_spsc *q;    /* throughput: the ring; rtt: the ring this side pushes to */
    ll_spsc *back; /* rtt: the ring this side pops from */
    const ll_spsc_bench_cfg *cfg;
    struct ll_duo *duo;
    uint64_t *buf; /* batch buffer (batch records), allocated by the caller */
    uint64_t waits;
    uint64_t errors;
    uint64_t moved; /* records received (throughput) or round trips done (rtt) */
    int stopped;
    uint64_t t_end;
    int pinned;
    ll_hist *rtt;
    uint64_t rtt_total_ns;
};

/* The per-record producer: 1..items in order; false when stopped.
 *
 * With cfg->refill > 1, a producer that finds the ring full waits until that
 * many slots are free before it pushes again.  Without, when the consumer is
 * the slower side the ring stays full and the producer refills each slot the
 * moment it is freed, in the cache line the consumer is still reading: the
 * two cores take that line from each other record by record.  Waiting for a
 * stretch of free slots keeps the producer that many records behind the
 * consumer, in lines the consumer has finished with.  It delays no record:
 * while the ring is full, nothing the producer pushes could be read sooner.
 * The free count comes from ll_spsc_size (a read of the consumer's cursor
 * per poll), which any user of the API can call. */
static inline __attribute__((always_inline)) bool tp_push_items(struct spsc_side *s, uint64_t *waits_out, int api)
{
    const ll_spsc_bench_cfg *c = s->cfg;
    const bool refill = c->refill > 1;
    const size_t room = c->capacity - c->refill; /* with refill: push again once size <= room */
    uint64_t waits = 0;
    bool ok = true;
    for (uint64_t i = 1; i <= c->items && ok; i++) {
        unsigned spins = 0;
        if (LL_STOP_POLL(i, POLL_ITEMS)) {
            ok = false;
            break;
        }
        while (!push_item(s->q, i, api)) {
            bool more = true; /* one wait after the failed push, then more while refilling */
            while (more) {
                waits++;
                ll_wait_once(c->wait, &spins);
                if (LL_STOP_POLL(waits, POLL_WAITS)) {
                    ok = false;
                    goto end;
                }
                more = refill && ll_spsc_size(s->q) > room;
            }
        }
    }
end:
    *waits_out = waits;
    return ok;
}

/* The per-record consumer: checks each record arrives once, in order;
 * returns the next expected value; *stopped set when stopped. */
static inline __attribute__((always_inline)) uint64_t tp_pop_items(struct spsc_side *s, uint64_t *waits_out,
                                                                   uint64_t *errors_out, int api)
{
    const ll_spsc_bench_cfg *c = s->cfg;
    uint64_t waits = 0, errors = 0, expect = 1;
    for (uint64_t i = 1; i <= c->items; i++) {
        uint64_t v;
        unsigned spins = 0;
        while (!pop_item(s->q, &v, api)) {
            waits++;
            ll_wait_once(c->wait, &spins);
            if (LL_STOP_POLL(waits, POLL_WAITS)) {
                s->stopped = 1;
                goto end;
            }
        }
        errors += v != i;
        expect = i + 1;
    }
end:
    *waits_out = waits;
    *errors_out = errors;
    return expect;
}

static void *tp_producer(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->producer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0;
    unsigned spins = 0;
    if (c->batch == 0) {
        if (!(c->api ? tp_push_items(s, &waits, 1) : tp_push_items(s, &waits, 0)))
            goto stopped;
    } else {
        uint64_t next = 1;
        while (next <= c->items) {
            size_t n = c->items - next + 1 < c->batch ? (size_t)(c->items - next + 1) : c->batch;
            for (size_t k = 0; k < n; k++)
                s->buf[k] = next + k;
            size_t done = 0;
            spins = 0;
            if (ll_stop_requested()) /* once per batch */
                goto stopped;
            while (done < n) {
                size_t m = ll_spsc_push_many_inline(s->q, s->buf + done, n - done);
                if (m == 0) {
                    waits++;
                    ll_wait_once(c->wait, &spins);
                    if (LL_STOP_POLL(waits, POLL_WAITS))
                        goto stopped;
                }
                done += m;
            }
            next += n;
        }
    }
    s->waits = waits;
    return NULL;
stopped:
    s->stopped = 1;
    s->waits = waits;
    return NULL;
}

static void *tp_consumer(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->consumer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0, errors = 0, expect = 1;
    unsigned spins = 0;
    if (c->batch == 0) {
        expect = c->api ? tp_pop_items(s, &waits, &errors, 1) : tp_pop_items(s, &waits, &errors, 0);
    } else {
        while (expect <= c->items) {
            size_t m = ll_spsc_pop_many_inline(s->q, s->buf, c->batch);
            if (m == 0) {
                waits++;
                ll_wait_once(c->wait, &spins);
                if (LL_STOP_POLL(waits, POLL_WAITS)) {
                    s->stopped = 1;
                    break;
                }
                continue;
            }
            spins = 0;
            for (size_t k = 0; k < m; k++)
                errors += s->buf[k] != expect + k;
            expect += m;
        }
    }
    s->moved = expect - 1;
    s->t_end = ll_now_ns();
    s->waits = waits;
    s->errors = errors;
    return NULL;
}

static int check_spsc_cfg(const ll_spsc_bench_cfg *cfg)
{
    if (!cfg || cfg->items == 0 || cfg->capacity < 2 || (cfg->capacity & (cfg->capacity - 1)) ||
        cfg->refill > cfg->capacity || !ll_wait_bench_ok(cfg->wait))
        return LL_EINVAL;
    return LL_OK;
}

int ll_bench_spsc_throughput(const ll_spsc_bench_cfg *cfg, ll_spsc_bench_result *out)
{
    int rc = check_spsc_cfg(cfg);
    if (rc != LL_OK || !out)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    ll_spsc *q = ll_spsc_create(cfg->capacity, sizeof(uint64_t), cfg->flags);
    struct ll_duo duo;
    memset(&duo, 0, sizeof duo);
    struct spsc_side prod, cons;
    memset(&prod, 0, sizeof prod);
    memset(&cons, 0, sizeof cons);
    prod.q = cons.q = q;
    prod.cfg = cons.cfg = cfg;
    prod.duo = cons.duo = &duo;
    if (cfg->batch) {
        prod.buf = malloc(cfg->batch * sizeof(uint64_t));
        cons.buf = malloc(cfg->batch * sizeof(uint64_t));
    }
    if (!q || (cfg->batch && (!prod.buf || !cons.buf))) {
        rc = LL_ENOMEM;
    } else {
        rc = ll_run_pair(tp_producer, &prod, tp_consumer, &cons, &duo);
    }
    if (rc == LL_OK) {
        out->seconds = (double)(cons.t_end - duo.t_start) / 1e9;
        out->items_per_s = out->seconds > 0 ? (double)cons.moved / out->seconds : 0.0;
        out->errors = cons.errors;
        out->full_waits = prod.waits;
        out->empty_waits = cons.waits;
        out->producer_pinned = prod.pinned;
        out->consumer_pinned = cons.pinned;
        if (prod.stopped || cons.stopped)
            rc = LL_STOPPED;
    }
    free(prod.buf);
    free(cons.buf);
    ll_spsc_destroy(q);
    return rc;
}

/* ---- SPSC round trip ------------------------------------------------------- */

static void *rtt_pinger(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->producer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    double tpn = ll_tsc_ticks_per_ns();
    uint64_t waits = 0, errors = 0, i;
    uint64_t t0 = ll_now_ns();
    for (i = 1; i <= c->items; i++) {
        if (LL_STOP_POLL(i, POLL_ITEMS))
            break;
        uint64_t a = tpn > 0.0 ? ll_tsc_now() : ll_now_ns();
        unsigned spins = 0;
        while (!push_item(s->q, i, c->api)) {
            waits++;
            ll_wait_once(c->wait, &spins);
            if (LL_STOP_POLL(waits, POLL_WAITS))
                goto end;
        }
        uint64_t v;
        spins = 0;
        while (!pop_item(s->back, &v, c->api)) {
            waits++;
            ll_wait_once(c->wait, &spins);
            if (LL_STOP_POLL(waits, POLL_WAITS))
                goto end;
        }
        uint64_t b = tpn > 0.0 ? ll_tsc_now_ordered() : ll_now_ns();
        errors += v != i;
        if (s->rtt)
            ll_hist_record_n_inline(s->rtt, tpn > 0.0 ? (uint64_t)((double)(b - a) / tpn) : b - a, 1);
    }
end:
    s->stopped = i <= c->items; /* left the loop early: a stop */
    s->moved = i - 1;
    s->rtt_total_ns = ll_now_ns() - t0;
    s->waits = waits;
    s->errors = errors;
    return NULL;
}

static void *rtt_ponger(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->consumer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0;
    for (uint64_t i = 1; i <= c->items; i++) {
        uint64_t v;
        unsigned spins = 0;
        while (!pop_item(s->back, &v, c->api)) {
            waits++;
            ll_wait_once(c->wait, &spins);
            if (LL_STOP_POLL(waits, POLL_WAITS)) {
                s->stopped = 1;
                goto end;
            }
        }
        spins = 0;
        while (!push_item(s->q, v, c->api)) {
            waits++;
            ll_wait_once(c->wait, &spins);
            if (LL_STOP_POLL(waits, POLL_WAITS)) {
                s->stopped = 1;
                goto end;
            }
        }
    }
end:
    s->waits = waits;
    return NULL;
}

int ll_bench_spsc_rtt(const ll_spsc_bench_cfg *cfg, ll_hist *rtt_ns, ll_spsc_bench_result *out)
{
    int rc = check_spsc_cfg(cfg);
    if (rc != LL_OK || !out)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    ll_spsc *there = ll_spsc_create(cfg->capacity, sizeof(uint64_t), cfg->flags);
    ll_spsc *back = ll_spsc_create(cfg->capacity, sizeof(uint64_t), cfg->flags);
    struct ll_duo duo;
    memset(&duo, 0, sizeof duo);
    struct spsc_side ping, pong;
    memset(&ping, 0, sizeof ping);
    memset(&pong, 0, sizeof pong);
    ping.q = there;
    ping.back = back;
    pong.q = back;
    pong.back = there;
    ping.cfg = pong.cfg = cfg;
    ping.duo = pong.duo = &duo;
    ping.rtt = rtt_ns;
    if (!there || !back)
        rc = LL_ENOMEM;
    else
        rc = ll_run_pair(rtt_pinger, &ping, rtt_ponger, &pong, &duo);
    if (rc == LL_OK) {
        out->seconds = (double)ping.rtt_total_ns / 1e9;
        out->items_per_s = out->seconds > 0 ? (double)ping.moved / out->seconds : 0.0;
        out->mean_rtt_ns = ping.moved ? (double)ping.rtt_total_ns / (double)ping.moved : 0.0;
        out->errors = ping.errors;
        out->full_waits = ping.waits;
        out->empty_waits = pong.waits;
        out->producer_pinned = ping.pinned;
        out->consumer_pinned = pong.pinned;
        if (ping.stopped || pong.stopped)
            rc = LL_STOPPED;
    }
    ll_spsc_destroy(there);
    ll_spsc_destroy(back);
    return rc;
}

/* ---- core to core -------------------------------------------------------- */

struct c2c {
    /* The bounced line: nothing else lives on it. */
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t flag;
    alignas(LL_FALSE_SHARING_RANGE) uint64_t round_trips;
    int cpu_a, cpu_b, wait;
    struct ll_duo duo;
    uint64_t done; /* round trips completed (fewer than asked after a stop) */
    ll_hist *rt;   /* each round trip, in counter ticks (ns without a TSC) */
    bool tsc;      /* stamps from the timestamp counter */
};

static void *c2c_a(void *arg)
{
    struct c2c *c = arg;
    ll_pin_if(c->cpu_a);
    if (!ll_duo_arrive(&c->duo))
        return NULL;
    unsigned spins = 0;
    uint64_t i;
    /* Each round trip is the time between two consecutive stamps, one taken
     * as each answer is seen: one clock read per round trip, off the line's
     * critical path, and a preemption spoils one round trip, not the mean. */
    uint64_t prev = c->tsc ? ll_tsc_now() : ll_now_ns();
    for (i = 0; i < c->round_trips; i++) {
        if (LL_STOP_POLL(i + 1, POLL_ITEMS))
            break;
        /* release/acquire: a plain hand-off; the order does not change the
         * cost on x86 and keeps the hand-off correct everywhere. */
        atomic_store_explicit(&c->flag, 2 * i + 1, memory_order_release);
        for (unsigned polls = 1; atomic_load_explicit(&c->flag, memory_order_acquire) != 2 * i + 2; polls++) {
            ll_wait_once(c->wait, &spins);
            if (LL_STOP_POLL(polls, POLL_WAITS))
                goto end;
        }
        uint64_t now = c->tsc ? ll_tsc_now() : ll_now_ns();
        ll_hist_record_n_inline(c->rt, now - prev, 1);
        prev = now;
    }
end:
    c->done = i;
    return NULL;
}

static void *c2c_b(void *arg)
{
    struct c2c *c = arg;
    ll_pin_if(c->cpu_b);
    if (!ll_duo_arrive(&c->duo))
        return NULL;
    unsigned spins = 0;
    for (uint64_t i = 0; i < c->round_trips; i++) {
        for (unsigned polls = 1; atomic_load_explicit(&c->flag, memory_order_acquire) != 2 * i + 1; polls++) {
            ll_wait_once(c->wait, &spins);
            if (LL_STOP_POLL(polls, POLL_WAITS))
                return NULL;
        }
        atomic_store_explicit(&c->flag, 2 * i + 2, memory_order_release); /* answer */
    }
    return NULL;
}

double ll_bench_c2c(uint64_t round_trips, int cpu_a, int cpu_b, int wait)
{
    if (round_trips == 0 || !ll_wait_bench_ok(wait))
        return LL_EINVAL;
    struct c2c *c = ll_alloc_lines(sizeof *c);
    if (!c)
        return LL_ENOMEM;
    memset(c, 0, sizeof *c);
    atomic_init(&c->flag, 0);
    c->round_trips = round_trips;
    c->cpu_a = cpu_a;
    c->cpu_b = cpu_b;
    c->wait = wait;
    double tpn = ll_tsc_ticks_per_ns();
    c->tsc = tpn > 0.0;
    c->rt = ll_hist_create(1, 1000000000000ULL, 3); /* up to 1e12 ticks, 0.1% steps */
    if (!c->rt) {
        free(c);
        return LL_ENOMEM;
    }
    int rc = ll_run_pair(c2c_a, c, c2c_b, c, &c->duo);
    /* Half the median round trip, in ns; after a stop, over the round trips
     * done (0 when none was). */
    double med = (double)ll_hist_value_at_percentile(c->rt, 50.0);
    double r = rc != LL_OK ? rc : c->done ? med / (c->tsc ? tpn : 1.0) / 2.0 : 0.0;
    ll_hist_destroy(c->rt);
    free(c);
    return r;
}

/* ---- one thread: what a record costs on each path -------------------------- */

int ll_bench_spsc_op(uint64_t items, int api, double *ns_per_record, uint64_t *errors)
{
    if (items == 0 || !ns_per_record || !errors)
        return LL_EINVAL;
    /* Bursts of BURST pushes then BURST pops: the cursors move round the
     * ring and each side refreshes its cached copy of the other's now and
     * then, as between two threads, but no line ever leaves this core, so
     * what is timed is the instructions of the path, call or no call. */
    enum { CAPACITY = 1024, BURST = 64 };
    ll_spsc *q = ll_spsc_create(CAPACITY, sizeof(uint64_t), 0);
    if (!q)
        return LL_ENOMEM;
    uint64_t bad = 0, done = 0, v = 0;
    uint64_t t0 = ll_now_ns();
    while (done < items && !(done % POLL_ITEMS < BURST && ll_stop_requested())) {
        uint64_t n = items - done < BURST ? items - done : BURST;
        if (api) {
            for (uint64_t i = 0; i < n; i++)
                bad += !push_item(q, done + i, 1);
            for (uint64_t i = 0; i < n; i++)
                bad += !pop_item(q, &v, 1) || v != done + i;
        } else {
            for (uint64_t i = 0; i < n; i++)
                bad += !push_item(q, done + i, 0);
            for (uint64_t i = 0; i < n; i++)
                bad += !pop_item(q, &v, 0) || v != done + i;
        }
        done += n;
    }
    uint64_t t1 = ll_now_ns();
    ll_spsc_destroy(q);
    *ns_per_record = done ? (double)(t1 - t0) / (double)done : 0.0;
    *errors = bad;
    return LL_OK;
}
