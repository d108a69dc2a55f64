// The leak report reaches its reader however the program ends, and a program the preload cannot
// reach is refused instead of run unchecked: the launcher on tests/fixtures/leak_endings.c, on a
// static build of it, on set-ID and file-capability copies of a program, on ls and dash.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

const std::string kLauncher = STACKWALK_LEAKCHECK;
const std::string kFixture = LEAK_ENDINGS;

struct Ending {
  int status = -1;     // exit status, or -1 if it did not exit normally
  std::string stderr_text;  // everything the launcher and the program wrote to fd 2
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "endings." + std::to_string(getpid()) + "." + name;
}

// `args` run under the launcher with no --output: the report goes to stderr, here a file. The
// fixture's block stays reachable (a global holds it): listed with --show-reachable.
Ending Launch(const std::string& args) {
  const std::string err = TempPath("stderr");
  std::remove(err.c_str());
  const int raw =
      std::system((kLauncher + " --show-reachable " + args + " >/dev/null 2>" + err).c_str());
  Ending run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.stderr_text = Slurp(err);
  return run;
}

// The exit report of the fixture: its header names the process, and the 4321-byte leak is there.
void ExpectFixtureReport(const Ending& run) {
  EXPECT_NE(run.stderr_text.find("leaks at exit (report 1)"), std::string::npos) << run.stderr_text;
  EXPECT_TRUE(std::regex_search(run.stderr_text,
                                std::regex("process [0-9]+ \\([^)]*leak_endings\\)")))
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("Reachable: 4321 byte(s) in 1 object(s) allocated from:"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("endings_leak"), std::string::npos) << run.stderr_text;
}

TEST(LeakcheckEndings, AProgramThatClosesStderrStillGetsItsReport) {
  Ending run = Launch(kFixture + " close-stderr");
  EXPECT_EQ(run.status, 0);
  ExpectFixtureReport(run);
}

TEST(LeakcheckEndings, TheReportNeverLandsInAFileThatReusedDescriptorTwo) {
  const std::string data = TempPath("data");
  Ending run = Launch(kFixture + " reuse-stderr " + data);
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(Slurp(data), "data\n");  // the program's file holds only what it wrote
  ExpectFixtureReport(run);
}

TEST(LeakcheckEndings, UnderscoreExitAndUnderscoreCapitalExitReportFirst) {
  Ending exit_run = Launch(kFixture + " _exit");
  EXPECT_EQ(exit_run.status, 3);
  ExpectFixtureReport(exit_run);
  Ending capital = Launch(kFixture + " _Exit");
  EXPECT_EQ(capital.status, 4);
  ExpectFixtureReport(capital);
}

TEST(LeakcheckEndings, AVforkChildThatExitsDoesNotWriteTheParentsReport) {
  Ending run = Launch(kFixture + " vfork-exec-fails");
  EXPECT_EQ(run.status, 0);
  ExpectFixtureReport(run);
  size_t reports = 0;
  for (size_t at = 0; (at = run.stderr_text.find("leaks at exit", at)) != std::string::npos; ++at) {
    ++reports;
  }
  EXPECT_EQ(reports, 1u) << run.stderr_text;
}

TEST(LeakcheckEndings, LsAndADashScriptReport) {
  // ls closes stderr at exit; dash ends with _exit.
  Ending ls = Launch("ls /");
  EXPECT_EQ(ls.status, 0);
  EXPECT_TRUE(std::regex_search(ls.stderr_text, std::regex("process [0-9]+ \\(/usr/bin/ls\\)")))
      << ls.stderr_text;
  EXPECT_NE(ls.stderr_text.find("SUMMARY: stackwalk-leakcheck:"), std::string::npos);
  Ending dash = Launch("/bin/dash -c 'exit 7'");
  EXPECT_EQ(dash.status, 7);
  EXPECT_TRUE(std::regex_search(dash.stderr_text, std::regex("process [0-9]+ \\(/usr/bin/dash\\)")))
      << dash.stderr_text;
  EXPECT_NE(dash.stderr_text.find("SUMMARY: stackwalk-leakcheck:"), std::string::npos);
}

