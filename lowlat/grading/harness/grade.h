/* grade.h - what the checks of every C exercise share (one check per process).
 *
 * An exercise's checks (its folder's checks.c) are built with the learner's
 * file and run as `checks CHECK [ARG]`.  A run does one check and reports,
 * once, at its end, on the grader's own channel: the file descriptor named by
 * $GRADE_REPORT_FD, each line carrying the run's nonce ($GRADE_NONCE):
 *   RESULT <nonce> PASS
 *   RESULT <nonce> FAIL <reason>
 *   INFO <nonce> key=value           (timings: reported, never graded)
 *   CRASH <nonce> <function>         (from the signal handler)
 * A FAIL ends the process at once with status 1 (_exit: nothing of the
 * failed check runs afterwards, and LeakSanitizer does not blame the learner
 * for what the check left allocated when it gave up); a PASS returns from
 * main with status 0.  The grader accepts a PASS only with status 0 and no
 * sanitizer report.  Without $GRADE_REPORT_FD (running the binary by hand)
 * the lines go to standard output.
 *
 * Every call into the learner's code is watched: if one does not return
 * within GRADE_STUCK_S seconds, the check fails at once, naming the function
 * ("ring_create did not return within 3 s").
 *
 * A checks.c is written as:
 *   - its check functions, `static int check_x(const char *arg)` (arg is ""
 *     when none was given), each returning grade_pass() or grade_fail(...);
 *   - every call into the learner's code as GRADE_CALL(function, args...):
 *     a crash is then reported as "in mpmc_try_pop", not "in the harness",
 *     and a hang names it too;
 *   - at the end, its table, which also defines the shared main:
 *       GRADE_CHECKS({"bad_capacity", check_bad_capacity}, {"timing", timing})
 */
#ifndef GRADE_H
#define GRADE_H

#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef GRADE_STUCK_S
#define GRADE_STUCK_S 3.0 /* a single call into the learner's code longer than this is a hang */
#endif
#define GRADE_MAX_THREADS 64

/* ---- the report channel ---------------------------------------------------------- */
static int grade_report_fd = 1;
static char grade_nonce[72] = "-";
static atomic_int grade_reported; /* the one RESULT line has been written */

