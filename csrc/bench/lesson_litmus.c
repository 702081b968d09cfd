/* lesson_litmus.c - the store-buffering and message-passing litmus tests
 * (see lesson_litmus.h).  The relaxed orders in the test bodies are the
 * point of the lesson; the handshake around them is ordinary
 * release/acquire.
 *
 * Placement matters: each thread reads the line it is about to load from
 * just before the trial, so at the start of a trial its load is a local hit
 * while its store has to wait for the other core to give the line up.  That
 * wait is what a store buffer hides, so the window in which the loads can
 * pass the stores is one line transfer wide.  A random delay of 0..JITTER
 * loop turns before each trial, in each thread, sweeps the two threads'
 * relative start across that window. */
#define _GNU_SOURCE
#include "lesson_litmus.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ll_arch.h"
#include "ll_common.h"
#include "ll_util.h"

/* Loop turns: a sweep of a few hundred ns, wider than a line transfer and
 * the handshake's own skew (measured: 1024 caught 6% of relaxed trials on a
 * 2-vCPU VM, 256 under 0.3%). */
enum { JITTER = 1024 };

/* Each word on its own line pair (LL_FALSE_SHARING_RANGE), allocated as one block. */
struct words {
    _Atomic uint64_t w[4 * (LL_FALSE_SHARING_RANGE / 8)];
};
#define WORD(ws, k) (&(ws)->w[(k) * (LL_FALSE_SHARING_RANGE / 8)])
enum { X = 0, Y = 1, GO = 2, READY = 3 }; /* SB: x, y; MP: data = X, flag = Y */

/* ---- the test bodies: one per test and order, so each order is a constant */

/* SB: store mine, load theirs; returns 1 if the load saw the other's store of t. */
static int sb_relaxed(_Atomic uint64_t *mine, _Atomic uint64_t *theirs, uint64_t t)
{
    atomic_store_explicit(mine, t, memory_order_relaxed);           /* relaxed: the lesson */
    return atomic_load_explicit(theirs, memory_order_relaxed) == t; /* relaxed: may pass the store */
}

static int sb_acq_rel(_Atomic uint64_t *mine, _Atomic uint64_t *theirs, uint64_t t)
{
    atomic_store_explicit(mine, t, memory_order_release);           /* release: orders earlier accesses only */
    return atomic_load_explicit(theirs, memory_order_acquire) == t; /* acquire: orders later ones only */
}

static int sb_seq_cst(_Atomic uint64_t *mine, _Atomic uint64_t *theirs, uint64_t t)
{
    atomic_store_explicit(mine, t, memory_order_seq_cst);           /* seq_cst: one total order: forbids 0/0 */
    return atomic_load_explicit(theirs, memory_order_seq_cst) == t; /* seq_cst: see the store */
}

/* MP writer: data then flag (returns 0: it reads nothing). */
static int mp_write_relaxed(_Atomic uint64_t *data, _Atomic uint64_t *flag, uint64_t t)
{
    atomic_store_explicit(data, t, memory_order_relaxed); /* relaxed: the lesson */
    atomic_store_explicit(flag, t, memory_order_relaxed); /* relaxed: may become visible before data */
    return 0;
}

static int mp_write_acq_rel(_Atomic uint64_t *data, _Atomic uint64_t *flag, uint64_t t)
{
    atomic_store_explicit(data, t, memory_order_relaxed); /* relaxed: the release below orders it */
    atomic_store_explicit(flag, t, memory_order_release); /* release: data before flag */
    return 0;
}

static int mp_write_seq_cst(_Atomic uint64_t *data, _Atomic uint64_t *flag, uint64_t t)
{
    atomic_store_explicit(data, t, memory_order_seq_cst); /* seq_cst: the strongest, for comparison */
    atomic_store_explicit(flag, t, memory_order_seq_cst); /* seq_cst: as above */
    return 0;
}

/* MP reader: flag then data; returns r1 * 2 + r2. */
static int mp_read_relaxed(_Atomic uint64_t *data, _Atomic uint64_t *flag, uint64_t t)
{
    int r1 = atomic_load_explicit(flag, memory_order_relaxed) == t; /* relaxed: the lesson */
    int r2 = atomic_load_explicit(data, memory_order_relaxed) == t; /* relaxed: may run before the flag's load */
    return r1 * 2 + r2;
}

static int mp_read_acq_rel(_Atomic uint64_t *data, _Atomic uint64_t *flag, uint64_t t)
{
    int r1 = atomic_load_explicit(flag, memory_order_acquire) == t; /* acquire: data read after the flag */
    int r2 = atomic_load_explicit(data, memory_order_relaxed) == t; /* relaxed: the acquire above orders it */
    return r1 * 2 + r2;
}

static int mp_read_seq_cst(_Atomic uint64_t *data, _Atomic uint64_t *flag, uint64_t t)
{
    int r1 = atomic_load_explicit(flag, memory_order_seq_cst) == t; /* seq_cst: the strongest */
    int r2 = atomic_load_explicit(data, memory_order_seq_cst) == t; /* seq_cst: as above */
    return r1 * 2 + r2;
}

typedef int (*body_fn)(_Atomic uint64_t *, _Atomic uint64_t *, uint64_t);

static const body_fn SB[3] = {sb_relaxed, sb_acq_rel, sb_seq_cst};
static const body_fn MP_WRITE[3] = {mp_write_relaxed, mp_write_acq_rel, mp_write_seq_cst};
static const body_fn MP_READ[3] = {mp_read_relaxed, mp_read_acq_rel, mp_read_seq_cst};

