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

/* NULL on 0, on overflow, when an allocation fails (after freeing what it had
 * allocated), and for a count its handles cannot address: up to 65,535 blocks
 * must work; a larger count works fully (distinct handles) or gives NULL.
 * Blocks of any size >= 1 byte, not only multiples of 8, must not overlap. */
hpool *hpool_create(size_t block_size, size_t count);
void hpool_destroy(hpool *p);
uint32_t hpool_alloc(hpool *p);             /* a handle; 0 when exhausted; 0 is never a valid handle */
void *hpool_get(hpool *p, uint32_t handle); /* the block's memory; NULL if stale, freed or foreign */
int hpool_free(hpool *p, uint32_t handle);  /* 0 ok, -1 stale / double free / foreign */
/* Stale: a handle stays refused for at least 1,023 reuses of its slot (a
 * generation of 10 bits or more); after that it may match again.  However
 * often a slot is reused, alloc never returns 0 while a block is free, and a
 * handle the pool never issued (a free slot's next handle included) is refused. */

#endif
