// Checks in a running process (leakcheck/checks.h) on tests/fixtures/leak_checks.cc, under the
// preloaded checker (the launcher) and with the in-process one started: CheckLeaks returns each
// leak once, with its PCs, named frames (the LEAK-SITE line) and thread; ignored blocks never
// appear; listeners see every check; the C form with a too-small buffer says how many records it
// found and returns the rest next time; --check-interval appends a report per check; the
// checker's frames between the program's and the check (the API's, CheckLeaks()' over the
// preloaded C API, the preloaded _exit's, the periodic checker's) are never roots.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "leakcheck_run.h"

namespace {

const std::string kChecks = LEAK_CHECKS;

// The record lines of one check's block of the fixture's output ("<what> check N: ...").
std::vector<std::string> Records(const std::string& out, const std::string& what) {
  std::vector<std::string> lines;
  size_t at = out.find(what + " check ");
  if (at == std::string::npos) return lines;
  at = out.find('\n', at);
  while (at != std::string::npos && out.compare(at + 1, 9, "  record ") == 0) {
    const size_t end = out.find('\n', at + 1);
    lines.push_back(out.substr(at + 1, end - at - 1));
    at = end;
  }
  return lines;
}

// The records of `lines` made in the fixture (named in leak_checks.cc); others are the runtime's.
std::vector<std::string> FixtureRecords(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    if (line.find("leak_checks.cc:") != std::string::npos) out.push_back(line);
  }
  return out;
}

std::string RecordOf(const std::vector<std::string>& lines, const std::string& bytes) {
  for (const std::string& line : lines) {
    if (line.find(" bytes=" + bytes + " ") != std::string::npos) return line;
  }
  return "";
}

void ExpectSite(const std::string& record, const std::string& function, const std::string& site) {
  ASSERT_FALSE(record.empty());
  const int line = Sites(LEAK_CHECKS_SOURCE).at(site);
  EXPECT_NE(record.find("frame=(anonymous namespace)::" + function + " "), std::string::npos) << record;
  EXPECT_NE(record.find("leak_checks.cc:" + std::to_string(line) + "\n"), std::string::npos)
      << record << " line " << line;
  EXPECT_NE(record.find(" kind=0 "), std::string::npos) << record;
  EXPECT_NE(record.find(" allocations=1 "), std::string::npos) << record;
  EXPECT_NE(record.find(" seen_recent=1 "), std::string::npos) << record;
  EXPECT_EQ(record.find(" pcs=0 "), std::string::npos) << record;
}

void ExpectApi(const std::string& out) {
  SCOPED_TRACE(out);
  EXPECT_NE(out.find("listener 1\n"), std::string::npos);
  // First check: the three leaks, named at their lines; not the block kept in a global.
  const std::vector<std::string> first = Records(out, "first");
  const std::vector<std::string> mine = FixtureRecords(first);
  EXPECT_EQ(mine.size(), 3u);
  ExpectSite(RecordOf(first, "1001") + "\n", "LeakOne()", "one");
  ExpectSite(RecordOf(first, "1002") + "\n", "LeakTwo()", "two");
  ExpectSite(RecordOf(first, "1003") + "\n", "LeakThree()", "three");
  EXPECT_EQ(RecordOf(first, "77"), "");
  std::smatch number;
  const std::string first_record = RecordOf(first, "1001");
  ASSERT_TRUE(std::regex_search(first_record, number, std::regex(" first=(\\d+) ")));
  const std::string first_check = number[1].str();
  EXPECT_NE(out.find("first check " + first_check + ":"), std::string::npos);
  // Second: only the two new ones; the ignored block never.
  const std::vector<std::string> second = Records(out, "second");
  EXPECT_EQ(FixtureRecords(second).size(), 2u);
  for (const char* old : {"1001", "1002", "1003", "3001"}) EXPECT_EQ(RecordOf(second, old), "") << old;
  EXPECT_EQ(RecordOf(first, "3001"), "");
  ExpectSite(RecordOf(second, "2001") + "\n", "LeakFour()", "four");
  const std::string on_thread = RecordOf(second, "2002");
  ExpectSite(on_thread + "\n", "LeakOnThread(void*)", "thread");
  EXPECT_NE(on_thread.find(" thread=leaker "), std::string::npos) << on_thread;
  EXPECT_EQ(on_thread.find(" tid=0 "), std::string::npos) << on_thread;
  EXPECT_NE(on_thread.find(" first=" + std::to_string(std::stoi(first_check) + 1) + " "),
            std::string::npos) << on_thread;
  // Each check stopped the world (ptrace or a signal, every thread) and timed its pause: the
  // summary carries the report's stop.
  for (const char* what : {"first", "second"}) {
    EXPECT_TRUE(std::regex_search(out, std::regex(std::string(what) +
                                                  " stop method=[12] unstopped=0 paused=1\n")))
        << what;
  }
  // IgnoreObject: the block's start only (InvalidArgument = 3 otherwise).
  EXPECT_NE(out.find("ignore interior 3\nignore stack 3\nignore block 0\n"), std::string::npos);
  EXPECT_NE(out.find("listener calls 2 records "), std::string::npos);
  // The C form: room for one of three, the largest; the other two come with the next check.
  EXPECT_NE(out.find("small buffer -6 count 3 first 4003\n"), std::string::npos);
  EXPECT_NE(out.find("next 0 count 2: 4002 4001\n"), std::string::npos);
  EXPECT_TRUE(std::regex_search(out, std::regex("empty 0 count 0 check \\d+\n")));
  // Five checks seen; none after the listener was removed.
  EXPECT_NE(out.find("listener calls 5 then 5 after removal\n"), std::string::npos);
}

