// AllocationTable: the live allocations, address -> {size, stack id, thread, sequence number}.
// Sharded by address (a group of shards per 64 MiB region, a shard in it by hash) with a spin
// lock per shard, so threads allocating at once rarely meet. Each shard is an open-addressing
// hash table in mmap'ed memory (no malloc: the allocation hooks call it), kept at most half
// full: when it fills it doubles if over a quarter of its slots are live, and is otherwise
// rehashed at its size to drop the slots frees left. ForEach walks it as one consistent view,
// every shard lock held: the report's copy (report_collect.h), which the reachability scan reads.
#ifndef STACKWALK_LEAKCHECK_ALLOCATION_TABLE_H_
#define STACKWALK_LEAKCHECK_ALLOCATION_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "leakcheck/recorded_filter.h"
#include "leakcheck/spin_lock.h"

namespace stackwalk::leakcheck {

struct Allocation {
  uintptr_t address;   // 0: empty slot; 1: deleted slot
  uint64_t size;
  uint64_t sequence;   // from ReserveSequences: one thread's allocations in order, different
                       // threads' only roughly (each takes numbers in blocks); its top two
                       // bits are flags (kReportedBit, kIgnoredBit): read the number with
                       // SequenceNumber()
  uint32_t stack_id;   // StackTable id; StackTable::kNoStack if the stack could not be kept
  int32_t thread;      // ThreadRegistry serial of the thread that allocated it (a uint32_t
                       // there, stored signed; 0 if it could not be registered)
};
static_assert(sizeof(Allocation) == 32, "keep slots small");

// Flags kept in the top bits of Allocation::sequence (numbers stay below 2^62): a leak a check in
// a running process returned (checks.h: each leak is returned once), and a block the program
// marked as an intended leak (IgnoreObject: never reported, a root of the scan).
constexpr uint64_t kReportedBit = uint64_t{1} << 63;
constexpr uint64_t kIgnoredBit = uint64_t{1} << 62;
constexpr uint64_t kSequenceFlags = kReportedBit | kIgnoredBit;
inline uint64_t SequenceNumber(const Allocation& a) { return a.sequence & ~kSequenceFlags; }
inline bool IsReported(const Allocation& a) { return (a.sequence & kReportedBit) != 0; }
inline bool IsIgnored(const Allocation& a) { return (a.sequence & kIgnoredBit) != 0; }

class AllocationTable {
 public:
  static constexpr int kShards = 128;

  // `recorded`: the filter this table keeps of its addresses (recorded_filter.h), for MayHold;
  // none: MayHold always says maybe.
  constexpr explicit AllocationTable(RecordedFilter* recorded = nullptr) : recorded_(recorded) {}

  // Records a live allocation made at `sequence` (from ReserveSequences). Returns false if out
  // of memory (the allocation goes untracked). A block at the same address whose free was missed
  // is replaced, and copied to `*replaced` if given (else its address there is 0).
  bool Insert(uintptr_t address, uint64_t size, uint32_t stack_id, int32_t thread,
              uint64_t sequence, Allocation* replaced = nullptr);
  // Forgets an allocation; returns false if it was not tracked (allocated before the checker
  // started, or by another allocator).
  bool Remove(uintptr_t address, Allocation* removed = nullptr);
  // False if no live block at `address` is in the table, from the filter alone (no lock, a few
  // instructions); true if one may be. Async-signal-safe.
  bool MayHold(uintptr_t address) const {
    return recorded_ == nullptr || recorded_->MayHold(address);
  }

  // Sets kReportedBit on each of `blocks` still live (the same address and sequence number: a
  // block freed since and another made at its address is left alone). Takes the shard locks.
  void MarkReported(const Allocation* blocks, size_t n);
  // Sets kIgnoredBit on the live block that starts at `address`; false if none does (an address
  // inside a block, or of a block never recorded, is refused).
  bool MarkIgnored(uintptr_t address);

