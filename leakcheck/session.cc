#include "leakcheck/session.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "leakcheck/exitcode.h"
#include "leakcheck/record_region.h"
#include "leakcheck/recording.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/sampler.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/snapshots.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {
namespace {

// The locks in WriteReport's order; other libraries' fork handlers that run while they are held
// allocate unrecorded (SetForking). ReportLock is fair: the fork waits for the report or check
// running now and those queued before it, never behind a thread that reports without pause.
void BeforeFork() {
  ReportLock().Lock();
  GlobalState().stacks.LockAll();
  GlobalState().allocations.LockAll();
  RecordBeforeFork();  // the tables as they are now, for the child (record_region.h)
  SetForking(true);
  SamplerBeforeFork();
}
void UnlockTables() {
  SetForking(false);
  GlobalState().allocations.UnlockAll();
  GlobalState().stacks.UnlockAll();
}
void AfterForkParent() {
  RecordAfterForkParent();
  UnlockTables();
  ReportLock().Unlock();
}
void AfterForkChild();

// The signal reporter: the handler posts the semaphore (async-signal-safe), the thread waits on
// it and writes the report outside signal context.
sem_t g_report_requests;
std::atomic<bool> g_reporter_running{false};
std::atomic<bool> g_reporter_stopping{false};
pthread_t g_reporter;
int g_report_signal = 0;
struct sigaction g_previous_action;
std::atomic<int32_t> g_reporter_tid{0};

void OnReportSignal(int) {
  int saved = errno;
  sem_post(&g_report_requests);
  errno = saved;
}

void* ReporterMain(void*) {
  CheckEntry entry;  // nothing on this thread is the program's: its stack is a root from here up
  ReentryGuard own_thread;  // everything this thread allocates is the checker's
  RegisterCheckerThread();  // a check by another thread neither stops it nor scans its stack
  g_reporter_tid.store(static_cast<int32_t>(syscall(SYS_gettid)));
  char occasion[32];
  std::snprintf(occasion, sizeof(occasion), "signal %d", g_report_signal);
  for (;;) {
    while (sem_wait(&g_report_requests) != 0) {
    }
    if (g_reporter_stopping.load()) break;
    WriteReport(GlobalState(), occasion);
  }
  UnregisterCheckerThread();
  g_reporter_tid.store(0);
  return nullptr;
}

bool LaunchReporter() {
  g_reporter_stopping.store(false);
  sem_init(&g_report_requests, 0, 0);
  const bool ok = LaunchCheckerThread(&g_reporter, ReporterMain, "stackwalk-leaks");
  g_reporter_running.store(ok);
  return ok;
}

void AfterForkChild() {
  // Before anything records again: the parent's record region is the parent's (record_region.h).
  RecordLeaveAfterFork();
  if (GlobalState().preloaded) DecideQuietCleanExit();  // a child is below the launcher's program
  UnlockTables();
  GlobalState().timeline.AfterForkChild();
  // The parent's threads that were waiting for a report were not copied: their turns go too.
  ReportLock().UnlockInForkChild();
  ForgetThreadAfterFork();
  g_reporter_tid.store(0);
  KeepReportDestination();  // the child reports its own blocks, as itself
  // The reporter thread was not copied: the child gets its own.
  ForgetCheckerThreads();
  if (g_reporter_running.load()) LaunchReporter();
}

}  // namespace

bool LaunchCheckerThread(pthread_t* thread, void* (*main)(void*), const char* name) {
  ReentryGuard setup;  // the thread's own memory is the checker's
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);  // inherited by the new thread
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  const bool ok = pthread_create(thread, &attr, main, nullptr) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (ok) pthread_setname_np(*thread, name);
  return ok;
}

void InstallForkHandlers() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(BeforeFork, AfterForkParent, AfterForkChild); });
}

bool StartSignalReports(int signo) {
  if (signo <= 0 || signo >= NSIG || g_reporter_running.load()) return false;
  g_report_signal = signo;
  if (!LaunchReporter()) return false;
  struct sigaction action = {};
  action.sa_handler = OnReportSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  return sigaction(signo, &action, &g_previous_action) == 0;
}

void StopSignalReports() {
  if (!g_reporter_running.exchange(false)) return;
  sigaction(g_report_signal, &g_previous_action, nullptr);
  g_reporter_stopping.store(true);
  sem_post(&g_report_requests);
  pthread_join(g_reporter, nullptr);
}

int32_t SignalReporterTid() { return g_reporter_tid.load(); }

bool LaunchersProgram() {
  const char* root = getenv("STACKWALK_LEAKCHECK_PID");
  return root != nullptr && std::atol(root) == static_cast<long>(getpid());
}

bool ChosenProcess(const Options& options) {
  return options.follow_exec || getenv("STACKWALK_LEAKCHECK_PID") == nullptr || LaunchersProgram();
}

void DecideQuietCleanExit() {
  State& s = GlobalState();
  s.quiet_clean_exit = !s.options.report_clean && !LaunchersProgram();
}

void ReportAtExit() {
  State& s = GlobalState();
  if (!s.configured.load() || !s.active.load()) return;
  EndSnapshots();  // none cut by the end, none after the report
  if (!s.options.report_at_exit) return;
  // Once: exit handlers and _exit can both get here (a handler that calls _exit, the exitcode).
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) return;
  // The check reads this thread's stack from here up: the exit's frames, not the freeres calls'
  // dead ones that the report's frames come over.
  CheckEntry entry;
  ReentryGuard own;  // the report's memory is not the program's
  using Freeres = void (*)();
  if (auto gnu = reinterpret_cast<Freeres>(dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv"))) gnu();
  if (auto libc = reinterpret_cast<Freeres>(dlsym(RTLD_DEFAULT, "__libc_freeres"))) libc();
  ReportTotals leaks = WriteReport(s, "exit");
  RecordExitReported();
  const ExitcodeDecision exitcode =
      DecideExitcode(s.options.exitcode, leaks.allocations, leaks.untracked);
  if (!exitcode.note.empty()) WriteToStderr(exitcode.note);
  if (exitcode.applies) _exit(s.options.exitcode);
}

}  // namespace stackwalk::leakcheck
