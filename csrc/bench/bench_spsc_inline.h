/* bench_spsc_inline.h - internal to the SPSC benchmarks (bench_spsc.c: the
 * throughput and one-thread loops; bench_rtt.c: the round trip and the
 * core-to-core bounce): what both compile into their loops.  Everything is
 * static inline, so no loop pays a call for the split into two files. */
#ifndef LL_BENCH_SPSC_INLINE_H
#define LL_BENCH_SPSC_INLINE_H

#include <stdbool.h>
#include <stdint.h>

#include "bench_spsc.h"
#include "hist.h"
#include "ll_common.h"
#include "ll_util.h"
#include "spsc_inline.h"
#include "stop.h"

/* The stop flag (stop.h) is polled every POLL_ITEMS records or round trips
 * and every POLL_WAITS failed attempts of a wait: a stopped side leaves at
 * once, and its partner, then waiting for it, leaves at its next poll.  What
 * was moved before the stop is what the results count. */
enum { POLL_ITEMS = 4096, POLL_WAITS = 64 };
#define LL_STOP_POLL(count, every) ((count) % (every) == 0 && ll_stop_requested())

/* An empty function in its own file (bench_call.c): returns its argument. */
bool ll_bench_bare_call(bool ok);

/* One record through the inlined hot path (api = 0), the exported u64 calls
 * (api = 1: ll_spsc_try_push_u64 / try_pop_u64, the value in a register),
 * the public record API (api = 2: ll_spsc_try_push / try_pop, the record
 * by pointer) or the inlined path followed by an empty call that hands back
 * its result (api = 3, "bare").  1 and 2 are a call into spsc.c, what a user
 * of the library pays; 3 prices that call alone: the same body, then a call
 * and return with no work in them, the result coming back in a register as
 * from 1 and 2.  (Called before the body, the empty call would keep the
 * body's operands alive across it, and the loop would spill them: a cost the
 * exported calls do not pay.)  Always inlined with a constant api, so each
 * loop exists once per path, without a per-record branch on it. */
static inline __attribute__((always_inline)) bool ll_bench_push_item(ll_spsc *q, uint64_t v, int api)
{
    switch (api) {
    case 1:
        return ll_spsc_try_push_u64(q, v);
    case 2:
        return ll_spsc_try_push(q, &v);
    case 3: {
        bool ok = ll_spsc_push_u64_inline(q, v);
        return ll_bench_bare_call(ok) && ok; /* "&& ok": the compiler cannot see the call return it */
    }
    default:
        return ll_spsc_push_u64_inline(q, v);
    }
}

static inline __attribute__((always_inline)) bool ll_bench_pop_item(ll_spsc *q, uint64_t *v, int api)
{
    switch (api) {
    case 1:
        return ll_spsc_try_pop_u64(q, v);
    case 2:
        return ll_spsc_try_pop(q, v);
    case 3: {
        bool ok = ll_spsc_pop_u64_inline(q, v);
        return ll_bench_bare_call(ok) && ok; /* and so *v is set whenever true comes back */
    }
    default:
        return ll_spsc_pop_u64_inline(q, v);
    }
}

/* One side of a two-thread SPSC benchmark. */
struct spsc_side {
    ll_spsc *q;    /* throughput: the ring; rtt: the ring this side pushes to */
    ll_spsc *back; /* rtt: the ring this side pops from */
    const ll_spsc_bench_cfg *cfg;
    struct ll_duo *duo;
    uint64_t *buf; /* batch buffer (batch records), allocated by the caller */
    uint64_t waits;
    uint64_t errors;
    uint64_t moved; /* records received (throughput) or round trips done (rtt) */
    int stopped;
    uint64_t t_end;
    int pinned;
    ll_hist *rtt;
    uint64_t rtt_total_ns;
};

/* The check both entry points make of a config: 1 when it is valid. */
static inline int ll_bench_spsc_cfg_ok(const ll_spsc_bench_cfg *cfg)
{
    if (!cfg || cfg->items == 0 || cfg->capacity < 2 || (cfg->capacity & (cfg->capacity - 1)) || cfg->api < 0 ||
        cfg->api > 3 || cfg->refill > cfg->capacity || !ll_pair_ok(&cfg->pair, 1))
        return 0;
    return 1;
}

#endif
