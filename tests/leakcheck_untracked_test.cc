// Allocations the checker could not track are reported, never lost in silence (issue 18): a
// program run under stackwalk-leakcheck with a "real allocator" preloaded after the checker
// (tests/fixtures/unaligned_allocator.c) that hands out 3 blocks not 8-byte aligned, which the
// live table's slot refuses. The text report says so in its header and under its SUMMARY line;
// the JSON report's summary carries the counts; the dump carries them to stackwalk-report (its
// leak report and its profile views); a killed program's report (read from its record region)
// has them too; a check in the running process returns them in stackwalk_leak_summary (the C
// form, CheckLeaks(), a listener: tests/fixtures/untracked_checks.cc); --exitcode N applies when
// no leak was found but some went untracked, said on stderr, whichever side names the report; and
// a run without the odd allocator says nothing of the kind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "unaligned_allocator.h"

namespace {

// 3 blocks of kUnalignedSize bytes refused, one of them freed by the program: all 3 untracked.
const std::string kBytes = std::to_string(3 * kUnalignedSize);
const std::string kHeaderLine = "== 3 allocations (" + kBytes +
                                " bytes) could not be tracked: 3 refused (an address above 2^48 "
                                "or not 8-byte aligned, or a block of 1 TiB or more); they are in "
                                "no figure of this report\n";
const std::string kWarning = "\nWARNING: stackwalk-leakcheck: 3 allocations (" + kBytes +
                             " bytes) could not be tracked and are not in this summary";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct FixtureRun {
  std::string report;
  int status = 0;  // as std::system returns it
};

// The fixture under the launcher with `format`; `odd`: the unaligned allocator preloaded;
// `how`: "" to return from main, "kill" to die of SIGKILL; `dump`: a file for --dump, or "".
FixtureRun RunFixture(const std::string& format, bool odd, const std::string& how = "",
               const std::string& dump = "") {
  static int serial = 0;
  const std::string report = ::testing::TempDir() + "untracked." + std::to_string(getpid()) + "." +
                             std::to_string(serial++) + ".out";
  std::remove(report.c_str());
  if (!dump.empty()) std::remove(dump.c_str());
  // exec: the shell must not stand between (it would turn a death by signal into status 137).
  const std::string command =
      std::string("exec env ") + (odd ? std::string("LD_PRELOAD=") + UNALIGNED_ALLOCATOR : "") +
      " " + STACKWALK_LEAKCHECK + " --min-size 40000 --format " + format + " --output " + report +
      (dump.empty() ? "" : " --dump " + dump) + " " + UNTRACKED_BLOCKS + " " + how + " 2>&1";
  FixtureRun run;
  run.status = std::system(command.c_str());
  run.report = ReadFile(report);
  return run;
}

// The JSON report's summary.untracked, as "allocations bytes refused no_memory".
std::string UntrackedOfJson(const std::string& report) {
  const std::string file = ::testing::TempDir() + "untracked." + std::to_string(getpid()) + ".json";
  std::ofstream(file) << report;
  const std::string command =
      "python3 -c \"import json,sys; u=json.load(open(sys.argv[1]))['summary']['untracked']; "
      "print(u['allocations'], u['bytes'], u['refused'], u['no_memory'])\" " + file;
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), p) != nullptr) out += line;
    pclose(p);
  }
  return out;
}

TEST(LeakcheckUntracked, TheTextReportSaysHowManyBlocksWentUntrackedAndWarnsAtItsSummary) {
  const FixtureRun run = RunFixture("text", true);
  EXPECT_NE(run.report.find(kHeaderLine), std::string::npos) << run.report;
  // The tracked leak is still found; the warning follows the SUMMARY line.
  const size_t summary =
      run.report.find("\nSUMMARY: stackwalk-leakcheck: 50000 bytes leaked in 1 allocation.");
  ASSERT_NE(summary, std::string::npos) << run.report;
  EXPECT_EQ(run.report.find(kWarning), run.report.find('\n', summary + 1)) << run.report;
}

TEST(LeakcheckUntracked, TheJsonReportCarriesTheCounts) {
  const FixtureRun run = RunFixture("json", true);
  EXPECT_EQ(UntrackedOfJson(run.report), "3 " + kBytes + " 3 0\n") << run.report;
}

