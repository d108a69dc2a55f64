// RuleCache: a thread's direct-mapped table from (lookup PC) to CompactRule, tagged with the
// module map generation so that a rebuild after dlopen/dlclose invalidates it. No lock: each
// thread has its own, and a signal handler that unwinds while its thread is inside the cache
// bypasses it instead of reading a half-written entry.
//
// Memory: kEntries * 32 bytes = 32 KiB per thread that unwinds with CFI, from a fixed pool of
// kMaxTables tables (8 MiB at most) taken from the mmap arena on first use and given back
// when the thread exits; a thread that finds the pool empty unwinds uncached.
#ifndef STACKWALK_SRC_CORE_RULE_CACHE_H_
#define STACKWALK_SRC_CORE_RULE_CACHE_H_

#include <cstdint>

#include "core/compact_rule.h"

namespace stackwalk::internal {

class RuleCache {
 public:
  static constexpr int kEntries = 1024;
  static constexpr int kMaxTables = 256;

  // The calling thread's cache, claimed on first use; nullptr when the pool is empty or the
  // thread is already inside its cache (a nested signal handler). Pair with Release().
  // Signal safety: async-signal-safe.
  static RuleCache* Acquire();
  void Release();

  const CompactRule* Find(uint64_t pc, uint64_t generation) const {
    const Entry& e = entries_[Slot(pc)];
    return e.pc == pc && e.generation == generation ? &e.rule : nullptr;
  }
  void Insert(uint64_t pc, uint64_t generation, const CompactRule& rule) {
    Entry& e = entries_[Slot(pc)];
    e.pc = pc;
    e.generation = generation;
    e.rule = rule;
  }

  // Empties the calling thread's cache (benchmarks measure cold captures with it).
  // Signal safety: async-signal-safe.
  static void ClearForThisThread();

  // How many pool tables threads hold now (tests: exited threads give theirs back).
  static int TablesInUse();

 private:
  struct Entry {
    uint64_t pc;
    uint64_t generation;
    CompactRule rule;
  };
  static_assert(sizeof(Entry) <= 32, "keep entries small");

  static uint32_t Slot(uint64_t pc) {
    // Fibonacci hashing spreads the return addresses of neighbouring call sites.
    return static_cast<uint32_t>((pc * 0x9e3779b97f4a7c15ull) >> 54) & (kEntries - 1);
  }
  void Clear();

  Entry entries_[kEntries];
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_RULE_CACHE_H_
