/* spsc.h - a bounded single-producer single-consumer ring of fixed-size
 * records.  Exactly one thread pushes and exactly one thread pops; either
 * may be any thread.  Lock-free and wait-free: every call returns in a
 * bounded number of steps.
 *
 * The variants the course compares are creation-time flags of this one
 * implementation: cursors on adjacent cache lines, a line pair apart, or
 * packed into one line, and each side keeping a cached copy of the other
 * side's cursor or not.  Without a layout flag the cursors are padded and
 * placed as ll_spsc_default_layout() says for this CPU.
 * Ownership: ll_spsc_create allocates the ring; ll_spsc_destroy frees it. */
#ifndef LL_SPSC_H
#define LL_SPSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ll_spsc ll_spsc;

enum ll_spsc_flags {
    LL_SPSC_UNPADDED = 1, /* both cursors in one cache line: false sharing */
    LL_SPSC_NO_CACHE = 2, /* read the other side's cursor on every call */
    LL_SPSC_SPREAD = 4,   /* padded, the cursors a 128-byte line pair apart */
    LL_SPSC_ADJACENT = 8  /* padded, the cursors on adjacent lines */
};

/* The padded layout a ring gets without a layout flag: LL_SPSC_SPREAD on AMD
 * (and Hygon) x86 cores, LL_SPSC_ADJACENT on every other CPU.  Measured:
 * spread moved more records per second on AMD, adjacent on Intel
 * (spsc_inline.h has the figures); other CPUs get adjacent unmeasured.
 * `python -m lowlat bench` measures both on yours (spsc_adjacent_vs_spread). */
unsigned ll_spsc_default_layout(void);

/* capacity: a power of two >= 2, the number of records the ring holds
 * (no slot is sacrificed: the cursors are free-running counters).
 * record_size: bytes per record, >= 1.  flags: enum ll_spsc_flags, at most one
 * of UNPADDED / SPREAD / ADJACENT (none: ll_spsc_default_layout()).  NULL on
 * bad arguments (two layouts, an unknown flag) or no memory. */
ll_spsc *ll_spsc_create(size_t capacity, size_t record_size, unsigned flags);
void ll_spsc_destroy(ll_spsc *q);

/* Producer side.  Copies one record in; false when the ring is full.
 * A producer that finds the ring full does best to wait until a stretch of
 * slots is free (ll_spsc_size() <= capacity - k, k of several cache lines'
 * worth of records) before pushing again: retrying at once refills each slot
 * the moment it is freed, in the line the consumer is still reading, and the
 * two cores then trade that line record by record.  `python -m lowlat bench`
 * measures both loops (spsc_refill_vs_plain). */
bool ll_spsc_try_push(ll_spsc *q, const void *record);
/* Copies up to n records in one go; returns how many fit (0..n). */
size_t ll_spsc_push_many(ll_spsc *q, const void *records, size_t n);

/* The same for a ring of 8-byte records (record_size 8, not checked: the
 * caller made the ring), the value passed in a register. */
bool ll_spsc_try_push_u64(ll_spsc *q, uint64_t v);

/* Consumer side.  Copies one record out; false when the ring is empty. */
bool ll_spsc_try_pop(ll_spsc *q, void *out);
bool ll_spsc_try_pop_u64(ll_spsc *q, uint64_t *v);
/* Copies up to max records out in one go; returns how many (0..max). */
size_t ll_spsc_pop_many(ll_spsc *q, void *out, size_t max);

/* Records in the ring now: exact when neither side is active, a snapshot
 * otherwise.  Safe from any thread. */
size_t ll_spsc_size(const ll_spsc *q);
size_t ll_spsc_capacity(const ll_spsc *q);
size_t ll_spsc_record_size(const ll_spsc *q);
/* The flags given, with the layout chosen for them added (LL_SPSC_SPREAD or
 * LL_SPSC_ADJACENT when padded). */
unsigned ll_spsc_flags(const ll_spsc *q);
/* Byte distance between the two cursors (one line, 64 bytes on x86-64,
 * adjacent; LL_FALSE_SHARING_RANGE = 128 spread; 8 unpadded): the layout,
 * made visible for the chapter. */
size_t ll_spsc_cursor_distance(const ll_spsc *q);

#endif
