/* handle_pool.c - a pool that hands out handles instead of pointers.
 *
 * The task (README.md): a handle carries a block's index *and* a generation,
 * so that a stale handle (its block was freed and handed out again), a
 * double free and a handle from another pool are all detected instead of
 * silently corrupting memory.  Grade with
 *     python -m lowlat grade handle_pool handle_pool.c
 *
 * API (do not change it: the grader calls exactly these):
 *   hpool_create(block_size, count)  NULL on 0 or overflow
 *   hpool_destroy(p)
 *   hpool_alloc(p)         a handle; 0 when exhausted; 0 is never a valid handle
 *   hpool_get(p, h)        the block's memory, or NULL if h is stale, freed or foreign
 *   hpool_free(p, h)       0 ok, -1 stale / double free / foreign
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct hpool hpool;
hpool *hpool_create(size_t block_size, size_t count);
void hpool_destroy(hpool *p);
uint32_t hpool_alloc(hpool *p);
void *hpool_get(hpool *p, uint32_t handle);
int hpool_free(hpool *p, uint32_t handle);

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
