/* clock.h - time in nanoseconds: the OS monotonic clock and the CPU's
 * timestamp counter (TSC on x86-64, the generic timer cntvct_el0 on ARM64). */
#ifndef LL_CLOCK_H
#define LL_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns (never goes back; what every interval should use). */
uint64_t ll_now_ns(void);
/* CLOCK_MONOTONIC_COARSE where it exists (cheap, ~1-4 ms resolution); else
 * the same as ll_now_ns. */
uint64_t ll_now_coarse_ns(void);

/* 1 when this CPU has a user-readable counter that ticks at a constant rate. */
int ll_tsc_available(void);
/* Raw counter reads (ticks, not ns).  0 when unavailable. */
uint64_t ll_tsc_read(void);
uint64_t ll_tsc_read_ordered(void);
/* Ticks per ns, calibrated once against CLOCK_MONOTONIC (about 20 ms, on the
 * first call, thread-safe).  0.0 when there is no counter. */
double ll_tsc_ticks_per_ns(void);
/* Converts a tick difference to ns with that calibration. */
uint64_t ll_tsc_to_ns(uint64_t ticks);

/* What a read of each clock costs here, measured by timing `iterations`
 * back-to-back reads, and the smallest step each clock shows. */
typedef struct {
    double monotonic_read_ns;
    double coarse_read_ns;
    double tsc_read_ns;             /* 0 when no counter */
    double tsc_ordered_read_ns;     /* rdtscp / isb+cntvct; 0 when no counter */
    double monotonic_resolution_ns; /* smallest nonzero step seen */
    double coarse_resolution_ns;
    double monotonic_getres_ns; /* what clock_getres() claims */
    double tsc_ticks_per_ns;
    int tsc_available;
    int tsc_kind; /* 0 none, 1 x86 rdtsc, 2 arm64 cntvct_el0 */
} ll_clock_info;

int ll_clock_measure(ll_clock_info *out, uint64_t iterations);

#endif
