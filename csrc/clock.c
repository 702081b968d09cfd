/* clock.c - the monotonic clock and the calibrated timestamp counter. */
#define _GNU_SOURCE
#include "clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "ll_arch.h"
#include "ll_common.h"

/* macOS's CLOCK_MONOTONIC has microsecond granularity; CLOCK_UPTIME_RAW
 * counts in ns (it does not advance while the machine sleeps: irrelevant
 * for intervals). */
#if defined(__APPLE__) && defined(CLOCK_UPTIME_RAW)
#define LL_MONOTONIC CLOCK_UPTIME_RAW
#else
#define LL_MONOTONIC CLOCK_MONOTONIC
#endif

uint64_t ll_now_ns(void)
{
    struct timespec ts;
    clock_gettime(LL_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ll_now_coarse_ns(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
    return ll_now_ns();
#endif
}

void ll_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

/* ---- which counter: decided once, from CPUID on x86 ------------------------ */

#if defined(__x86_64__) || defined(__i386__)
atomic_int ll_tsc_has_rdtscp; /* read by ll_tsc_now_ordered (ll_arch.h) */
#endif

static int g_kind = LL_TSC_NONE;
static const char *g_choice = "";
static pthread_once_t g_detect_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    int rdtscp = __get_cpuid(0x80000001u, &a, &b, &c, &d) && ((d >> 27) & 1u);
    int invariant = __get_cpuid(0x80000007u, &a, &b, &c, &d) && ((d >> 8) & 1u);
    const char *hide = getenv("LOWLAT_CPUID_HIDE"); /* the tests' way to see the fallbacks */
    int forced = 0;
    if (hide && strstr(hide, "rdtscp") && rdtscp) {
        rdtscp = 0;
        forced = 1;
    }
    if (hide && strstr(hide, "invtsc") && invariant) {
        invariant = 0;
        forced = 1;
    }
    atomic_store_explicit(&ll_tsc_has_rdtscp, rdtscp, memory_order_relaxed);
    if (!invariant) {
        g_kind = LL_TSC_X86_VARIABLE;
        g_choice = forced ? "monotonic clock: the TSC is not invariant (CPUID bit hidden by LOWLAT_CPUID_HIDE)"
                          : "monotonic clock: CPUID does not report an invariant TSC, so its rate may change";
    } else if (rdtscp) {
        g_kind = LL_TSC_X86_RDTSCP;
        g_choice = "x86 TSC (invariant), ordered reads by rdtscp";
    } else {
        g_kind = LL_TSC_X86_LFENCE;
        g_choice = forced ? "x86 TSC (invariant), ordered reads by lfence+rdtsc (RDTSCP hidden by LOWLAT_CPUID_HIDE)"
                          : "x86 TSC (invariant), ordered reads by lfence+rdtsc: CPUID has no RDTSCP";
    }
#elif defined(__aarch64__)
    g_kind = LL_TSC_ARM64;
    g_choice = "ARM64 generic timer (cntvct_el0, constant rate), ordered reads by isb";
#else
    g_kind = LL_TSC_NONE;
    g_choice = "monotonic clock: no user-readable counter on this architecture";
#endif
}

int ll_tsc_available(void)
{
    pthread_once(&g_detect_once, detect);
    return g_kind == LL_TSC_X86_RDTSCP || g_kind == LL_TSC_X86_LFENCE || g_kind == LL_TSC_ARM64;
}

const char *ll_tsc_choice(void)
{
    pthread_once(&g_detect_once, detect);
    return g_choice;
}

/* The raw reads, for timing them (ll_clock_measure); callers check
 * ll_tsc_available first. */
static uint64_t raw_read(void) { return ll_tsc_now(); }
static uint64_t raw_read_ordered(void) { return ll_tsc_now_ordered(); }

uint64_t ll_tsc_read(void) { return ll_tsc_available() ? ll_tsc_now() : 0; }
uint64_t ll_tsc_read_ordered(void) { return ll_tsc_available() ? ll_tsc_now_ordered() : 0; }

static double g_ticks_per_ns;
static pthread_once_t g_calibrate_once = PTHREAD_ONCE_INIT;

static void calibrate(void)
{
    if (!ll_tsc_available()) {
        g_ticks_per_ns = 0.0;
        return;
    }
#if defined(__aarch64__)
    /* The generic timer publishes its own frequency: no guessing needed. */
    uint64_t freq;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(freq));
    if (freq) {
        g_ticks_per_ns = (double)freq / 1e9;
        return;
    }
#endif
    /* Spin ~20 ms between two paired (clock, counter) reads.  Pairing each
     * clock read tightly with a counter read keeps the error below 1e-5. */
    uint64_t c0 = ll_tsc_now_ordered(), t0 = ll_now_ns();
    uint64_t t1;
    do {
        t1 = ll_now_ns();
    } while (t1 - t0 < 20000000u);
    uint64_t c1 = ll_tsc_now_ordered();
    g_ticks_per_ns = (double)(c1 - c0) / (double)(t1 - t0);
}

