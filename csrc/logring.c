/* logring.c - the asynchronous log and the synchronous one (see logring.h).
 * The ring is spsc.h's, its hot path inlined from spsc_inline.h with the
 * record's constant size, so a log call is one 64-byte copy and a release
 * store. */
#define _GNU_SOURCE
#include "logring.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "ll_arch.h"
#include "ll_common.h"
#include "ll_util.h"
#include "spsc_inline.h"

_Static_assert(sizeof(ll_log_record) == 64, "a log record is one 64-byte copy");
_Static_assert(sizeof(((ll_log_record *)0)->text) == LL_LOG_TEXT, "LL_LOG_TEXT is the text field's size");

#define MAX_CAPACITY ((size_t)1 << 24)

struct ll_logring {
    /* Read-only after start: shared by both threads, never written. */
    ll_spsc *ring;
    int fd;
    int writer_cpu;
    uint64_t idle_ns;
    uint64_t delay_ns;
    pthread_t writer;
    int running; /* 1 from start to stop; the owner's only */
    /* The hot thread's one counter, alone on its lines: the writer's
     * counting never invalidates a line the hot path writes. */
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t dropped;
    /* The writer's counters. */
    alignas(LL_FALSE_SHARING_RANGE) _Atomic uint64_t written;
    _Atomic uint64_t failed, write_calls, bytes, max_fill, wakeups;
    _Atomic int writer_pinned;
    /* Set once, by ll_logring_stop. */
    alignas(LL_FALSE_SHARING_RANGE) _Atomic int stop;
    /* The writer's private buffers: records popped, then their lines. */
    alignas(LL_FALSE_SHARING_RANGE) ll_log_record batch[LL_LOG_BATCH];
    char text[LL_LOG_BATCH * LL_LOG_LINE_MAX];
};

/* A counter with one writing thread: a relaxed load and store (no locked
 * read-modify-write); readers need the value, not an order with other data
 * (the stop's thread join orders the final values). */
static inline void bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by, memory_order_relaxed);
}

int ll_log_fd_writable(int fd)
{
    if (fd < 0)
        return 0;
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
}

/* Decimal digits of v at p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

size_t ll_log_format(const ll_log_record *rec, char *buf, size_t cap)
{
    if (!rec || !buf || cap < LL_LOG_LINE_MAX)
        return 0;
    char *p = buf;
    p = put_u64(p, rec->seq);
    *p++ = ' ';
    p = put_u64(p, rec->stamp_ns);
    *p++ = ' ';
    if (rec->value < 0) {
        *p++ = '-';
        p = put_u64(p, 0 - (uint64_t)rec->value); /* well defined for INT64_MIN too */
    } else {
        p = put_u64(p, (uint64_t)rec->value);
    }
    *p++ = ' ';
    /* At most LL_LOG_TEXT - 1 characters; a control character (a newline
     * above all) becomes '?', so a record is always exactly one line. */
    for (size_t i = 0; i < LL_LOG_TEXT - 1 && rec->text[i]; i++) {
        unsigned char c = (unsigned char)rec->text[i];
        *p++ = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    *p++ = '\n';
    return (size_t)(p - buf);
}

/* write(2) until all n bytes are out (a file may take fewer; a signal may
 * interrupt).  0, or -1 with errno set. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ll_log_write_sync(int fd, const ll_log_record *rec)
{
    char line[LL_LOG_LINE_MAX];
    size_t n = ll_log_format(rec, line, sizeof line);
    if (n == 0) {
        errno = EINVAL;
        return LL_ESYS;
    }
    return write_all(fd, line, n) == 0 ? LL_OK : LL_ESYS;
}

int ll_log_try(ll_logring *lg, const ll_log_record *rec)
{
    if (ll_spsc__push1(lg->ring, rec, sizeof *rec))
        return 1;
    bump(&lg->dropped, 1);
    return 0;
}

/* Formats and writes the n records in lg->batch with one write(2). */
static void write_batch(ll_logring *lg, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += ll_log_format(&lg->batch[i], lg->text + len, LL_LOG_LINE_MAX);
    bump(&lg->write_calls, 1);
    if (write_all(lg->fd, lg->text, len) == 0) {
        bump(&lg->written, n);
        bump(&lg->bytes, len);
    } else {
        bump(&lg->failed, n);
    }
}

