/* pipeline.h - the course's whole experiment in one call: a producer thread
 * makes market ticks, an SPSC ring carries them, a consumer thread takes a
 * feature object from a pool, computes the features (plus optional synthetic
 * per-stage work), stamps the time and gives the object back.  Every latency
 * goes into two histograms (from the intended and from the actual send
 * time) and, bounded, into an array of raw samples for plots.
 *
 * Every option the course compares is a field of ll_pipeline_cfg.  Nothing
 * is lost silently: produced = consumed + dropped_full + dropped_pool.
 * Ownership: the caller owns the histograms and the sample array; the
 * pipeline allocates its ring, pool and (in growing mode) its own sample
 * array, and frees them before returning. */
#ifndef LL_PIPELINE_H
#define LL_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "ll_common.h"
#include "ll_pair.h"

enum ll_producer_mode {
    LL_PRODUCER_CLOSED = 0, /* as fast as the ring allows (the source article) */
    LL_PRODUCER_OPEN = 1    /* a fixed rate: tick i is due at start + i / rate */
};

enum ll_full_policy {
    LL_FULL_WAIT = 0, /* wait for room (per producer_wait) */
    LL_FULL_DROP = 1  /* drop the tick and count it */
};

enum ll_sample_mode {
    LL_SAMPLES_PREALLOCATED = 0, /* write into the caller's array; keep the first sample_capacity */
    LL_SAMPLES_GROWING = 1       /* like std::vector::push_back: realloc x2 on the hot path */
};

enum ll_handoff {
    LL_HANDOFF_CURSORS = 0, /* the SPSC ring of spsc.h: the consumer polls the producer's cursor */
    LL_HANDOFF_SLOTS = 1    /* a sequence word in each slot: the consumer polls the slot itself */
};

enum ll_stamp_clock {
    LL_CLOCK_MONOTONIC = 0, /* clock_gettime(CLOCK_MONOTONIC) for every stamp and the pacing */
    LL_CLOCK_TSC = 1        /* the timestamp counter where invariant, else the monotonic clock */
};

#define LL_PIPELINE_STAGES 4 /* parse, features, risk, encode */

/* Faults injected on purpose, for the course's demonstrations (coordinated
 * omission, a P99-only regression, the watermark, drift).  All zero: none,
 * and the cost is one predictable branch per consumer tick and none per
 * producer tick (the producer checks its pause every 64 ticks, where it
 * already polls).  Injected work is a spin on the clock at the start of the
 * parse stage (so a stage breakdown puts it in parse); a stop ends it early. */
typedef struct {
    uint64_t stall_ns;      /* the consumer stops taking ticks this long (0: never) ... */
    uint64_t stall_every;   /* ... before every tick whose seq is a multiple of this (0: see stall_at) */
    uint64_t stall_at;      /* ... or once, before tick seq stall_at (0: never; stall_every wins) */
    uint64_t slow_ns;       /* a rare slow path: this much extra work (0: the draw alone) ... */
    uint32_t slow_ppm;      /* ... on this many ticks per million (0..1e6), drawn with a fixed seed */
    uint64_t grow_ns_per_s; /* growing work: this many ns more per tick per second since the first tick */
    uint64_t pause_ns;      /* the producer makes no tick this long (0: never) ... */
    uint64_t pause_at;      /* ... before tick seq pause_at, rounded down to 64k + 1 (1, 65, 129 ...) */
} ll_pipeline_inject;

typedef struct {
    uint64_t ticks;         /* ticks the producer makes, >= 1 */
    int producer_mode;      /* enum ll_producer_mode */
    double rate_per_s;      /* open loop: ticks per second (> 0) */
    int full_policy;        /* enum ll_full_policy */
    ll_pair_placement pair; /* the two threads' CPUs and waits (producer: for room and its due time) */
    size_t capacity;        /* ring capacity: a power of two >= 2 */
    size_t pool_blocks;     /* feature objects in the pool, >= 1 */
    /* hold_ns: each feature object stays in use this long (an order awaiting its ack); 0: given back at
     * once.  Little's law: objects in use = rate x hold_ns, so a pool smaller than that runs dry. */
    uint64_t hold_ns;
    int sample_mode;                      /* enum ll_sample_mode */
    size_t sample_capacity;               /* raw samples kept (the caller's array length) */
    uint64_t work_ns[LL_PIPELINE_STAGES]; /* synthetic busy work per stage, ns (0: none) */
    int handoff;                          /* enum ll_handoff */
    int clock;                            /* enum ll_stamp_clock */
    ll_pipeline_inject inject;            /* injected faults (all 0: none) */
} ll_pipeline_cfg;

/* One processed tick, one cache line.  Times are CLOCK_MONOTONIC ns (with
 * LL_CLOCK_TSC, counter stamps converted).  Without synthetic work (all
 * work_ns 0) the consumer takes one stamp per tick, when it is done, and
 * popped_ns and the stage ends all hold it. */
typedef struct {
    uint64_t seq;                              /* 1, 2, 3 ... in production order */
    uint64_t intended_ns;                      /* when the schedule said to send it (closed loop: when it was made) */
    uint64_t sent_ns;                          /* just before the push that succeeded */
    uint64_t popped_ns;                        /* just after the consumer's pop */
    uint64_t stage_end_ns[LL_PIPELINE_STAGES]; /* end of parse, features, risk, encode (the last: done) */
} ll_pipeline_sample;

