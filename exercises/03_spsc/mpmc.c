/* mpmc.c - a bounded lock-free multi-producer multi-consumer queue.
 *
 * The task (README.md): implement the four functions below so that any
 * number of threads may push and pop at once.  Grade with
 *     python -m lowlat grade mpmc mpmc.c
 *
 * API (do not change it: the grader calls exactly these):
 *   mpmc_create(capacity)  power of two >= 2, else NULL; holds `capacity` items
 *   mpmc_destroy(q)
 *   mpmc_try_push(q, v)    false only when full
 *   mpmc_try_pop(q, &v)    false only when empty
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct mpmc_queue mpmc_queue;
mpmc_queue *mpmc_create(size_t capacity);
void mpmc_destroy(mpmc_queue *q);
bool mpmc_try_push(mpmc_queue *q, uint64_t value);
bool mpmc_try_pop(mpmc_queue *q, uint64_t *out);

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
