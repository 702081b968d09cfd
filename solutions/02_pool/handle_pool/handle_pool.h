/* handle_pool.h - the API of the handle-pool exercise, included by
 * handle_pool.c and by the grader's checks (checks.c): do not change it, the
 * grader calls exactly these.
 *
 * A pool of fixed-size blocks that hands out 32-bit handles instead of
 * pointers, so that stale handles, double frees and another pool's handles
 * are detected. */
#ifndef HANDLE_POOL_H
#define HANDLE_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct hpool hpool;

hpool *hpool_create(size_t block_size, size_t count); /* NULL on 0 or overflow */
void hpool_destroy(hpool *p);
uint32_t hpool_alloc(hpool *p);             /* a handle; 0 when exhausted; 0 is never a valid handle */
void *hpool_get(hpool *p, uint32_t handle); /* the block's memory; NULL if stale, freed or foreign */
int hpool_free(hpool *p, uint32_t handle);  /* 0 ok, -1 stale / double free / foreign */

#endif