typedef struct {
    uint64_t produced;         /* ticks made */
    uint64_t consumed;         /* ticks fully processed */
    uint64_t dropped_full;     /* ring full under LL_FULL_DROP */
    uint64_t dropped_pool;     /* no free feature object */
    uint64_t samples;          /* raw samples written to the caller's array */
    uint64_t samples_not_kept; /* processed ticks beyond sample_capacity */
    uint64_t sample_reallocs;  /* growing mode: reallocations on the hot path */
    uint64_t producer_waits;   /* failed pushes waited on */
    uint64_t consumer_waits;   /* failed pops waited on */
    uint64_t late_sends;       /* open loop: sent more than one interval after due */
    double seconds;            /* start gate to the consumer's last tick */
    double feature_checksum;   /* sum of computed mid prices (keeps the work honest) */
    int producer_pinned;       /* ll_pin_self status (0 = pinned), 1 = not asked */
    int consumer_pinned;
    int tsc; /* 1 when the stamps came from the timestamp counter */
} ll_pipeline_result;

/* Runs the pipeline.  lat_intended / lat_sent: histograms (ns) of done minus
 * intended and done minus sent (either may be NULL); samples: an array of
 * cfg->sample_capacity entries (NULL only when sample_capacity is 0).
 * LL_OK, LL_EINVAL (a field out of range), LL_ENOMEM, LL_ESYS (threads).
 * The same as ll_pipeline_start then ll_pipeline_join and _destroy. */
int ll_pipeline_run(const ll_pipeline_cfg *cfg, ll_hist *lat_intended, ll_hist *lat_sent, ll_pipeline_sample *samples,
                    ll_pipeline_result *out);

/* A run in the background, watched while it goes on.
 *
 * ll_pipeline_start starts the two threads and returns at once.  Any thread
 * may then read the live counters (ll_pipeline_snapshot); ONE monitor thread
 * may close intervals (ll_pipeline_cut), ask for a stop (ll_pipeline_stop),
 * join (ll_pipeline_join) and destroy.  The live counters are written by
 * their owner thread alone, on cache lines of its own, with plain (relaxed
 * or release) stores: watching costs the pipeline one line transfer per
 * read, never a locked instruction.
 * Ownership: start copies cfg; the caller's histograms and sample array must
 * outlive the run (until join); ll_pipeline_destroy frees the rest. */
typedef struct ll_pipeline ll_pipeline;

typedef struct {
    uint64_t produced;     /* ticks made so far (the one waiting for room included; a stop takes it back) */
    uint64_t consumed;     /* ticks fully processed */
    uint64_t dropped_full; /* ring full under LL_FULL_DROP */
    uint64_t dropped_pool; /* no free feature object */
    uint64_t watermark;    /* the most ticks seen in the ring at once since the start (sampled, see below) */
    uint64_t capacity;     /* the ring's capacity, ticks */
    int running;           /* 1 until both threads have ended */
} ll_pipeline_live;

/* The ring's occupancy is sampled by the producer every 64 ticks (made minus
 * taken, taken read from the consumer's line) and set to the capacity when a
 * push finds the ring full: the watermark is exact at 100%, and below it may
 * miss a peak that came and went within 64 ticks. */

/* Starts a run (cfg and the arguments as ll_pipeline_run).  intervals: 1 to
 * keep a latency histogram (done minus intended) per interval, closed by
 * ll_pipeline_cut; 0 for none.  NULL on error, with *status LL_EINVAL,
 * LL_ENOMEM or LL_ESYS; LL_OK otherwise. */
ll_pipeline *ll_pipeline_start(const ll_pipeline_cfg *cfg, ll_hist *lat_intended, ll_hist *lat_sent,
                               ll_pipeline_sample *samples, int intervals, int *status);
/* The live counters, from any thread, at any time.  Consistent in one way:
 * produced >= consumed + dropped_full + dropped_pool (the rest is in flight). */
void ll_pipeline_snapshot(ll_pipeline *p, ll_pipeline_live *out);
/* Closes the current interval: its latencies are added to `lat` (any layout)
 * and its highest sampled occupancy is put in *watermark; the next interval
 * starts.  Waits (sleeping) until both threads have switched, at most about
 * 64 ticks or one stage's busy work.  LL_OK, or LL_EINVAL when the run was
 * started without intervals. */
int ll_pipeline_cut(ll_pipeline *p, ll_hist *lat, uint64_t *watermark);
/* Asks both threads to end soon (within about 64 ticks); returns at once. */
void ll_pipeline_stop(ll_pipeline *p);
/* Waits for both threads and fills *out as ll_pipeline_run does: LL_OK, or
 * LL_STOPPED when the run ended early (a stop request, here or Ctrl-C). */
int ll_pipeline_join(ll_pipeline *p, ll_pipeline_result *out);
/* Stops and joins the run if that is not done, then frees it.  NULL is fine. */
void ll_pipeline_destroy(ll_pipeline *p);

#endif
