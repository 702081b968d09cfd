/* mpmc.h - the API of the MPMC exercise, included by mpmc.c and by the
 * grader's checks (checks.c): do not change it, the grader calls exactly these.
 *
 * A bounded lock-free multi-producer multi-consumer queue of uint64: any
 * number of threads may push and pop at once. */
#ifndef MPMC_H
#define MPMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mpmc_queue mpmc_queue;

/* Memory orders (the grader's ordering check reads them in mpmc.c): a store
 * that publishes a cell (or anything another function reads) is release (or
 * seq_cst), a load of what another function publishes is acquire (or seq_cst);
 * relaxed only for the ticket counters (taken by a CAS that only push, or only
 * pop, touches) and in create/destroy/mpmc_debug_set_position/
 * mpmc_debug_position. */

/* capacity: a power of two >= 2, else NULL; the queue holds `capacity` items.
 * NULL too when the memory cannot be had: capacity * sizeof(cell) overflowing
 * size_t (2^60 and up for 16-byte cells) or an allocation failing. */
mpmc_queue *mpmc_create(size_t capacity);
void mpmc_destroy(mpmc_queue *q);
/* false when the cell for the next push is not free yet: the queue holds
 * `capacity` items, or the consumer that took the oldest item's ticket has
 * not finished reading it (so with pops in flight a push may fail with fewer
 * than `capacity` items stored).  With no pop in flight: false exactly when
 * the queue is full. */
bool mpmc_try_push(mpmc_queue *q, uint64_t value);
/* false when the cell for the next pop holds no published item: the queue is
 * empty, or the producer that took the next ticket has not finished writing.
 * With no push in flight: false exactly when the queue is empty. */
bool mpmc_try_pop(mpmc_queue *q, uint64_t *out);

/* A test hook for the grader, which you write: on an empty queue that no
 * thread is using, make the next ticket of both producers and consumers
 * `pos`, as if `pos` items had already passed through (with per-cell
 * sequence numbers, set each cell's to the ticket that will use it next).
 * The checks start the tickets just below 2^32, 2^63 and 2^64 to test
 * wrap-around without pushing billions of items. */
void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos);

/* The other half of the hook, which you write too: the queue's next ticket
 * for a push in *enqueue and for a pop in *dequeue, as full 64-bit counts of
 * the tickets taken (0 and 0 for a new queue; `pos` and `pos` right after
 * mpmc_debug_set_position(q, pos); each successful push adds 1 to *enqueue,
 * each successful pop 1 to *dequeue, a failed one nothing; they wrap modulo
 * 2^64).  For the grader, which checks with it that the position set is the
 * one your queue uses, across 2^32 and 2^64: call it only when no thread is
 * pushing or popping (it is not thread-safe against them). */
void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue);

#endif
