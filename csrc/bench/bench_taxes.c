/* bench_taxes.c - the hidden taxes: mutex, system call, pointer chase,
 * histogram record (see bench_taxes.h).  Each loop is set up (memory
 * allocated, random choices drawn) before its clock starts, so what is
 * timed is only the operation under study. */
#define _GNU_SOURCE
#include "bench_taxes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "clock.h"
#include "hist_inline.h"
#include "ll_arch.h"
#include "ll_util.h"
#include "stop.h"

/* The stop flag (stop.h) is polled every POLL iterations; a stopped loop
 * returns its time per iteration over the iterations done (0 when none). */
enum { POLL = 4096 };
#define LL_STOP_POLL(count) ((count) % POLL == 0 && ll_stop_requested())

static double per_iteration(uint64_t t0, uint64_t t1, uint64_t done)
{
    return done ? (double)(t1 - t0) / (double)done : 0.0;
}

/* ---- mutex ------------------------------------------------------------------ */

struct mutex_arg {
    pthread_mutex_t *m;
    uint64_t iterations;
    int cpu;
    struct ll_duo *duo;
    volatile uint64_t *shared;
    uint64_t t_end;
    uint64_t done;
};

static void *mutex_worker(void *arg)
{
    struct mutex_arg *a = arg;
    ll_pin_if(a->cpu);
    if (!ll_duo_arrive(a->duo))
        return NULL;
    uint64_t i;
    for (i = 0; i < a->iterations; i++) {
        if (LL_STOP_POLL(i + 1))
            break;
        pthread_mutex_lock(a->m);
        (*a->shared)++;
        pthread_mutex_unlock(a->m);
    }
    a->done = i;
    a->t_end = ll_now_ns();
    return NULL;
}

double ll_bench_mutex(uint64_t iterations, int contended, int cpu_a, int cpu_b)
{
    if (iterations == 0)
        return LL_EINVAL;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    volatile uint64_t shared = 0;
    double r;
    if (!contended) {
        uint64_t t0 = ll_now_ns(), i;
        for (i = 0; i < iterations; i++) {
            if (LL_STOP_POLL(i + 1))
                break;
            pthread_mutex_lock(&m);
            shared++;
            pthread_mutex_unlock(&m);
        }
        r = per_iteration(t0, ll_now_ns(), i);
    } else {
        struct ll_duo duo;
        memset(&duo, 0, sizeof duo);
        struct mutex_arg a = {&m, iterations, cpu_a, &duo, &shared, 0, 0};
        struct mutex_arg b = {&m, iterations, cpu_b, &duo, &shared, 0, 0};
        int rc = ll_run_pair(mutex_worker, &a, mutex_worker, &b, &duo);
        uint64_t end = a.t_end > b.t_end ? a.t_end : b.t_end;
        r = rc == LL_OK ? per_iteration(duo.t_start, end, a.done > b.done ? a.done : b.done) : rc;
    }
    pthread_mutex_destroy(&m);
    return r;
}

/* ---- system call ------------------------------------------------------------ */

double ll_bench_syscall(uint64_t iterations)
{
    if (iterations == 0)
        return LL_EINVAL;
    volatile long sink = 0;
    uint64_t t0 = ll_now_ns(), i;
    for (i = 0; i < iterations; i++) {
        if (LL_STOP_POLL(i + 1))
            break;
#if defined(__linux__)
        sink += syscall(SYS_getppid); /* syscall(): no libc caching possible */
#else
        sink += getppid();
#endif
    }
    uint64_t t1 = ll_now_ns();
    (void)sink;
    return per_iteration(t0, t1, i);
}

/* ---- pointer chase ---------------------------------------------------------- */

struct chase_node {
    struct chase_node *next;
    char pad[LL_CACHELINE - sizeof(struct chase_node *)];
};

double ll_bench_chase(size_t bytes, uint64_t steps, uint64_t seed)
{
    size_t n = bytes / sizeof(struct chase_node);
    if (n < 2 || steps == 0 || n > UINT32_MAX)
        return LL_EINVAL;
    struct chase_node *nodes = aligned_alloc(LL_CACHELINE, n * sizeof *nodes);
    uint32_t *order = malloc(n * sizeof *order);
    if (!nodes || !order) {
        free(nodes);
        free(order);
        return LL_ENOMEM;
    }
    /* Sattolo's shuffle gives one cycle through all nodes, so the chase visits
     * every node before repeating and the prefetcher cannot guess the next. */
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    uint64_t s = seed;
    /* The set-up of a DRAM-sized chase takes a good part of a second: it
     * polls the stop flag too (every POLL * 16 nodes). */
    for (size_t i = n - 1; i > 0; i--) {
        if (i % (POLL * 16) == 0 && ll_stop_requested()) {
            free(nodes);
            free(order);
            return 0.0;
        }
        size_t j = (size_t)(ll_rng_next(&s) % i);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++) {
        if (i % (POLL * 16) == 0 && ll_stop_requested()) {
            free(nodes);
            free(order);
            return 0.0;
        }
        nodes[order[i]].next = &nodes[order[(i + 1) % n]];
    }
    free(order);
    struct chase_node *p = &nodes[0];
    /* Warm-up: one lap (at most 1M steps) faults pages and fills caches. */
    for (size_t i = 0; i < (n < 1000000 ? n : 1000000); i++) {
        if (LL_STOP_POLL(i + 1))
            break;
        p = p->next;
    }
    uint64_t t0 = ll_now_ns(), i;
    for (i = 0; i < steps; i++) {
        if (LL_STOP_POLL(i + 1))
            break;
        p = p->next;
    }
    uint64_t t1 = ll_now_ns();
    /* Keep the chain's end alive so the loop is not removed. */
    volatile uintptr_t sink = (uintptr_t)p;
    (void)sink;
    free(nodes);
    return per_iteration(t0, t1, i);
}

/* ---- histogram record ------------------------------------------------------- */

double ll_bench_hist_record(ll_hist *h, uint64_t n, uint64_t seed, int exported)
{
    if (!h || n == 0)
        return LL_EINVAL;
    enum { N_VALUES = 4096 };
    uint64_t values[N_VALUES];
    uint64_t s = seed;
    /* Values spread over 4 decades, like latencies: 2^(8..22) ns. */
    for (int i = 0; i < N_VALUES; i++) {
        uint64_t r = ll_rng_next(&s);
        values[i] = ((r & 0xffff) + 1) << (8 + (r >> 60) % 14) >> 8;
        if (values[i] > h->highest_trackable)
            values[i] = h->highest_trackable;
    }
    uint64_t t0 = ll_now_ns(), i;
    /* In chunks of POLL records, the stop polled between them. */
    for (i = 0; i < n && !ll_stop_requested();) {
        uint64_t end = n - i < POLL ? n : i + POLL;
        if (exported)
            for (; i < end; i++)
                ll_hist_record(h, values[i & (N_VALUES - 1)]);
        else
            for (; i < end; i++)
                ll_hist_record_n_inline(h, values[i & (N_VALUES - 1)], 1);
    }
    uint64_t t1 = ll_now_ns();
    return per_iteration(t0, t1, i);
}
