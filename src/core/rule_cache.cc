#include "core/rule_cache.h"

#include <pthread.h>

#include <atomic>
#include <cstring>

#include "core/arena.h"

namespace stackwalk::internal {
namespace {

static_assert((RuleCache::kEntries & (RuleCache::kEntries - 1)) == 0, "power of two");
static_assert(RuleCache::kEntries == 1024, "Slot() keeps the top 10 bits");

struct Pool {
  std::atomic<RuleCache*> tables[RuleCache::kMaxTables];
  std::atomic<bool> in_use[RuleCache::kMaxTables];
};
Pool g_pool;

// The thread's claimed slot + 1 (0: none yet, -1: none available), and whether the thread is
// inside its cache right now.
__attribute__((tls_model("initial-exec"))) thread_local int t_slot_plus_one = 0;
__attribute__((tls_model("initial-exec"))) thread_local bool t_busy = false;

// A key whose destructor gives the slot back when the thread exits. Created at load time.
pthread_key_t g_exit_key;
bool g_have_exit_key = false;

void GiveBack(void* slot_plus_one) {
  int slot = static_cast<int>(reinterpret_cast<intptr_t>(slot_plus_one)) - 1;
  if (slot >= 0 && slot < RuleCache::kMaxTables) g_pool.in_use[slot].store(false);
}

__attribute__((constructor)) void CreateExitKey() {
  g_have_exit_key = pthread_key_create(&g_exit_key, GiveBack) == 0;
}

int ClaimSlot() {
  // Registering the destructor must not allocate: glibc keeps the first 32 keys' values in
  // the thread descriptor itself. With a higher key the thread could not give its slot back,
  // so it goes uncached rather than leak a table per thread.
  if (!g_have_exit_key || g_exit_key >= 32) return -1;
  for (int i = 0; i < RuleCache::kMaxTables; ++i) {
    bool expected = false;
    if (!g_pool.in_use[i].compare_exchange_strong(expected, true)) continue;
    RuleCache* table = g_pool.tables[i].load();
    if (table == nullptr) {
      table = static_cast<RuleCache*>(Arena::Global().Allocate(sizeof(RuleCache), 64));
      if (table == nullptr) {
        g_pool.in_use[i].store(false);
        return -1;
      }
      g_pool.tables[i].store(table);  // arena memory is zero: an empty cache
    } else {
      std::memset(static_cast<void*>(table), 0, sizeof(RuleCache));  // a dead thread's entries
    }
    pthread_setspecific(g_exit_key, reinterpret_cast<void*>(static_cast<intptr_t>(i + 1)));
    return i;
  }
  return -1;
}

}  // namespace

RuleCache* RuleCache::Acquire() {
  if (t_busy) return nullptr;
  if (t_slot_plus_one == 0) {
    t_busy = true;  // a handler interrupting the claim must not claim too
    int slot = ClaimSlot();
    t_slot_plus_one = slot < 0 ? -1 : slot + 1;
    t_busy = false;
  }
  if (t_slot_plus_one < 0) return nullptr;
  t_busy = true;
  return g_pool.tables[t_slot_plus_one - 1].load(std::memory_order_relaxed);
}

void RuleCache::Release() { t_busy = false; }

void RuleCache::Clear() { std::memset(static_cast<void*>(entries_), 0, sizeof(entries_)); }

int RuleCache::TablesInUse() {
  int n = 0;
  for (int i = 0; i < kMaxTables; ++i) n += g_pool.in_use[i].load() ? 1 : 0;
  return n;
}

void RuleCache::ClearForThisThread() {
  RuleCache* cache = Acquire();
  if (cache == nullptr) return;
  cache->Clear();
  cache->Release();
}

}  // namespace stackwalk::internal
