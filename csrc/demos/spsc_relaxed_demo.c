/* spsc_relaxed_demo.c - a stand-alone program (not part of the library
 * build): the SPSC ring compiled with its publish store relaxed
 * (LL_SPSC_BROKEN_RELAXED_PUBLISH), to show that "works on x86" is not
 * "correct".  usage: spsc_relaxed_demo ITEMS
 * Built normally it usually delivers every record intact on x86; built with
 * -fsanitize=thread it reports a data race between the producer's slot write
 * and the consumer's slot read.  Built and run by
 * lowlat.experiments.demos.relaxed_publish_demo (chapter 03 and the tests). */
#define _GNU_SOURCE
#define LL_SPSC_BROKEN_RELAXED_PUBLISH 1
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "spsc_inline.h"

static uint64_t items;

static void *producer(void *arg)
{
    ll_spsc *q = arg;
    for (uint64_t i = 1; i <= items; i++)
        while (!ll_spsc_push_u64_inline(q, i))
            sched_yield();
    return NULL;
}

int main(int argc, char **argv)
{
    items = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
    ll_spsc *q = ll_spsc_create(64, sizeof(uint64_t), 0);
    pthread_t t;
    pthread_create(&t, NULL, producer, q);
    uint64_t wrong = 0, v;
    for (uint64_t i = 1; i <= items; i++) {
        while (!ll_spsc_pop_u64_inline(q, &v))
            sched_yield();
        wrong += v != i;
    }
    pthread_join(t, NULL);
    ll_spsc_destroy(q);
    printf("relaxed publish: %llu records, %llu wrong\n", (unsigned long long)items, (unsigned long long)wrong);
    return 0;
}
