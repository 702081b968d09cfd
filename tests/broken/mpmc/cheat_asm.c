/* BROKEN: inline assembly makes the exit system call itself. EXPECT *: inline assembly */
#include "mpmc.h"

#define SYSCALL __asm__

mpmc_queue *mpmc_create(size_t capacity)
{
    (void)capacity;
#if defined(__x86_64__)
    SYSCALL volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall");
#endif
    return NULL;
}
void mpmc_destroy(mpmc_queue *q) { (void)q; }
void mpmc_debug_set_position(mpmc_queue *q, uint64_t pos)
{
    (void)q;
    (void)pos;
}

void mpmc_debug_position(const mpmc_queue *q, uint64_t *enqueue, uint64_t *dequeue)
{
    (void)q;
    *enqueue = 0;
    *dequeue = 0;
}
bool mpmc_try_push(mpmc_queue *q, uint64_t value)
{
    (void)q;
    (void)value;
    return false;
}
bool mpmc_try_pop(mpmc_queue *q, uint64_t *out)
{
    (void)q;
    (void)out;
    return false;
}
