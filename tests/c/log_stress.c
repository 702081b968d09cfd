/* log_stress.c - the asynchronous log under ThreadSanitizer (and plain),
 * built by tests/test_coldlog.py.
 *
 * usage: log_stress RECORDS
 * One thread logs RECORDS records into logs of several shapes (a roomy ring,
 * a ring of 2 with a slowed writer, a writer that yields instead of napping)
 * while another thread reads the counters; then the benchmark loop runs in
 * each mode.  Checked: logged = written + dropped (+ failed, which must be
 * 0); the file holds exactly `written` lines, each "seq stamp value text"
 * with the ids strictly increasing; a tiny ring drops (counted).  Exit
 * status 0 only if all held. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_log.h"
#include "hist.h"
#include "ll_common.h"
#include "logring.h"

static unsigned long errors;

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "FAIL %s: %s\n", what, why);
    errors++;
}

static int temp_fd(void)
{
    char name[] = "/tmp/lowlat-log-stress-XXXXXX";
    int fd = mkstemp(name);
    if (fd >= 0)
        unlink(name); /* gone when closed */
    return fd;
}

/* Reads the whole file back and checks every line; returns the line count,
 * or -1 after reporting what was wrong. */
static long check_file(const char *what, int fd, const char *text)
{
    off_t size = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)size + 1);
    if (!buf || pread(fd, buf, (size_t)size, 0) != size) {
        fail(what, "cannot read the log file back");
        free(buf);
        return -1;
    }
    buf[size] = '\0';
    long lines = 0;
    unsigned long long last = 0;
    for (char *p = buf; p < buf + size;) {
        char *nl = memchr(p, '\n', (size_t)(buf + size - p));
        if (!nl) {
            fail(what, "the last line has no newline");
            lines = -1;
            break;
        }
        *nl = '\0';
        unsigned long long seq, stamp;
        long long value;
        int used = 0;
        if (sscanf(p, "%llu %llu %lld %n", &seq, &stamp, &value, &used) != 3 || strcmp(p + used, text) != 0) {
            fprintf(stderr, "bad line: '%s'\n", p);
            fail(what, "a line does not parse");
            lines = -1;
            break;
        }
        if (lines > 0 && seq <= last) {
            fail(what, "ids out of order");
            lines = -1;
            break;
        }
        last = seq;
        lines++;
        p = nl + 1;
    }
    free(buf);
    return lines;
}

struct watch {
    ll_logring *lg;
    atomic_int done;
    unsigned long reads;
};

/* Reads the counters while the log runs (they are atomics: no race). */
static void *watcher(void *arg)
{
    struct watch *w = arg;
    ll_log_stats st;
    while (!atomic_load_explicit(&w->done, memory_order_acquire)) {
        ll_logring_stats(w->lg, &st);
        if (st.written + st.dropped > st.logged + 2 * LL_LOG_BATCH)
            fail("watcher", "more written + dropped than logged");
        w->reads++;
        usleep(100);
    }
    return NULL;
}

/* retry: a refused record is logged again after a yield until the ring
 * takes it (every record then reaches the file; each refusal still counts
 * as a logged-and-dropped call). */
