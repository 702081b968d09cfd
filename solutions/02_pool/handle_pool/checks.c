/* checks.c - the checks of the generational handle pool exercise; see
 * grade.h for the protocol.  usage: checks CHECK */
#include "grade.h"
#include "grade_alloc.h"
#include "handle_pool.h"

static hpool *create(size_t bs, size_t n) { return GRADE_CALL(hpool_create, bs, n); }
static void destroy(hpool *p) { GRADE_CALL(hpool_destroy, p); }
static uint32_t alloc_(hpool *p) { return GRADE_CALL(hpool_alloc, p); }
static void *get(hpool *p, uint32_t h) { return GRADE_CALL(hpool_get, p, h); }
static int free_(hpool *p, uint32_t h) { return GRADE_CALL(hpool_free, p, h); }

static int check_create_args(const char *arg)
{
    (void)arg;
    struct {
        size_t bs, n;
    } bad[] = {{0, 10}, {16, 0}, {0, 0}, {SIZE_MAX, 2}, {SIZE_MAX / 2 + 1, 2}, {16, SIZE_MAX}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hpool *p = create(bad[i].bs, bad[i].n);
        if (p) {
            destroy(p);
            return grade_fail("hpool_create(%zu, %zu) returned a pool; expected NULL (zero or overflow)", bad[i].bs,
                              bad[i].n);
        }
    }
    hpool *p = create(16, 10);
    if (!p)
        return grade_fail("hpool_create(16, 10) returned NULL");
    destroy(p);
    p = create(1, 1);
    if (!p)
        return grade_fail("hpool_create(1, 1) returned NULL");
    destroy(p);
    return grade_pass();
}

enum { N = 100, BS = 24 };

/* count blocks of bs bytes: count distinct nonzero handles, then 0; every
 * block filled to its last byte and read back (blocks of odd sizes overlap
 * when the stride is rounded down). */
static int exhaust(size_t bs, int count)
{
    hpool *p = create(bs, (size_t)count);
    if (!p)
        return grade_fail("hpool_create(%zu, %d) returned NULL", bs, count);
    uint32_t h[N];
    unsigned char *m[N];
    for (int i = 0; i < count; i++) {
        h[i] = alloc_(p);
        if (h[i] == 0)
            return grade_fail("alloc %d of %d returned 0 with free blocks left", i + 1, count);
        for (int j = 0; j < i; j++)
            if (h[j] == h[i])
                return grade_fail("allocs %d and %d returned the same handle %#x", j + 1, i + 1, h[i]);
    }
    if (alloc_(p) != 0)
        return grade_fail("alloc %d succeeded on a pool of %d blocks (must return 0 when exhausted)", count + 1, count);
    for (int i = 0; i < count; i++) {
        m[i] = get(p, h[i]);
        if (!m[i])
            return grade_fail("get of live handle %#x returned NULL", h[i]);
        memset(m[i], i + 1, bs);
    }
    for (int i = 0; i < count; i++) {
        for (size_t k = 0; k < bs; k++)
            if (m[i][k] != (unsigned char)(i + 1))
                return grade_fail("with %zu-byte blocks, byte %zu of block %d was overwritten by another block's data: "
                                  "blocks overlap (is the stride rounded down for a size not a multiple of 8?)",
                                  bs, k, i + 1);
        if (get(p, h[i]) != m[i])
            return grade_fail("get of handle %#x moved: a block must stay where it is while live", h[i]);
    }
    destroy(p);
    return 0;
}

static int check_exhaust(const char *arg)
{
    (void)arg;
    const size_t sizes[] = {BS, 1, 3, 7, 9, 13, 33, 100};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (exhaust(sizes[i], i == 0 ? N : 37))
            return 1;
    return grade_pass();
}

