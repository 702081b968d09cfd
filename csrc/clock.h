/* clock.h - time in nanoseconds: the OS monotonic clock and the CPU's
 * timestamp counter (TSC on x86-64, the generic timer cntvct_el0 on ARM64). */
#ifndef LL_CLOCK_H
#define LL_CLOCK_H

#include <stdint.h>

/* The OS monotonic clock in ns (never goes back; what every interval should
 * use): CLOCK_MONOTONIC, except on macOS, where CLOCK_MONOTONIC steps in
 * microseconds and CLOCK_UPTIME_RAW (mach_absolute_time's clock, Python's
 * time.monotonic there) is used instead. */
uint64_t ll_now_ns(void);
/* CLOCK_MONOTONIC_COARSE where it exists (cheap, ~1-4 ms resolution); else
 * the same as ll_now_ns. */
uint64_t ll_now_coarse_ns(void);

/* Sleeps at least `ns` (nanosleep; the kernel's timer slack decides how much
 * longer).  Out of line so the headers that wait need no feature macros. */
void ll_sleep_ns(uint64_t ns);

/* 1 when this CPU has a user-readable counter that ticks at a constant rate:
 * on x86 CPUID must report an invariant TSC (leaf 0x80000007, EDX bit 8);
 * the ARM64 generic timer always does.  0 otherwise: every stamp then comes
 * from ll_now_ns.  Decided once per process.  For tests, the environment
 * variable LOWLAT_CPUID_HIDE ("rdtscp", "invtsc" or both, comma-separated)
 * makes the x86 check behave as if CPUID lacked those features. */
int ll_tsc_available(void);
/* What stamps the timed loops and why, one sentence (a static string): the
 * counter and its ordered read (rdtscp, or lfence+rdtsc where CPUID has no
 * RDTSCP), or the monotonic clock and the reason. */
const char *ll_tsc_choice(void);
/* Raw counter reads (ticks, not ns).  0 when unavailable. */
uint64_t ll_tsc_read(void);
uint64_t ll_tsc_read_ordered(void);
/* Ticks per ns, calibrated once against ll_now_ns (about 20 ms, on the
 * first call, thread-safe).  0.0 when there is no counter. */
double ll_tsc_ticks_per_ns(void);
/* Converts a tick difference to ns with that calibration. */
uint64_t ll_tsc_to_ns(uint64_t ticks);

/* Which counter the core uses (ll_clock_info.tsc_kind). */
enum ll_tsc_kind {
    LL_TSC_NONE = 0,        /* no user-readable counter on this architecture */
    LL_TSC_X86_RDTSCP = 1,  /* x86 TSC, ordered reads by rdtscp */
    LL_TSC_ARM64 = 2,       /* ARM64 generic timer, cntvct_el0 */
    LL_TSC_X86_LFENCE = 3,  /* x86 TSC, no RDTSCP in CPUID: ordered reads by lfence+rdtsc */
    LL_TSC_X86_VARIABLE = 4 /* x86 TSC without the invariant-TSC bit: not used, monotonic clock instead */
};

/* What a read of each clock costs here, measured by timing `iterations`
 * back-to-back reads, and the smallest step each clock shows. */
typedef struct {
    double monotonic_read_ns;
    double coarse_read_ns;
    double tsc_read_ns;             /* 0 when no counter */
    double tsc_ordered_read_ns;     /* rdtscp (lfence+rdtsc) / isb+cntvct; 0 when no counter */
    double monotonic_resolution_ns; /* smallest nonzero step seen */
    double coarse_resolution_ns;
    double monotonic_getres_ns; /* what clock_getres() claims */
    double tsc_ticks_per_ns;
    int tsc_available;
    int tsc_kind; /* enum ll_tsc_kind */
} ll_clock_info;

int ll_clock_measure(ll_clock_info *out, uint64_t iterations);

#endif
