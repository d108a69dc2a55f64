// The stack statistics' per-thread copies (leakcheck/stack_table.h) in a real checked program:
// threads that come and go, more at once than there are copies to own, and a forked child whose
// main thread owned a copy in its parent (fixtures/stats_copy_churn.c). A copy given back too
// early, handed to two live threads, or kept by the child's main thread after the fork (the
// child's threads claim it again) would let two threads' plain stores overwrite each other's
// counts: each process's allocations view must count the site's every allocation and byte.
#include <gtest/gtest.h>
#include <glob.h>
#include <unistd.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "file_and_shell.h"

namespace {

using nlohmann::json;
using stackwalk_test::Read;
using stackwalk_test::Shell;

// The fixture's figures (its header): per process.
constexpr uint64_t kSiteAllocations = 4 * (6 + 1) * 20000;
constexpr uint64_t kSiteBytes = kSiteAllocations * 48;

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t found;
  if (glob(pattern.c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) out.emplace_back(found.gl_pathv[i]);
  }
  globfree(&found);
  return out;
}

// The allocations and bytes of the stacks whose innermost frame is churn_site, in `dump`.
void SiteFigures(const std::string& dump, uint64_t* allocations, uint64_t* bytes) {
  const std::string out = dump + ".allocations.json";
  ASSERT_EQ(Shell(std::string(STACKWALK_REPORT) + " --view allocations --format json '" + dump +
                  "' >'" + out + "' 2>&1"),
            0)
      << Read(out);
  const json view = json::parse(Read(out));
  *allocations = 0;
  *bytes = 0;
  for (const json& s : view["stacks"]) {
    if (!s["frames"].empty() && s["frames"][0] == "churn_site") {
      *allocations += s["allocations"].get<uint64_t>();
      *bytes += s["bytes"].get<uint64_t>();
    }
  }
}

// Runs the fixture under the launcher, one dump a process; the dumps' paths.
std::vector<std::string> RunChurn(const std::string& name, const std::string& args) {
  const std::string dir = ::testing::TempDir() + "stats_copies." + name + "." +
                          std::to_string(getpid());
  Shell("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const int status = Shell(std::string(STACKWALK_LEAKCHECK) + " --output '" + dir +
                           "/report.%p.txt' --dump '" + dir + "/churn.%p.dump' " +
                           STATS_COPY_CHURN + " " + args + " >'" + dir + "/out' 2>&1");
  EXPECT_EQ(status, 0) << Read(dir + "/out");
  return Glob(dir + "/churn.*.dump");
}

TEST(LeakcheckStatsCopies, ThreadsThatComeAndGoCountEveryAllocationOfTheirSharedSite) {
  const std::vector<std::string> dumps = RunChurn("threads", "");
  ASSERT_EQ(dumps.size(), 1u);
  uint64_t allocations = 0, bytes = 0;
  SiteFigures(dumps[0], &allocations, &bytes);
  EXPECT_EQ(allocations, kSiteAllocations);
  EXPECT_EQ(bytes, kSiteBytes);
}

TEST(LeakcheckStatsCopies, AForkedChildsThreadsAndItsMainThreadCountEveryAllocation) {
  const std::vector<std::string> dumps = RunChurn("fork", "fork");
  ASSERT_EQ(dumps.size(), 2u) << "the parent's dump and the child's";
  for (const std::string& dump : dumps) {
    uint64_t allocations = 0, bytes = 0;
    SiteFigures(dump, &allocations, &bytes);
    EXPECT_EQ(allocations, kSiteAllocations) << dump;
    EXPECT_EQ(bytes, kSiteBytes) << dump;
  }
}

}  // namespace
