/* pipeline_inject.h - internal to pipeline.c: busy work on the clock, and
 * the faults of ll_pipeline_inject (pipeline.h) that the two threads inject
 * on purpose for the course's demonstrations.  Not part of the API. */
#ifndef LL_PIPELINE_INJECT_H
#define LL_PIPELINE_INJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ll_util.h"
#include "pipeline.h"
#include "pipeline_impl.h"
#include "stop.h"

/* A stop asked for this run or for every long call (Ctrl-C, stop.h).
 * relaxed: the flag carries no data, only a request to end soon; what a
 * stopped thread leaves behind is ordered by the join that follows. */
static inline bool stop_asked(struct control *ctl)
{
    return ll_stop_requested() || atomic_load_explicit(&ctl->stop, memory_order_relaxed);
}

/* Busy work standing in for a stage's computation: spins on the clock.  It
 * ends early on a stop request, so a stopped run drains its ring quickly. */
static inline void busy_ns(uint64_t ns, struct control *ctl)
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

/* True when any consumer-side fault is asked for (the one branch per tick). */
static inline bool inject_consumer_on(const ll_pipeline_inject *in)
{
    return in->stall_ns || in->slow_ppm || in->grow_ns_per_s;
}

/* The consumer's injection state: its own random draws and the first tick's time. */
struct inject_state {
    uint64_t rng;
    uint64_t t0_ns; /* CLOCK_MONOTONIC of the first tick (growing work), 0 before it */
};

/* The extra work (ns) the faults put before tick `seq`'s parse stage. */
static inline uint64_t inject_consumer_ns(const ll_pipeline_inject *in, struct inject_state *s, uint64_t seq)
{
    uint64_t ns = 0;
    if (in->stall_ns && (in->stall_every ? seq % in->stall_every == 0 : in->stall_at != 0 && seq == in->stall_at))
        ns += in->stall_ns;
    /* A draw in [0, 1e6) by multiply-shift (no divide); drawn whenever
     * slow_ppm is set, so a zero slow_ns costs what the slow path's check costs. */
    if (in->slow_ppm && ((ll_rng_next(&s->rng) >> 32) * 1000000u >> 32) < in->slow_ppm)
        ns += in->slow_ns;
    if (in->grow_ns_per_s) {
        uint64_t now = ll_now_ns();
        if (s->t0_ns == 0)
            s->t0_ns = now;
        double grown = (double)in->grow_ns_per_s * (double)(now - s->t0_ns) / 1e9;
        ns += grown < 1e9 ? (uint64_t)grown : 1000000000u; /* at most 1 s a tick (check_cfg bounds the rate) */
    }
    return ns;
}

/* The producer's pause, checked where it polls (every POLL_TICKS ticks):
 * before tick index i (seq i + 1) when that is pause_at rounded down to 64k + 1. */
static inline void inject_producer_pause(const ll_pipeline_inject *in, uint64_t i, struct control *ctl)
{
    if (in->pause_ns && in->pause_at != 0 && i == (in->pause_at - 1) / POLL_TICKS * POLL_TICKS)
        busy_ns(in->pause_ns, ctl);
}

#endif
