#include "leakcheck/allocation_table.h"

#include "leakcheck/record_region.h"

namespace stackwalk::leakcheck {

bool AllocationTable::Grow(Shard& shard) {
  // Mostly deleted slots (a free leaves one): rehash at the same size rather than double, so
  // the table follows the live count, not the number of allocations ever made.
  uint64_t live = 0;
  for (uint64_t i = 0; i < shard.capacity; ++i) live += shard.slots[i].address > 1 ? 1 : 0;
  uint64_t capacity = shard.capacity == 0 ? 64
                      : live * 4 > shard.capacity ? shard.capacity * 2
                                                  : shard.capacity;
  // Own memory (scan/own_mappings.h): full of block addresses, never a root of the leak check;
  // in the record region when there is one, for the launcher to read after the program.
  void* mem = RecordMap(capacity * sizeof(Allocation), record::kAllocationSlots);
  if (mem == nullptr) return false;
  auto* slots = static_cast<Allocation*>(mem);  // zeroed: every slot empty
  uint64_t used = 0;
  for (uint64_t i = 0; i < shard.capacity; ++i) {
    const Allocation& a = shard.slots[i];
    if (a.address <= 1) continue;
    uint64_t j = Slot(Hash(a.address), capacity);
    while (slots[j].address != 0) j = (j + 1) & (capacity - 1);
    slots[j] = a;
    ++used;
  }
  if (shard.slots != nullptr) {
    RecordUnmap(shard.slots, shard.capacity * sizeof(Allocation));
    table_bytes_.fetch_sub(shard.capacity * sizeof(Allocation), std::memory_order_relaxed);
  }
  shard.slots = slots;
  shard.capacity = capacity;
  shard.used = used;
  table_bytes_.fetch_add(capacity * sizeof(Allocation), std::memory_order_relaxed);
  return true;
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

bool AllocationTable::Insert(uintptr_t address, uint64_t size, uint32_t stack_id, int32_t thread,
                             uint64_t sequence, Allocation* replaced) {
  if (replaced != nullptr) replaced->address = 0;
  // Counted in the filter before the block can be found: a free that finds it sees its count.
  if (recorded_ != nullptr && !recorded_->Add(address)) return false;
  const uint64_t hash = Hash(address);
  Shard& shard = shards_[ShardOf(address, hash)];
  SpinLockHolder hold(shard.lock);
  // Keep at most half the slots used (live or deleted): probes stay short.
  if ((shard.used + 1) * 2 > shard.capacity && !Grow(shard)) {
    if (recorded_ != nullptr) recorded_->Remove(address);
    return false;
  }
  uint64_t mask = shard.capacity - 1;
  uint64_t i = Slot(hash, shard.capacity);
  uint64_t reuse = UINT64_MAX;
  for (;; i = (i + 1) & mask) {
    Allocation& a = shard.slots[i];
    if (a.address == address) {  // a block we missed the free of: replace it
      if (replaced != nullptr) *replaced = a;
      shard.bytes.store(shard.bytes.load(std::memory_order_relaxed) - a.size, std::memory_order_relaxed);
      shard.live.store(shard.live.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      if (recorded_ != nullptr) recorded_->Remove(address);  // the replaced record's count
      reuse = i;
      break;
    }
    if (a.address == 1 && reuse == UINT64_MAX) reuse = i;
    if (a.address == 0) {
      if (reuse == UINT64_MAX) {
        reuse = i;
        ++shard.used;
      }
      break;
    }
  }
  shard.slots[reuse] = Allocation{address, size, sequence, stack_id, thread};
  shard.live.store(shard.live.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  shard.bytes.store(shard.bytes.load(std::memory_order_relaxed) + size, std::memory_order_relaxed);
  return true;
}

bool AllocationTable::Remove(uintptr_t address, Allocation* removed) {
  const uint64_t hash = Hash(address);
  Shard& shard = shards_[ShardOf(address, hash)];
  // A shard with no live block holds none at `address`: a free of a block never recorded (most
  // of them when sampling) takes no lock. Without the lock this is safe: a tracked block's
  // Insert happened before its free (the program passed the pointer on), so its count is seen,
  // and only that block's own Remove takes it away.
  if (shard.live.load(std::memory_order_relaxed) == 0) return false;
  SpinLockHolder hold(shard.lock);
  if (shard.capacity == 0) return false;
  uint64_t mask = shard.capacity - 1;
  for (uint64_t i = Slot(hash, shard.capacity);; i = (i + 1) & mask) {
    Allocation& a = shard.slots[i];
    if (a.address == 0) return false;
    if (a.address == address) {
      if (removed != nullptr) *removed = a;
      shard.bytes.store(shard.bytes.load(std::memory_order_relaxed) - a.size, std::memory_order_relaxed);
      shard.live.store(shard.live.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      a.address = 1;  // deleted: probes go on past it
      if (recorded_ != nullptr) recorded_->Remove(address);
      return true;
    }
  }
}

Allocation* AllocationTable::Find(Shard& shard, uintptr_t address, uint64_t hash) {
  if (shard.capacity == 0) return nullptr;
  const uint64_t mask = shard.capacity - 1;
  for (uint64_t i = Slot(hash, shard.capacity);; i = (i + 1) & mask) {
    Allocation& a = shard.slots[i];
    if (a.address == 0) return nullptr;
    if (a.address == address) return &a;
  }
}

void AllocationTable::MarkReported(const Allocation* blocks, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t hash = Hash(blocks[i].address);
    Shard& shard = shards_[ShardOf(blocks[i].address, hash)];
    SpinLockHolder hold(shard.lock);
    Allocation* a = Find(shard, blocks[i].address, hash);
    if (a != nullptr && SequenceNumber(*a) == SequenceNumber(blocks[i])) a->sequence |= kReportedBit;
  }
}

bool AllocationTable::MarkIgnored(uintptr_t address) {
  if (address <= 1) return false;
  const uint64_t hash = Hash(address);
  Shard& shard = shards_[ShardOf(address, hash)];
  SpinLockHolder hold(shard.lock);
  Allocation* a = Find(shard, address, hash);
  if (a == nullptr) return false;
  a->sequence |= kIgnoredBit;
  return true;
}

void AllocationTable::Clear() {
  for (Shard& shard : shards_) {
    SpinLockHolder hold(shard.lock);
    for (uint64_t i = 0; i < shard.capacity; ++i) {
      Allocation& a = shard.slots[i];
      // Each record's own count out: a block another thread records meanwhile keeps its own.
      if (a.address > 1 && recorded_ != nullptr) recorded_->Remove(a.address);
      a.address = 0;
    }
    shard.used = 0;
    shard.live.store(0, std::memory_order_relaxed);
    shard.bytes.store(0, std::memory_order_relaxed);
  }
}

void AllocationTable::LockAll() {
  for (Shard& s : shards_) s.lock.Lock();
}

void AllocationTable::UnlockAll() {
  for (Shard& s : shards_) s.lock.Unlock();
}

}  // namespace stackwalk::leakcheck
