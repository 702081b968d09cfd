/* bench_floor.c - the pipeline's floor (see bench_floor.h). */
#define _GNU_SOURCE
#include "bench_floor.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hist_inline.h"
#include "ll_arch.h"
#include "ll_stamp.h"
#include "ll_util.h"
#include "ll_wait.h"
#include "pipeline.h"
#include "stop.h"

enum { POLL_TICKS = 64, POLL_WAITS = 64 };

struct floor {
    /* The line that crosses: the tick's due time, nothing else.  Due times
     * only grow, so a new value is a new tick: one word is the whole message. */
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t due;
    /* Read-only after setup, and each side's own results. */
    alignas(LL_FALSE_SHARING_RANGE) const ll_floor_cfg *cfg;
    struct ll_stamp clk;
    ll_hist *lat;
    struct ll_duo duo;
    _Atomic int done;
    uint64_t produced, seen, t_end;
    int producer_pinned, consumer_pinned, stopped;
};

static void *floor_producer(void *arg)
{
    struct floor *f = arg;
    const ll_floor_cfg *c = f->cfg;
    f->producer_pinned = ll_pin_if(c->pair.producer_cpu);
    if (!ll_duo_arrive(&f->duo))
        return NULL;
    const struct ll_stamp *clk = &f->clk;
    const double interval = ll_stamp_units(clk, 1e9 / c->rate_per_s);
    const uint64_t start = ll_stamp_now(clk);
    uint64_t i;
    for (i = 0; i < c->ticks; i++) {
        if (i % POLL_TICKS == 0 && ll_stop_requested())
            break;
        uint64_t due = start + (uint64_t)((double)i * interval);
        unsigned spins = 0, polls = 0;
        while (ll_stamp_now(clk) < due) { /* the pipeline's pacing, unchanged */
            ll_wait_once(c->pair.producer_wait, &spins);
            if (++polls % POLL_WAITS == 0 && ll_stop_requested())
                goto end;
        }
        /* release: the pipeline's push publishes with a release store; the
         * floor pays the same (a plain store on x86). */
        atomic_store_explicit(&f->due, due, memory_order_release);
    }
end:
    f->stopped = i < c->ticks;
    f->produced = i;
    /* release: the last due time is visible before done. */
    atomic_store_explicit(&f->done, 1, memory_order_release);
    return NULL;
}

static void *floor_consumer(void *arg)
{
    struct floor *f = arg;
    const ll_floor_cfg *c = f->cfg;
    f->consumer_pinned = ll_pin_if(c->pair.consumer_cpu);
    if (!ll_duo_arrive(&f->duo))
        return NULL;
    const struct ll_stamp *clk = &f->clk;
    uint64_t last = 0, seen = 0, t_end = 0;
    unsigned spins = 0, polls = 0;
    for (;;) {
        /* acquire: pairs with the producer's release store of the due time. */
        uint64_t due = atomic_load_explicit(&f->due, memory_order_acquire);
        if (due != last) {
            uint64_t now = ll_stamp_after(clk);
            ll_hist_record_n_inline(f->lat, now > due ? ll_stamp_span_ns(clk, now - due) : 0, 1);
            t_end = now;
            seen++;
            last = due;
            spins = 0;
            continue;
        }
        /* acquire: pairs with the producer's release of done; the due time
         * is re-read after it, so the last tick is never left unseen. */
        if (atomic_load_explicit(&f->done, memory_order_acquire) &&
            atomic_load_explicit(&f->due, memory_order_acquire) == last)
            break;
        ll_wait_once(c->pair.consumer_wait, &spins);
        if (++polls % POLL_WAITS == 0 && ll_stop_requested())
            break;
    }
    f->seen = seen;
    f->t_end = t_end ? ll_stamp_ns(clk, t_end) : ll_now_ns();
    return NULL;
}

int ll_bench_pipeline_floor(const ll_floor_cfg *cfg, ll_hist *lat, ll_floor_result *out)
{
    if (!cfg || !lat || !out || cfg->ticks == 0 || !(cfg->rate_per_s > 0.0 && cfg->rate_per_s <= 1e9) ||
        !ll_pair_ok(&cfg->pair, 1) || (cfg->clock != LL_CLOCK_MONOTONIC && cfg->clock != LL_CLOCK_TSC))
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    struct floor *f = ll_alloc_lines(sizeof *f);
    if (!f)
        return LL_ENOMEM;
    memset(f, 0, sizeof *f);
    atomic_init(&f->due, 0);
    atomic_init(&f->done, 0);
    f->cfg = cfg;
    f->lat = lat;
    ll_stamp_init(&f->clk, cfg->clock == LL_CLOCK_TSC);
    int rc = ll_run_pair(floor_producer, f, floor_consumer, f, &f->duo);
    if (rc == LL_OK) {
        out->seen = f->seen;
        out->missed = f->produced - f->seen;
        out->seconds = (double)(f->t_end - f->duo.t_start) / 1e9;
        out->producer_pinned = f->producer_pinned;
        out->consumer_pinned = f->consumer_pinned;
        if (f->stopped)
            rc = LL_STOPPED;
    }
    free(f);
    return rc;
}
