/* payload_stress.c - the payload benchmark's two threads, built with
 * -fsanitize=thread by tests/test_payload.py.
 *
 * usage: payload_stress ITEMS
 * Runs ll_bench_payload for both rings (64-byte messages, uint32 indices
 * into the pool), throughput and round trip, with rings as small as 2 slots
 * so the pool's fixed rotation wraps constantly: the producer then overwrites
 * pool entries as soon as the ring's ordering allows.  ThreadSanitizer
 * reports any write to an entry the consumer may still be reading.  Exit
 * status 0 only if every message arrived in order with its payload. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench_payload.h"
#include "ll_common.h"
#include "ll_wait.h"

int main(int argc, char **argv)
{
    uint64_t items = argc > 1 ? (uint64_t)strtoull(argv[1], NULL, 10) : 100000;
    static const size_t caps[] = {2, 4, 64};
    uint64_t errors = 0;
    for (int kind = LL_PAYLOAD_STRUCT64; kind <= LL_PAYLOAD_INDEX; kind++) {
        for (int rt = 0; rt <= 1; rt++) {
            for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
                ll_payload_cfg cfg = {
                    kind, rt, caps[c], rt ? items / 10 + 1 : items, {-1, -1, LL_WAIT_SPIN_YIELD, LL_WAIT_SPIN_YIELD}};
                ll_payload_result out;
                int rc = ll_bench_payload(&cfg, NULL, &out);
                uint64_t n = cfg.items, want = n * (n + 1) / 2;
                int bad =
                    rc != LL_OK || out.errors || out.moved != n || out.sent_sum != want || out.received_sum != want;
                errors += (uint64_t)bad;
                printf("kind %d rt %d capacity %zu: rc %d, %llu moved, %llu errors, sums %llu/%llu%s\n", kind, rt,
                       caps[c], rc, (unsigned long long)out.moved, (unsigned long long)out.errors,
                       (unsigned long long)out.sent_sum, (unsigned long long)out.received_sum, bad ? "  BAD" : "");
            }
        }
    }
    printf("%s: %llu errors\n", errors ? "FAILED" : "OK", (unsigned long long)errors);
    return errors ? 1 : 0;
}
