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
    void *counter; /* this thread's counter: _Atomic uint64_t or volatile uint64_t, by form */
    int cpu, pinned, ran;
    uint64_t t_end;
};

struct sharing {
    struct ll_duo duo;
    uint64_t increments;
    int form;
    struct side side[2];
};

/* One loop per form; each returns nothing but leaves its counter at n. */
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

static void store_relaxed(_Atomic uint64_t *c, uint64_t n)
{
    for (uint64_t i = 1; i <= n; i++)
        atomic_store_explicit(c, i, memory_order_relaxed); /* relaxed: the point: nothing waits for the store */
}

static void *run_side(struct sharing *s, struct side *me)
{
    me->pinned = ll_pin_if(me->cpu);
    if (!ll_duo_arrive(&s->duo))
        return NULL;
    if (s->form == LL_SHARE_ATOMIC_ADD)
        add_atomic(me->counter, s->increments);
    else if (s->form == LL_SHARE_VOLATILE_INC)
        add_volatile(me->counter, s->increments);
    else
        store_relaxed(me->counter, s->increments);
    me->t_end = ll_now_ns();
    me->ran = ll_current_cpu();
    return NULL;
}

static void *side_a(void *arg)
{
    struct sharing *s = arg;
    return run_side(s, &s->side[0]);
}

static void *side_b(void *arg)
{
    struct sharing *s = arg;
    return run_side(s, &s->side[1]);
}

static uint64_t value(int form, void *counter)
{
    if (form == LL_SHARE_VOLATILE_INC)
        return *(volatile uint64_t *)counter;
    return atomic_load_explicit((_Atomic uint64_t *)counter, memory_order_relaxed); /* relaxed: after the join */
}

int ll_lesson_false_sharing(uint64_t increments, int form, int distance, int cpu_a, int cpu_b, ll_share_result *out)
{
    if (!out || increments == 0 || form < LL_SHARE_ATOMIC_ADD || form > LL_SHARE_RELAXED_STORE || distance < 8 ||
        distance > LL_SHARE_MAX_DISTANCE || distance % 8 != 0)
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    /* One block for both counters, starting on a line-pair boundary: nothing
     * else the process allocates shares their lines. */
    char *block = ll_alloc_lines((size_t)distance + sizeof(uint64_t));
    if (!block)
        return LL_ENOMEM;
    struct sharing s = {.increments = increments, .form = form};
    atomic_init(&s.duo.ready, 0);
    atomic_init(&s.duo.go, 0);
    s.side[0] = (struct side){.counter = block, .cpu = cpu_a, .pinned = 1, .ran = -1};
    s.side[1] = (struct side){.counter = block + distance, .cpu = cpu_b, .pinned = 1, .ran = -1};
    for (int i = 0; i < 2; i++) {
        if (form == LL_SHARE_VOLATILE_INC)
            *(volatile uint64_t *)s.side[i].counter = 0;
        else
            atomic_init((_Atomic uint64_t *)s.side[i].counter, 0);
    }
    int rc = ll_run_pair(side_a, &s, side_b, &s, &s.duo);
    if (rc == LL_OK) {
        uint64_t end = s.side[0].t_end > s.side[1].t_end ? s.side[0].t_end : s.side[1].t_end;
        out->ns_per_increment = (double)(end - s.duo.t_start) / (double)increments;
        out->cpu_a_pinned = s.side[0].pinned;
        out->cpu_b_pinned = s.side[1].pinned;
        out->cpu_a_ran = s.side[0].ran;
        out->cpu_b_ran = s.side[1].ran;
        if (value(form, s.side[0].counter) != increments || value(form, s.side[1].counter) != increments)
            rc = LL_EMISMATCH;
    }
    free(block);
    return rc;
}