static void direct(const char *what, unsigned long n, size_t capacity, uint64_t idle_ns, uint64_t delay_ns,
                   int expect_drops, int retry)
{
    int fd = temp_fd();
    ll_log_cfg cfg = {capacity, fd, -1, idle_ns, delay_ns};
    ll_logring *lg;
    if (fd < 0 || ll_logring_start(&cfg, &lg) != LL_OK) {
        fail(what, "cannot start the log");
        return;
    }
    struct watch w = {lg, 0, 0};
    pthread_t t;
    int watching = pthread_create(&t, NULL, watcher, &w) == 0;
    ll_log_record rec;
    memset(&rec, 0, sizeof rec);
    strcpy(rec.text, "stress");
    unsigned long queued = 0;
    for (unsigned long i = 0; i < n; i++) {
        rec.seq = i;
        rec.stamp_ns = 1000 + i;
        rec.value = (int64_t)i * ((i & 1) ? -1 : 1);
        int ok;
        while (!(ok = ll_log_try(lg, &rec)) && retry)
            sched_yield();
        queued += (unsigned long)ok;
    }
    ll_log_stats st;
    ll_logring_stop(lg, &st);
    atomic_store_explicit(&w.done, 1, memory_order_release);
    if (watching)
        pthread_join(t, NULL);
    ll_logring_destroy(lg);
    if (retry ? st.written != n : st.logged != n)
        fail(what, retry ? "written != records pushed" : "logged != records pushed");
    if (st.logged != st.written + st.dropped + st.failed)
        fail(what, "a record was lost: logged != written + dropped + failed");
    if (st.failed != 0)
        fail(what, "a write failed");
    if (queued != st.logged - st.dropped)
        fail(what, "ll_log_try's answers disagree with the drop count");
    if (expect_drops && st.dropped == 0)
        fail(what, "a ring of 2 behind a slowed writer dropped nothing");
    long lines = check_file(what, fd, "stress");
    if (lines >= 0 && (unsigned long)lines != st.written)
        fail(what, "lines in the file != written");
    close(fd);
    printf("%-28s logged %llu written %llu dropped %llu writes %llu max fill %llu (%lu counter reads)\n", what,
           (unsigned long long)st.logged, (unsigned long long)st.written, (unsigned long long)st.dropped,
           (unsigned long long)st.write_calls, (unsigned long long)st.max_fill, w.reads);
}

static void bench(const char *what, int mode, unsigned long n, double rate, size_t capacity)
{
    int fd = temp_fd();
    ll_hist *h = ll_hist_create(1, 3600000000000ull, 3);
    ll_log_bench_cfg cfg = {n, rate, mode, fd, capacity, -1, -1, 50000, 0};
    ll_log_bench_result r;
    if (fd < 0 || !h || ll_bench_log(&cfg, h, &r) != LL_OK) {
        fail(what, "ll_bench_log failed");
    } else {
        if (r.events != n || ll_hist_count(h) != n)
            fail(what, "events or histogram count != asked");
        if (r.logged != r.written + r.dropped + r.failed || r.failed)
            fail(what, "logged != written + dropped");
        if (mode == LL_LOG_NONE && (r.logged || r.written))
            fail(what, "the baseline logged");
        long lines = check_file(what, fd, "px update");
        if (lines >= 0 && (unsigned long)lines != r.written)
            fail(what, "lines in the file != written");
        printf("%-28s events %llu written %llu dropped %llu\n", what, (unsigned long long)r.events,
               (unsigned long long)r.written, (unsigned long long)r.dropped);
    }
    if (fd >= 0)
        close(fd);
    ll_hist_destroy(h);
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
    ll_log_cfg bad = {3, 1, -1, 0, 0};
    ll_logring *lg;
    if (ll_logring_start(&bad, &lg) != LL_EINVAL)
        fail("arguments", "capacity 3 accepted");
    bad.capacity = 8;
    bad.fd = -1;
    if (ll_logring_start(&bad, &lg) != LL_EINVAL)
        fail("arguments", "fd -1 accepted");
    direct("roomy ring, napping writer", n, 1024, 50000, 0, 0, 0);
    direct("retrying producer", n, 256, 50000, 0, 0, 1);
    direct("ring of 2, slowed writer", n, 2, 50000, 20000, 1, 0);
    direct("yielding writer", n, 64, 0, 0, 0, 0);
    bench("bench: none", LL_LOG_NONE, n / 10, 0.0, 1024);
    bench("bench: sync", LL_LOG_SYNC, n / 10, 0.0, 1024);
    bench("bench: async back to back", LL_LOG_ASYNC, n / 10, 0.0, 1024);
    bench("bench: async at 200k/s", LL_LOG_ASYNC, n / 10, 200000.0, 1024);
    printf("OK: %lu errors\n", errors);
    return errors != 0;
}
