/* grade.h - what the checks of every C exercise share (one check per process).
 *
 * An exercise's checks (its folder's checks.c) are built with the learner's
 * file and run as `checks CHECK [ARG]`.  A run does one check and prints
 *   RESULT PASS
 *   RESULT FAIL <reason>
 * and any number of `INFO key=value` lines (timings: reported, never graded).
 *
 * A checks.c is written as:
 *   - its check functions, `static int check_x(const char *arg)` (arg is ""
 *     when none was given), each returning grade_pass() or grade_fail(...);
 *   - every call into the learner's code as GRADE_CALL(function, args...):
 *     a crash is then reported as "in mpmc_try_pop", not "in the harness";
 *   - at the end, its table, which also defines the shared main:
 *       GRADE_CHECKS({"bad_capacity", check_bad_capacity}, {"timing", timing})
 */
#ifndef GRADE_H
#define GRADE_H

#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The learner function running on this thread, or NULL in the checks' own code. */
static _Thread_local const char *grade_current;

/* Called with the function's name before every GRADE_CALL when set (e.g. to
 * count calls for a watchdog).  Set it before starting threads. */
static void (*grade_on_call)(const char *fn);

static inline const char *grade__enter(const char *fn)
{
    if (grade_on_call)
        grade_on_call(fn);
    grade_current = fn;
    return fn;
}

static inline void grade__leave(const char **scope)
{
    (void)scope;
    grade_current = NULL;
}

/* GRADE_CALL(fn, args...) calls fn(args...) and is that call's value (or
 * void); while it runs, a crash names fn.  The cleanup resets the name when
 * the call has returned, whatever its type. */
#define GRADE_CALL(fn, ...)                                                                  \
    __extension__({                                                                          \
        __attribute__((cleanup(grade__leave))) const char *grade__scope = grade__enter(#fn); \
        (void)grade__scope;                                                                  \
        fn(__VA_ARGS__);                                                                     \
    })

static void grade_on_signal(int sig)
{
    /* Only async-signal-safe calls here: write() and raise(). */
    const char *fn = grade_current ? grade_current : "the grading harness";
    const char *head = "GRADE_CRASH_IN ";
    ssize_t rc = write(2, head, strlen(head));
    rc = write(2, fn, strlen(fn));
    rc = write(2, "\n", 1);
    (void)rc;
    signal(sig, SIG_DFL);
    raise(sig);
}

static inline void grade_install_handlers(void)
{
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = grade_on_signal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

static inline int grade_pass(void)
{
    printf("RESULT PASS\n");
    fflush(stdout);
    return 0;
}

static inline int grade_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("RESULT FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    return 1;
}

static inline void grade_info(const char *key, double value)
{
    printf("INFO %s=%.6g\n", key, value);
    fflush(stdout);
}

static inline double grade_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The check's argument as a count, or `fallback` when none was given. */
static inline uint64_t grade_arg_u64(const char *arg, uint64_t fallback)
{
    return arg && arg[0] ? strtoull(arg, NULL, 10) : fallback;
}

/* A watchdog for multi-threaded checks: a detached thread that samples
 * progress() every 50 ms and, if it has not changed for `seconds`, ends the
 * check with a FAIL saying what describe() reports.  A hang then costs a few
 * seconds and says where the threads were stuck, instead of a timeout. */
typedef unsigned long long (*grade_progress_fn)(void);
typedef const char *(*grade_describe_fn)(void);
static grade_progress_fn grade_wd_progress;
static grade_describe_fn grade_wd_describe;
static double grade_wd_seconds;

static void *grade_wd_main(void *arg)
{
    (void)arg;
    unsigned long long last = grade_wd_progress();
    double since = grade_now_s();
    for (;;) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        unsigned long long now = grade_wd_progress();
        if (now != last) {
            last = now;
            since = grade_now_s();
        } else if (grade_now_s() - since > grade_wd_seconds) {
            printf("RESULT FAIL no progress for %.0f s: %s\n", grade_wd_seconds, grade_wd_describe());
            fflush(stdout);
            _exit(1);
        }
    }
    return NULL;
}

static inline void grade_watchdog(grade_progress_fn progress, grade_describe_fn describe, double seconds)
{
    grade_wd_progress = progress;
    grade_wd_describe = describe;
    grade_wd_seconds = seconds;
    pthread_t t;
    pthread_create(&t, NULL, grade_wd_main, NULL);
    pthread_detach(t);
}

/* ---- the table and the one main ------------------------------------------------ */
struct grade_check {
    const char *id;
    int (*run)(const char *arg);
};

static inline int grade_main(int argc, char **argv, const struct grade_check *checks)
{
    grade_install_handlers();
    const char *id = argc > 1 ? argv[1] : "";
    const char *arg = argc > 2 ? argv[2] : "";
    for (const struct grade_check *c = checks; c->id; c++)
        if (!strcmp(c->id, id))
            return c->run(arg);
    return grade_fail("unknown check '%s'", id);
}

/* The check table ({"id", function}, ...) and main, which runs the check named
 * on the command line. */
#define GRADE_CHECKS(...)                                                         \
    static const struct grade_check grade_checks[] = {__VA_ARGS__, {NULL, NULL}}; \
    int main(int argc, char **argv) { return grade_main(argc, argv, grade_checks); }

#endif
