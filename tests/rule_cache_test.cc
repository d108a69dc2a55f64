#include "core/rule_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "core/module_map.h"
#include "stackwalk/stackwalk.h"

namespace stackwalk::internal {
namespace {

// A capture before the library's own constructors have run, as an allocation hook's is while
// the C library starts (priority 101 runs before the default-priority ones of the static library
// linked into this binary). It must not leave this thread without a cache for good.
bool g_early_capture_had_cache = true;
__attribute__((constructor(101))) void CaptureBeforeTheLibraryIsInitialized() {
  void* pcs[8];
  stackwalk_backtrace(pcs, 8, STACKWALK_EHFRAME);
  RuleCache* cache = RuleCache::Acquire();
  g_early_capture_had_cache = cache != nullptr;
  if (cache != nullptr) cache->Release();
}

TEST(RuleCache, ACaptureBeforeInitializationDoesNotCostTheThreadItsCache) {
  EXPECT_FALSE(g_early_capture_had_cache) << "the early capture was expected to find no key yet";
  RuleCache* cache = RuleCache::Acquire();
  EXPECT_NE(cache, nullptr);
  if (cache != nullptr) cache->Release();
}

TEST(RuleCache, FindsWhatWasInsertedForTheSameGeneration) {
  RuleCache* cache = RuleCache::Acquire();
  ASSERT_NE(cache, nullptr);
  CompactRule rule = CompactRule::Cfa(CompactRule::Kind::kCfaSp, 16);
  rule.ra_offset = -8;
  cache->Insert(0x401234, 7, rule);
  const CompactRule* found = cache->Find(0x401234, 7);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->cfa_offset, 16);
  EXPECT_EQ(found->ra_offset, -8);
  EXPECT_EQ(cache->Find(0x401234, 8), nullptr) << "a module map rebuild must invalidate";
  EXPECT_EQ(cache->Find(0x401235, 7), nullptr);
  cache->Release();
}

TEST(RuleCache, NestedUseOnOneThreadIsRefused) {
  RuleCache* outer = RuleCache::Acquire();
  ASSERT_NE(outer, nullptr);
  // What a signal handler that unwinds mid-walk sees: no cache, so no torn entries.
  EXPECT_EQ(RuleCache::Acquire(), nullptr);
  outer->Release();
  RuleCache* again = RuleCache::Acquire();
  EXPECT_EQ(again, outer);  // the same table for the thread's life
  again->Release();
}

TEST(RuleCache, ExitedThreadsGiveTheirTablesBack) {
  int before = RuleCache::TablesInUse();
  // More threads than the pool has tables, one after another: each must find one.
  for (int i = 0; i < RuleCache::kMaxTables + 50; ++i) {
    bool got = false;
    std::thread t([&] {
      RuleCache* c = RuleCache::Acquire();
      got = c != nullptr;
      if (c) c->Release();
    });
    t.join();
    ASSERT_TRUE(got) << "thread " << i << " found the pool empty";
  }
  EXPECT_LE(RuleCache::TablesInUse(), before + 1);
}

TEST(RuleCache, ClearEmptiesTheThreadsTable) {
  RuleCache* cache = RuleCache::Acquire();
  ASSERT_NE(cache, nullptr);
  CompactRule rule = CompactRule::EndOfStack();
  cache->Insert(0x500000, 3, rule);
  cache->Release();
  RuleCache::ClearForThisThread();
  cache = RuleCache::Acquire();
  EXPECT_EQ(cache->Find(0x500000, 3), nullptr);
  cache->Release();
}

// Pseudo-random lookup pcs scattered over 64 MiB of code (a fixed xorshift sequence).
std::vector<uint64_t> ScatteredPcs(int n, uint64_t seed) {
  std::vector<uint64_t> pcs;
  uint64_t x = seed;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    pcs.push_back(0x7f0000000000 + (x & ((uint64_t{1} << 26) - 1)));
  }
  return pcs;
}

TEST(RuleCache, KeepsTheRulesOfThousandsOfReturnAddresses) {
  // A compiler's allocation stacks cross thousands of distinct return addresses; a table of
  // 1,024 entries kept at most 1,024 of them and missed on the rest at every walk. 3,000
  // addresses scattered over 64 MiB of code (a fixed pseudo-random sequence), each with a rule
  // of its own.
  RuleCache* cache = RuleCache::Acquire();
  ASSERT_NE(cache, nullptr);
  cache->Clear();
  constexpr int kPcs = 3000;
  constexpr uint64_t kGeneration = 5;
  const std::vector<uint64_t> pcs = ScatteredPcs(kPcs, 0x2545f4914f6cdd1dull);
  for (int i = 0; i < kPcs; ++i) {
    CompactRule rule = CompactRule::Cfa(CompactRule::Kind::kCfaSp, 8 * (i + 1));
    rule.ra_offset = -8;
    cache->Insert(pcs[i], kGeneration, rule);
  }
  int found = 0;
  for (int i = 0; i < kPcs; ++i) {
    const CompactRule* rule = cache->Find(pcs[i], kGeneration);
    if (rule == nullptr) continue;
    ++found;
    EXPECT_EQ(rule->cfa_offset, 8 * (i + 1)) << i;
  }
  EXPECT_GT(found, 2 * 1024) << "of " << kPcs;
  cache->Clear();
  EXPECT_EQ(cache->Find(pcs[kPcs - 1], kGeneration), nullptr) << "Clear() must forget them";
  cache->Release();
}

