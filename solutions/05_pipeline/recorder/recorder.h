/* recorder.h - the API of the recorder exercise, included by recorder.c and
 * by the grader's checks (checks.c): do not change it, the grader calls
 * exactly these.
 *
 * The consumer's latency recorder: the newest `keep` samples and a histogram
 * of all of them, in fixed memory.  One thread records; any other thread may
 * read the count and the buckets while it does; recorder_newest is called
 * after the recording thread has stopped. */
#ifndef RECORDER_H
#define RECORDER_H

#include <stddef.h>
#include <stdint.h>

#define RECORDER_BUCKETS 65 /* bucket b holds the values whose bit length is b: 0, 1, 2-3, 4-7, ... */

typedef struct recorder recorder; /* defined in recorder.c */

recorder *recorder_create(size_t keep); /* keep >= 1 (and keep * 8 bytes fit in size_t), else NULL; allocates all */
void recorder_destroy(recorder *r);
void recorder_record(recorder *r, uint64_t latency_ns);               /* the hot path: never allocates */
uint64_t recorder_count(const recorder *r);                           /* records so far */
uint64_t recorder_bucket(const recorder *r, int b);                   /* records of bit length b; 0 outside 0..64 */
size_t recorder_newest(const recorder *r, uint64_t *out, size_t max); /* newest min(max, kept), oldest first;
                                                                      * writes out[0..max) only */

/* A test hook for the grader, which you write: on a recorder that no thread is
 * using, make the count n and bucket 0 hold n, as if n zeros had been recorded
 * (the kept samples may stay as they are).  The checks start the count just
 * below 2^32 to test a count wider than 32 bits without recording 4 billion
 * samples, and read it back at once: a hook that does nothing fails. */
void recorder_debug_set_count(recorder *r, uint64_t n);

#endif
