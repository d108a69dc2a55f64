// RecordedFilter: which blocks may be in the live table, answered without it. A counting filter:
// a count per hash of a block's address, raised before the block is recorded and lowered after
// its record is removed. A zero count means "certainly not recorded": when sampling, most frees
// are of blocks never recorded, and the filter tells them so in a few instructions, with no lock
// and no probe of the table (allocator_hooks.h). A non-zero count means "maybe": the table is
// asked. Likewise a count of 1 just after a block's Add is that block's alone: the table's insert
// then does not look for a block at its address whose free was missed. Its counts live in one
// own mapping (scan/own_mappings.h) of kEntries 32-bit counts, 128 KiB made at the first record;
// its resident size is the pages the recorded addresses touch, at most those 128 KiB.
// Async-signal-safe, lock-free, no malloc.
//
// Why a lock-free read is right: a block's Add happens before its free, because the program got
// the pointer from the allocation and passed it on to whatever frees it (a handoff between
// threads orders them too), so the free reads the count after that increment in the count's
// modification order (read-write coherence), and only the block's own Remove, made after its
// record left the table, takes that increment back. Every other block's Remove follows its own
// Add, so a count is never lower than the recorded blocks it stands for: relaxed atomic
// read-modify-writes suffice.
#ifndef STACKWALK_LEAKCHECK_RECORDED_FILTER_H_
#define STACKWALK_LEAKCHECK_RECORDED_FILTER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck {

class RecordedFilter {
 public:
  static constexpr int kIndexBits = 15;
  static constexpr size_t kEntries = size_t{1} << kIndexBits;
  static constexpr size_t kBytes = kEntries * sizeof(uint32_t);

  // Counts `address` in, before its block can be found in the table. False if the counts could
  // not be mapped (the block must then go unrecorded). Inline: every record calls it.
  bool Add(uintptr_t address) {
    std::atomic<uint32_t>* counts = counts_.load(std::memory_order_acquire);
    if (__builtin_expect(counts == nullptr, false)) return AddFirst(address);
    counts[Index(address)].fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Counts `address` out, after its record left the table.
  void Remove(uintptr_t address) {
    counts_.load(std::memory_order_acquire)[Index(address)].fetch_sub(1, std::memory_order_relaxed);
  }
  // False: no block at `address` is recorded. True: one may be.
  bool MayHold(uintptr_t address) const {
    const std::atomic<uint32_t>* counts = counts_.load(std::memory_order_acquire);
    return counts != nullptr && counts[Index(address)].load(std::memory_order_relaxed) != 0;
  }
  // For a block counted in (Add) and not in the table yet: false if no other block at `address`
  // is recorded (its entry counts only this one), so none there had its free missed and the
  // table need not look for one to replace. Such a block's Add happened before this one's (the
  // allocator handed the address on), and only its own Remove takes its count back.
  bool MayHoldAnother(uintptr_t address) const {
    const std::atomic<uint32_t>* counts = counts_.load(std::memory_order_acquire);
    return counts == nullptr || counts[Index(address)].load(std::memory_order_relaxed) > 1;
  }

  // The entry of an address: blocks are at least 16-byte aligned, and a multiplicative hash of
  // the rest spreads a run of neighbouring blocks over the whole array.
  static size_t Index(uintptr_t address) {
    return static_cast<size_t>(((uint64_t{address} >> 4) * 0x9e3779b97f4a7c15ull) >>
                               (64 - kIndexBits));
  }

 private:
  // Add when the counts are not mapped yet (the first record): maps them.
  bool AddFirst(uintptr_t address);

  std::atomic<std::atomic<uint32_t>*> counts_{nullptr};
};

// The filter of the process's live table (State::allocations), where the hooks' inlined fast
// path reads it. Constant-initialized; its counts are mapped at the first record.
extern RecordedFilter g_recorded_blocks;

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_RECORDED_FILTER_H_
