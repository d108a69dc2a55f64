// AllocationTable: the live allocations, address -> {size, stack id, thread, sequence number}.
// Sharded by address (a group of shards per 64 MiB region, a shard in it by hash) with a spin
// lock per shard, so threads allocating at once rarely meet. Each shard is a bucketized cuckoo
// hash table (buckets of 4 packed 24-byte slots, allocation_slot.h; each block in one of two
// buckets its address picks) in mmap'ed memory (no malloc: the allocation hooks call it), kept
// between 78 % and 92 % full while its live set grows or holds: at 92 % it grows to 78 %; below
// 55 % (after frees), once as many more frees as half its live blocks came (a live set that
// swings back up is not moved twice), it shrinks to 78 %, to any number of whole pages (the
// bucket picked by multiply-shift, not a mask). So a live block costs 26-31 bytes, up to ~65
// for a while after most blocks were freed, with no tombstones: a free empties its slot. A
// lookup reads at most 8 slots; an insert into two full buckets moves the shortest chain of
// blocks a breadth-first search finds to their other buckets (cuckoo hashing), or grows the
// shard if none is found. ForEach walks it as one consistent view, every shard lock held: the
// report's copy (report_collect.h), which the reachability scan reads.
#ifndef STACKWALK_LEAKCHECK_ALLOCATION_TABLE_H_
#define STACKWALK_LEAKCHECK_ALLOCATION_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "leakcheck/allocation_slot.h"
#include "leakcheck/recorded_filter.h"
#include "leakcheck/spin_lock.h"
#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck {

class AllocationTable {
 public:
  static constexpr int kShards = 64;

  // `recorded`: the filter this table keeps of its addresses (recorded_filter.h), for MayHold;
  // none: MayHold always says maybe.
  constexpr explicit AllocationTable(RecordedFilter* recorded = nullptr) : recorded_(recorded) {}