/* ---- the two threads ------------------------------------------------------ */

struct litmus {
    struct words *ws;
    struct ll_duo duo;
    int test, order, cpu_a, cpu_b, wait, pinned_a, pinned_b;
    uint64_t trials, outcomes[4];
};

static void jitter(uint64_t *rng)
{
    for (uint64_t k = ll_rng_next(rng) % JITTER; k > 0; k--)
        ll_compiler_barrier(); /* one loop turn: a cycle or so */
}

/* Waits until the word, shifted right by `shift`, equals `want`. */
static uint64_t wait_for(_Atomic uint64_t *w, uint64_t want, int shift, int policy)
{
    unsigned spins = 0;
    uint64_t v;
    while (((v = atomic_load_explicit(w, memory_order_acquire)) >> shift) != want) /* acquire: the partner's trial */
        ll_wait_once(policy, &spins);
    return v;
}

/* Thread A: releases each trial, runs its side, and tallies the outcome of
 * the previous trial when B reports it (B's bits ride on its ready word). */
static void *thread_a(void *arg)
{
    struct litmus *L = arg;
    L->pinned_a = ll_pin_if(L->cpu_a);
    if (!ll_duo_arrive(&L->duo))
        return NULL;
    _Atomic uint64_t *x = WORD(L->ws, X), *y = WORD(L->ws, Y);
    uint64_t rng = 0x243F6A8885A308D3ull, sink = 0;
    int mine = 0;
    for (uint64_t t = 1; t <= L->trials + 1; t++) {
        uint64_t ready = wait_for(WORD(L->ws, READY), t - 1, 2, L->wait);
        if (t > 1)
            L->outcomes[(L->test == LL_LITMUS_SB ? mine * 2 : 0) + (int)(ready & 3)]++;
        if (t > L->trials)
            break;
        if (L->test == LL_LITMUS_SB)
            sink += atomic_load_explicit(y, memory_order_relaxed);       /* relaxed: only brings y's line here */
        atomic_store_explicit(WORD(L->ws, GO), t, memory_order_release); /* release: the previous trial first */
        jitter(&rng);
        mine = L->test == LL_LITMUS_SB ? SB[L->order](x, y, t) : MP_WRITE[L->order](x, y, t);
    }
    ll_compiler_barrier();
    (void)sink;
    return NULL;
}

/* Thread B: reports the previous trial's bits with "ready", waits for the
 * go of the next trial, runs its side. */
static void *thread_b(void *arg)
{
    struct litmus *L = arg;
    L->pinned_b = ll_pin_if(L->cpu_b);
    if (!ll_duo_arrive(&L->duo))
        return NULL;
    _Atomic uint64_t *x = WORD(L->ws, X), *y = WORD(L->ws, Y);
    uint64_t rng = 0x13198A2E03707344ull, sink = 0;
    uint64_t bits = 0;
    for (uint64_t t = 1; t <= L->trials; t++) {
        /* relaxed: only brings the line B is about to load from (SB: x; MP: data) here */
        sink += atomic_load_explicit(x, memory_order_relaxed);
        /* release: this trial's loads happen before A's next trial */
        atomic_store_explicit(WORD(L->ws, READY), ((t - 1) << 2) | bits, memory_order_release);
        wait_for(WORD(L->ws, GO), t, 0, L->wait);
        jitter(&rng);
        bits = (uint64_t)(L->test == LL_LITMUS_SB ? SB[L->order](y, x, t) : MP_READ[L->order](x, y, t));
    }
    atomic_store_explicit(WORD(L->ws, READY), (L->trials << 2) | bits, memory_order_release); /* release: as above */
    ll_compiler_barrier();
    (void)sink;
    return NULL;
}

int ll_lesson_litmus(int test, int order, uint64_t trials, int cpu_a, int cpu_b, int wait, ll_litmus_result *out)
{
    if (!out || (test != LL_LITMUS_SB && test != LL_LITMUS_MP) || order < LL_LITMUS_RELAXED ||
        order > LL_LITMUS_SEQ_CST || trials == 0 || trials > LL_LITMUS_MAX_TRIALS || !ll_wait_bench_ok(wait))
        return LL_EINVAL;
    memset(out, 0, sizeof *out);
    struct litmus L = {.test = test, .order = order, .cpu_a = cpu_a, .cpu_b = cpu_b, .wait = wait, .trials = trials};
    L.ws = ll_alloc_lines(sizeof *L.ws);
    if (!L.ws)
        return LL_ENOMEM;
    for (size_t i = 0; i < sizeof L.ws->w / sizeof L.ws->w[0]; i++)
        atomic_init(&L.ws->w[i], 0);
    atomic_init(&L.duo.ready, 0);
    atomic_init(&L.duo.go, 0);
    int rc = ll_run_pair(thread_a, &L, thread_b, &L, &L.duo);
    if (rc == LL_OK) {
        out->seconds = (double)(ll_now_ns() - L.duo.t_start) / 1e9;
        memcpy(out->outcomes, L.outcomes, sizeof out->outcomes);
        /* SB forbids 0/0; MP forbids "flag seen, data not" (r1 = 1, r2 = 0). */
        out->reorders = L.outcomes[test == LL_LITMUS_SB ? 0 : 2];
        out->cpu_a_pinned = L.pinned_a;
        out->cpu_b_pinned = L.pinned_b;
    }
    free(L.ws);
    return rc;
}
