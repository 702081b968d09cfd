/* bench_payload.c - a ring of 64-byte messages against a ring of 32-bit
 * indices into a pool of them (see bench_payload.h).  Both use the core's
 * ring (spsc_inline.h), one record per call, so the only difference is what
 * a slot holds.  Memory is allocated and threads started before the clock
 * starts; nothing is allocated on the hot path. */
#define _GNU_SOURCE
#include "bench_payload.h"

#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "clock.h"
#include "hist_inline.h"
#include "ll_arch.h"
#include "ll_util.h"
#include "spsc_inline.h"
#include "stop.h"

/* The stop flag (stop.h) is polled every POLL_ITEMS messages and every
 * POLL_WAITS failed attempts of a wait, as in bench_spsc.c. */
enum { POLL_ITEMS = 4096, POLL_WAITS = 64 };
#define LL_STOP_POLL(count, every) ((count) % (every) == 0 && ll_stop_requested())

/* The pool of the index ring holds 2 * capacity messages, used in a fixed
 * rotation (message i lives in pool[i & pool_mask]), so the hot path neither
 * allocates nor returns anything.  Why the producer may overwrite a pool entry
 * without asking: the consumer reads message j's entry before it pops message
 * j + 1 (it handles them in order).  The producer fills message i only after
 * its push of message i - 1 succeeded, which needed head >= i - capacity
 * (read with acquire, pairing with the consumer's release of head): by then
 * the consumer has finished reading every entry up to message i - capacity - 2,
 * and pool[i & pool_mask] last held message i - 2 * capacity, older still. */
struct payload {
    const ll_payload_cfg *cfg;
    ll_spsc *q;    /* producer -> consumer: ll_msg64 or uint32 records */
    ll_spsc *back; /* round trip: the answer (uint64), consumer -> producer */
    ll_msg64 *pool;
    uint64_t pool_mask;
    struct ll_duo duo;
};

struct side {
    struct payload *p;
    int wait; /* this side's, from cfg->pair */
    uint64_t waits;
    uint64_t errors;
    uint64_t moved;
    uint64_t sum;
    uint64_t t_end;
    uint64_t loop_ns;
    int pinned;
    int stopped;
    ll_hist *rtt;
};

static inline void fill(ll_msg64 *m, uint64_t i)
{
    m->seq = i;
    for (int k = 0; k < 6; k++)
        m->body[k] = i + (uint64_t)k;
    m->value = i;
}

/* Sends message i: filled in place in the pool and its index pushed, or
 * filled on the stack and copied into a slot.  Always inlined with a
 * constant kind, so each loop exists once per kind with its record size a
 * constant (the copy becomes a few moves).  False when stopped. */
static inline __attribute__((always_inline)) bool send(struct side *s, uint64_t i, int kind)
{
    struct payload *p = s->p;
    ll_msg64 local;
    uint32_t idx = (uint32_t)(i & p->pool_mask);
    if (kind == LL_PAYLOAD_INDEX)
        fill(&p->pool[idx], i); /* safe: see the comment on struct payload */
    else
        fill(&local, i);
    unsigned spins = 0;
    while (kind == LL_PAYLOAD_INDEX ? !ll_spsc__push1(p->q, &idx, sizeof idx)
                                    : !ll_spsc__push1(p->q, &local, sizeof local)) {
        s->waits++;
        ll_wait_once(s->wait, &spins);
        if (LL_STOP_POLL(s->waits, POLL_WAITS))
            return false;
    }
    return true;
}

/* Receives one message and reads its seq and value (through the index for
 * the index ring: a second line, written by the producer).  False when
 * stopped. */
static inline __attribute__((always_inline)) bool receive(struct side *s, uint64_t *seq, uint64_t *value, int kind)
{
    struct payload *p = s->p;
    unsigned spins = 0;
    if (kind == LL_PAYLOAD_INDEX) {
        uint32_t idx;
        while (!ll_spsc__pop1(p->q, &idx, sizeof idx)) {
            s->waits++;
            ll_wait_once(s->wait, &spins);
            if (LL_STOP_POLL(s->waits, POLL_WAITS))
                return false;
        }
        const ll_msg64 *m = &p->pool[idx & p->pool_mask];
        *seq = m->seq;
        *value = m->value;
    } else {
        ll_msg64 m;
        while (!ll_spsc__pop1(p->q, &m, sizeof m)) {
            s->waits++;
            ll_wait_once(s->wait, &spins);
            if (LL_STOP_POLL(s->waits, POLL_WAITS))
                return false;
        }
        *seq = m.seq;
        *value = m.value;
    }
    return true;
}

