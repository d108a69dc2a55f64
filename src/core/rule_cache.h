// RuleCache: a thread's table from (lookup PC) to CompactRule (each PC in its slot or the
// slot's neighbour, see Find()), tagged with the module map generation so that a rebuild after
// dlopen/dlclose invalidates it, and the thread's FrameLog. No lock: each thread has its own, and
// a signal handler that unwinds while its thread is inside the cache bypasses it instead of
// reading a half-written entry.
//
// Memory: at most 166 KiB per thread that unwinds with tables, or with frame pointers on
// x86_64/aarch64 (kEntries * 32 bytes of rules, a 32 KiB FrameLog and a 6 KiB FpChainLog, checked
// below), from a fixed pool of kMaxTables tables (41 MiB at most) taken from the mmap arena on first use and given
// back when the thread exits; a thread that finds the pool empty unwinds uncached. The arena's
// pages are zero until written and Clear() writes none, so a thread holds the pages its rules
// and log touched. 4,096 entries: a compiler's allocation stacks (clang) cross more return
// addresses than 1,024 hold; with 1,024 a capture missed 0.8 times on average (a CFI parse,
// ~3,000 instructions), with 4,096 0.27 times (docs/leakcheck-benchmarks.md).
#ifndef STACKWALK_SRC_CORE_RULE_CACHE_H_
#define STACKWALK_SRC_CORE_RULE_CACHE_H_

#include <cstdint>

#include "core/compact_rule.h"
#include "core/fp_chain_log.h"
#include "core/frame_log.h"

namespace stackwalk::internal {

class RuleCache {
 public:
  static constexpr int kEntries = 4096;
  static constexpr int kMaxTables = 256;

  // The calling thread's cache, claimed on first use; nullptr when the pool is empty or the
  // thread is already inside its cache (a nested signal handler). Pair with Release().
  // Signal safety: async-signal-safe.
  static RuleCache* Acquire() {
    if (busy_ || slot_plus_one_ <= 0) return AcquireSlow();
    busy_ = true;
    return tables_[slot_plus_one_ - 1];
  }
  void Release() { busy_ = false; }

  // Two-way: a PC may sit in its slot or the slot's neighbour, so that two hot PCs that hash
  // alike do not evict each other on every walk.
  const CompactRule* Find(uint64_t pc, uint64_t generation) const {
    return FindTagged(pc, Tag(generation));
  }
  // Find() with Tag(generation) computed once per walk (the cached loop's lookups).
  const CompactRule* FindTagged(uint64_t pc, uint64_t tag) const {
    const uint32_t slot = Slot(pc);
    const Entry& a = entries_[slot];
    if (a.pc == pc && a.tag == tag) return &a.rule;
    const Entry& b = entries_[slot ^ 1];
    return b.pc == pc && b.tag == tag ? &b.rule : nullptr;
  }
  void Insert(uint64_t pc, uint64_t generation, const CompactRule& rule) {
    const uint64_t tag = Tag(generation);
    const uint32_t slot = Slot(pc);
    Entry* e = &entries_[slot];
    if (e->pc != pc && e->tag == tag && e->pc != 0) {
      Entry* other = &entries_[slot ^ 1];
      // Take the neighbour if it is free, stale or ours; else evict the home slot.
      if (other->pc == 0 || other->pc == pc || other->tag != tag) e = other;
    }
    e->pc = pc;
    e->tag = tag;
    e->rule = rule;
  }

  // An entry's validity: the module map generation and the table's clear count. After 2^16
  // clears an old entry of the same generation could count again, which is harmless: a rule is
  // right for its generation in any thread (clearing serves cold measurements and tests).
  uint64_t Tag(uint64_t generation) const { return (generation << 16 | clears_) + 1; }

  // Empties the calling thread's cache (benchmarks measure cold captures with it).
  // Signal safety: async-signal-safe.
  static void ClearForThisThread();

  // Forgets every rule (by moving to the next clear count, not by writing the table) and the log.
  void Clear();

  // The thread's log of its last complete CFI walk, and of its last frame-pointer walk.
  FrameLog& log() { return log_; }
  FpChainLog& fp_log() { return fp_log_; }

  // How many pool tables threads hold now (tests: exited threads give theirs back).
  static int TablesInUse();

 private:
  struct Entry {
    uint64_t pc;
    uint64_t tag;  // Tag() of the generation it was compiled for; 0: never written
    CompactRule rule;
  };
  static_assert(sizeof(Entry) <= 32, "keep entries small");
  static_assert(sizeof(Entry) * kEntries + sizeof(FrameLog) + sizeof(FpChainLog) <= (166 + 1) * 1024,
                "the per-thread bound documented above");



  static constexpr int kNotYet = -2;  // ClaimSlot(): before this library's constructors ran
  static RuleCache* AcquireSlow();
  static int ClaimSlot();

  // The thread's claimed slot + 1 (0: none yet, -1: none available), and whether the thread is
  // inside its cache right now. Initial-exec TLS, as StackMemory's.
  // (Defined inline with constant initializers: other files then read them directly, with no
  // TLS wrapper call.)
  __attribute__((tls_model("initial-exec"))) inline static thread_local int slot_plus_one_ = 0;
  __attribute__((tls_model("initial-exec"))) inline static thread_local bool busy_ = false;
  inline static RuleCache* tables_[kMaxTables] = {};  // set before slot i is handed out

  static uint32_t Slot(uint64_t pc) {
    // Fibonacci hashing spreads the return addresses of neighbouring call sites.
    return static_cast<uint32_t>((pc * 0x9e3779b97f4a7c15ull) >> 52) & (kEntries - 1);
  }

  Entry entries_[kEntries];
  FrameLog log_;  // at a multiple of 64 bytes from the table's start: a logged frame a line
  FpChainLog fp_log_;
  uint16_t clears_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_RULE_CACHE_H_
