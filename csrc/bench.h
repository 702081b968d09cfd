/* bench.h - the measurement loops of the course, run entirely in C: Python
 * chooses the parameters, C runs the loop (its own threads, its own clock)
 * and hands back numbers and histograms.  All times are in ns. */
#ifndef LL_BENCH_H
#define LL_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

/* ---- allocation: malloc/free vs the pool ---------------------------------
 * One operation = free one live block (picked at random) and allocate one
 * of a random size in [min_size, max_size].  With live = 1 that is a plain
 * alloc/free pair. */
typedef struct {
    uint64_t ops;       /* operations per pass */
    size_t live;        /* working set kept allocated (>= 1) */
    size_t min_size;    /* bytes, >= 1 */
    size_t max_size;    /* bytes, >= min_size; the pool's block size */
    uint64_t seed;      /* same seed = same sizes and victims for both sides */
    int use_pool;       /* 0: malloc/free, 1: ll_pool (unchecked, cache-aligned) */
} ll_alloc_bench_cfg;

typedef struct {
    double mean_ns;           /* pass 1: ops timed as one batch, per op */
    double timer_overhead_ns; /* median cost of one per-op stamp pair (pass 2) */
    uint64_t ops;
    uint64_t failed;          /* allocations that returned NULL */
} ll_alloc_bench_result;

/* Pass 1 times all ops with two clock reads (the mean); pass 2 times each op
 * with the TSC and records it in per_op_ns (the tails).  per_op_ns may be
 * NULL (pass 2 is skipped).  LL_OK, LL_EINVAL, LL_ENOMEM. */
int ll_bench_alloc(const ll_alloc_bench_cfg *cfg, ll_hist *per_op_ns, ll_alloc_bench_result *out);

/* A fragmented heap: allocates `blocks` blocks of random sizes, then frees a
 * random half of them, leaving holes all over the heap until released. */
typedef struct ll_heap_frag ll_heap_frag;
ll_heap_frag *ll_heap_fragment(size_t blocks, size_t min_size, size_t max_size, uint64_t seed);
void ll_heap_fragment_release(ll_heap_frag *f);

/* ---- the SPSC ring between two threads ------------------------------------ */
enum ll_wait_policy {
    LL_WAIT_SPIN = 0,       /* busy-wait with the CPU's pause hint */
    LL_WAIT_YIELD = 1,      /* sched_yield() on every failed attempt */
    LL_WAIT_SPIN_YIELD = 2, /* spin 100 times, then yield */
    LL_WAIT_SLEEP = 3       /* nanosleep(1 us) (the pipeline only; the bench loops refuse it) */
};

typedef struct {
    size_t capacity;    /* ring capacity (power of two) */
    uint64_t items;     /* records moved (throughput) or round trips (rtt) */
    unsigned flags;     /* LL_SPSC_UNPADDED, LL_SPSC_NO_CACHE */
    int producer_cpu;   /* -1: not pinned */
    int consumer_cpu;
    int wait;           /* enum ll_wait_policy */
    size_t batch;       /* 0: per-record calls; n: push_many/pop_many of n */
} ll_spsc_bench_cfg;

typedef struct {
    double seconds;          /* first push to last pop */
    double items_per_s;
    double mean_rtt_ns;      /* rtt only */
    uint64_t errors;         /* records out of order or corrupted (must be 0) */
    uint64_t full_waits;     /* producer found the ring full */
    uint64_t empty_waits;    /* consumer found the ring empty */
    int producer_pinned;     /* ll_pin_self result (0 = pinned) or 1 = not asked */
    int consumer_pinned;
} ll_spsc_bench_result;

/* Producer sends 1..items in order; the consumer checks each arrives once,
 * in order.  LL_OK, LL_EINVAL, LL_ENOMEM, LL_ESYS (threads). */
int ll_bench_spsc_throughput(const ll_spsc_bench_cfg *cfg, ll_spsc_bench_result *out);
/* Ping-pong over two rings: each round trip is timed into rtt_ns (may be
 * NULL).  batch is ignored. */
int ll_bench_spsc_rtt(const ll_spsc_bench_cfg *cfg, ll_hist *rtt_ns, ll_spsc_bench_result *out);

/* ---- core-to-core: one cache line bounced between two threads -------------
 * Returns the mean one-way latency (half a round trip) over `round_trips`,
 * or a negative status. */
double ll_bench_c2c(uint64_t round_trips, int cpu_a, int cpu_b, int wait);

/* ---- the hidden taxes ----------------------------------------------------- */
/* One lock+unlock of a pthread mutex: alone, or while a second thread (on
 * cpu_b) hammers the same mutex.  ns per pair, per thread. */
double ll_bench_mutex(uint64_t iterations, int contended, int cpu_a, int cpu_b);
/* A trivial system call (getppid via syscall()), ns per call. */
double ll_bench_syscall(uint64_t iterations);
/* A dependent pointer chase through `bytes` of 64-byte nodes linked in one
 * random cycle: ns per load.  Small sizes stay in L1; hundreds of MiB go to
 * DRAM (and miss the TLB).  Negative status on bad arguments / no memory. */
double ll_bench_chase(size_t bytes, uint64_t steps, uint64_t seed);

typedef struct {
    uint64_t pages;
    size_t page_size;
    double first_touch_ns;   /* per page: the fault, zeroing, mapping */
    double prefaulted_ns;    /* per page: touching it again */
    uint64_t minor_faults;   /* getrusage ru_minflt during the first touch */
} ll_fault_result;

/* Maps `pages` fresh pages (huge pages disabled where possible), touches
 * each once (faults) and again (no faults). */
int ll_bench_page_faults(uint64_t pages, ll_fault_result *out);

/* Cost of ll_hist_record: `n` pre-generated lognormal-ish values recorded
 * into h, ns per record. */
double ll_bench_hist_record(ll_hist *h, uint64_t n, uint64_t seed);

#endif