  // Records a live allocation made at `sequence` (from ReserveSequences). Returns false if out
  // of memory (the table could not grow, the filter's counts could not be mapped) or if a slot
  // cannot hold it (SlotHolds: an address above 2^48 or unaligned, a block of 1 TiB or more):
  // the allocation goes untracked, counted in untracked() (untracked.h). A block at the same
  // address whose free was missed is replaced, and copied to `*replaced` if given (else its
  // address there is 0).
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
    ForEachHeld(fn);
    UnlockAll();
    return true;
  }

  // ForEach for a caller that already holds every shard lock (LockAll): fn(const Allocation&)
  // for every live allocation, nothing locked or unlocked. The leak check's snapshot, taken with
  // the world stopped. fn must not allocate.
  template <class Fn>
  void ForEachHeld(Fn&& fn) const {
    for (const Shard& shard : shards_) {
      const uint64_t n = uint64_t{shard.buckets} * kBucketSlots;
      for (uint64_t i = 0; i < n; ++i) {
        if (SlotEmpty(shard.slots[i])) continue;
        const Allocation a = UnpackAllocation(shard.slots[i]);
        fn(a);
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
  // Allocations Insert could not record, and why (untracked.h); since the table was made (Clear
  // keeps them: a block untracked in one in-process session may still be live in the next).
  UntrackedCounts untracked() const { return untracked_.Read(); }
  // Of them, those a slot cannot hold (SlotHolds): untracked, never kept wrong.
  uint64_t refused() const { return untracked().refused; }

  void LockAll();    // around fork()
  void UnlockAll();

  // The two buckets (of `buckets`) the block at `address` may be in: a test's look at how the
  // table keeps the heap's order (the private FirstBucket and SecondBucket).
  static std::pair<uint32_t, uint32_t> BucketsOf(uintptr_t address, uint32_t buckets) {
    const uint64_t at = SlotAddress(address);
    const uint32_t first = FirstBucket(Hash(at), at, buckets);
    return {first, SecondBucket(at, first, buckets)};
  }

  // A test's look into a shard's rebuild (Resize), so it can stop the program at any of its
  // instants and read the record region as the launcher would (a kill mid-rebuild): called, when
  // set, once the new slots are listed in the region (kListed, none copied yet), after each block
  // copied into them (kCopied), and once the old slots are retired (kRetired), with the blocks
  // copied so far and the old slots' live count. Null in the checker: one load a rebuild.
  enum class RebuildStep { kListed, kCopied, kRetired };
  using RebuildProbe = void (*)(RebuildStep step, uint64_t copied, uint64_t live);
  static void SetRebuildProbe(RebuildProbe probe);

 private:
  using Slot = record::AllocationSlot;
  static constexpr uint32_t kBucketSlots = 4;
  static constexpr uint64_t kBucketBytes = kBucketSlots * sizeof(Slot);
  // A cache line each: threads working on neighbouring shards do not share one.
  struct alignas(64) Shard {
    SpinLock lock;
    // Frees since the shard's live count last came down through shrink_below (Remove): it is
    // rebuilt smaller only once these reach half its live blocks, the rebuild's cost then paid
    // for by as many frees; a live set that swings back up first is never moved twice. In the
    // lock's padding: the shard stays one cache line.
    uint32_t frees_below = 0;
    Slot* slots = nullptr;  // buckets * kBucketSlots
    uint32_t buckets = 0;
    uint32_t kick = 0;      // counts cuckoo path searches: which bucket is searched first
    uint64_t mapped = 0;    // bytes
    uint64_t grow_at = 0;   // live counts at which it is rebuilt larger (Insert) and smaller
    uint64_t shrink_below = 0;  // (Remove); set by Resize
    // Written under the lock, read without it by live_count().
    std::atomic<uint64_t> live{0};
    std::atomic<uint64_t> bytes{0};
  };
  static_assert(sizeof(void*) != 8 || sizeof(Shard) == 64, "a shard is one cache line");
  // The two buckets a block may be in, from its slot address (address / 8), both keeping the
  // heap's order: the blocks of one 4 KiB stretch of addresses have them in two windows of
  // consecutive buckets, each starting where a hash of the stretch says. In the first window
  // (kFirstWindow buckets) a block's bucket is its 128-byte step of the stretch; in the second
  // (kSecondWindow) its 16-byte granule, which wraps every 2 KiB, so the blocks that share a
  // first bucket have second buckets of their own and a cuckoo move has somewhere to go (a
  // second window of 32 buckets grew a shard for want of a path: 109 growths in
  // AShardGrowsAtItsBoundNotForWantOfACuckooPath, 91 at 64, 80 at 128 as with a hash of the
  // whole address). An allocator hands out and takes back neighbouring blocks one after the
  // other, so consecutive inserts and frees mostly meet slots a recent one brought into the
  // cache, where a hash of the whole address made each a miss once the table outgrew the cache
  // (python: the table was ~30 % of its wall time). Stretches land at random, so the load stays
  // even. Reduced to [0, buckets) by multiply-shift. Lookups, inserts and resizes must agree.
  struct Buckets {
    uint32_t first, second;
  };
  static constexpr int kStretchShift = 12;  // bytes
  static constexpr uint32_t kFirstWindow = 32;    // 128-byte steps of a stretch
  static constexpr uint32_t kSecondWindow = 128;  // 16-byte granules
  static_assert((1u << kStretchShift) / 128 == kFirstWindow, "a stretch's 128-byte steps");
  // The hash of a block's stretch: its shard in the group (ShardOf) and its first window.
  static uint64_t Hash(uint64_t slot_address) {
    return (slot_address >> (kStretchShift - 3)) * 0x9e3779b97f4a7c15ull;
  }
  template <uint32_t kWindow>
  static uint32_t InWindow(uint32_t start, uint64_t step, uint32_t buckets) {
    const uint32_t bucket = start + (static_cast<uint32_t>(step) & (kWindow - 1));
    return bucket < buckets ? bucket : bucket % buckets;  // a window may pass the end
  }
  static uint32_t FirstBucket(uint64_t hash, uint64_t slot_address, uint32_t buckets) {
    const uint32_t start = static_cast<uint32_t>(((hash >> 30 & 0xffffffffu) * buckets) >> 32);
    return InWindow<kFirstWindow>(start, slot_address >> 4, buckets);
  }
  static uint32_t SecondBucket(uint64_t slot_address, uint32_t first, uint32_t buckets) {
    const uint64_t other = (slot_address >> (kStretchShift - 3)) * 0xc2b2ae3d27d4eb4full;
    const uint32_t start = static_cast<uint32_t>(((other >> 32) * buckets) >> 32);
    const uint32_t second = InWindow<kSecondWindow>(start, slot_address >> 1, buckets);
    return second != first ? second : first + 1 == buckets ? 0 : first + 1;
  }
  // The bucket other than `bucket` (one of its two) of the block whose slot address is
  // `slot_address`: the second computed only if `bucket` is its first.
  static uint32_t OtherBucket(uint64_t slot_address, uint32_t bucket, uint32_t buckets) {
    const uint32_t first = FirstBucket(Hash(slot_address), slot_address, buckets);
    return first != bucket ? first : SecondBucket(slot_address, first, buckets);
  }
  // The shard of an address: a group chosen by its 64 MiB region, then a shard in the group by
  // its stretch's hash (a stretch's blocks share a shard, as they share a window). glibc gives
  // each thread's arena a 64 MiB-aligned heap of its own, so threads allocating at once mostly
  // work in different groups and do not pass shard lines between cores; a block freed by
  // another thread is still found, by its address.
  static constexpr int kGroups = 16;
  static uint64_t ShardOf(uintptr_t address, uint64_t hash) {
    const uint64_t group = ((uint64_t{address} >> 26) * 0x9e3779b97f4a7c15ull) >> 60;  // 0..15
    return group * (kShards / kGroups) + (hash >> 62);
  }
  // Few shards a group: a shard's memory comes in whole pages, and fewer, larger shards waste
  // less of their last page (at 10,000 live blocks from one or two threads too).
  static_assert(kShards / kGroups == 4, "a shard in its group by the hash's top 2 bits");

  // The slot of the live block whose slot address is `at` in `shard` (its lock held), or null.
  Slot* Find(Shard& shard, uint64_t at, uint64_t hash);
  // Puts `s` (a block not in the table) in one of its buckets, moving others along a cuckoo
  // path if both are full; false if no path was found (the shard must grow).
  static bool Place(Slot* slots, uint32_t buckets, uint32_t* kick, const Slot& s, uint64_t at,
                    uint64_t hash);
  // Place when both buckets are full: the cuckoo path.
  static bool PlaceMoving(Slot* slots, uint32_t buckets, uint32_t* kick, const Slot& s,
                          const Buckets& b);
  // Rebuilds `shard` with room for `live` blocks at 78 % load (whole pages); false if out of
  // memory (the shard is left as it was).
  bool Resize(Shard& shard, uint64_t live);

  RecordedFilter* const recorded_;
  Shard shards_[kShards];
  std::atomic<uint64_t> sequence_{0};
  std::atomic<size_t> table_bytes_{0};
  UntrackedCounter untracked_;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_ALLOCATION_TABLE_H_
