/* bench_taxes.h - the hidden taxes of chapter 01, each measured by a C loop:
 * a pthread mutex (alone and contended), a system call, a dependent load
 * (L1 to DRAM) and one histogram record.  All times are in ns; a negative
 * return is an ll_status (bad arguments, no memory, no threads).  The clock
 * reads are measured by clock.c, the page fault by bench_alloc.c. */
#ifndef LL_BENCH_TAXES_H
#define LL_BENCH_TAXES_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

/* One lock+unlock of a pthread mutex: alone, or while a second thread (on
 * cpu_b) hammers the same mutex.  ns per pair, per thread. */
double ll_bench_mutex(uint64_t iterations, int contended, int cpu_a, int cpu_b);
/* A trivial system call (getppid via syscall()), ns per call. */
double ll_bench_syscall(uint64_t iterations);
/* A dependent pointer chase through `bytes` of 64-byte nodes linked in one
 * random cycle: ns per load.  Small sizes stay in L1; hundreds of MiB go to
 * DRAM (and miss the TLB).  Negative status on bad arguments / no memory. */
double ll_bench_chase(size_t bytes, uint64_t steps, uint64_t seed);

/* Cost of one record: `n` pre-generated values spread over 4 decades
 * recorded into h, ns per record.  exported = 1: through the exported
 * ll_hist_record (a call into hist.c, as any user of the library pays);
 * 0: the inlined record the core's own loops use. */
double ll_bench_hist_record(ll_hist *h, uint64_t n, uint64_t seed, int exported);

#endif
