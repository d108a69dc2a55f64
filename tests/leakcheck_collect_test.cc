// The leak report's first and last stages as units: the copy of the live table, each stack's
// program frames, the verdicts without a scan, and the report's delivery to a file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "leakcheck/report_collect.h"
#include "leakcheck/report_destination.h"

namespace stackwalk::leakcheck {
namespace {

TEST(LeakReportCollect, TheSnapshotIsTheTable) {
  auto table = std::make_unique<AllocationTable>();
  constexpr uint64_t kBlocks = 10000;
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < kBlocks; ++i) {
    ASSERT_TRUE(table->Insert(0x10000000 + i * 64, i % 100 + 1, 1, 1, i));
    bytes += i % 100 + 1;
  }
  for (uint64_t i = 0; i < kBlocks; i += 10) table->Remove(0x10000000 + i * 64);
  LiveSnapshot live(*table);
  ASSERT_EQ(live.size(), kBlocks - kBlocks / 10);
  uint64_t copied = 0;
  for (const Allocation& a : live) {
    EXPECT_NE((a.address - 0x10000000) / 64 % 10, 0u);
    copied += a.size;
  }
  for (uint64_t i = 0; i < kBlocks; i += 10) bytes -= i % 100 + 1;
  EXPECT_EQ(copied, bytes);
  EXPECT_EQ(table->live_count(), live.size());  // the table is left as it was
}

TEST(LeakReportCollect, StacksKeepTheProgramsFramesAndTheirEarliestBlock) {
  // The checker's own frames lead every captured stack (its hooks): here the checker is linked
  // into this test, so a PC of this test's code stands for a hook's; a PC in the C library for
  // the program's.
  const auto own = reinterpret_cast<void*>(&CollectStacks);
  const auto libc = reinterpret_cast<void*>(&std::abort);
  auto stacks = std::make_unique<StackTable>();
  void* hooked[] = {own, own, libc, own};
  void* none_of_ours[] = {libc, own};
  const uint32_t a = stacks->Intern(hooked, 4);
  const uint32_t b = stacks->Intern(none_of_ours, 2);
  const uint32_t unused = stacks->Intern(hooked, 1);
  const std::vector<Allocation> blocks = {{0x1000, 8, 30, a, 1}, {0x2000, 8, 20, a, 1},
                                          {0x3000, 8, 40, b, 1}};
  const std::vector<NamedStack> collected =
      CollectStacks(EarliestBlocks(blocks.data(), blocks.size(), *stacks), *stacks);
  ASSERT_GT(collected.size(), std::max(a, b));
  const auto pc = [](void* p) { return reinterpret_cast<uintptr_t>(p); };
  EXPECT_EQ(collected[a].earliest, 20u);
  EXPECT_EQ(collected[a].pcs, (std::vector<uintptr_t>{pc(libc), pc(own)}));  // leading own left out
  EXPECT_EQ(collected[b].earliest, 40u);
  EXPECT_EQ(collected[b].pcs, (std::vector<uintptr_t>{pc(libc), pc(own)}));
  EXPECT_EQ(collected[unused].earliest, UINT64_MAX);  // no live block: not collected
  EXPECT_TRUE(collected[unused].pcs.empty());
}

std::string Contents(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST(LeakReportOutput, FirstReportStartsTheFileLaterOnesAppend) {
  const std::string base = ::testing::TempDir() + "deliver." + std::to_string(getpid());
  const std::string pattern = base + ".%p.txt";
  const std::string path = base + "." + std::to_string(getpid()) + ".txt";
  { std::ofstream(path) << "stale\n"; }
  DeliverReport(pattern.c_str(), true, "one\n");
  EXPECT_EQ(Contents(path), "one\n");
  DeliverReport(pattern.c_str(), false, "two\n");
  EXPECT_EQ(Contents(path), "one\ntwo\n");
  std::remove(path.c_str());
}

TEST(LeakReportOutput, AFileThatCannotBeWrittenSendsTheReportToStderr) {
  ::testing::internal::CaptureStderr();
  DeliverReport("/nonexistent/dir/leaks.txt", true, "the report\n");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "stackwalk-leakcheck: cannot write /nonexistent/dir/leaks.txt; the report follows "
            "here\nthe report\n");
  ::testing::internal::CaptureStderr();
  DeliverReport("", true, "to stderr\n");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "to stderr\n");
}

}  // namespace
}  // namespace stackwalk::leakcheck
