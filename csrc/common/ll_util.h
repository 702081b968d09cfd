/* ll_util.h - internal: small pieces shared by the core's threaded loops
 * (csrc/bench/, pipeline.c): a seedable generator, one wait per policy of
 * ll_wait.h, and a start gate for two threads.  Not part of the public API (not fed to cffi).
 * Self-sufficient: it needs no feature macro (_GNU_SOURCE, _POSIX_C_SOURCE)
 * from its includer; the one call that would (nanosleep) is ll_sleep_ns, out
 * of line in clock.c. */
#ifndef LL_UTIL_H
#define LL_UTIL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "affinity.h"
#include "clock.h"
#include "ll_arch.h"
#include "ll_common.h"
#include "ll_pair.h"
#include "ll_wait.h"

/* xorshift64*: a fast, seedable generator; quality is ample for picking
 * sizes, victims and jitter. */
static inline uint64_t ll_rng_next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* The policies a benchmark loop accepts: all but sleeping (a 1 us nap
 * would be what it measures). */
static inline int ll_wait_bench_ok(int w)
{
    return (w >= LL_WAIT_SPIN && w <= LL_WAIT_SPIN_YIELD) || w == LL_WAIT_BACKOFF;
}

/* The one check of a two-thread placement (ll_pair.h): each CPU -1 (not
 * pinned) or an online CPU, each wait a policy (with `bench`, one a
 * benchmark loop accepts: ll_wait_bench_ok). */
static inline int ll_pair_ok(const ll_pair_placement *p, int bench)
{
    int n = ll_cpu_count();
    for (int i = 0; i < 2; i++) {
        int cpu = i ? p->consumer_cpu : p->producer_cpu, w = i ? p->consumer_wait : p->producer_wait;
        if (cpu < -1 || cpu >= n || !(bench ? ll_wait_bench_ok(w) : w >= LL_WAIT_SPIN && w <= LL_WAIT_BACKOFF))
            return 0;
    }
    return 1;
}

/* One failed attempt's wait, per enum ll_wait_policy.  `spins` counts the
 * attempts of the current wait (reset it to 0 when the wait ends). */

static inline void ll_wait_once(int policy, unsigned *spins)
{
    if (policy == LL_WAIT_SLEEP) {
        /* Asks for 1 us; the kernel's timer slack (~50 us by default on
         * Linux) decides what it really is: the cost the course shows. */
        ll_sleep_ns(1000);
        return;
    }
    if (policy == LL_WAIT_YIELD || (policy == LL_WAIT_SPIN_YIELD && ++*spins > 100)) {
        sched_yield();
        return;
    }
    if (policy == LL_WAIT_BACKOFF) {
        /* Each look at an empty ring reads the line the other side is about
         * to write, and its next write must then take the line back (one
         * core-to-core transfer).  Looking less often as the wait grows lets
         * a producer publish a run of records per transfer; the price is up
         * to 64 pauses of extra wake-up delay.  *spins counts the attempts of
         * this wait; the caller resets it. */
        unsigned n = 1u << (*spins < 6 ? *spins : 6);
        if (*spins < 6)
            ++*spins;
        for (unsigned i = 0; i < n; i++)
            ll_cpu_relax();
        return;
    }
    ll_cpu_relax();
}

/* Two threads started together: each pins itself (if asked), checks in,
 * and waits for the gate; the caller opens it and notes the start time. */
struct ll_duo {
    atomic_int ready;
    atomic_int go; /* 1: start, -1: abandon (the partner thread never came) */
    uint64_t t_start;
};

/* Returns 1 when the run starts, 0 when it is abandoned. */
static inline int ll_duo_arrive(struct ll_duo *d)
{
    /* release/acquire: the thread's setup happens before the opener's start
     * stamp; the opener's writes happen before the thread's work. */
    atomic_fetch_add_explicit(&d->ready, 1, memory_order_release);
    int go;
    while ((go = atomic_load_explicit(&d->go, memory_order_acquire)) == 0)
        sched_yield(); /* yield: the gate may be shared with the opener's CPU */
    return go > 0;
}

static inline void ll_duo_open(struct ll_duo *d, int threads)
{
    while (atomic_load_explicit(&d->ready, memory_order_acquire) < threads)
        sched_yield();
    d->t_start = ll_now_ns();
    atomic_store_explicit(&d->go, 1, memory_order_release); /* publish t_start and the setup */
}

/* ll_pin_self's status, or 1 when no pinning was asked (cpu < 0). */
static inline int ll_pin_if(int cpu) { return cpu >= 0 ? ll_pin_self(cpu) : 1; }

/* Runs fa(a) and fb(b) on two new threads behind the gate `d`; returns when
 * both have ended.  LL_OK or LL_ESYS (a thread could not be created). */
static inline int ll_run_pair(void *(*fa)(void *), void *a, void *(*fb)(void *), void *b, struct ll_duo *d)
{
    pthread_t ta, tb;
    if (pthread_create(&ta, NULL, fa, a) != 0)
        return LL_ESYS;
    if (pthread_create(&tb, NULL, fb, b) != 0) {
        /* Its partner never comes: tell the first thread to return at once. */
        atomic_store_explicit(&d->go, -1, memory_order_release);
        pthread_join(ta, NULL);
        return LL_ESYS;
    }
    ll_duo_open(d, 2);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    return LL_OK;
}

#endif
