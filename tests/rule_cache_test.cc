#include "core/rule_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

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
  uint64_t pcs[kPcs];
  uint64_t x = 0x2545f4914f6cdd1dull;
  for (uint64_t& pc : pcs) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    pc = 0x7f0000000000 + (x & ((uint64_t{1} << 26) - 1));
  }
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

}  // namespace
}  // namespace stackwalk::internal
