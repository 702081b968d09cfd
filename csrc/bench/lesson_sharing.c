/* lesson_sharing.c - two counters in one line vs apart (see lesson_sharing.h). */
#define _GNU_SOURCE
#include "lesson_sharing.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "clock.h"
#include "ll_arch.h"
#include "ll_common.h"
#include "ll_util.h"

struct side {
    void *counter;              /* this thread's counter: _Atomic uint64_t or volatile uint64_t, by form */
    _Atomic uint64_t *progress; /* chunks this thread has finished, on a line of its own */
    double *chunk_ns;           /* ns per increment of each chunk */
    int cpu, pinned, ran;
    uint64_t t_end;
};

struct sharing {
    struct ll_duo duo;
    uint64_t increments, chunks;
    int form;
    struct side side[2];
};

/* One loop per form: `n` increments (the store form: of a counter at `from`). */
static void add_atomic(_Atomic uint64_t *c, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed); /* relaxed: the counter publishes nothing */
}

static void add_volatile(volatile uint64_t *c, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        (*c)++; /* a plain load and store each time; no other thread touches this counter */
}

static void store_relaxed(_Atomic uint64_t *c, uint64_t from, uint64_t n)
{
    for (uint64_t i = from + 1; i <= from + n; i++)
        atomic_store_explicit(c, i, memory_order_relaxed); /* relaxed: the point: nothing waits for the store */
}

/* The threads go in step: a thread starts its chunk k only once the other
 * has finished k chunks, so the chunks run side by side whenever both
 * threads are on a CPU, and a thread the scheduler took away (a busy
 * machine) costs the other at most one chunk alone.  Only the increments
 * are timed, never the wait. */
static void run_chunks(struct sharing *s, struct side *me, const struct side *other)
{
    for (uint64_t k = 0; k < s->chunks; k++) {
        uint64_t n = k + 1 < s->chunks ? LL_SHARE_CHUNK : s->increments - k * LL_SHARE_CHUNK;
        unsigned spins = 0;
        /* relaxed: a pacing signal, it guards no data */
        while (atomic_load_explicit(other->progress, memory_order_relaxed) < k)
            ll_wait_once(LL_WAIT_SPIN_YIELD, &spins); /* yields after a while: one CPU, or a busy one */
        uint64_t t0 = ll_now_ns();
        if (s->form == LL_SHARE_ATOMIC_ADD)
            add_atomic(me->counter, n);
        else if (s->form == LL_SHARE_VOLATILE_INC)
            add_volatile(me->counter, n);
        else
            store_relaxed(me->counter, k * LL_SHARE_CHUNK, n);
        uint64_t t1 = ll_now_ns();
        me->chunk_ns[k] = (double)(t1 - t0) / (double)n;
        atomic_store_explicit(me->progress, k + 1, memory_order_relaxed); /* relaxed: as above */
    }
}

static void *run_side(struct sharing *s, struct side *me, const struct side *other)
{
    me->pinned = ll_pin_if(me->cpu);
    if (!ll_duo_arrive(&s->duo))
        return NULL;
    run_chunks(s, me, other);
    me->t_end = ll_now_ns();
    me->ran = ll_current_cpu();
    return NULL;
}

static void *side_a(void *arg)
{
    struct sharing *s = arg;
    return run_side(s, &s->side[0], &s->side[1]);
}

static void *side_b(void *arg)
{
    struct sharing *s = arg;
    return run_side(s, &s->side[1], &s->side[0]);
}

static uint64_t value(int form, void *counter)
{
    if (form == LL_SHARE_VOLATILE_INC)
        return *(volatile uint64_t *)counter;
    return atomic_load_explicit((_Atomic uint64_t *)counter, memory_order_relaxed); /* relaxed: after the join */
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the `n` values of `xs` (sorted in place). */
static double median(double *xs, size_t n)
{
    qsort(xs, n, sizeof *xs, by_value);
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2.0;
}

int ll_lesson_false_sharing(uint64_t increments, int form, int distance, int cpu_a, int cpu_b, ll_share_result *out)
{
    if (!out || increments == 0 || form < LL_SHARE_ATOMIC_ADD || form > LL_SHARE_RELAXED_STORE || distance < 8 ||
        distance > LL_SHARE_MAX_DISTANCE || distance % 8 != 0)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    uint64_t chunks = (increments + LL_SHARE_CHUNK - 1) / LL_SHARE_CHUNK;
    /* One block for both counters, starting on a line-pair boundary: nothing
     * else the process allocates shares their lines; the progress words
     * follow, each on a line pair of its own. */
    size_t r = LL_FALSE_SHARING_RANGE, span = ((size_t)distance + sizeof(uint64_t) + r - 1) / r * r;
    char *block = ll_alloc_lines(span + 2 * r);
    double *times = malloc(2 * chunks * sizeof *times); /* both sides' chunks */
    int rc = block && times ? LL_OK : LL_ENOMEM;
    struct sharing s = {.increments = increments, .chunks = chunks, .form = form};
    if (rc == LL_OK) {
        atomic_init(&s.duo.ready, 0);
        atomic_init(&s.duo.go, 0);
        for (int i = 0; i < 2; i++) {
            s.side[i] = (struct side){.counter = block + (i ? distance : 0),
                                      .progress = (_Atomic uint64_t *)(block + span + (size_t)i * r),
                                      .chunk_ns = times + (size_t)i * chunks,
                                      .cpu = i ? cpu_b : cpu_a,
                                      .pinned = 1,
                                      .ran = -1};
            atomic_init(s.side[i].progress, 0);
            if (form == LL_SHARE_VOLATILE_INC)
                *(volatile uint64_t *)s.side[i].counter = 0;
            else
                atomic_init((_Atomic uint64_t *)s.side[i].counter, 0);
        }
        rc = ll_run_pair(side_a, &s, side_b, &s, &s.duo);
    }
    if (rc == LL_OK) {
        uint64_t end = s.side[0].t_end > s.side[1].t_end ? s.side[0].t_end : s.side[1].t_end;
        out->wall_ns_per_increment = (double)(end - s.duo.t_start) / (double)increments;
        out->ns_per_increment = median(times, 2 * chunks);
        out->cpu_a_pinned = s.side[0].pinned;
        out->cpu_b_pinned = s.side[1].pinned;
        out->cpu_a_ran = s.side[0].ran;
        out->cpu_b_ran = s.side[1].ran;
        if (value(form, s.side[0].counter) != increments || value(form, s.side[1].counter) != increments)
            rc = LL_EMISMATCH;
    }
    free(times);
    free(block);
    return rc;
}
