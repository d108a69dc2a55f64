#include "leakcheck/stack_table.h"

#include "leakcheck/record_region.h"
#include "leakcheck/stack_hash.h"
#include "leakcheck/scan/own_mappings.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>

namespace stackwalk::leakcheck {
namespace {

// Own memory, never a root of the leak check; in the record region when there is one, for the
// launcher to read after the program (record_format.h).
void* MapZeroed(size_t size, record::ExtentKind kind, uint32_t index = 0) {
  return RecordMap(size, kind, index);
}

// Whether the path from `node` out is frames pcs[0, n). A stack's leaf is n deep: no null is met.
// Four frames a step: three instructions a frame (a load, a compare with the node's PC, a load of
// its parent) where the loop one at a time took nine with its counter and the null test.
template <class Node>
[[gnu::always_inline]] inline bool SamePath(const Node* node, void* const* pcs, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    if (node->pc != pcs[i]) return false;
    node = node->parent;
    if (node->pc != pcs[i + 1]) return false;
    node = node->parent;
    if (node->pc != pcs[i + 2]) return false;
    node = node->parent;
    if (node->pc != pcs[i + 3]) return false;
    node = node->parent;
  }
  for (; i < n; ++i, node = node->parent) {
    if (node->pc != pcs[i]) return false;
  }
  return true;
}

}  // namespace

uint32_t StackTable::FindIn(const Stack* s, uint64_t hash, void* const* pcs, int n) {
  for (; s != nullptr; s = __atomic_load_n(&s->next, __ATOMIC_ACQUIRE)) {
    if (s->hash == hash && s->n == n && SamePath(s->leaf, pcs, n)) return s->id;
  }
  return kNoStack;
}

namespace {

// The child index's hash of (parent, pc): its high bits pick the slot (a multiplicative hash's
// best mixed; the low ones took ~4 probes a lookup on cmake's nodes).
inline uint64_t ChildHash(const void* parent, const void* pc) {
  return (reinterpret_cast<uintptr_t>(pc) ^
          reinterpret_cast<uintptr_t>(parent) * 0xc2b2ae3d27d4eb4full) *
         0x9e3779b97f4a7c15ull;
}

// The slot of `hash` in an index of 2^bits slots.
inline uint32_t SlotOf(uint64_t hash, uint32_t bits) {
  return static_cast<uint32_t>(hash >> (64 - bits));
}

}  // namespace

bool StackTable::ChildIndexRoom() {
  const uint32_t count = frame_count_.load(std::memory_order_relaxed);
  if (uint64_t{count + 1} * 4 <= uint64_t{child_capacity_} * 3) return true;
  // From 16K slots (64 KiB): a process's first thousands of stacks are not rehashed at each
  // doubling (a cmake configure's 102,670 nodes went through eight).
  const uint32_t bits = child_capacity_ == 0 ? 14 : child_bits_ + 1;
  if (bits > 31) return false;
  const uint32_t capacity = uint32_t{1} << bits;
  uint32_t* slots = static_cast<uint32_t*>(OwnMap(sizeof(uint32_t) * capacity));  // zeroed
  if (slots == nullptr) return false;
  for (uint32_t index = 1; index <= count; ++index) {
    const FrameNode* node = FrameAt(index);
    uint32_t at = SlotOf(ChildHash(node->parent, node->pc), bits);
    while (slots[at] != 0) at = (at + 1) & (capacity - 1);
    slots[at] = index;
  }
  if (child_slots_ != nullptr) {
    OwnUnmap(child_slots_, sizeof(uint32_t) * child_capacity_);
    bytes_.fetch_sub(sizeof(uint32_t) * child_capacity_, std::memory_order_relaxed);
  }
  child_slots_ = slots;
  child_capacity_ = capacity;
  child_bits_ = bits;
  bytes_.fetch_add(sizeof(uint32_t) * capacity, std::memory_order_relaxed);
  return true;
}

