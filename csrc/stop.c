/* stop.c - the stop flag and its SIGINT handler (see stop.h). */
#define _POSIX_C_SOURCE 200809L
#include "stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>

#include "ll_common.h"

/* Read and written from signal handlers: C11 allows that only for lock-free
 * atomics. */
_Static_assert(ATOMIC_BOOL_LOCK_FREE == 2, "the stop flag must be lock-free to be set from a signal handler");

static atomic_bool stop_flag;

/* Every access is relaxed: the flag carries no data, it only asks loops to
 * end.  A loop needs to see it soon, not in any order with other memory
 * (coherence makes the store visible within microseconds), and whatever a
 * stopped loop publishes is ordered by the thread join that follows. */
void ll_stop_request(void) { atomic_store_explicit(&stop_flag, true, memory_order_relaxed); }

void ll_stop_clear(void) { atomic_store_explicit(&stop_flag, false, memory_order_relaxed); }

bool ll_stop_requested(void) { return atomic_load_explicit(&stop_flag, memory_order_relaxed); }

/* The handler we replaced; written only while ours is not installed. */
static struct sigaction previous;
static int attached;

static void on_sigint(int sig, siginfo_t *info, void *context)
{
    ll_stop_request();
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction != NULL)
            previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    }
}

int ll_stop_sigint_attach(void)
{
    if (attached)
        return LL_OK;
    struct sigaction mine;
    if (sigaction(SIGINT, NULL, &previous) != 0)
        return LL_ESYS;
    mine = previous;
    mine.sa_sigaction = on_sigint;
    mine.sa_flags = (previous.sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
    if (sigaction(SIGINT, &mine, NULL) != 0)
        return LL_ESYS;
    attached = 1;
    return LL_OK;
}

int ll_stop_sigint_detach(void)
{
    if (!attached)
        return LL_OK;
    if (sigaction(SIGINT, &previous, NULL) != 0)
        return LL_ESYS;
    attached = 0;
    return LL_OK;
}
