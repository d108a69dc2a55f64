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

}  // namespace
}  // namespace stackwalk::internal