TEST(LeakcheckUntracked, TheDumpCarriesTheCountsToStackwalkReport) {
  const std::string dump = ::testing::TempDir() + "untracked." + std::to_string(getpid()) + ".dump";
  const FixtureRun run = RunFixture("text", true, "", dump);
  ASSERT_NE(run.report.find(kHeaderLine), std::string::npos) << run.report;
  const std::string text = ::testing::TempDir() + "untracked.rendered.txt";
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " " + dump + " >" + text).c_str()), 0);
  const std::string rendered = ReadFile(text);
  EXPECT_NE(rendered.find(kHeaderLine), std::string::npos) << rendered;
  EXPECT_NE(rendered.find(kWarning), std::string::npos) << rendered;
  const std::string json = ::testing::TempDir() + "untracked.rendered.json";
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " --format json " + dump + " >" + json)
                            .c_str()),
            0);
  EXPECT_EQ(UntrackedOfJson(ReadFile(json)), "3 " + kBytes + " 3 0\n") << ReadFile(json);
  // The profile views of the same dump say so too: the peak lacks those blocks.
  const std::string view = ::testing::TempDir() + "untracked.view.txt";
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " --view peak " + dump + " >" + view)
                            .c_str()),
            0);
  const std::string peak = ReadFile(view);
  EXPECT_EQ(peak.rfind("*** 3 allocation(s) (" + kBytes +
                           " bytes) could not be tracked: in no figure of this view\n",
                       0),
            0u)
      << peak;
  const std::string page = ::testing::TempDir() + "untracked.view.html";
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " --format html " + dump + " >" + page)
                            .c_str()),
            0);
  // The page's summary row, its bytes grouped in thousands (120,279).
  EXPECT_NE(ReadFile(page).find("3 allocation(s) (" + kBytes.substr(0, 3) + "," + kBytes.substr(3) +
                                " bytes) could not be tracked: in no view"),
            std::string::npos);
  // The growth between two dumps: each side's count (here the dump against itself).
  const std::string diff = ::testing::TempDir() + "untracked.diff.txt";
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " --diff " + dump + " " + dump + " >" +
                         diff).c_str()),
            0);
  EXPECT_NE(ReadFile(diff).find("*** allocations that could not be tracked, in no figure of this "
                                "diff: 3 (" + kBytes + " bytes) by A, 3 (" + kBytes +
                                " bytes) by B\n"),
            std::string::npos)
      << ReadFile(diff);
  const std::string diff_json = ::testing::TempDir() + "untracked.diff.json";
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " --diff --format json " + dump + " " +
                         dump + " >" + diff_json).c_str()),
            0);
  EXPECT_NE(ReadFile(diff_json).find("\"untracked\":{\"from\":{\"allocations\":3,\"bytes\":" +
                                     kBytes + "},\"to\":{\"allocations\":3,\"bytes\":" +
                                     kBytes + "}}"),
            std::string::npos)
      << ReadFile(diff_json);
}

// Killed: the launcher reads the record region, whose header keeps the counts.
TEST(LeakcheckUntracked, AKilledProgramsReportFromItsRecordHasTheCounts) {
  const FixtureRun run = RunFixture("text", true, "kill");
  EXPECT_TRUE(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL) << run.status;
  ASSERT_NE(run.report.find("live allocations (report 1, on killed by SIGKILL)"),
            std::string::npos)
      << run.report;
  EXPECT_NE(run.report.find(kHeaderLine), std::string::npos) << run.report;
  EXPECT_NE(run.report.find(kWarning), std::string::npos) << run.report;
}

// What tests/fixtures/untracked_checks.cc prints (the summary's untracked fields of each check),
// run under the launcher; `odd`: the unaligned allocator preloaded.
std::string ChecksOutput(bool odd) {
  const std::string report = ::testing::TempDir() + "untracked_checks." + std::to_string(getpid()) +
                             ".out";
  const std::string command =
      std::string("env ") + (odd ? std::string("LD_PRELOAD=") + UNALIGNED_ALLOCATOR : "") + " " +
      STACKWALK_LEAKCHECK + " --output " + report + " " + UNTRACKED_CHECKS + " 2>/dev/null";
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), p) != nullptr) out += line;
    EXPECT_EQ(pclose(p), 0) << out;
  }
  return out;
}

// The 3 refused blocks (kept, not leaked) in every check's summary: the C form's, CheckLeaks()'s
// and the listener's after each.
TEST(LeakcheckUntracked, AChecksSummaryCountsThem) {
  const std::string counts = "3 " + kBytes + " 3 0\n";
  EXPECT_EQ(ChecksOutput(true), "listener: " + counts + "check: " + counts + "listener: " + counts +
                                    "CheckLeaks: " + counts);
}