/* ---- throughput ------------------------------------------------------------ */

static inline __attribute__((always_inline)) void tp_produce(struct side *s, int kind)
{
    uint64_t n = s->p->cfg->items;
    for (uint64_t i = 1; i <= n; i++) {
        if (LL_STOP_POLL(i, POLL_ITEMS) || !send(s, i, kind)) {
            s->stopped = 1;
            return;
        }
        s->sum += i; /* the value written into message i */
        s->moved = i;
    }
}

static inline __attribute__((always_inline)) void tp_consume(struct side *s, int kind)
{
    uint64_t n = s->p->cfg->items, seq, value;
    for (uint64_t i = 1; i <= n; i++) {
        if (!receive(s, &seq, &value, kind)) {
            s->stopped = 1;
            return;
        }
        s->errors += seq != i;
        s->sum += value;
        s->moved = i;
    }
}

/* Each thread pins itself (when asked) and meets the other at the gate;
 * false when the run is abandoned. */
static bool side_start(struct side *s, int cpu)
{
    s->pinned = ll_pin_if(cpu);
    return ll_duo_arrive(&s->p->duo);
}

/* fn(s, kind) with kind a constant, so each loop is compiled once per kind. */
#define BY_KIND(s, fn)                             \
    do {                                           \
        if ((s)->p->cfg->kind == LL_PAYLOAD_INDEX) \
            fn((s), LL_PAYLOAD_INDEX);             \
        else                                       \
            fn((s), LL_PAYLOAD_STRUCT64);          \
    } while (0)

static void *tp_producer(void *arg)
{
    struct side *s = arg;
    if (side_start(s, s->p->cfg->pair.producer_cpu))
        BY_KIND(s, tp_produce);
    return NULL;
}

static void *tp_consumer(void *arg)
{
    struct side *s = arg;
    if (!side_start(s, s->p->cfg->pair.consumer_cpu))
        return NULL;
    BY_KIND(s, tp_consume);
    s->t_end = ll_now_ns();
    return NULL;
}

/* ---- round trip: one message there, its value back --------------------------- */

static inline __attribute__((always_inline)) void rt_ping(struct side *s, int kind)
{
    struct payload *p = s->p;
    double tpn = ll_tsc_ticks_per_ns();
    uint64_t n = p->cfg->items, t0 = ll_now_ns();
    for (uint64_t i = 1; i <= n; i++) {
        if (LL_STOP_POLL(i, POLL_ITEMS)) {
            s->stopped = 1;
            break;
        }
        uint64_t a = tpn > 0.0 ? ll_tsc_now() : ll_now_ns();
        if (!send(s, i, kind)) {
            s->stopped = 1;
            break;
        }
        s->sum += i;
        uint64_t v;
        unsigned spins = 0;
        while (!ll_spsc_pop_u64_inline(p->back, &v)) {
            s->waits++;
            ll_wait_once(s->wait, &spins);
            if (LL_STOP_POLL(s->waits, POLL_WAITS)) {
                s->stopped = 1;
                goto end;
            }
        }
        uint64_t b = tpn > 0.0 ? ll_tsc_now_ordered() : ll_now_ns();
        s->errors += v != i;
        s->moved = i;
        if (s->rtt)
            ll_hist_record_n_inline(s->rtt, tpn > 0.0 ? (uint64_t)((double)(b - a) / tpn) : b - a, 1);
    }
end:
    s->loop_ns = ll_now_ns() - t0;
}

