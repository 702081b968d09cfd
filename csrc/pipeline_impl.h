/* pipeline_impl.h - internal to the pipeline: the state its two threads
 * (pipeline.c) and its owner's calls (pipeline_run.c: start, snapshot, cut,
 * join) share.  Not part of the API (pipeline.h is). */
#ifndef LL_PIPELINE_IMPL_H
#define LL_PIPELINE_IMPL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ll_stamp.h"
#include "ll_util.h"
#include "pipeline.h"
#include "pool.h"
#include "slotring_inline.h"
#include "spsc.h"

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
/* The longest injected stall, slow path or pause (ns): 10 s. */
#define LL_INJECT_MAX_NS 10000000000ull

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

/* The two threads' entry points (pipeline.c); arg: their struct producer or
 * struct consumer, which must outlive them. */
void *ll_pipeline__producer_main(void *arg);
void *ll_pipeline__consumer_main(void *arg);

#endif
