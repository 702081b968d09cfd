/* logring.h - logging off the hot path: a bounded SPSC ring of fixed-size
 * log records and a background writer thread that drains it into a file.
 *
 * The hot path (ll_log_try) copies one 64-byte record into the ring: no
 * lock, no system call, no allocation, never a wait.  When the ring is full
 * the record is dropped and counted.  The writer thread pops records in
 * batches, formats them as text lines and writes each batch with one
 * write(2); when the ring is empty it sleeps (or yields), so it never spins
 * on a CPU the hot thread may need.  Nothing is lost silently:
 * logged = written + dropped + failed once the log is stopped.
 *
 * The synchronous way, for comparison: ll_log_write_sync formats one record
 * and writes it with its own write(2), on the caller's thread.
 *
 * One thread logs (the producer of the ring); ll_logring_stop is called by
 * that thread or after it has been joined.
 * Ownership: ll_logring_start allocates the log and starts its writer;
 * ll_logring_destroy stops it (if still running) and frees it.  The file
 * descriptor stays the caller's: it is never closed here. */
#ifndef LL_LOGRING_H
#define LL_LOGRING_H

#include <stddef.h>
#include <stdint.h>

#define LL_LOG_TEXT 40      /* bytes of text in a record, NUL included */
#define LL_LOG_LINE_MAX 128 /* longest formatted line, newline included */
#define LL_LOG_BATCH 256    /* records the writer takes per pop and per write(2) */

/* One log record: 64 bytes, copied whole into the ring. */
typedef struct {
    uint64_t seq;      /* event id */
    uint64_t stamp_ns; /* when the event started (monotonic ns) */
    int64_t value;     /* a value the event computed */
    char text[40];     /* LL_LOG_TEXT: a short message, NUL-terminated (at most 39 characters) */
} ll_log_record;

typedef struct ll_logring ll_logring;

typedef struct {
    size_t capacity;          /* records the ring holds: a power of two >= 2 */
    int fd;                   /* an open, writable file descriptor (not owned) */
    int writer_cpu;           /* -1: not pinned */
    uint64_t idle_ns;         /* the writer's nap when the ring is empty; 0: sched_yield instead */
    uint64_t writer_delay_ns; /* an extra nap after every batch: a deliberately slow writer (0: none) */
} ll_log_cfg;

typedef struct {
    uint64_t logged;      /* ll_log_try calls */
    uint64_t dropped;     /* ... that found the ring full */
    uint64_t written;     /* records whose line write(2) accepted */
    uint64_t failed;      /* records of batches whose write(2) failed */
    uint64_t write_calls; /* write(2) calls made by the writer */
    uint64_t bytes;       /* bytes written */
    uint64_t max_fill;    /* most records the writer found waiting when it woke */
    uint64_t wakeups;     /* times the writer found the ring empty and napped */
    int writer_pinned;    /* ll_pin_self's status (0 = pinned), or 1 when not asked */
} ll_log_stats;

/* Creates the ring and starts the writer.  LL_OK; LL_EINVAL (NULL
 * arguments, capacity not a power of two >= 2 or above 2^24, fd not open for
 * writing); LL_ENOMEM; LL_ESYS (the thread could not be created). */
int ll_logring_start(const ll_log_cfg *cfg, ll_logring **out);

/* The hot path: copies *rec into the ring.  1 when queued, 0 when the ring
 * was full (the record is dropped and counted).  Never blocks. */
int ll_log_try(ll_logring *lg, const ll_log_record *rec);

/* Counters now (a snapshot while running, exact after ll_logring_stop);
 * safe from any thread. */
void ll_logring_stats(const ll_logring *lg, ll_log_stats *out);

/* Tells the writer to finish: it writes every record still in the ring,
 * then ends; returns when it has.  Fills *out (may be NULL).  LL_OK, also
 * when already stopped. */
int ll_logring_stop(ll_logring *lg, ll_log_stats *out);

/* Stops the writer if it still runs, then frees.  NULL is allowed. */
void ll_logring_destroy(ll_logring *lg);

/* 1 when fd is an open file descriptor with write access, else 0. */
int ll_log_fd_writable(int fd);

/* Formats *rec as one line, "seq stamp_ns value text\n", into buf (cap
 * bytes, at least LL_LOG_LINE_MAX); returns its length, 0 when cap is too
 * small.  No allocation, no locale. */
size_t ll_log_format(const ll_log_record *rec, char *buf, size_t cap);

/* The synchronous logger: formats *rec and writes the line with one
 * write(2) on the calling thread.  LL_OK or LL_ESYS (see errno). */
int ll_log_write_sync(int fd, const ll_log_record *rec);

#endif
