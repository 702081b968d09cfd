/* bench_orders.c - the cost of a memory order (see bench_orders.h): the
 * loops of orders_loops.c timed with the core's clock.  The word stored to
 * or loaded from starts a memory block of its own (ll_alloc_lines): no other
 * data shares its line. */
#define _GNU_SOURCE
#include "bench_orders.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "clock.h"
#include "ll_arch.h"
#include "ll_common.h"
#include "ll_util.h"
#include "orders_loops.h"

typedef uint64_t (*loop_fn)(_Atomic uint64_t *, uint64_t);

static loop_fn store_loop(int order)
{
    switch (order) {
    case LL_ORDER_RELAXED:
        return ll_orders_store_relaxed;
    case LL_ORDER_RELEASE:
        return ll_orders_store_release;
    case LL_ORDER_SEQ_CST:
        return ll_orders_store_seq_cst;
    default:
        return NULL;
    }
}

static loop_fn load_loop(int order)
{
    switch (order) {
    case LL_ORDER_RELAXED:
        return ll_orders_load_relaxed;
    case LL_ORDER_ACQUIRE:
        return ll_orders_load_acquire;
    case LL_ORDER_SEQ_CST:
        return ll_orders_load_seq_cst;
    default:
        return NULL;
    }
}

/* Keeps a load loop's sum observable, so the loads cannot be dropped. */
static _Atomic uint64_t sink; /* atomic: two benchmark threads may store to it at once */

static double timed(loop_fn fn, uint64_t iterations)
{
    if (!fn || iterations == 0)
        return LL_EINVAL;
    _Atomic uint64_t *x = ll_alloc_lines(sizeof *x);
    if (!x)
        return LL_ENOMEM;
    atomic_init(x, 1);
    fn(x, iterations < 1000 ? iterations : 1000); /* warm: the line in cache, the code in the i-cache */
    uint64_t t0 = ll_now_ns();
    uint64_t r = fn(x, iterations);
    uint64_t t1 = ll_now_ns();
    atomic_store_explicit(&sink, r, memory_order_relaxed); /* relaxed: only keeps the result observable */
    free(x);
    return (double)(t1 - t0) / (double)iterations;
}

double ll_bench_atomic_store(uint64_t iterations, int order) { return timed(store_loop(order), iterations); }

double ll_bench_atomic_load(uint64_t iterations, int order) { return timed(load_loop(order), iterations); }

/* ---- one store loop against a reader on another CPU ------------------------ */

struct contended {
    _Atomic uint64_t *x;
    atomic_int *stop; /* on its own line: the reader polls it, the writer sets it once */
    struct ll_duo duo;
    loop_fn fn;
    uint64_t iterations;
    int cpu_a, cpu_b;
    double ns_per_store;
};

static void *writer(void *arg)
{
    struct contended *c = arg;
    ll_pin_if(c->cpu_a);
    if (!ll_duo_arrive(&c->duo))
        return NULL;
    uint64_t t0 = ll_now_ns();
    c->fn(c->x, c->iterations);
    uint64_t t1 = ll_now_ns();
    c->ns_per_store = (double)(t1 - t0) / (double)c->iterations;
    atomic_store_explicit(c->stop, 1, memory_order_relaxed); /* relaxed: a flag, it publishes no data */
    return NULL;
}

static void *reader(void *arg)
{
    struct contended *c = arg;
    ll_pin_if(c->cpu_b);
    if (!ll_duo_arrive(&c->duo))
        return NULL;
    uint64_t sum = 0;
    while (!atomic_load_explicit(c->stop, memory_order_relaxed)) /* relaxed: a flag, see writer() */
        sum += atomic_load_explicit(c->x, memory_order_relaxed); /* relaxed: only pulls the line over */
    atomic_store_explicit(&sink, sum, memory_order_relaxed);     /* relaxed: only keeps the result observable */
    return NULL;
}

double ll_bench_atomic_store_contended(uint64_t iterations, int order, int cpu_a, int cpu_b)
{
    loop_fn fn = store_loop(order);
    if (!fn || iterations == 0)
        return LL_EINVAL;
    struct contended c = {.fn = fn, .iterations = iterations, .cpu_a = cpu_a, .cpu_b = cpu_b};
    c.x = ll_alloc_lines(sizeof *c.x);
    c.stop = ll_alloc_lines(sizeof *c.stop);
    double r = LL_ENOMEM;
    if (c.x && c.stop) {
        atomic_init(c.x, 1);
        atomic_init(c.stop, 0);
        atomic_init(&c.duo.ready, 0);
        atomic_init(&c.duo.go, 0);
        r = ll_run_pair(writer, &c, reader, &c, &c.duo) == LL_OK ? c.ns_per_store : LL_ESYS;
    }
    free(c.x);
    free(c.stop);
    return r;
}
