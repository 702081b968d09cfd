/* bench_log.c - the hot path with and without logging (see bench_log.h). */
#define _GNU_SOURCE
#include "bench_log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hist_inline.h"
#include "ll_arch.h"
#include "ll_common.h"
#include "ll_stamp.h"
#include "ll_util.h"
#include "logring.h"
#include "stop.h"

enum { POLL_EVENTS = 64, POLL_WAITS = 64, WORK_ROUNDS = 8, LATE_NS = 10000 };

struct hot {
    const ll_log_bench_cfg *cfg;
    ll_hist *lat;
    ll_logring *log; /* ASYNC only */
    struct ll_stamp clk;
    uint64_t events, logged, written, failed, late, t_start, t_end;
    int pinned, stopped;
    /* Keeps the baseline's record alive: the compiler must build it as the
     * logging modes do. */
    volatile uint64_t sink;
};

static void *hot_main(void *arg)
{
    struct hot *h = arg;
    const ll_log_bench_cfg *c = h->cfg;
    const struct ll_stamp *clk = &h->clk;
    h->pinned = ll_pin_if(c->hot_cpu);
    ll_log_record rec;
    memset(&rec, 0, sizeof rec);
    memcpy(rec.text, "px update", sizeof "px update");
    const double interval = c->rate_per_s > 0 ? ll_stamp_units(clk, 1e9 / c->rate_per_s) : 0.0;
    const uint64_t late_units = (uint64_t)ll_stamp_units(clk, LATE_NS);
    uint64_t rng = 0x5EED5EEDull, logged = 0, written = 0, failed = 0, late = 0, i;
    h->t_start = ll_now_ns();
    const uint64_t start = ll_stamp_now(clk);
    for (i = 0; i < c->events; i++) {
        if (i % POLL_EVENTS == 0 && ll_stop_requested())
            break;
        if (interval > 0) {
            uint64_t due = start + (uint64_t)((double)i * interval);
            unsigned polls = 0;
            while (ll_stamp_now(clk) < due) { /* pacing: the hot thread owns its CPU */
                ll_cpu_relax();
                if (++polls % POLL_WAITS == 0 && ll_stop_requested())
                    goto end;
            }
        }
        const uint64_t t0 = ll_stamp_now(clk);
        if (interval > 0 && t0 - (start + (uint64_t)((double)i * interval)) > late_units)
            late++;
        /* The event's own work: a few rounds of arithmetic on its input. */
        uint64_t v = i;
        for (int k = 0; k < WORK_ROUNDS; k++)
            v ^= ll_rng_next(&rng) >> (k + 1);
        rec.seq = i;
        rec.stamp_ns = ll_stamp_ns(clk, t0);
        rec.value = (int64_t)(v >> 1);
        switch (c->mode) {
        case LL_LOG_SYNC:
            if (ll_log_write_sync(c->fd, &rec) == LL_OK)
                written++;
            else
                failed++;
            logged++;
            break;
        case LL_LOG_ASYNC:
            ll_log_try(h->log, &rec);
            logged++;
            break;
        default:
            h->sink = rec.seq ^ rec.stamp_ns ^ (uint64_t)rec.value;
            ll_compiler_barrier();
            break;
        }
        const uint64_t t1 = ll_stamp_after(clk);
        ll_hist_record_n_inline(h->lat, ll_stamp_span_ns(clk, t1 - t0), 1);
    }
end:
    h->t_end = ll_now_ns();
    h->stopped = i < c->events;
    h->events = i;
    h->logged = logged;
    h->written = written;
    h->failed = failed;
    h->late = late;
    return NULL;
}

int ll_bench_log(const ll_log_bench_cfg *cfg, ll_hist *lat, ll_log_bench_result *out)
{
    if (!cfg || !lat || !out || cfg->events == 0 || !(cfg->rate_per_s >= 0.0 && cfg->rate_per_s <= 1e8) ||
        cfg->mode < LL_LOG_NONE || cfg->mode > LL_LOG_ASYNC)
        return LL_EINVAL;
    if (cfg->mode != LL_LOG_NONE && !ll_log_fd_writable(cfg->fd))
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    struct hot h;
    memset(&h, 0, sizeof h);
    h.cfg = cfg;
    h.lat = lat;
    ll_stamp_init(&h.clk, 1);
    int rc;
    if (cfg->mode == LL_LOG_ASYNC) {
        ll_log_cfg lc = {cfg->capacity, cfg->fd, cfg->writer_cpu, cfg->idle_ns, cfg->writer_delay_ns};
        if ((rc = ll_logring_start(&lc, &h.log)) != LL_OK)
            return rc;
    }
    pthread_t t;
    rc = pthread_create(&t, NULL, hot_main, &h) == 0 ? LL_OK : LL_ESYS;
    if (rc == LL_OK)
        pthread_join(t, NULL);
    out->writer_pinned = 1;
    if (h.log) {
        ll_log_stats st;
        ll_logring_stop(h.log, &st); /* the writer drains the ring first */
        ll_logring_destroy(h.log);
        out->written = st.written;
        out->dropped = st.dropped;
        out->failed = st.failed;
        out->write_calls = st.write_calls;
        out->max_fill = st.max_fill;
        out->writer_pinned = st.writer_pinned;
    } else {
        out->written = h.written;
        out->failed = h.failed;
        out->write_calls = h.logged;
    }
    if (rc != LL_OK)
        return rc;
    out->events = h.events;
    out->logged = h.logged;
    out->late = h.late;
    out->seconds = (double)(h.t_end - h.t_start) / 1e9;
    out->hot_pinned = h.pinned;
    return h.stopped ? LL_STOPPED : LL_OK;
}