TEST(LeakcheckChecks, PreloadedChecksReturnEachLeakOnce) {
  const std::string out = Output(std::string(STACKWALK_LEAKCHECK) +
                                 " --output /dev/null " + kChecks + " api preload 2>&1");
  ExpectApi(out);
}

TEST(LeakcheckChecks, InProcessChecksReturnEachLeakOnce) {
  const std::string out = Output(kChecks + " api inprocess 2>&1");
  ExpectApi(out);
}

TEST(LeakcheckChecks, WithoutACheckerTheApiSaysSo) {
  const std::string out = Output(kChecks + " nochecker 2>&1");
  EXPECT_NE(out.find("check FAILED_PRECONDITION: no leak checker runs"), std::string::npos) << out;
  EXPECT_NE(out.find("ignore -3\n"), std::string::npos) << out;
}

// The checking thread's stack is a root from the program's call of the API up: the checker's
// frames between it and the check, laid where the program's dead frames were, would otherwise
// read a dropped block's address left there as a reference.
// The fixture's `what`, preloaded (under the launcher) or with the in-process checker started.
std::string RunFixture(const std::string& what, bool preloaded) {
  const std::string launcher = std::string(STACKWALK_LEAKCHECK) + " --output /dev/null ";
  return Output((preloaded ? launcher : "") + kChecks + " " + what +
                (preloaded ? " preload" : " inprocess") + " 2>&1");
}

TEST(LeakcheckChecks, PreloadedCheckReadsNoDeadFrameOfTheProgramUnderItsOwn) {
  EXPECT_EQ(RunFixture("stale", true), "stale check 0: leak found\n");
}

TEST(LeakcheckChecks, InProcessCheckReadsNoDeadFrameOfTheProgramUnderItsOwn) {
  EXPECT_EQ(RunFixture("stale", false), "stale check 0: leak found\n");
}

// CheckLeaks() over the C API: preloaded, its frame (the in-process library's) lies between the
// program's and the C API's entry (the preloaded library's), over the program's dead frames.
TEST(LeakcheckChecks, PreloadedCxxCheckReadsNoDeadFrameOfTheProgramUnderItsOwn) {
  EXPECT_EQ(RunFixture("stale_cxx", true), "stale check OK: leak found\n");
}

TEST(LeakcheckChecks, InProcessCxxCheckReadsNoDeadFrameOfTheProgramUnderItsOwn) {
  EXPECT_EQ(RunFixture("stale_cxx", false), "stale check OK: leak found\n");
}

// The periodic checker's thread is the checker's alone, but runs the program's listeners: the next
// check's frames come where a listener's were, and its stale words must not be read as roots.
TEST(LeakcheckChecks, PreloadedPeriodicCheckReadsNoDeadFrameOfAListener) {
  EXPECT_EQ(Output("timeout 120 " + std::string(STACKWALK_LEAKCHECK) +
                   " --check-interval 1 --output /dev/null " + kChecks +
                   " stale_listener preload 2>&1"),
            "stale listener: leak found\n");
}

TEST(LeakcheckChecks, InProcessPeriodicCheckReadsNoDeadFrameOfAListener) {
  EXPECT_EQ(Output("timeout 120 " + kChecks + " stale_listener inprocess /dev/null 2>&1"),
            "stale listener: leak found\n");
}

// The reports of a report file, each from its header line on.
std::vector<std::string> Reports(const std::string& text) {
  std::vector<std::string> reports;
  const std::regex header("==stackwalk-leakcheck== (live allocations|leaks at exit|leaks) \\(report");
  std::vector<size_t> starts;
  for (std::sregex_iterator it(text.begin(), text.end(), header), end; it != end; ++it) {
    starts.push_back(static_cast<size_t>(it->position()));
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    reports.push_back(text.substr(starts[i], (i + 1 < starts.size() ? starts[i + 1] : text.size()) - starts[i]));
  }
  return reports;
}

