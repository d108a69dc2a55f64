// Exact peak live bytes, for the process and for each thread, on a program whose peaks are known
// (tests/fixtures/known_peak.c): a burst allocated and freed between two reports' worth of
// allocations is not missed, and a block freed by another thread counts against its allocator.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

std::string RunFixture(const std::string& format) {
  const std::string report = ::testing::TempDir() + "peak." + format + ".out";
  std::remove(report.c_str());
  const std::string command = std::string(STACKWALK_LEAKCHECK) + " --min-size 80000 --format " +
                              format + " --output " + report + " " + KNOWN_PEAK + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LeakcheckPeak, TextReportGivesTheExactProcessAndThreadPeaks) {
  const std::string report = RunFixture("text");
  EXPECT_NE(report.find("== peak 690000 bytes live;"), std::string::npos) << report;
  // A global holds each block left: reachable, not leaked.
  EXPECT_NE(report.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << report;
  EXPECT_NE(report.find("== 290000 bytes in 2 allocations still reachable (not shown)\n"),
            std::string::npos) << report;
  EXPECT_TRUE(std::regex_search(
      report, std::regex(R"(== thread known_peak \(tid \d+\): 200000 bytes live in 1 allocation, peak 600000 bytes\n)")))
      << report;
  EXPECT_TRUE(std::regex_search(
      report, std::regex(R"(== thread peak\xffworker \(tid \d+\): 90000 bytes live in 1 allocation, peak 270000 bytes\n)")))
      << report;
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
