// State: the leak checker's process-wide state: options (and the copy the hooks read), the
// live-allocation table, the live-byte counters, the stack table, the threads and the unloaded
// objects. Constant-initialized and never destroyed, so allocation hooks can use it before any
// constructor has run and after every destructor. Also the report's entry point, WriteReport.
#ifndef STACKWALK_LEAKCHECK_STATE_H_
#define STACKWALK_LEAKCHECK_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "leakcheck/allocation_table.h"
#include "leakcheck/fair_lock.h"
#include "leakcheck/live_bytes.h"
#include "leakcheck/options.h"
#include "leakcheck/sampler.h"
#include "leakcheck/stack_table.h"
#include "leakcheck/thread_registry.h"
#include "leakcheck/timeline.h"
#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck {

class ClosedModules;
class FrameNamer;
struct CheckScope;
struct LeakReport;

// What the allocation hooks read of the options, each on its own: a hook that began in one
// in-process session may still be running when the next Start() publishes new options.
struct RecordingOptions {
  std::atomic<uint64_t> min_size{0};
  std::atomic<int> max_frames{Options().max_frames};  // Options' default until published
  std::atomic<int> method{0};
  std::atomic<uint64_t> sample_bytes{0};  // sampler.h
  std::atomic<uint64_t> sample_seed{0};

  void Publish(const Options& options) {
    min_size.store(options.min_size, std::memory_order_relaxed);
    sample_bytes.store(options.sample_bytes, std::memory_order_relaxed);
    sample_seed.store(options.sample_seed, std::memory_order_relaxed);
    max_frames.store(options.max_frames, std::memory_order_relaxed);
    method.store(options.method, std::memory_order_relaxed);
    NewSamplerGeneration();  // after the options: a licence from before them is void
  }
};

struct State {
  Options options;  // the whole set, for reports and start-up; the hooks read `recording`
  RecordingOptions recording;
  std::atomic<bool> configured{false};
  // Hooks record only while active: preloaded, from the first allocation of a process the
  // launcher checks (ChosenProcess, session.h), never in one it does not; in-process, between
  // Start() and Stop().
  std::atomic<bool> active{false};
  // A clean exit report to stderr is left out (report.cc): set at start-up and in a forked child
  // for a process the checker was preloaded into that is not the program the launcher runs (raw
  // LD_PRELOAD, every process; under the launcher, the processes it forks and, with
  // --follow-exec, the programs they run), unless report_clean (DecideQuietCleanExit). The
  // launcher's program and an in-process Start() write it: someone asked.
  bool quiet_clean_exit = false;
  bool preloaded = false;  // started by the preload (a forked child decides the above again)
  AllocationTable allocations{&g_recorded_blocks};
  // Every recorded allocation and free writes live_bytes and reads peak_epoch: each on a cache
  // line of its own, so that the one's traffic between cores does not evict the other, nor the
  // stack table's first fields, from the reading cores.
  alignas(64) PeakCounter live_bytes;  // the process's recorded live bytes and their exact peak
  // Bumped after each new peak of live_bytes: how stacks know what they held at the last peak
  // (stack_stats.h).
  alignas(64) std::atomic<uint64_t> peak_epoch{0};
  alignas(64) StackTable stacks;
  ThreadRegistry threads;
  Timeline timeline;  // live bytes over time, sampled by the hooks
  std::atomic<ClosedModules*> closed{nullptr};  // created at the first dlclose, never freed
  // Raised at each dlclose to the sequence number it stamped: a thread whose block of numbers
  // lies below it takes a new block, so allocations after the unload number above it.
  std::atomic<uint64_t> sequence_floor{0};
};

State& GlobalState();

// The unloaded-module registry, created on first use (allocates: call under a ReentryGuard).
ClosedModules& ClosedModuleRegistry(State& state);

struct ReportTotals {
  uint64_t bytes = 0;
  uint64_t allocations = 0;
  UntrackedCounts untracked;  // in neither figure (untracked.h)
};

// Writes the report of the allocations live now (leaks, at exit) to the configured output.
// `occasion` names what asked for it ("exit", "signal 12", "request"); the first report of the
// process replaces the output file, later ones are appended. Not signal-safe; serializes callers;
// call under a ReentryGuard.
ReportTotals WriteReport(State& state, const char* occasion);

// The model of the report of the allocations live now, without rendering it: what WriteReport
// writes, and what a check in a running process returns as records. `number` is the report's
// place among the process's reports; `*namer` receives the frame namer if one was loaded (the
// text renderer formats frames through it). With `scope` (a check in a running process,
// checks.h), a scan runs whatever the options say and only the blocks no earlier check returned
// are in the model. With `dump`, it gets the report's raw record (leakcheck/dump/), encoded, made
// before anything is named. Call with ReportLock() held, under a ReentryGuard.
LeakReport BuildReport(State& state, const char* occasion, int number,
                       std::unique_ptr<FrameNamer>* namer, CheckScope* scope = nullptr,
                       std::string* dump = nullptr);

// The lock WriteReport and every check hold; taken around fork() too, so a child never inherits
// it held. Fair (fair_lock.h): a fork or a check waits for the reports queued before it only.
FairLock& ReportLock();
// The reports the process wrote so far (its first starts the output file): under ReportLock().
int& ReportCount();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_STATE_H_
