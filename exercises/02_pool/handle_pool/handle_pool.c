/* handle_pool.c - a pool that hands out handles instead of pointers.
 *
 * The task (README.md): a handle carries a block's index *and* a generation,
 * so that a stale handle (its block was freed and handed out again), a
 * double free and a handle from another pool are all detected instead of
 * silently corrupting memory.  Grade with
 *     python -m lowlat grade handle_pool handle_pool.c
 * The API is in handle_pool.h.
 */
#include "handle_pool.h"

#include <stdatomic.h>
#include <stdlib.h>

/* YOUR CODE HERE (see README.md) */

hpool *hpool_create(size_t block_size, size_t count)
{
    /* YOUR CODE HERE (see README.md) */
    (void)block_size;
    (void)count;
    return NULL;
}

void hpool_destroy(hpool *p)
{
    /* YOUR CODE HERE (see README.md) */
    (void)p;
}

uint32_t hpool_alloc(hpool *p)
{
    /* YOUR CODE HERE (see README.md) */
    (void)p;
    return 0;
}

void *hpool_get(hpool *p, uint32_t handle)
{
    /* YOUR CODE HERE (see README.md) */
    (void)p;
    (void)handle;
    return NULL;
}

int hpool_free(hpool *p, uint32_t handle)
{
    /* YOUR CODE HERE (see README.md) */
    (void)p;
    (void)handle;
    return -1;
}
