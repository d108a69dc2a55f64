// The leak checker on every allocation form, made in a library (tests/fixtures/
// leaky_forms_lib.cc), in both modes: preloaded (stackwalk-leakcheck) and in-process through
// GOT patching (stackwalk::leakcheck::Start/Report/Stop). Each leaking line carries a LEAK-SITE
// marker; the report must show each block with its exact bytes, count and line. Also: a plugin
// dlclose'd before the report, a thread that names itself, a block freed by a static destructor,
// reports on a signal, and the library filters.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "leakcheck_run.h"

namespace {

const std::string kForms = LEAKY_FORMS;

struct ExpectedLeak {
  std::string what;  // "N bytes in M allocation(s)"
  std::string site;  // marker whose line the block must show
  std::string function;
};

// What libleaky_forms.so leaks when every form runs once; `with_libstdcxx_internal` adds the
// string's characters, allocated inside libstdc++ (hooked when preloaded, not when only the
// fixture library's GOT is patched).
std::vector<ExpectedLeak> FormLeaks() {
  return {
      {"11 bytes in 1 allocation", "malloc", "forms::LeakMalloc()"},
      {"39 bytes in 1 allocation", "calloc", "forms::LeakCalloc()"},
      {"57 bytes in 1 allocation", "realloc", "forms::LeakRealloc()"},
      {"71 bytes in 1 allocation", "memalign", "forms::LeakMemalign()"},
      {"83 bytes in 1 allocation", "posix_memalign", "forms::LeakPosixMemalign()"},
      {"512 bytes in 1 allocation", "aligned_alloc", "forms::LeakAlignedAlloc()"},
      {"133 bytes in 1 allocation", "valloc", "forms::LeakValloc()"},
      {"97 bytes in 1 allocation", "new", "forms::LeakNew()"},
      {"100 bytes in 1 allocation", "new[]", "forms::LeakNewArray()"},
      {"32 bytes in 1 allocation", "string", "forms::LeakString()"},
      {"24 bytes in 1 allocation", "vector", "forms::LeakContainers()"},
      {"124 bytes in 1 allocation", "vector", "forms::LeakContainers()"},
      {"48 bytes in 1 allocation", "map-object", "forms::LeakContainers()"},
      {"120 bytes in 3 allocations", "map", "forms::LeakContainers()"},
      {"45 bytes in 1 allocation", "pointer", "forms::LeakThroughPointer()"},
      {"4099 bytes in 1 allocation", "thread", "forms::(anonymous namespace)::LeakOnThread(void*)"},
  };
}

// Made by a static constructor before main: only the preloaded checker sees it.
ExpectedLeak ConstructorLeak() {
  return {"19 bytes in 1 allocation", "constructor", "forms::LeakFromConstructor()"};
}

void ExpectFormLeaks(const std::string& report, bool preloaded) {
  const std::map<std::string, int> sites = Sites(LEAKY_FORMS_SOURCE);
  ASSERT_EQ(sites.size(), 16u);
  std::vector<ExpectedLeak> expected = FormLeaks();
  if (preloaded) {
    expected.push_back(ConstructorLeak());
  } else {
    EXPECT_EQ(report.find(" 19 byte(s) in "), std::string::npos) << report;
  }
  for (const ExpectedLeak& leak : expected) {
    std::string block = LeakBlock(report, leak.what);
    ASSERT_FALSE(block.empty()) << leak.what << "\n" << report;
    EXPECT_NE(block.find("in " + leak.function), std::string::npos) << block;
    std::string line = "leaky_forms_lib.cc:" + std::to_string(sites.at(leak.site)) + ":";
    EXPECT_NE(block.find(line), std::string::npos) << line << "\n" << block;
    EXPECT_NE(block.find("/libleaky_forms.so+0x"), std::string::npos) << block;
    // Hooks hidden: no frame of the checker's library or namespace (frame lines carry full
    // paths, and the build directory's may hold "leakcheck").
    EXPECT_EQ(block.find("libstackwalk_leakcheck"), std::string::npos) << block;
    EXPECT_EQ(block.find("leakcheck::"), std::string::npos) << block;
  }
  // The worker named itself after allocating: the name it had at exit is shown.
  EXPECT_NE(LeakBlock(report, "4099 bytes in 1 allocation").find("by thread forms-worker (tid "),
            std::string::npos) << report;
  // The plugin was dlclose'd before the report: still named, from its file.
  const int plugin_line = Sites(LEAKY_PLUGIN_SOURCE).at("plugin");
  std::string plugin = LeakBlock(report, "333 bytes in 1 allocation");
  EXPECT_NE(plugin.find("in PluginLeak at "), std::string::npos) << report;
  EXPECT_NE(plugin.find("leaky_plugin.c:" + std::to_string(plugin_line) + ":"), std::string::npos)
      << plugin;
  EXPECT_NE(plugin.find("/libleaky_plugin.so+0x"), std::string::npos) << plugin;
  EXPECT_NE(plugin.find("in (anonymous namespace)::RunPlugin() at "), std::string::npos) << plugin;
  // Freed by a static destructor after main, or by a library's destructor: not a leak.
  EXPECT_EQ(report.find(" 777 byte(s) in "), std::string::npos) << report;
  EXPECT_EQ(report.find(" 4321 byte(s) in "), std::string::npos) << report;
}

// Run with --show-reachable: the forms' blocks that a global still holds are listed too (as
// "Reachable:"), the others as leaks; LeakBlock finds either.
TEST(LeakcheckModes, PreloadedReportsEveryFormAtItsLine) {
  LaunchResult run = Leakcheck("--show-reachable " + kForms + " preload");
  EXPECT_EQ(run.status, 0);
  ExpectFormLeaks(run.report, true);
  // Made inside libstdc++ (std::string's characters) and by the program itself.
  EXPECT_NE(LeakBlock(run.report, "201 bytes in 1 allocation").find("in forms::LeakString()"),
            std::string::npos) << run.report;
  EXPECT_NE(LeakBlock(run.report, "999 bytes in 1 allocation").find(" in main at "),
            std::string::npos) << run.report;
  // 7147 bytes in 22 blocks live at exit: the worker's and the program's own block held by
  // globals, the rest lost.
  EXPECT_NE(run.report.find("SUMMARY: stackwalk-leakcheck: 2049 bytes leaked in 20 allocations."),
            std::string::npos) << run.report;
  EXPECT_NE(run.report.find("== 5098 bytes in 2 allocations still reachable\n"), std::string::npos)
      << run.report;
}

// A thread still allocating while main returns and the report is written: the report comes,
// with its leak, and the exit status is the program's.
TEST(LeakcheckModes, ThreadsThatOutliveMainKeepWorking) {
  LaunchResult run = Leakcheck("--show-reachable " + kForms + " outlive");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(LeakBlock(run.report, "61 bytes in 1 allocation").find("in (anonymous namespace)::Outlive(void*) at "),
            std::string::npos) << run.report;
}

// After fork the child keeps recording (and reports what it inherited plus its own), the parent
// goes on as before: each process's report, by pid.
TEST(LeakcheckModes, ForkedChildKeepsRecording) {
  std::string dir = ::testing::TempDir() + "fork_reports." + std::to_string(getpid());
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  // Bounded: fork handlers of other libraries that allocate once hung the child on our locks.
  std::string command = "timeout 60 " + std::string(STACKWALK_LEAKCHECK) +
                        " --show-reachable --output " + dir +
                        "/leaks.%p.txt " + kForms + " fork >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(Output("grep -l ' 23 byte(s) in ' " + dir + "/leaks.*.txt | wc -l"), "1\n");
  EXPECT_EQ(Output("grep -l ' 29 byte(s) in ' " + dir + "/leaks.*.txt | wc -l"), "1\n");
  EXPECT_EQ(Output("grep -l ' 23 byte(s) in ' " + dir + "/leaks.*.txt | xargs grep -c ' 29 byte(s) in '"),
            "0\n");
  // Both saw the constructor's block, made before the fork.
  EXPECT_EQ(Output("grep -l ' 19 byte(s) in ' " + dir + "/leaks.*.txt | wc -l"), "2\n");
}

TEST(LeakcheckModes, InProcessHooksOnlyTheChosenLibrariesAndRestoresThem) {
  std::string report = ::testing::TempDir() + "inprocess." + std::to_string(getpid()) + ".txt";
  std::string out = Output(kForms + " inprocess " + report + " 2>/dev/null");
  EXPECT_EQ(out,
            "start 0\n"
            "start again -2\n"
            "hooked 1\n"
            "report 0\n"
            "session 1: 1829 bytes in 18 allocations\n"
            "stop 0\n"
            "stop again -3\n"
            "restored 1\n"
            "session 2 start ok\n"
            "session 2: 0 bytes in 0 allocations\n"
            "session 2 stop ok\n"
            "bad options INVALID_ARGUMENT: bad library pattern \"bad,pattern\"\n"
            "bad text options -1\n");
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  const std::string both = text.str();
  const size_t second = both.find("(report 2, on request)");
  ASSERT_NE(second, std::string::npos) << both;
  const std::string first = both.substr(0, second);
  ExpectFormLeaks(first, false);
  // Only the chosen objects were hooked: not libstdc++ (the string's characters), not the program.
  EXPECT_EQ(first.find(" 201 byte(s) in "), std::string::npos) << first;
  EXPECT_EQ(first.find(" 998 byte(s) in "), std::string::npos) << first;
  // 5928 bytes in 19 blocks live: the worker's block held by a global, the rest lost (the
  // fixture's first session asks for show_reachable: each is listed).
  EXPECT_NE(first.find("SUMMARY: stackwalk-leakcheck: 1829 bytes leaked in 18 allocations."),
            std::string::npos) << first;
  EXPECT_NE(first.find("== 4099 bytes in 1 allocation still reachable\n"), std::string::npos)
      << first;
  // The second session saw only its own calloc (a global holds it: reachable, not listed); the
  // malloc made while stopped is not there.
  const std::string next = both.substr(second);
  EXPECT_NE(next.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << next;
  EXPECT_NE(next.find("== 39 bytes in 1 allocation still reachable (not shown)\n"),
            std::string::npos) << next;
}

// GOT slots rewritten and restored 30 times while 4 threads allocate and free through them:
// blocks cross sessions in every direction and nothing crashes or fails.
TEST(LeakcheckModes, InProcessStartAndStopWhileOtherThreadsAllocate) {
  EXPECT_EQ(Output(kForms + " churn 2>&1; echo status $?"), "churn failures 0\nstatus 0\n");
}

// Sampling's fast path (leakcheck/sampler.h) is licensed per session: a thread that took it
// while one session sampled records every block of the next, which does not sample.
TEST(LeakcheckModes, InProcessSessionWithoutSamplingRecordsWhatAnEarlierSampledOneSkipped) {
  EXPECT_EQ(Output(kForms + " resample 2>&1; echo status $?"), "check 0 recorded 10\nstatus 0\n");
}

TEST(LeakcheckModes, InProcessStartIsRefusedWhenPreloadedButReportsWork) {
  std::string report = ::testing::TempDir() + "both." + std::to_string(getpid()) + ".txt";
  std::string out = Output(std::string(STACKWALK_LEAKCHECK) + " --output " + report + " " + kForms +
                           " inprocess /dev/null 2>/dev/null; echo status $?");
  EXPECT_EQ(out, "start -4\nreport 0\nstatus 3\n");
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("(report 1, on request)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("leaks at exit (report 2)"), std::string::npos) << text.str();
}

// Exact per-report totals from a conservative scan: the fixture makes its leaks on parked threads
// and scrubs the constructor's frames (tests/fixtures/parked_leaks.h), so no stale word on the
// main thread's stack holds the 11-byte block (once it did, in 1 CI run of 3).
TEST(LeakcheckModes, EachSignalWritesAReportOfWhatIsLive) {
  std::string report = ::testing::TempDir() + "signal." + std::to_string(getpid()) + ".txt";
  std::remove(report.c_str());
  std::string command = std::string(STACKWALK_LEAKCHECK) + " --libraries 'libleaky_forms*'" +
                        " --report-signal SIGUSR2 --output " + report + " " + kForms + " signal " +
                        report + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  std::vector<std::string> summaries;
  std::regex summary("\\(report (\\d)(, on signal 12)?\\)[^]*?== ([^\\n]*) still reachable "
                     "[^]*?SUMMARY: stackwalk-leakcheck: ([^\\n]*)");
  for (std::sregex_iterator it(all.begin(), all.end(), summary), end; it != end; ++it) {
    summaries.push_back((*it)[1].str() + ((*it)[2].matched ? " signal: " : " exit: ") +
                        (*it)[4].str() + " " + (*it)[3].str() + " reachable");
  }
  // Each report scans: the constructor's 19 bytes are lost from the start, LeakMalloc's 11 once
  // LeakCalloc's 39 took the global that held them. Held by globals: the 777-byte block until
  // the static destructor, the 4,321-byte one until the library's destructor, the 39 bytes to the
  // end. The filter keeps the fixture library's blocks only (all were allocated by it), the
  // reachable totals included.
  EXPECT_EQ(summaries, (std::vector<std::string>{
                           "1 signal: 19 bytes leaked in 1 allocation. 5109 bytes in 3 allocations reachable",
                           "2 signal: 30 bytes leaked in 2 allocations. 5137 bytes in 3 allocations reachable",
                           "3 exit: 30 bytes leaked in 2 allocations. 39 bytes in 1 allocation reachable",
                       }))
      << all;
}

TEST(LeakcheckModes, LibraryFiltersSelectAndIgnore) {
  LaunchResult plugin_only = Leakcheck("--libraries 'libleaky_plugin*' " + kForms);
  EXPECT_NE(plugin_only.report.find("SUMMARY: stackwalk-leakcheck: 333 bytes leaked in 1 allocation."),
            std::string::npos) << plugin_only.report;
  LaunchResult program_only =
      Leakcheck("--ignore-libraries 'libleaky_plugin*,libleaky_forms*' " + kForms);
  // The program's own block, held by a global: reachable, counted after the filters too.
  EXPECT_NE(program_only.report.find("SUMMARY: stackwalk-leakcheck: 0 bytes leaked in 0 allocations."),
            std::string::npos) << program_only.report;
  EXPECT_NE(program_only.report.find("== 999 bytes in 1 allocation still reachable (not shown)\n"),
            std::string::npos) << program_only.report;
  // By full path as well as by file name.
  LaunchResult by_path = Leakcheck("--libraries '/*/libleaky_plugin.so' " + kForms);
  EXPECT_NE(by_path.report.find("333 bytes leaked in 1 allocation."), std::string::npos)
      << by_path.report;
}

}  // namespace
