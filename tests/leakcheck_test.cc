// stackwalk-leakcheck on a fixture whose leaks are known by construction (tests/fixtures/
// leaky.cc): exact bytes and counts per allocating site, names and file:line in the stacks, the
// other thread's allocation, nothing for a program that frees everything, and the exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "leakcheck_run.h"

namespace {

const std::string kFixture = LEAKY_FIXTURE;

// The worker's 4096-byte block is still reachable at exit (a word of the exited thread's stack,
// which glibc keeps cached, points to it; valgrind agrees): a leak only with --show-reachable.
TEST(Leakcheck, ReportsEachLeakingSiteWithExactBytesAndStack) {
  LaunchResult run = Leakcheck("--show-reachable " + kFixture);
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 364 bytes leaked in 4 allocations."),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("== 4096 bytes in 1 allocation still reachable\n"), std::string::npos)
      << run.report;

  std::string mallocs = LeakBlock(run.report, "300 bytes in 3 allocations");
  ASSERT_FALSE(mallocs.empty()) << run.report;
  EXPECT_NE(mallocs.find("in fixture::LeakMallocs() at "), std::string::npos) << mallocs;
  // The line of LeakMallocs()'s malloc.
  const int line = Sites(LEAKY_SOURCE).at("LeakMallocs");
  EXPECT_NE(mallocs.find("leaky.cc:" + std::to_string(line) + ":"), std::string::npos) << mallocs;
  EXPECT_NE(mallocs.find(" in main at "), std::string::npos) << mallocs;
  // The hooks' own frames are not shown: the first frame is the program's.
  EXPECT_NE(mallocs.find("allocated from:\n    #0 0x"), std::string::npos);
  EXPECT_EQ(mallocs.find("libstackwalk_leakcheck"), std::string::npos) << mallocs;
  EXPECT_EQ(mallocs.find("leakcheck::"), std::string::npos) << mallocs;

  std::string node = LeakBlock(run.report, "64 bytes in 1 allocation");
  EXPECT_NE(node.find("in fixture::LeakNode() at "), std::string::npos) << run.report;

  std::string thread = LeakBlock(run.report, "4096 bytes in 1 allocation");
  EXPECT_NE(thread.find("in fixture::LeakOnThread(void*) at "), std::string::npos) << run.report;
  EXPECT_EQ(thread.find(" in main at "), std::string::npos) << thread;

  // Leaks first, largest first, then the reachable blocks; the other thread's id differs from
  // the main thread's.
  EXPECT_LT(run.report.find("Direct leak of 300 byte(s)"), run.report.find("Direct leak of 64 byte(s)"));
  EXPECT_LT(run.report.find("Direct leak of 64 byte(s)"), run.report.find("Reachable: 4096 byte(s)"));
  std::smatch main_tid, other_tid;
  std::regex tid("by thread (\\S+) \\(tid (\\d+)\\)");
  ASSERT_TRUE(std::regex_search(mallocs, main_tid, tid));
  ASSERT_TRUE(std::regex_search(thread, other_tid, tid));
  EXPECT_NE(main_tid[2].str(), other_tid[2].str());
  // Names: the program's, and the one the worker took after its allocation (kept at its exit).
  EXPECT_EQ(main_tid[1].str(), "leaky");
  EXPECT_EQ(other_tid[1].str(), "leak-worker");
  // The header gives each thread's live bytes.
  EXPECT_NE(run.report.find("== thread leak-worker (tid " + other_tid[2].str() +
                            "): 4096 bytes live in 1 allocation, peak 4096 bytes\n"),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("== thread leaky (tid " + main_tid[2].str() + "): "),
            std::string::npos) << run.report;
}

// Captures start at the program's call of the allocator (src/api/call_site_capture.h): none of
// the hooks' frames takes a place among the kept ones. Before, --max-frames 2 kept two of the
// checker's own frames and the report had no frame left to show.
TEST(Leakcheck, MaxFramesCountsTheProgramsFrames) {
#if defined(__arm__) || (defined(__aarch64__) && defined(__clang__))
  GTEST_SKIP() << "captured from inside the checker here (its frames count in --max-frames)";
#endif
  LaunchResult run = Leakcheck("--max-frames 2 " + kFixture);
  std::string mallocs = LeakBlock(run.report, "300 bytes in 3 allocations");
  ASSERT_FALSE(mallocs.empty()) << run.report;
  EXPECT_NE(mallocs.find("allocated from:\n    #0 0x"), std::string::npos) << mallocs;
  EXPECT_NE(mallocs.find("in fixture::LeakMallocs() at "), std::string::npos) << mallocs;
  EXPECT_NE(mallocs.find("\n    #1 0x"), std::string::npos) << mallocs;
  EXPECT_EQ(mallocs.find("\n    #2 0x"), std::string::npos) << mallocs;
}

TEST(Leakcheck, EveryAllocatorFormFreedMeansNoLeak) {
  LaunchResult run = Leakcheck(kFixture + " clean");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << run.report;
  EXPECT_EQ(run.report.find("leak of"), std::string::npos) << run.report;
}

// A clean exit says nothing on stderr under the preload alone, as under LeakSanitizer: a build's
// checks read the stderr of the programs they run (a cmake configure with every process
// preloaded failed when each wrote its clean report there). A leak is reported there; a clean
// report is written when asked (report_clean=1), to a file, and for the program the launcher
// runs, wherever its report is named, but not for the programs it starts with --follow-exec.
TEST(Leakcheck, ACleanExitIsSilentOnStderrUnlessAsked) {
  const std::string preload = STACKWALK_LEAKCHECK_PRELOAD;
  const std::string clean_summary = "SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations.";
  auto stderr_of = [&](const std::string& options, const std::string& args) {
    return Output("LD_PRELOAD=" + preload + " STACKWALK_LEAKCHECK='" + options + "' " + kFixture +
                  " " + args + " 2>&1 >/dev/null");
  };
  EXPECT_EQ(stderr_of("", "clean"), "");
  EXPECT_EQ(stderr_of("format=json", "clean"), "");
  EXPECT_NE(stderr_of("", "").find("SUMMARY: stackwalk-leakcheck: 364 bytes leaked in 4 allocations."),
            std::string::npos);
  EXPECT_NE(stderr_of("report_clean=1", "clean").find(clean_summary), std::string::npos);
  const std::string file = ::testing::TempDir() + "clean." + std::to_string(getpid()) + ".txt";
  EXPECT_EQ(stderr_of("output=" + file, "clean"), "");
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(clean_summary), std::string::npos) << text;
  for (const char* name_in : {"launcher", "program"}) {
    EXPECT_NE(Output(std::string(STACKWALK_LEAKCHECK) + " --name-in=" + name_in + " " + kFixture +
                     " clean 2>&1 >/dev/null")
                  .find(clean_summary),
              std::string::npos)
        << name_in;
  }
  // A child the launcher's program forks is below it too, and quiet when clean: one report, the
  // shell's, for `( exit 0 )` (a forked subshell that exits).
  const std::string forked = Output(std::string(STACKWALK_LEAKCHECK) +
                                    " --name-in=program -- /bin/sh -c '( exit 0 ); true' 2>&1 >/dev/null");
  EXPECT_NE(forked.find(clean_summary), std::string::npos) << forked;
  EXPECT_EQ(forked.find(clean_summary), forked.rfind(clean_summary)) << forked;
  // The shell is the launcher's program; the fixture, forked and exec'd below it, is not.
  const std::string below = Output(std::string(STACKWALK_LEAKCHECK) +
                                   " --name-in=program --follow-exec -- /bin/sh -c '" + kFixture +
                                   " clean; true' 2>&1 >/dev/null");
  EXPECT_NE(below.find(clean_summary), std::string::npos) << below;
  EXPECT_EQ(below.find("leaky)"), std::string::npos) << below;
  EXPECT_EQ(below.find(clean_summary), below.rfind(clean_summary)) << below;
}

