// Timeline: the process's live bytes over time, for the profile's chart: a point every interval
// (option timeline_interval_ms) and at new peaks (at most one per interval / 8), each with the
// live bytes of the busiest threads. Bounded: kPoints points in the checker's own memory; when
// full, each pair of neighbours becomes the one with more live bytes (peaks survive) and the
// interval doubles, so a run of any length keeps at most kPoints points spread over all of it.
// Sampled from the allocation hook: a coarse clock read per recorded allocation, and the sample
// itself under a try-lock (a thread that finds it taken skips; no one waits). No allocation.
#ifndef STACKWALK_LEAKCHECK_TIMELINE_H_
#define STACKWALK_LEAKCHECK_TIMELINE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/coarse_clock.h"

namespace stackwalk::leakcheck {

class ThreadRegistry;

class Timeline {
 public:
  static constexpr uint32_t kPoints = 1024;
  static constexpr uint32_t kThreadsPerPoint = 4;
  // The threads a point's busiest are chosen from: the latest serials, at most this many.
  static constexpr uint32_t kThreadsScanned = 4096;

  struct ThreadBytes {
    uint32_t serial;
    uint64_t live_bytes;
  };
  struct Point {
    uint64_t time_ns;     // CLOCK_MONOTONIC
    uint64_t live_bytes;  // the process's
    uint32_t at_peak;     // 1: sampled at a new peak
    uint32_t threads;     // entries of `thread` used
    ThreadBytes thread[kThreadsPerPoint];  // largest live bytes first
  };

  // Starts sampling every `interval_ms` (0: never), forgetting earlier points.
  void Start(uint32_t interval_ms);
  // Whether a sample is due at `now_ns`: one relaxed load, for the hook's fast path.
  bool Due(uint64_t now_ns, bool new_peak) const {
    return now_ns >= (new_peak ? next_peak_ns_ : next_ns_).load(std::memory_order_relaxed) &&
           interval_ns_.load(std::memory_order_relaxed) != 0;
  }
  // Adds a point, unless another thread is adding one.
  void Sample(uint64_t now_ns, uint64_t live_bytes, bool at_peak, const ThreadRegistry& threads);
  // Copies the points (up to `max`) into out; returns how many. The interval now in *interval_ns.
  uint32_t Copy(Point* out, uint32_t max, uint64_t* interval_ns);
  // In a fork's child: a lock its parent's thread held is free again.
  void AfterForkChild() { busy_.store(false, std::memory_order_relaxed); }

  // A coarse monotonic clock (a few ms resolution, read through the vDSO). Inline: every recorded
  // allocation reads it.
  static uint64_t CoarseNowNs() { return internal::CoarseNowNs(); }

 private:
  bool TryLock() { return !busy_.exchange(true, std::memory_order_acquire); }
  void Unlock() { busy_.store(false, std::memory_order_release); }
  void Halve();

  std::atomic<bool> busy_{false};
  std::atomic<uint64_t> interval_ns_{0};
  std::atomic<uint64_t> next_ns_{UINT64_MAX};
  std::atomic<uint64_t> next_peak_ns_{UINT64_MAX};
  Point* points_ = nullptr;  // kPoints, mapped at the first Start()
  uint32_t count_ = 0;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_TIMELINE_H_
