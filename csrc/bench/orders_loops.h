/* orders_loops.h - internal: the loops of bench_orders.c, one per memory
 * order, each doing nothing but `n` atomic stores or loads of `*x`.  They live
 * in a file of their own (orders_loops.c) that needs only <stdatomic.h> and
 * <stdint.h>, so chapter 03b can compile it for another CPU (clang
 * --target=aarch64-linux-gnu -ffreestanding -S) and show what each order
 * becomes there.  Not fed to cffi (an _Atomic pointer is not in its C). */
#ifndef LL_ORDERS_LOOPS_H
#define LL_ORDERS_LOOPS_H

#include <stdatomic.h>
#include <stdint.h>

/* Store loops: store 0..n-1 to *x; return n. */
uint64_t ll_orders_store_relaxed(_Atomic uint64_t *x, uint64_t n);
uint64_t ll_orders_store_release(_Atomic uint64_t *x, uint64_t n);
uint64_t ll_orders_store_seq_cst(_Atomic uint64_t *x, uint64_t n);
/* Load loops: load *x n times; return the sum (so no load can be dropped). */
uint64_t ll_orders_load_relaxed(_Atomic uint64_t *x, uint64_t n);
uint64_t ll_orders_load_acquire(_Atomic uint64_t *x, uint64_t n);
uint64_t ll_orders_load_seq_cst(_Atomic uint64_t *x, uint64_t n);

#endif