// A program that a process below the launcher's program execs is not checked (no --follow-exec):
// it starts without the library (which it loaded, with the C++ runtime, only to close the
// launcher's descriptors: ~1.5 ms a process), and those descriptors close at the exec. The
// launcher's program's own exec (a wrapper script's) keeps it, as every exec does with
// --follow-exec; another library in LD_PRELOAD stays.
TEST(Leakcheck, AProgramExecdBelowTheCheckedOneStartsWithoutTheLibrary) {
  // The lines of the library in the maps of the process that reads them (grep, exec'd).
  const std::string lines = "exec grep -c libstackwalk_leakcheck.so /proc/self/maps";
  const std::string launcher = std::string(STACKWALK_LEAKCHECK) + " --output /dev/null";
  EXPECT_EQ(Output(launcher + " -- /bin/sh -c '(" + lines + "); true'"), "0\n");
  EXPECT_NE(Output(launcher + " -- /bin/sh -c '" + lines + "'"), "0\n");
  EXPECT_NE(Output(launcher + " --follow-exec -- /bin/sh -c '(" + lines + "); true'"), "0\n");
  // Another library in LD_PRELOAD stays (the loader cannot find this one: it says so on stderr
  // and goes on).
  EXPECT_EQ(Output("LD_PRELOAD=/nonexistent/libother.so " + launcher +
                   " -- /bin/sh -c '(exec printenv LD_PRELOAD); true' 2>/dev/null"),
            "/nonexistent/libother.so\n");
  // The exec'd program holds none of the launcher's descriptors (497 children, 499 dump) where
  // the forked shell did (its region is a memfd of its own, closed at the exec; 498, its
  // parent's, it closed at the fork).
  EXPECT_EQ(Output(launcher + " --name-in=launcher -- /bin/sh -c '(test -e /dev/fd/497 && "
                   "test -e /dev/fd/499 && echo held; exec ls /proc/self/fd/) | "
                   "grep -x -e held -e 497 -e 499'"),
            "held\n");
}

