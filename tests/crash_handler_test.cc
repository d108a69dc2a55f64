// The crash handler on real crashes in forked children: the report names the right first
// frames, the child dies by the original signal (or the previous handler runs), several threads
// crashing at once give one report, and nothing hangs.
#include "stackwalk/crash_handler.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/chain_lib.h"

extern "C" {

volatile int* volatile g_null = nullptr;

__attribute__((noinline)) int crash_leaf(volatile int* p) { return *p; }  // no frame at all

__attribute__((noinline)) int crash_caller() {
  int r = crash_leaf(g_null);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int crash_through_libstdcxx() {
  std::vector<int> v(3);
  int r = v.at(static_cast<size_t>(rand() % 2 + 7));  // throws; nothing catches: abort()
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) int crash_recurse(int depth) {
  volatile char pad[512];
  pad[0] = static_cast<char>(depth);
  int r = crash_recurse(depth + 1) + pad[0];
  __asm__ volatile("" ::: "memory");
  return r;
}

}  // extern "C"

namespace crash_names {
struct Grid {
  __attribute__((noinline)) static int CellAt(volatile int* cells, int i) { return cells[i]; }
};
}  // namespace crash_names

namespace {

struct Outcome {
  std::string report;
  int status = 0;
};

// An exception escaping `body` calls std::terminate here, as in a program without a handler
// (the test framework would otherwise catch it).
void RunNoexcept(const std::function<void()>& body) noexcept { body(); }

// The report pipe's write end, in the child: for bodies that re-install the handler.
int g_report_fd = -1;

// Runs `body` in a child with the crash handler writing to a pipe; returns its report and
// wait status. Fails the test if the child takes more than 20 s.
Outcome RunCrashingChild(const std::function<void()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    stackwalk::CrashHandlerOptions options;
    options.fd = fds[1];
    g_report_fd = fds[1];
    if (stackwalk::InstallCrashHandler(options) != 0) _exit(100);
    RunNoexcept(body);
    _exit(101);  // did not crash
  }
  close(fds[1]);
  Outcome out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.report.append(buf, n);
  close(fds[0]);
  for (int i = 0; i < 2000; ++i) {
    if (waitpid(pid, &out.status, WNOHANG) == pid) return out;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &out.status, 0);
  ADD_FAILURE() << "the crashing child hung\n" << out.report;
  return out;
}

// The function named on report line "#<index> ...", or "".
std::string FrameFunction(const std::string& report, int index) {
  std::string tag = "#" + std::to_string(index) + " ";
  size_t at = report.find("\n" + tag);
  if (at == std::string::npos) return "";
  size_t in = report.find(" in ", at);
  size_t eol = report.find('\n', at + 1);
  if (in == std::string::npos || in > eol) return "";
  size_t plus = report.rfind('+', report.find(" (", in));
  return report.substr(in + 4, plus - in - 4);
}

bool DiedBy(int status, int sig) { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }

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

}  // namespace
