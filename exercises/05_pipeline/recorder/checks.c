/* checks.c - the checks of the latency-recorder exercise; see grade.h for
 * the protocol.  Linked with --wrap for every allocator entry point, so
 * every allocation (and free) the learner's code makes is counted.
 * usage: checks CHECK [RECORDS] */
#include "grade.h"
#include "recorder.h"

#include <pthread.h>
#include <stdatomic.h>

/* ---- allocation counting ------------------------------------------------------
 * Linked with --wrap for every allocator entry point a learner's file may
 * call (lowlat.grading.objcheck.ALLOCATORS): each call is counted. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_reallocarray(void *p, size_t n, size_t size);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **out, size_t align, size_t n);
void *__real_memalign(size_t align, size_t n);
void *__real_valloc(size_t n);
void __real_free(void *p);
static atomic_ulong grade_allocs;
static void counted(void) { atomic_fetch_add_explicit(&grade_allocs, 1, memory_order_relaxed); }
void *__wrap_malloc(size_t n)
{
    counted();
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
    counted();
    return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
    counted();
    return __real_realloc(p, n);
}
void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
    counted();
    return __real_reallocarray(p, n, size);
}
void *__wrap_aligned_alloc(size_t align, size_t n)
{
    counted();
    return __real_aligned_alloc(align, n);
}
int __wrap_posix_memalign(void **out, size_t align, size_t n)
{
    counted();
    return __real_posix_memalign(out, align, n);
}
void *__wrap_memalign(size_t align, size_t n)
{
    counted();
    return __real_memalign(align, n);
}
void *__wrap_valloc(size_t n)
{
    counted();
    return __real_valloc(n);
}
void __wrap_free(void *p)
{
    counted();
    __real_free(p);
}

/* ---- the learner's functions, named for crash reports ---------------------------- */
static recorder *create(size_t keep) { return GRADE_CALL(recorder_create, keep); }
static void destroy(recorder *r) { GRADE_CALL(recorder_destroy, r); }
static void record(recorder *r, uint64_t v) { GRADE_CALL(recorder_record, r, v); }
static uint64_t count(const recorder *r) { return GRADE_CALL(recorder_count, r); }
static uint64_t bucket(const recorder *r, int b) { return GRADE_CALL(recorder_bucket, r, b); }
static size_t newest(const recorder *r, uint64_t *out, size_t max) { return GRADE_CALL(recorder_newest, r, out, max); }
static void set_count(recorder *r, uint64_t n) { GRADE_CALL(recorder_debug_set_count, r, n); }

