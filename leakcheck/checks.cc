#include "leakcheck/checks.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "leakcheck/frame_namer.h"
#include "leakcheck/recording.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/report_model.h"
#include "leakcheck/report_render_json.h"
#include "leakcheck/report_render_text.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/session.h"
#include "leakcheck/snapshots.h"
#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck {

size_t SelectBlocks(Allocation* blocks, size_t n, std::vector<Verdict>* verdicts,
                    CheckScope* scope) {
  std::vector<Verdict>& v = *verdicts;
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    Allocation a = blocks[i];
    const Verdict verdict = i < v.size() ? v[i] : Verdict::kLive;
    if (IsIgnored(a) || verdict == Verdict::kIgnored) continue;
    if (scope != nullptr && IsReported(a)) continue;
    a.sequence = SequenceNumber(a);
    if (scope != nullptr && IsLeak(verdict)) scope->leaks.push_back(a);
    blocks[kept] = a;
    if (kept < v.size()) v[kept] = verdict;
    ++kept;
  }
  if (v.size() > kept) v.resize(kept);
  return kept;
}

namespace {

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

int KindOf(Verdict verdict) {
  return verdict == Verdict::kIndirect    ? STACKWALK_LEAK_INDIRECT
         : verdict == Verdict::kReachable ? STACKWALK_LEAK_REACHABLE
                                          : STACKWALK_LEAK_DIRECT;
}

// Checks so far, and when each (stack, kind) first had a leak: under ReportLock(). Never freed
// (a periodic check may run while exit() runs destructors).
uint64_t g_checks = 0;
struct FirstSeen {
  uint64_t check = 0;
  uint64_t unix_ns = 0;
};
std::vector<FirstSeen>* g_first_seen = nullptr;

FirstSeen& FirstSeenOf(uint32_t stack_id, int kind) {
  if (g_first_seen == nullptr) g_first_seen = new std::vector<FirstSeen>();
  const size_t key = static_cast<size_t>(stack_id) * 3 + static_cast<size_t>(kind);
  if (key >= g_first_seen->size()) g_first_seen->resize(key + 1);
  return (*g_first_seen)[key];
}

stackwalk_leak_record RecordOf(const ReportEntry& entry, uint64_t check, uint64_t unix_ns) {
  stackwalk_leak_record r{};
  r.kind = KindOf(entry.verdict);
  r.bytes = entry.bytes;
  r.allocations = entry.count;
  FirstSeen& seen = FirstSeenOf(entry.stack_id, r.kind);
  if (seen.check == 0) seen = {check, unix_ns};
  r.first_seen_check = seen.check;
  r.first_seen_unix_ns = seen.unix_ns;
  r.tid = entry.tid;
  std::snprintf(r.thread, sizeof(r.thread), "%s", entry.thread_name.c_str());
  r.pc_count = static_cast<uint32_t>(std::min<size_t>(entry.pcs.size(), STACKWALK_LEAK_MAX_PCS));
  std::copy_n(entry.pcs.begin(), r.pc_count, r.pcs);
  return r;
}

}  // namespace

