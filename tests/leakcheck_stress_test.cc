// The leak checker under load, preloaded by stackwalk-leakcheck on tests/fixtures/leak_stress.cc:
// 16 threads x 1M mixed allocations and frees with reports asked for in the middle (exact
// totals where the threads stand still, bounded ones while they run, reports on a signal), and
// fork while reports are written (every child works, reports and exits).
// STACKWALK_LEAK_STRESS_OPS sets the operations per thread (1,000,000 by default).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "leakcheck_run.h"

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

long Operations() {
  const char* text = std::getenv("STACKWALK_LEAK_STRESS_OPS");
  long ops = text != nullptr ? std::atol(text) : 0;
  return ops >= 4000 ? ops : 1000000;
}

TEST(LeakcheckStress, SixteenThreadsWithReportsMidRunKeepExactTotals) {
  constexpr int kThreads = 16;
  const std::string base = ::testing::TempDir() + "leak_stress." + std::to_string(getpid());
  const std::string report = base + ".report.txt", out = base + ".out.txt";
  std::remove(report.c_str());
  const std::string command = "timeout 600 " + std::string(STACKWALK_LEAKCHECK) +
                              " --report-signal SIGUSR2 --output " + report + " " + LEAK_STRESS +
                              " churn " + std::to_string(kThreads) + " " +
                              std::to_string(Operations()) + " >" + out + " 2>&1";
  const int raw = std::system(command.c_str());
  const std::string stdout_text = ReadAll(out);
  ASSERT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw << "\n" << stdout_text;
  // At each checkpoint the report's leaks are the baseline's: what the threads hold is reachable.
  std::regex checkpoint("checkpoint (\\d): reported (\\d+) bytes in (\\d+), at most (\\d+) in (\\d+)\n");
  int checkpoints = 0;
  for (std::sregex_iterator it(stdout_text.begin(), stdout_text.end(), checkpoint), end; it != end;
       ++it) {
    ++checkpoints;
    EXPECT_LE(std::stoull((*it)[2].str()), std::stoull((*it)[4].str())) << it->str();
    EXPECT_LE(std::stoull((*it)[3].str()), std::stoull((*it)[5].str())) << it->str();
  }
  EXPECT_EQ(checkpoints, 3) << stdout_text;
  EXPECT_NE(stdout_text.find("running reports 3, mismatches 0\n"), std::string::npos) << stdout_text;
  const std::string text = ReadAll(report);
  // The three signal reports were written (by the checker's reporter thread).
  int on_signal = 0;
  for (size_t at = 0; (at = text.find(", on signal 12)", at)) != std::string::npos; ++at) ++on_signal;
  EXPECT_EQ(on_signal, 3);
  // At exit: thread t keeps 1000 blocks of (t + 1) * 8 bytes, all from KeepBlock.
  const long kept_bytes = 1000L * 8 * (kThreads * (kThreads + 1) / 2);
  const std::string summary = "SUMMARY: stackwalk-leakcheck: " + std::to_string(kept_bytes) +
                              " bytes leaked in " + std::to_string(kThreads * 1000) + " allocations.";
  EXPECT_NE(text.find(summary), std::string::npos) << summary << "\n" << text.substr(text.rfind("SUMMARY"));
  // One stack, direct and indirect entries (a kept block's stale words may point at another).
  EXPECT_NE(text.find("KeepBlock", text.rfind("leaks at exit")), std::string::npos);
}

// fork() waits for the report lock in its prepare handler while a thread asks for reports
// without pause: the lock is fair (leakcheck/fair_lock.h), so each fork waits for the report
// running then, not behind tens of them (the spin lock before it starved a fork for 44 s beside
// the 16-thread test, without bound under more load: most likely CI's one timeout here).
TEST(LeakcheckStress, ForkWhileReportsAreWrittenLeavesWorkingChildren) {
  constexpr int kRounds = 8;
  const std::string dir = ::testing::TempDir() + "leak_stress_fork." + std::to_string(getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const std::string out = dir + "/stdout.txt";
  // Bounded below ctest's timeout (a hang fails with its output); a run takes seconds.
  const std::string command = "timeout 240 " + std::string(STACKWALK_LEAKCHECK) +
                              " --show-reachable --output " + dir + "/leaks.%p.txt " +
                              LEAK_STRESS + " fork " +
                              std::to_string(kRounds) + " >" + out + " 2>&1";
  const int raw = std::system(command.c_str());
  const std::string stdout_text = ReadAll(out);
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw << "\n" << stdout_text;
  EXPECT_NE(stdout_text.find("forks " + std::to_string(kRounds) + ", bad children 0\n"), std::string::npos) << stdout_text;
  // Each child's exit report shows its own block (a global holds it: listed as reachable).
  EXPECT_EQ(Output("grep -l ' 4242 byte(s) in ' " + dir + "/leaks.*.txt | wc -l"),
            std::to_string(kRounds) + "\n");
}

}  // namespace
