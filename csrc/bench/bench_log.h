/* bench_log.h - what logging costs the hot path.  A hot thread handles
 * events (a little arithmetic, then a 64-byte log record: event id, time
 * stamp, value, text), back to back or on a fixed schedule, and times each
 * event from its start to the return of its log call with the core's stamps
 * (ll_stamp.h).  Three modes: no logging (the baseline), a synchronous
 * write(2) of the formatted line per event, and the asynchronous log of
 * logring.h (a copy into a ring; a writer thread formats and writes). */
#ifndef LL_BENCH_LOG_H
#define LL_BENCH_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

enum ll_log_mode {
    LL_LOG_NONE = 0, /* the event's work and record, no log call */
    LL_LOG_SYNC = 1, /* ll_log_write_sync: format + write(2) on the hot thread */
    LL_LOG_ASYNC = 2 /* ll_log_try: a copy into the ring, the writer does the rest */
};

typedef struct {
    uint64_t events;          /* events to handle, >= 1 */
    double rate_per_s;        /* 0: back to back; else event i is due at start + i / rate (<= 1e8) */
    int mode;                 /* enum ll_log_mode */
    int fd;                   /* the log file (SYNC, ASYNC): open for writing, not owned */
    size_t capacity;          /* ASYNC: ring records (ll_log_cfg) */
    int hot_cpu;              /* -1: not pinned */
    int writer_cpu;           /* ASYNC; -1: not pinned */
    uint64_t idle_ns;         /* ASYNC: the writer's nap when the ring is empty; 0: sched_yield */
    uint64_t writer_delay_ns; /* ASYNC: a nap after every batch (a slowed writer); 0: none */
} ll_log_bench_cfg;

typedef struct {
    uint64_t events;      /* handled (fewer than asked after a stop request) */
    uint64_t logged;      /* log calls (0 for NONE) */
    uint64_t written;     /* lines write(2) accepted */
    uint64_t dropped;     /* ASYNC: records the full ring refused */
    uint64_t failed;      /* lines a write(2) refused */
    uint64_t write_calls; /* write(2) calls, on either thread */
    uint64_t max_fill;    /* ASYNC: most records the writer found waiting */
    uint64_t late;        /* fixed rate: events that started more than 10 us after they were due */
    double seconds;       /* the hot loop's wall time */
    int hot_pinned;       /* ll_pin_self's status (0 = pinned), or 1 when not asked */
    int writer_pinned;
} ll_log_bench_result;

/* Records each event's time (ns, start to end of its log call) into `lat`.
 * LL_OK, LL_EINVAL, LL_ENOMEM, LL_ESYS (a thread), LL_STOPPED (stop flag:
 * the counts cover the events handled). */
int ll_bench_log(const ll_log_bench_cfg *cfg, ll_hist *lat, ll_log_bench_result *out);

#endif
