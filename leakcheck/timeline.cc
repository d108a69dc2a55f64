#include "leakcheck/timeline.h"

#include <sched.h>

#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/thread_registry.h"

namespace stackwalk::leakcheck {

void Timeline::Start(uint32_t interval_ms) {
  while (!TryLock()) sched_yield();
  if (points_ == nullptr && interval_ms != 0) {
    points_ = static_cast<Point*>(OwnMap(sizeof(Point) * kPoints));  // own memory: no root
  }
  count_ = 0;
  const uint64_t interval = points_ != nullptr ? uint64_t{interval_ms} * 1000000u : 0;
  interval_ns_.store(interval, std::memory_order_relaxed);
  next_ns_.store(interval != 0 ? 0 : UINT64_MAX, std::memory_order_relaxed);
  next_peak_ns_.store(interval != 0 ? 0 : UINT64_MAX, std::memory_order_relaxed);
  Unlock();
}

void Timeline::Halve() {
  for (uint32_t i = 0; i < count_ / 2; ++i) {
    const Point& a = points_[2 * i];
    const Point& b = points_[2 * i + 1];
    points_[i] = b.live_bytes > a.live_bytes ? b : a;
  }
  count_ /= 2;
  interval_ns_.store(interval_ns_.load(std::memory_order_relaxed) * 2, std::memory_order_relaxed);
}

void Timeline::Sample(uint64_t now_ns, uint64_t live_bytes, bool at_peak,
                      const ThreadRegistry& threads) {
  if (!TryLock()) return;
  const uint64_t interval = interval_ns_.load(std::memory_order_relaxed);
  if (points_ == nullptr || interval == 0) {
    Unlock();
    return;
  }
  // Due again one interval on (a peak point: an eighth of one), whichever way this one came.
  next_peak_ns_.store(now_ns + interval / 8, std::memory_order_relaxed);
  if (!at_peak) next_ns_.store(now_ns + interval, std::memory_order_relaxed);
  if (count_ == kPoints) Halve();
  Point& p = points_[count_++];
  p.time_ns = now_ns;
  p.live_bytes = live_bytes;
  p.at_peak = at_peak ? 1 : 0;
  p.threads = 0;
  // The busiest threads: kept sorted, largest first, by insertion.
  const uint32_t end = threads.end();
  const uint32_t first = end > kThreadsScanned ? end - kThreadsScanned : 1;
  for (uint32_t serial = first; serial < end; ++serial) {
    const PeakCounter* counter = threads.LiveBytesOf(serial);
    const uint64_t bytes = counter != nullptr ? counter->live.load(std::memory_order_relaxed) : 0;
    if (bytes == 0) continue;
    uint32_t at = p.threads < kThreadsPerPoint ? p.threads++ : kThreadsPerPoint;
    if (at == kThreadsPerPoint && bytes <= p.thread[kThreadsPerPoint - 1].live_bytes) continue;
    if (at == kThreadsPerPoint) at = kThreadsPerPoint - 1;
    while (at > 0 && p.thread[at - 1].live_bytes < bytes) {
      p.thread[at] = p.thread[at - 1];
      --at;
    }
    p.thread[at] = {serial, bytes};
  }
  Unlock();
}

uint32_t Timeline::Copy(Point* out, uint32_t max, uint64_t* interval_ns) {
  while (!TryLock()) sched_yield();
  const uint32_t n = count_ < max ? count_ : max;
  for (uint32_t i = 0; i < n; ++i) out[i] = points_[i];
  *interval_ns = interval_ns_.load(std::memory_order_relaxed);
  Unlock();
  return n;
}

}  // namespace stackwalk::leakcheck
