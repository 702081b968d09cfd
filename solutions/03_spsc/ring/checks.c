/* checks.c - the checks of the cached-remote-index exercise; see grade.h for
 * the protocol.  Built with GRADE_COUNT_REMOTE_LOADS, so every REMOTE_LOAD in
 * the learner's file is counted, and with the core's ring (csrc/spsc.c), the
 * timing's reference.  usage: checks CHECK [ITEMS] */
#include "grade.h"
#include "ring.h"
#include "spsc.h"

#include <pthread.h>
#include <sched.h>

/* The count of REMOTE_LOADs on this thread: static, so ring.c cannot name it
 * (an object referencing it would not link); only this function changes it. */
static _Thread_local unsigned long grade_remote_loads;
void ring_grade_remote_load(void) { grade_remote_loads++; }

static ring *create(size_t cap) { return GRADE_CALL(ring_create, cap); }
static void destroy(ring *r) { GRADE_CALL(ring_destroy, r); }
static bool push(ring *r, uint64_t v) { return GRADE_CALL(ring_try_push, r, v); }
static bool pop(ring *r, uint64_t *v) { return GRADE_CALL(ring_try_pop, r, v); }
static void set_position(ring *r, uint64_t pos) { GRADE_CALL(ring_debug_set_position, r, pos); }

/* Powers of two from 2^from to 2^63: no machine has capacity * 8 bytes for
 * them, and from 2^61 on capacity * sizeof(uint64_t) wraps around size_t
 * (to 0, or to a few bytes with a header added), so a create that multiplies
 * without checking gets a tiny buffer and returns a ring.  ring.h: NULL. */
static int check_huge(int from)
{
    for (int k = from; k < 64; k++) {
        size_t cap = (size_t)1 << k;
        grade_note("creating a ring of capacity 2^k >= 2^48 (capacity * slot size overflows size_t)");
        ring *r = create(cap);
        grade_note(NULL);
        if (r) {
            destroy(r);
            return grade_fail("ring_create(2^%d) returned a ring: no memory of capacity * 8 bytes exists, and from "
                              "2^61 on capacity * sizeof(slot) overflows size_t and wraps to a tiny allocation (check "
                              "capacity > SIZE_MAX / sizeof(slot) before multiplying, or let calloc check it)",
                              k);
        }
    }
    return 0;
}

static int check_create_args(const char *arg)
{
    (void)arg;
    size_t bad[] = {0, 1, 3, 100, (size_t)-1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ring *r = create(bad[i]);
        if (r) {
            destroy(r);
            return grade_fail("ring_create(%zu) returned a ring; only powers of two >= 2 are allowed", bad[i]);
        }
    }
    ring *r = create(2);
    if (!r)
        return grade_fail("ring_create(2) returned NULL");
    destroy(r);
    return check_huge(48) ? 1 : grade_pass();
}

static int check_fifo_capacity(const char *arg)
{
    (void)arg;
    size_t caps[] = {2, 16, 1024};
    uint64_t next = 1, v;
    for (size_t c = 0; c < 3; c++) {
        size_t cap = caps[c];
        ring *r = create(cap);
        if (!r)
            return grade_fail("ring_create(%zu) returned NULL", cap);
        for (int lap = 0; lap < 3; lap++) {
            uint64_t first = next;
            for (size_t i = 0; i < cap; i++)
                if (!push(r, next++))
                    return grade_fail("push %zu of %zu failed: a ring of capacity %zu must hold %zu items", i + 1, cap,
                                      cap, cap);
            if (push(r, 0))
                return grade_fail("push %zu succeeded: a ring of capacity %zu held more than %zu", cap + 1, cap, cap);
            for (size_t i = 0; i < cap; i++)
                if (!pop(r, &v) || v != first + i)
                    return grade_fail("pop %zu did not return %llu (first in, first out)", i + 1,
                                      (unsigned long long)(first + i));
            if (pop(r, &v))
                return grade_fail("pop from an empty ring returned %llu", (unsigned long long)v);
        }
        destroy(r);
    }
    return grade_pass();
}

/* Cursors started just below 2^32, 2^63 and 2^64 (ring_debug_set_position):
 * full, empty and FIFO must stay right while they cross those points. */
