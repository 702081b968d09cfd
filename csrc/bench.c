/* bench.c - the course's measurement loops.  Each loop is set up (memory
 * allocated, random choices drawn) before its clock starts, so what is
 * timed is only the operation under study. */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "affinity.h"
#include "clock.h"
#include "hist_inline.h"
#include "ll_arch.h"
#include "pool_inline.h"
#include "spsc_inline.h"
#include "ll_util.h"

/* ---- small helpers -------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- allocation ------------------------------------------------------------ */

struct ll_heap_frag {
    void **blocks;
    size_t n;
};

ll_heap_frag *ll_heap_fragment(size_t blocks, size_t min_size, size_t max_size, uint64_t seed)
{
    if (blocks == 0 || min_size == 0 || max_size < min_size)
        return NULL;
    ll_heap_frag *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->blocks = calloc(blocks, sizeof *f->blocks);
    if (!f->blocks) {
        free(f);
        return NULL;
    }
    f->n = blocks;
    uint64_t s = seed;
    for (size_t i = 0; i < blocks; i++) {
        size_t sz = min_size + (size_t)(ll_rng_next(&s) % (max_size - min_size + 1));
        f->blocks[i] = malloc(sz);
        if (f->blocks[i])
            memset(f->blocks[i], 1, sz < 64 ? sz : 64);
    }
    for (size_t i = 0; i < blocks; i++)
        if (ll_rng_next(&s) & 1) {
            free(f->blocks[i]);
            f->blocks[i] = NULL;
        }
    return f;
}

void ll_heap_fragment_release(ll_heap_frag *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        free(f->blocks[i]);
    free(f->blocks);
    free(f);
}

struct alloc_op {
    uint32_t victim; /* index into the working set */
    uint32_t size;   /* bytes to allocate */
};

/* One operation on either allocator; always_inline keeps the two loops
 * below identical apart from the allocator called. */
static inline __attribute__((always_inline)) int do_op(void **ws, const struct alloc_op *op, ll_pool *pool)
{
    void *p;
    if (pool) {
        ll_pool_free_inline(pool, ws[op->victim]);
        p = ll_pool_alloc_inline(pool);
    } else {
        free(ws[op->victim]);
        p = malloc(op->size);
    }
    ws[op->victim] = p;
    if (!p)
        return 1;
    *(volatile unsigned char *)p = (unsigned char)op->size; /* use it, as a program would */
    return 0;
}

