/* BROKEN: defines write() so that the harness's FAIL lines come out as PASS. EXPECT *: defines write */
#include "mpmc.h"

#include <stddef.h>
#include <sys/types.h>

ssize_t write(int fd, const void *buf, size_t n);
ssize_t write(int fd, const void *buf, size_t n)
{
    (void)fd;
    (void)buf;
    return (ssize_t)n; /* swallow everything */
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
