/* grade_alloc.h - allocation failure injected into the learner's code, and
 * the blocks it still holds counted, for checks linked with --wrap for every
 * allocator entry point a learner's file may call (see the handle_pool
 * exercise's exercise.toml and lowlat.grading.objcheck.ALLOCATORS).
 *
 * Include it once, in checks.c, after grade.h.  While armed
 * (grade_alloc_arm(k)), the k-th allocation from then on (k = 0: the first)
 * returns NULL (posix_memalign: ENOMEM), and grade_alloc_live() is the number
 * of blocks allocated and not yet freed since arming.  Disarmed, the wrappers
 * only forward.  Every allocation in the process goes through them (--wrap
 * applies to every object linked), so a check arms around one call into the
 * learner's code. */
#ifndef GRADE_ALLOC_H
#define GRADE_ALLOC_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_reallocarray(void *p, size_t n, size_t size);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **out, size_t align, size_t n);
void *__real_memalign(size_t align, size_t n);
void *__real_valloc(size_t n);
void __real_free(void *p);

static atomic_int grade_alloc_armed;   /* 1 while a check injects failures */
static atomic_long grade_alloc_left;   /* allocations to let through before the failing one */
static atomic_long grade_alloc_nlive;  /* blocks allocated and not freed since arming */
static atomic_long grade_alloc_failed; /* allocations refused since arming */

static inline void grade_alloc_arm(long k)
{
    atomic_store(&grade_alloc_left, k);
    atomic_store(&grade_alloc_nlive, 0);
    atomic_store(&grade_alloc_failed, 0);
    atomic_store(&grade_alloc_armed, 1);
}
static inline void grade_alloc_disarm(void) { atomic_store(&grade_alloc_armed, 0); }
static inline long grade_alloc_live(void) { return atomic_load(&grade_alloc_nlive); }
static inline long grade_alloc_refused(void) { return atomic_load(&grade_alloc_failed); }

/* 1: this allocation fails (the armed count reached 0). */
static int grade_alloc__fail(void)
{
    if (!atomic_load_explicit(&grade_alloc_armed, memory_order_relaxed))
        return 0;
    if (atomic_fetch_sub(&grade_alloc_left, 1) == 0) {
        atomic_fetch_add(&grade_alloc_failed, 1);
        return 1;
    }
    return 0;
}
static void *grade_alloc__got(void *p)
{
    if (p && atomic_load_explicit(&grade_alloc_armed, memory_order_relaxed))
        atomic_fetch_add(&grade_alloc_nlive, 1);
    return p;
}

void *__wrap_malloc(size_t n) { return grade_alloc__fail() ? NULL : grade_alloc__got(__real_malloc(n)); }
void *__wrap_calloc(size_t n, size_t size)
{
    return grade_alloc__fail() ? NULL : grade_alloc__got(__real_calloc(n, size));
}
void *__wrap_realloc(void *p, size_t n)
{
    if (grade_alloc__fail())
        return NULL;
    void *q = __real_realloc(p, n);
    return p ? q : grade_alloc__got(q); /* a resize keeps the count; realloc(NULL, n) allocates */
}
void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
    if (grade_alloc__fail())
        return NULL;
    void *q = __real_reallocarray(p, n, size);
    return p ? q : grade_alloc__got(q);
}
void *__wrap_aligned_alloc(size_t align, size_t n)
{
    return grade_alloc__fail() ? NULL : grade_alloc__got(__real_aligned_alloc(align, n));
}
int __wrap_posix_memalign(void **out, size_t align, size_t n)
{
    if (grade_alloc__fail())
        return ENOMEM;
    int rc = __real_posix_memalign(out, align, n);
    if (rc == 0)
        grade_alloc__got(*out);
    return rc;
}
void *__wrap_memalign(size_t align, size_t n)
{
    return grade_alloc__fail() ? NULL : grade_alloc__got(__real_memalign(align, n));
}
void *__wrap_valloc(size_t n) { return grade_alloc__fail() ? NULL : grade_alloc__got(__real_valloc(n)); }
void __wrap_free(void *p)
{
    if (p && atomic_load_explicit(&grade_alloc_armed, memory_order_relaxed))
        atomic_fetch_sub(&grade_alloc_nlive, 1);
    __real_free(p);
}

#endif
