// --name-in=launcher: the launcher runs the program as its child, gets its reports as leak dumps
// through a pipe, and names and renders them itself (issue 18). Every ending of the program
// (exit, _exit's status, SIGSEGV and SIGABRT with the status they have without the checker,
// SIGKILL; a death by signal reported from the program's record region, issue 17, its frames in a
// library loaded after start named), a report signal sent to the launcher, a forked child's own report, --exitcode; and
// the report is the program's own (tests/fixtures/leak_endings.c, tests/fixtures/leaky.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "launcher." + std::to_string(getpid()) + "." + name;
}

// Starts `args` (argv[0] a path) with stdout to /dev/null and stderr to `err`; its pid.
pid_t Start(const std::vector<std::string>& args, const std::string& err) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (!freopen("/dev/null", "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

struct Outcome {
  int raw = -1;  // the wait status, as a shell would see it
  std::string err;
};

Outcome RunToEnd(const std::vector<std::string>& args) {
  const std::string err = TempPath("stderr");
  Outcome run;
  waitpid(Start(args, err), &run.raw, 0);
  run.err = Slurp(err);
  return run;
}

std::vector<std::string> Launcher(std::vector<std::string> rest) {
  rest.insert(rest.begin(), {STACKWALK_LEAKCHECK, "--name-in=launcher", "--show-reachable"});
  return rest;
}

// A report with its run's own numbers (pids, tids, addresses under ASLR; the checker's own
// table, which grows with how the worker thread's allocations interleave) made uniform.
std::string Uniform(const std::string& report) {
  std::string out = std::regex_replace(report, std::regex("(process|tid) [0-9]+"), "$1 N");
  out = std::regex_replace(out, std::regex("own memory [^\n]*"), "own memory M");
  return std::regex_replace(out, std::regex("0x[0-9a-f]+"), "0xA");
}

TEST(LauncherNames, TheReportIsTheProgramsOwnAndTheKeptDumpRendersTheSame) {
  const std::string in_program = TempPath("program.txt"), in_launcher = TempPath("launcher.txt");
  const std::string dump = TempPath("leaks.dump");
  const Outcome own = RunToEnd({STACKWALK_LEAKCHECK, "--output", in_program, LEAKY_FIXTURE});
  const Outcome named = RunToEnd(Launcher({"--output", in_launcher, "--dump", dump, LEAKY_FIXTURE}));
  EXPECT_EQ(named.raw, own.raw);
  const std::string ours = Slurp(in_launcher), theirs = Slurp(in_program);
  ASSERT_NE(theirs.find("in fixture::LeakMallocs()"), std::string::npos) << theirs;
  // --show-reachable was the launcher's only difference: without it the two are the same.
  const std::string plain = TempPath("launcher-plain.txt");
  RunToEnd({STACKWALK_LEAKCHECK, "--name-in=launcher", "--output", plain, LEAKY_FIXTURE});
  EXPECT_EQ(Uniform(Slurp(plain)), Uniform(theirs));
  EXPECT_NE(ours.find("Reachable:"), std::string::npos) << ours;
  // The dump the launcher kept renders, later, byte for byte as the launcher rendered it.
  const std::string later = TempPath("later.txt");
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " -o " + later + " " + dump).c_str()), 0);
  EXPECT_EQ(Slurp(later), ours);
}

TEST(LauncherNames, ANormalExitAndAnUnderscoreExitPassTheirStatusAndReport) {
  for (const auto& [mode, status] : {std::pair<const char*, int>{"plain", 0}, {"_exit", 3},
                                     {"_Exit", 4}}) {
    const Outcome run = RunToEnd(Launcher({LEAK_ENDINGS, mode}));
    ASSERT_TRUE(WIFEXITED(run.raw)) << mode;
    EXPECT_EQ(WEXITSTATUS(run.raw), status) << mode;
    EXPECT_NE(run.err.find("leaks at exit (report 1)"), std::string::npos) << mode << run.err;
    EXPECT_NE(run.err.find("Reachable: 4321 byte(s) in 1 object(s)"), std::string::npos)
        << mode << run.err;
    EXPECT_NE(run.err.find("in endings_leak"), std::string::npos) << mode << run.err;
  }
}

