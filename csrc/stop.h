/* stop.h - one process-wide stop flag for the core's long calls.
 *
 * Every loop that can run for long (the pipeline's two threads, the benchmark
 * loops of csrc/bench/, the histogram's array records) polls the flag and,
 * once it is set, ends early: it returns what it measured so far and, where
 * it returns a status, LL_STOPPED.  The flag stays set until ll_stop_clear,
 * so every long call made meanwhile returns at once.
 *
 * Python sets it from SIGINT (lowlat.core.stop.stoppable): a C handler,
 * attached for the duration of a long call, sets the flag at once (Python's
 * own handler would only run once the call returned) and then calls the
 * handler it replaced.  Declarations only (fed to cffi). */
#ifndef LL_STOP_H
#define LL_STOP_H

#include <stdbool.h>

/* A long call's status when it ended early on a stop request (positive: not
 * an error; its results hold the work done before the stop). */
#define LL_STOPPED 1

/* Sets / clears the flag; safe from any thread and from a signal handler. */
void ll_stop_request(void);
void ll_stop_clear(void);
/* True once a stop has been requested (and not cleared since). */
bool ll_stop_requested(void);

/* Attaches a SIGINT handler that requests a stop, then calls the handler it
 * replaced (Python's, which marks the signal for the interpreter).  LL_OK
 * (also when already attached) or LL_ESYS (sigaction failed). */
int ll_stop_sigint_attach(void);
/* Puts the replaced handler back.  LL_OK (also when not attached) or LL_ESYS. */
int ll_stop_sigint_detach(void);

#endif