bool HasLeak(const std::string& report, int bytes) {
  return std::regex_search(report,
                           std::regex("[Ll]eak of " + std::to_string(bytes) + " byte\\(s\\)"));
}

// _exit's own frames (the preloaded library's) lie between the program's and the exit report's.
TEST(LeakcheckChecks, ExitReportReadsNoDeadFrameOfTheProgramUnderExitsOwn) {
  const std::string report =
      ::testing::TempDir() + "stale_exit." + std::to_string(getpid()) + ".txt";
  std::remove(report.c_str());
  const std::string out = Output(std::string(STACKWALK_LEAKCHECK) + " --output " + report + " " +
                                 kChecks + " stale_exit preload 2>&1");
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(report.c_str());
  EXPECT_NE(text.str().find("leaks at exit (report"), std::string::npos) << out << text.str();
  EXPECT_TRUE(HasLeak(text.str(), 6004)) << text.str();
}

// The fixture leaks once per check and waits for the next (a listener counts them): each leak is
// in exactly one check's report, the first check after it.
void ExpectPeriodic(const std::string& out, const std::string& text, bool exit_report) {
  SCOPED_TRACE(text);
  EXPECT_NE(out.find("periodic checks seen "), std::string::npos) << out;
  std::vector<std::string> checks;
  std::string at_exit;
  for (const std::string& report : Reports(text)) {
    if (report.find("leaks at exit (report") != std::string::npos) {
      at_exit = report;
    } else if (std::regex_search(report, std::regex("on check \\d+: leaks found since (the start|check \\d+)\\)"))) {
      checks.push_back(report);
    }
  }
  ASSERT_GE(checks.size(), 3u);
  for (int round = 1; round <= 3; ++round) {
    int found = 0;
    for (const std::string& check : checks) found += HasLeak(check, 5000 + round) ? 1 : 0;
    EXPECT_EQ(found, 1) << "round " << round;
  }
  EXPECT_TRUE(std::regex_search(checks[0], std::regex("on check 1: leaks found since the start")));
  EXPECT_TRUE(std::regex_search(checks[1], std::regex("on check 2: leaks found since check 1")));
  // The exit report is whole: every leak again (one stack: one entry).
  if (exit_report) {
    EXPECT_TRUE(std::regex_search(at_exit, std::regex("[Ll]eak of 15006 byte\\(s\\) in 3 object\\(s\\)")));
  }
}

TEST(LeakcheckChecks, PreloadedCheckIntervalAppendsAReportPerCheck) {
  const std::string report = ::testing::TempDir() + "periodic." + std::to_string(getpid()) + ".txt";
  std::remove(report.c_str());
  const std::string out = Output("timeout 120 " + std::string(STACKWALK_LEAKCHECK) +
                                 " --check-interval 1 --output " + report + " " + kChecks +
                                 " periodic preload 2>&1");
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  ExpectPeriodic(out, text.str(), true);
}

TEST(LeakcheckChecks, InProcessCheckIntervalAppendsAReportPerCheck) {
  const std::string report = ::testing::TempDir() + "periodic_inprocess." + std::to_string(getpid()) + ".txt";
  std::remove(report.c_str());
  const std::string out = Output("timeout 120 " + kChecks + " periodic inprocess " + report + " 2>&1");
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  ExpectPeriodic(out, text.str(), false);
}

}  // namespace

namespace {

TEST(LeakcheckChecks, PreloadedPeriodicChecksGoOnInAForkedChild) {
  const std::string out = Output("timeout 120 " + std::string(STACKWALK_LEAKCHECK) +
                                 " --check-interval 1 --output /dev/null " + kChecks +
                                 " fork preload 2>&1");
  EXPECT_EQ(out, "child saw a check: yes\n");
}

TEST(LeakcheckChecks, InProcessPeriodicChecksGoOnInAForkedChild) {
  const std::string out = Output("timeout 120 " + kChecks + " fork inprocess /dev/null 2>&1");
  EXPECT_EQ(out, "child saw a check: yes\n");
}

// A fork waits for the in-process checker's locks: the child finds them free (seen killed by its
// alarm, SIGALRM, while each was copied held).
TEST(LeakcheckChecks, InProcessAChildForkedWhileAnotherThreadHoldsTheCheckersLocksCanUseIt) {
  const std::string out = Output("timeout 120 " + kChecks + " fork_locked inprocess 2>&1");
  EXPECT_EQ(out,
            "lock 0 held at the fork: the child went on\n"
            "lock 1 held at the fork: the child went on\n");
}

}  // namespace