TEST(LauncherNames, AFatalSignalEndsTheLauncherAsItEndsTheProgramAndLeavesTheCorePattern) {
  // No core files in the test's directory: the status is then the same, core bit included.
  const rlimit no_core = {0, 0};
  ASSERT_EQ(setrlimit(RLIMIT_CORE, &no_core), 0);
  const std::string pattern = Slurp("/proc/sys/kernel/core_pattern");
  for (const auto& [mode, signo] : {std::pair<const char*, int>{"segv", SIGSEGV},
                                    {"abort", SIGABRT}}) {
    const Outcome alone = RunToEnd({LEAK_ENDINGS, mode});
    ASSERT_TRUE(WIFSIGNALED(alone.raw) && WTERMSIG(alone.raw) == signo) << mode;
    const Outcome checked = RunToEnd(Launcher({LEAK_ENDINGS, mode}));
    EXPECT_EQ(checked.raw, alone.raw) << mode << checked.err;
    EXPECT_NE(checked.err.find(std::string("was killed by signal ") + std::to_string(signo)),
              std::string::npos) << mode << checked.err;
  }
  EXPECT_EQ(Slurp("/proc/sys/kernel/core_pattern"), pattern);
}

// The report a record region gives (issue 17): every block the program held at its death,
// unclassified, from the region the launcher read after it.
void ExpectRecordReport(const std::string& err, const std::string& signal_name) {
  EXPECT_NE(err.find("live allocations (report 1, on killed by " + signal_name + ")"),
            std::string::npos) << err;
  EXPECT_NE(err.find("unclassified (no memory was left to scan)"), std::string::npos) << err;
  EXPECT_NE(err.find("no reachability scan ran: every live block is listed"), std::string::npos)
      << err;
  EXPECT_NE(err.find("Live: 4321 byte(s) in 1 object(s) allocated from:\n    #0 "),
            std::string::npos) << err;
  EXPECT_NE(err.find(" in endings_leak at "), std::string::npos) << err;
  EXPECT_NE(err.find("first allocated by thread leak_endings (tid "), std::string::npos) << err;
  EXPECT_EQ(err.find("leaks at exit"), std::string::npos) << err;
  EXPECT_EQ(err.find("the record is incomplete"), std::string::npos) << err;
}

// Under `ulimit -f 256` the record region (its header alone ~330 KB) cannot grow: ftruncate
// would raise SIGXFSZ and kill the program at start. It runs without the region and reports.
TEST(LauncherNames, AFileSizeLimitBelowTheRecordNeitherKillsTheProgramNorItsReport) {
  const std::string script = std::string("ulimit -f 256; exec ") + LEAK_ENDINGS + " plain";
  const Outcome run = RunToEnd(Launcher({"/bin/sh", "-c", script}));
  ASSERT_TRUE(WIFEXITED(run.raw)) << run.err;
  EXPECT_EQ(WEXITSTATUS(run.raw), 0) << run.err;
  EXPECT_NE(run.err.find("leaks at exit (report 1)"), std::string::npos) << run.err;
}