// A process the launcher does not check let go of the launcher's descriptors at its start; the
// numbers may then hold files of its own (here bash's pipe at 499, where the dump pipe was),
// which its execs must leave open: only a checked process's are set to close at an exec.
TEST(Leakcheck, AnUncheckedProcessKeepsItsOwnFilesAtTheLaunchersNumbers) {
  EXPECT_EQ(Output(std::string("STACKWALK_LEAKCHECK_PID=1 STACKWALK_LEAKCHECK_DUMP_FD=499 "
                               "LD_PRELOAD=") +
                   STACKWALK_LEAKCHECK_PRELOAD +
                   " bash -c 'exec 499< <(echo read); cat /dev/fd/499' 2>&1"),
            "read\n");
}

// exit() frees the blocks of its list of exit handlers after the handler that writes the report
// has run: they are the C library's, not leaks (a C++ program with many static destructors
// registers that many handlers).
TEST(Leakcheck, TheExitHandlerListIsNotALeak) {
  LaunchResult run = Leakcheck(kFixture + " atexit 100");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << run.report;
  EXPECT_EQ(run.report.find("__new_exitfn"), std::string::npos) << run.report;
}

// The symbolizer (libdw, abseil, ...) is loaded only when a report has stacks to name: a checked
// program starts with the recording half alone.
TEST(Leakcheck, TheSymbolizerIsLoadedOnlyForAReport) {
  const std::string maps = Output(std::string(STACKWALK_LEAKCHECK) +
                                  " --follow-exec --output /dev/null -- /bin/sh -c "
                                  "'grep -q libstackwalk_leakcheck.so /proc/self/maps && echo checked; "
                                  "grep -c -e libdw.so -e libelf -e libstackwalk_symbolize /proc/self/maps'");
  EXPECT_EQ(maps, "checked\n0\n") << "checked, and without the symbolizer's libraries";
  // Without its names library beside it, the checker still reports every leak, by object+offset.
  const std::string dir = ::testing::TempDir() + "nonames." + std::to_string(getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir + " && cp " +
                         STACKWALK_LEAKCHECK_PRELOAD + " " + dir + "/").c_str()),
            0);
  const std::string report = dir + "/report.txt";
  ASSERT_EQ(std::system(("LD_PRELOAD=" + dir + "/libstackwalk_leakcheck.so STACKWALK_LEAKCHECK=output=" +
                         report + " " + kFixture + " >/dev/null 2>&1").c_str()),
            0);
  std::ifstream in(report);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("SUMMARY: stackwalk-leakcheck: 364 bytes leaked in 4 allocations."),
            std::string::npos) << text;
  EXPECT_NE(text.find("frames are not named: "), std::string::npos) << text;
  std::string mallocs = LeakBlock(text, "300 bytes in 3 allocations");
  EXPECT_NE(mallocs.find("#0 0x"), std::string::npos) << text;
  EXPECT_NE(mallocs.find("(" + kFixture + "+0x"), std::string::npos) << text;
}

