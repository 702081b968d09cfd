/* bench_orders.h - what a memory order costs: one atomic store or load of a
 * 64-bit word, in a loop, timed with the core's clock (ll_now_ns).  The
 * loops themselves (one per order, in bench_orders.c) are what chapter 03b
 * disassembles: on x86-64 a seq_cst store is an xchg, every other store and
 * every load a plain mov; on ARMv8 they are str/stlr and ldr/ldar.
 * Results are ns per operation, or a negative ll_status. */
#ifndef LL_BENCH_ORDERS_H
#define LL_BENCH_ORDERS_H

#include <stdint.h>

/* The C11 orders a loop can use (memory_order_* of <stdatomic.h>). */
enum ll_order { LL_ORDER_RELAXED = 0, LL_ORDER_ACQUIRE = 1, LL_ORDER_RELEASE = 2, LL_ORDER_SEQ_CST = 3 };

/* `iterations` stores of the loop counter to one word on its own cache
 * line, with `order` relaxed, release or seq_cst (acquire is not a store
 * order: LL_EINVAL).  Single-threaded.  ns per store. */
double ll_bench_atomic_store(uint64_t iterations, int order);
/* `iterations` loads of one word, summed (so none can be dropped), with
 * `order` relaxed, acquire or seq_cst (release: LL_EINVAL).  ns per load. */
double ll_bench_atomic_load(uint64_t iterations, int order);
/* The store loop of ll_bench_atomic_store on cpu_a while a second thread on
 * cpu_b keeps loading the same word (-1: not pinned): each store must first
 * take the line back from the reader's cache.  ns per store, measured by
 * the storing thread.  LL_ESYS when a thread cannot be created. */
double ll_bench_atomic_store_contended(uint64_t iterations, int order, int cpu_a, int cpu_b);

#endif
