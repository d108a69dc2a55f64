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
// The rule holds for each of a stack's copies (StackTable keeps a shared one and one for each of a
// few threads) on its own, so the copies' contributions sum to the stack's.
//
// A copy is updated either by any thread (kShared: atomic read-modify-writes) or by its one owner
// (kOwned: plain loads and stores of the same atomics, no locked instruction; readers still see
// each field whole).
#ifndef STACKWALK_LEAKCHECK_STACK_STATS_H_
#define STACKWALK_LEAKCHECK_STACK_STATS_H_

#include <atomic>
#include <cstdint>
#include <initializer_list>

namespace stackwalk::leakcheck {

// A stack's figures summed over its copies, the peak's as of the last peak epoch.
struct StackStatsTotals {
  uint64_t allocations = 0;
  uint64_t allocated_bytes = 0;
  uint64_t live_bytes = 0;
  uint64_t live_blocks = 0;
  uint64_t temporary = 0;
  uint64_t temporary_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t peak_blocks = 0;
};

enum class StatsWriter { kShared, kOwned };

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
  template <StatsWriter kWriter = StatsWriter::kShared>
  void Allocated(uint64_t size, uint64_t epoch, bool made = true) {
    SaveAtPeak<kWriter>(epoch);
    Add<kWriter>(live_bytes, size);
    Add<kWriter>(live_blocks, 1);
    if (!made) return;
    Add<kWriter>(allocations, 1);
    Add<kWriter>(allocated_bytes, size);
  }
  // A block of `size` bytes gone (freed, reallocated, or its free missed); `temporary` if its
  // thread freed it before allocating again.
  template <StatsWriter kWriter = StatsWriter::kShared>
  void Freed(uint64_t size, uint64_t epoch, bool is_temporary) {
    SaveAtPeak<kWriter>(epoch);
    Add<kWriter>(live_bytes, uint64_t{0} - size);  // wraps: a subtraction
    Add<kWriter>(live_blocks, ~uint64_t{0});
    if (!is_temporary) return;
    Add<kWriter>(temporary, 1);
    Add<kWriter>(temporary_bytes, size);
  }
  // What the stack held (bytes, blocks) at the peak of epoch `final_epoch` (the last one).
  void AtPeak(uint64_t final_epoch, uint64_t* bytes, uint64_t* blocks) const {
    const bool unchanged = changed_epoch.load(std::memory_order_relaxed) < final_epoch;
    *bytes = (unchanged ? live_bytes : peak_bytes).load(std::memory_order_relaxed);
    *blocks = (unchanged ? live_blocks : peak_blocks).load(std::memory_order_relaxed);
  }
  // Adds this copy's figures to `totals`. A copy may hold more frees than allocations (its
  // writers freed blocks another copy's made): its live figures are then below zero, as unsigned
  // integers, and the sum over the copies is still exact.
  void AddTo(uint64_t final_epoch, StackStatsTotals* totals) const {
    totals->allocations += allocations.load(std::memory_order_relaxed);
    totals->allocated_bytes += allocated_bytes.load(std::memory_order_relaxed);
    totals->live_bytes += live_bytes.load(std::memory_order_relaxed);
    totals->live_blocks += live_blocks.load(std::memory_order_relaxed);
    totals->temporary += temporary.load(std::memory_order_relaxed);
    totals->temporary_bytes += temporary_bytes.load(std::memory_order_relaxed);
    uint64_t bytes = 0, blocks = 0;
    AtPeak(final_epoch, &bytes, &blocks);
    totals->peak_bytes += bytes;
    totals->peak_blocks += blocks;
  }
  void Reset() {
    for (std::atomic<uint64_t>* field : {&allocations, &allocated_bytes, &live_bytes, &live_blocks,
                                         &temporary, &temporary_bytes, &changed_epoch, &peak_bytes,
                                         &peak_blocks}) {
      field->store(0, std::memory_order_relaxed);
    }
  }

 private:
  template <StatsWriter kWriter>
  static void Add(std::atomic<uint64_t>& field, uint64_t delta) {
    if constexpr (kWriter == StatsWriter::kOwned) {
      field.store(field.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
    } else {
      field.fetch_add(delta, std::memory_order_relaxed);
    }
  }
  template <StatsWriter kWriter>
  void SaveAtPeak(uint64_t epoch) {
    uint64_t seen = changed_epoch.load(std::memory_order_relaxed);
    if (seen >= epoch) return;
    if constexpr (kWriter == StatsWriter::kOwned) {
      changed_epoch.store(epoch, std::memory_order_relaxed);
    } else if (!changed_epoch.compare_exchange_strong(seen, epoch, std::memory_order_relaxed)) {
      return;  // another thread saved them for this epoch
    }
    peak_bytes.store(live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
    peak_blocks.store(live_blocks.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_STACK_STATS_H_
