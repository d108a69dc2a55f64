// The crash handler on real crashes in forked children (crash_child.h runs them): each child
// dies by its original signal (or the previous handler runs), the first frames are the right
// ones (C and demangled C++ names, inside libstdc++, on the alternate stack, in a dlopen'ed
// library), several threads crashing at once give one report, a crash inside the handler
// neither hangs nor reports twice, and options that cannot work are refused at install.
#include "stackwalk/crash_handler.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "crash_child.h"
#include "fixtures/chain_lib.h"

namespace crash_names {
struct Grid {
  __attribute__((noinline)) static int CellAt(volatile int* cells, int i) { return cells[i]; }
};
}  // namespace crash_names

namespace crash_test {
namespace {

TEST(CrashHandler, NullDereferenceInALeafWithoutFramePointers) {
  Outcome o = RunCrashingChild([] { crash_caller(); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_NE(o.report.find("SIGSEGV (Segmentation fault), code 1 (SEGV_MAPERR), fault address 0x0"),
            std::string::npos)
      << o.report;
  EXPECT_EQ(FrameFunction(o.report, 0), "crash_leaf") << o.report;
  EXPECT_EQ(FrameFunction(o.report, 1), "crash_caller") << o.report;
  EXPECT_NE(o.report.find("*** pid "), std::string::npos);
}

// C++ names are demangled on the signal-safe path by abseil's demangler (which leaves parameter
// types out), on the cross targets too where the build found abseil for them.
TEST(CrashHandler, NamesCxxFunctionsDemangled) {
  Outcome o = RunCrashingChild([] { crash_names::Grid::CellAt(g_null, 3); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
#if defined(STACKWALK_TEST_HAS_DEMANGLER)
  EXPECT_EQ(FrameFunction(o.report, 0), "crash_names::Grid::CellAt()") << o.report;
#else
  EXPECT_EQ(FrameFunction(o.report, 0), "_ZN11crash_names4Grid6CellAtEPVii") << o.report;
#endif
}

TEST(CrashHandler, AbortFromDeepInsideLibstdcxx) {
  Outcome o = RunCrashingChild([] { crash_through_libstdcxx(); });
  EXPECT_TRUE(DiedBy(o.status, SIGABRT)) << o.status;
  EXPECT_NE(o.report.find("SIGABRT (Aborted)"), std::string::npos) << o.report;
  // abort <- std::terminate <- the personality routine <- _Unwind_Resume <- the cleanup of our
  // function (GCC puts it in crash_through_libstdcxx.cold), through libstdc++ and libgcc_s.
  EXPECT_NE(o.report.find(" in abort+"), std::string::npos) << o.report;
#if defined(__arm__)
  // armhf glibc's abort lies before the first .ARM.exidx entry (no unwind table covers it), so
  // no unwinder, libgcc's included, gets past it.
  return;
#endif
  EXPECT_NE(o.report.find(" in __gxx_personality_v0+"), std::string::npos) << o.report;
  EXPECT_NE(o.report.find(" in _Unwind_Resume+"), std::string::npos) << o.report;
  EXPECT_NE(o.report.find(" in crash_through_libstdcxx"), std::string::npos) << o.report;
  EXPECT_NE(o.report.find(" in main+"), std::string::npos) << o.report;
}

TEST(CrashHandler, StackOverflowOnTheAlternateStack) {
  Outcome o = RunCrashingChild([] { crash_recurse(0); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_EQ(FrameFunction(o.report, 0), "crash_recurse") << o.report.substr(0, 2000);
  EXPECT_EQ(FrameFunction(o.report, 1), "crash_recurse") << o.report.substr(0, 2000);
  EXPECT_NE(o.report.find("more frames not shown"), std::string::npos);
}

TEST(CrashHandler, CrashInsideALibraryOpenedWithDlopen) {
  Outcome o = RunCrashingChild([] {
    void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(102);
    auto fault = reinterpret_cast<chain_lib_fault_fn>(dlsym(lib, "chain_lib_fault"));
    fault(g_null);
  });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_EQ(FrameFunction(o.report, 0), "chain_lib_fault") << o.report;
  EXPECT_NE(o.report.find("libchain_lib"), std::string::npos) << o.report;
}

// Installs `previous` for SIGSEGV "before" stackwalk's handler (by re-installing stackwalk's on
// top of it), then crashes.
void CrashWithPreviousHandler(void (*previous)(int)) {
  stackwalk::UninstallCrashHandler();
  signal(SIGSEGV, previous);
  stackwalk::CrashHandlerOptions options;
  options.fd = g_report_fd;
  stackwalk::InstallCrashHandler(options);
  crash_caller();
}

size_t CountReports(const std::string& report) {
  size_t reports = 0;
  for (size_t at = 0; (at = report.find("*** stackwalk:", at)) != std::string::npos; ++at) ++reports;
  return reports;
}

TEST(CrashHandler, SeveralThreadsCrashingAtOnceGiveOneReport) {
  Outcome o = RunCrashingChild([] {
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&ready] {
        ready.fetch_add(1);
        while (ready.load() < 4) {
        }
        crash_caller();
      });
    }
    for (auto& t : threads) t.join();
  });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_EQ(CountReports(o.report), 1u) << o.report;
}

void PreviousHandler(int) {
  const char msg[] = "previous handler ran\n";
  ssize_t ignored = write(2, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(42);
}

TEST(CrashHandler, ChainsToThePreviouslyInstalledHandler) {
  Outcome o = RunCrashingChild([] { CrashWithPreviousHandler(PreviousHandler); });
  // stackwalk's report first, then the previous handler.
  EXPECT_NE(o.report.find("*** stackwalk: SIGSEGV"), std::string::npos) << o.report;
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 42) << o.status;
}

// A previous handler that faults itself: it runs inside stackwalk's handler, so its fault is a
// crash inside the handler.
void PreviousHandlerThatFaults(int) { crash_caller(); }        // SIGSEGV again, while blocked
void PreviousHandlerThatTraps(int) { __builtin_trap(); }       // another signal: re-enters

TEST(CrashHandler, ACrashInsideTheHandlerNeitherHangsNorReportsTwice) {
  // The same signal, blocked while the handler runs: the kernel kills the process with it.
  Outcome same = RunCrashingChild([] { CrashWithPreviousHandler(PreviousHandlerThatFaults); });
  EXPECT_TRUE(DiedBy(same.status, SIGSEGV)) << same.status << "\n" << same.report;
  EXPECT_EQ(CountReports(same.report), 1u) << same.report;
  // Another signal re-enters the handler on the reporting thread: no second report, and the
  // process dies by that signal.
  Outcome other = RunCrashingChild([] { CrashWithPreviousHandler(PreviousHandlerThatTraps); });
  EXPECT_TRUE(WIFSIGNALED(other.status)) << other.status << "\n" << other.report;
  const int trap_signal = WIFSIGNALED(other.status) ? WTERMSIG(other.status) : 0;
  EXPECT_TRUE(trap_signal == SIGILL || trap_signal == SIGTRAP) << trap_signal;
  EXPECT_EQ(CountReports(other.report), 1u) << other.report;
  EXPECT_NE(other.report.find("*** stackwalk: SIGSEGV"), std::string::npos) << other.report;
}

// Each option that can never work is refused at install, and nothing changes: no handler in this
// process, and in a child with a handler, its earlier options keep working.
TEST(CrashHandler, InstallRefusesOptionsThatCannotWork) {
  struct sigaction before[64];
  constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
  for (int sig : kFatal) ASSERT_EQ(sigaction(sig, nullptr, &before[sig]), 0);

  std::vector<std::pair<std::string, stackwalk::CrashHandlerOptions>> bad;
  std::vector<int> expected;
  auto add = [&](const std::string& what, int error,
                 const std::function<void(stackwalk::CrashHandlerOptions&)>& change) {
    stackwalk::CrashHandlerOptions options;
    change(options);
    bad.emplace_back(what, options);
    expected.push_back(error);
  };
  add("max_frames 0", -EINVAL, [](auto& o) { o.max_frames = 0; });
  add("max_frames -5", -EINVAL, [](auto& o) { o.max_frames = -5; });
  add("max_frames above the limit", -EINVAL,
      [](auto& o) { o.max_frames = stackwalk::kMaxCrashFrames + 1; });
  add("no such method", -EINVAL, [](auto& o) { o.method = static_cast<stackwalk::Method>(42); });
  int unavailable = 0;
  for (auto m : {stackwalk::Method::kFramePointer, stackwalk::Method::kEhFrame,
                 stackwalk::Method::kExidx}) {
    if (stackwalk_method_available(static_cast<stackwalk_method>(m)) == 1) continue;
    ++unavailable;
    add("method " + std::to_string(static_cast<int>(m)) + " (not on this architecture)", -EINVAL,
        [m](auto& o) { o.method = m; });
  }
  EXPECT_GE(unavailable, 1);  // kExidx off arm32; kEhFrame on arm32
  add("fd -1", -EBADF, [](auto& o) { o.fd = -1; });
  int closed = open("/dev/null", O_WRONLY | O_CLOEXEC);
  close(closed);
  add("a closed fd", -EBADF, [closed](auto& o) { o.fd = closed; });
  int read_only = open("/dev/null", O_RDONLY | O_CLOEXEC);
  add("a read-only fd", -EBADF, [read_only](auto& o) { o.fd = read_only; });
  add("a path in no directory", -ENOENT,
      [](auto& o) { o.path = "/nonexistent-stackwalk-dir/crash.txt"; });
  add("snapshot_stack_bytes above the limit", -EINVAL,
      [](auto& o) { o.snapshot_stack_bytes = stackwalk::kMaxSnapshotStackBytes + 1; });
  add("an empty snapshot_path", -EINVAL, [](auto& o) { o.snapshot_path = ""; });
  static const std::string long_path(stackwalk::kMaxSnapshotPath, 'x');
  add("a snapshot_path too long", -ENAMETOOLONG,
      [](auto& o) { o.snapshot_path = long_path.c_str(); });

  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(stackwalk::InstallCrashHandler(bad[i].second), expected[i]) << bad[i].first;
    for (int sig : kFatal) {
      struct sigaction now;
      ASSERT_EQ(sigaction(sig, nullptr, &now), 0);
      EXPECT_EQ(now.sa_handler, before[sig].sa_handler) << bad[i].first << ": signal " << sig;
      EXPECT_EQ(now.sa_flags, before[sig].sa_flags) << bad[i].first << ": signal " << sig;
    }
  }
  // A refused re-install leaves the installed handler and its options as they were.
  Outcome o = RunCrashingChild([&bad] {
    for (auto& [what, options] : bad) {
      if (stackwalk::InstallCrashHandler(options) == 0) _exit(103);
    }
    crash_caller();
  });
  close(read_only);
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  Report r = Parse(o.report);
  EXPECT_TRUE(r.complete) << o.report;
  ASSERT_GE(r.frames.size(), 3u) << o.report;  // not max_frames 0 or 1
  EXPECT_EQ(r.frames[0].function, "crash_leaf") << o.report;
}

}  // namespace
}  // namespace crash_test
