/* peers_rigtorp.cpp - rigtorp's SPSCQueue (the learner's own copy, put in
 * front of this file by the compiler's -include) in the same two loops as
 * the core's ring benchmarks, so `python -m lowlat bench --peers DIR`
 * compares them in one process.  Compiled by lowlat.bench.peers with the
 * core's -O2 -DNDEBUG; loaded with cffi.
 *
 * The loops mirror csrc/bench: the producer pushes 1..items and retries a
 * full queue after one pause; the consumer checks that each record arrives
 * once and in order; the pinger stamps each round trip with the counter the
 * core's loop reads (x86: rdtsc before the push, lfence + rdtsc after the
 * reply; arm64: cntvct_el0, isb before the second read) when it is given
 * the counter's rate, else CLOCK_MONOTONIC. */
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <pthread.h>
#include <sched.h>
#include <thread>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace
{

using Queue = rigtorp::SPSCQueue<uint64_t>;

inline void pause_once()
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

/* The counter, unordered (before a push) and ordered (after a reply was
 * seen); CLOCK_MONOTONIC where there is no counter. */
inline uint64_t stamp(bool tsc)
{
    if (!tsc)
        return now_ns();
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return now_ns();
#endif
}

inline uint64_t stamp_after(bool tsc)
{
    if (!tsc)
        return now_ns();
#if defined(__x86_64__) || defined(__i386__)
    _mm_lfence(); /* every earlier load (the reply) done before the read */
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory"); /* isb: the same ordering */
    return v;
#else
    return now_ns();
#endif
}

/* Whether the loops stamp with the counter: its rate given, on a CPU whose
 * counter this file reads. */
inline bool use_counter(double ticks_per_ns)
{
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    return ticks_per_ns > 0.0;
#else
    (void)ticks_per_ns;
    return false;
#endif
}

/* Pins the calling thread; -1: no pinning.  False when the CPU refuses. */
bool pin(int cpu)
{
#ifdef __linux__
    if (cpu < 0)
        return true;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
#else
    return cpu < 0;
#endif
}

/* Both threads pinned and waiting before either starts; false if a pin
 * failed, or if the second thread never started (abandon). */
struct Start {
    std::atomic<int> arrived{0};
    std::atomic<int> failed{0};
    bool arrive(bool pinned)
    {
        if (!pinned)
            failed.store(1, std::memory_order_relaxed);  /* read after the barrier below */
        arrived.fetch_add(1, std::memory_order_acq_rel); /* the barrier: both arrive */
        while (arrived.load(std::memory_order_acquire) < 2)
            pause_once();
        return failed.load(std::memory_order_relaxed) == 0;
    }
    void abandon() { arrive(false); } /* in place of a thread that could not start */
};

/* Runs a and b on two threads, both through `start`: 0, -2 when a thread
 * could not be pinned, -3 when the second thread could not be started (the
 * first is released and joined, never left running). */
template <typename A, typename B> int run_pair(Start &start, const bool &ok_a, const bool &ok_b, A a, B b)
{
    std::thread first(a);
    try {
        std::thread second(b);
        second.join();
    } catch (...) {
        start.abandon();
        first.join();
        return -3;
    }
    first.join();
    return ok_a && ok_b ? 0 : -2;
}

} // namespace

/* items records through one queue of `capacity`; *items_per_s and *errors
 * (records out of order).  0, or -1 for a bad argument, -2 when a thread
 * could not be pinned, -3 when the queue or a thread could not be made. */
extern "C" int ll_peer_spsc_throughput(uint64_t items, uint64_t capacity, int cpu_producer, int cpu_consumer,
                                       double *items_per_s, uint64_t *errors)
{
    if (items == 0 || capacity < 2 || !items_per_s || !errors)
        return -1;
    try {
        Queue q(capacity);
        Start start;
        bool ok_p = true, ok_c = true;
        uint64_t t0 = 0, t1 = 0, bad = 0;
        auto consume = [&] {
            ok_c = start.arrive(pin(cpu_consumer));
            if (!ok_c)
                return;
            for (uint64_t i = 1; i <= items; i++) {
                uint64_t *v;
                while (!(v = q.front()))
                    pause_once();
                bad += *v != i;
                q.pop();
            }
            t1 = now_ns();
        };
        auto produce = [&] {
            ok_p = start.arrive(pin(cpu_producer));
            if (!ok_p)
                return;
            t0 = now_ns();
            for (uint64_t i = 1; i <= items; i++)
                while (!q.try_push(i))
                    pause_once();
        };
        int rc = run_pair(start, ok_c, ok_p, consume, produce);
        if (rc != 0)
            return rc;
        *items_per_s = double(items) / (double(t1 - t0) / 1e9);
        *errors = bad;
        return 0;
    } catch (...) {
        return -3;
    }
}

/* round_trips ping-pongs over two queues of `capacity`; each round trip's
 * time in ns into rtt_ns[0..round_trips).  ticks_per_ns > 0: stamps from the
 * CPU's counter (x86 TSC, arm64 cntvct_el0) at that rate.  Codes as above. */
extern "C" int ll_peer_spsc_rtt(uint64_t round_trips, uint64_t capacity, int cpu_a, int cpu_b, double ticks_per_ns,
                                uint64_t *rtt_ns, uint64_t *errors)
{
    if (round_trips == 0 || capacity < 2 || !rtt_ns || !errors)
        return -1;
    const bool tsc = use_counter(ticks_per_ns);
    try {
        Queue there(capacity), back(capacity);
        Start start;
        bool ok_a = true, ok_b = true;
        uint64_t bad = 0;
        auto pong = [&] {
            ok_b = start.arrive(pin(cpu_b));
            if (!ok_b)
                return;
            for (uint64_t i = 1; i <= round_trips; i++) {
                uint64_t *v;
                while (!(v = there.front()))
                    pause_once();
                uint64_t x = *v;
                there.pop();
                while (!back.try_push(x))
                    pause_once();
            }
        };
        auto ping = [&] {
            ok_a = start.arrive(pin(cpu_a));
            if (!ok_a)
                return;
            for (uint64_t i = 1; i <= round_trips; i++) {
                uint64_t a = stamp(tsc);
                while (!there.try_push(i))
                    pause_once();
                uint64_t *v;
                while (!(v = back.front()))
                    pause_once();
                bad += *v != i;
                back.pop();
                uint64_t b = stamp_after(tsc);
                rtt_ns[i - 1] = tsc ? uint64_t(double(b - a) / ticks_per_ns) : b - a;
            }
        };
        int rc = run_pair(start, ok_b, ok_a, pong, ping);
        if (rc != 0)
            return rc;
        *errors = bad;
        return 0;
    } catch (...) {
        return -3;
    }
}
