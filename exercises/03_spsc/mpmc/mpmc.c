/* mpmc.c - a bounded lock-free multi-producer multi-consumer queue.
 *
 * The task (README.md): implement the four functions of mpmc.h so that any
 * number of threads may push and pop at once.  Grade with
 *     python -m lowlat grade mpmc mpmc.c
 */
#include "mpmc.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

/* YOUR CODE HERE (see README.md) */
struct mpmc_queue {
    size_t capacity; // replace with the fields your design needs
};

mpmc_queue *mpmc_create(size_t capacity)
{
    /* YOUR CODE HERE (see README.md) */
    (void)capacity;
    return NULL;
}

void mpmc_destroy(mpmc_queue *q)
{
    /* YOUR CODE HERE (see README.md) */
    free(q);
}

void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos)
{
    /* YOUR CODE HERE (see README.md) */
    (void)q;
    (void)pos;
}

void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue)
{
    /* YOUR CODE HERE (see README.md) */
    (void)q;
    *enqueue = 0;
    *dequeue = 0;
}

bool mpmc_try_push(mpmc_queue *q, uint64_t value)
{
    /* YOUR CODE HERE (see README.md) */
    (void)q;
    (void)value;
    return false;
}

bool mpmc_try_pop(mpmc_queue *q, uint64_t *out)
{
    /* YOUR CODE HERE (see README.md) */
    (void)q;
    (void)out;
    return false;
}