TEST(LauncherNames, AProgramKilledBySigkillIsReportedFromItsRecord) {
  const Outcome run = RunToEnd(Launcher({LEAK_ENDINGS, "kill-self"}));
  ASSERT_TRUE(WIFSIGNALED(run.raw)) << run.err;
  EXPECT_EQ(WTERMSIG(run.raw), SIGKILL);
  EXPECT_NE(run.err.find("was killed by signal 9"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("its record at its death is reported (unclassified)"), std::string::npos)
      << run.err;
  ExpectRecordReport(run.err, "SIGKILL");
}

// A library dlopen'ed after start: the record's module list is written again once a new stack
// runs through it, so the killed program's block made in it is named, not given as an address.
TEST(LauncherNames, AKilledProgramsFramesInALibraryLoadedLaterAreNamed) {
  const Outcome run = RunToEnd(Launcher({LATE_LIBRARY, LEAKY_PLUGIN}));
  ASSERT_TRUE(WIFSIGNALED(run.raw) && WTERMSIG(run.raw) == SIGKILL) << run.err;
  EXPECT_NE(run.err.find("live allocations (report 1, on killed by SIGKILL)"), std::string::npos)
      << run.err;
  const size_t block = run.err.find("Live: 333 byte(s) in 1 object(s) allocated from:\n    #0 ");
  ASSERT_NE(block, std::string::npos) << run.err;
  const std::string frames = run.err.substr(block, run.err.find("\n\n", block) - block);
  EXPECT_NE(frames.find(" in PluginLeak at "), std::string::npos) << frames;
  EXPECT_NE(frames.find("libleaky_plugin.so+0x"), std::string::npos) << frames;
  EXPECT_NE(frames.find(" in main at "), std::string::npos) << frames;
  EXPECT_EQ(run.err.find("the record is incomplete"), std::string::npos) << run.err;
}

// Sampling: the record holds the sampled blocks only, so its report gives their estimates and
// says so (the 4321-byte block, above the mean, is recorded for certain and stands for itself).
TEST(LauncherNames, ASampledProgramsRecordSaysItsFiguresAreEstimates) {
  const Outcome run = RunToEnd(
      Launcher({"--sample-bytes", "1024", "--sample-seed", "3", LEAK_ENDINGS, "kill-self"}));
  ASSERT_TRUE(WIFSIGNALED(run.raw) && WTERMSIG(run.raw) == SIGKILL) << run.err;
  EXPECT_NE(run.err.find("sampled: mean 1024 bytes, figures are estimates"), std::string::npos)
      << run.err;
  ExpectRecordReport(run.err, "SIGKILL");
}

TEST(LauncherNames, SigsegvAndSigabrtAreReportedFromTheRecordWithTheirStatus) {
  const rlimit no_core = {0, 0};
  ASSERT_EQ(setrlimit(RLIMIT_CORE, &no_core), 0);
  for (const auto& [mode, signo, name] :
       {std::tuple<const char*, int, const char*>{"segv", SIGSEGV, "SIGSEGV"},
        {"abort", SIGABRT, "SIGABRT"}}) {
    const Outcome alone = RunToEnd({LEAK_ENDINGS, mode});
    const Outcome checked = RunToEnd(Launcher({LEAK_ENDINGS, mode}));
    EXPECT_EQ(checked.raw, alone.raw) << mode;
    ExpectRecordReport(checked.err, name);
  }
}

TEST(LauncherNames, AForkedChildKeepsItsOwnReportAndLeavesItsParentsRecordAlone) {
  const Outcome run = RunToEnd(Launcher({LEAK_ENDINGS, "fork-kill"}));
  ASSERT_TRUE(WIFSIGNALED(run.raw)) << run.err;
  EXPECT_EQ(WTERMSIG(run.raw), SIGKILL);
  // The child's own report at its exit: its 20000 blocks.
  EXPECT_NE(run.err.find("leaks at exit (report 1)"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("1544321 bytes in 20001 allocations still reachable"), std::string::npos)
      << run.err;
  // The parent's record: what it made before and after the fork, none of the child's.
  const size_t record = run.err.find("stackwalk-leakcheck: the report below is the program's record");
  ASSERT_NE(record, std::string::npos) << run.err;
  const std::string parents = run.err.substr(record);
  ExpectRecordReport(parents, "SIGKILL");
  EXPECT_NE(parents.find("Live: 5500 byte(s) in 100 object(s) allocated from:\n    #0 "),
            std::string::npos) << parents;
  EXPECT_NE(parents.find(" in endings_after_fork_block at "), std::string::npos) << parents;
  EXPECT_EQ(parents.find("endings_child_block"), std::string::npos) << parents;
  EXPECT_EQ(parents.find(" 77 byte"), std::string::npos) << parents;
}

// A forked child killed by SIGKILL: its own region, handed to the launcher at the fork, is
// reported as that child (its pid): the 25 blocks it made and the block it inherited. The launcher
// is not its parent: it names the signal where the kernel tells it (PIDFD_GET_INFO's exit code,
// Linux 6.15, or the zombie's stat before the parent reaps it), else says it could not see.
TEST(LauncherNames, AForkedChildKilledBySigkillIsReportedFromItsOwnRecord) {
 for (const char* naming : {"--name-in=launcher", "--name-in=program"}) {
  SCOPED_TRACE(naming);
  const Outcome run = RunToEnd(Launcher({naming, LEAK_ENDINGS, "fork-child-killed"}));
  ASSERT_TRUE(WIFEXITED(run.raw)) << run.err;
  EXPECT_EQ(WEXITSTATUS(run.raw), 0) << run.err;
  std::smatch child;
  ASSERT_TRUE(std::regex_search(run.err, child, std::regex(
      "the report below is the record of process ([0-9]+) \\(a forked child of the program\\)")))
      << run.err;
  // Naming in the program, the program's own report may come between the launcher's line and
  // the record's report (two writers of one stderr): the record is found by its header.
  std::smatch header;
  ASSERT_TRUE(std::regex_search(run.err, header, std::regex(
      "live allocations \\(report 1, on (killed by SIGKILL|an end the launcher could not see)\\)\n"
      "==stackwalk-leakcheck== process " + child[1].str() + " \\(")))
      << run.err;
  const size_t record = static_cast<size_t>(header.position(0));
  const std::string childs = run.err.substr(record, run.err.find("SUMMARY", record) - record);
  EXPECT_NE(childs.find("Live: 1925 byte(s) in 25 object(s) allocated from:\n    #0 "),
            std::string::npos) << childs;
  EXPECT_NE(childs.find(" in endings_child_block at "), std::string::npos) << childs;
  EXPECT_NE(childs.find("Live: 4321 byte(s) in 1 object(s)"), std::string::npos) << childs;
  EXPECT_TRUE(std::regex_search(run.err, std::regex(
      "process " + child[1].str() + " \\(a forked child\\) (was killed by signal 9|ended without)")))
      << run.err;
  // The parent's own report at exit, without the child's blocks.
  const size_t parent = run.err.find("leaks at exit (report 1)");
  ASSERT_NE(parent, std::string::npos) << run.err;
  const std::string parents = run.err.substr(parent, run.err.find("SUMMARY", parent) - parent);
  EXPECT_EQ(parents.find("endings_child_block"), std::string::npos) << parents;
  EXPECT_EQ(parents.find("process " + child[1].str()), std::string::npos) << parents;
 }
}

// A forked child that reports after the program ended: the launcher waits for it by default
// (until the dump pipe's last write end is closed), and its report is rendered.
TEST(LauncherNames, AChildThatOutlivesTheProgramIsWaitedForAndReported) {
  const std::string go = TempPath("go");
  std::ofstream(go).put('\n');
  const Outcome run = RunToEnd(Launcher({LEAK_ENDINGS, "fork-outlive", go}));
  std::remove(go.c_str());
  ASSERT_TRUE(WIFEXITED(run.raw)) << run.err;
  EXPECT_EQ(WEXITSTATUS(run.raw), 0) << run.err;
  // The program's report and its child's, each at its exit.
  const size_t first = run.err.find("leaks at exit (report 1)");
  ASSERT_NE(first, std::string::npos) << run.err;
  EXPECT_NE(run.err.find("leaks at exit (report 1)", first + 1), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("Reachable: 2345 byte(s) in 1 object(s)"), std::string::npos) << run.err;
}

// A wait for children that outlive the program is said once it lasts (a daemon left behind must
// not look like a hung launcher), and the child's report still comes at its end.
TEST(LauncherNames, ALongWaitForChildrenIsSaidAndTheirReportsStillCome) {
  const std::string go = TempPath("go"), err = TempPath("stderr");
  std::remove(go.c_str());
  const pid_t launcher = Start(Launcher({LEAK_ENDINGS, "fork-outlive", go}), err);
  // The child waits for GO, so the launcher waits for the child until it says so (bounded: a
  // launcher that never says it fails the test instead of hanging it).
  bool said = false;
  for (int i = 0; i < 6000 && !said; ++i) {
    said = Slurp(err).find("waiting for the checked processes it left running") != std::string::npos;
    if (!said) usleep(10000);
  }
  std::ofstream(go).put('\n');
  Outcome run;
  waitpid(launcher, &run.raw, 0);
  run.err = Slurp(err);
  std::remove(go.c_str());
  EXPECT_TRUE(said) << run.err;
  ASSERT_TRUE(WIFEXITED(run.raw)) << run.err;
  EXPECT_EQ(WEXITSTATUS(run.raw), 0) << run.err;
  EXPECT_NE(run.err.find("(--wait-children=0 does not wait)"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("Reachable: 2345 byte(s) in 1 object(s)"), std::string::npos) << run.err;
}

// A forked child that execs a program the checker does not check (no --follow-exec) is not
// waited for: its end would report nothing. A shell's `sleep 30 &` outlives the launcher.
TEST(LauncherNames, AChildThatExecsAnUncheckedProgramIsNotWaitedFor) {
  const std::string pid_file = TempPath("sleep.pid");
  std::remove(pid_file.c_str());
  const Outcome run = RunToEnd(
      Launcher({"/bin/sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $! >" + pid_file}));
  ASSERT_TRUE(WIFEXITED(run.raw)) << run.err;
  EXPECT_EQ(WEXITSTATUS(run.raw), 0) << run.err;
  const pid_t sleeper = static_cast<pid_t>(std::atoi(Slurp(pid_file).c_str()));
  ASSERT_GT(sleeper, 0);
  // The launcher has ended while the sleep still runs (waiting for it, it would end after it).
  // (Ended, it may linger as a zombie of whatever reaps orphans here: its state says.)
  const std::string stat = Slurp("/proc/" + std::to_string(sleeper) + "/stat");
  const size_t name_end = stat.rfind(')');
  ASSERT_NE(name_end, std::string::npos) << "the sleep is gone: the launcher waited for it\n"
                                         << run.err;
  EXPECT_NE(stat.substr(name_end, 4), ") Z ") << "the launcher waited for the exec'd child\n"
                                              << run.err;
  kill(sleeper, SIGKILL);
}

// --wait-children=0 (a program that leaves a daemon): the launcher ends with the program; the
// child, held back until then, is not reported.
TEST(LauncherNames, WithoutWaitingForChildrenTheLauncherEndsWithTheProgram) {
  const std::string go = TempPath("go");
  std::remove(go.c_str());
  const Outcome run = RunToEnd(Launcher({"--wait-children=0", LEAK_ENDINGS, "fork-outlive", go}));
  std::ofstream(go).put('\n');  // the child may end now (its report has no reader)
  ASSERT_TRUE(WIFEXITED(run.raw)) << run.err;
  EXPECT_EQ(WEXITSTATUS(run.raw), 0) << run.err;
  EXPECT_NE(run.err.find("leaks at exit (report 1)"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("2345 byte(s)"), std::string::npos) << run.err;
  const Outcome bad = RunToEnd({STACKWALK_LEAKCHECK, "--wait-children=2", LEAK_ENDINGS});
  EXPECT_EQ(WEXITSTATUS(bad.raw), 2) << bad.err;
  EXPECT_NE(bad.err.find("bad value '2' for --wait-children (0 or 1)"), std::string::npos)
      << bad.err;
}

TEST(LauncherNames, TheRecordsReportIsKeptAsADumpThatRendersTheSame) {
  const std::string out = TempPath("killed.txt"), dump = TempPath("killed.%p.dump");
  const Outcome run = RunToEnd(Launcher({"--output", out, "--dump", dump, LEAK_ENDINGS, "kill-self"}));
  ASSERT_TRUE(WIFSIGNALED(run.raw) && WTERMSIG(run.raw) == SIGKILL) << run.err;
  const std::string report = Slurp(out);
  ASSERT_NE(report.find("on killed by SIGKILL"), std::string::npos) << report << run.err;
  const std::smatch pid = [&] {
    std::smatch m;
    std::regex_search(report, m, std::regex("process ([0-9]+)"));
    return m;
  }();
  ASSERT_FALSE(pid.empty());
  const std::string kept = TempPath("killed." + pid[1].str() + ".dump");
  const std::string later = TempPath("killed-later.txt");
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " -o " + later + " " + kept).c_str()), 0);
  EXPECT_EQ(Slurp(later), report);
}

TEST(LauncherNames, NamingInTheProgramTheLauncherStillReportsAKilledProgramsRecord) {
  for (const auto& [mode, signo, name] :
       {std::tuple<const char*, int, const char*>{"kill-self", SIGKILL, "SIGKILL"},
        {"segv", SIGSEGV, "SIGSEGV"}}) {
    const rlimit no_core = {0, 0};
    ASSERT_EQ(setrlimit(RLIMIT_CORE, &no_core), 0);
    const Outcome run = RunToEnd({STACKWALK_LEAKCHECK, "--name-in=program", LEAK_ENDINGS, mode});
    ASSERT_TRUE(WIFSIGNALED(run.raw)) << run.err;
    EXPECT_EQ(WTERMSIG(run.raw), signo);
    ExpectRecordReport(run.err, name);
  }
  // In the format the options ask for, after what the program wrote to the same file.
  const std::string out = TempPath("killed.json");
  const Outcome json = RunToEnd({STACKWALK_LEAKCHECK, "--name-in=program", "--format=json", "-o",
                                 out, LEAK_ENDINGS, "kill-self"});
  ASSERT_TRUE(WIFSIGNALED(json.raw) && WTERMSIG(json.raw) == SIGKILL) << json.err;
  const std::string text = Slurp(out);
  EXPECT_EQ(text.substr(0, 1), "{") << text;
  EXPECT_NE(text.find("killed by SIGKILL"), std::string::npos) << text;
  EXPECT_NE(text.find("endings_leak"), std::string::npos) << text;
}

TEST(LauncherNames, TheReportSignalSentToTheLauncherReachesTheProgram) {
  const std::string ready = TempPath("ready"), go = TempPath("go"), err = TempPath("signal.err");
  std::remove(ready.c_str());
  std::remove(go.c_str());
  const pid_t launcher =
      Start(Launcher({"--report-signal", "SIGUSR2", LEAK_ENDINGS, "wait", ready, go}), err);
  // Bounded waits for conditions, not timings: a minute before giving up.
  for (int i = 0; i < 6000 && access(ready.c_str(), F_OK) != 0; ++i) usleep(10000);
  ASSERT_EQ(access(ready.c_str(), F_OK), 0);
  ASSERT_EQ(kill(launcher, SIGUSR2), 0);
  for (int i = 0; i < 6000 && Slurp(err).find("SUMMARY") == std::string::npos; ++i) {
    usleep(10000);
  }
  const std::string during = Slurp(err);
  std::ofstream(go).put('\n');
  int raw = -1;
  waitpid(launcher, &raw, 0);
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw;
  // The signal's report came while the program still ran, before its exit report.
  EXPECT_NE(during.find("leaks (report 1, on signal " + std::to_string(SIGUSR2) + ")"),
            std::string::npos) << during;
  EXPECT_EQ(during.find("leaks at exit"), std::string::npos) << during;
  const std::string all = Slurp(err);
  EXPECT_NE(all.find("leaks at exit (report 2)"), std::string::npos) << all;
}

TEST(LauncherNames, TwoProcessesReportingAtOnceKeepTheirDumpsWhole) {
  // Dumps of 4000 and 8000 blocks, far over the pipe's 64 KiB, written by two processes at once.
  const std::string ready = TempPath("both.ready"), go = TempPath("both.go");
  const std::string err = TempPath("both.err");
  std::system(("rm -f " + ready + ".* " + go).c_str());
  const pid_t launcher = Start(
      Launcher({"--report-signal", "SIGUSR2", LEAK_ENDINGS, "fork-wait", ready, go}), err);
  std::vector<pid_t> pids;
  for (int i = 0; i < 6000 && pids.size() < 2; ++i) {
    usleep(10000);
    pids.clear();
    const std::string listing = TempPath("both.list");
    std::system(("ls " + ready + ".* 2>/dev/null >" + listing).c_str());
    std::istringstream files(Slurp(listing));
    for (std::string file; std::getline(files, file);) {
      pids.push_back(std::stoi(file.substr(file.rfind('.') + 1)));
    }
  }
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) ASSERT_EQ(kill(pid, SIGUSR2), 0);
  for (int i = 0; i < 6000; ++i) {
    const std::string text = Slurp(err);
    size_t summaries = 0;
    for (size_t at = 0; (at = text.find("SUMMARY", at)) != std::string::npos; ++at) ++summaries;
    if (summaries >= 2 || text.find("unreadable") != std::string::npos) break;
    usleep(10000);
  }
  std::ofstream(go).put('\n');
  int raw = -1;
  waitpid(launcher, &raw, 0);
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw;
  const std::string all = Slurp(err);
  EXPECT_EQ(all.find("unreadable"), std::string::npos) << all.substr(0, 2000);
  for (pid_t pid : pids) {
    EXPECT_NE(all.find("process " + std::to_string(pid) + " "), std::string::npos) << pid;
  }
  EXPECT_NE(all.find("(report 1, on signal " + std::to_string(SIGUSR2) + ")"), std::string::npos);
  std::system(("rm -f " + ready + ".* " + go).c_str());
}

