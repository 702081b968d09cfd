/* ring.h - the API of the ring exercise, included by ring.c and by the
 * grader's checks (checks.c): do not change it, the grader calls exactly these.
 *
 * A single-producer single-consumer ring of uint64: one thread pushes, one
 * other thread pops. */
#ifndef RING_H
#define RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ring ring;

/* capacity: a power of two >= 2, else NULL; holds capacity items.  NULL too when
 * the memory cannot be had: capacity * sizeof(slot) overflowing size_t (2^61 and
 * up) or an allocation failing. */
ring *ring_create(size_t capacity);
void ring_destroy(ring *r);
bool ring_try_push(ring *r, uint64_t v);   /* producer thread only; false when full */
bool ring_try_pop(ring *r, uint64_t *out); /* consumer thread only; false when empty */

/* A test hook for the grader (given in ring.c; keep it working if you change
 * the struct): on an empty ring that no thread is using, set both cursors
 * (and their cached copies) to `pos`, as if `pos` items had already passed
 * through.  The checks start the cursors just below 2^32, 2^63 and 2^64 to
 * test wrap-around without pushing billions of items. */
void ring_debug_set_position(ring *r, uint64_t pos);

/* REMOTE_LOAD(ptr, order): read the *other* side's cursor through this, never
 * with a plain atomic_load.  It is an atomic load; the grader's build
 * (GRADE_COUNT_REMOTE_LOADS) also counts each one, per thread, in a function of
 * the checks (the count itself is theirs, out of ring.c's reach).
 *
 * Memory orders (the grader's ordering check reads them in ring.c): the store
 * that publishes a cursor is release (or seq_cst), REMOTE_LOAD is acquire (or
 * seq_cst); relaxed only for a thread's reads of its own cursor and in
 * create/destroy/ring_debug_set_position (no other thread then).  Fences
 * (atomic_thread_fence release before a relaxed store, acquire after a relaxed
 * load) are accepted in their place. */
#ifdef GRADE_COUNT_REMOTE_LOADS
void ring_grade_remote_load(void); /* defined by the grader's checks: counts one read */
#define REMOTE_LOAD(ptr, order) (ring_grade_remote_load(), atomic_load_explicit((ptr), (order)))
#else
#define REMOTE_LOAD(ptr, order) atomic_load_explicit((ptr), (order))
#endif

#endif
