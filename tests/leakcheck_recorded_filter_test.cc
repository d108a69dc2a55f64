// The live table's filter of recorded addresses (leakcheck/recorded_filter.h): a zero count is
// "certainly not recorded", and no sequence of records and frees, however their entries collide,
// makes it say that of a block still recorded.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/recorded_filter.h"

namespace stackwalk::leakcheck {
namespace {

constexpr uintptr_t kBase = 0x7f0000000000ull;

// The first `n` block addresses after `from` whose filter entry is `address`'s.
std::vector<uintptr_t> Colliding(uintptr_t address, size_t n, uintptr_t from = kBase) {
  std::vector<uintptr_t> out;
  for (uintptr_t a = from; out.size() < n; a += 16) {
    if (a != address && RecordedFilter::Index(a) == RecordedFilter::Index(address)) out.push_back(a);
  }
  return out;
}

struct FilteredTable {
  std::unique_ptr<RecordedFilter> filter = std::make_unique<RecordedFilter>();
  std::unique_ptr<AllocationTable> table = std::make_unique<AllocationTable>(filter.get());
};

TEST(RecordedFilter, NothingRecordedIsCertainlyNotRecorded) {
  FilteredTable t;
  EXPECT_FALSE(t.table->MayHold(kBase));  // no counts mapped yet
  ASSERT_TRUE(t.table->Insert(kBase, 64, 1, 1, 1));
  EXPECT_TRUE(t.table->MayHold(kBase));
  size_t said_no = 0;
  for (uintptr_t a = kBase + 16; a < kBase + 16 * 1000; a += 16) said_no += t.table->MayHold(a) ? 0 : 1;
  EXPECT_EQ(said_no, 999u);  // a run of neighbours spreads over other entries
  ASSERT_TRUE(t.table->Remove(kBase));
  EXPECT_FALSE(t.table->MayHold(kBase));
  // A table without a filter cannot tell: always maybe.
  AllocationTable plain;
  EXPECT_TRUE(plain.MayHold(kBase));
}

TEST(RecordedFilter, ARecordedBlockStaysFoundWhileBlocksOfItsEntryComeAndGo) {
  // The free of a recorded block after many records and frees of blocks whose entries collide
  // with it, and frees of colliding blocks never recorded: a flag per entry instead of a count
  // would be cleared by the first colliding free and lose the recorded block.
  FilteredTable t;
  const uintptr_t recorded = kBase + 0x1230;
  const std::vector<uintptr_t> others = Colliding(recorded, 200);
  ASSERT_TRUE(t.table->Insert(recorded, 100, 1, 1, 1));
  for (int round = 0; round < 5; ++round) {
    for (uintptr_t a : others) ASSERT_TRUE(t.table->Insert(a, 16, 2, 1, 2));
    for (uintptr_t a : others) ASSERT_TRUE(t.table->Remove(a));
    for (uintptr_t a : others) EXPECT_FALSE(t.table->Remove(a));  // never recorded (now)
    ASSERT_TRUE(t.table->MayHold(recorded)) << "round " << round;
  }
  Allocation removed{};
  ASSERT_TRUE(t.table->Remove(recorded, &removed));
  EXPECT_EQ(removed.size, 100u);
  EXPECT_FALSE(t.table->MayHold(recorded));
  for (uintptr_t a : others) EXPECT_FALSE(t.table->MayHold(a));
}

TEST(RecordedFilter, AReplacedRecordIsCountedOutWithTheBlockItMissedTheFreeOf) {
  // A block made at the address of one whose free was missed replaces its record; one free then
  // leaves nothing recorded there, and the filter says so.
  FilteredTable t;
  Allocation replaced{};
  ASSERT_TRUE(t.table->Insert(kBase, 10, 1, 1, 1));
  ASSERT_TRUE(t.table->Insert(kBase, 20, 1, 1, 2, &replaced));
  EXPECT_EQ(replaced.size, 10u);
  ASSERT_TRUE(t.table->Remove(kBase));
  EXPECT_FALSE(t.table->MayHold(kBase));
}

TEST(RecordedFilter, ClearCountsOutEveryRecord) {
  FilteredTable t;
  for (uintptr_t i = 0; i < 5000; ++i) ASSERT_TRUE(t.table->Insert(kBase + i * 48, 8, 1, 1, i));
  t.table->Clear();
  for (uintptr_t i = 0; i < 5000; ++i) ASSERT_FALSE(t.table->MayHold(kBase + i * 48)) << i;
  ASSERT_TRUE(t.table->Insert(kBase, 8, 1, 1, 1));  // and counts afresh
  EXPECT_TRUE(t.table->MayHold(kBase));
}

TEST(RecordedFilter, BlocksFreedByAnotherThreadAreFound) {
  // Producers record blocks whose entries collide and hand each to a consumer through an atomic
  // (release/acquire, as a program hands a pointer over); the consumer must find every one,
  // while the producers keep recording and freeing colliding blocks of their own.
  FilteredTable t;
  constexpr int kProducers = 3;
  constexpr int kBlocks = 5000;
  const std::vector<uintptr_t> entry = Colliding(kBase, kProducers * 2 * 64);
  std::vector<std::atomic<uintptr_t>> handed(kProducers);
  std::atomic<int> missed{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kBlocks; ++i) {
        const uintptr_t given = entry[(p * 2) * 64 + i % 64];
        const uintptr_t own = entry[(p * 2 + 1) * 64 + i % 64];
        while (handed[p].load(std::memory_order_acquire) != 0) std::this_thread::yield();
        if (!t.table->Insert(given, 32, 1, p, i)) missed.fetch_add(1);
        handed[p].store(given, std::memory_order_release);
        if (!t.table->Insert(own, 16, 1, p, i)) missed.fetch_add(1);
        if (!t.table->Remove(own)) missed.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    for (int done = 0; done < kProducers * kBlocks;) {
      for (int p = 0; p < kProducers; ++p) {
        const uintptr_t block = handed[p].load(std::memory_order_acquire);
        if (block == 0) {
          std::this_thread::yield();  // 4 threads on as few cores (qemu, sanitizers)
          continue;
        }
        if (!t.table->MayHold(block) || !t.table->Remove(block)) missed.fetch_add(1);
        handed[p].store(0, std::memory_order_release);
        ++done;
      }
    }
  });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(missed.load(), 0);
  EXPECT_EQ(t.table->live_count(), 0u);
  for (uintptr_t a : entry) EXPECT_FALSE(t.table->MayHold(a));
}

}  // namespace
}  // namespace stackwalk::leakcheck
