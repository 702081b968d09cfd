/* bench_floor.h - the pipeline's floor: what the simplest possible hand-off
 * of one tick costs on this machine, measured the way the pipeline measures
 * itself (same pacing, same clock, same pinning, latency from the due time).
 * The producer publishes each tick's due time in one word of its own cache
 * line; the consumer spins on that word and records when it saw it change.  No ring, no
 * copy, no pool, no work: a pipeline cannot beat it. */
#ifndef LL_BENCH_FLOOR_H
#define LL_BENCH_FLOOR_H

#include <stdint.h>

#include "hist.h"
#include "ll_pair.h"

typedef struct {
    uint64_t ticks;         /* ticks to send */
    double rate_per_s;      /* the schedule: tick i due at start + i / rate */
    ll_pair_placement pair; /* CPUs and waits (producer: for the due time; consumer: for a change) */
    int clock;              /* enum ll_stamp_clock (pipeline.h): the pipeline's stamps */
} ll_floor_cfg;

typedef struct {
    uint64_t seen;   /* ticks the consumer saw */
    uint64_t missed; /* overwritten before the consumer looked (it was paused) */
    double seconds;
    int producer_pinned; /* ll_pin_self result (0 = pinned) or 1 = not asked */
    int consumer_pinned;
} ll_floor_result;

/* Records, per tick seen, ns from its due time to the consumer seeing it
 * into `lat`.  LL_OK, LL_EINVAL, LL_ESYS (threads), LL_STOPPED. */
int ll_bench_pipeline_floor(const ll_floor_cfg *cfg, ll_hist *lat, ll_floor_result *out);

#endif