static int check_wrap(const char *arg)
{
    (void)arg;
    const uint64_t starts[] = {(1ull << 32) - 3, (1ull << 63) - 3, UINT64_MAX - 2};
    const char *names[] = {"2^32 - 3", "2^63 - 3", "2^64 - 3"};
    const char *why[] = {"a cursor or a cached copy narrower than 64 bits wraps at 2^32",
                         "a signed comparison of the cursors turns at 2^63", "the cursors themselves wrap at 2^64"};
    size_t caps[] = {2, 16};
    for (size_t s = 0; s < 3; s++) {
        for (size_t c = 0; c < 2; c++) {
            size_t cap = caps[c];
            ring *r = create(cap);
            if (!r)
                return grade_fail("ring_create(%zu) returned NULL", cap);
            set_position(r, starts[s]);
            uint64_t next = 1, v;
            unsigned long ops = 0;
            for (int lap = 0; lap < 4; lap++) {
                if (pop(r, &v))
                    return grade_fail("with the cursors started at %s (ring_debug_set_position), capacity %zu: pop "
                                      "from an empty ring returned %llu after %lu operations (%s)",
                                      names[s], cap, (unsigned long long)v, ops, why[s]);
                uint64_t first = next;
                for (size_t i = 0; i < cap; i++, ops++)
                    if (!push(r, next++))
                        return grade_fail("with the cursors started at %s (ring_debug_set_position), capacity %zu: "
                                          "push %zu failed with %zu items in the ring, after %lu operations (%s)",
                                          names[s], cap, i + 1, i, ops, why[s]);
                if (push(r, 0))
                    return grade_fail("with the cursors started at %s (ring_debug_set_position): push %zu succeeded "
                                      "on a full ring of capacity %zu (%s)",
                                      names[s], cap + 1, cap, why[s]);
                for (size_t i = 0; i < cap; i++, ops++)
                    if (!pop(r, &v) || v != first + i)
                        return grade_fail("with the cursors started at %s (ring_debug_set_position), capacity %zu: "
                                          "pop %zu did not return %llu (first in, first out) after %lu operations "
                                          "(%s)",
                                          names[s], cap, i + 1, (unsigned long long)(first + i), ops, why[s]);
            }
            destroy(r);
        }
    }
    return grade_pass();
}

static int check_cached(const char *arg)
{
    (void)arg;
    enum { CAP = 1024, LAPS = 4 };
    ring *r = create(CAP);
    if (!r)
        return grade_fail("ring_create(%d) returned NULL", CAP);
    unsigned long push_loads = 0, pop_loads = 0;
    uint64_t v;
    for (int lap = 0; lap < LAPS; lap++) {
        grade_remote_loads = 0;
        for (int i = 0; i < CAP; i++)
            if (!push(r, (uint64_t)i))
                return grade_fail("push %d of %d failed", i + 1, CAP);
        push_loads += grade_remote_loads;
        grade_remote_loads = 0;
        for (int i = 0; i < CAP; i++)
            if (!pop(r, &v))
                return grade_fail("pop %d of %d failed", i + 1, CAP);
        pop_loads += grade_remote_loads;
    }
    destroy(r);
    unsigned long ops = 2ul * CAP * LAPS;
    if (push_loads + pop_loads == 0)
        return grade_fail("no REMOTE_LOAD at all: read the other side's cursor through REMOTE_LOAD (the grader "
                          "counts those reads)");
    if (push_loads > 2 * LAPS || pop_loads > 2 * LAPS)
        return grade_fail("the other side's cursor was read %lu times in %lu operations (push %lu, pop %lu); with a "
                          "cached copy a full lap needs about one read per side",
                          push_loads + pop_loads, ops, push_loads, pop_loads);
    grade_info("remote_loads", (double)(push_loads + pop_loads));
    return grade_pass();
}

/* Spin briefly, then yield: fast when each thread has a core, and no
 * collapse when they share one. */
static void backoff(unsigned *spins)
{
    if (++*spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        return;
    }
    *spins = 0;
    sched_yield();
}

/* The reference for timing: the core's ring (csrc/spsc.c) created without
 * the cache (LL_SPSC_NO_CACHE) and with its cursors a 128-byte pair apart as
 * in ring.c's struct (LL_SPSC_SPREAD), called the same way as the learner's
 * (out of line, through a wrapper), so the difference measured is the cache. */
static void *l_create(size_t cap) { return create(cap); }
static void l_destroy(void *r) { destroy(r); }
static bool l_push(void *r, uint64_t v) { return push(r, v); }
static bool l_pop(void *r, uint64_t *v) { return pop(r, v); }

static void *ref_create(size_t cap) { return ll_spsc_create(cap, sizeof(uint64_t), LL_SPSC_NO_CACHE | LL_SPSC_SPREAD); }
static void ref_destroy(void *q) { ll_spsc_destroy(q); }
static bool ref_push(void *q, uint64_t v) { return GRADE_CALL(ll_spsc_try_push, q, &v); }
static bool ref_pop(void *q, uint64_t *v) { return GRADE_CALL(ll_spsc_try_pop, q, v); }

