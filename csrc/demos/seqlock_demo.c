/* seqlock_demo.c - a stand-alone program (not part of the library build):
 * one writer thread keeps rewriting a record of WORDS equal words (1,1,..;
 * 2,2,..; ...) under a sequence lock, while the main thread keeps taking
 * snapshots of it and counts the torn ones (words not all equal).
 * usage: seqlock_demo MODE SNAPSHOTS [HOLD_NS [READER_CPU WRITER_CPU]] (the
 * reader (the main thread) and the writer pinned to those CPUs, -1 or absent:
 * not pinned; a new thread often starts on its parent's CPU, where it would
 * only take turns with the reader; the writer writes until the
 * reader has taken that many.  HOLD_NS (default 0) stretches both sides so
 * that they overlap often and the retries, or the torn snapshots, are really
 * exercised: each write holds the record half written for HOLD_NS; each copy
 * takes 2 x HOLD_NS between its halves, as a larger record's would; the
 * writer rests 3 x HOLD_NS between writes, so a copy can fit between two
 * writes, and about a quarter of the copies straddle one), MODE one of
 *   correct    the C11 recipe: TSan-clean, never a torn snapshot;
 *   racy       the same steps with plain (non-atomic) data and no fences:
 *              a data race in C, which ThreadSanitizer reports, even where
 *              this CPU and compiler happen to keep the order;
 *   unchecked  atomic data, but the reader never re-reads the sequence
 *              after its copy: no data race at all (TSan is silent), yet
 *              torn snapshots whenever the copy overlaps a write.
 * Prints one line: "seqlock MODE: R snapshots, T torn, X retries, W writes".
 * Built and run by lowlat.experiments.memory_orders.seqlock_demo (chapter 03b and the tests). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WORDS = 16 }; /* one word per cache line: a copy takes 16 line transfers, long enough to be caught mid-way */
enum mode { CORRECT, RACY, UNCHECKED };

static struct {
    _Alignas(128) _Atomic uint64_t seq; /* odd while a write is in progress */
    struct {
        _Alignas(64) _Atomic uint64_t v;
        uint64_t plain; /* the racy mode's word: an ordinary one */
    } w[WORDS];
    _Alignas(128) atomic_int done;
} s;

static enum mode mode;
static uint64_t hold_ns; /* set before the writer starts, read-only after */
static int writer_cpu = -1;
static uint64_t writes; /* written by the writer, read after the join */

/* ---- the writer: one thread only (a second writer would need a lock) ----- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Work that takes `times` x hold_ns: inside the write section (the record
 * stays half written, seq odd, as a longer update keeps it), inside a copy,
 * and between two writes (the record whole, seq even: a reader's chance). */
static void hold(uint64_t times)
{
    if (hold_ns == 0)
        return;
    uint64_t end = now_ns() + times * hold_ns;
    while (now_ns() < end) {
    }
}

static void write_correct(uint64_t v)
{
    uint64_t q = atomic_load_explicit(&s.seq, memory_order_relaxed); /* relaxed: only this thread writes seq */
    atomic_store_explicit(&s.seq, q + 1, memory_order_relaxed);      /* relaxed: the fence below orders it */
    /* release fence: the odd value above is ordered before every data store
     * below, so a reader whose copy saw any new word also sees seq moved. */
    atomic_thread_fence(memory_order_release);
    for (int i = 0; i < WORDS; i++) {
        if (i == WORDS / 2)
            hold(1);
        atomic_store_explicit(&s.w[i].v, v, memory_order_relaxed); /* relaxed: the fence and seq order them */
    }
    atomic_store_explicit(&s.seq, q + 2, memory_order_release); /* release: the data before the even value */
}

static void write_racy(uint64_t v)
{
    uint64_t q = atomic_load_explicit(&s.seq, memory_order_relaxed); /* relaxed: only this thread writes seq */
    atomic_store_explicit(&s.seq, q + 1, memory_order_relaxed);      /* BROKEN: no fence after it */
    for (int i = 0; i < WORDS; i++) {
        if (i == WORDS / 2)
            hold(1);
        s.w[i].plain = v; /* BROKEN: plain stores, racing with the reader */
    }
    atomic_store_explicit(&s.seq, q + 2, memory_order_release); /* release: as in the correct one */
}

