#include "leakcheck/snapshots.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

#include "leakcheck/dump/dump_collect.h"
#include "leakcheck/dump/dump_encode.h"
#include "leakcheck/recording.h"
#include "leakcheck/report_collect.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/session.h"
#include "stackwalk/leakcheck.h"

namespace stackwalk::leakcheck {
namespace {

int g_snapshots_written = 0;  // under ReportLock()
bool g_ended = false;         // under ReportLock(): the process is ending

// The snapshot thread: the handler posts the semaphore (async-signal-safe); the thread waits on
// it, or until the next interval is due, and writes the snapshot outside signal context.
State* g_state = nullptr;
int g_signal = 0;
int g_interval_s = 0;
sem_t g_wake;
pthread_t g_thread;
std::atomic<bool> g_running{false};
std::atomic<bool> g_stopping{false};
std::atomic<int32_t> g_tid{0};
struct sigaction g_previous_action;

void OnSnapshotSignal(int) {
  const int saved = errno;
  sem_post(&g_wake);
  errno = saved;
}

// Waits for a signal's post, the next interval or the stop.
void WaitForTurn(timespec* next) {
  if (g_interval_s == 0) {
    while (sem_wait(&g_wake) != 0) {
    }
    return;
  }
  int r;
  while ((r = sem_clockwait(&g_wake, CLOCK_MONOTONIC, next)) != 0 && errno == EINTR) {
  }
  if (r != 0) {  // the interval is up: the next one starts from it, or from now if it is past
    next->tv_sec += g_interval_s;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > next->tv_sec) *next = now;
  }
}

void* SnapshotMain(void*) {
  ReentryGuard own_thread;  // everything this thread allocates is the checker's
  RegisterCheckerThread();  // a check by another thread neither stops it nor scans its stack
  g_tid.store(static_cast<int32_t>(syscall(SYS_gettid)));
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  next.tv_sec += g_interval_s;
  for (;;) {
    WaitForTurn(&next);
    if (g_stopping.load()) break;
    WriteSnapshot(*g_state);
  }
  g_tid.store(0);
  UnregisterCheckerThread();
  return nullptr;
}

bool LaunchSnapshotThread() {
  g_stopping.store(false);
  sem_init(&g_wake, 0, 0);
  const bool ok = LaunchCheckerThread(&g_thread, SnapshotMain, "stackwalk-snap");
  g_running.store(ok);
  return ok;
}

void AfterForkChild() {
  // The thread was not copied: the child gets its own (its snapshots go to its own dump, %p).
  g_tid.store(0);
  if (g_running.load()) LaunchSnapshotThread();
}

}  // namespace

int DumpsWritten() { return ReportCount() + g_snapshots_written; }

int WriteSnapshot(State& state) {
  if (state.options.dump[0] == '\0') return STACKWALK_LEAKCHECK_NO_DUMP;
  FairLockHolder hold(ReportLock());
  if (g_ended) return STACKWALK_LEAKCHECK_NOT_STARTED;
  const int number = g_snapshots_written + 1;
  char occasion[32];
  std::snprintf(occasion, sizeof(occasion), "snapshot %d", number);
  LeakReport header;
  CollectHeader(state, occasion, ReportCount() + 1, &header);
  // No scan and no blocks: the stack statistics carry each stack's live bytes and blocks.
  dump::CollectedDump d = dump::CollectDump(state, header, nullptr, 0, {}, {});
  d.contents.process.snapshot = true;
  DeliverDump(state.options.dump, DumpsWritten() == 0, [&d](const DumpWriter& write) {
    dump::EncodeDump(d.contents, *d.stacks, *d.stats, write);
  });
  ++g_snapshots_written;
  return number;
}

void EndSnapshots() {
  FairLockHolder hold(ReportLock());
  g_ended = true;
}

void InstallSnapshotForkHandlers() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, AfterForkChild); });
}

bool StartSnapshots(State& state, int signo, int interval_s) {
  if ((signo == 0 && interval_s <= 0) || signo < 0 || signo >= NSIG || interval_s < 0 ||
      state.options.dump[0] == '\0' || g_running.load()) {
    return false;
  }
  InstallSnapshotForkHandlers();
  g_state = &state;
  g_signal = signo;
  g_interval_s = interval_s;
  if (!LaunchSnapshotThread()) return false;
  if (signo == 0) return true;
  struct sigaction action = {};
  action.sa_handler = OnSnapshotSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signo, &action, &g_previous_action) == 0) return true;
  g_signal = 0;  // no handler of ours to take back
  StopSnapshots();
  return false;
}

bool StartSnapshotsAsked(State& state) {
  const Options& o = state.options;
  if (o.snapshot_signal == 0 && o.snapshot_interval == 0) return true;
  const char* why = nullptr;
  if (o.dump[0] == '\0') {
    why = "they are kept only in the dump file: set dump (--dump FILE)";
  } else if (o.snapshot_signal != 0 && o.snapshot_signal == o.report_signal) {
    why = "snapshot_signal is the report's signal (report_signal)";
  } else if (!StartSnapshots(state, o.snapshot_signal, o.snapshot_interval)) {
    why = "the snapshot thread or its signal handler could not be set up";
  }
  if (why == nullptr) return true;
  std::fprintf(stderr, "stackwalk-leakcheck: no snapshots are taken: %s\n", why);
  return false;
}

void StopSnapshots() {
  if (!g_running.exchange(false)) return;
  if (g_signal != 0) sigaction(g_signal, &g_previous_action, nullptr);
  g_stopping.store(true);
  sem_post(&g_wake);
  pthread_join(g_thread, nullptr);
}

int32_t SnapshotThreadTid() { return g_tid.load(); }

}  // namespace stackwalk::leakcheck