const StackTable::FrameNode* StackTable::ChildOf(const FrameNode* parent, void* pc) {
  const uint64_t hash = ChildHash(parent, pc);
  uint32_t at = 0;
  if (child_slots_ != nullptr) {
    const uint32_t mask = child_capacity_ - 1;
    for (at = SlotOf(hash, child_bits_); child_slots_[at] != 0; at = (at + 1) & mask) {
      const FrameNode* node = FrameAt(child_slots_[at]);
      if (node->pc == pc && node->parent == parent) return node;
    }
  }
  // A new node: its slot found again if the index grew for it.
  const uint32_t capacity = child_capacity_;
  if (!ChildIndexRoom()) return nullptr;
  if (child_capacity_ != capacity) {
    const uint32_t mask = child_capacity_ - 1;
    for (at = SlotOf(hash, child_bits_); child_slots_[at] != 0; at = (at + 1) & mask) {
    }
  }
  const uint32_t index = frame_count_.load(std::memory_order_relaxed) + 1;
  if (index / kFrameChunk >= kFrameChunks) return nullptr;
  FrameNode*& chunk = frame_chunks_[index / kFrameChunk];
  if (chunk == nullptr) {
    chunk = static_cast<FrameNode*>(MapZeroed(sizeof(FrameNode) * kFrameChunk,
                                              record::kStackFrames, index / kFrameChunk));
    if (chunk == nullptr) return nullptr;
    bytes_.fetch_add(sizeof(FrameNode) * kFrameChunk, std::memory_order_relaxed);
  }
  FrameNode* node = FrameAt(index);
  node->pc = pc;
  node->parent = parent;
  frame_count_.store(index, std::memory_order_relaxed);
  child_slots_[at] = index;
  return node;
}

const StackTable::FrameNode* StackTable::AddPath(void* const* pcs, int n) {
  // The outer frames it shares with the stack added last (the next new stack of a program is
  // most often a neighbour of the last one in its call tree) are that stack's nodes: found by
  // comparing the two from the outermost in, not each through the child index.
  int shared = 0;
  const int most = n < last_n_ ? n : last_n_;
  while (shared < most && pcs[n - 1 - shared] == last_pcs_[last_n_ - 1 - shared]) ++shared;
  const FrameNode* node = last_leaf_;
  int up = last_n_ - shared;
  for (; up > 0 && node != nullptr; --up) node = node->parent;
  // A path that ends early (its nodes' chunk lost at a fork: a child whose copy failed starts
  // with zeroed tables) shares nothing: a path shorter than its stack would be read past its end.
  if (shared == 0 || up > 0 || node == nullptr) {
    shared = 0;
    node = nullptr;
  }
  for (int i = n - 1 - shared; i >= 0; --i) {
    node = ChildOf(node, pcs[i]);
    if (node == nullptr) {
      last_n_ = 0;  // a path cut short is no stack to share with
      return nullptr;
    }
  }
  std::memcpy(last_pcs_, pcs, sizeof(void*) * n);
  last_n_ = n;
  last_leaf_ = node;
  return node;
}

void* StackTable::Allocate(size_t size) {
  size = (size + 15) & ~size_t{15};
  if (size > arena_left_) {
    size_t chunk = size > (size_t{1} << 20) ? size : (size_t{1} << 20);
    char* mem = static_cast<char*>(MapZeroed(chunk, record::kStackNodes));
    if (mem == nullptr) return nullptr;
    arena_ = mem;
    arena_left_ = chunk;
    bytes_.fetch_add(chunk, std::memory_order_relaxed);
  }
  void* out = arena_;
  arena_ += size;
  arena_left_ -= size;
  return out;
}

uint32_t StackTable::Intern(void* const* pcs, int n, bool* added) {
  if (added != nullptr) *added = false;
  static_assert(sizeof(Stack) == sizeof(record::StackNode) &&
                    offsetof(Stack, leaf) == offsetof(record::StackNode, leaf) &&
                    offsetof(Stack, id) == offsetof(record::StackNode, id) &&
                    offsetof(Stack, n) == offsetof(record::StackNode, n) &&
                    sizeof(FrameNode) == sizeof(record::FrameNode) &&
                    offsetof(FrameNode, parent) == offsetof(record::FrameNode, parent),
                "stacks and frames are read as record::StackNode and record::FrameNode after "
                "the program (record_format.h)");
  if (n > kMaxFrames) n = kMaxFrames;
  if (n < 0) n = 0;
  const uint64_t hash = StackHash(pcs, n);
  // Known stacks (nearly every call) are found without the lock.
  if (const Buckets* buckets = buckets_.load(std::memory_order_acquire)) {
    const Stack* first = __atomic_load_n(&buckets->heads[hash & buckets->mask], __ATOMIC_ACQUIRE);
    if (uint32_t id = FindIn(first, hash, pcs, n)) return id;
  }
  return Add(pcs, n, hash, added);
}

