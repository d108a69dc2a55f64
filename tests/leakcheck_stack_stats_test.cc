// A stack's statistics (leakcheck/stack_stats.h) as a unit: the peak contribution by the epoch
// rule on a known sequence (the figures at the process's last peak, whichever stacks changed
// after it), and counts that stay exact with threads updating one stack at once.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "leakcheck/live_bytes.h"
#include "leakcheck/stack_stats.h"

namespace stackwalk::leakcheck {
namespace {

// The recording's order (recording.cc): the stack first, then the process's counter, whose new
// peak bumps the epoch.
struct Process {
  PeakCounter live;
  std::atomic<uint64_t> epoch{0};
  void Allocate(StackStats& s, uint64_t size) {
    s.Allocated(size, epoch.load());
    if (live.Add(size)) epoch.fetch_add(1);
  }
  void Free(StackStats& s, uint64_t size, bool temporary = false) {
    s.Freed(size, epoch.load(), temporary);
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

}  // namespace
}  // namespace stackwalk::leakcheck
