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

/* capacity: a power of two >= 2, else NULL; the queue holds `capacity` items. */
mpmc_queue *mpmc_create(size_t capacity);
void mpmc_destroy(mpmc_queue *q);
/* false only when the queue is full */
bool mpmc_try_push(mpmc_queue *q, uint64_t value);
/* false only when the queue is empty */
bool mpmc_try_pop(mpmc_queue *q, uint64_t *out);

#endif
