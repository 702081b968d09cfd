/* perfcount.c - a probe for hardware performance counters. */
#define _GNU_SOURCE
#include "perfcount.h"

#include <errno.h>
#include <string.h>

#include "ll_common.h"

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_counter(uint64_t config)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = config;
    attr.disabled = 1;
    attr.exclude_kernel = 1; /* allowed at perf_event_paranoid <= 2 */
    attr.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

static uint64_t count_loop(int fd)
{
    volatile uint64_t x = 0;
    uint64_t v = 0;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    for (int i = 0; i < 100000; i++)
        x += (uint64_t)i;
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
        v = 0;
    return v;
}
#endif

void ll_perf_probe(ll_perf_probe_result *out)
{
    memset(out, 0, sizeof *out);
#if defined(__linux__)
    int fd = open_counter(PERF_COUNT_HW_INSTRUCTIONS);
    if (fd < 0) {
        out->os_errno = errno;
        out->status = (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV) ? LL_ENOTSUP : LL_ESYS;
        return;
    }
    out->instructions = count_loop(fd);
    close(fd);
    fd = open_counter(PERF_COUNT_HW_CPU_CYCLES);
    if (fd >= 0) {
        out->cycles = count_loop(fd);
        close(fd);
    }
    out->status = out->instructions ? LL_OK : LL_ENOTSUP;
#else
    out->status = LL_ENOTSUP;
#endif
}
