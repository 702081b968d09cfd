/* bench_payload.h - what a ring's record size costs: an SPSC ring of 64-byte
 * messages against a ring of 32-bit indices into a preallocated pool of the
 * same messages, between two C threads.  Throughput (items/s) or round trip
 * (ns, one message in flight).  Python chooses the parameters, C runs the
 * loops (its own threads, its own clock).  The waits (ll_pair.h) are enum
 * ll_wait_policy (ll_wait.h) other than LL_WAIT_SLEEP. */
#ifndef LL_BENCH_PAYLOAD_H
#define LL_BENCH_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "ll_pair.h"

/* One message: a whole 64-byte cache line. */
typedef struct {
    uint64_t seq;     /* 1..items, checked in order by the consumer */
    uint64_t body[6]; /* filled by the producer, as a real message's fields would be */
    uint64_t value;   /* = seq; summed by the consumer: the checksum */
} ll_msg64;

enum ll_payload_kind {
    LL_PAYLOAD_STRUCT64 = 0, /* the ring's slots are ll_msg64, copied in and out */
    LL_PAYLOAD_INDEX = 1     /* the ring's slots are uint32 indices into a pool of ll_msg64 */
};

typedef struct {
    int kind;               /* enum ll_payload_kind */
    int round_trip;         /* 0: throughput; 1: ping-pong, the answer travels back on a uint64 ring */
    size_t capacity;        /* ring slots (power of two, 2..2^30); the index ring's pool holds 2 * capacity */
    uint64_t items;         /* messages (throughput) or round trips */
    ll_pair_placement pair; /* CPUs and waits (round trip: the pinger is the producer) */
} ll_payload_cfg;

typedef struct {
    double seconds;        /* throughput: first push to last pop; rtt: the pinger's loop */
    double items_per_s;    /* messages (or round trips) per second */
    uint64_t moved;        /* messages the consumer received (round trips completed) */
    uint64_t sent_sum;     /* sum of `value` over the messages the producer sent */
    uint64_t received_sum; /* sum of `value` as the consumer read it (through the index) */
    uint64_t errors;       /* messages out of order, or an answer that did not match (must be 0) */
    uint64_t full_waits;   /* the producer found the ring full */
    uint64_t empty_waits;  /* the consumer found the ring empty */
    int producer_pinned;   /* ll_pin_self result (0 = pinned) or 1 = not asked */
    int consumer_pinned;
    int ring_node; /* NUMA node of the ring's slots (ll_numa_node_of), -1 unknown */
    int pool_node; /* NUMA node of the pool (index ring), -1 unknown or no pool */
} ll_payload_result;

/* LL_OK, LL_STOPPED (a stop request ended it early: the results hold the
 * work done), LL_EINVAL, LL_ENOMEM, LL_ESYS (threads).  rtt_ns (round_trip
 * only, may be NULL) receives every round trip in ns. */
int ll_bench_payload(const ll_payload_cfg *cfg, ll_hist *rtt_ns, ll_payload_result *out);

#endif
