/* bench_alloc.c - malloc/free against the pool, and first-touch page faults
 * (see bench_alloc.h).  Each loop is set up (memory allocated, random
 * choices drawn) before its clock starts, so what is timed is only the
 * operation under study. */
#define _GNU_SOURCE
#include "bench_alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "hist_inline.h"
#include "ll_arch.h"
#include "ll_util.h"
#include "pool_inline.h"
#include "stop.h"

/* The stop flag (stop.h) is polled every POLL operations or pages; a
 * stopped measurement returns LL_STOPPED with its results over the work
 * done (ops and pages say how much). */
enum { POLL = 4096 };
#define LL_STOP_POLL(count) ((count) % POLL == 0 && ll_stop_requested())

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
    uint64_t failed = 0, done;
    uint64_t t0 = ll_now_ns();
    /* In chunks of POLL ops, the stop polled between them: the timed loop
     * itself stays exactly the operation under study. */
    for (done = 0; done < cfg->ops && !ll_stop_requested();) {
        uint64_t end = cfg->ops - done < POLL ? cfg->ops : done + POLL;
        for (; done < end; done++)
            failed += (uint64_t)do_op(ws, &ops[done], pool);
    }
    uint64_t t1 = ll_now_ns();
    out->mean_ns = done ? (double)(t1 - t0) / (double)done : 0.0;
    out->ops = done;
    int stopped = done < cfg->ops;

    /* Pass 2: every op stamped with the TSC, for the tails (skipped after a stop). */
    if (per_op_ns && !stopped) {
        double tpn = ll_tsc_ticks_per_ns();
        if (tpn <= 0.0) {
            for (uint64_t i = 0; i < cfg->ops; i++) {
                if (LL_STOP_POLL(i + 1)) {
                    stopped = 1;
                    break;
                }
                uint64_t a = ll_now_ns();
                failed += (uint64_t)do_op(ws, &ops[i], pool);
                ll_hist_record_n_inline(per_op_ns, ll_now_ns() - a, 1);
            }
        } else {
            for (uint64_t i = 0; i < cfg->ops; i++) {
                if (LL_STOP_POLL(i + 1)) {
                    stopped = 1;
                    break;
                }
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
    return stopped ? LL_STOPPED : LL_OK;
}

/* ---- page faults ------------------------------------------------------------ */

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
    uint64_t t0 = ll_now_ns(), done;
    for (done = 0; done < pages; done++) {
        if (LL_STOP_POLL(done + 1))
            break;
        m[done * page] = 1;
    }
    uint64_t t1 = ll_now_ns();
    uint64_t f1 = minor_faults();
    for (uint64_t i = 0; i < done; i++)
        m[i * page] = 2;
    uint64_t t2 = ll_now_ns();
    uint64_t f2 = minor_faults();
    out->pages = done;
    out->page_size = page;
    out->first_touch_ns = done ? (double)(t1 - t0) / (double)done : 0.0;
    out->prefaulted_ns = done ? (double)(t2 - t1) / (double)done : 0.0;
    out->minor_faults = f1 - f0;
    out->second_faults = f2 - f1;
    munmap(m, bytes);
    return done < pages ? LL_STOPPED : LL_OK;
}