bool StackTable::GrowBuckets() {
  Buckets* old = buckets_.load(std::memory_order_relaxed);
  const uint64_t count = old == nullptr ? 4096 : (old->mask + 1) * 2;
  auto* grown = static_cast<Buckets*>(OwnMap(BucketsBytes(count)));  // zeroed
  if (grown == nullptr) return false;
  grown->mask = count - 1;
  // In id order, each at its bucket's head: every `next` leads to an older stack, as in the
  // chains it leaves (FindIn's readers may be walking them).
  const uint32_t end = std::min<uint32_t>(next_id_.load(std::memory_order_acquire),
                                          static_cast<uint32_t>(kIdChunk) * kIdChunks);
  for (uint32_t id = 1; id < end; ++id) {
    Stack* s = StackOf(id);
    if (s == nullptr) continue;  // an id handed out to a stack that then ran out of memory
    Stack** head = &grown->heads[s->hash & grown->mask];
    __atomic_store_n(&s->next, *head, __ATOMIC_RELEASE);
    *head = s;
  }
  buckets_.store(grown, std::memory_order_release);
  bytes_.fetch_add(BucketsBytes(count), std::memory_order_relaxed);
  if (old != nullptr) {
    // Kept mapped (a lookup may still be reading it), its pages given back.
    madvise(old, BucketsBytes(old->mask + 1), MADV_DONTNEED);
    bytes_.fetch_sub(BucketsBytes(count / 2), std::memory_order_relaxed);
  }
  return true;
}

uint32_t StackTable::Add(void* const* pcs, int n, uint64_t hash, bool* added) {
  SpinLockHolder hold(add_lock_);
  // Every id handed out: nothing is added (nor a node made, nor the buckets grown for it).
  if (next_id_.load(std::memory_order_relaxed) >= static_cast<uint32_t>(kIdChunk) * kIdChunks) {
    const Buckets* buckets = buckets_.load(std::memory_order_relaxed);
    return buckets != nullptr ? FindIn(buckets->heads[hash & buckets->mask], hash, pcs, n)
                              : kNoStack;
  }
  Buckets* buckets = buckets_.load(std::memory_order_relaxed);
  // So many buckets as stacks at most: chains of one on average.
  if (buckets == nullptr || size() + 1 > buckets->mask + 1) {
    if (!GrowBuckets() && buckets == nullptr) return kNoStack;
    buckets = buckets_.load(std::memory_order_relaxed);
  }
  Stack** bucket = &buckets->heads[hash & buckets->mask];
  if (uint32_t id = FindIn(*bucket, hash, pcs, n)) return id;  // added meanwhile
  const FrameNode* leaf = nullptr;
  if (n > 0) {  // an empty stack may come as null
    leaf = AddPath(pcs, n);
    if (leaf == nullptr) return kNoStack;
  }
  Stack* s;
  {
    SpinLockHolder arena(arena_lock_);
    s = static_cast<Stack*>(Allocate(sizeof(Stack)));
  }
  if (s == nullptr) return kNoStack;
  s->hash = hash;
  s->leaf = leaf;
  s->n = n;
  uint32_t id = next_id_.fetch_add(1, std::memory_order_acq_rel);
  if (id >= static_cast<uint32_t>(kIdChunk) * kIdChunks) return kNoStack;
  // Its shared statistics' chunk before the id is published: a recorded block's stack always
  // has them.
  if (MapStatsChunk(id, 0) == nullptr) return kNoStack;
  std::atomic<Stack**>& chunk = ids_[id / kIdChunk];
  Stack** slots = chunk.load(std::memory_order_acquire);
  if (slots == nullptr) {
    Stack** fresh = static_cast<Stack**>(MapZeroed(sizeof(Stack*) * kIdChunk, record::kStackIds, id / kIdChunk));
    if (fresh == nullptr) return kNoStack;
    if (chunk.compare_exchange_strong(slots, fresh, std::memory_order_acq_rel)) {
      slots = fresh;
      bytes_.fetch_add(sizeof(Stack*) * kIdChunk, std::memory_order_relaxed);
    } else {
      RecordUnmap(fresh, sizeof(Stack*) * kIdChunk);
    }
  }
  s->id = id;
  __atomic_store_n(&slots[id % kIdChunk], s, __ATOMIC_RELEASE);
  s->next = *bucket;
  __atomic_store_n(bucket, s, __ATOMIC_RELEASE);  // published complete
  if (added != nullptr) *added = true;
  return id;
}