TEST(Leakcheck, FramePointerMethodFindsTheSameLeaks) {
  LaunchResult run = Leakcheck("--method fp " + kFixture);
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 364 bytes leaked in 4 allocations."),
            std::string::npos) << run.report;
  EXPECT_NE(LeakBlock(run.report, "300 bytes in 3 allocations").find("fixture::LeakMallocs()"),
            std::string::npos) << run.report;
}

TEST(Leakcheck, MinSizeLeavesOutSmallAllocations) {
  LaunchResult run = Leakcheck("--min-size 90 " + kFixture);  // the 64-byte node is not recorded
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 300 bytes leaked in 3 allocations."),
            std::string::npos) << run.report;
}

TEST(Leakcheck, ExitStatusPassesThroughOrSignalsLeaks) {
  EXPECT_EQ(Leakcheck(kFixture + " exit 4").status, 4);
  EXPECT_EQ(Leakcheck("--exitcode 23 " + kFixture + " exit 4").status, 23);
  EXPECT_EQ(Leakcheck("--exitcode 23 " + kFixture + " clean").status, 0);
}

// valgrind's count of the memory still allocated at exit, "<bytes> bytes in <n> blocks".
std::string ValgrindInUseAtExit(const std::string& args) {
  std::string out = Output("valgrind " + args + " 2>&1 >/dev/null");
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("in use at exit: ([0-9,]+) bytes in ([0-9,]+) blocks"))) {
    return "";
  }
  std::string bytes = m[1].str(), blocks = m[2].str();
  bytes.erase(std::remove(bytes.begin(), bytes.end(), ','), bytes.end());
  blocks.erase(std::remove(blocks.begin(), blocks.end(), ','), blocks.end());
  return bytes + " bytes in " + blocks + " blocks";
}

// What the leak checker found still allocated, in valgrind's words: the leaks (the summary), the
// reachable blocks and the suppressed ones (the header's lines).
std::string OurInUseAtExit(const std::string& args) {
  std::smatch m;
  std::string report = Leakcheck(args).report;
  if (!std::regex_search(report, m, std::regex("SUMMARY: stackwalk-leakcheck: (\\d+) bytes? leaked in (\\d+) allocations?"))) {
    return "";
  }
  uint64_t bytes = std::stoull(m[1].str()), blocks = std::stoull(m[2].str());
  for (const char* kind : {"still reachable", "suppressed"}) {
    if (std::regex_search(report, m, std::regex(std::string("== (\\d+) bytes? in (\\d+) allocations? ") + kind))) {
      bytes += std::stoull(m[1].str());
      blocks += std::stoull(m[2].str());
    }
  }
  return std::to_string(bytes) + " bytes in " + std::to_string(blocks) + " blocks";
}

