/* ll_wait.h - how a thread waits when its ring is full or empty: the wait
 * policies shared by the benchmark loops (csrc/bench/) and the pipeline
 * (pipeline.c).  Fed to cffi, so Python reads the names and values from here
 * (lowlat.core.wait); declarations only.  The wait itself is ll_wait_once in
 * ll_util.h. */
#ifndef LL_WAIT_H
#define LL_WAIT_H

enum ll_wait_policy {
    LL_WAIT_SPIN = 0,       /* busy-wait with the CPU's pause hint */
    LL_WAIT_YIELD = 1,      /* sched_yield() on every failed attempt */
    LL_WAIT_SPIN_YIELD = 2, /* spin 100 times, then yield */
    LL_WAIT_SLEEP = 3,      /* nanosleep(1 us) (the pipeline only; the bench loops refuse it) */
    LL_WAIT_BACKOFF = 4     /* spin, doubling the pauses after each failed attempt (1, 2, 4 ... 64) */
};

#endif
