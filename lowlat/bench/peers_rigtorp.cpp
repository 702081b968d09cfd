/* peers_rigtorp.cpp - rigtorp's SPSCQueue (the learner's own copy, named by
 * -DLL_PEER_HEADER) in the same two loops as the core's ring benchmarks, so
 * `python -m lowlat bench --peers DIR` compares them in one process.
 * Compiled by lowlat.bench.peers with the core's -O2; loaded with cffi.
 *
 * The loops mirror csrc/bench: the producer pushes 1..items and retries a
 * full queue after one pause; the consumer checks that each record arrives
 * once and in order; the pinger stamps each round trip with the same
 * counter reads as the core's (rdtsc before the push, an ordered read after
 * the reply) when it is given the counter's rate, else CLOCK_MONOTONIC. */
#include LL_PEER_HEADER

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

/* The counter, unordered (before a push) and ordered (after a reply was seen). */
inline uint64_t stamp(bool tsc)
{
#if defined(__x86_64__) || defined(__i386__)
    if (tsc)
        return __rdtsc();
#endif
    return tsc ? 0 : now_ns();
}

inline uint64_t stamp_after(bool tsc)
{
#if defined(__x86_64__) || defined(__i386__)
    if (tsc) {
        _mm_lfence(); /* every earlier load (the reply) done before the read */
        return __rdtsc();
    }
#endif
    return tsc ? 0 : now_ns();
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

/* Both threads pinned and waiting before either starts; false if a pin failed. */
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
};

} // namespace

/* items records through one queue of `capacity`; *items_per_s and *errors
 * (records out of order).  0, or -1 for a bad argument, -2 when a thread
 * could not be pinned, -3 when the queue could not be made. */
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
        std::thread consumer([&] {
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
        });
        std::thread producer([&] {
            ok_p = start.arrive(pin(cpu_producer));
            if (!ok_p)
                return;
            t0 = now_ns();
            for (uint64_t i = 1; i <= items; i++)
                while (!q.try_push(i))
                    pause_once();
        });
        producer.join();
        consumer.join();
        if (!ok_p || !ok_c)
            return -2;
        *items_per_s = double(items) / (double(t1 - t0) / 1e9);
        *errors = bad;
        return 0;
    } catch (...) {
        return -3;
    }
}

/* round_trips ping-pongs over two queues of `capacity`; each round trip's
 * time in ns into rtt_ns[0..round_trips).  ticks_per_ns > 0: stamps from the
 * x86 timestamp counter at that rate.  Codes as above. */
extern "C" int ll_peer_spsc_rtt(uint64_t round_trips, uint64_t capacity, int cpu_a, int cpu_b, double ticks_per_ns,
                                uint64_t *rtt_ns, uint64_t *errors)
{
    if (round_trips == 0 || capacity < 2 || !rtt_ns || !errors)
        return -1;
#if defined(__x86_64__) || defined(__i386__)
    const bool tsc = ticks_per_ns > 0.0;
#else
    const bool tsc = false;
#endif
    try {
        Queue there(capacity), back(capacity);
        Start start;
        bool ok_a = true, ok_b = true;
        uint64_t bad = 0;
        std::thread ponger([&] {
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
        });
        std::thread pinger([&] {
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
        });
        pinger.join();
        ponger.join();
        if (!ok_a || !ok_b)
            return -2;
        *errors = bad;
        return 0;
    } catch (...) {
        return -3;
    }
}
