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
    volatile uint64_t x = 0; /* volatile: every add is a load and a store the counters see */
    uint64_t v = 0;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    for (int i = 0; i < 100000; i++)
        x += (uint64_t)i;
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    (void)x; /* read once more: a write-only local is an error under clang 14's -Wunused-but-set-variable */
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
        v = 0;
    return v;
}
#endif

int ll_perf_classify_errno(int err)
{
    switch (err) {
    case ENOSYS: /* no perf_event_open at all: a kernel built without perf events, or qemu-user */
    case ENOENT: /* no such event on this CPU / hypervisor */
    case ENODEV:
    case EOPNOTSUPP:
        return LL_ENOTSUP;
    default: /* EACCES/EPERM: refused (perf_event_paranoid, a seccomp filter); anything else: failed */
        return LL_ESYS;
    }
}

void ll_perf_probe(ll_perf_probe_result *out)
{
    memset(out, 0, sizeof *out);
#if defined(__linux__)
    int fd = open_counter(PERF_COUNT_HW_INSTRUCTIONS);
    if (fd < 0) {
        out->os_errno = errno;
        out->status = ll_perf_classify_errno(errno);
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
