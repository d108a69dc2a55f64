#include "leakcheck/allocation_table.h"

#include <unistd.h>

#include <algorithm>

#include "leakcheck/record_region.h"

namespace stackwalk::leakcheck {
namespace {

using Slot = record::AllocationSlot;

// Load bounds, in thousandths: grow when an insert would pass 92 %, shrink when
// frees leave less than 55 % (and half as many more came, Shard::frees_below),
// and rebuild at 78 %. A (2, 4) cuckoo table
// fills to ~97 % before inserts fail; the breadth-first search below finds
// paths up to 95 % (the random walk of 32 moves it replaced failed from ~87 %
// with these hashes, and each failure rebuilt the shard), but from ~92 % both
// of an insert's buckets are full ever more often and its search reaches two
// and three moves: grown at 92 % instead of 95 %, python's inserts cost ~11 %
// fewer instructions (docs/leakcheck-benchmarks.md, 2026-11-28) although a
// growing live set rebuilds a shard every 18 % of growth instead of every 22 %
// (each block is moved ~6.6 times on the way up instead of ~5.6). 78 % after a
// resize is 30.8 bytes a block, under 32 with the last page's rounding from 26
// pages a shard; the whole table stays under 32 from 10,000 live blocks
// (AtMost32BytesALiveBlockFrom10000Up; bench/live_table_bytes.sh: 26-31).
constexpr uint64_t kGrowAt = 920;
constexpr uint64_t kShrinkBelow = 550;
constexpr uint64_t kResizeTo = 780;
// How many buckets one insert's search for a cuckoo path may reach before the
// shard grows instead: the block's two, the 8 one move away, the 32 two moves
// away and the first 22 three moves away.
constexpr int kMaxReached = 64;

// A block's slot written where another was (or none): the address word cleared
// first and set last, so a program killed in between leaves an empty slot (the
// block is still in the slot it came from), never one block's address with
// another's fields (record_format.h).
void WriteSlot(Slot& to, const Slot& from) {
  to.word[0] = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  to.word[1] = from.word[1];
  to.word[2] = from.word[2];
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // One store even on arm32, where a plain 64-bit store may be two and a kill between them would
  // leave the address (the low half) with the thread bits of the high half still zero.
  __atomic_store_n(&to.word[0], from.word[0], __ATOMIC_RELAXED);
}

constexpr uint64_t kAddressMask = (uint64_t{1} << record::kSlotAddressBits) - 1;

// The slot of `bucket` holding the block whose slot address is `at` (0: its first empty
// slot), or null.
// Unrolled: the hooks call it twice for every allocation.
__attribute__((always_inline)) inline Slot* Match(Slot* bucket, uint64_t at) {
  if ((bucket[0].word[0] & kAddressMask) == at) return &bucket[0];
  if ((bucket[1].word[0] & kAddressMask) == at) return &bucket[1];
  if ((bucket[2].word[0] & kAddressMask) == at) return &bucket[2];
  if ((bucket[3].word[0] & kAddressMask) == at) return &bucket[3];
  return nullptr;
}

std::atomic<AllocationTable::RebuildProbe> g_rebuild_probe{nullptr};

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

// Inlined into Resize, which calls it for every block: the first bucket looked at alone (most
// blocks go there at 78-95 % load), by the unrolled Match.
__attribute__((always_inline)) inline bool AllocationTable::Place(Slot* slots, uint32_t buckets,
                                                                 uint32_t* kick, const Slot& s,
                                                                 uint64_t at, uint64_t hash) {
  const uint32_t first = FirstBucket(hash, at, buckets);
  Slot* empty = Match(slots + uint64_t{first} * kBucketSlots, 0);
  if (empty == nullptr) {
    const uint32_t second = SecondBucket(at, first, buckets);
    empty = Match(slots + uint64_t{second} * kBucketSlots, 0);
    if (empty == nullptr) return PlaceMoving(slots, buckets, kick, s, {first, second});
  }
  WriteSlot(*empty, s);
  return true;
}

bool AllocationTable::PlaceMoving(Slot* slots, uint32_t buckets, uint32_t* kick, const Slot& s,
                                  const Buckets& b) {
  // Which of the two is searched first alternates, so neither fills first.
  const bool second_first = (++*kick & 1) != 0;
  const uint32_t start[2] = {second_first ? b.second : b.first, second_first ? b.first : b.second};
  // One move first, in a tight loop: most paths at these loads are one block moved to its other
  // bucket (85 % of searches on a Python run). Both of `s`'s buckets are full, so a block whose
  // other bucket is the second of them finds no empty slot there: no path check is needed.
  uint32_t others[2][kBucketSlots];
  for (int i = 0; i < 2; ++i) {
    Slot* const from = slots + uint64_t{start[i]} * kBucketSlots;
    for (uint32_t j = 0; j < kBucketSlots; ++j) {
      const uint32_t other = OtherBucket(SlotAddressOf(from[j]), start[i], buckets);
      others[i][j] = other;
      if (Slot* empty = Match(slots + uint64_t{other} * kBucketSlots, 0)) {
        WriteSlot(*empty, from[j]);
        WriteSlot(from[j], s);
        return true;
      }
    }
  }
  // Else a breadth-first search, from the buckets one move away, for the shortest path of blocks
  // each of which can move to its other bucket, ending at an empty slot; then the blocks move
  // from its end back, so every block is always in some slot. A bucket reached: from `parent`
  // (an index in `reached`, -1 for the block's own two), by moving the block in the parent's
  // slot `slot` here.
  struct Reached {
    uint32_t bucket;
    int16_t parent;
    uint8_t slot;
  };
  Reached reached[kMaxReached];
  int count = 0;
  reached[count++] = {start[0], -1, 0};
  reached[count++] = {start[1], -1, 0};
  for (int16_t i = 0; i < 2; ++i) {
    for (uint32_t j = 0; j < kBucketSlots; ++j) {
      reached[count++] = {others[i][j], i, static_cast<uint8_t>(j)};
    }
  }
  for (int at = 2; at < count; ++at) {
    const uint32_t bucket = reached[at].bucket;
    for (uint32_t j = 0; j < kBucketSlots; ++j) {
      const uint32_t other =
          OtherBucket(SlotAddressOf(slots[uint64_t{bucket} * kBucketSlots + j]), bucket, buckets);
      // A bucket already on this path would have a slot moved twice.
      bool on_path = false;
      for (int k = at; k >= 0 && !on_path; k = reached[k].parent) {
        on_path = reached[k].bucket == other;
      }
      if (on_path) continue;
      if (Slot* empty = Match(slots + uint64_t{other} * kBucketSlots, 0)) {
        Slot* to = empty;
        uint64_t from = uint64_t{bucket} * kBucketSlots + j;
        for (int k = at;; k = reached[k].parent) {
          WriteSlot(*to, slots[from]);
          to = &slots[from];
          if (reached[k].parent < 0) break;
          from = uint64_t{reached[reached[k].parent].bucket} * kBucketSlots + reached[k].slot;
        }
        WriteSlot(*to, s);
        return true;
      }
      if (count < kMaxReached) {
        reached[count++] = {other, static_cast<int16_t>(at), static_cast<uint8_t>(j)};
      }
    }
  }
  return false;
}

bool AllocationTable::Resize(Shard& shard, uint64_t live) {
  const uint64_t page = PageSize();
  uint64_t want = (live * 1000 + kResizeTo - 1) / kResizeTo;  // slots
  if (want == 0) want = 1;
  uint64_t bytes =
      ((want + kBucketSlots - 1) / kBucketSlots * kBucketBytes + page - 1) / page * page;
  const uint64_t old_slots = uint64_t{shard.buckets} * kBucketSlots;
  const RebuildProbe probe = g_rebuild_probe.load(std::memory_order_relaxed);
  const uint64_t old_live = shard.live.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t buckets = bytes / kBucketBytes;
    if (buckets > UINT32_MAX) return false;
    // Own memory (scan/own_mappings.h): full of block addresses, never a root
    // of the leak check; in the record region when there is one, for the
    // launcher to read after the program.
    void* mem = RecordMap(bytes, record::kAllocationSlots);
    if (mem == nullptr) return false;
    auto* slots = static_cast<Slot*>(mem);  // zeroed: every slot empty
    if (probe != nullptr) probe(RebuildStep::kListed, 0, old_live);
    bool placed = true;
    uint64_t copied = 0;
    for (uint64_t i = 0; i < old_slots && placed; ++i) {
      const Slot& s = shard.slots[i];
      const uint64_t at = SlotAddressOf(s);
      if (at == 0) continue;
      placed = Place(slots, static_cast<uint32_t>(buckets), &shard.kick, s, at, Hash(at));
      ++copied;
      if (probe != nullptr && placed) probe(RebuildStep::kCopied, copied, old_live);
    }
    if (!placed) {  // no cuckoo path for some block (rare): try a little larger
      RecordUnmap(mem, bytes);
      bytes += (bytes / 8 + page - 1) / page * page;
      continue;
    }
    // The old slots are retired only now, every block in the new ones: a program killed at any
    // instant of the rebuild leaves each block in at least one listed table, and the reader takes
    // a block listed twice once (record_format.h).
    if (shard.slots != nullptr) {
      RecordUnmap(shard.slots, shard.mapped);
      table_bytes_.fetch_sub(shard.mapped, std::memory_order_relaxed);
      if (probe != nullptr) probe(RebuildStep::kRetired, copied, old_live);
    }
    shard.slots = slots;
    shard.buckets = static_cast<uint32_t>(buckets);
    shard.mapped = bytes;
    shard.grow_at = buckets * kBucketSlots * kGrowAt / 1000;
    // Rebuilt smaller only if that gives back a page (the smallest is one
    // page).
    const uint64_t smaller = (bytes - page) / kBucketBytes * kBucketSlots * kResizeTo / 1000;
    shard.shrink_below =
        bytes <= page ? 0 : std::min(buckets * kBucketSlots * kShrinkBelow / 1000, smaller);
    shard.frees_below = 0;
    table_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
}

uint64_t AllocationTable::live_count() const {
  uint64_t live = 0;
  for (const Shard& shard : shards_) live += shard.live.load(std::memory_order_relaxed);
  return live;
}

uint64_t AllocationTable::live_bytes() const {
  uint64_t bytes = 0;
  for (const Shard& shard : shards_) bytes += shard.bytes.load(std::memory_order_relaxed);
  return bytes;
}

inline AllocationTable::Slot* AllocationTable::Find(Shard& shard, uint64_t at, uint64_t hash) {
  if (shard.buckets == 0) return nullptr;
  const uint32_t first = FirstBucket(hash, at, shard.buckets);
  if (Slot* s = Match(shard.slots + uint64_t{first} * kBucketSlots, at)) return s;
  const uint32_t second = SecondBucket(at, first, shard.buckets);
  return Match(shard.slots + uint64_t{second} * kBucketSlots, at);
}

bool AllocationTable::Insert(uintptr_t address, uint64_t size, uint32_t stack_id, int32_t thread,
                             uint64_t sequence, Allocation* replaced) {
  if (replaced != nullptr) replaced->address = 0;
  if (!SlotHolds(address, size)) {
    untracked_.Count(UntrackedWhy::kRefused, size);
    return false;
  }
  // Counted in the filter before the block can be found: a free that finds it sees its count.
  if (recorded_ != nullptr && !recorded_->Add(address)) {
    untracked_.Count(UntrackedWhy::kNoMemory, size);
    return false;
  }
  const Slot packed = PackAllocation(Allocation{address, size, sequence, stack_id, thread});
  const uint64_t at = uint64_t{address} >> 3;
  const uint64_t hash = Hash(at);
  Shard& shard = shards_[ShardOf(address, hash)];
  SpinLockHolder hold(shard.lock);
  const uint64_t live = shard.live.load(std::memory_order_relaxed);
  // A shard that cannot grow may still take the block: in place of a block whose free was
  // missed, in a free slot or at the end of a cuckoo path, none of which needs memory. Only a
  // shard without slots at all gives up here.
  const bool grown = live < shard.grow_at || Resize(shard, live + 1);
  if (!grown && shard.buckets == 0) {
    if (recorded_ != nullptr) recorded_->Remove(address);
    untracked_.Count(UntrackedWhy::kNoMemory, size);
    return false;
  }
  // The block if its free was missed (in either bucket), else an empty slot. The filter rules
  // that out for most blocks without a look at the slots (RecordedFilter::MayHoldAnother).
  const uint32_t first = FirstBucket(hash, at, shard.buckets);
  const uint32_t second = SecondBucket(at, first, shard.buckets);
  Slot* const first_slots = shard.slots + uint64_t{first} * kBucketSlots;
  Slot* const second_slots = shard.slots + uint64_t{second} * kBucketSlots;
  Slot* s = nullptr;
  if (recorded_ == nullptr || recorded_->MayHoldAnother(address)) {
    s = Match(first_slots, at);
    if (s == nullptr) s = Match(second_slots, at);
  }
  if (__builtin_expect(s != nullptr,
                       0)) {  // a block we missed the free of: replace it
    const Allocation old = UnpackAllocation(*s);
    if (replaced != nullptr) *replaced = old;
    WriteSlot(*s, packed);
    shard.bytes.store(shard.bytes.load(std::memory_order_relaxed) - old.size + size,
                      std::memory_order_relaxed);
    if (recorded_ != nullptr) recorded_->Remove(address);  // the replaced record's count
    return true;
  }
  Slot* empty = Match(first_slots, 0);
  if (empty == nullptr) empty = Match(second_slots, 0);
  if (empty != nullptr) {
    WriteSlot(*empty, packed);
  } else if (!PlaceMoving(shard.slots, shard.buckets, &shard.kick, packed, {first, second})) {
    if (!grown) {  // full, and no memory to grow
      if (recorded_ != nullptr) recorded_->Remove(address);
      untracked_.Count(UntrackedWhy::kNoMemory, size);
      return false;
    }
    // No cuckoo path: grow by an eighth (at least a page) until one is found.
    do {
      if (!Resize(shard, uint64_t{shard.buckets} * kBucketSlots * kResizeTo / 1000 * 9 / 8 + 1)) {
        if (recorded_ != nullptr) recorded_->Remove(address);
        untracked_.Count(UntrackedWhy::kNoMemory, size);
        return false;
      }
    } while (!Place(shard.slots, shard.buckets, &shard.kick, packed, at, hash));
  }
  shard.live.store(live + 1, std::memory_order_relaxed);
  shard.bytes.store(shard.bytes.load(std::memory_order_relaxed) + size, std::memory_order_relaxed);
  return true;
}

bool AllocationTable::Remove(uintptr_t address, Allocation* removed) {
  const uint64_t at = SlotAddress(address);
  const uint64_t hash = Hash(at);
  Shard& shard = shards_[ShardOf(address, hash)];
  // A shard with no live block holds none at `address`: a free of a block never
  // recorded (most of them when sampling) takes no lock. Without the lock this
  // is safe: a tracked block's Insert happened before its free (the program
  // passed the pointer on), so its count is seen, and only that block's own
  // Remove takes it away.
  if (shard.live.load(std::memory_order_relaxed) == 0 || at == 0) return false;
  SpinLockHolder hold(shard.lock);
  Slot* s = Find(shard, at, hash);
  if (s == nullptr) return false;
  const Allocation a = UnpackAllocation(*s);
  if (removed != nullptr) *removed = a;
  s->word[0] = 0;  // empty: a free leaves nothing behind
  const uint64_t live = shard.live.load(std::memory_order_relaxed) - 1;
  shard.live.store(live, std::memory_order_relaxed);
  shard.bytes.store(shard.bytes.load(std::memory_order_relaxed) - a.size,
                    std::memory_order_relaxed);
  // Mostly empty after many frees: rebuilt smaller (a failed rebuild leaves it
  // as it was).
  if (live < shard.shrink_below) {
    // A failed rebuild (no memory) waits for as many frees again before the next try.
    if (uint64_t{++shard.frees_below} * 2 >= live && !Resize(shard, live)) shard.frees_below = 0;
  } else {
    shard.frees_below = 0;
  }
  if (recorded_ != nullptr) recorded_->Remove(address);
  return true;
}

void AllocationTable::MarkReported(const Allocation* blocks, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t at = SlotAddress(blocks[i].address);
    if (at == 0) continue;
    const uint64_t hash = Hash(at);
    Shard& shard = shards_[ShardOf(blocks[i].address, hash)];
    SpinLockHolder hold(shard.lock);
    Slot* s = Find(shard, at, hash);
    // blocks[i] came from a walk of this table: its number is the slot's
    // (saturated or not).
    if (s != nullptr && SequenceNumber(UnpackAllocation(*s)) == SequenceNumber(blocks[i])) {
      s->word[2] |= kReportedBit;
    }
  }
}

bool AllocationTable::MarkIgnored(uintptr_t address) {
  const uint64_t at = SlotAddress(address);
  if (at == 0) return false;
  const uint64_t hash = Hash(at);
  Shard& shard = shards_[ShardOf(address, hash)];
  SpinLockHolder hold(shard.lock);
  Slot* s = Find(shard, at, hash);
  if (s == nullptr) return false;
  s->word[2] |= kIgnoredBit;
  return true;
}

void AllocationTable::Clear() {
  for (Shard& shard : shards_) {
    SpinLockHolder hold(shard.lock);
    const uint64_t n = uint64_t{shard.buckets} * kBucketSlots;
    for (uint64_t i = 0; i < n; ++i) {
      // Each record's own count out: a block another thread records meanwhile keeps its own.
      if (recorded_ != nullptr && !SlotEmpty(shard.slots[i])) {
        recorded_->Remove(UnpackAllocation(shard.slots[i]).address);
      }
      shard.slots[i].word[0] = 0;
    }
    shard.live.store(0, std::memory_order_relaxed);
    shard.bytes.store(0, std::memory_order_relaxed);
    shard.frees_below = 0;
  }
}

void AllocationTable::SetRebuildProbe(RebuildProbe probe) {
  g_rebuild_probe.store(probe, std::memory_order_relaxed);
}

void AllocationTable::LockAll() {
  for (Shard& s : shards_) s.lock.Lock();
}

void AllocationTable::UnlockAll() {
  for (Shard& s : shards_) s.lock.Unlock();
}

}  // namespace stackwalk::leakcheck
