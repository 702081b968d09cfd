/* perfcount.h - whether hardware performance counters can be read here
 * (Linux perf_event_open).  VMs and containers often cannot. */
#ifndef LL_PERFCOUNT_H
#define LL_PERFCOUNT_H

#include <stdint.h>

typedef struct {
    int status;            /* LL_OK: counting works; LL_ENOTSUP: not supported here; LL_ESYS: refused or failed */
    int os_errno;          /* errno from perf_event_open when it failed */
    uint64_t instructions; /* instructions counted over a short loop (0 if not) */
    uint64_t cycles;       /* cycles counted over the same loop (0 if not) */
} ll_perf_probe_result;

/* Opens the hardware "instructions" and "cycles" counters for this thread,
 * runs a short loop, and reports what happened. */
void ll_perf_probe(ll_perf_probe_result *out);

/* The status a perf_event_open failure with this errno gets: LL_ENOTSUP when
 * the machine has no such counters (ENOSYS: no perf events in the kernel, or
 * an emulator such as qemu-user; ENOENT, ENODEV, EOPNOTSUPP: no such event,
 * usual in VMs), else LL_ESYS (EACCES, EPERM: refused, see
 * /proc/sys/kernel/perf_event_paranoid; anything else: failed). */
int ll_perf_classify_errno(int err);

#endif