static void grade__write_all(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = write(grade_report_fd, s, n);
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

/* "KIND nonce text\n", text on one line (a reason's newlines become spaces). */
static void grade__emit(const char *kind, const char *text)
{
    char line[2048];
    int n = snprintf(line, sizeof line - 1, "%s %s %s", kind, grade_nonce, text);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)(sizeof line - 2);
    for (int i = 0; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    grade__write_all(line, (size_t)n);
}

/* Writes the verdict once; a FAIL ends the process (status 1) right here. */
static void grade__report(int passed, const char *reason)
{
    if (atomic_exchange(&grade_reported, 1))
        return;
    char text[1800];
    snprintf(text, sizeof text, "%s%s%s", passed ? "PASS" : "FAIL", reason && reason[0] ? " " : "",
             reason ? reason : "");
    grade__emit("RESULT", text);
    if (!passed)
        _exit(1);
}

/* ---- naming the learner's function a crash or a hang happened in ------------------- */

/* The learner function running on this thread, or NULL in the checks' own code. */
static _Thread_local const char *grade_current;

/* One slot per thread that has called the learner's code: the function it is
 * in (NULL between calls) and how many calls it has started.  The watchdog
 * reads them; each thread writes only its own, on lines of its own. */
struct grade_slot {
    alignas(128) _Atomic(const char *) fn; /* a line pair per thread: no false sharing between them */
    atomic_ulong calls;
};
static struct grade_slot grade_slots[GRADE_MAX_THREADS];
static atomic_int grade_nslots;
static _Thread_local struct grade_slot *grade_my_slot;

static inline const char *grade__enter(const char *fn)
{
    struct grade_slot *s = grade_my_slot;
    if (!s) {
        int i = atomic_fetch_add_explicit(&grade_nslots, 1, memory_order_relaxed);
        s = grade_my_slot = &grade_slots[i % GRADE_MAX_THREADS];
    }
    /* relaxed: the watchdog only needs to see these change eventually. */
    atomic_store_explicit(&s->calls, atomic_load_explicit(&s->calls, memory_order_relaxed) + 1, memory_order_relaxed);
    atomic_store_explicit(&s->fn, fn, memory_order_relaxed);
    grade_current = fn;
    return fn;
}

static inline void grade__leave(const char **scope)
{
    (void)scope;
    atomic_store_explicit(&grade_my_slot->fn, NULL, memory_order_relaxed);
    grade_current = NULL;
}

/* GRADE_CALL(fn, args...) calls fn(args...) and is that call's value (or
 * void); while it runs, a crash or a hang names fn.  The cleanup resets the
 * name when the call has returned, whatever its type. */
#define GRADE_CALL(fn, ...)                                                                  \
    __extension__({                                                                          \
        __attribute__((cleanup(grade__leave))) const char *grade__scope = grade__enter(#fn); \
        (void)grade__scope;                                                                  \
        fn(__VA_ARGS__);                                                                     \
    })

/* What the check is doing now (grade_note): the watchdog's and the crash handler's lines end with it. */
static _Atomic(const char *) grade_context;

static void grade_on_signal(int sig)
{
    /* Only async-signal-safe calls here: write() and raise(). */
    const char *fn = grade_current ? grade_current : "the grading harness";
    const char *ctx = atomic_load_explicit(&grade_context, memory_order_relaxed); /* what the check was doing */
    char line[512];
    size_t n = 0;
    const char *parts[] = {"CRASH ", grade_nonce, " ", fn, ctx ? " while " : "", ctx ? ctx : "", "\n"};
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++)
        for (const char *c = parts[p]; *c && n < sizeof line - 1; c++)
            line[n++] = *c;
    grade__write_all(line, n);
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

/* ---- verdicts ----------------------------------------------------------------------- */
static atomic_int grade_failed; /* a check called grade_fail (the first reason is kept) */
static char grade_reason[1600];

/* The check passed (reported when it returns to main). */
static inline int grade_pass(void) { return 0; }

/* The check failed: the reason is reported at once and the process ends. */
static inline int grade_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char reason[sizeof grade_reason];
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (!atomic_exchange(&grade_failed, 1))
        memcpy(grade_reason, reason, sizeof reason);
    grade__report(0, reason);
    return 1;
}

static inline void grade_info(const char *key, double value)
{
    char text[256];
    snprintf(text, sizeof text, "%s=%.6g", key, value);
    grade__emit("INFO", text);
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

/* ---- the watchdog ----------------------------------------------------------------------
 * One thread, started by main before the check, samples every 50 ms:
 *   - each thread's slot: a call into the learner's code that has not
 *     returned for GRADE_STUCK_S ends the check, naming the function;
 *   - if a check registered one with grade_watchdog(), a progress counter:
 *     no change for `seconds` ends the check with what describe() says
 *     (threads that keep calling but get nowhere: a livelock, a lost item). */
typedef unsigned long long (*grade_progress_fn)(void);
typedef const char *(*grade_describe_fn)(void);
static _Atomic(grade_progress_fn) grade_wd_progress;
static _Atomic(grade_describe_fn) grade_wd_describe;
static _Atomic(double) grade_wd_seconds;
static atomic_int grade_wd_done;

/* Says what the check is doing now (a static string, or NULL): the
 * watchdog's FAIL lines end with it, e.g. "(tickets started at 2^32 - 5)". */
static inline void grade_note(const char *what) { atomic_store(&grade_context, what); }

static inline void grade_watchdog(grade_progress_fn progress, grade_describe_fn describe, double seconds)
{
    atomic_store(&grade_wd_describe, describe);
    atomic_store(&grade_wd_seconds, seconds);
    atomic_store(&grade_wd_progress, progress);
}

static void *grade_wd_main(void *arg)
{
    (void)arg;
    const char *last_fn[GRADE_MAX_THREADS] = {0};
    unsigned long last_calls[GRADE_MAX_THREADS] = {0};
    double stuck_since[GRADE_MAX_THREADS] = {0};
    grade_progress_fn watched = NULL;
    unsigned long long last_progress = 0;
    double progress_since = grade_now_s();
    while (!atomic_load(&grade_wd_done)) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        double now = grade_now_s();
        int n = atomic_load_explicit(&grade_nslots, memory_order_relaxed);
        for (int i = 0; i < n && i < GRADE_MAX_THREADS; i++) {
            const char *fn = atomic_load_explicit(&grade_slots[i].fn, memory_order_relaxed);
            unsigned long calls = atomic_load_explicit(&grade_slots[i].calls, memory_order_relaxed);
            if (!fn || fn != last_fn[i] || calls != last_calls[i]) {
                last_fn[i] = fn;
                last_calls[i] = calls;
                stuck_since[i] = now;
            } else if (now - stuck_since[i] > GRADE_STUCK_S) {
                char reason[600];
                const char *ctx = atomic_load(&grade_context);
                snprintf(reason, sizeof reason,
                         "%s did not return within %.0f s (an endless loop, or a wait for a state that never "
                         "comes)%s%s",
                         fn, GRADE_STUCK_S, ctx ? " while " : "", ctx ? ctx : "");
                grade__report(0, reason);
            }
        }
        grade_progress_fn progress = atomic_load(&grade_wd_progress);
        if (progress) {
            unsigned long long p = progress();
            if (progress != watched || p != last_progress) {
                watched = progress;
                last_progress = p;
                progress_since = now;
            } else if (now - progress_since > atomic_load(&grade_wd_seconds)) {
                char reason[900];
                const char *ctx = atomic_load(&grade_context);
                snprintf(reason, sizeof reason, "no progress for %.0f s: %s%s%s", atomic_load(&grade_wd_seconds),
                         atomic_load(&grade_wd_describe)(), ctx ? " while " : "", ctx ? ctx : "");
                grade__report(0, reason);
            }
        }
    }
    return NULL;
}

/* ---- the table and the one main ------------------------------------------------ */
struct grade_check {
    const char *id;
    int (*run)(const char *arg);
};

/* Reads the channel's descriptor and nonce, and wipes them from the environment. */
static inline void grade__open_channel(void)
{
    char *fd = getenv("GRADE_REPORT_FD");
    char *nonce = getenv("GRADE_NONCE");
    if (fd && nonce) {
        grade_report_fd = atoi(fd);
        snprintf(grade_nonce, sizeof grade_nonce, "%s", nonce);
        memset(nonce, 0, strlen(nonce));
        unsetenv("GRADE_NONCE");
        unsetenv("GRADE_REPORT_FD");
    }
}

static inline int grade_main(int argc, char **argv, const struct grade_check *checks)
{
    grade__open_channel();
    grade_install_handlers();
    const char *id = argc > 1 ? argv[1] : "";
    const char *arg = argc > 2 ? argv[2] : "";
    const struct grade_check *c = checks;
    while (c->id && strcmp(c->id, id))
        c++;
    if (!c->id)
        return grade_fail("unknown check '%s'", id);
    pthread_t wd;
    if (pthread_create(&wd, NULL, grade_wd_main, NULL) == 0)
        pthread_detach(wd);
    int rc = c->run(arg);
    atomic_store(&grade_wd_done, 1);
    if (rc != 0 || atomic_load(&grade_failed))
        grade__report(0, grade_reason[0] ? grade_reason : "the check failed without saying why");
    grade__report(1, "");
    return 0;
}

/* The check table ({"id", function}, ...) and main, which runs the check named
 * on the command line. */
#define GRADE_CHECKS(...)                                                         \
    static const struct grade_check grade_checks[] = {__VA_ARGS__, {NULL, NULL}}; \
    int main(int argc, char **argv) { return grade_main(argc, argv, grade_checks); }

#endif
