/* A stand-in with the interface of rigtorp's SPSCQueue (the calls
 * lowlat/bench/peers_rigtorp.cpp makes), written for the tests of
 * `lowlat bench --peers`: it lets them build and run the comparison where
 * no clone of rigtorp/SPSCQueue exists.  It is not rigtorp's queue and its
 * speed means nothing: every index access is sequentially consistent. */
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

namespace rigtorp
{

template <typename T> class SPSCQueue
{
  public:
    explicit SPSCQueue(std::size_t capacity) : slots_(capacity + 1) {}

    bool try_push(const T &v)
    {
        std::size_t w = write_.load(), next = (w + 1) % slots_.size();
        if (next == read_.load())
            return false;
        slots_[w] = v;
        write_.store(next);
        return true;
    }

    T *front()
    {
        std::size_t r = read_.load();
        return r == write_.load() ? nullptr : &slots_[r];
    }

    void pop() { read_.store((read_.load() + 1) % slots_.size()); }

  private:
    std::vector<T> slots_;
    std::atomic<std::size_t> write_{0};
    std::atomic<std::size_t> read_{0};
};

} // namespace rigtorp