  // Calls fn(const Allocation&) for every live allocation, as one consistent view: every shard
  // lock is held for the whole walk (taken one shard at a time, a block freed in a shard already
  // walked and a new one made in a shard not walked yet were both counted, and totals reported
  // while threads ran could exceed anything the program ever held). Does nothing and returns
  // false if more than `max_items` are live; fn must not allocate.
  template <class Fn>
  bool ForEach(uint64_t max_items, Fn&& fn) {
    LockAll();
    uint64_t live = 0;
    for (Shard& shard : shards_) live += shard.live.load(std::memory_order_relaxed);
    if (live > max_items) {
      UnlockAll();
      return false;
    }
    for (Shard& shard : shards_) {
      for (uint64_t i = 0; i < shard.capacity; ++i) {
        if (shard.slots[i].address > 1) fn(shard.slots[i]);
      }
    }
    UnlockAll();
    return true;
  }

  // ForEach for a caller that already holds every shard lock (LockAll): fn(const Allocation&)
  // for every live allocation, nothing locked or unlocked. The leak check's snapshot, taken with
  // the world stopped. fn must not allocate.
  template <class Fn>
  void ForEachHeld(Fn&& fn) const {
    for (const Shard& shard : shards_) {
      for (uint64_t i = 0; i < shard.capacity; ++i) {
        if (shard.slots[i].address > 1) fn(shard.slots[i]);
      }
    }
  }

  // Reserves `n` consecutive sequence numbers and returns the first. Threads take them in
  // blocks, so numbers order allocations across threads only roughly; but every number handed
  // out before next_sequence() was read is below it.
  uint64_t ReserveSequences(uint64_t n) { return sequence_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t next_sequence() const { return sequence_.load(std::memory_order_relaxed); }
  // Forgets every allocation (a new in-process session). Takes every shard lock.
  void Clear();

  uint64_t live_count() const;
  uint64_t live_bytes() const;
  size_t table_bytes() const { return table_bytes_.load(std::memory_order_relaxed); }

  void LockAll();    // around fork()
  void UnlockAll();

 private:
  // A cache line each: threads working on neighbouring shards do not share one.
  struct alignas(64) Shard {
    SpinLock lock;
    Allocation* slots = nullptr;
    uint64_t capacity = 0;  // a power of two
    uint64_t used = 0;      // live + deleted slots
    // Written under the lock, read without it by live_count().
    std::atomic<uint64_t> live{0};
    std::atomic<uint64_t> bytes{0};
  };
  bool Grow(Shard& shard);
  // The slot of the live block at `address` in `shard` (its lock held), or null.
  Allocation* Find(Shard& shard, uintptr_t address, uint64_t hash);
  static uint64_t Hash(uintptr_t address) {
    uint64_t h = address >> 4;  // allocations are at least 16-byte aligned
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
  }
  // The shard of an address: a group chosen by its 64 MiB region, then a shard in the group by
  // its hash. glibc gives each thread's arena a 64 MiB-aligned heap of its own, so threads
  // allocating at once mostly work in different groups and do not pass shard lines between
  // cores; a block freed by another thread is still found, by its address.
  static constexpr int kGroups = 16;
  static uint64_t ShardOf(uintptr_t address, uint64_t hash) {
    const uint64_t group = ((address >> 26) * 0x9e3779b97f4a7c15ull) >> 60;  // 0..15
    return group * (kShards / kGroups) + hash % (kShards / kGroups);
  }
  // Where an address's probe starts in its shard: the hash bits the shard choice did not use.
  // Lookups and rehashing must agree on it.
  static uint64_t Slot(uint64_t hash, uint64_t capacity) { return (hash / kShards) & (capacity - 1); }

  RecordedFilter* const recorded_;
  Shard shards_[kShards];
  std::atomic<uint64_t> sequence_{0};
  std::atomic<size_t> table_bytes_{0};
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_ALLOCATION_TABLE_H_