static int check_free_reuse(const char *arg)
{
    (void)arg;
    hpool *p = create(BS, N);
    if (!p)
        return grade_fail("hpool_create(%d, %d) returned NULL", BS, N);
    uint32_t h[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            if ((h[i] = alloc_(p)) == 0)
                return grade_fail("round %d: alloc %d returned 0 although every block had been freed", round + 1,
                                  i + 1);
        for (int i = 0; i < N; i++)
            if (free_(p, h[i]) != 0)
                return grade_fail("round %d: free of live handle %#x did not return 0", round + 1, h[i]);
    }
    destroy(p);
    return grade_pass();
}

static int check_double_free(const char *arg)
{
    (void)arg;
    hpool *p = create(BS, 4);
    if (!p)
        return grade_fail("hpool_create(%d, 4) returned NULL", BS);
    uint32_t a = alloc_(p), b = alloc_(p);
    if (free_(p, a) != 0)
        return grade_fail("free of a live handle did not return 0");
    if (free_(p, a) != -1)
        return grade_fail("a second free of the same handle did not return -1 (double free undetected)");
    if (get(p, a) != NULL)
        return grade_fail("get of a freed handle did not return NULL");
    if (get(p, b) == NULL)
        return grade_fail("freeing one handle broke another live handle");
    destroy(p);
    return grade_pass();
}

/* One slot reused 70,000 times (past any generation field of up to 16 bits):
 * alloc never returns 0 while the block is free, and a handle stays refused
 * for at least the next 1,023 reuses of its slot (handle_pool.h), sampled. */
static int stale_wrap(void)
{
    enum { CYCLES = 70000, WINDOW = 1024 };
    static uint32_t old[WINDOW];
    const int back[] = {1, 2, 3, 64, 255, 256, 511, 512, 1000, 1023};
    hpool *p = create(8, 1);
    if (!p)
        return grade_fail("hpool_create(8, 1) returned NULL");
    for (int c = 0; c < CYCLES; c++) {
        uint32_t h = alloc_(p);
        if (h == 0)
            return grade_fail("reuse %d of a pool's only block: alloc returned 0 although the block was free (handle 0 "
                              "issued after the generation wrapped?)",
                              c + 1);
        for (size_t b = 0; b < sizeof back / sizeof back[0]; b++) {
            int k = c - back[b];
            if (k < 0)
                break;
            uint32_t stale = old[k % WINDOW];
            if (stale == h || get(p, stale) != NULL)
                return grade_fail("reuse %d of one block: the handle from %d reuses earlier (%#x) %s; a handle must be "
                                  "refused for at least 1,023 reuses of its slot (a generation field too narrow, or "
                                  "one that wraps early)",
                                  c + 1, back[b], stale, stale == h ? "was issued again" : "was accepted by get");
        }
        if (free_(p, h) != 0)
            return grade_fail("reuse %d of one block: free of the live handle did not return 0", c + 1);
        old[c % WINDOW] = h;
    }
    destroy(p);
    return 0;
}

static int check_stale(const char *arg)
{
    (void)arg;
    hpool *p = create(8, 1); /* one slot: every alloc reuses it */
    if (!p)
        return grade_fail("hpool_create(8, 1) returned NULL");
    enum { CYCLES = 200 };
    uint32_t old[CYCLES];
    for (int c = 0; c < CYCLES; c++) {
        uint32_t h = alloc_(p);
        if (h == 0)
            return grade_fail("cycle %d: alloc returned 0 on a pool whose only block was freed", c + 1);
        for (int k = 0; k < c; k++) {
            if (old[k] == h)
                return grade_fail("cycle %d: the reused block got the same handle as in cycle %d; a stale handle "
                                  "would still work (add a generation)",
                                  c + 1, k + 1);
            if (get(p, old[k]) != NULL)
                return grade_fail("cycle %d: get of the stale handle from cycle %d returned the block", c + 1, k + 1);
        }
        if (get(p, h) == NULL)
            return grade_fail("cycle %d: get of the live handle returned NULL", c + 1);
        if (c > 0 && free_(p, old[c - 1]) != -1)
            return grade_fail("cycle %d: free of the stale handle from cycle %d did not return -1", c + 1, c);
        if (free_(p, h) != 0)
            return grade_fail("cycle %d: free of the live handle did not return 0", c + 1);
        old[c] = h;
    }
    destroy(p);
    return stale_wrap() ? 1 : grade_pass();
}