TEST(Leakcheck, AgreesWithValgrindOnWhatIsStillAllocatedAtExit) {
  if (std::system("valgrind --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no valgrind";
  for (const std::string& args : {kFixture, kFixture + " clean", kFixture + " atexit 100",
                                  std::string("/bin/ls /"), std::string(LEAKY_FORMS) + " preload"}) {
    std::string expected = ValgrindInUseAtExit(args);
    ASSERT_FALSE(expected.empty()) << args;
    EXPECT_EQ(OurInUseAtExit(args), expected) << args;
  }
}

// valgrind's definitely + indirectly lost, "<bytes> bytes in <n> blocks" (0 when it reports no
// leak at all).
std::string ValgrindLost(const std::string& args) {
  std::string out = Output("valgrind --leak-check=full " + args + " 2>&1 >/dev/null");
  uint64_t bytes = 0, blocks = 0;
  for (const char* kind : {"definitely lost", "indirectly lost"}) {
    std::smatch m;
    if (std::regex_search(out, m, std::regex(std::string(kind) + ": ([0-9,]+) bytes in ([0-9,]+) blocks"))) {
      std::string b = m[1].str(), n = m[2].str();
      b.erase(std::remove(b.begin(), b.end(), ','), b.end());
      n.erase(std::remove(n.begin(), n.end(), ','), n.end());
      bytes += std::stoull(b);
      blocks += std::stoull(n);
    }
  }
  return std::to_string(bytes) + " bytes in " + std::to_string(blocks) + " blocks";
}

// By default the memory scan separates lost blocks (nothing reachable points to them) from
// reachable ones and lists the lost ones only, as valgrind's definitely + indirectly lost: a
// block reachable only through an interior pointer counts as reachable (LeakSanitizer's rule;
// valgrind says "possibly lost").
TEST(Leakcheck, LeaksOnlyByDefaultAgreeWithValgrindOnWhatIsLost) {
  LaunchResult run = Leakcheck(kFixture + " reachability");
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 555 bytes leaked in 2 allocations."),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("== 555 bytes in 2 allocations still reachable (not shown)"),
            std::string::npos) << run.report;
  EXPECT_NE(LeakBlock(run.report, "333 bytes in 1 allocation").find("fixture::LoseChain()"),
            std::string::npos) << run.report;
  EXPECT_NE(LeakBlock(run.report, "222 bytes in 1 allocation").find("fixture::LoseChain()"),
            std::string::npos) << run.report;
  EXPECT_EQ(run.report.find("Reachable: "), std::string::npos) << run.report;
  // --show-reachable lists the kept ones too; the totals stay the leaks'.
  LaunchResult all = Leakcheck("--show-reachable " + kFixture + " reachability");
  EXPECT_NE(all.report.find("SUMMARY: stackwalk-leakcheck: 555 bytes leaked in 2 allocations."),
            std::string::npos) << all.report;
  EXPECT_NE(all.report.find("\nReachable: 444 byte(s) in 1 object(s) allocated from:\n"),
            std::string::npos) << all.report;
  EXPECT_NE(all.report.find("\nReachable: 111 byte(s) in 1 object(s) allocated from:\n"),
            std::string::npos) << all.report;
  // --unreachable-only, the old way to ask for this, is accepted and changes nothing, with a note.
  const std::string note = Output(std::string(STACKWALK_LEAKCHECK) +
                                  " --unreachable-only --output /dev/null " + kFixture +
                                  " reachability 2>&1 >/dev/null");
  EXPECT_EQ(note,
            "stackwalk-leakcheck: note: unreachable_only is ignored: only leaks are listed by "
            "default now (show_reachable lists the rest)\n");
  EXPECT_NE(Leakcheck("--unreachable-only " + kFixture + " reachability")
                .report.find("SUMMARY: stackwalk-leakcheck: 555 bytes leaked in 2 allocations."),
            std::string::npos);
  // The stress run's kept blocks sat in rings on stacks of threads that have exited: all lost.
  EXPECT_NE(Leakcheck(kFixture + " stress")
                .report.find("SUMMARY: stackwalk-leakcheck: 288000 bytes leaked in 8000 allocations."),
            std::string::npos);
  if (std::system("valgrind --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no valgrind";
  for (const std::string& args : {kFixture + " reachability", kFixture,
                                  std::string(LEAKY_FORMS) + " preload"}) {
    std::smatch m;
    std::string report = Leakcheck(args).report;
    ASSERT_TRUE(std::regex_search(report, m, std::regex("SUMMARY: stackwalk-leakcheck: (\\d+) bytes? leaked in (\\d+) allocations?")))
        << report;
    EXPECT_EQ(m[1].str() + " bytes in " + m[2].str() + " blocks", ValgrindLost(args)) << args;
  }
}

TEST(Leakcheck, PercentPInTheOutputPathBecomesTheProcessId) {
  std::string dir = ::testing::TempDir() + "pid_reports." + std::to_string(getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  // bash running the fixture as its child: two processes, two reports (dash leaves by _exit).
  std::string command = std::string(STACKWALK_LEAKCHECK) + " --follow-exec --output " + dir +
                        "/leaks.%p.txt /bin/bash -c '" + kFixture + "; true' >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(Output("cat " + dir + "/leaks.*.txt | grep -c '^SUMMARY: '"), "2\n");
  EXPECT_EQ(Output("grep -l '364 bytes leaked in 4 allocations' " + dir + "/leaks.*.txt | wc -l"),
            "1\n");
}

// Without --follow-exec the preload is taken out of the environment: bash's child runs unchecked.
TEST(Leakcheck, ExecutedProgramsRunUncheckedUnlessAsked) {
  std::string dir = ::testing::TempDir() + "exec_reports." + std::to_string(getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  std::string command = std::string(STACKWALK_LEAKCHECK) + " --output " + dir +
                        "/leaks.%p.txt /bin/bash -c '" + kFixture + "; true' >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(Output("cat " + dir + "/leaks.*.txt | grep -c '^SUMMARY: '"), "1\n");  // bash's only
  EXPECT_NE(std::system(("grep -q 'leaked in 4 allocations' " + dir + "/leaks.*.txt").c_str()), 0);
  // A wrapper that execs the program in its own process (as pyenv's shims do): the program is
  // the one checked.
  LaunchResult wrapped = Leakcheck("/bin/sh -c 'exec " + kFixture + "'");
  EXPECT_NE(wrapped.report.find("SUMMARY: stackwalk-leakcheck: 364 bytes leaked in 4 allocations."),
            std::string::npos) << wrapped.report;
}

TEST(Leakcheck, EightThreadsOfMixedAllocationsLeaveExactTotals) {
  LaunchResult run = Leakcheck(kFixture + " stress");
  EXPECT_EQ(run.status, 0);
  // Thread t keeps 1000 blocks of (t + 1) * 8 bytes: 8 * 1000 blocks, 8000 * 36 bytes.
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 288000 bytes leaked in 8000 allocations."),
            std::string::npos) << run.report.substr(0, 2000);
  // One stack, split into direct and indirect (a kept block's stale words may point at another).
  EXPECT_NE(run.report.find("fixture::KeepBlock(unsigned long)"), std::string::npos);
  EXPECT_NE(run.report.find("fixture::Churn(void*)"), std::string::npos);
}

// Programs nobody here wrote run to completion under the checker, output and status intact.
TEST(Leakcheck, RealProgramsKeepTheirOutputAndStatus) {
  struct Case {
    std::string command;
    std::string expected_output;
    int status;
  };
  const Case cases[] = {
      {"python3 -c 'import json,sys; print(json.dumps({\"a\": [1, 2]})); sys.exit(3)'",
       "{\"a\": [1, 2]}\n", 3},
      {"cmake -E echo stackwalk", "stackwalk\n", 0},
      {"git --version", "git version", 0},
      {"git config --no-such-flag", "", 129},
  };
  for (const Case& c : cases) {
    std::string report = ::testing::TempDir() + "real." + std::to_string(getpid()) + ".txt";
    std::string command = std::string(STACKWALK_LEAKCHECK) + " --output " + report + " " + c.command +
                          " 2>/dev/null";
    std::string out;
    FILE* p = popen(command.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    int raw = pclose(p);
    EXPECT_TRUE(WIFEXITED(raw)) << c.command;
    EXPECT_EQ(WEXITSTATUS(raw), c.status) << c.command;
    EXPECT_EQ(out.rfind(c.expected_output, 0), 0u) << c.command << ": " << out;
    std::ifstream in(report);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("SUMMARY: stackwalk-leakcheck: "), std::string::npos) << c.command;
  }
}

// The JSON report, read back by Python's json module: totals and the 300-byte leak's frames.
TEST(Leakcheck, JsonReportParsesAndCarriesTheSameLeaks) {
  std::string report = ::testing::TempDir() + "leaks." + std::to_string(getpid()) + ".json";
  std::string run = std::string(STACKWALK_LEAKCHECK) + " --format json --output " + report + " " +
                    kFixture + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(run.c_str()), 0);
  std::string check =
      "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); s=r[\"summary\"];"
      " l=[x for x in r[\"leaks\"] if x[\"bytes\"]==300][0]; f=l[\"frames\"][0];"
      " print(s[\"bytes\"], s[\"allocations\"], len(r[\"leaks\"]), l[\"allocations\"], f[\"function\"],"
      " f[\"file\"].endswith(\"leaky.cc\"), f[\"line\"], f[\"module\"].endswith(\"leaky\"),"
      " f[\"module_offset\"].startswith(\"0x\"), f[\"inlined\"], l[\"thread\"], l[\"tid\"] > 0,"
      " sorted((t[\"thread\"], t[\"bytes\"]) for t in r[\"threads\"])[0], r[\"occasion\"],"
      " l[\"kind\"], s[\"direct_bytes\"] + s[\"indirect_bytes\"], s[\"reachable_bytes\"],"
      " r[\"stop\"][\"method\"] in (\"ptrace\", \"signal\"), r[\"suppressions\"])' " + report;
  EXPECT_EQ(Output(check), "364 4 2 3 fixture::LeakMallocs() True " +
                               std::to_string(Sites(LEAKY_SOURCE).at("LeakMallocs")) +
                               " True True False leaky True ('leak-worker', 4096) exit direct 364 "
                               "4096 True []\n");
}

// A suppressions file (LeakSanitizer's format) takes a site's leaks out and counts them; two
// files add up; a bad one stops the launcher with its file:line.
TEST(Leakcheck, SuppressionsTakeLeaksOutAndAreCounted) {
  const std::string base = ::testing::TempDir() + "supp." + std::to_string(getpid());
  std::ofstream(base + ".a") << "# the fixture's known leaks\n\nleak:fixture::LeakMallocs\n";
  // Anchored: "LeakNode()$" matches the function fixture::LeakNode(); "^/nonexistent/" nothing.
  std::ofstream(base + ".b") << "leak:^/nonexistent/\nleak:LeakNode()$\n";
  LaunchResult run = Leakcheck("--suppressions " + base + ".a " + kFixture);
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 64 bytes leaked in 1 allocation."),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("== 300 bytes in 3 allocations suppressed\n"), std::string::npos)
      << run.report;
  EXPECT_NE(run.report.find("\nSuppressions used:\n  count      bytes template\n"
                            "      3        300 fixture::LeakMallocs\n"),
            std::string::npos) << run.report;
  EXPECT_TRUE(LeakBlock(run.report, "300 bytes in 3 allocations").empty()) << run.report;
  // Both files.
  run = Leakcheck("--suppressions " + base + ".a --suppressions=" + base + ".b " + kFixture);
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("      1         64 LeakNode()$\n"), std::string::npos) << run.report;
  EXPECT_EQ(run.report.find("nonexistent"), std::string::npos) << run.report;  // unused: not listed
  // The text form's comma list, as the preloaded library reads it.
  const std::string json = base + ".json";
  ASSERT_EQ(std::system(("STACKWALK_LEAKCHECK='format=json:output=" + json + ":suppressions=" +
                         base + ".a," + base + ".b' LD_PRELOAD=" + STACKWALK_LEAKCHECK_PRELOAD +
                         " " + kFixture + " >/dev/null 2>&1").c_str()),
            0);
  EXPECT_EQ(Output("python3 -c 'import json,sys; r=json.load(open(sys.argv[1]));"
                   " print(r[\"summary\"][\"bytes\"], r[\"summary\"][\"suppressed_bytes\"],"
                   " [(s[\"pattern\"], s[\"count\"], s[\"bytes\"]) for s in r[\"suppressions\"]])' " +
                   json),
            "0 364 [('fixture::LeakMallocs', 3, 300), ('LeakNode()$', 1, 64)]\n");
  // A rule of another type: the launcher refuses to run, naming the file and line.
  std::ofstream(base + ".bad") << "leak:ok\n\nrace:Worker\n";
  const std::string refused = Output(std::string(STACKWALK_LEAKCHECK) + " --suppressions " +
                                     base + ".bad " + kFixture + " 2>&1; echo status $?");
  EXPECT_EQ(refused, "stackwalk-leakcheck: bad --suppressions: " + base +
                         ".bad:3: suppression type 'race' is not one the leak checker knows "
                         "(only 'leak')\nstatus 2\n");
  // Preloaded directly with a file that is not there: the report says so and lists every leak.
  ASSERT_EQ(std::system(("STACKWALK_LEAKCHECK='output=" + base + ".txt:suppressions=" + base +
                         ".none' LD_PRELOAD=" + STACKWALK_LEAKCHECK_PRELOAD + " " + kFixture +
                         " >/dev/null 2>&1").c_str()),
            0);
  EXPECT_NE(Output("cat " + base + ".txt").find("== suppressions not applied: " + base +
                                                ".none: cannot read the suppressions file\n"),
            std::string::npos);
  EXPECT_NE(Output("cat " + base + ".txt").find("364 bytes leaked in 4 allocations."),
            std::string::npos);
}

// A suppressed leak takes the blocks it alone holds with it, through the launcher: the fixture's
// lost 666-byte head holds a 777-byte block allocated from another stack (MakeLink, which the
// rule does not match). A rule matching only the held block leaves its head listed.
TEST(Leakcheck, ASuppressedLeakTakesTheBlocksItAloneHoldsWithIt) {
  const std::string base = ::testing::TempDir() + "chain." + std::to_string(getpid());
  LaunchResult run = Leakcheck(kFixture + " chain");
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 1443 bytes leaked in 2 allocations."),
            std::string::npos) << run.report;
  EXPECT_NE(LeakBlock(run.report, "777 bytes in 1 allocation").find("fixture::MakeLink()"),
            std::string::npos) << run.report;
  EXPECT_EQ(LeakBlock(run.report, "777 bytes in 1 allocation").find("LoseHeadOfLink"),
            std::string::npos) << run.report;
  std::ofstream(base + ".head") << "leak:LoseHeadOfLink\n";
  run = Leakcheck("--suppressions " + base + ".head " + kFixture + " chain");
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("== 1443 bytes in 2 allocations suppressed\n"), std::string::npos)
      << run.report;
  EXPECT_NE(run.report.find("      2       1443 LoseHeadOfLink\n"), std::string::npos)
      << run.report;
  std::ofstream(base + ".link") << "leak:MakeLink\n";
  run = Leakcheck("--suppressions " + base + ".link " + kFixture + " chain");
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 666 bytes leaked in 1 allocation."),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("      1        777 MakeLink\n"), std::string::npos) << run.report;
}

