/* affinity.c - CPU count and thread pinning (Linux: sched_setaffinity). */
#define _GNU_SOURCE
#include "affinity.h"

#include <pthread.h>
#include <unistd.h>

#include "ll_common.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/syscall.h>
#endif

int ll_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

int ll_pin_self(int cpu)
{
    if (cpu < 0 || cpu >= ll_cpu_count())
        return LL_EINVAL;
#if defined(__linux__)
    cpu_set_t set;
    /* Never outside the mask this thread was given (taskset, a container's
     * cpuset, the process's own sched_setaffinity): pinning must not undo a
     * restriction the user chose. */
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 && !CPU_ISSET(cpu, &set))
        return LL_EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? LL_OK : LL_ESYS;
#else
    return LL_ENOTSUP;
#endif
}

int ll_current_cpu(void)
{
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

int ll_cpu_allowed(int cpu)
{
#if defined(__linux__)
    cpu_set_t set;
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return 0;
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0)
        return LL_ENOTSUP;
    return CPU_ISSET(cpu, &set) ? 1 : 0;
#else
    (void)cpu;
    return LL_ENOTSUP;
#endif
}

int ll_numa_node_of(const void *addr)
{
#if defined(__linux__) && defined(SYS_get_mempolicy)
    /* get_mempolicy's flags from <numaif.h> (libnuma's header, often not
     * installed): MPOL_F_NODE | MPOL_F_ADDR asks for the node of the page
     * holding addr rather than for a policy. */
    enum { MPOL_F_NODE_ = 1, MPOL_F_ADDR_ = 2 };
    int node = -1;
    if (!addr)
        return -1;
    if (syscall(SYS_get_mempolicy, &node, (unsigned long *)0, 0UL, addr,
                (unsigned long)(MPOL_F_NODE_ | MPOL_F_ADDR_)) != 0)
        return -1;
    return node;
#else
    (void)addr;
    return -1;
#endif
}

struct probe {
    int cpu;
    int result;
};

static void *probe_main(void *arg)
{
    struct probe *p = arg;
    p->result = ll_pin_self(p->cpu);
    if (p->result == LL_OK) {
        int where = ll_current_cpu();
        if (where >= 0 && where != p->cpu)
            p->result = LL_ESYS;
    }
    return NULL;
}

int ll_affinity_probe(int cpu)
{
    struct probe p = {cpu, LL_ESYS};
    pthread_t t;
    if (pthread_create(&t, NULL, probe_main, &p) != 0)
        return LL_ESYS;
    pthread_join(t, NULL);
    return p.result;
}