static inline __attribute__((always_inline)) void rt_pong(struct side *s, int kind)
{
    struct payload *p = s->p;
    uint64_t n = p->cfg->items, seq, value;
    for (uint64_t i = 1; i <= n; i++) {
        if (!receive(s, &seq, &value, kind)) {
            s->stopped = 1;
            return;
        }
        s->errors += seq != i;
        s->sum += value;
        s->moved = i;
        unsigned spins = 0;
        while (!ll_spsc_push_u64_inline(p->back, value)) { /* never full: one answer in flight */
            ll_wait_once(s->wait, &spins);
            if (LL_STOP_POLL(++s->waits, POLL_WAITS)) {
                s->stopped = 1;
                return;
            }
        }
    }
}

static void *rt_pinger(void *arg)
{
    struct side *s = arg;
    if (side_start(s, s->p->cfg->pair.producer_cpu))
        BY_KIND(s, rt_ping);
    return NULL;
}

static void *rt_ponger(void *arg)
{
    struct side *s = arg;
    if (side_start(s, s->p->cfg->pair.consumer_cpu))
        BY_KIND(s, rt_pong);
    return NULL;
}

/* ---- the entry point ---------------------------------------------------------- */

static int check_cfg(const ll_payload_cfg *c)
{
    if (!c || c->items == 0 || c->capacity < 2 || c->capacity > ((size_t)1 << 30) ||
        (c->capacity & (c->capacity - 1)) || (c->kind != LL_PAYLOAD_STRUCT64 && c->kind != LL_PAYLOAD_INDEX) ||
        (c->round_trip != 0 && c->round_trip != 1) || !ll_pair_ok(&c->pair, 1))
        return LL_EINVAL;
    return LL_OK;
}

int ll_bench_payload(const ll_payload_cfg *cfg, ll_hist *rtt_ns, ll_payload_result *out)
{
    if (check_cfg(cfg) != LL_OK || !out)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    struct payload p;
    memset(&p, 0, sizeof p);
    p.cfg = cfg;
    int index = cfg->kind == LL_PAYLOAD_INDEX;
    p.q = ll_spsc_create(cfg->capacity, index ? sizeof(uint32_t) : sizeof(ll_msg64), 0);
    p.back = cfg->round_trip ? ll_spsc_create(2, sizeof(uint64_t), 0) : NULL;
    if (index) {
        p.pool_mask = 2 * (uint64_t)cfg->capacity - 1;
        p.pool = ll_alloc_lines(2 * cfg->capacity * sizeof(ll_msg64));
        if (p.pool)
            memset(p.pool, 0, 2 * cfg->capacity * sizeof(ll_msg64)); /* placed (and faulted in) before the clock */
    }
    struct side prod, cons;
    memset(&prod, 0, sizeof prod);
    memset(&cons, 0, sizeof cons);
    prod.p = cons.p = &p;
    prod.wait = cfg->pair.producer_wait;
    cons.wait = cfg->pair.consumer_wait;
    prod.rtt = rtt_ns;
    int rc;
    if (!p.q || (cfg->round_trip && !p.back) || (index && !p.pool))
        rc = LL_ENOMEM;
    else if (cfg->round_trip)
        rc = ll_run_pair(rt_pinger, &prod, rt_ponger, &cons, &p.duo);
    else
        rc = ll_run_pair(tp_producer, &prod, tp_consumer, &cons, &p.duo);
    if (rc == LL_OK) {
        out->seconds = (double)(cfg->round_trip ? prod.loop_ns : cons.t_end - p.duo.t_start) / 1e9;
        out->moved = cfg->round_trip ? prod.moved : cons.moved;
        out->items_per_s = out->seconds > 0 ? (double)out->moved / out->seconds : 0.0;
        out->sent_sum = prod.sum;
        out->received_sum = cons.sum;
        out->errors = prod.errors + cons.errors;
        out->full_waits = prod.waits;
        out->empty_waits = cons.waits;
        out->producer_pinned = prod.pinned;
        out->consumer_pinned = cons.pinned;
        out->ring_node = ll_numa_node_of(p.q->slots);
        out->pool_node = p.pool ? ll_numa_node_of(p.pool) : -1;
        if (prod.stopped || cons.stopped)
            rc = LL_STOPPED;
    }
    free(p.pool);
    ll_spsc_destroy(p.q);
    if (p.back)
        ll_spsc_destroy(p.back);
    return rc;
}
