/* orders_loops.c - one loop per memory order (see orders_loops.h).  Each
 * is an exported function with nothing else in it, so `cc -S` or
 * `objdump -d` of this file shows exactly the instruction each order
 * compiles to on the CPU it is built for.  Freestanding: no libc. */
#include "orders_loops.h"

uint64_t ll_orders_store_relaxed(_Atomic uint64_t *x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        atomic_store_explicit(x, i, memory_order_relaxed); /* relaxed: the order under test */
    return n;
}

uint64_t ll_orders_store_release(_Atomic uint64_t *x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        atomic_store_explicit(x, i, memory_order_release); /* release: the order under test */
    return n;
}

uint64_t ll_orders_store_seq_cst(_Atomic uint64_t *x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        atomic_store_explicit(x, i, memory_order_seq_cst); /* seq_cst: the order under test */
    return n;
}

uint64_t ll_orders_load_relaxed(_Atomic uint64_t *x, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += atomic_load_explicit(x, memory_order_relaxed); /* relaxed: the order under test */
    return sum;
}

uint64_t ll_orders_load_acquire(_Atomic uint64_t *x, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += atomic_load_explicit(x, memory_order_acquire); /* acquire: the order under test */
    return sum;
}

uint64_t ll_orders_load_seq_cst(_Atomic uint64_t *x, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += atomic_load_explicit(x, memory_order_seq_cst); /* seq_cst: the order under test */
    return sum;
}
