/* bench_alloc.h - the memory measurements of the course, run in C: malloc/free
 * against the pool (mean and per-op tails, on a steady or a fragmented heap)
 * and the cost of a first-touch page fault.  Python chooses the parameters,
 * C runs the loop on its own clock.  All times are in ns. */
#ifndef LL_BENCH_ALLOC_H
#define LL_BENCH_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

/* ---- allocation: malloc/free vs the pool ---------------------------------
 * One operation = free one live block (picked at random) and allocate one
 * of a random size in [min_size, max_size].  With live = 1 that is a plain
 * alloc/free pair. */
typedef struct {
    uint64_t ops;    /* operations per pass */
    size_t live;     /* working set kept allocated (>= 1) */
    size_t min_size; /* bytes, >= 1 */
    size_t max_size; /* bytes, >= min_size; the pool's block size */
    uint64_t seed;   /* same seed = same sizes and victims for both sides */
    int use_pool;    /* 0: malloc/free, 1: ll_pool (unchecked, cache-aligned) */
} ll_alloc_bench_cfg;

typedef struct {
    double mean_ns;           /* pass 1: ops timed as one batch, per op */
    double timer_overhead_ns; /* median cost of one per-op stamp pair (pass 2) */
    uint64_t ops;
    uint64_t failed; /* allocations that returned NULL */
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

/* ---- page faults ------------------------------------------------------------ */
typedef struct {
    uint64_t pages;
    size_t page_size;
    double first_touch_ns;  /* per page: the fault, zeroing, mapping */
    double prefaulted_ns;   /* per page: touching it again */
    uint64_t minor_faults;  /* getrusage ru_minflt during the first touch */
    uint64_t second_faults; /* ru_minflt during the second touch (expected 0) */
} ll_fault_result;

/* Maps `pages` fresh pages (huge pages disabled where possible), touches
 * each once (faults) and again (no faults). */
int ll_bench_page_faults(uint64_t pages, ll_fault_result *out);

#endif
