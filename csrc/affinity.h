/* affinity.h - which CPUs there are and pinning a thread to one of them. */
#ifndef LL_AFFINITY_H
#define LL_AFFINITY_H

/* Online CPUs (>= 1). */
int ll_cpu_count(void);
/* Pins the *calling* thread to `cpu`.  LL_OK, LL_EINVAL for a CPU that does
 * not exist or lies outside the thread's current affinity mask (pinning never
 * widens a restriction such as taskset's), LL_ENOTSUP where the OS has no
 * pinning (macOS), LL_ESYS when the OS refused (e.g. a cpuset that excludes
 * that CPU). */
int ll_pin_self(int cpu);
/* The CPU the calling thread runs on now, or -1 where the OS cannot say. */
int ll_current_cpu(void);
/* Starts a throwaway thread, pins it to `cpu` and checks it runs there, so
 * the caller's own affinity is untouched.  Returns what ll_pin_self returned,
 * or LL_ESYS if the thread ran elsewhere. */
int ll_affinity_probe(int cpu);
/* 1 if the calling thread may run on `cpu` (in its affinity mask), 0 if not,
 * LL_ENOTSUP where unknown. */
int ll_cpu_allowed(int cpu);
/* The NUMA node holding the page at `addr` (touch the memory first: a page
 * never written may not be placed yet), or -1 where the OS cannot say: no
 * NUMA support (macOS), a NULL address, or the call refused (a container's
 * seccomp filter may forbid get_mempolicy).  0 on a one-node machine. */
int ll_numa_node_of(const void *addr);

#endif
