// Untracked allocations: blocks the program allocated that the checker could not record, so that
// no report can count them as leaked or freed. Two causes: the live table's slot cannot hold the
// block (allocation_slot.h, SlotHolds: an address above 2^48 or not 8-byte aligned, as tagged
// heap pointers are; a block of 1 TiB or more), or the checker had no memory for it (the live
// table could not grow, or the recorded-address filter's counts could not be mapped). Every
// report says how many there were (docs/leakcheck.md#untracked-allocations): a report with none
// leaked but some untracked is no proof of no leaks.
//
// UntrackedCounts is the plain figures (a report's, a dump's, the record region header's);
// UntrackedCounter the process's running count, touched only on those failure paths.
// Async-signal-safe, lock-free, no malloc.
#ifndef STACKWALK_LEAKCHECK_UNTRACKED_H_
#define STACKWALK_LEAKCHECK_UNTRACKED_H_

#include <atomic>
#include <cstdint>

namespace stackwalk::leakcheck {

struct UntrackedCounts {
  uint64_t refused = 0;    // blocks the slot cannot hold (address or size)
  uint64_t no_memory = 0;  // blocks dropped for lack of memory for the table or the filter
  uint64_t bytes = 0;      // the bytes of both, as the program asked for them
  uint64_t allocations() const { return refused + no_memory; }
};

enum class UntrackedWhy { kRefused, kNoMemory };

class UntrackedCounter {
 public:
  void Count(UntrackedWhy why, uint64_t size) {
    (why == UntrackedWhy::kRefused ? refused_ : no_memory_).fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(size, std::memory_order_relaxed);
  }
  UntrackedCounts Read() const {
    UntrackedCounts c;
    c.refused = refused_.load(std::memory_order_relaxed);
    c.no_memory = no_memory_.load(std::memory_order_relaxed);
    c.bytes = bytes_.load(std::memory_order_relaxed);
    return c;
  }

 private:
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> no_memory_{0};
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_UNTRACKED_H_