TEST(LeakcheckUntracked, AChecksSummaryCountsNoneWithAnOrdinaryAllocator) {
  EXPECT_EQ(ChecksOutput(false), "listener: 0 0 0 0\ncheck: 0 0 0 0\nlistener: 0 0 0 0\n"
                                 "CheckLeaks: 0 0 0 0\n");
}

struct ExitcodeRun {
  int status = -1;  // the launcher's exit status, -1 if it did not exit
  std::string stderr_text;
  std::string report;
};

// The fixture under the launcher with --exitcode 23, its report named in `name_in` ("launcher" or
// "program"); `odd`: the unaligned allocator preloaded; `how`: "clean" frees every block.
ExitcodeRun RunWithExitcode(const std::string& name_in, bool odd, const std::string& how) {
  static int serial = 0;
  const std::string base = ::testing::TempDir() + "untracked_exitcode." + std::to_string(getpid()) +
                           "." + std::to_string(serial++);
  const std::string report = base + ".out", errors = base + ".err";
  std::remove(report.c_str());
  const std::string command =
      std::string("env ") + (odd ? std::string("LD_PRELOAD=") + UNALIGNED_ALLOCATOR : "") + " " +
      STACKWALK_LEAKCHECK + " --name-in=" + name_in + " --exitcode 23 --min-size 40000 --output " +
      report + " " + UNTRACKED_BLOCKS + " " + how + " 2>" + errors;
  const int raw = std::system(command.c_str());
  ExitcodeRun run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.stderr_text = ReadFile(errors);
  run.report = ReadFile(report);
  return run;
}

const std::string kNoLeaks = "\nSUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations.\n";
const std::string kExitcodeNote = "stackwalk-leakcheck: exit status 23 (--exitcode): no leaks "
                                  "found, but 3 allocations (" + kBytes + " bytes) could not be "
                                  "tracked: whether they leaked is unknown\n";

// "0 leaks" proves nothing about untracked blocks: a CI run must not pass on it. The launcher
// decides from the report it names; with --name-in=program the program decides at its exit.
TEST(LeakcheckUntracked, ExitcodeAppliesWhenNoLeakWasFoundButSomeWentUntracked) {
  for (const char* name_in : {"launcher", "program"}) {
    SCOPED_TRACE(name_in);
    const ExitcodeRun run = RunWithExitcode(name_in, true, "clean");
    EXPECT_NE(run.report.find(kNoLeaks), std::string::npos) << run.report;
    EXPECT_NE(run.report.find(kWarning), std::string::npos) << run.report;
    EXPECT_EQ(run.status, 23) << run.stderr_text;
    EXPECT_NE(run.stderr_text.find(kExitcodeNote), std::string::npos) << run.stderr_text;
  }
}

// Leaks found: N as before, the report says why (no note); nothing leaked and nothing untracked:
// the program's own status.
TEST(LeakcheckUntracked, ExitcodeOtherwiseFollowsTheLeaksAlone) {
  for (const char* name_in : {"launcher", "program"}) {
    SCOPED_TRACE(name_in);
    const ExitcodeRun leaky = RunWithExitcode(name_in, true, "");
    EXPECT_EQ(leaky.status, 23) << leaky.stderr_text;
    EXPECT_EQ(leaky.stderr_text.find("(--exitcode)"), std::string::npos) << leaky.stderr_text;
    const ExitcodeRun clean = RunWithExitcode(name_in, false, "clean");
    EXPECT_NE(clean.report.find(kNoLeaks), std::string::npos) << clean.report;
    EXPECT_EQ(clean.status, 0) << clean.stderr_text;
    EXPECT_EQ(clean.stderr_text.find("(--exitcode)"), std::string::npos) << clean.stderr_text;
  }
}

// With glibc's own allocator every block is tracked: no line, no warning, zero counts.
TEST(LeakcheckUntracked, WithAnOrdinaryAllocatorNothingIsSaid) {
  const FixtureRun text = RunFixture("text", false);
  EXPECT_NE(text.report.find("SUMMARY: stackwalk-leakcheck: 130186 bytes leaked in 3 allocations."),
            std::string::npos)
      << text.report;
  EXPECT_EQ(text.report.find("could not be tracked"), std::string::npos) << text.report;
  EXPECT_EQ(UntrackedOfJson(RunFixture("json", false).report), "0 0 0 0\n");
}

}  // namespace
