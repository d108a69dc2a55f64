// PeakCounter: bytes live now and their peak, exact, for the process and for each thread (the
// bytes a thread allocated that are still live, whoever frees them). Updated on every recorded
// allocation and free: one shared counter, and the allocating thread's own, which only a free
// from another thread touches from elsewhere. No locks, no allocation.
#ifndef STACKWALK_LEAKCHECK_LIVE_BYTES_H_
#define STACKWALK_LEAKCHECK_LIVE_BYTES_H_

#include <atomic>
#include <cstdint>

namespace stackwalk::leakcheck {

// One counter and its high-water mark.
struct PeakCounter {
  std::atomic<uint64_t> live{0};
  std::atomic<uint64_t> peak{0};

  // True if this raised the peak.
  bool Add(uint64_t bytes) {
    const uint64_t now = live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t high = peak.load(std::memory_order_relaxed);
    while (now > high) {
      if (peak.compare_exchange_weak(high, now, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  void Subtract(uint64_t bytes) { live.fetch_sub(bytes, std::memory_order_relaxed); }
  void Reset() {
    live.store(0, std::memory_order_relaxed);
    peak.store(0, std::memory_order_relaxed);
  }
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_LIVE_BYTES_H_