TEST(LauncherNames, AForkedChildReportsAsItselfToAFileOfItsOwn) {
  const std::string pattern = TempPath("fork.%p.txt");
  const Outcome run = RunToEnd(Launcher({"--output", pattern, LEAK_ENDINGS, "fork"}));
  ASSERT_TRUE(WIFEXITED(run.raw) && WEXITSTATUS(run.raw) == 0) << run.err;
  std::smatch m;
  const std::string listing = TempPath("fork.list");
  std::system(("ls " + TempPath("fork.") + "*.txt >" + listing).c_str());
  std::istringstream files(Slurp(listing));
  int reports = 0, with_child_block = 0;
  for (std::string file; std::getline(files, file); ++reports) {
    const std::string text = Slurp(file);
    const std::string pid = file.substr(file.rfind("fork.") + 5);
    EXPECT_NE(text.find("process " + pid.substr(0, pid.find('.')) + " "), std::string::npos)
        << file << text;
    EXPECT_NE(text.find(" 4321 byte(s) in 1 object(s)"), std::string::npos) << text;
    if (text.find("Reachable: 1234 byte(s)") != std::string::npos) ++with_child_block;
    std::remove(file.c_str());
  }
  EXPECT_EQ(reports, 2);
  EXPECT_EQ(with_child_block, 1);
}

