/* bench_spsc.c - the SPSC ring between two C threads, throughput, and one
 * thread's cost per record (see bench_spsc.h; the round trip and the
 * core-to-core bounce are in bench_rtt.c).  Each loop is set up (memory
 * allocated, threads started) before its clock starts, so what is timed is
 * only the operation under study. */
#define _GNU_SOURCE
#include "bench_spsc.h"

#include <stdlib.h>
#include <string.h>

#include "bench_spsc_inline.h"
#include "clock.h"
#include "ll_util.h"
#include "spsc_inline.h"
#include "stop.h"

/* ---- SPSC throughput --------------------------------------------------------- */

/* The producer's wait after a failed push of record i; false when stopped.
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
 * per poll), which any user of the API can call.
 *
 * Out of line, the waits keep what only they need (the refill threshold,
 * the retry counter, the count of waits) out of the record loops, whose few
 * live values then stay in registers across the exported calls. */
__attribute__((noinline)) static bool tp_push_wait(struct spsc_side *s, uint64_t i, uint64_t *waits, int api)
{
    const ll_spsc_bench_cfg *c = s->cfg;
    const bool refill = c->refill > 1;
    const size_t room = c->capacity - c->refill; /* with refill: push again once size <= room */
    unsigned spins = 0;
    do {
        bool more = true; /* one wait after the failed push, then more while refilling */
        while (more) {
            ++*waits;
            ll_wait_once(c->pair.producer_wait, &spins);
            if (LL_STOP_POLL(*waits, POLL_WAITS))
                return false;
            more = refill && ll_spsc_size(s->q) > room;
        }
    } while (!ll_bench_push_item(s->q, i, api));
    return true;
}

/* The per-record producer: 1..items in order; false when stopped. */
static inline __attribute__((always_inline)) bool tp_push_items(struct spsc_side *s, uint64_t *waits_out, int api)
{
    ll_spsc *const q = s->q;
    const uint64_t items = s->cfg->items;
    uint64_t waits = 0;
    bool ok = true;
    for (uint64_t i = 1; i <= items; i++) {
        if (LL_STOP_POLL(i, POLL_ITEMS) || (!ll_bench_push_item(q, i, api) && !tp_push_wait(s, i, &waits, api))) {
            ok = false;
            break;
        }
    }
    *waits_out = waits;
    return ok;
}

/* The consumer's wait for record *v after an empty ring: false when stopped. */
__attribute__((noinline)) static bool tp_pop_wait(struct spsc_side *s, uint64_t *v, uint64_t *waits, int api)
{
    unsigned spins = 0;
    do {
        ++*waits;
        ll_wait_once(s->cfg->pair.consumer_wait, &spins);
        if (LL_STOP_POLL(*waits, POLL_WAITS))
            return false;
    } while (!ll_bench_pop_item(s->q, v, api));
    return true;
}

/* The per-record consumer: checks each record arrives once, in order;
 * returns the next expected value; s->stopped set when stopped. */
static inline __attribute__((always_inline)) uint64_t tp_pop_items(struct spsc_side *s, uint64_t *waits_out,
                                                                   uint64_t *errors_out, int api)
{
    ll_spsc *const q = s->q;
    const uint64_t items = s->cfg->items;
    uint64_t waits = 0, errors = 0, i = 1;
    for (; i <= items; i++) {
        uint64_t v;
        if (!ll_bench_pop_item(q, &v, api) && !tp_pop_wait(s, &v, &waits, api)) {
            s->stopped = 1;
            break;
        }
        errors += v != i;
    }
    *waits_out = waits;
    *errors_out = errors;
    return i;
}

/* One function per path, each loop compiled on its own: inlined into one
 * function, the four loops shared its register allocation, and one of them
 * kept its record counter on the stack. */
#define TP_PATH(api)                                                                                      \
    __attribute__((noinline)) static bool tp_push_##api(struct spsc_side *s, uint64_t *w)                 \
    {                                                                                                     \
        return tp_push_items(s, w, api);                                                                  \
    }                                                                                                     \
    __attribute__((noinline)) static uint64_t tp_pop_##api(struct spsc_side *s, uint64_t *w, uint64_t *e) \
    {                                                                                                     \
        return tp_pop_items(s, w, e, api);                                                                \
    }
TP_PATH(0)
TP_PATH(1)
TP_PATH(2)
TP_PATH(3)
#undef TP_PATH

static void *tp_producer(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->pair.producer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0;
    unsigned spins = 0;
    if (c->batch == 0) {
        bool done = c->api == 3   ? tp_push_3(s, &waits)
                    : c->api == 2 ? tp_push_2(s, &waits)
                    : c->api      ? tp_push_1(s, &waits)
                                  : tp_push_0(s, &waits);
        if (!done)
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
                    ll_wait_once(c->pair.producer_wait, &spins);
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
    s->pinned = ll_pin_if(c->pair.consumer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0, errors = 0, expect = 1;
    unsigned spins = 0;
    if (c->batch == 0) {
        expect = c->api == 3   ? tp_pop_3(s, &waits, &errors)
                 : c->api == 2 ? tp_pop_2(s, &waits, &errors)
                 : c->api      ? tp_pop_1(s, &waits, &errors)
                               : tp_pop_0(s, &waits, &errors);
    } else {
        while (expect <= c->items) {
            size_t m = ll_spsc_pop_many_inline(s->q, s->buf, c->batch);
            if (m == 0) {
                waits++;
                ll_wait_once(c->pair.consumer_wait, &spins);
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

int ll_bench_spsc_throughput(const ll_spsc_bench_cfg *cfg, ll_spsc_bench_result *out)
{
    if (!ll_bench_spsc_cfg_ok(cfg) || !out)
        return LL_EINVAL;
    int rc;
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

/* ---- one thread: what a record costs on each path -------------------------- */

int ll_bench_spsc_op(uint64_t items, int api, double *ns_per_record, uint64_t *errors)
{
    if (items == 0 || api < 0 || api > 3 || !ns_per_record || !errors)
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
        if (api == 3) {
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_push_item(q, done + i, 3);
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_pop_item(q, &v, 3) || v != done + i;
        } else if (api == 2) {
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_push_item(q, done + i, 2);
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_pop_item(q, &v, 2) || v != done + i;
        } else if (api) {
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_push_item(q, done + i, 1);
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_pop_item(q, &v, 1) || v != done + i;
        } else {
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_push_item(q, done + i, 0);
            for (uint64_t i = 0; i < n; i++)
                bad += !ll_bench_pop_item(q, &v, 0) || v != done + i;
        }
        done += n;
    }
    uint64_t t1 = ll_now_ns();
    ll_spsc_destroy(q);
    *ns_per_record = done ? (double)(t1 - t0) / (double)done : 0.0;
    *errors = bad;
    return LL_OK;
}
