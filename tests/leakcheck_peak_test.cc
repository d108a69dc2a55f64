// Exact peak live bytes, for the process and for each thread, on a program whose peaks are known
// (tests/fixtures/known_peak.c): a burst allocated and freed between two reports' worth of
// allocations is not missed, and a block freed by another thread counts against its allocator.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

// `how`: "" to return from main, "kill" to die of SIGKILL (reported from its record region).
std::string RunFixture(const std::string& format, const std::string& how = "") {
  const std::string report = ::testing::TempDir() + "peak." + format + ".out";
  std::remove(report.c_str());
  // exec: the shell must not stand between (it would turn a death by signal into status 137).
  const std::string command = std::string("exec ") + STACKWALK_LEAKCHECK + " --min-size 80000 --format " +
                              format + " --output " + report + " " + KNOWN_PEAK + " " + how +
                              " 2>&1";
  const int status = std::system(command.c_str());
  if (how == "kill") {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  } else {
    EXPECT_EQ(status, 0);
  }
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text header's peaks: the process's, and each thread's with what it holds at the end.
void ExpectProcessAndThreadPeaks(const std::string& report) {
  EXPECT_NE(report.find("== peak 690000 bytes live;"), std::string::npos) << report;
  EXPECT_TRUE(std::regex_search(
      report, std::regex(R"(== thread known_peak \(tid \d+\): 200000 bytes live in 1 allocation, peak 600000 bytes\n)")))
      << report;
  EXPECT_TRUE(std::regex_search(
      report, std::regex(R"(== thread peak\xffworker \(tid \d+\): 90000 bytes live in 1 allocation, peak 270000 bytes\n)")))
      << report;
}

TEST(LeakcheckPeak, TextReportGivesTheExactProcessAndThreadPeaks) {
  const std::string report = RunFixture("text");
  // A global holds each block left: reachable, not leaked.
  EXPECT_NE(report.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << report;
  EXPECT_NE(report.find("== 290000 bytes in 2 allocations still reachable (not shown)\n"),
            std::string::npos) << report;
  ExpectProcessAndThreadPeaks(report);
}

// Killed: the launcher reports the record region, whose header keeps the process's peak and whose
// thread registry each thread's (without it the header said the 290000 bytes live at death).
TEST(LeakcheckPeak, AKilledProgramsRecordGivesTheExactProcessAndThreadPeaks) {
  const std::string report = RunFixture("text", "kill");
  ASSERT_NE(report.find("live allocations (report 1, on killed by SIGKILL)"), std::string::npos)
      << report;
  EXPECT_NE(report.find("Live: 200000 byte(s) in 1 object(s)"), std::string::npos) << report;
  EXPECT_NE(report.find("Live: 90000 byte(s) in 1 object(s)"), std::string::npos) << report;
  ExpectProcessAndThreadPeaks(report);
}

TEST(LeakcheckPeak, JsonReportGivesTheSamePeaksAndStaysValidWithANonUtf8ThreadName) {
  const std::string report = RunFixture("json");
  // Python's json module reads it, and the worker's name comes back with U+FFFD for its bad byte.
  const std::string file = ::testing::TempDir() + "peak.json.out";
  const std::string check = "python3 -c \"import json,sys; r=json.load(open(sys.argv[1])); "
                            "print(sorted(t['thread'] for t in r['threads']))\" " + file;
  FILE* p = popen(check.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[256] = {};
  const bool read = std::fgets(line, sizeof(line), p) != nullptr;
  EXPECT_EQ(pclose(p), 0) << report;
  ASSERT_TRUE(read);
  EXPECT_EQ(std::string(line), "['known_peak', 'peak\ufffdworker']\n") << report;
  EXPECT_NE(report.find("\"peak_bytes\":690000"), std::string::npos) << report;
  EXPECT_TRUE(std::regex_search(
      report, std::regex(R"("bytes":90000,"allocations":1,"peak_bytes":270000\})")))
      << report;
  EXPECT_TRUE(std::regex_search(
      report, std::regex(R"("bytes":200000,"allocations":1,"peak_bytes":600000\})")))
      << report;
}

}  // namespace