struct ops {
    void *(*create)(size_t);
    void (*destroy)(void *);
    bool (*push)(void *, uint64_t);
    bool (*pop)(void *, uint64_t *);
};
static const struct ops learner_ops = {l_create, l_destroy, l_push, l_pop};
static const struct ops ref_ops = {ref_create, ref_destroy, ref_push, ref_pop};

struct stress {
    const struct ops *ops;
    void *r;
    uint64_t n;
};

static _Atomic unsigned long long stress_pushed, stress_popped;
static unsigned long long stress_progress(void)
{
    return atomic_load_explicit(&stress_pushed, memory_order_relaxed) +
           atomic_load_explicit(&stress_popped, memory_order_relaxed);
}
static const char *stress_describe(void)
{
    static char buf[200];
    snprintf(buf, sizeof buf, "%llu items pushed, %llu popped; one side keeps seeing full or empty forever",
             (unsigned long long)atomic_load(&stress_pushed), (unsigned long long)atomic_load(&stress_popped));
    return buf;
}

static void *producer(void *arg)
{
    struct stress *s = arg;
    unsigned spins = 0;
    for (uint64_t i = 1; i <= s->n; i++) {
        while (!s->ops->push(s->r, i))
            backoff(&spins);
        if ((i & 1023) == 0)
            atomic_store_explicit(&stress_pushed, i, memory_order_relaxed); /* progress only */
    }
    return NULL;
}

static int check_stress(const struct ops *ops, uint64_t n, double *items_per_s)
{
    if (!items_per_s)
        grade_watchdog(stress_progress, stress_describe, 3.0);
    struct stress s = {ops, ops->create(1024), n};
    if (!s.r)
        return grade_fail("ring_create(1024) returned NULL");
    pthread_t t;
    double t0 = grade_now_s();
    pthread_create(&t, NULL, producer, &s);
    uint64_t v, wrong = 0, first_wrong = 0, first_got = 0;
    unsigned spins = 0;
    for (uint64_t i = 1; i <= n; i++) {
        while (!ops->pop(s.r, &v))
            backoff(&spins);
        if ((i & 1023) == 0)
            atomic_store_explicit(&stress_popped, i, memory_order_relaxed); /* progress only */
        if (v != i && wrong++ == 0) {
            first_wrong = i;
            first_got = v;
        }
    }
    pthread_join(t, NULL);
    double dt = grade_now_s() - t0;
    ops->destroy(s.r);
    if (wrong)
        return grade_fail("%llu of %llu items arrived wrong (item %llu was %llu)", (unsigned long long)wrong,
                          (unsigned long long)n, (unsigned long long)first_wrong, (unsigned long long)first_got);
    if (items_per_s) {
        *items_per_s = (double)n / dt;
        return 0;
    }
    return grade_pass();
}

static int check_stress_learner(const char *arg)
{
    return check_stress(&learner_ops, grade_arg_u64(arg, 5000000), NULL);
}

/* Every check above in one process: run under AddressSanitizer/UBSan (and
 * LeakSanitizer: ring_destroy must free what ring_create allocated). */
static int check_all(const char *arg)
{
    if (check_create_args("") || check_fifo_capacity("") || check_wrap("") || check_cached(""))
        return 1;
    return check_stress(&learner_ops, grade_arg_u64(arg, 200000), NULL);
}

/* Reported, never graded: interleaved, five times each; the best of each. */
static int timing(const char *arg)
{
    uint64_t items = grade_arg_u64(arg, 5000000);
    double best_yours = 0, best_ref = 0;
    for (int rep = 0; rep < 5; rep++) {
        double yours = 0, theirs = 0;
        if (check_stress(&learner_ops, items, &yours) != 0 || check_stress(&ref_ops, items, &theirs) != 0)
            return 1;
        best_yours = yours > best_yours ? yours : best_yours;
        best_ref = theirs > best_ref ? theirs : best_ref;
    }
    grade_info("yours_M_items_per_s", best_yours / 1e6);
    grade_info("uncached_M_items_per_s", best_ref / 1e6);
    grade_info("speedup", best_yours / best_ref);
    return grade_pass();
}

GRADE_CHECKS({"create_args", check_create_args}, {"fifo_capacity", check_fifo_capacity}, {"wrap", check_wrap},
             {"cached", check_cached}, {"stress", check_stress_learner}, {"all", check_all}, {"timing", timing})