int StackTable::Frames(uint32_t id, void** pcs) const {
  const Stack* s = StackOf(id);
  if (s == nullptr) return 0;
  int n = 0;
  for (const FrameNode* node = s->leaf; node != nullptr && n < s->n; node = node->parent) {
    pcs[n++] = node->pc;
  }
  return n;
}

StackStats* StackTable::MapStatsChunk(uint32_t id, uint32_t copy) {
  std::atomic<StackStats*>& stats_chunk = stats_[copy][id / kIdChunk];
  StackStats* chunk = stats_chunk.load(std::memory_order_acquire);
  if (chunk != nullptr) return chunk;
  constexpr size_t kStatsChunkBytes = (sizeof(StackStats) * kIdChunk + 4095) & ~size_t{4095};
  StackStats* fresh = static_cast<StackStats*>(OwnMap(kStatsChunkBytes));  // zeroed
  if (fresh == nullptr) return nullptr;
  if (stats_chunk.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
    bytes_.fetch_add(kStatsChunkBytes, std::memory_order_relaxed);
    return fresh;
  }
  OwnUnmap(fresh, kStatsChunkBytes);
  return chunk;  // another thread's, just mapped
}

uint32_t StackTable::ClaimStatsCopy(uint32_t serial) {
  for (uint32_t copy = 1; copy < kStatsCopies; ++copy) {
    uint32_t none = 0;
    // Acquire: the writes of the copy's last owner, released by ReleaseStatsCopy, come first.
    if (stats_owners_[copy].compare_exchange_strong(none, serial, std::memory_order_acquire)) {
      return copy;
    }
  }
  return 0;
}

void StackTable::ReleaseStatsCopy(uint32_t copy) {
  if (copy != 0 && copy < kStatsCopies) stats_owners_[copy].store(0, std::memory_order_release);
}

void StackTable::ForgetStatsOwners() {
  for (std::atomic<uint32_t>& owner : stats_owners_) owner.store(0, std::memory_order_relaxed);
}

bool StackTable::Totals(uint32_t id, uint64_t final_epoch, StackStatsTotals* out) const {
  *out = StackStatsTotals();
  if (id == kNoStack || id / kIdChunk >= static_cast<uint32_t>(kIdChunks)) return false;
  bool found = false;
  for (uint32_t copy = 0; copy < kStatsCopies; ++copy) {
    const StackStats* chunk = stats_[copy][id / kIdChunk].load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    chunk[id % kIdChunk].AddTo(final_epoch, out);
    found = true;
  }
  // Summed while threads run (a snapshot), a block made in one copy and freed in another between
  // the two copies' reads shows as a free alone: live figures below zero read as none.
  for (uint64_t* live : {&out->live_bytes, &out->live_blocks, &out->peak_bytes, &out->peak_blocks}) {
    if (static_cast<int64_t>(*live) < 0) *live = 0;
  }
  return found;
}

void StackTable::ResetStats() {
  // next_id_ passes the last id when stacks run out (Add's fetch_add comes before its check).
  const uint32_t end = std::min<uint32_t>(next_id_.load(std::memory_order_acquire),
                                          static_cast<uint32_t>(kIdChunk) * kIdChunks);
  for (uint32_t copy = 0; copy < kStatsCopies; ++copy) {
    for (uint32_t id = 1; id < end; ++id) {
      StackStats* chunk = stats_[copy][id / kIdChunk].load(std::memory_order_acquire);
      if (chunk != nullptr) chunk[id % kIdChunk].Reset();
    }
  }
}

void StackTable::LockAll() {
  add_lock_.Lock();
  arena_lock_.Lock();
}

void StackTable::UnlockAll() {
  arena_lock_.Unlock();
  add_lock_.Unlock();
}

}  // namespace stackwalk::leakcheck
