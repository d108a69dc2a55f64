// StackStats: what one allocation stack did over the run, kept at record time beside the stack
// (stack_table.h) and updated by every recorded allocation and free with relaxed atomics: no
// lock, no allocation. Figures for the profile views (docs/leakcheck.md, "Profile views"):
// allocations made and their bytes, bytes and blocks live now, the temporary allocations (freed
// by the thread that made them before it allocated again), and the bytes the stack held when
// the process's live bytes last peaked.
//
// Peak contribution: the process bumps a peak epoch at each new peak of its live bytes
// (State::peak_epoch, after the change that made it). Before changing its live bytes at epoch E,
// a stack whose last change was at an older epoch saves what it held: unchanged since before the
// latest peak, that is exactly what it held at it. At the end a stack unchanged since the last
// peak contributes what it holds now, else what it saved. With one thread the contributions sum
// to the process's peak exactly; threads racing between a stack's change and the epoch's bump
// can shift a block's bytes to or from the peak (a few blocks, not a drift: each peak re-saves).
#ifndef STACKWALK_LEAKCHECK_STACK_STATS_H_
#define STACKWALK_LEAKCHECK_STACK_STATS_H_

#include <atomic>
#include <cstdint>

namespace stackwalk::leakcheck {

struct StackStats {
  std::atomic<uint64_t> allocations{0};      // made over the run
  std::atomic<uint64_t> allocated_bytes{0};
  std::atomic<uint64_t> live_bytes{0};       // held now
  std::atomic<uint64_t> live_blocks{0};
  std::atomic<uint64_t> temporary{0};        // freed before their thread allocated again
  std::atomic<uint64_t> temporary_bytes{0};
  std::atomic<uint64_t> changed_epoch{0};    // the peak epoch of the last change
  std::atomic<uint64_t> peak_bytes{0};       // live_bytes / live_blocks when last saved
  std::atomic<uint64_t> peak_blocks{0};

  // A block of `size` bytes allocated, at process peak epoch `epoch` (before the process's own
  // counter sees it). `made` is false for a block put back (a failed realloc's): live again,
  // not a new allocation.
  void Allocated(uint64_t size, uint64_t epoch, bool made = true) {
    SaveAtPeak(epoch);
    live_bytes.fetch_add(size, std::memory_order_relaxed);
    live_blocks.fetch_add(1, std::memory_order_relaxed);
    if (!made) return;
    allocations.fetch_add(1, std::memory_order_relaxed);
    allocated_bytes.fetch_add(size, std::memory_order_relaxed);
  }
  // A block of `size` bytes gone (freed, reallocated, or its free missed); `temporary` if its
  // thread freed it before allocating again.
  void Freed(uint64_t size, uint64_t epoch, bool is_temporary) {
    SaveAtPeak(epoch);
    live_bytes.fetch_sub(size, std::memory_order_relaxed);
    live_blocks.fetch_sub(1, std::memory_order_relaxed);
    if (!is_temporary) return;
    temporary.fetch_add(1, std::memory_order_relaxed);
    temporary_bytes.fetch_add(size, std::memory_order_relaxed);
  }
  // What the stack held (bytes, blocks) at the peak of epoch `final_epoch` (the last one).
  void AtPeak(uint64_t final_epoch, uint64_t* bytes, uint64_t* blocks) const {
    const bool unchanged = changed_epoch.load(std::memory_order_relaxed) < final_epoch;
    *bytes = (unchanged ? live_bytes : peak_bytes).load(std::memory_order_relaxed);
    *blocks = (unchanged ? live_blocks : peak_blocks).load(std::memory_order_relaxed);
  }
  void Reset() {
    for (std::atomic<uint64_t>* field : {&allocations, &allocated_bytes, &live_bytes, &live_blocks,
                                         &temporary, &temporary_bytes, &changed_epoch, &peak_bytes,
                                         &peak_blocks}) {
      field->store(0, std::memory_order_relaxed);
    }
  }

 private:
  void SaveAtPeak(uint64_t epoch) {
    uint64_t seen = changed_epoch.load(std::memory_order_relaxed);
    if (seen < epoch &&
        changed_epoch.compare_exchange_strong(seen, epoch, std::memory_order_relaxed)) {
      peak_bytes.store(live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
      peak_blocks.store(live_blocks.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
  }
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_STACK_STATS_H_
