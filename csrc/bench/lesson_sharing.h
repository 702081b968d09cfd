/* lesson_sharing.h - false sharing, shown with a margin (chapter 03's first
 * lesson): two threads, each adding 1 to its *own* 64-bit counter
 * `increments` times, the two counters `distance` bytes apart.  8 bytes apart
 * they share one cache line, so each increment must first take the line back
 * from the other core; LL_FALSE_SHARING_RANGE (128) bytes apart they share
 * neither a line nor the adjacent-line prefetcher's pair.  No data is shared
 * at all: the slowdown is the line alone.  On one CPU the two threads take
 * turns and the line never leaves that CPU's cache: no effect is expected. */
#ifndef LL_LESSON_SHARING_H
#define LL_LESSON_SHARING_H

#include <stdint.h>

/* How each thread adds 1 to its counter. */
enum ll_share_form {
    LL_SHARE_ATOMIC_ADD = 0,    /* atomic_fetch_add (a locked add): each one needs the line, owned */
    LL_SHARE_VOLATILE_INC = 1,  /* a volatile load, add, store: the store buffer hides part of the wait */
    LL_SHARE_RELAXED_STORE = 2, /* a relaxed store of i, no load: the store buffer batches them */
};

/* Increments per timed chunk: a few us uncontended, far above the clock's cost. */
#define LL_SHARE_CHUNK 1000

/* The two counters' distance in bytes: a multiple of 8, 8..LL_SHARE_MAX_DISTANCE. */
#define LL_SHARE_MAX_DISTANCE 4096

typedef struct {
    /* ns per increment: the median of the run's chunks (LL_SHARE_CHUNK
     * increments each, timed one by one, both threads pooled).  The threads
     * go in step, chunk by chunk, so the chunks run side by side whenever
     * both threads have a CPU; a chunk during which the other thread was
     * descheduled (a busy machine) is an outlier the median ignores. */
    double ns_per_increment;
    double wall_ns_per_increment; /* ns from the start gate until both threads are done, / increments */
    int cpu_a_pinned;             /* ll_pin_self result (0 = pinned) or 1 = not asked */
    int cpu_b_pinned;
    int cpu_a_ran; /* the CPU each thread was on when its loop ended (-1: the OS cannot say) */
    int cpu_b_ran;
} ll_share_result;

/* Runs the two threads (cpu_a, cpu_b: where to pin them, -1: not pinned).
 * LL_OK; LL_EINVAL for 0 increments, an unknown form or a bad distance;
 * LL_ENOMEM; LL_ESYS (threads); LL_EMISMATCH if a counter did not end at
 * `increments` (an update was lost: a bug in the loop, never expected). */
int ll_lesson_false_sharing(uint64_t increments, int form, int distance, int cpu_a, int cpu_b, ll_share_result *out);

#endif