static int check_foreign(const char *arg)
{
    (void)arg;
    hpool *a = create(16, 8), *b = create(16, 8);
    if (!a || !b)
        return grade_fail("hpool_create(16, 8) returned NULL");
    uint32_t ha[8], hb[8];
    for (int i = 0; i < 8; i++) {
        ha[i] = alloc_(a);
        hb[i] = alloc_(b);
        if (!ha[i] || !hb[i])
            return grade_fail("alloc %d of 8 returned 0 on a pool of 8 blocks", i + 1);
    }
    if (get(a, 0) != NULL || free_(a, 0) != -1)
        return grade_fail("handle 0 was accepted (0 is never a valid handle)");
    for (int i = 0; i < 8; i++) {
        if (hb[i] == ha[i] || get(a, hb[i]) != NULL)
            return grade_fail("a handle of another pool (%#x) was accepted by this pool, whose block %d is live: "
                              "handles need something that tells pools apart",
                              hb[i], i);
        if (free_(a, hb[i]) != -1)
            return grade_fail("free of another pool's handle %#x did not return -1", hb[i]);
    }
    for (int i = 0; i < 8; i++)
        if (get(a, ha[i]) == NULL || get(b, hb[i]) == NULL)
            return grade_fail("a refused foreign handle broke a live one");
    destroy(a);
    destroy(b);
    return grade_pass();
}

/* Handles the pool never issued: every live handle with one bit flipped
 * (an index just past the pool, a wrong generation, a wrong tag...), then
 * random 32-bit values.  get must return NULL and free -1 for each; the live
 * handles must still work.  (Under AddressSanitizer, a range check that is
 * missing or off by one shows as a read past the pool's arrays.) */
/* Handles near issued ones, into a pool with free slots: 16 slots, 8 handed
 * out, 4 of those freed, 8 never used.  Every handle within 48 of an issued
 * one, and with one or two of its bits flipped, must be refused unless it is
 * live: a pool that checks the generation but not whether the slot is handed
 * out accepts the handle a free slot would get next. */
static int near(uint32_t base, int k, uint32_t *out, char *how, size_t n)
{
    if (k < 96) {
        int d = k < 48 ? k + 1 : -(k - 47);
        *out = base + (uint32_t)d;
        snprintf(how, n, "%#x %+d", base, d);
        return 1;
    }
    k -= 96;
    int b1 = k / 32, b2 = k % 32;
    if (b1 >= b2)
        return 0;
    *out = base ^ (1u << b1) ^ (1u << b2);
    snprintf(how, n, "%#x with bits %d and %d flipped", base, b1, b2);
    return 1;
}

static int forged_free_slots(void)
{
    enum { SLOTS = 16, USED = 8 };
    hpool *p = create(16, SLOTS);
    if (!p)
        return grade_fail("hpool_create(16, %d) returned NULL", SLOTS);
    uint32_t h[USED];
    int live[USED];
    for (int i = 0; i < USED; i++) {
        h[i] = alloc_(p);
        live[i] = 1;
        if (!h[i])
            return grade_fail("alloc %d of %d returned 0", i + 1, SLOTS);
    }
    for (int i = 1; i < USED; i += 2) {
        if (free_(p, h[i]) != 0)
            return grade_fail("free of a live handle did not return 0");
        live[i] = 0;
    }
    for (int i = 0; i < USED; i++) {
        for (int k = 0; k < 96 + 32 * 32; k++) {
            uint32_t x;
            char how[96];
            if (!near(h[i], k, &x, how, sizeof how))
                continue;
            int ok = 0;
            for (int j = 0; j < USED; j++)
                ok |= live[j] && x == h[j];
            if (ok || x == 0)
                continue;
            if (get(p, x) != NULL)
                return grade_fail("get(%#x) returned a block for a handle the pool never issued (%s), with the pool's "
                                  "slots partly free: a free slot's handle must be refused (check that the slot is "
                                  "handed out, not only that the generation matches)",
                                  x, how);
            if (free_(p, x) != -1)
                return grade_fail("free(%#x) did not return -1 for a handle the pool never issued (%s), with the "
                                  "pool's slots partly free",
                                  x, how);
        }
    }
    destroy(p);
    return 0;
}