void RunLeakCheck(State& state, size_t deliver, bool append_report, CheckRun* out) {
  ReentryGuard own;  // the check's memory is not the program's
  const uint64_t start = ClockNs(CLOCK_MONOTONIC);
  FairLockHolder hold(ReportLock());
  const uint64_t number = ++g_checks;
  const uint64_t now = ClockNs(CLOCK_REALTIME);
  char occasion[80];
  if (number == 1) {
    std::snprintf(occasion, sizeof(occasion), "check 1: leaks found since the start");
  } else {
    std::snprintf(occasion, sizeof(occasion), "check %" PRIu64 ": leaks found since check %" PRIu64,
                  number, number - 1);
  }
  CheckScope scope;
  std::unique_ptr<FrameNamer> namer;
  // A check's report goes to the dump too (with program_report=0, only there: the launcher names
  // it); the check itself names in the program all the same, for its records and listeners.
  const bool dumping = append_report && state.options.dump[0] != '\0';
  std::string dump;
  const LeakReport report = BuildReport(state, occasion, ReportCount() + 1, &namer, &scope,
                                        dumping ? &dump : nullptr);

  stackwalk_leak_summary& summary = out->summary;
  summary = {};
  summary.check = number;
  summary.reachable_bytes = report.summary.reachable_bytes;
  summary.reachable_allocations = report.summary.reachable_allocations;
  // How the check stopped the world (the report's "stop"), for callers timing the pause.
  summary.pause_ns = report.summary.pause_ns;
  summary.method = report.summary.method == "ptrace"   ? 1
                   : report.summary.method == "signal" ? 2
                                                       : 0;
  summary.unstopped = static_cast<int>(report.summary.unstopped.size());
  const UntrackedCounts& untracked = report.summary.untracked;
  summary.untracked_allocations = untracked.allocations();
  summary.untracked_bytes = untracked.bytes;
  summary.untracked_refused = untracked.refused;
  summary.untracked_no_memory = untracked.no_memory;
  out->records.clear();
  // The (stack, verdict) of each record returned: their blocks are flagged.
  std::vector<std::pair<uint32_t, Verdict>> returned;
  for (const ReportEntry& entry : report.entries) {
    if (!IsLeak(entry.verdict)) continue;
    out->records.push_back(RecordOf(entry, number, now));
    const bool direct = entry.verdict == Verdict::kDirect;
    (direct ? summary.direct_bytes : summary.indirect_bytes) += entry.bytes;
    (direct ? summary.direct_allocations : summary.indirect_allocations) += entry.count;
    if (out->records.size() <= deliver) returned.emplace_back(entry.stack_id, entry.verdict);
  }
  std::sort(returned.begin(), returned.end());
  BlockCopies flag;
  for (const Allocation& a : scope.leaks) {
    // The leak's verdict is not kept beside it: either of its stack's leak records returned
    // covers it only if that record's kind is the block's, so look both up.
    for (Verdict v : {Verdict::kDirect, Verdict::kIndirect}) {
      if (std::binary_search(returned.begin(), returned.end(), std::make_pair(a.stack_id, v))) {
        flag.push_back(a);
        break;
      }
    }
  }
  state.allocations.MarkReported(flag.data(), flag.size());

  if (append_report) {
    const Options& options = state.options;
    if (dumping) DeliverDump(options.dump, DumpsWritten() == 0, dump);
    if (options.program_report || !dumping) {
      const std::string text =
          options.json ? RenderJson(report)
                       : RenderText(report, [&namer](const std::vector<SymbolizedFrame>& frames) {
                           return namer != nullptr ? namer->Format(frames) : std::string();
                         });
      DeliverReport(options.output, ReportCount() == 0, text);
    }
    ++ReportCount();
  }
  summary.check_ns = ClockNs(CLOCK_MONOTONIC) - start;
}

int CheckInto(State& state, stackwalk_leak_record* out, size_t capacity, size_t* count,
              stackwalk_leak_summary* summary) {
  if (out == nullptr) capacity = 0;
  CheckRun run;
  RunLeakCheck(state, capacity, false, &run);
  const size_t n = std::min(capacity, run.records.size());
  if (n > 0) std::memcpy(out, run.records.data(), n * sizeof(stackwalk_leak_record));
  if (count != nullptr) *count = run.records.size();
  if (summary != nullptr) *summary = run.summary;
  CallListeners(run);
  return run.records.size() > capacity ? STACKWALK_LEAKCHECK_TRUNCATED : STACKWALK_LEAKCHECK_OK;
}

int CheckEach(State& state, void (*each)(const stackwalk_leak_record*, void*), void* arg,
              stackwalk_leak_summary* summary) {
  CheckRun run;
  RunLeakCheck(state, SIZE_MAX, false, &run);
  if (each != nullptr) {
    for (const stackwalk_leak_record& r : run.records) each(&r, arg);
  }
  if (summary != nullptr) *summary = run.summary;
  CallListeners(run);
  return STACKWALK_LEAKCHECK_OK;
}

int IgnoreBlock(State& state, const void* block) {
  return state.allocations.MarkIgnored(reinterpret_cast<uintptr_t>(block))
             ? STACKWALK_LEAKCHECK_OK
             : STACKWALK_LEAKCHECK_NOT_A_BLOCK;
}

// The listeners: a fixed table (no allocation to add one); a slot is reused only once no call
// of its previous listener runs.
namespace {

constexpr int kMaxListeners = 16;
struct ListenerSlot {
  stackwalk_leak_listener fn = nullptr;
  void* arg = nullptr;
  int id = 0;                // 0: free
  std::atomic<int> calls{0};  // calls running now
};
ListenerSlot g_listeners[kMaxListeners];
SpinLock g_listeners_lock;
int g_next_listener_id = 1;
thread_local int t_in_listener = 0;

}  // namespace

int AddListener(stackwalk_leak_listener listener, void* arg) {
  if (listener == nullptr) return STACKWALK_LEAKCHECK_NO_SUCH_LISTENER;
  SpinLockHolder hold(g_listeners_lock);
  for (ListenerSlot& slot : g_listeners) {
    if (slot.id != 0 || slot.calls.load() != 0) continue;
    slot.fn = listener;
    slot.arg = arg;
    slot.id = g_next_listener_id++;
    return slot.id;
  }
  return STACKWALK_LEAKCHECK_TOO_MANY_LISTENERS;
}