TEST(LeakcheckEndings, EveryReportOfSeveralProcessesOnOneStderrNamesItsProcess) {
  // follow_exec: the shell and the fixture it starts each report, each under its own pid.
  Ending run = Launch("--follow-exec /bin/dash -c '" + kFixture + " plain; exit 0'");
  EXPECT_EQ(run.status, 0);
  std::regex header("process ([0-9]+) \\(([^)]*)\\)");
  std::set<std::string> pids, programs;
  for (auto it = std::sregex_iterator(run.stderr_text.begin(), run.stderr_text.end(), header);
       it != std::sregex_iterator(); ++it) {
    pids.insert((*it)[1].str());
    programs.insert((*it)[2].str());
  }
  EXPECT_EQ(pids.size(), 2u) << run.stderr_text;
  EXPECT_EQ(programs.count("/usr/bin/dash"), 1u) << run.stderr_text;
  EXPECT_EQ(programs.count(kFixture), 1u) << run.stderr_text;
}

// ---- programs the preload cannot reach ----

void ExpectRefused(const Ending& run, const std::string& reason) {
  EXPECT_EQ(run.status, 126) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("stackwalk-leakcheck: cannot check"), std::string::npos)
      << run.stderr_text;
  EXPECT_NE(run.stderr_text.find(reason), std::string::npos) << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("leaks at exit"), std::string::npos) << run.stderr_text;
}

TEST(LeakcheckEndings, AStaticProgramIsRefusedWithTheReason) {
  ExpectRefused(Launch(LEAK_ENDINGS_STATIC), "is statically linked");
  // A script is judged by its interpreter.
  const std::string script = TempPath("script");
  std::ofstream(script) << "#!" << LEAK_ENDINGS_STATIC << "\n";
  chmod(script.c_str(), 0755);
  ExpectRefused(Launch(script), "is statically linked");
}

// The program execs a static program (no preload reaches it), which dies of SIGKILL: the record
// left is the old image's, marked superseded by the exec, and is not reported as the process's.
TEST(LeakcheckEndings, AKilledProgramThatNeverAttachedAfterAnExecIsNotReportedFromTheOldRecord) {
  const Ending run = Launch(kFixture + " exec " + LEAK_ENDINGS_STATIC + " kill-self");
  EXPECT_NE(run.stderr_text.find("was killed by signal 9"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("its record ended when it exec'd a program the checker does not "
                                 "reach (statically linked, set-ID): no report could be written"),
            std::string::npos) << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("live allocations"), std::string::npos) << run.stderr_text;
  EXPECT_EQ(run.stderr_text.find("endings_leak"), std::string::npos) << run.stderr_text;
}

// An exec that fails (execlp of a program that is not there) takes the mark back: the program
// killed afterwards is reported from its record as any other.
TEST(LeakcheckEndings, AFailedExecLeavesTheRecordToBeReported) {
  const Ending run = Launch(kFixture + " exec-fails-kill");
  EXPECT_NE(run.stderr_text.find("its record at its death is reported (unclassified)"),
            std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("live allocations (report 1, on killed by SIGKILL)"),
            std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("endings_leak"), std::string::npos) << run.stderr_text;
}

// A copy of the fixture the test may change the owner, mode and attributes of.
std::string CopyOfFixture(const std::string& name) {
  const std::string copy = TempPath(name);
  EXPECT_EQ(std::system(("cp " + kFixture + " " + copy).c_str()), 0);
  return copy;
}

TEST(LeakcheckEndings, SetIdProgramsOfAnotherOwnerAreRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file another owner";
  const std::string setuid = CopyOfFixture("setuid");
  ASSERT_EQ(chown(setuid.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod(setuid.c_str(), 04755), 0);
  ExpectRefused(Launch(setuid), "is set-user-ID (owner uid 65534)");
  const std::string setgid = CopyOfFixture("setgid");
  ASSERT_EQ(chown(setgid.c_str(), 0, 65534), 0);
  ASSERT_EQ(chmod(setgid.c_str(), 02755), 0);
  ExpectRefused(Launch(setgid), "is set-group-ID (group gid 65534)");
  // Set-user-ID to the user running it already: the loader is not in secure mode, it is checked.
  const std::string own = CopyOfFixture("setuid-own");
  ASSERT_EQ(chmod(own.c_str(), 04755), 0);
  Ending run = Launch(own + " plain");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.stderr_text.find("Reachable: 4321 byte(s) in 1 object(s) allocated from:"), std::string::npos) << run.stderr_text;
}

TEST(LeakcheckEndings, AProgramWithFileCapabilitiesIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETFCAP) to set file capabilities";
  const std::string copy = CopyOfFixture("caps");
  // struct vfs_cap_data, revision 2: CAP_NET_BIND_SERVICE permitted.
  const uint32_t caps[5] = {0x02000000u, 1u << 10, 0, 0, 0};
  ASSERT_EQ(setxattr(copy.c_str(), "security.capability", caps, sizeof(caps), 0), 0);
  ExpectRefused(Launch(copy), "has file capabilities");
}

}  // namespace