double ll_tsc_ticks_per_ns(void)
{
    pthread_once(&g_calibrate_once, calibrate);
    return g_ticks_per_ns;
}

uint64_t ll_tsc_to_ns(uint64_t ticks)
{
    double r = ll_tsc_ticks_per_ns();
    return r > 0.0 ? (uint64_t)((double)ticks / r) : 0;
}

/* Smallest nonzero difference between consecutive reads of a clock. */
static double min_step(uint64_t (*read)(void), uint64_t iterations)
{
    uint64_t best = UINT64_MAX;
    uint64_t prev = read();
    for (uint64_t i = 0; i < iterations; i++) {
        uint64_t now = read();
        if (now != prev && now - prev < best)
            best = now - prev;
        prev = now;
    }
    return best == UINT64_MAX ? 0.0 : (double)best;
}

/* Cost per read: time `iterations` reads whose results are summed (so the
 * compiler cannot drop them) with one pair of monotonic stamps around all. */
static double per_read_ns(uint64_t (*read)(void), uint64_t iterations)
{
    volatile uint64_t sink = 0;
    uint64_t acc = 0;
    uint64_t t0 = ll_now_ns();
    for (uint64_t i = 0; i < iterations; i++)
        acc += read();
    uint64_t t1 = ll_now_ns();
    sink = acc;
    (void)sink;
    return (double)(t1 - t0) / (double)iterations;
}

int ll_clock_measure(ll_clock_info *out, uint64_t iterations)
{
    if (!out || iterations == 0)
        return LL_EINVAL;
    out->tsc_available = ll_tsc_available();
    out->tsc_kind = g_kind; /* set by the detection ll_tsc_available ran */
    out->tsc_ticks_per_ns = ll_tsc_ticks_per_ns();
    out->monotonic_read_ns = per_read_ns(ll_now_ns, iterations);
    out->coarse_read_ns = per_read_ns(ll_now_coarse_ns, iterations);
    out->monotonic_resolution_ns = min_step(ll_now_ns, iterations);
    out->coarse_resolution_ns = 0.0;
    {
        /* The coarse clock steps once per kernel tick: watch for a few. */
        uint64_t prev = ll_now_coarse_ns(), best = UINT64_MAX, seen = 0;
        uint64_t deadline = ll_now_ns() + 50000000u;
        while (seen < 3 && ll_now_ns() < deadline) {
            uint64_t now = ll_now_coarse_ns();
            if (now != prev) {
                if (now - prev < best)
                    best = now - prev;
                seen++;
                prev = now;
            }
        }
        out->coarse_resolution_ns = best == UINT64_MAX ? 0.0 : (double)best;
    }
    struct timespec res;
    out->monotonic_getres_ns =
        clock_getres(LL_MONOTONIC, &res) == 0 ? (double)res.tv_sec * 1e9 + (double)res.tv_nsec : 0.0;
    if (out->tsc_available && out->tsc_ticks_per_ns > 0.0) {
        out->tsc_read_ns = per_read_ns(raw_read, iterations);
        out->tsc_ordered_read_ns = per_read_ns(raw_read_ordered, iterations);
    } else {
        out->tsc_read_ns = 0.0;
        out->tsc_ordered_read_ns = 0.0;
    }
    return LL_OK;
}