int ll_bench_alloc(const ll_alloc_bench_cfg *cfg, ll_hist *per_op_ns, ll_alloc_bench_result *out)
{
    if (!cfg || !out || cfg->ops == 0 || cfg->live == 0 || cfg->live > UINT32_MAX || cfg->min_size == 0 ||
        cfg->max_size < cfg->min_size || cfg->max_size > UINT32_MAX)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    struct alloc_op *ops = malloc(cfg->ops * sizeof *ops);
    void **ws = calloc(cfg->live, sizeof *ws);
    ll_pool *pool = NULL;
    if (cfg->use_pool)
        pool = ll_pool_create(cfg->max_size, cfg->live, LL_POOL_CACHE_ALIGNED);
    if (!ops || !ws || (cfg->use_pool && !pool)) {
        free(ops);
        free(ws);
        ll_pool_destroy(pool);
        return LL_ENOMEM;
    }
    uint64_t s = cfg->seed;
    for (uint64_t i = 0; i < cfg->ops; i++) {
        ops[i].victim = (uint32_t)(ll_rng_next(&s) % cfg->live);
        ops[i].size = (uint32_t)(cfg->min_size + ll_rng_next(&s) % (cfg->max_size - cfg->min_size + 1));
    }
    for (size_t i = 0; i < cfg->live; i++) {
        ws[i] = pool ? ll_pool_alloc_inline(pool) : malloc(ops[i % cfg->ops].size);
        if (!ws[i]) {
            out->failed++;
        }
    }
    /* Warm-up: one untimed pass over the first ops, so both allocators start
     * from their steady state rather than from a cold free list. */
    uint64_t warm = cfg->ops < 10000 ? cfg->ops : 10000;
    for (uint64_t i = 0; i < warm; i++)
        do_op(ws, &ops[i], pool);

    /* Pass 1: the mean, with no timer inside the loop. */
    uint64_t failed = 0;
    uint64_t t0 = ll_now_ns();
    for (uint64_t i = 0; i < cfg->ops; i++)
        failed += (uint64_t)do_op(ws, &ops[i], pool);
    uint64_t t1 = ll_now_ns();
    out->mean_ns = (double)(t1 - t0) / (double)cfg->ops;
    out->ops = cfg->ops;

    /* Pass 2: every op stamped with the TSC, for the tails. */
    if (per_op_ns) {
        double tpn = ll_tsc_ticks_per_ns();
        if (tpn <= 0.0) {
            for (uint64_t i = 0; i < cfg->ops; i++) {
                uint64_t a = ll_now_ns();
                failed += (uint64_t)do_op(ws, &ops[i], pool);
                ll_hist_record_n_inline(per_op_ns, ll_now_ns() - a, 1);
            }
        } else {
            for (uint64_t i = 0; i < cfg->ops; i++) {
                uint64_t a = ll_tsc_now();
                ll_compiler_barrier();
                failed += (uint64_t)do_op(ws, &ops[i], pool);
                uint64_t b = ll_tsc_now_ordered();
                ll_hist_record_n_inline(per_op_ns, (uint64_t)((double)(b - a) / tpn), 1);
            }
        }
        /* What a stamp pair costs with nothing between: its median. */
        enum { N_OVH = 1001 };
        uint64_t ovh[N_OVH];
        for (int i = 0; i < N_OVH; i++) {
            uint64_t a = ll_tsc_now();
            ll_compiler_barrier();
            uint64_t b = ll_tsc_now_ordered();
            ovh[i] = b - a;
        }
        qsort(ovh, N_OVH, sizeof ovh[0], cmp_u64);
        out->timer_overhead_ns = tpn > 0.0 ? (double)ovh[N_OVH / 2] / tpn : 0.0;
    }
    out->failed += failed;
    for (size_t i = 0; i < cfg->live; i++) {
        if (!ws[i])
            continue;
        if (pool)
            ll_pool_free_inline(pool, ws[i]);
        else
            free(ws[i]);
    }
    ll_pool_destroy(pool);
    free(ws);
    free(ops);
    return LL_OK;
}

/* ---- SPSC throughput --------------------------------------------------------- */

struct spsc_side {
    ll_spsc *q;       /* throughput: the ring; rtt: the ring this side pushes to */
    ll_spsc *back;    /* rtt: the ring this side pops from */
    const ll_spsc_bench_cfg *cfg;
    struct ll_duo *duo;
    uint64_t *buf;    /* batch buffer (batch records), allocated by the caller */
    uint64_t waits;
    uint64_t errors;
    uint64_t t_end;
    int pinned;
    ll_hist *rtt;
    uint64_t rtt_total_ns;
};

static void *tp_producer(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->producer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0;
    unsigned spins = 0;
    if (c->batch == 0) {
        for (uint64_t i = 1; i <= c->items; i++) {
            spins = 0;
            while (!ll_spsc_try_push_u64(s->q, i)) {
                waits++;
                ll_wait_once(c->wait, &spins);
            }
        }
    } else {
        uint64_t next = 1;
        while (next <= c->items) {
            size_t n = c->items - next + 1 < c->batch ? (size_t)(c->items - next + 1) : c->batch;
            for (size_t k = 0; k < n; k++)
                s->buf[k] = next + k;
            size_t done = 0;
            spins = 0;
            while (done < n) {
                size_t m = ll_spsc_push_many_inline(s->q, s->buf + done, n - done);
                if (m == 0) {
                    waits++;
                    ll_wait_once(c->wait, &spins);
                }
                done += m;
            }
            next += n;
        }
    }
    s->waits = waits;
    return NULL;
}

static void *tp_consumer(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->consumer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0, errors = 0, expect = 1;
    unsigned spins = 0;
    if (c->batch == 0) {
        for (uint64_t i = 1; i <= c->items; i++) {
            uint64_t v;
            spins = 0;
            while (!ll_spsc_try_pop_u64(s->q, &v)) {
                waits++;
                ll_wait_once(c->wait, &spins);
            }
            errors += v != i;
        }
    } else {
        while (expect <= c->items) {
            size_t m = ll_spsc_pop_many_inline(s->q, s->buf, c->batch);
            if (m == 0) {
                waits++;
                ll_wait_once(c->wait, &spins);
                continue;
            }
            spins = 0;
            for (size_t k = 0; k < m; k++)
                errors += s->buf[k] != expect + k;
            expect += m;
        }
    }
    s->t_end = ll_now_ns();
    s->waits = waits;
    s->errors = errors;
    return NULL;
}

