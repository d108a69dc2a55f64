// A stack's statistics (leakcheck/stack_stats.h) as a unit: the peak contribution by the epoch
// rule on a known sequence (the figures at the process's last peak, whichever stacks changed
// after it), and counts that stay exact with threads updating one stack at once; a stack's
// copies in the stack table (a shared one, one a thread owns), summed.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "leakcheck/live_bytes.h"
#include "leakcheck/stack_stats.h"
#include "leakcheck/stack_table.h"

namespace stackwalk::leakcheck {
namespace {

// The recording's order (recording.cc): the stack first, then the process's counter, whose new
// peak bumps the epoch.
struct Process {
  PeakCounter live;
  std::atomic<uint64_t> epoch{0};
  template <StatsWriter kWriter = StatsWriter::kShared>
  void Allocate(StackStats& s, uint64_t size) {
    s.Allocated<kWriter>(size, epoch.load());
    if (live.Add(size)) epoch.fetch_add(1);
  }
  template <StatsWriter kWriter = StatsWriter::kShared>
  void Free(StackStats& s, uint64_t size, bool temporary = false) {
    s.Freed<kWriter>(size, epoch.load(), temporary);
    live.Subtract(size);
  }
};

uint64_t PeakBytes(const StackStats& s, const Process& p) {
  uint64_t bytes = 0, blocks = 0;
  s.AtPeak(p.epoch.load(), &bytes, &blocks);
  return bytes;
}

TEST(StackStats, ThePeakContributionIsWhatEachStackHeldAtTheLastPeak) {
  Process p;
  StackStats a, b, c, d;
  p.Allocate(a, 100);
  p.Allocate(b, 50);
  p.Free(a, 100, /*temporary=*/false);
  p.Allocate(c, 200);  // the peak: 250 = b 50 + c 200
  p.Free(b, 50);
  p.Allocate(a, 10);   // after the peak: a held 0 then
  p.Allocate(d, 30);
  p.Free(d, 30, /*temporary=*/true);
  EXPECT_EQ(p.live.peak.load(), 250u);
  EXPECT_EQ(PeakBytes(a, p), 0u);
  EXPECT_EQ(PeakBytes(b, p), 50u);
  EXPECT_EQ(PeakBytes(c, p), 200u);
  EXPECT_EQ(PeakBytes(d, p), 0u);
  EXPECT_EQ(a.allocations.load(), 2u);
  EXPECT_EQ(a.allocated_bytes.load(), 110u);
  EXPECT_EQ(a.live_bytes.load(), 10u);
  EXPECT_EQ(d.temporary.load(), 1u);
  EXPECT_EQ(d.temporary_bytes.load(), 30u);
  // A new peak later moves every contribution to it.
  p.Allocate(b, 1000);  // 1210 = a 10 + b 1000 + c 200
  EXPECT_EQ(PeakBytes(a, p), 10u);
  EXPECT_EQ(PeakBytes(b, p), 1000u);
  EXPECT_EQ(PeakBytes(c, p), 200u);
  uint64_t bytes = 0, blocks = 0;
  c.AtPeak(p.epoch.load(), &bytes, &blocks);
  EXPECT_EQ(blocks, 1u);
  // A block put back (a failed realloc's) is live again but not a new allocation.
  c.Allocated(5, p.epoch.load(), /*made=*/false);
  EXPECT_EQ(c.allocations.load(), 1u);
  EXPECT_EQ(c.live_blocks.load(), 2u);
}

TEST(StackStats, CountsStayExactWithThreadsOnOneStack) {
  Process p;
  StackStats shared;
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        p.Allocate(shared, 16 + t);
        p.Free(shared, 16 + t, /*temporary=*/i % 2 == 0);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(shared.allocations.load(), uint64_t{kThreads} * kRounds);
  EXPECT_EQ(shared.allocated_bytes.load(), uint64_t{kRounds} * (16 + 17 + 18 + 19));
  EXPECT_EQ(shared.live_bytes.load(), 0u);
  EXPECT_EQ(shared.live_blocks.load(), 0u);
  EXPECT_EQ(shared.temporary.load(), uint64_t{kThreads} * kRounds / 2);
  // Racing threads may shift a block or two into or out of the peak: never more than were in
  // flight at once.
  EXPECT_LE(PeakBytes(shared, p), uint64_t{kThreads} * 19);
  EXPECT_LE(p.live.peak.load(), uint64_t{kThreads} * 19);
}

StackStatsTotals TotalsOf(const StackStats& s, uint64_t final_epoch) {
  StackStatsTotals t;
  s.AddTo(final_epoch, &t);
  return t;
}

void ExpectSame(const StackStatsTotals& a, const StackStatsTotals& b) {
  EXPECT_EQ(a.allocations, b.allocations);
  EXPECT_EQ(a.allocated_bytes, b.allocated_bytes);
  EXPECT_EQ(a.live_bytes, b.live_bytes);
  EXPECT_EQ(a.live_blocks, b.live_blocks);
  EXPECT_EQ(a.temporary, b.temporary);
  EXPECT_EQ(a.temporary_bytes, b.temporary_bytes);
  EXPECT_EQ(a.peak_bytes, b.peak_bytes);
  EXPECT_EQ(a.peak_blocks, b.peak_blocks);
}

// Its owner's plain stores count as the shared copy's read-modify-writes do, frees and the peak
// rule included.
TEST(StackStats, AnOwnedCopyCountsAsASharedOne) {
  Process shared_process, owned_process;
  StackStats shared, owned;
  const uint64_t sizes[] = {100, 7, 300, 64, 5};
  for (uint64_t size : sizes) {
    shared_process.Allocate(shared, size);
    owned_process.Allocate<StatsWriter::kOwned>(owned, size);
  }
  shared_process.Free(shared, 300, /*temporary=*/true);
  owned_process.Free<StatsWriter::kOwned>(owned, 300, /*temporary=*/true);
  shared_process.Free(shared, 100);
  owned_process.Free<StatsWriter::kOwned>(owned, 100);
  shared.Allocated(9, shared_process.epoch.load(), /*made=*/false);
  owned.Allocated<StatsWriter::kOwned>(9, owned_process.epoch.load(), /*made=*/false);
  const StackStatsTotals want = TotalsOf(shared, shared_process.epoch.load());
  EXPECT_EQ(want.allocations, 5u);
  EXPECT_EQ(want.live_bytes, 7u + 64 + 5 + 9);
  EXPECT_EQ(want.live_blocks, 4u);
  EXPECT_EQ(want.temporary_bytes, 300u);
  EXPECT_EQ(want.peak_bytes, 476u);  // all five
  ExpectSame(TotalsOf(owned, owned_process.epoch.load()), want);
}

// A stack's copies in the table sum to its figures: one copy may free what another made.
TEST(StackTableStats, TheCopiesOfAStackSumToItsTotals) {
  auto stacks = std::make_unique<StackTable>();
  void* pcs[] = {reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000)};
  const uint32_t id = stacks->Intern(pcs, 2);
  ASSERT_NE(id, StackTable::kNoStack);
  const uint32_t a = stacks->ClaimStatsCopy(1);
  const uint32_t b = stacks->ClaimStatsCopy(2);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  ASSERT_NE(a, b);
  StackStats* shared = stacks->SharedStats(id);
  StackStats* mine = stacks->OwnedStats(id, a);
  StackStats* theirs = stacks->OwnedStats(id, b);
  ASSERT_TRUE(shared != nullptr && mine != nullptr && theirs != nullptr);
  ASSERT_TRUE(shared != mine && mine != theirs && shared != theirs);
  Process p;
  p.Allocate<StatsWriter::kOwned>(*mine, 100);
  p.Allocate<StatsWriter::kOwned>(*theirs, 40);
  p.Allocate(*shared, 10);                              // the peak: 150
  p.Free<StatsWriter::kOwned>(*theirs, 100);            // theirs frees mine's block
  p.Allocate<StatsWriter::kOwned>(*mine, 20);
  p.Free(*shared, 20, /*temporary=*/true);              // and the shared copy mine's second
  StackStatsTotals totals;
  ASSERT_TRUE(stacks->Totals(id, p.epoch.load(), &totals));
  EXPECT_EQ(p.live.peak.load(), 150u);
  EXPECT_EQ(totals.allocations, 4u);
  EXPECT_EQ(totals.allocated_bytes, 170u);
  EXPECT_EQ(totals.live_bytes, 50u);
  EXPECT_EQ(totals.live_blocks, 2u);
  EXPECT_EQ(totals.temporary, 1u);
  EXPECT_EQ(totals.temporary_bytes, 20u);
  EXPECT_EQ(totals.peak_bytes, 150u);
  EXPECT_EQ(totals.peak_blocks, 3u);
  EXPECT_FALSE(stacks->Totals(StackTable::kNoStack, p.epoch.load(), &totals));
  // Summed while threads run, a free may be seen without its allocation: no live figure below 0.
  const uint32_t other = stacks->Intern(pcs, 1);
  ASSERT_NE(other, StackTable::kNoStack);
  stacks->OwnedStats(other, b)->Freed<StatsWriter::kOwned>(64, p.epoch.load(), false);
  ASSERT_TRUE(stacks->Totals(other, p.epoch.load(), &totals));
  EXPECT_EQ(totals.live_bytes, 0u);
  EXPECT_EQ(totals.live_blocks, 0u);
}

// Every copy but the shared one goes to one thread at a time; once all are owned a thread takes
// the shared one, and a copy given up (a thread's exit), or all after a fork, goes to the next.
TEST(StackTableStats, ACopyHasOneOwnerAtATime) {
  auto stacks = std::make_unique<StackTable>();
  std::vector<uint32_t> copies;
  for (uint32_t serial = 1; serial < StackTable::kStatsCopies; ++serial) {
    copies.push_back(stacks->ClaimStatsCopy(serial));
    EXPECT_NE(copies.back(), 0u);
    for (size_t i = 0; i + 1 < copies.size(); ++i) EXPECT_NE(copies[i], copies.back());
  }
  EXPECT_EQ(stacks->ClaimStatsCopy(100), 0u);
  stacks->ReleaseStatsCopy(copies[1]);
  EXPECT_EQ(stacks->ClaimStatsCopy(101), copies[1]);
  EXPECT_EQ(stacks->ClaimStatsCopy(102), 0u);
  stacks->ForgetStatsOwners();
  EXPECT_NE(stacks->ClaimStatsCopy(103), 0u);
}

// Threads owning a copy each and threads on the shared one, all on one stack at once: the totals
// stay exact (two owners of one copy would lose updates).
TEST(StackTableStats, CountsStayExactWithOwnersAndSharersOnOneStack) {
  auto stacks = std::make_unique<StackTable>();
  void* pcs[] = {reinterpret_cast<void*>(0x3000)};
  const uint32_t id = stacks->Intern(pcs, 1);
  ASSERT_NE(id, StackTable::kNoStack);
  Process p;
  constexpr int kThreads = StackTable::kStatsCopies + 2;  // two find every copy owned
  constexpr int kRounds = 20000;
  std::atomic<int> claimed{0};
  std::atomic<int> owners{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const uint32_t copy = stacks->ClaimStatsCopy(static_cast<uint32_t>(t + 1));
      if (copy != 0) owners.fetch_add(1);
      claimed.fetch_add(1);
      while (claimed.load() < kThreads) {
      }
      for (int i = 0; i < kRounds; ++i) {
        if (copy != 0) {
          StackStats* own = stacks->OwnedStats(id, copy);
          p.Allocate<StatsWriter::kOwned>(*own, 16 + t);
          p.Free<StatsWriter::kOwned>(*own, 16 + t, /*temporary=*/i % 2 == 0);
        } else {
          StackStats* shared = stacks->SharedStats(id);
          p.Allocate(*shared, 16 + t);
          p.Free(*shared, 16 + t, /*temporary=*/i % 2 == 0);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(owners.load(), static_cast<int>(StackTable::kStatsCopies) - 1);
  StackStatsTotals totals;
  ASSERT_TRUE(stacks->Totals(id, p.epoch.load(), &totals));
  uint64_t bytes = 0;
  for (int t = 0; t < kThreads; ++t) bytes += uint64_t{kRounds} * (16 + t);
  EXPECT_EQ(totals.allocations, uint64_t{kThreads} * kRounds);
  EXPECT_EQ(totals.allocated_bytes, bytes);
  EXPECT_EQ(totals.live_bytes, 0u);
  EXPECT_EQ(totals.live_blocks, 0u);
  EXPECT_EQ(totals.temporary, uint64_t{kThreads} * kRounds / 2);
}

}  // namespace
}  // namespace stackwalk::leakcheck
