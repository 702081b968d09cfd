/* BROKEN: a constructor prints the harness's RESULT PASS line and exits. EXPECT *: defines a constructor */
#include "mpmc.h"

#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void win(void)
{
    printf("RESULT PASS\n");
    fflush(stdout);
    exit(0);
}

mpmc_queue *mpmc_create(size_t capacity)
{
    (void)capacity;
    return NULL;
}
void mpmc_destroy(mpmc_queue *q) { (void)q; }
void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos)
{
    (void)q;
    (void)pos;
}

void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue)
{
    (void)q;
    *enqueue = 0;
    *dequeue = 0;
}
bool mpmc_try_push(mpmc_queue *q, uint64_t value)
{
    (void)q;
    (void)value;
    return false;
}
bool mpmc_try_pop(mpmc_queue *q, uint64_t *out)
{
    (void)q;
    (void)out;
    return false;
}