int RemoveListener(int id) {
  ListenerSlot* found = nullptr;
  {
    SpinLockHolder hold(g_listeners_lock);
    for (ListenerSlot& slot : g_listeners) {
      if (id > 0 && slot.id == id) {
        slot.id = 0;
        // A call running now has its own copies. The table is in the checker's globals, a root:
        // the program's argument left here would keep the block it names reachable once freed
        // and reused.
        slot.fn = nullptr;
        slot.arg = nullptr;
        found = &slot;
        break;
      }
    }
  }
  if (found == nullptr) return STACKWALK_LEAKCHECK_NO_SUCH_LISTENER;
  // Wait for calls running on other threads; from inside a listener that may be this very call.
  if (t_in_listener == 0) {
    while (found->calls.load() != 0) sched_yield();
  }
  return STACKWALK_LEAKCHECK_OK;
}

void CallListeners(const CheckRun& run) {
  struct Call {
    stackwalk_leak_listener fn;
    void* arg;
    ListenerSlot* slot;
  } calls[kMaxListeners];
  int n = 0;
  {
    SpinLockHolder hold(g_listeners_lock);
    for (ListenerSlot& slot : g_listeners) {
      if (slot.id == 0) continue;
      slot.calls.fetch_add(1);
      calls[n++] = {slot.fn, slot.arg, &slot};
    }
  }
  for (int i = 0; i < n; ++i) {
    ++t_in_listener;
    calls[i].fn(run.records.data(), run.records.size(), &run.summary, calls[i].arg);
    --t_in_listener;
    calls[i].slot->calls.fetch_sub(1);
  }
}

// The periodic checker: waits `interval` on a semaphore (posted to stop it), then checks.
namespace {

State* g_check_state = nullptr;
int g_interval = 0;
sem_t g_checker_wake;
pthread_t g_checker;
std::atomic<bool> g_checker_running{false};
std::atomic<bool> g_checker_stopping{false};
std::atomic<int32_t> g_checker_tid{0};

void* CheckerMain(void*) {
  // Nothing on this thread is the program's but the listeners' frames, gone by each check: its
  // stack is a root from here up only, not the checker's frames where they ran.
  CheckEntry entry;
  ReentryGuard own_thread;  // everything this thread allocates is the checker's
  RegisterCheckerThread();  // a check by another thread neither stops it nor scans its stack
  g_checker_tid.store(static_cast<int32_t>(syscall(SYS_gettid)));
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (;;) {
    next.tv_sec += g_interval;
    while (sem_clockwait(&g_checker_wake, CLOCK_MONOTONIC, &next) != 0 && errno == EINTR) {
    }
    if (g_checker_stopping.load()) break;
    CheckRun run;
    RunLeakCheck(*g_check_state, SIZE_MAX, true, &run);
    CallListeners(run);
    // A check that took longer than the interval: the next one starts an interval after it.
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > next.tv_sec) next = now;
  }
  g_checker_tid.store(0);
  UnregisterCheckerThread();
  return nullptr;
}

bool LaunchChecker() {
  g_checker_stopping.store(false);
  sem_init(&g_checker_wake, 0, 0);
  const bool ok = LaunchCheckerThread(&g_checker, CheckerMain, "stackwalk-check");
  g_checker_running.store(ok);
  return ok;
}

void ListenersBeforeFork() { g_listeners_lock.Lock(); }
void ListenersAfterForkParent() { g_listeners_lock.Unlock(); }
void ListenersAfterForkChild() {
  g_listeners_lock.Unlock();
  // Calls running in the parent's other threads are not the child's.
  for (ListenerSlot& slot : g_listeners) slot.calls.store(0);
  // The checker thread was not copied: the child gets its own.
  g_checker_tid.store(0);
  if (g_checker_running.load()) LaunchChecker();
}

}  // namespace

void InstallPeriodicCheckForkHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(ListenersBeforeFork, ListenersAfterForkParent, ListenersAfterForkChild);
  });
}

bool StartPeriodicChecks(State& state, int seconds) {
  if (seconds <= 0 || g_checker_running.load()) return false;
  InstallPeriodicCheckForkHandlers();
  g_check_state = &state;
  g_interval = seconds;
  return LaunchChecker();
}

void StopPeriodicChecks() {
  if (!g_checker_running.exchange(false)) return;
  g_checker_stopping.store(true);
  sem_post(&g_checker_wake);
  if (pthread_equal(pthread_self(), g_checker)) {
    pthread_detach(g_checker);  // stopped from its own listener: it ends after the call
  } else {
    pthread_join(g_checker, nullptr);
  }
}

size_t CheckerThreadIds(int32_t* out, size_t capacity) {
  size_t n = 0;
  for (int32_t tid : {g_checker_tid.load(), SignalReporterTid(), SnapshotThreadTid()}) {
    if (tid == 0) continue;
    if (n < capacity && out != nullptr) out[n] = tid;
    ++n;
  }
  return n;
}

}  // namespace stackwalk::leakcheck