/* Pins the calling thread to `cpu` (-1: leaves it); 0 on success or when
 * not asked, -1 when the OS refused or cannot pin (macOS). */
static int pin(int cpu)
{
    if (cpu < 0)
        return 0;
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 0 : -1;
#else
    return -1;
#endif
}

static void *writer(void *arg)
{
    (void)arg;
    if (pin(writer_cpu) != 0)
        fprintf(stderr, "seqlock_demo: could not pin the writer to CPU %d\n", writer_cpu);
    uint64_t v = 0;
    while (!atomic_load_explicit(&s.done, memory_order_relaxed)) { /* relaxed: a stop flag, it guards no data */
        if (mode == RACY)
            write_racy(++v);
        else
            write_correct(++v);
        hold(3);
    }
    writes = v;
    return NULL;
}

/* ---- the reader: returns the retries this snapshot took -------------------- */

static uint64_t read_snapshot(uint64_t out[WORDS])
{
    uint64_t retries = 0;
    for (;; retries++) {
        uint64_t s1 = atomic_load_explicit(&s.seq, memory_order_acquire); /* acquire: the copy stays after it */
        if (s1 & 1) {
            sched_yield(); /* a write is in progress: let the writer finish it (one CPU) */
            continue;
        }
        for (int i = 0; i < WORDS; i++) {
            if (i == WORDS / 2)
                hold(2); /* a long copy, as a larger record's would be */
            if (mode == RACY)
                out[i] = s.w[i].plain; /* BROKEN: plain loads, racing with the writer */
            else
                out[i] = atomic_load_explicit(&s.w[i].v, memory_order_relaxed); /* relaxed: the fence orders them */
        }
        if (mode == UNCHECKED)
            return retries; /* BROKEN: never checks that no write overlapped the copy */
        if (mode == CORRECT)
            /* acquire fence: the copy's loads are ordered before the re-read of
             * seq, so a write that overlapped them shows as a changed seq. */
            atomic_thread_fence(memory_order_acquire);
        uint64_t s2 = atomic_load_explicit(&s.seq, memory_order_relaxed); /* relaxed: the fence orders it */
        if (s1 == s2)
            return retries;
    }
}

static int torn(const uint64_t w[WORDS])
{
    for (int i = 1; i < WORDS; i++)
        if (w[i] != w[0])
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "correct";
    if (strcmp(name, "correct") == 0)
        mode = CORRECT;
    else if (strcmp(name, "racy") == 0)
        mode = RACY;
    else if (strcmp(name, "unchecked") == 0)
        mode = UNCHECKED;
    else {
        fprintf(stderr, "usage: seqlock_demo correct|racy|unchecked [SNAPSHOTS [HOLD_NS [READER_CPU WRITER_CPU]]]\n");
        return 2;
    }
    uint64_t want = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
    hold_ns = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
    if (hold_ns > 1000000) {
        fprintf(stderr, "seqlock_demo: HOLD_NS must be at most 1000000 (1 ms)\n");
        return 2;
    }
    int reader_cpu = argc > 4 ? atoi(argv[4]) : -1;
    writer_cpu = argc > 5 ? atoi(argv[5]) : -1;
    if (pin(reader_cpu) != 0)
        fprintf(stderr, "seqlock_demo: could not pin the reader to CPU %d\n", reader_cpu);
    pthread_t t;
    if (pthread_create(&t, NULL, writer, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }
    uint64_t snapshots = 0, broken = 0, retries = 0, w[WORDS];
    while (atomic_load_explicit(&s.seq, memory_order_relaxed) < 2) /* relaxed: only waits for a first write */
        sched_yield();
    for (; snapshots < want; snapshots++) {
        retries += read_snapshot(w);
        broken += torn(w);
    }
    atomic_store_explicit(&s.done, 1, memory_order_relaxed); /* relaxed: a stop flag, see writer() */
    pthread_join(t, NULL);
    printf("seqlock %s: %llu snapshots, %llu torn, %llu retries, %llu writes\n", name, (unsigned long long)snapshots,
           (unsigned long long)broken, (unsigned long long)retries, (unsigned long long)writes);
    return 0;
}
