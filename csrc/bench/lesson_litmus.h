/* lesson_litmus.h - litmus tests: the CPU's own reordering caught in the act
 * (chapter 03b).  Two threads run one small test per trial, released
 * together by a per-trial handshake, and the outcome of each trial is
 * counted.  Trial t writes the value t, so nothing is reset between trials
 * and a read "saw the other thread's store" exactly when it read t.
 *
 *   store buffering (SB, Dekker):  A: x = t; r1 = (y == t)   B: y = t; r2 = (x == t)
 *     r1 == r2 == 0 means each load ran before the other thread's store was
 *     visible: each store waited in its core's store buffer while the later
 *     load went ahead.  x86 and ARM both allow it unless the orders are
 *     seq_cst; release/acquire still allows it (a release store does not
 *     order a *later* load).
 *   message passing (MP):  A: data = t; flag = t   B: r1 = (flag == t); r2 = (data == t)
 *     r1 == 1 && r2 == 0: the flag arrived before the data.  Allowed on ARM
 *     with relaxed orders, forbidden by release/acquire; x86 never shows it
 *     (stores leave in order, loads are kept in order).
 *
 * On one CPU the threads take turns, and a context switch drains the store
 * buffer: no reordering is expected there. */
#ifndef LL_LESSON_LITMUS_H
#define LL_LESSON_LITMUS_H

#include <stdint.h>

enum ll_litmus_test { LL_LITMUS_SB = 0, LL_LITMUS_MP = 1 };
enum ll_litmus_order {
    LL_LITMUS_RELAXED = 0, /* every access relaxed */
    LL_LITMUS_ACQ_REL = 1, /* release stores, acquire loads (SB: both; MP: the flag) */
    LL_LITMUS_SEQ_CST = 2  /* every access seq_cst */
};

/* At most this many trials per call (about 0.1 us each on two CPUs). */
#define LL_LITMUS_MAX_TRIALS 100000000

typedef struct {
    uint64_t outcomes[4]; /* trials per outcome, index r1 * 2 + r2 */
    uint64_t reorders;    /* trials with the outcome sequential consistency forbids */
    double seconds;       /* the whole run, handshakes included */
    int cpu_a_pinned;     /* ll_pin_self result (0 = pinned) or 1 = not asked */
    int cpu_b_pinned;
} ll_litmus_result;

/* Runs `trials` trials of `test` with `order` (threads on cpu_a and cpu_b,
 * -1: not pinned), each thread waiting for the other's handshake with
 * `wait` (enum ll_wait_policy, one a benchmark loop accepts: spin with two
 * CPUs, so both threads start a trial within a line transfer; a policy that
 * yields with one CPU, so the threads take turns quickly).  LL_OK,
 * LL_EINVAL (a test, order, trial count or wait out of range), LL_ENOMEM,
 * LL_ESYS (threads). */
int ll_lesson_litmus(int test, int order, uint64_t trials, int cpu_a, int cpu_b, int wait, ll_litmus_result *out);

#endif
