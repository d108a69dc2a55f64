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
//
// A frame cache for the threads whose frame log serves them poorly (frames()): 128 KiB from the
// arena, at most kMaxFrameCaches in a process, kept with its table.
#ifndef STACKWALK_SRC_CORE_RULE_CACHE_H_
#define STACKWALK_SRC_CORE_RULE_CACHE_H_

#include <cstdint>

#include "core/compact_rule.h"
#include "core/fp_chain_log.h"
#include "core/frame_cache.h"
#include "core/frame_log.h"

namespace stackwalk::internal {

class RuleCache {
 public:
  static constexpr int kEntries = 4096;
  static constexpr int kMaxTables = 256;
  static constexpr int kSecondEntries = 32768;
  static constexpr int kMaxSecondLevels = 16;
  // A thread's CFI walks are counted in windows of kWalkWindow. A window whose walks stepped
  // kFrameCacheSteps frames or more with rules on average (their frame log served the rest) has
  // the thread's next walks step through a FrameCache; every kLogProbe-th window after walks with
  // the log again, to see whether it has come to serve them.
  static constexpr uint32_t kWalkWindow = 1024;
  static constexpr uint32_t kFrameCacheSteps = 4;
  static constexpr uint32_t kLogProbe = 16;
  static constexpr int kMaxFrameCaches = 64;

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

  // The frame cache the thread's walks step through now, or null: they log their frames instead
  // (CountWalk and CountSteps choose). Where walks differ in many inner frames (a compiler's, a
  // recursive workload's) the log replays few of them and costs its upkeep, while a frame's
  // entry serves any walk that crosses the frame again; where the log replays nearly every frame
  // (an interpreter's loop) its replay is cheaper (~15 instructions a frame against ~45).
  // Measured: docs/leakcheck-benchmarks.md. At most kMaxFrameCaches threads have one (8 MiB
  // from the arena); it stays with the table.
  FrameCache* frames() const { return use_frames_ ? frames_ : nullptr; }
  // The thread's frame cache whichever way its walks go now: a thread that has one and logs
  // still takes a stepped frame's step from its entry (the log records it).
  FrameCache* frame_cache() const { return frames_; }
  void CountWalk() {
    if (++walks_ < kWalkWindow) return;
    if (use_frames_) {
      use_frames_ = ++frame_windows_ < kLogProbe;
      if (!use_frames_) frame_windows_ = 0;
    } else if (window_steps_ >= kWalkWindow * kFrameCacheSteps) {
      if (frames_ == nullptr) MakeFrameCache();
      use_frames_ = frames_ != nullptr;
    }
    walks_ = 0;
    window_steps_ = 0;
  }
  // Frames a logging walk did not take from its log (stepped with rules or from entries).
  void CountSteps(uint32_t n) { window_steps_ += n; }
  // Logging, at the start of a window (a table a new thread claims; tests).
  void StartWindows() {
    use_frames_ = false;
    walks_ = 0;
    window_steps_ = 0;
    frame_windows_ = 0;
  }
  // Walks of this thread walked again in full, uncached, after a cached walk stopped at a frame
  // it refused (WalkToArray): a cached walk that gives what an uncached one gives needs none
  // where the uncached one goes on (tests).
  void CountFullRetry() { ++full_retries_; }
  uint64_t full_retries() const { return full_retries_; }
  // Frames the thread's walks stepped through its frame cache (tests, tuning).
  uint64_t frame_cache_hits() const { return frames_ != nullptr ? frames_->hits() : 0; }
  uint64_t frame_cache_ends() const { return frames_ != nullptr ? frames_->ends() : 0; }
  // Has the calling thread's next kWalkWindow walks step through a frame cache (made now if it
  // has none; false if none can be had) or log their frames, taking stepped frames from the
  // frame cache's entries if it has one (tests: each way checked against uncached walks).
  // Signal safety: async-signal-safe.
  static bool UseFrameCacheForThisThread(bool use);

  // The thread's log of its last complete CFI walk, and of its last frame-pointer walk.
  FrameLog& log() { return log_; }
  FpChainLog& fp_log() { return fp_log_; }

  // How many pool tables threads hold now (tests: exited threads give theirs back).
  static int TablesInUse();

  // The thread-exit key's destructor: the exiting thread gives its table back and goes uncached
  // for whatever it still runs (a later key's destructor that captures or allocates), since
  // another thread may claim the table at once.
  static void GiveBackAtExit(void* slot_plus_one);
  // Makes the thread-exit key now if this library's constructor has not (stackwalk_prepare);
  // once a process. Not async-signal-safe.
  static void PrepareExitKey();

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
  void MakeFrameCache();

  Entry entries_[kEntries];
  FrameLog log_;  // at a multiple of 64 bytes from the table's start: a logged frame a line
  FpChainLog fp_log_;
  uint16_t clears_ = 0;
  uint32_t evictions_ = 0;  // live entries evicted from the first level, until there is a second
  Entry* second_ = nullptr;  // kSecondEntries entries in the arena, or none
  uint64_t second_hits_ = 0;
  FrameCache* frames_ = nullptr;  // in the arena, or none
  uint32_t walks_ = 0;            // CFI walks in this window
  uint32_t window_steps_ = 0;     // frames they stepped with rules, in log windows
  uint32_t frame_windows_ = 0;    // windows through the frame cache since the last log window
  bool use_frames_ = false;
  uint64_t full_retries_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_RULE_CACHE_H_
