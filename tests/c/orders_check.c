/* orders_check.c - the memory-order benchmark loops (csrc/bench/bench_orders.c)
 * run under ThreadSanitizer: every order of the single-threaded loops, and
 * the store loop against a reader thread.  Prints "OK: 0 errors" when every
 * result is a positive time and every bad order is refused. */
#include <stdio.h>

#include "bench/bench_orders.h"
#include "ll_common.h"

int main(void)
{
    int errors = 0;
    const int stores[] = {LL_ORDER_RELAXED, LL_ORDER_RELEASE, LL_ORDER_SEQ_CST};
    const int loads[] = {LL_ORDER_RELAXED, LL_ORDER_ACQUIRE, LL_ORDER_SEQ_CST};
    for (int i = 0; i < 3; i++) {
        errors += !(ll_bench_atomic_store(10000, stores[i]) > 0);
        errors += !(ll_bench_atomic_load(10000, loads[i]) > 0);
        errors += !(ll_bench_atomic_store_contended(20000, stores[i], -1, -1) > 0);
    }
    errors += ll_bench_atomic_store(10, LL_ORDER_ACQUIRE) != LL_EINVAL;
    errors += ll_bench_atomic_load(10, LL_ORDER_RELEASE) != LL_EINVAL;
    errors += ll_bench_atomic_store_contended(10, 99, -1, -1) != LL_EINVAL;
    errors += ll_bench_atomic_store(0, LL_ORDER_RELAXED) != LL_EINVAL;
    printf("OK: %d errors\n", errors);
    return errors != 0;
}