TEST(RuleCache, ASecondLevelKeepsWhatTheFirstEvictsOnceAThreadChurns) {
  // Three times as many return addresses as the first level holds (a compiler's allocation
  // stacks), each parsed again (inserted) whenever neither level has it, as walks do: once the
  // first level has evicted a table's worth, what it evicts goes to a second level, and the two
  // keep them all.
  std::thread([] {
    RuleCache* cache = RuleCache::Acquire();
    ASSERT_NE(cache, nullptr);
    cache->Clear();
    constexpr uint64_t kGeneration = 9;
    std::vector<uint64_t> pcs = ScatteredPcs(3 * RuleCache::kEntries, 0x9e3779b97f4a7c15ull);
    std::sort(pcs.begin(), pcs.end());
    pcs.erase(std::unique(pcs.begin(), pcs.end()), pcs.end());
    const auto rule_of = [](size_t i) {
      CompactRule rule = CompactRule::Cfa(CompactRule::Kind::kCfaSp, 8 * static_cast<int>(i + 1));
      rule.ra_offset = -8;
      return rule;
    };
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < pcs.size(); ++i) {
        if (cache->Find(pcs[i], kGeneration) == nullptr) cache->Insert(pcs[i], kGeneration, rule_of(i));
      }
    }
    EXPECT_TRUE(cache->has_second_level());
    const uint64_t hits_before = cache->second_level_hits();
    size_t found = 0;
    for (size_t i = 0; i < pcs.size(); ++i) {
      const CompactRule* rule = cache->Find(pcs[i], kGeneration);
      if (rule == nullptr) continue;
      ++found;
      EXPECT_EQ(rule->cfa_offset, rule_of(i).cfa_offset) << i;
      EXPECT_EQ(cache->FindTagged(pcs[i], cache->Tag(kGeneration)), rule) << "moved up";
    }
    // Its two-way slots lose a few (94 % kept here); the first level alone keeps a third.
    EXPECT_GT(found, pcs.size() * 90 / 100) << "of " << pcs.size();
    EXPECT_GT(cache->second_level_hits() - hits_before, uint64_t{RuleCache::kEntries});
    EXPECT_EQ(cache->Find(pcs[0], kGeneration + 1), nullptr) << "a rebuild invalidates both";
    cache->Clear();
    EXPECT_EQ(cache->Find(pcs[0], kGeneration), nullptr) << "Clear() forgets both levels";
    cache->Release();
  }).join();
}

TEST(RuleCache, AThreadWhoseReturnAddressesFitHasNoSecondLevel) {
  std::thread([] {
    RuleCache* cache = RuleCache::Acquire();
    ASSERT_NE(cache, nullptr);
    cache->Clear();
    const bool had = cache->has_second_level();  // a table a churning thread had before
    for (uint64_t pc : ScatteredPcs(RuleCache::kEntries / 4, 0x2545f4914f6cdd1dull)) {
      cache->Insert(pc, 3, CompactRule::EndOfStack());
    }
    EXPECT_EQ(cache->has_second_level(), had);
    cache->Release();
  }).join();
}

TEST(RuleCache, ARuleMovedUpLeavesNoEntryALookupOfPcZeroFinds) {
  // A walk from a call through a null function pointer looks up pc 0. A rule moved up from the
  // second level's first slots must leave them empty, not a pc of 0 under a live tag.
  std::thread([] {
    RuleCache* cache = RuleCache::Acquire();
    ASSERT_NE(cache, nullptr);
    cache->Clear();
    constexpr uint64_t kGeneration = 4;
    for (uint64_t pc : ScatteredPcs(3 * RuleCache::kEntries, 0x9e3779b97f4a7c15ull)) {
      cache->Insert(pc, kGeneration, CompactRule::EndOfStack());
    }
    ASSERT_TRUE(cache->has_second_level());
    // A rule whose second-level slot is 0, in the first level; then its slot pair there taken
    // by made-up rules, which evict it down.
    uint64_t pc = 0x400000;
    while (RuleCache::SecondSlot(pc) != 0) pc += 0x10;
    CompactRule rule = CompactRule::Cfa(CompactRule::Kind::kCfaSp, 4000);
    rule.ra_offset = -8;
    cache->Insert(pc, kGeneration, rule);
    int placed = 0;
    for (uint64_t fake = 0x900000; placed < 4; fake += 0x10) {
      const uint32_t slot = RuleCache::Slot(fake);
      if (slot != RuleCache::Slot(pc) && slot != (RuleCache::Slot(pc) ^ 1)) continue;
      if (fake == pc) continue;
      cache->Insert(fake, kGeneration, CompactRule::EndOfStack());
      ++placed;
    }
    const uint64_t tag = cache->Tag(kGeneration);
    ASSERT_EQ(cache->FindTagged(pc, tag), nullptr) << "still in the first level";
    const CompactRule* up = cache->FindSecond(pc, tag);
    ASSERT_NE(up, nullptr) << "not in the second level";
    EXPECT_EQ(up->cfa_offset, 4000);
    EXPECT_EQ(cache->Find(0, kGeneration), nullptr);
    cache->Release();
  }).join();
}