static int check_spsc_cfg(const ll_spsc_bench_cfg *cfg)
{
    if (!cfg || cfg->items == 0 || cfg->capacity < 2 || (cfg->capacity & (cfg->capacity - 1)) ||
        cfg->wait < LL_WAIT_SPIN || cfg->wait > LL_WAIT_SPIN_YIELD)
        return LL_EINVAL;
    return LL_OK;
}

int ll_bench_spsc_throughput(const ll_spsc_bench_cfg *cfg, ll_spsc_bench_result *out)
{
    int rc = check_spsc_cfg(cfg);
    if (rc != LL_OK || !out)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    ll_spsc *q = ll_spsc_create(cfg->capacity, sizeof(uint64_t), cfg->flags);
    struct ll_duo duo;
    memset(&duo, 0, sizeof duo);
    struct spsc_side prod, cons;
    memset(&prod, 0, sizeof prod);
    memset(&cons, 0, sizeof cons);
    prod.q = cons.q = q;
    prod.cfg = cons.cfg = cfg;
    prod.duo = cons.duo = &duo;
    if (cfg->batch) {
        prod.buf = malloc(cfg->batch * sizeof(uint64_t));
        cons.buf = malloc(cfg->batch * sizeof(uint64_t));
    }
    if (!q || (cfg->batch && (!prod.buf || !cons.buf))) {
        rc = LL_ENOMEM;
    } else {
        rc = ll_run_pair(tp_producer, &prod, tp_consumer, &cons, &duo);
    }
    if (rc == LL_OK) {
        out->seconds = (double)(cons.t_end - duo.t_start) / 1e9;
        out->items_per_s = out->seconds > 0 ? (double)cfg->items / out->seconds : 0.0;
        out->errors = cons.errors;
        out->full_waits = prod.waits;
        out->empty_waits = cons.waits;
        out->producer_pinned = prod.pinned;
        out->consumer_pinned = cons.pinned;
    }
    free(prod.buf);
    free(cons.buf);
    ll_spsc_destroy(q);
    return rc;
}

/* ---- SPSC round trip ------------------------------------------------------- */

static void *rtt_pinger(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->producer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    double tpn = ll_tsc_ticks_per_ns();
    uint64_t waits = 0, errors = 0;
    uint64_t t0 = ll_now_ns();
    for (uint64_t i = 1; i <= c->items; i++) {
        uint64_t a = tpn > 0.0 ? ll_tsc_now() : ll_now_ns();
        unsigned spins = 0;
        while (!ll_spsc_try_push_u64(s->q, i)) {
            waits++;
            ll_wait_once(c->wait, &spins);
        }
        uint64_t v;
        spins = 0;
        while (!ll_spsc_try_pop_u64(s->back, &v)) {
            waits++;
            ll_wait_once(c->wait, &spins);
        }
        uint64_t b = tpn > 0.0 ? ll_tsc_now_ordered() : ll_now_ns();
        errors += v != i;
        if (s->rtt)
            ll_hist_record_n_inline(s->rtt, tpn > 0.0 ? (uint64_t)((double)(b - a) / tpn) : b - a, 1);
    }
    s->rtt_total_ns = ll_now_ns() - t0;
    s->waits = waits;
    s->errors = errors;
    return NULL;
}

static void *rtt_ponger(void *arg)
{
    struct spsc_side *s = arg;
    const ll_spsc_bench_cfg *c = s->cfg;
    s->pinned = ll_pin_if(c->consumer_cpu);
    if (!ll_duo_arrive(s->duo))
        return NULL;
    uint64_t waits = 0;
    for (uint64_t i = 1; i <= c->items; i++) {
        uint64_t v;
        unsigned spins = 0;
        while (!ll_spsc_try_pop_u64(s->back, &v)) {
            waits++;
            ll_wait_once(c->wait, &spins);
        }
        spins = 0;
        while (!ll_spsc_try_push_u64(s->q, v)) {
            waits++;
            ll_wait_once(c->wait, &spins);
        }
    }
    s->waits = waits;
    return NULL;
}