static int bits(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

static int check_create_args(const char *arg)
{
    (void)arg;
    recorder *r = create(0);
    if (r) {
        destroy(r);
        return grade_fail("recorder_create(0) returned a recorder; keep must be >= 1");
    }
    if (!(r = create(1)))
        return grade_fail("recorder_create(1) returned NULL");
    destroy(r);
    if (!(r = create(1000)))
        return grade_fail("recorder_create(1000) returned NULL");
    if (count(r) != 0)
        return grade_fail("a new recorder's count is %llu, not 0", (unsigned long long)count(r));
    destroy(r);
    /* keep * 8 bytes overflows size_t: a recorder here would hold far fewer
     * slots than keep, and recording would write past them. */
    size_t huge[] = {SIZE_MAX / 8 + 2, SIZE_MAX / 4 + 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        if ((r = create(huge[i]))) {
            destroy(r);
            return grade_fail("recorder_create(%zu) returned a recorder: keep * 8 bytes overflows size_t, so it holds "
                              "far fewer slots than keep (check keep > SIZE_MAX / sizeof(uint64_t) before "
                              "multiplying, or let calloc check it)",
                              huge[i]);
        }
    }
    return grade_pass();
}

static int check_buckets(const char *arg)
{
    (void)arg;
    const uint64_t vals[] = {
        0, 1, 2, 3, 4, 7, 8, 1000, 1023, 1024, 123456789, 1ull << 40, (1ull << 63) - 1, 1ull << 63, UINT64_MAX};
    const size_t n = sizeof vals / sizeof vals[0];
    uint64_t want[65] = {0};
    recorder *r = create(4);
    if (!r)
        return grade_fail("recorder_create(4) returned NULL");
    for (size_t i = 0; i < n; i++) {
        record(r, vals[i]);
        want[bits(vals[i])]++;
        if (count(r) != i + 1)
            return grade_fail("after %zu records the count is %llu", i + 1, (unsigned long long)count(r));
    }
    for (int b = 0; b <= 64; b++)
        if (bucket(r, b) != want[b])
            return grade_fail("bucket %d (values of bit length %d) holds %llu, expected %llu", b, b,
                              (unsigned long long)bucket(r, b), (unsigned long long)want[b]);
    if (bucket(r, -1) != 0 || bucket(r, 65) != 0)
        return grade_fail("recorder_bucket outside 0..64 must return 0");
    destroy(r);
    return grade_pass();
}

static int check_ring_wrap(const char *arg)
{
    (void)arg;
    uint64_t out[16];
    recorder *r = create(5);
    if (!r)
        return grade_fail("recorder_create(5) returned NULL");
    for (uint64_t v = 1; v <= 3; v++)
        record(r, v);
    size_t k = newest(r, out, 16);
    if (k != 3 || out[0] != 1 || out[2] != 3)
        return grade_fail("after recording 1, 2, 3 with keep=5, newest(max=16) must give [1, 2, 3], oldest first; "
                          "got %zu values, the first %llu",
                          k, (unsigned long long)(k ? out[0] : 0));
    k = newest(r, out, 2); /* before the ring has wrapped: the two newest are 2 and 3 */
    if (k != 2 || out[0] != 2 || out[1] != 3)
        return grade_fail("after recording 1, 2, 3 with keep=5 (no wrap yet), newest(max=2) must give the two newest, "
                          "[2, 3]; got %zu values: [%llu, %llu] (the oldest instead of the newest?)",
                          k, (unsigned long long)(k > 0 ? out[0] : 0), (unsigned long long)(k > 1 ? out[1] : 0));
    for (uint64_t v = 4; v <= 13; v++)
        record(r, v);
    k = newest(r, out, 16);
    if (k != 5)
        return grade_fail("keep=5 after 13 records: newest() returned %zu values, expected 5", k);
    for (size_t i = 0; i < 5; i++)
        if (out[i] != 9 + i)
            return grade_fail("keep=5 after recording 1..13: newest() must give 9..13 oldest first; position %zu "
                              "holds %llu",
                              i, (unsigned long long)out[i]);
    k = newest(r, out, 3);
    if (k != 3 || out[0] != 11 || out[2] != 13)
        return grade_fail("newest(max=3) must give the three newest, 11, 12, 13, oldest first");
    /* A small max into a buffer of exactly max values, guard values after it. */
    for (size_t max = 0; max <= 4; max++) {
        uint64_t buf[4 + 8];
        for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
            buf[i] = 0xdeadbeefcafef00dull;
        k = newest(r, buf, max);
        if (k != max)
            return grade_fail("keep=5 after 13 records: newest(max=%zu) returned %zu values, expected %zu", max, k,
                              max);
        for (size_t i = max; i < sizeof buf / sizeof buf[0]; i++)
            if (buf[i] != 0xdeadbeefcafef00dull)
                return grade_fail("newest(out, max=%zu) wrote out[%zu]: past max (keep=5 samples kept; copy only "
                                  "min(max, kept) values)",
                                  max, i);
    }
    destroy(r);
    return grade_pass();
}

/* The count past 2^32 (recorder_debug_set_count starts it at 2^32 - 2):
 * the hook itself is checked first (count and bucket 0 read back). */
static int check_count64(const char *arg)
{
    (void)arg;
    const uint64_t start = (1ull << 32) - 2;
    recorder *r = create(4);
    if (!r)
        return grade_fail("recorder_create(4) returned NULL");
    set_count(r, start);
    if (count(r) != start || bucket(r, 0) != start)
        return grade_fail("after recorder_debug_set_count(r, 2^32 - 2) the count is %llu and bucket 0 holds %llu, not "
                          "%llu (a count or bucket narrower than 64 bits, or a hook that does not set them)",
                          (unsigned long long)count(r), (unsigned long long)bucket(r, 0), (unsigned long long)start);
    for (uint64_t v = 1; v <= 6; v++)
        record(r, v);
    if (count(r) != start + 6)
        return grade_fail("the count went from 2^32 - 2 to %llu after 6 records, not 2^32 + 4 (a count narrower than "
                          "64 bits wraps at 2^32)",
                          (unsigned long long)count(r));
    if (bucket(r, 1) != 1 || bucket(r, 2) != 2 || bucket(r, 3) != 3 || bucket(r, 0) != start)
        return grade_fail("after 6 records past 2^32 - 2 the buckets are wrong (1: %llu, 2: %llu, 3: %llu)",
                          (unsigned long long)bucket(r, 1), (unsigned long long)bucket(r, 2),
                          (unsigned long long)bucket(r, 3));
    uint64_t out[4];
    size_t k = newest(r, out, 4);
    if (k != 4 || out[0] != 3 || out[3] != 6)
        return grade_fail("keep=4, count started at 2^32 - 2, then 1..6 recorded: newest(max=4) must give 3, 4, 5, 6 "
                          "(got %zu values, the first %llu): the slot index must follow the 64-bit count",
                          k, (unsigned long long)(k ? out[0] : 0));
    destroy(r);
    return grade_pass();
}

static int check_no_alloc(const char *arg)
{
    uint64_t n = grade_arg_u64(arg, 1000000);
    recorder *r = create(1024);
    if (!r)
        return grade_fail("recorder_create(1024) returned NULL");
    unsigned long before = atomic_load(&grade_allocs);
    for (uint64_t i = 0; i < n; i++)
        record(r, i * 2654435761u % 100000);
    unsigned long during = atomic_load(&grade_allocs) - before;
    if (during)
        return grade_fail("recorder_record called the allocator %lu times in %llu records (malloc, calloc, realloc, "
                          "reallocarray, aligned_alloc, posix_memalign, memalign, valloc and free are all counted): "
                          "the hot path must not allocate",
                          during, (unsigned long long)n);
    if (count(r) != n)
        return grade_fail("count is %llu after %llu records", (unsigned long long)count(r), (unsigned long long)n);
    destroy(r);
    return grade_pass();
}

/* One thread records while a monitor thread polls count and buckets. */
struct stress {
    recorder *r;
    uint64_t n;
    atomic_int done;
    atomic_ullong progress;
    char problem[200];
};

static struct stress *g_stress;
static unsigned long long stress_progress(void) { return atomic_load(&g_stress->progress); }
static const char *stress_describe(void) { return "the recording thread or the monitor is stuck"; }

static void *writer(void *arg)
{
    struct stress *s = arg;
    for (uint64_t i = 0; i < s->n; i++) {
        record(s->r, (i * 11400714819323198485ull) >> 44);
        if ((i & 1023) == 0)
            atomic_store_explicit(&s->progress, i, memory_order_relaxed);
    }
    atomic_store_explicit(&s->done, 1, memory_order_release);
    return NULL;
}

static void *monitor(void *arg)
{
    struct stress *s = arg;
    uint64_t last = 0;
    while (!atomic_load_explicit(&s->done, memory_order_acquire)) {
        uint64_t c = count(s->r);
        if (c < last || c > s->n) {
            snprintf(s->problem, sizeof s->problem, "the monitor saw the count go from %llu to %llu",
                     (unsigned long long)last, (unsigned long long)c);
            return NULL;
        }
        last = c;
        uint64_t sum = 0;
        for (int b = 0; b <= 64; b++)
            sum += bucket(s->r, b);
        if (sum > s->n) {
            snprintf(s->problem, sizeof s->problem, "the buckets summed to %llu, more than was ever recorded",
                     (unsigned long long)sum);
            return NULL;
        }
    }
    return NULL;
}

static int check_monitor(const char *arg)
{
    uint64_t n = grade_arg_u64(arg, 5000000);
    struct stress s = {.r = create(4096), .n = n};
    if (!s.r)
        return grade_fail("recorder_create(4096) returned NULL");
    g_stress = &s;
    grade_watchdog(stress_progress, stress_describe, 3.0);
    pthread_t tw, tm;
    pthread_create(&tm, NULL, monitor, &s);
    pthread_create(&tw, NULL, writer, &s);
    pthread_join(tw, NULL);
    pthread_join(tm, NULL);
    if (s.problem[0])
        return grade_fail("%s", s.problem);
    uint64_t sum = 0;
    for (int b = 0; b <= 64; b++)
        sum += bucket(s.r, b);
    if (count(s.r) != n || sum != n)
        return grade_fail("after %llu records by one thread: count %llu, buckets sum %llu", (unsigned long long)n,
                          (unsigned long long)count(s.r), (unsigned long long)sum);
    uint64_t out[4096];
    size_t k = newest(s.r, out, 4096);
    for (size_t i = 0; i < k; i++) {
        uint64_t j = n - k + i;
        if (out[i] != (j * 11400714819323198485ull) >> 44)
            return grade_fail("the newest samples are not the last %zu recorded, in order (position %zu)", k, i);
    }
    destroy(s.r);
    return grade_pass();
}

/* Every check above in one process (the stress shorter): run under
 * AddressSanitizer/UBSan/LeakSanitizer. */
static int check_all(const char *arg)
{
    if (check_create_args("") || check_buckets("") || check_ring_wrap("") || check_count64("") ||
        check_no_alloc("100000"))
        return 1;
    return check_monitor(arg);
}

/* ---- timing: the recorder vs a vector grown on the hot path ---------------------- */
static double now_ns(void) { return grade_now_s() * 1e9; }

static int timing(const char *arg)
{
    uint64_t n = grade_arg_u64(arg, 20000000);
    recorder *r = create(4096);
    if (!r)
        return grade_fail("recorder_create returned NULL");
    double worst_r = 0, worst_v = 0, t0, t1;
    t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        record(r, i & 0xffff);
    t1 = now_ns();
    double mean_r = (t1 - t0) / (double)n;
    uint64_t *vec = NULL;
    size_t len = 0, cap = 0;
    t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (len == cap) {
            cap = cap ? 2 * cap : 16;
            vec = realloc(vec, cap * sizeof *vec);
            if (!vec)
                return grade_fail("out of memory in the reference");
        }
        vec[len++] = i & 0xffff;
    }
    t1 = now_ns();
    double mean_v = (t1 - t0) / (double)n;
    free(vec);
    /* The worst single record of each, timed one by one (timer included). */
    vec = NULL;
    len = cap = 0;
    for (uint64_t i = 0; i < n / 10; i++) {
        t0 = now_ns();
        record(r, i);
        t1 = now_ns();
        worst_r = t1 - t0 > worst_r ? t1 - t0 : worst_r;
        t0 = now_ns();
        if (len == cap) {
            cap = cap ? 2 * cap : 16;
            vec = realloc(vec, cap * sizeof *vec);
            if (!vec)
                return grade_fail("out of memory in the reference");
        }
        vec[len++] = i;
        t1 = now_ns();
        worst_v = t1 - t0 > worst_v ? t1 - t0 : worst_v;
    }
    free(vec);
    destroy(r);
    grade_info("yours_ns", mean_r);
    grade_info("vector_ns", mean_v);
    grade_info("yours_worst_ns", worst_r);
    grade_info("vector_worst_ns", worst_v);
    return grade_pass();
}

GRADE_CHECKS({"create_args", check_create_args}, {"buckets", check_buckets}, {"ring_wrap", check_ring_wrap},
             {"count64", check_count64}, {"no_alloc", check_no_alloc}, {"monitor", check_monitor}, {"all", check_all},
             {"timing", timing})