TEST(LauncherNames, ExitcodeIsDecidedFromTheNamedReport) {
  const Outcome leaky = RunToEnd({STACKWALK_LEAKCHECK, "--name-in=launcher", "--exitcode", "42",
                              LEAKY_FIXTURE});
  EXPECT_TRUE(WIFEXITED(leaky.raw) && WEXITSTATUS(leaky.raw) == 42) << leaky.err;
  // leak_endings's block stays reachable: no leak, its own status.
  const Outcome clean = RunToEnd(Launcher({"--exitcode", "42", LEAK_ENDINGS, "_exit"}));
  EXPECT_TRUE(WIFEXITED(clean.raw) && WEXITSTATUS(clean.raw) == 3) << clean.err;
  // A suppressed leak is no leak: the launcher applies the suppressions before deciding.
  const std::string supp = TempPath("all.supp");
  std::ofstream(supp) << "leak:fixture::\nleak:LeakFromThread\nleak:main\n";
  const Outcome suppressed = RunToEnd({STACKWALK_LEAKCHECK, "--name-in=launcher", "--exitcode", "42",
                                   "--suppressions", supp, LEAKY_FIXTURE});
  EXPECT_TRUE(WIFEXITED(suppressed.raw) && WEXITSTATUS(suppressed.raw) != 42) << suppressed.err;
}

