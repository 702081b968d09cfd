/* clock.c - the monotonic clock and the calibrated timestamp counter. */
#define _GNU_SOURCE
#include "clock.h"

#include <pthread.h>
#include <time.h>

#include "ll_arch.h"
#include "ll_common.h"

uint64_t ll_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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

int ll_tsc_available(void)
{
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    return 1;
#else
    return 0;
#endif
}

uint64_t ll_tsc_read(void) { return ll_tsc_now(); }
uint64_t ll_tsc_read_ordered(void) { return ll_tsc_now_ordered(); }

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
#if defined(__x86_64__) || defined(__i386__)
    out->tsc_kind = 1;
#elif defined(__aarch64__)
    out->tsc_kind = 2;
#else
    out->tsc_kind = 0;
#endif
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
        clock_getres(CLOCK_MONOTONIC, &res) == 0 ? (double)res.tv_sec * 1e9 + (double)res.tv_nsec : 0.0;
    if (out->tsc_available && out->tsc_ticks_per_ns > 0.0) {
        out->tsc_read_ns = per_read_ns(ll_tsc_read, iterations);
        out->tsc_ordered_read_ns = per_read_ns(ll_tsc_read_ordered, iterations);
    } else {
        out->tsc_read_ns = 0.0;
        out->tsc_ordered_read_ns = 0.0;
    }
    return LL_OK;
}