int ll_bench_spsc_rtt(const ll_spsc_bench_cfg *cfg, ll_hist *rtt_ns, ll_spsc_bench_result *out)
{
    int rc = check_spsc_cfg(cfg);
    if (rc != LL_OK || !out)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    ll_spsc *there = ll_spsc_create(cfg->capacity, sizeof(uint64_t), cfg->flags);
    ll_spsc *back = ll_spsc_create(cfg->capacity, sizeof(uint64_t), cfg->flags);
    struct ll_duo duo;
    memset(&duo, 0, sizeof duo);
    struct spsc_side ping, pong;
    memset(&ping, 0, sizeof ping);
    memset(&pong, 0, sizeof pong);
    ping.q = there;
    ping.back = back;
    pong.q = back;
    pong.back = there;
    ping.cfg = pong.cfg = cfg;
    ping.duo = pong.duo = &duo;
    ping.rtt = rtt_ns;
    if (!there || !back)
        rc = LL_ENOMEM;
    else
        rc = ll_run_pair(rtt_pinger, &ping, rtt_ponger, &pong, &duo);
    if (rc == LL_OK) {
        out->seconds = (double)ping.rtt_total_ns / 1e9;
        out->items_per_s = out->seconds > 0 ? (double)cfg->items / out->seconds : 0.0;
        out->mean_rtt_ns = (double)ping.rtt_total_ns / (double)cfg->items;
        out->errors = ping.errors;
        out->full_waits = ping.waits;
        out->empty_waits = pong.waits;
        out->producer_pinned = ping.pinned;
        out->consumer_pinned = pong.pinned;
    }
    ll_spsc_destroy(there);
    ll_spsc_destroy(back);
    return rc;
}

/* ---- core to core -------------------------------------------------------- */

struct c2c {
    /* The bounced line: nothing else lives on it. */
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t flag;
    alignas(LL_FALSE_SHARING_RANGE) uint64_t round_trips;
    int cpu_a, cpu_b, wait;
    struct ll_duo duo;
    uint64_t t_end;
};

static void *c2c_a(void *arg)
{
    struct c2c *c = arg;
    ll_pin_if(c->cpu_a);
    if (!ll_duo_arrive(&c->duo))
        return NULL;
    unsigned spins = 0;
    for (uint64_t i = 0; i < c->round_trips; i++) {
        /* release/acquire: a plain hand-off; the order does not change the
         * cost on x86 and keeps the hand-off correct everywhere. */
        atomic_store_explicit(&c->flag, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&c->flag, memory_order_acquire) != 2 * i + 2)
            ll_wait_once(c->wait, &spins);
    }
    c->t_end = ll_now_ns();
    return NULL;
}

static void *c2c_b(void *arg)
{
    struct c2c *c = arg;
    ll_pin_if(c->cpu_b);
    if (!ll_duo_arrive(&c->duo))
        return NULL;
    unsigned spins = 0;
    for (uint64_t i = 0; i < c->round_trips; i++) {
        while (atomic_load_explicit(&c->flag, memory_order_acquire) != 2 * i + 1)
            ll_wait_once(c->wait, &spins);
        atomic_store_explicit(&c->flag, 2 * i + 2, memory_order_release); /* answer */
    }
    return NULL;
}

double ll_bench_c2c(uint64_t round_trips, int cpu_a, int cpu_b, int wait)
{
    if (round_trips == 0 || wait < LL_WAIT_SPIN || wait > LL_WAIT_SPIN_YIELD)
        return LL_EINVAL;
    struct c2c *c = aligned_alloc(LL_FALSE_SHARING_RANGE, (sizeof *c + LL_FALSE_SHARING_RANGE - 1) /
                                                              LL_FALSE_SHARING_RANGE * LL_FALSE_SHARING_RANGE);
    if (!c)
        return LL_ENOMEM;
    memset(c, 0, sizeof *c);
    atomic_init(&c->flag, 0);
    c->round_trips = round_trips;
    c->cpu_a = cpu_a;
    c->cpu_b = cpu_b;
    c->wait = wait;
    int rc = ll_run_pair(c2c_a, c, c2c_b, c, &c->duo);
    double r = rc == LL_OK ? (double)(c->t_end - c->duo.t_start) / (2.0 * (double)round_trips) : rc;
    free(c);
    return r;
}

/* ---- hidden taxes ---------------------------------------------------------- */

struct mutex_arg {
    pthread_mutex_t *m;
    uint64_t iterations;
    int cpu;
    struct ll_duo *duo;
    volatile uint64_t *shared;
    uint64_t t_end;
};

