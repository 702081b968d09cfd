/* grade.h - support for the exercise harnesses (one check per process).
 *
 * A harness is run as `harness CHECK [ARG]`: it runs one check and prints
 *   RESULT PASS
 *   RESULT FAIL <reason>
 * and any number of `INFO key=value` lines (timings: reported, never graded).
 * Calls into the learner's code go through wrappers that note the function's
 * name in grade_current, so a crash is reported as "in mpmc_try_pop". */
#ifndef GRADE_H
#define GRADE_H

#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The learner function running on this thread, or NULL in harness code. */
static _Thread_local const char *grade_current;

#define GRADE_ENTER(name) (grade_current = (name))
#define GRADE_LEAVE() (grade_current = NULL)

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

static void grade_install_handlers(void)
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

static int grade_pass(void)
{
    printf("RESULT PASS\n");
    fflush(stdout);
    return 0;
}

static int grade_fail(const char *fmt, ...)
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

static void grade_info(const char *key, double value)
{
    printf("INFO %s=%.6g\n", key, value);
    fflush(stdout);
}

static double grade_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A watchdog for multi-threaded checks: a detached thread that samples
 * progress() every 50 ms and, if it has not changed for `seconds`, ends the
 * check with a FAIL saying what describe() reports.  A hang then costs a few
 * seconds and says where the threads were stuck, instead of a timeout. */
#include <pthread.h>
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

static void grade_watchdog(grade_progress_fn progress, grade_describe_fn describe, double seconds)
{
    grade_wd_progress = progress;
    grade_wd_describe = describe;
    grade_wd_seconds = seconds;
    pthread_t t;
    pthread_create(&t, NULL, grade_wd_main, NULL);
    pthread_detach(t);
}

#endif