static int check_forged(const char *arg)
{
    (void)arg;
    enum { COUNT = 8, RANDOM = 4000 };
    hpool *p = create(16, COUNT);
    if (!p)
        return grade_fail("hpool_create(16, %d) returned NULL", COUNT);
    uint32_t live[COUNT];
    void *block[COUNT];
    for (int i = 0; i < COUNT; i++) {
        live[i] = alloc_(p);
        if (!live[i] || !(block[i] = get(p, live[i])))
            return grade_fail("alloc %d of %d failed, or get of its handle returned NULL", i + 1, COUNT);
    }
    uint32_t x = 2463534242u; /* xorshift32: the same values every run */
    for (int k = 0; k < COUNT * 32 + RANDOM; k++) {
        uint32_t h;
        char how[96];
        if (k < COUNT * 32) {
            h = live[k / 32] ^ (1u << (k % 32));
            snprintf(how, sizeof how, "bit %d of the live handle %#x flipped", k % 32, live[k / 32]);
        } else {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            h = x;
            snprintf(how, sizeof how, "a random value");
        }
        int issued = h == 0;
        for (int i = 0; i < COUNT; i++)
            issued |= h == live[i];
        if (issued)
            continue;
        void *m = get(p, h);
        if (m) {
            int inside = 0;
            for (int i = 0; i < COUNT; i++)
                inside |= m == block[i];
            return grade_fail("get(%#x) returned %s for a handle the pool never issued (%s): check that the index is "
                              "in range and that the generation and the pool's tag match",
                              h, inside ? "a live block" : "a pointer outside the pool", how);
        }
        if (free_(p, h) != -1)
            return grade_fail("free(%#x) did not return -1 for a handle the pool never issued (%s)", h, how);
    }
    for (int i = 0; i < COUNT; i++)
        if (get(p, live[i]) != block[i])
            return grade_fail("after refusing forged handles, the live handle %#x no longer gives its block", live[i]);
    destroy(p);
    return forged_free_slots() ? 1 : grade_pass();
}

/* Pools past 2^16 blocks: 65,535 must work (handle_pool.h); 70,000 and 2^20
 * either give NULL or work fully: every handle distinct and nonzero, every
 * block its own (an index field of 16 bits aliases block 65,536 with 0). */
static int sort_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int large(size_t count, int must_work)
{
    hpool *p = create(4, count);
    if (!p)
        return must_work ? grade_fail("hpool_create(4, %zu) returned NULL; up to 65,535 blocks must work", count) : 0;
    uint32_t *h = malloc(count * sizeof *h);
    for (size_t i = 0; i < count; i++) {
        if ((h[i] = alloc_(p)) == 0)
            return grade_fail("a pool of %zu blocks: alloc %zu returned 0 with free blocks left", count, i + 1);
        uint32_t *m = get(p, h[i]);
        if (!m)
            return grade_fail("a pool of %zu blocks: get of live handle %#x (alloc %zu) returned NULL (an index field "
                              "narrower than the pool? then return NULL for a count it cannot address)",
                              count, h[i], i + 1);
        *m = (uint32_t)i;
    }
    if (alloc_(p) != 0)
        return grade_fail("alloc %zu succeeded on a pool of %zu blocks", count + 1, count);
    for (size_t i = 0; i < count; i++) {
        uint32_t *m = get(p, h[i]);
        if (!m || *m != (uint32_t)i)
            return grade_fail("a pool of %zu blocks: block %zu (handle %#x) %s: two handles share a block (an index "
                              "field narrower than the pool? then return NULL for a count it cannot address)",
                              count, i + 1, h[i], m ? "holds another block's data" : "is gone");
    }
    qsort(h, count, sizeof *h, sort_u32);
    for (size_t i = 1; i < count; i++)
        if (h[i] == h[i - 1])
            return grade_fail("a pool of %zu blocks issued handle %#x twice (an index field narrower than the pool?)",
                              count, h[i]);
    free(h);
    destroy(p);
    return 0;
}