static void *writer_main(void *arg)
{
    ll_logring *lg = arg;
    /* relaxed: a status, read as a snapshot or after the join that orders it. */
    atomic_store_explicit(&lg->writer_pinned, ll_pin_if(lg->writer_cpu), memory_order_relaxed);
    for (;;) {
        /* acquire: pairs with the release in ll_logring_stop; every record
         * pushed before the stop is then visible to the pops below, so the
         * last drain misses none. */
        int stopping = atomic_load_explicit(&lg->stop, memory_order_acquire);
        uint64_t fill = ll_spsc_size(lg->ring);
        if (fill > atomic_load_explicit(&lg->max_fill, memory_order_relaxed))
            atomic_store_explicit(&lg->max_fill, fill, memory_order_relaxed); /* the writer's own counter */
        size_t n;
        while ((n = ll_spsc_pop_many_inline(lg->ring, lg->batch, LL_LOG_BATCH)) > 0) {
            write_batch(lg, n);
            if (lg->delay_ns)
                ll_sleep_ns(lg->delay_ns);
        }
        if (stopping)
            break;
        /* The ring is empty: nap, never spin.  A sleep costs no CPU but
         * leaves the records of the next idle_ns (plus the kernel's timer
         * slack) in the ring; a yield returns sooner and burns the CPU. */
        bump(&lg->wakeups, 1);
        if (lg->idle_ns)
            ll_sleep_ns(lg->idle_ns);
        else
            sched_yield();
    }
    return NULL;
}

int ll_logring_start(const ll_log_cfg *cfg, ll_logring **out)
{
    if (!cfg || !out)
        return LL_EINVAL;
    *out = NULL;
    size_t cap = cfg->capacity;
    if (cap < 2 || (cap & (cap - 1)) != 0 || cap > MAX_CAPACITY || !ll_log_fd_writable(cfg->fd))
        return LL_EINVAL;
    ll_logring *lg = ll_alloc_lines(sizeof *lg);
    if (!lg)
        return LL_ENOMEM;
    memset(lg, 0, sizeof *lg);
    lg->ring = ll_spsc_create(cap, sizeof(ll_log_record), 0);
    if (!lg->ring) {
        free(lg);
        return LL_ENOMEM;
    }
    lg->fd = cfg->fd;
    lg->writer_cpu = cfg->writer_cpu;
    lg->idle_ns = cfg->idle_ns;
    lg->delay_ns = cfg->writer_delay_ns;
    atomic_init(&lg->dropped, 0);
    atomic_init(&lg->written, 0);
    atomic_init(&lg->failed, 0);
    atomic_init(&lg->write_calls, 0);
    atomic_init(&lg->bytes, 0);
    atomic_init(&lg->max_fill, 0);
    atomic_init(&lg->wakeups, 0);
    atomic_init(&lg->writer_pinned, 1);
    atomic_init(&lg->stop, 0);
    if (pthread_create(&lg->writer, NULL, writer_main, lg) != 0) {
        ll_spsc_destroy(lg->ring);
        free(lg);
        return LL_ESYS;
    }
    lg->running = 1;
    *out = lg;
    return LL_OK;
}

void ll_logring_stats(const ll_logring *lg, ll_log_stats *out)
{
    if (!lg || !out)
        return;
    /* relaxed everywhere: counts, not data.  The ring's tail counts the
     * records it accepted; logged = accepted + dropped. */
    uint64_t dropped = atomic_load_explicit(&lg->dropped, memory_order_relaxed);
    uint64_t accepted = atomic_load_explicit(lg->ring->tail, memory_order_relaxed);
    out->logged = accepted + dropped;
    out->dropped = dropped;
    out->written = atomic_load_explicit(&lg->written, memory_order_relaxed);
    out->failed = atomic_load_explicit(&lg->failed, memory_order_relaxed);
    out->write_calls = atomic_load_explicit(&lg->write_calls, memory_order_relaxed);
    out->bytes = atomic_load_explicit(&lg->bytes, memory_order_relaxed);
    out->max_fill = atomic_load_explicit(&lg->max_fill, memory_order_relaxed);
    out->wakeups = atomic_load_explicit(&lg->wakeups, memory_order_relaxed);
    out->writer_pinned = atomic_load_explicit(&lg->writer_pinned, memory_order_relaxed);
}

int ll_logring_stop(ll_logring *lg, ll_log_stats *out)
{
    if (!lg)
        return LL_EINVAL;
    if (lg->running) {
        /* release: every push made before the stop happens before the
         * writer's final drain (it loads stop with acquire). */
        atomic_store_explicit(&lg->stop, 1, memory_order_release);
        pthread_join(lg->writer, NULL);
        lg->running = 0;
    }
    ll_logring_stats(lg, out);
    return LL_OK;
}

void ll_logring_destroy(ll_logring *lg)
{
    if (!lg)
        return;
    ll_logring_stop(lg, NULL);
    ll_spsc_destroy(lg->ring);
    free(lg);
}
