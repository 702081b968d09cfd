/* ll_arch.h - internal: CPU-specific one-liners used by the hot loops.
 * Not part of the public API (not fed to cffi); included by the .c files. */
#ifndef LL_ARCH_H
#define LL_ARCH_H

#include <stdint.h>

/* The cache line of x86-64 and of most ARM64 cores (Apple's M-series use
 * 128 bytes, which LL_FALSE_SHARING_RANGE below also covers). */
#define LL_CACHELINE 64

/* Distance used to keep two hot variables from sharing a line *or* a pair of
 * lines: Intel and AMD prefetch the adjacent line, so 64 bytes apart can
 * still interfere; 128 cannot. */
#define LL_FALSE_SHARING_RANGE 128

/* Tell the core we are spinning: saves power and, on SMT, hands the pipeline
 * to the sibling thread.  A no-op where there is no such instruction. */
static inline void ll_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* Stops the compiler from moving memory accesses across this point.  No CPU
 * fence: the timing code uses it to keep the measured work between two clock
 * reads. */
#define ll_compiler_barrier() __asm__ __volatile__("" ::: "memory")

/* Raw timestamp counter reads.  ll_tsc_now: cheapest read, may be reordered
 * with surrounding instructions by the CPU.  ll_tsc_now_ordered: waits until
 * earlier instructions have executed (rdtscp / isb), for end-of-interval
 * stamps.  Both return 0 where there is no user-readable counter. */
static inline uint64_t ll_tsc_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

static inline uint64_t ll_tsc_now_ordered(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi, aux;
    __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
    return v;
#else
    return 0;
#endif
}

#endif