static int check_large(const char *arg)
{
    (void)arg;
    if (large(65535, 1) || large(70000, 0) || large((size_t)1 << 20, 0))
        return 1;
    return grade_pass();
}

/* Every allocation hpool_create makes fails in turn (the k-th, k = 0, 1, ...):
 * it must return NULL and free what it had allocated before (counted here;
 * LeakSanitizer too in the sanitized run). */
static int check_alloc_fail(const char *arg)
{
    (void)arg;
    for (long k = 0; k < 64; k++) {
        grade_alloc_arm(k);
        hpool *p = create(24, 100);
        long refused = grade_alloc_refused(), held = grade_alloc_live();
        grade_alloc_disarm();
        if (!refused) { /* create made fewer than k + 1 allocations: all paths tried */
            if (!p)
                return grade_fail("hpool_create(24, 100) returned NULL with no allocation failing");
            destroy(p);
            return grade_pass();
        }
        if (p) {
            uint32_t h = alloc_(p);
            if (h && !get(p, h))
                return grade_fail("allocation %ld of hpool_create failed, it returned a pool anyway, and that pool's "
                                  "get fails",
                                  k + 1);
            destroy(p);
            continue; /* it coped (a fallback allocation): fine */
        }
        if (held != 0)
            return grade_fail("allocation %ld of hpool_create(24, 100) failed: it returned NULL but kept %ld block(s) "
                              "allocated before the failure (free them on the failure path)",
                              k + 1, held);
    }
    return grade_fail("hpool_create(24, 100) made more than 64 allocations");
}

static int check_all(const char *arg)
{
    (void)arg;
    /* Every check in one process: run under AddressSanitizer/UBSan/LeakSanitizer. */
    /* stale last: its 70,000 reuses are the longest part */
    int (*all[])(const char *) = {check_create_args, check_exhaust, check_free_reuse, check_double_free, check_foreign,
                                  check_forged,      check_large,   check_alloc_fail, check_stale};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i](arg) != 0)
            return 1; /* a FAIL has been reported (and ended the run) */
    return 0;
}

static int timing(const char *arg)
{
    (void)arg;
    enum { ITERS = 2000000 };
    hpool *p = create(64, 1024);
    if (!p)
        return grade_fail("hpool_create(64, 1024) returned NULL");
    double t0 = grade_now_s();
    for (int i = 0; i < ITERS; i++) {
        uint32_t h = alloc_(p);
        unsigned char *m = get(p, h);
        m[0] = (unsigned char)i;
        free_(p, h);
    }
    double t1 = grade_now_s();
    volatile unsigned char sink = 0;
    for (int i = 0; i < ITERS; i++) {
        unsigned char *m = malloc(64);
        m[0] = (unsigned char)i;
        sink += m[0];
        free(m);
    }
    double t2 = grade_now_s();
    (void)sink;
    destroy(p);
    grade_info("hpool_ns", (t1 - t0) / ITERS * 1e9);
    grade_info("malloc_ns", (t2 - t1) / ITERS * 1e9);
    return grade_pass();
}

GRADE_CHECKS({"create_args", check_create_args}, {"exhaust", check_exhaust}, {"free_reuse", check_free_reuse},
             {"double_free", check_double_free}, {"stale", check_stale}, {"foreign", check_foreign},
             {"forged", check_forged}, {"large", check_large}, {"alloc_fail", check_alloc_fail}, {"all", check_all},
             {"timing", timing})
