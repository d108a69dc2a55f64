// The parts of checks in a running process as units (leakcheck/checks.h): the table's reported
// and ignored flags, BuildReport's select step, and the checker's own thread ids.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/checks.h"
#include "leakcheck/state.h"
#include "writable_words.h"

namespace stackwalk::leakcheck {
namespace {

Allocation Find(AllocationTable& table, uintptr_t address) {
  Allocation found{};
  table.ForEach(UINT64_MAX, [&](const Allocation& a) {
    if (a.address == address) found = a;
  });
  return found;
}

TEST(CheckFlags, MarkReportedFlagsTheSameBlockOnly) {
  AllocationTable table;
  ASSERT_TRUE(table.Insert(0x10000, 10, 1, 1, 100));
  ASSERT_TRUE(table.Insert(0x20000, 20, 2, 1, 101));
  const Allocation first = Find(table, 0x10000);
  const Allocation second = Find(table, 0x20000);
  // The second block is freed and another made at its address: not the block the check saw.
  ASSERT_TRUE(table.Remove(0x20000));
  ASSERT_TRUE(table.Insert(0x20000, 20, 2, 1, 102));
  const Allocation seen[] = {first, second};
  table.MarkReported(seen, 2);
  EXPECT_TRUE(IsReported(Find(table, 0x10000)));
  EXPECT_EQ(SequenceNumber(Find(table, 0x10000)), 100u);
  EXPECT_FALSE(IsReported(Find(table, 0x20000)));
  EXPECT_FALSE(IsIgnored(Find(table, 0x10000)));
}

TEST(CheckFlags, MarkIgnoredTakesABlocksStartOnly) {
  AllocationTable table;
  ASSERT_TRUE(table.Insert(0x30000, 64, 1, 1, 7));
  EXPECT_FALSE(table.MarkIgnored(0x30008));  // inside it
  EXPECT_FALSE(table.MarkIgnored(0x40000));  // no block
  EXPECT_FALSE(table.MarkIgnored(0));
  EXPECT_FALSE(table.MarkIgnored(1));        // the deleted-slot marker
  EXPECT_TRUE(table.MarkIgnored(0x30000));
  const Allocation a = Find(table, 0x30000);
  EXPECT_TRUE(IsIgnored(a));
  EXPECT_FALSE(IsReported(a));
  EXPECT_EQ(SequenceNumber(a), 7u);
  // The flags go with the block: freed, the address holds a new, unflagged block.
  ASSERT_TRUE(table.Remove(0x30000));
  ASSERT_TRUE(table.Insert(0x30000, 64, 1, 1, 8));
  EXPECT_FALSE(IsIgnored(Find(table, 0x30000)));
}

TEST(CheckSelect, LeavesOutIgnoredAndReportedBlocksAndClearsFlags) {
  std::vector<Allocation> blocks = {
      {0x100, 8, 1, 1, 1},                         // a leak
      {0x200, 8, 2 | kReportedBit, 1, 1},          // a leak an earlier check returned
      {0x300, 8, 3 | kIgnoredBit, 1, 1},           // ignored
      {0x400, 8, 4, 1, 1},                         // reachable
      {0x500, 8, 5, 1, 1},                         // an indirect leak
  };
  const std::vector<Verdict> verdicts = {Verdict::kDirect, Verdict::kDirect, Verdict::kDirect,
                                         Verdict::kReachable, Verdict::kIndirect};
  // A report: only the ignored block goes.
  std::vector<Allocation> report_blocks = blocks;
  std::vector<Verdict> report_verdicts = verdicts;
  ASSERT_EQ(SelectBlocks(report_blocks.data(), report_blocks.size(), &report_verdicts, nullptr), 4u);
  EXPECT_EQ(report_blocks[1].address, 0x200u);
  EXPECT_EQ(report_blocks[1].sequence, 2u);  // flags cleared in the copy
  EXPECT_EQ(report_verdicts.size(), 4u);
  // A check: the reported one goes too; its leaks are the new direct and indirect blocks.
  CheckScope scope;
  std::vector<Verdict> check_verdicts = verdicts;
  ASSERT_EQ(SelectBlocks(blocks.data(), blocks.size(), &check_verdicts, &scope), 3u);
  EXPECT_EQ(blocks[0].address, 0x100u);
  EXPECT_EQ(blocks[1].address, 0x400u);
  EXPECT_EQ(blocks[2].address, 0x500u);
  EXPECT_EQ(check_verdicts, (std::vector<Verdict>{Verdict::kDirect, Verdict::kReachable,
                                                   Verdict::kIndirect}));
  ASSERT_EQ(scope.leaks.size(), 2u);
  EXPECT_EQ(scope.leaks[0].address, 0x100u);
  EXPECT_EQ(scope.leaks[1].address, 0x500u);
}

std::string CommOf(int32_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(CheckerThreads, ThePeriodicCheckerIsListedWhileItRuns) {
  int32_t tids[4] = {};
  ASSERT_EQ(CheckerThreadIds(tids, 4), 0u);
  static State state;  // its own: the thread is stopped before its first check
  ASSERT_TRUE(StartPeriodicChecks(state, 3600));
  EXPECT_FALSE(StartPeriodicChecks(state, 3600));  // one at a time
  size_t n = 0;
  for (int i = 0; i < 5000 && (n = CheckerThreadIds(tids, 4)) == 0; ++i) usleep(1000);
  ASSERT_EQ(n, 1u);
  EXPECT_NE(tids[0], static_cast<int32_t>(syscall(SYS_gettid)));
  EXPECT_EQ(CommOf(tids[0]), "stackwalk-check");
  EXPECT_EQ(CheckerThreadIds(nullptr, 0), 1u);  // the count without room
  StopPeriodicChecks();
  EXPECT_EQ(CheckerThreadIds(tids, 4), 0u);
}

// The listeners' table lies in the checker's globals, a root: a removed listener's argument (the
// program's, often a block it frees next) left there would keep that memory's next block reachable.
void IgnoreLeaks(const stackwalk_leak_record*, size_t, const stackwalk_leak_summary*, void*) {}

TEST(LeakListeners, ARemovedListenersArgumentIsNoLongerInTheTable) {
  // An address no other global holds: a fresh heap block's, kept here only inverted.
  volatile uintptr_t inverted = ~reinterpret_cast<uintptr_t>(new int(7));
  const int id = AddListener(IgnoreLeaks, reinterpret_cast<void*>(~inverted));
  ASSERT_GT(id, 0);
  const auto* table_code = reinterpret_cast<const void*>(&RemoveListener);
  EXPECT_EQ(testing::WritableWordsEqualTo(table_code, ~inverted), 1u) << "added";
  ASSERT_EQ(RemoveListener(id), 0);
  EXPECT_EQ(testing::WritableWordsEqualTo(table_code, ~inverted), 0u);
  delete reinterpret_cast<int*>(~inverted);
}


}  // namespace
}  // namespace stackwalk::leakcheck