static void *mutex_worker(void *arg)
{
    struct mutex_arg *a = arg;
    ll_pin_if(a->cpu);
    if (!ll_duo_arrive(a->duo))
        return NULL;
    for (uint64_t i = 0; i < a->iterations; i++) {
        pthread_mutex_lock(a->m);
        (*a->shared)++;
        pthread_mutex_unlock(a->m);
    }
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
        uint64_t t0 = ll_now_ns();
        for (uint64_t i = 0; i < iterations; i++) {
            pthread_mutex_lock(&m);
            shared++;
            pthread_mutex_unlock(&m);
        }
        r = (double)(ll_now_ns() - t0) / (double)iterations;
    } else {
        struct ll_duo duo;
        memset(&duo, 0, sizeof duo);
        struct mutex_arg a = {&m, iterations, cpu_a, &duo, &shared, 0};
        struct mutex_arg b = {&m, iterations, cpu_b, &duo, &shared, 0};
        int rc = ll_run_pair(mutex_worker, &a, mutex_worker, &b, &duo);
        uint64_t end = a.t_end > b.t_end ? a.t_end : b.t_end;
        r = rc == LL_OK ? (double)(end - duo.t_start) / (double)iterations : rc;
    }
    pthread_mutex_destroy(&m);
    return r;
}

double ll_bench_syscall(uint64_t iterations)
{
    if (iterations == 0)
        return LL_EINVAL;
    volatile long sink = 0;
    uint64_t t0 = ll_now_ns();
    for (uint64_t i = 0; i < iterations; i++) {
#if defined(__linux__)
        sink += syscall(SYS_getppid); /* syscall(): no libc caching possible */
#else
        sink += getppid();
#endif
    }
    uint64_t t1 = ll_now_ns();
    (void)sink;
    return (double)(t1 - t0) / (double)iterations;
}

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
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(ll_rng_next(&s) % i);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        nodes[order[i]].next = &nodes[order[(i + 1) % n]];
    free(order);
    struct chase_node *p = &nodes[0];
    /* Warm-up: one lap (at most 1M steps) faults pages and fills caches. */
    for (size_t i = 0; i < (n < 1000000 ? n : 1000000); i++)
        p = p->next;
    uint64_t t0 = ll_now_ns();
    for (uint64_t i = 0; i < steps; i++)
        p = p->next;
    uint64_t t1 = ll_now_ns();
    /* Keep the chain's end alive so the loop is not removed. */
    volatile uintptr_t sink = (uintptr_t)p;
    (void)sink;
    free(nodes);
    return (double)(t1 - t0) / (double)steps;
}

static uint64_t minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt;
}

int ll_bench_page_faults(uint64_t pages, ll_fault_result *out)
{
    if (pages == 0 || !out)
        return LL_EINVAL;
    long ps = sysconf(_SC_PAGESIZE);
    size_t page = ps > 0 ? (size_t)ps : 4096;
    size_t bytes = (size_t)pages * page;
    unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return LL_ENOMEM;
#if defined(MADV_NOHUGEPAGE)
    /* One 2 MiB huge page would replace 512 faults by one: ask for small
     * pages so each touch below is one fault. */
    madvise(m, bytes, MADV_NOHUGEPAGE);
#endif
    uint64_t f0 = minor_faults();
    uint64_t t0 = ll_now_ns();
    for (size_t i = 0; i < bytes; i += page)
        m[i] = 1;
    uint64_t t1 = ll_now_ns();
    uint64_t f1 = minor_faults();
    for (size_t i = 0; i < bytes; i += page)
        m[i] = 2;
    uint64_t t2 = ll_now_ns();
    out->pages = pages;
    out->page_size = page;
    out->first_touch_ns = (double)(t1 - t0) / (double)pages;
    out->prefaulted_ns = (double)(t2 - t1) / (double)pages;
    out->minor_faults = f1 - f0;
    munmap(m, bytes);
    return LL_OK;
}

double ll_bench_hist_record(ll_hist *h, uint64_t n, uint64_t seed)
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
    uint64_t t0 = ll_now_ns();
    for (uint64_t i = 0; i < n; i++)
        ll_hist_record_n_inline(h, values[i & (N_VALUES - 1)], 1);
    uint64_t t1 = ll_now_ns();
    return (double)(t1 - t0) / (double)n;
}
