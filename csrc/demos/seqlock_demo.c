/* seqlock_demo.c - a stand-alone program (not part of the library build):
 * one writer thread keeps rewriting a record of WORDS equal words (1,1,..;
 * 2,2,..; ...) under a sequence lock, while the main thread keeps taking
 * snapshots of it and counts the torn ones (words not all equal).
 * usage: seqlock_demo MODE SNAPSHOTS (the writer writes until the reader
 * has taken that many), MODE one of
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
static uint64_t writes; /* written by the writer, read after the join */

/* ---- the writer: one thread only (a second writer would need a lock) ----- */

static void write_correct(uint64_t v)
{
    uint64_t q = atomic_load_explicit(&s.seq, memory_order_relaxed); /* relaxed: only this thread writes seq */
    atomic_store_explicit(&s.seq, q + 1, memory_order_relaxed);      /* relaxed: the fence below orders it */
    /* release fence: the odd value above is ordered before every data store
     * below, so a reader whose copy saw any new word also sees seq moved. */
    atomic_thread_fence(memory_order_release);
    for (int i = 0; i < WORDS; i++)
        atomic_store_explicit(&s.w[i].v, v, memory_order_relaxed); /* relaxed: the fence and seq order them */
    atomic_store_explicit(&s.seq, q + 2, memory_order_release);    /* release: the data before the even value */
}

static void write_racy(uint64_t v)
{
    uint64_t q = atomic_load_explicit(&s.seq, memory_order_relaxed); /* relaxed: only this thread writes seq */
    atomic_store_explicit(&s.seq, q + 1, memory_order_relaxed);      /* BROKEN: no fence after it */
    for (int i = 0; i < WORDS; i++)
        s.w[i].plain = v;                                       /* BROKEN: plain stores, racing with the reader */
    atomic_store_explicit(&s.seq, q + 2, memory_order_release); /* release: as in the correct one */
}

static void *writer(void *arg)
{
    (void)arg;
    uint64_t v = 0;
    while (!atomic_load_explicit(&s.done, memory_order_relaxed)) { /* relaxed: a stop flag, it guards no data */
        if (mode == RACY)
            write_racy(++v);
        else
            write_correct(++v);
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
        if (mode == RACY) {
            for (int i = 0; i < WORDS; i++)
                out[i] = s.w[i].plain; /* BROKEN: plain loads, racing with the writer */
        } else {
            for (int i = 0; i < WORDS; i++)
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
        fprintf(stderr, "usage: seqlock_demo correct|racy|unchecked [SNAPSHOTS]\n");
        return 2;
    }
    uint64_t want = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
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
