/* bench_rtt.c - the SPSC ring's round trip between two C threads, and the
 * floor under it: one cache line bounced from core to core (see
 * bench_spsc.h).  Each loop is set up before its clock starts. */
#define _GNU_SOURCE
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench_spsc.h"
#include "bench_spsc_inline.h"
#include "clock.h"
#include "hist_inline.h"
#include "ll_arch.h"
#include "ll_util.h"
#include "stop.h"

/* ---- SPSC round trip ------------------------------------------------------- */

static void *rtt_pinger(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->pair.producer_cpu);
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
        while (!ll_bench_push_item(s->q, i, c->api)) {
            waits++;
            ll_wait_once(c->pair.producer_wait, &spins);
            if (LL_STOP_POLL(waits, POLL_WAITS))
                goto end;
        }
        uint64_t v;
        spins = 0;
        while (!ll_bench_pop_item(s->back, &v, c->api)) {
            waits++;
            ll_wait_once(c->pair.producer_wait, &spins);
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
    s->pinned = ll_pin_if(c->pair.consumer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0;
    for (uint64_t i = 1; i <= c->items; i++) {
        uint64_t v;
        unsigned spins = 0;
        while (!ll_bench_pop_item(s->back, &v, c->api)) {
            waits++;
            ll_wait_once(c->pair.consumer_wait, &spins);
            if (LL_STOP_POLL(waits, POLL_WAITS)) {
                s->stopped = 1;
                goto end;
            }
        }
        spins = 0;
        while (!ll_bench_push_item(s->q, v, c->api)) {
            waits++;
            ll_wait_once(c->pair.consumer_wait, &spins);
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
    if (!ll_bench_spsc_cfg_ok(cfg) || !out)
        return LL_EINVAL;
    int rc;
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
