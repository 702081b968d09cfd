/* ll_pair.h - where the two threads of a two-thread run go and how each
 * waits: the one placement every two-thread config embeds (the pipeline's,
 * the SPSC, payload and floor benchmarks').  Fed to cffi: Python fills it as
 * a nested struct (cfg.pair.producer_cpu, or {"pair": {...}}), from
 * lowlat.core.affinity.cpu_pair and lowlat.core.wait; declarations only. */
#ifndef LL_PAIR_H
#define LL_PAIR_H

#include "ll_wait.h"

typedef struct {
    int producer_cpu;  /* -1: not pinned (both or neither) */
    int consumer_cpu;  /* -1: not pinned */
    int producer_wait; /* enum ll_wait_policy: waiting for room (or for its due time) */
    int consumer_wait; /* enum ll_wait_policy: waiting for an item */
} ll_pair_placement;

#endif