// Every report line against docs/schema/leak_report.schema.json (its frames against
// frame.schema.json), by Python's jsonschema: "N reports, M errors" and the first error.
std::string CheckAgainstSchema(const std::string& path) {
  const std::string script =
      "import json,sys\n"
      "from jsonschema import Draft202012Validator\n"
      "from referencing import Registry, Resource\n"
      "leak=json.load(open(sys.argv[1])); frame=json.load(open(sys.argv[2]))\n"
      "v=Draft202012Validator(leak, registry=Registry().with_resource(frame['$id'], "
      "Resource.from_contents(frame)))\n"
      "lines=[l for l in open(sys.argv[3]) if l.strip()]\n"
      "errors=[e for l in lines for e in v.iter_errors(json.loads(l))]\n"
      "print(len(lines), 'reports,', len(errors), 'errors', errors[0].message if errors else '')\n";
  const std::string file = path + ".py";
  std::ofstream(file) << script;
  return Output("python3 " + file + " " + LEAK_REPORT_SCHEMA + " " + FRAME_SCHEMA + " " + path +
                " 2>&1");
}

TEST(Leakcheck, JsonReportsConformToTheirSchema) {
  if (std::system("python3 -c 'import jsonschema, referencing' 2>/dev/null") != 0) {
    GTEST_SKIP() << "no python3-jsonschema";
  }
  const std::string base = ::testing::TempDir() + "schema." + std::to_string(getpid());
  std::ofstream(base + ".supp") << "leak:LeakNode\n";
  // Direct leaks, reachable entries and a suppression; the forms fixture's many stacks and
  // threads; lost and kept blocks.
  for (const std::string& args :
       {"--show-reachable --suppressions " + base + ".supp " + kFixture,
        std::string("--show-reachable ") + LEAKY_FORMS + " preload", kFixture + " reachability"}) {
    std::remove((base + ".json").c_str());
    ASSERT_EQ(std::system((std::string(STACKWALK_LEAKCHECK) + " --format json --output " + base +
                           ".json " + args + " >/dev/null 2>&1").c_str()),
              0);
    EXPECT_EQ(CheckAgainstSchema(base + ".json"), "1 reports, 0 errors \n") << args;
  }
  // The check can fail: a kind the schema does not know.
  ASSERT_EQ(std::system(("sed -i 's/\"kind\":\"direct\"/\"kind\":\"lost\"/' " + base + ".json")
                            .c_str()),
            0);
  const std::string refused = CheckAgainstSchema(base + ".json");
  EXPECT_EQ(refused.rfind("1 reports, 1 errors 'lost' is not one of", 0), 0u) << refused;
}

TEST(Leakcheck, BadCommandLinesAreRefused) {
  EXPECT_EQ(Leakcheck("--method magic " + kFixture).status, 2);
  EXPECT_EQ(Leakcheck("--min-size lots " + kFixture).status, 2);
  EXPECT_EQ(Leakcheck("--format xml " + kFixture).status, 2);
  EXPECT_EQ(Leakcheck("--report-signal SIGFOO " + kFixture).status, 2);
  EXPECT_EQ(Leakcheck("--max-frames 99 " + kFixture).status, 2);
  EXPECT_EQ(Leakcheck("--report-signal USR1 " + kFixture + " clean").status, 0);
  EXPECT_EQ(Leakcheck("").status, 2);
  EXPECT_EQ(Leakcheck("/nonexistent/program").status, 127);
}

}  // namespace