// The architecture's unwind tables: .ARM.exidx on arm32, CFI elsewhere.
#if defined(__arm__)
constexpr stackwalk_method kTables = STACKWALK_EXIDX;
#else
constexpr stackwalk_method kTables = STACKWALK_EHFRAME;
#endif

// Frames below a few calls that cannot be inlined, captured with the unwind tables.
__attribute__((noinline)) int CaptureDeep(void** pcs, int max, int depth) {
  if (depth > 0) {
    const int n = CaptureDeep(pcs, max, depth - 1);
    asm volatile("" ::: "memory");  // not a tail call
    return n;
  }
  return stackwalk_backtrace(pcs, max, kTables);
}

// CaptureDeep from one call site: the same return addresses each time, up to and including
// the one into this function.
__attribute__((noinline)) int CaptureFromHere(void** pcs, int max) {
  const int n = CaptureDeep(pcs, max, 6);
  asm volatile("" ::: "memory");
  return n;
}

TEST(RuleCache, AWalkWhoseRulesTheFirstLevelLostTakesThemFromTheSecond) {
  std::thread([] {
    const uint64_t generation = ModuleMap::Global().rebuild_count();
    RuleCache* cache = RuleCache::Acquire();
    ASSERT_NE(cache, nullptr);
    // A thread that churned: made-up rules, three tables' worth, make its second level.
    for (uint64_t pc : ScatteredPcs(3 * RuleCache::kEntries, 0x2545f4914f6cdd1dull)) {
      cache->Insert(pc, generation, CompactRule::EndOfStack());
    }
    ASSERT_TRUE(cache->has_second_level());
    cache->Release();
    void* frames[2][64];
    int n[2] = {0, 0};
    uint64_t hits = 0;
    for (int pass = 0; pass < 2; ++pass) {
      n[pass] = CaptureFromHere(frames[pass], 64);
      if (pass == 1) break;
      // Every first-level slot pair the walk's lookups used (a return address's, at pc - 1, or
      // on arm32 at the halfword before its Thumb bit; an exact pc's) taken by made-up rules, two
      // for each slot of the pair: the walk's rules go down to the second level.
      cache = RuleCache::Acquire();
      ASSERT_NE(cache, nullptr);
      for (int i = 0; i < n[pass]; ++i) {
        const uint64_t pc = reinterpret_cast<uintptr_t>(frames[pass][i]);
        for (uint64_t key : {pc - 1, pc, (pc & ~uint64_t{1}) - 2, pc & ~uint64_t{1}}) {
          for (uint32_t slot : {RuleCache::Slot(key), RuleCache::Slot(key) ^ 1}) {
            int placed = 0;
            for (uint64_t fake = 0x10000; placed < 2; fake += 0x10) {
              if (RuleCache::Slot(fake) != slot) continue;
              cache->Insert(fake, generation, CompactRule::EndOfStack());
              ++placed;
            }
          }
        }
      }
      hits = cache->second_level_hits();
      cache->Release();
    }
    // The same frames but one: the return address into this test's body, whose two passes the
    // compiler may make two call sites.
    ASSERT_GT(n[0], 7);
    ASSERT_EQ(n[1], n[0]);
    std::vector<int> differ;
    for (int i = 0; i < n[0]; ++i) {
      if (frames[1][i] != frames[0][i]) differ.push_back(i);
    }
    EXPECT_LE(differ.size(), 1u);
    if (!differ.empty()) EXPECT_GE(differ[0], 7) << "a frame of CaptureDeep differs";
    cache = RuleCache::Acquire();
    ASSERT_NE(cache, nullptr);
    EXPECT_GT(cache->second_level_hits(), hits) << "every rule came from a new CFI parse";
    cache->Release();
  }).join();
}

}  // namespace
}  // namespace stackwalk::internal