TEST(LauncherNames, EachPeriodicCheckReportComesAsADumpAndIsNamedByTheLauncher) {
  // leak_checks leaks 5001, 5002, 5003 bytes, one per check, and waits for each check.
  const Outcome run = RunToEnd({STACKWALK_LEAKCHECK, "--name-in=launcher", "--check-interval", "1",
                                LEAK_CHECKS, "periodic", "preload"});
  ASSERT_TRUE(WIFEXITED(run.raw) && WEXITSTATUS(run.raw) == 0) << run.err;
  const size_t first = run.err.find("on check 1: leaks found since the start)");
  const size_t second = run.err.find("on check 2: leaks found since check 1)");
  const size_t at_exit = run.err.find("leaks at exit (report");
  ASSERT_NE(first, std::string::npos) << run.err;
  ASSERT_NE(second, std::string::npos) << run.err;
  ASSERT_NE(at_exit, std::string::npos) << run.err;
  EXPECT_LT(first, second);
  EXPECT_LT(second, at_exit);
  EXPECT_NE(run.err.find("Direct leak of 5001 byte(s) in 1 object(s)"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("Direct leak of 15006 byte(s) in 3 object(s)", at_exit),
            std::string::npos) << run.err;
}

TEST(LauncherNames, ABadNameInValueIsACommandLineError) {
  const Outcome run = RunToEnd({STACKWALK_LEAKCHECK, "--name-in=elsewhere", LEAK_ENDINGS});
  EXPECT_TRUE(WIFEXITED(run.raw) && WEXITSTATUS(run.raw) == 2);
  EXPECT_NE(run.err.find("bad value 'elsewhere' for --name-in"), std::string::npos) << run.err;
}

// Whether `pid` is gone or a zombie (the program is the launcher's child, not this test's).
bool Ended(pid_t pid) {
  const std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return stat.empty() || (paren != std::string::npos && paren + 2 < stat.size() &&
                          stat[paren + 2] == 'Z');
}

// --name-in=launcher (the default) too: a launcher killed takes its program with it, which would
// otherwise run on unreported (and, writing its dump into the dead pipe, die of SIGPIPE).
TEST(LauncherNames, AKilledLauncherTakesItsProgramWithItInEitherNamingMode) {
  for (const char* mode : {"--name-in=launcher", "--name-in=program"}) {
    const std::string pid_file = TempPath("program.pid");
    std::remove(pid_file.c_str());
    const std::string script = "echo $$ > " + pid_file + "; exec sleep 60";
    const pid_t launcher =
        Start({STACKWALK_LEAKCHECK, mode, "/bin/sh", "-c", script}, TempPath("stderr"));
    std::string text;
    for (int i = 0; i < 20000 && (text = Slurp(pid_file)).find('\n') == std::string::npos; ++i) {
      usleep(1000);
    }
    const pid_t program = static_cast<pid_t>(std::atol(text.c_str()));
    ASSERT_GT(program, 0) << mode;
    kill(launcher, SIGKILL);
    int status = 0;
    waitpid(launcher, &status, 0);
    // Bounded: the kernel kills it at once; 20 s is only a cap on a machine under load.
    for (int i = 0; i < 20000 && !Ended(program); ++i) usleep(1000);
    EXPECT_TRUE(Ended(program)) << mode << ": the program outlived its launcher";
    if (!Ended(program)) kill(program, SIGKILL);
  }
}

}  // namespace
