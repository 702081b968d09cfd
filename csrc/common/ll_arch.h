/* ll_arch.h - internal: CPU-specific one-liners used by the hot loops.
 * Not part of the public API (its functions are not fed to cffi; the cffi
 * build reads its two size constants, so Python sees the values C uses). */
#ifndef LL_ARCH_H
#define LL_ARCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The cache line, the one definition the core uses (block alignment in
 * pool.c, the pointer-chase node in bench/bench_taxes.c): 64 bytes on x86-64
 * and on most ARM64 cores; 128 on Apple's M-series (arm64 macOS), the one
 * platform the course supports whose lines are larger. */
#if defined(__APPLE__) && (defined(__aarch64__) || defined(__arm64__))
#define LL_CACHELINE 128
#else
#define LL_CACHELINE 64
#endif

/* Distance used to keep two hot variables from sharing a line *or* a pair of
 * lines: Intel and AMD prefetch the adjacent line, so 64 bytes apart can
 * still interfere; 128 cannot (and it is one whole line on Apple's M-series).
 * The SPSC ring's two cursors are a measured exception on Intel cores, and
 * adjacent by default on every CPU but AMD's (spsc_inline.h,
 * ll_spsc_default_layout). */
#define LL_FALSE_SHARING_RANGE 128

/* `bytes` of memory starting on, and padded to, a LL_FALSE_SHARING_RANGE
 * boundary: nothing else allocated can share its first or last line (and
 * aligned_alloc wants a size that is a multiple of the alignment).  Free it
 * with free(); NULL without memory. */
static inline void *ll_alloc_lines(size_t bytes)
{
    size_t r = LL_FALSE_SHARING_RANGE;
    return aligned_alloc(r, (bytes + r - 1) / r * r);
}

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
 * earlier instructions have executed (rdtscp, or lfence+rdtsc where CPUID
 * has no RDTSCP; isb on ARM64), for end-of-interval stamps.  Both return 0
 * where there is no user-readable counter.  Whether the counter may be used
 * for timing at all (a constant rate) is ll_tsc_available's answer (clock.c,
 * from CPUID): callers check ll_tsc_ticks_per_ns() > 0 first. */
#if defined(__x86_64__) || defined(__i386__)
/* 1 once clock.c has found RDTSCP in CPUID.  Until then, and on a CPU or VM
 * without it, ordered reads use lfence+rdtsc, which every x86-64 has: no
 * read here can die of an illegal instruction.  Atomic (relaxed: a plain
 * load) because any thread may read it while the first one detects. */
extern atomic_int ll_tsc_has_rdtscp;
#endif

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
    uint32_t lo, hi;
    if (atomic_load_explicit(&ll_tsc_has_rdtscp, memory_order_relaxed)) {
        uint32_t aux;
        __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    } else {
        /* lfence lets no later instruction start before every earlier one
         * has completed: the same wait as rdtscp's. */
        __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi));
    }
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
