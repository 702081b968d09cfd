/* ll_stamp.h - internal: the time stamps of the pipeline and its floor.
 * The timestamp counter where it ticks at a constant rate (ll_tsc_available:
 * ~12 ns a read on a 2-vCPU x86 VM) or else the monotonic clock (~25-35 ns
 * through the vDSO).  Stamps stay in counter ticks on the hot path and are
 * converted to ns once per value, off it: a multiply, not a clock read. */
#ifndef LL_STAMP_H
#define LL_STAMP_H

#include <stdint.h>

#include "clock.h"
#include "ll_arch.h"

struct ll_stamp {
    int tsc;            /* 1: counter ticks; 0: monotonic ns */
    double ns_per_tick; /* 1.0 for the monotonic clock */
    uint64_t t0;        /* a stamp and ... */
    uint64_t t0_ns;     /* ... the monotonic time taken with it */
};

/* want_tsc = 0 forces the monotonic clock. */
static inline void ll_stamp_init(struct ll_stamp *s, int want_tsc)
{
    double tpn = want_tsc ? ll_tsc_ticks_per_ns() : 0.0;
    s->tsc = tpn > 0.0;
    s->ns_per_tick = s->tsc ? 1.0 / tpn : 1.0;
    s->t0_ns = ll_now_ns();
    s->t0 = s->tsc ? ll_tsc_now() : s->t0_ns;
}

/* Unordered: for the producer's pacing and send stamps, taken before the
 * store that publishes the tick (a store becomes visible only after the
 * read before it has executed), so the cheap read is exact enough there. */
static inline uint64_t ll_stamp_now(const struct ll_stamp *s) { return s->tsc ? ll_tsc_now() : ll_now_ns(); }

/* Ordered: for stamps taken after a tick was seen.  An unordered counter
 * read may execute before the load that found the tick has completed, and
 * so stamp a time before the tick arrived; the ordered read waits for every
 * earlier instruction (rdtscp, or lfence + rdtsc; isb on arm64), as the
 * vDSO's clock_gettime does. */
static inline uint64_t ll_stamp_after(const struct ll_stamp *s) { return s->tsc ? ll_tsc_now_ordered() : ll_now_ns(); }

/* A duration between two stamps, in ns. */
static inline uint64_t ll_stamp_span_ns(const struct ll_stamp *s, uint64_t d)
{
    return s->tsc ? (uint64_t)((double)d * s->ns_per_tick) : d;
}

/* A stamp as monotonic ns (the clock of ll_now_ns). */
static inline uint64_t ll_stamp_ns(const struct ll_stamp *s, uint64_t t)
{
    if (!s->tsc)
        return t;
    return t >= s->t0 ? s->t0_ns + ll_stamp_span_ns(s, t - s->t0) : s->t0_ns - ll_stamp_span_ns(s, s->t0 - t);
}

/* ns as a number of stamp units (for a schedule's interval). */
static inline double ll_stamp_units(const struct ll_stamp *s, double ns) { return ns / s->ns_per_tick; }

#endif
