/* spsc.c - creation and the exported API of the SPSC ring; the hot path is
 * in spsc_inline.h. */
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "spsc_inline.h"

/* The vendor's layout, decided once: CPUID exits to the hypervisor on a VM,
 * and rings are created per pipeline run.  0 until decided; every thread
 * that decides finds the same value, so relaxed loads and stores suffice. */
static _Atomic unsigned g_default_layout;

static unsigned vendor_layout(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    /* CPUID leaf 0: the vendor string, in EBX, EDX, ECX. */
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        char vendor[13];
        memcpy(vendor, &b, 4);
        memcpy(vendor + 4, &d, 4);
        memcpy(vendor + 8, &c, 4);
        vendor[12] = '\0';
        if (!strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine"))
            return LL_SPSC_SPREAD;
    }
#endif
    return LL_SPSC_ADJACENT;
}

unsigned ll_spsc_default_layout(void)
{
    unsigned layout = atomic_load_explicit(&g_default_layout, memory_order_relaxed); /* a cached constant */
    if (layout == 0) {
        layout = vendor_layout();
        atomic_store_explicit(&g_default_layout, layout, memory_order_relaxed); /* the same value from any thread */
    }
    return layout;
}

ll_spsc *ll_spsc_create(size_t capacity, size_t record_size, unsigned flags)
{
    const unsigned layouts = LL_SPSC_UNPADDED | LL_SPSC_SPREAD | LL_SPSC_ADJACENT;
    if (capacity < 2 || (capacity & (capacity - 1)) != 0 || record_size == 0)
        return NULL;
    if (capacity > SIZE_MAX / record_size || flags & ~(layouts | LL_SPSC_NO_CACHE))
        return NULL;
    if ((flags & layouts) & ((flags & layouts) - 1))
        return NULL; /* one layout at most */
    if (!(flags & layouts))
        flags |= ll_spsc_default_layout();
    _Static_assert(alignof(ll_spsc) == LL_FALSE_SHARING_RANGE, "the ring's header starts a line pair");
    ll_spsc *q = ll_alloc_lines(sizeof *q);
    if (!q)
        return NULL;
    memset(q, 0, sizeof *q);
    size_t bytes = capacity * record_size;
    /* Slots start on their own line: the first record never shares a line
     * with the ring's header. */
    q->slots = ll_alloc_lines(bytes);
    if (!q->slots) {
        free(q);
        return NULL;
    }
    q->mask = capacity - 1;
    q->record_size = record_size;
    q->flags = flags;
    q->cached = !(flags & LL_SPSC_NO_CACHE);
    if (flags & LL_SPSC_UNPADDED) {
        q->tail = &q->cursors.packed.tail;
        q->head = &q->cursors.packed.head;
        q->tail_limit = &q->cursors.packed.tail_limit;
        q->head_limit = &q->cursors.packed.head_limit;
    } else if (flags & LL_SPSC_SPREAD) {
        q->tail = &q->cursors.spread.tail;
        q->head = &q->cursors.spread.head;
        q->tail_limit = &q->cursors.spread.tail_limit;
        q->head_limit = &q->cursors.spread.head_limit;
    } else {
        q->tail = &q->cursors.padded.tail;
        q->head = &q->cursors.padded.head;
        q->tail_limit = &q->cursors.padded.tail_limit;
        q->head_limit = &q->cursors.padded.head_limit;
    }
    atomic_init(q->tail, 0);
    atomic_init(q->head, 0);
    return q;
}

void ll_spsc_destroy(ll_spsc *q)
{
    if (!q)
        return;
    free(q->slots);
    free(q);
}

/* One record.  8-byte records (an index, a u64: the common case) are the
 * exported function's own body, behind one compare on the ring's read-only
 * first line: no second jump, as in the _u64 calls.  The other sizes callers
 * use most get a small leaf with a copy of constant size (plain moves, no
 * memcpy call dispatching on a run-time length); the rest copy the ring's
 * record_size. */
#define LL_SPSC_FIXED(size)                                                      \
    __attribute__((noinline)) static bool push_##size(ll_spsc *q, const void *r) \
    {                                                                            \
        return ll_spsc__push1(q, r, size);                                       \
    }                                                                            \
    __attribute__((noinline)) static bool pop_##size(ll_spsc *q, void *o) { return ll_spsc__pop1(q, o, size); }
LL_SPSC_FIXED(16)
LL_SPSC_FIXED(32)
LL_SPSC_FIXED(64)
#undef LL_SPSC_FIXED

__attribute__((noinline)) static bool push_other(ll_spsc *q, const void *r)
{
    switch (q->record_size) {
    case 16:
        return push_16(q, r);
    case 32:
        return push_32(q, r);
    case 64:
        return push_64(q, r);
    default:
        return ll_spsc__push1(q, r, q->record_size);
    }
}

__attribute__((noinline)) static bool pop_other(ll_spsc *q, void *o)
{
    switch (q->record_size) {
    case 16:
        return pop_16(q, o);
    case 32:
        return pop_32(q, o);
    case 64:
        return pop_64(q, o);
    default:
        return ll_spsc__pop1(q, o, q->record_size);
    }
}

bool ll_spsc_try_push(ll_spsc *q, const void *record)
{
    if (__builtin_expect(q->record_size != sizeof(uint64_t), 0))
        return push_other(q, record);
    return ll_spsc__push1(q, record, sizeof(uint64_t));
}

bool ll_spsc_try_pop(ll_spsc *q, void *out)
{
    if (__builtin_expect(q->record_size != sizeof(uint64_t), 0))
        return pop_other(q, out);
    return ll_spsc__pop1(q, out, sizeof(uint64_t));
}

/* record_size must be 8 (not checked here: the caller made the ring). */
bool ll_spsc_try_push_u64(ll_spsc *q, uint64_t v) { return ll_spsc__push1(q, &v, sizeof v); }
bool ll_spsc_try_pop_u64(ll_spsc *q, uint64_t *v) { return ll_spsc__pop1(q, v, sizeof *v); }
size_t ll_spsc_push_many(ll_spsc *q, const void *records, size_t n) { return ll_spsc_push_many_inline(q, records, n); }
size_t ll_spsc_pop_many(ll_spsc *q, void *out, size_t max) { return ll_spsc_pop_many_inline(q, out, max); }

size_t ll_spsc_size(const ll_spsc *q)
{
    /* acquire on both: a snapshot for monitoring; head first, so the result
     * is never negative (tail only grows past the head we read). */
    uint64_t head = atomic_load_explicit(q->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(q->tail, memory_order_acquire);
    return (size_t)(tail - head);
}

size_t ll_spsc_capacity(const ll_spsc *q) { return (size_t)q->mask + 1; }
size_t ll_spsc_record_size(const ll_spsc *q) { return q->record_size; }
unsigned ll_spsc_flags(const ll_spsc *q) { return q->flags; }

size_t ll_spsc_cursor_distance(const ll_spsc *q)
{
    uintptr_t a = (uintptr_t)q->tail, b = (uintptr_t)q->head;
    return (size_t)(a > b ? a - b : b - a);
}
