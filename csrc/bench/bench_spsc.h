/* bench_spsc.h - the SPSC ring measured between two C threads: throughput,
 * round trip, and the floor under both, one cache line bounced from core to
 * core.  Python chooses the parameters, C runs the loop (its own threads,
 * its own clock).  All times are in ns.  The waits (ll_pair.h) are enum
 * ll_wait_policy (ll_wait.h) other than LL_WAIT_SLEEP. */
#ifndef LL_BENCH_SPSC_H
#define LL_BENCH_SPSC_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "ll_pair.h"

typedef struct {
    size_t capacity;        /* ring capacity (power of two) */
    uint64_t items;         /* records moved (throughput) or round trips (rtt) */
    unsigned flags;         /* ll_spsc_create's (no layout flag: ll_spsc_default_layout()) */
    ll_pair_placement pair; /* CPUs and waits; rtt: the pinger is the producer, the ponger the consumer */
    size_t batch;           /* 0: per-record calls; n: push_many/pop_many of n */
    int api;                /* per-record calls: 0 the inlined u64 path, 1 the exported
                    * ll_spsc_try_push_u64/try_pop_u64, 2 the public ll_spsc_try_push/try_pop
                    * (1 and 2: a call, as a library user makes), 3 the inlined path plus
                    * an empty call per record (the call of 1 and 2 alone) */
    size_t refill;          /* per-record calls: after finding the ring full, the producer waits until
                    * this many slots are free (0 or 1: it retries at once); <= capacity */
} ll_spsc_bench_cfg;

typedef struct {
    double seconds; /* first push to last pop */
    double items_per_s;
    double mean_rtt_ns;   /* rtt only */
    uint64_t errors;      /* records out of order or corrupted (must be 0) */
    uint64_t full_waits;  /* producer found the ring full */
    uint64_t empty_waits; /* consumer found the ring empty */
    int producer_pinned;  /* ll_pin_self result (0 = pinned) or 1 = not asked */
    int consumer_pinned;
} ll_spsc_bench_result;

/* Producer sends 1..items in order; the consumer checks each arrives once,
 * in order.  LL_OK, LL_EINVAL, LL_ENOMEM, LL_ESYS (threads). */
int ll_bench_spsc_throughput(const ll_spsc_bench_cfg *cfg, ll_spsc_bench_result *out);
/* Ping-pong over two rings: each round trip is timed into rtt_ns (may be
 * NULL).  batch is ignored. */
int ll_bench_spsc_rtt(const ll_spsc_bench_cfg *cfg, ll_hist *rtt_ns, ll_spsc_bench_result *out);

/* One thread pushes and pops 0..items-1 in bursts of 64 through a ring of
 * 1024 u64 records, on the inlined path (api = 0), the exported u64 calls
 * (api = 1), the public record API (api = 2) or the inlined path plus an
 * empty call per record (api = 3).  Sets *ns_per_record (one push and one
 * pop, ns; over the records done after a stop) and *errors (records lost or
 * out of order: must be 0).
 * No line leaves the core: the difference between the paths is the call.
 * LL_OK, LL_EINVAL, LL_ENOMEM. */
int ll_bench_spsc_op(uint64_t items, int api, double *ns_per_record, uint64_t *errors);

/* ---- core-to-core: one cache line bounced between two threads -------------
 * Returns the one-way latency, half the median round trip over
 * `round_trips` (each timed on its own, so a preempted round trip does not
 * move it), in ns, or a negative status. */
double ll_bench_c2c(uint64_t round_trips, int cpu_a, int cpu_b, int wait);

#endif
