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
//
// A second level for the threads that need it: a thread whose walks have evicted kEntries live
// rules from its table (clang's main thread within a few thousand allocations; a thread whose
// return addresses fit never does) gets a table of kSecondEntries more (1 MiB) from the arena,
// where evicted rules go and from which a miss of the first level takes its rule back (the two
// swap). At most kMaxSecondLevels tables of the pool have one (16 MiB at most); each stays with
// its table for the next thread that claims it.
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
  static constexpr int kSecondEntries = 32768;
  static constexpr int kMaxSecondLevels = 16;

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
  // Either level: a rule found in the second moves to the first.
  const CompactRule* Find(uint64_t pc, uint64_t generation) {
    const uint64_t tag = Tag(generation);
    const CompactRule* rule = FindTagged(pc, tag);
    return rule != nullptr ? rule : FindSecond(pc, tag);
  }
  // The first level's lookup, with Tag(generation) computed once per walk (the cached loop's;
  // on a miss it asks FindSecond).
  const CompactRule* FindTagged(uint64_t pc, uint64_t tag) const {
    const uint32_t slot = Slot(pc);
    const Entry& a = entries_[slot];
    if (a.pc == pc && a.tag == tag) return &a.rule;
    const Entry& b = entries_[slot ^ 1];
    return b.pc == pc && b.tag == tag ? &b.rule : nullptr;
  }
  // The second level's rule for pc (tag as FindTagged's), moved into the first level (the entry
  // it takes the place of moves down); null if there is none or the thread has no second level.
  const CompactRule* FindSecond(uint64_t pc, uint64_t tag);
  void Insert(uint64_t pc, uint64_t generation, const CompactRule& rule) {
    const uint64_t tag = Tag(generation);
    Entry* e = FirstLevelSlot(pc, tag);
    if (e->pc != pc && e->tag == tag && e->pc != 0) Evict(*e);
    e->pc = pc;
    e->tag = tag;
    e->rule = rule;
  }
  // Whether this table has a second level, and how many lookups it served (tests, tuning).
  bool has_second_level() const { return second_ != nullptr; }
  uint64_t second_level_hits() const { return second_hits_; }
  // The first and the second level's slots of a lookup pc (tests: entries that take each
  // other's place).
  static uint32_t Slot(uint64_t pc) {
    // Fibonacci hashing spreads the return addresses of neighbouring call sites.
    return static_cast<uint32_t>((pc * 0x9e3779b97f4a7c15ull) >> 52) & (kEntries - 1);
  }
  static uint32_t SecondSlot(uint64_t pc) {
    return static_cast<uint32_t>((pc * 0x9e3779b97f4a7c15ull) >> 49) & (kSecondEntries - 1);
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

  // Where pc's entry goes in a level (`table`, pc's slot there): the slot, or the neighbour if
  // that one is free, stale or pc's; else the slot, whose entry is evicted.
  static Entry* PlaceIn(Entry* table, uint32_t slot, uint64_t pc, uint64_t tag) {
    Entry* e = &table[slot];
    if (e->pc != pc && e->tag == tag && e->pc != 0) {
      Entry* other = &table[slot ^ 1];
      if (other->pc == 0 || other->pc == pc || other->tag != tag) e = other;
    }
    return e;
  }
  Entry* FirstLevelSlot(uint64_t pc, uint64_t tag) { return PlaceIn(entries_, Slot(pc), pc, tag); }
  // A live entry leaves the first level: into the second, which is made once kEntries have left.
  void Evict(const Entry& entry);
  void PutSecond(const Entry& entry);  // into the second level, which exists

  Entry entries_[kEntries];
  FrameLog log_;  // at a multiple of 64 bytes from the table's start: a logged frame a line
  FpChainLog fp_log_;
  uint16_t clears_ = 0;
  uint32_t evictions_ = 0;  // live entries evicted from the first level, until there is a second
  Entry* second_ = nullptr;  // kSecondEntries entries in the arena, or none
  uint64_t second_hits_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_RULE_CACHE_H_
