#include "core/rule_cache.h"

#include <pthread.h>

#include <atomic>

#include "core/arena.h"

namespace stackwalk::internal {
namespace {

static_assert((RuleCache::kEntries & (RuleCache::kEntries - 1)) == 0, "power of two");
static_assert(RuleCache::kEntries == 4096, "Slot() keeps the top 12 bits");

struct Pool {
  std::atomic<bool> in_use[RuleCache::kMaxTables];
};
Pool g_pool;
// Second levels handed out (RuleCache::Evict), up to kMaxSecondLevels.
std::atomic<int> g_second_levels{0};
// Frame caches handed out (RuleCache::MakeFrameCache), up to kMaxFrameCaches.
std::atomic<int> g_frame_caches{0};

// A key whose destructor gives the slot back when the thread exits. Created at load time, or
// earlier by PrepareExitKey; captures before that (an allocation hook called while the C
// library starts) wait for it.
enum KeyState : int { kKeyNotYet = 0, kKeyReady = 1, kKeyFailed = 2, kKeyMaking = 3 };
pthread_key_t g_exit_key;
std::atomic<int> g_exit_key_state{kKeyNotYet};

__attribute__((constructor)) void CreateExitKey() { RuleCache::PrepareExitKey(); }

}  // namespace

void RuleCache::PrepareExitKey() {
  int expected = kKeyNotYet;
  if (!g_exit_key_state.compare_exchange_strong(expected, kKeyMaking, std::memory_order_acq_rel)) {
    return;  // made, or being made by another thread, whose captures go uncached meanwhile
  }
  g_exit_key_state.store(
      pthread_key_create(&g_exit_key, RuleCache::GiveBackAtExit) == 0 ? kKeyReady : kKeyFailed,
      std::memory_order_release);
}

void RuleCache::GiveBackAtExit(void* slot_plus_one) {
  const int slot = static_cast<int>(reinterpret_cast<intptr_t>(slot_plus_one)) - 1;
  // This thread first: once the slot is free another thread may claim the table, and two
  // threads must never write one (a frame cache entry half of each would name another stack's
  // slots).
  slot_plus_one_ = -1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (slot >= 0 && slot < RuleCache::kMaxTables) {
    g_pool.in_use[slot].store(false, std::memory_order_release);
  }
}

int RuleCache::ClaimSlot() {
  // Registering the destructor must not allocate: glibc keeps the first 32 keys' values in
  // the thread descriptor itself. With a higher key the thread could not give its slot back,
  // so it goes uncached rather than leak a table per thread.
  const int key_state = g_exit_key_state.load(std::memory_order_acquire);
  if (key_state == kKeyNotYet || key_state == kKeyMaking) return kNotYet;
  if (key_state != kKeyReady || g_exit_key >= 32) return -1;
  for (int i = 0; i < RuleCache::kMaxTables; ++i) {
    bool expected = false;
    if (!g_pool.in_use[i].compare_exchange_strong(expected, true)) continue;
    RuleCache* table = __atomic_load_n(&RuleCache::tables_[i], __ATOMIC_ACQUIRE);
    if (table == nullptr) {
      table = static_cast<RuleCache*>(Arena::Global().Allocate(sizeof(RuleCache), 64));
      if (table == nullptr) {
        g_pool.in_use[i].store(false);
        return -1;
      }
      table->Clear();
      __atomic_store_n(&RuleCache::tables_[i], table, __ATOMIC_RELEASE);
    } else {
      table->Clear();  // a dead thread's entries
      table->StartWindows();  // and its way of walking: the new thread's walks choose their own
    }
    pthread_setspecific(g_exit_key, reinterpret_cast<void*>(static_cast<intptr_t>(i + 1)));
    return i;
  }
  return -1;
}



RuleCache* RuleCache::AcquireSlow() {
  if (busy_ || slot_plus_one_ < 0) return nullptr;
  busy_ = true;  // a handler interrupting the claim must not claim too
  int slot = ClaimSlot();
  // Refused for good (-1), or for now: this walk goes uncached, a later one claims again.
  slot_plus_one_ = slot == kNotYet ? 0 : slot < 0 ? -1 : slot + 1;
  if (slot < 0) {
    busy_ = false;
    return nullptr;
  }
  return tables_[slot];
}

void RuleCache::Evict(const Entry& entry) {
  if (second_ == nullptr) {
    if (++evictions_ < kEntries) return;
    evictions_ = 0;
    if (g_second_levels.fetch_add(1, std::memory_order_relaxed) >= kMaxSecondLevels) {
      g_second_levels.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    second_ = static_cast<Entry*>(Arena::Global().Allocate(sizeof(Entry) * kSecondEntries, 64));
    if (second_ == nullptr) {
      g_second_levels.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
  PutSecond(entry);
}

void RuleCache::MakeFrameCache() {
  if (g_frame_caches.fetch_add(1, std::memory_order_relaxed) >= kMaxFrameCaches) {
    g_frame_caches.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  frames_ = static_cast<FrameCache*>(Arena::Global().Allocate(sizeof(FrameCache), 64));
  if (frames_ == nullptr) g_frame_caches.fetch_sub(1, std::memory_order_relaxed);
}

void RuleCache::PutSecond(const Entry& entry) {
  *PlaceIn(second_, SecondSlot(entry.pc), entry.pc, entry.tag) = entry;
}

const CompactRule* RuleCache::FindSecond(uint64_t pc, uint64_t tag) {
  // pc 0 is an empty slot's (a walk from a call through a null pointer looks it up).
  if (second_ == nullptr || pc == 0) return nullptr;
  const uint32_t slot = SecondSlot(pc);
  Entry* found = &second_[slot];
  if (found->pc != pc || found->tag != tag) {
    found = &second_[slot ^ 1];
    if (found->pc != pc || found->tag != tag) return nullptr;
  }
  ++second_hits_;
  // Up into the first level; a live entry it takes the place of goes down.
  const Entry up = *found;
  *found = Entry{};  // empty: no pc, no tag (a pc of 0 with a live tag would match a lookup of 0)
  Entry* to = FirstLevelSlot(pc, tag);
  if (to->pc != pc && to->tag == tag && to->pc != 0) PutSecond(*to);
  *to = up;
  return &to->rule;
}

void RuleCache::Clear() {
  ++clears_;  // every entry's tag is now stale; the table's pages stay untouched
  log_.Invalidate();
  fp_log_.Invalidate();
}

int RuleCache::TablesInUse() {
  int n = 0;
  for (int i = 0; i < kMaxTables; ++i) n += g_pool.in_use[i].load() ? 1 : 0;
  return n;
}

bool RuleCache::UseFrameCacheForThisThread(bool use) {
  RuleCache* cache = Acquire();
  if (cache == nullptr) return false;
  if (use && cache->frames_ == nullptr) cache->MakeFrameCache();
  cache->StartWindows();
  cache->use_frames_ = use && cache->frames_ != nullptr;
  const bool done = cache->use_frames_ == use;
  cache->Release();
  return done;
}

void RuleCache::ClearForThisThread() {
  RuleCache* cache = Acquire();
  if (cache == nullptr) return;
  cache->Clear();
  cache->Release();
}

}  // namespace stackwalk::internal
