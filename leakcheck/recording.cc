#include "leakcheck/recording.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "leakcheck/closed_modules.h"
#include "leakcheck/record_region.h"
#include "leakcheck/sampler.h"
#include "leakcheck/scan/exited_stacks.h"
#include "leakcheck/session.h"
#include "stackwalk/capture.h"
#include "stackwalk/stackwalk.h"

namespace stackwalk::leakcheck {

// Initial-exec: the thread-locals live in static TLS, so touching them never allocates.
__thread bool t_inside_checker __attribute__((tls_model("initial-exec"))) = false;
__attribute__((tls_model("initial-exec"))) static thread_local uint32_t t_serial = 0;
// The copy of each stack's statistics this thread owns (StackTable::ClaimStatsCopy), or 0: the
// shared one.
__attribute__((tls_model("initial-exec"))) static thread_local uint32_t t_stats_copy = 0;
__attribute__((tls_model("initial-exec"))) static thread_local bool t_forking = false;
__attribute__((tls_model("initial-exec"))) static thread_local bool t_world_stopped = false;
static std::atomic<uint64_t> g_hooks_while_stopped{0};
// This thread's block of sequence numbers: one shared atomic per kSequenceBlock allocations.
__attribute__((tls_model("initial-exec"))) static thread_local uint64_t t_sequence_next = 0;
__attribute__((tls_model("initial-exec"))) static thread_local uint64_t t_sequence_end = 0;
constexpr uint64_t kSequenceBlock = 64;
// This thread's last recorded allocation (address and sequence number), until it frees it or
// allocates again: a free of exactly it is a temporary allocation (stack_stats.h). The address is
// kept inverted: thread-local storage is a root of the leak scan, and a plain copy would keep the
// block reachable.
__attribute__((tls_model("initial-exec"))) static thread_local uintptr_t t_last_address_inverted = 0;
__attribute__((tls_model("initial-exec"))) static thread_local uint64_t t_last_sequence = 0;

State& GlobalState() {
  static State state;  // constant-initialized, trivially destructible
  return state;
}

ClosedModules& ClosedModuleRegistry(State& state) {
  ClosedModules* closed = state.closed.load(std::memory_order_acquire);
  if (closed == nullptr) {
    auto* fresh = new ClosedModules();
    if (state.closed.compare_exchange_strong(closed, fresh, std::memory_order_acq_rel)) {
      closed = fresh;
    } else {
      delete fresh;
    }
  }
  return *closed;
}

namespace {
// Only the preloaded library gets here (Start() configures the in-process one first): in a
// process the launcher checks it records from the first allocation on. Out of line: once a
// process.
__attribute__((noinline)) void ConfigureFromEnvironment(State& s) {
  s.options = ParseOptions(getenv("STACKWALK_LEAKCHECK"));
  // A process the launcher does not check (started below its program, without --follow-exec)
  // records nothing from its first allocation on, and sets nothing up for it: its start lets go
  // of the library (preload.cc). Setting up took ~0.6 ms a process.
  if (!ChosenProcess(s.options)) {
    s.configured.store(true, std::memory_order_release);
    return;
  }
  // libstackwalk's set-up, now rather than in its constructors: a preloaded library's run after
  // those of the objects the program links, whose allocations come first. Without the list of
  // loaded objects each of their walks that left the known code (ld.so's entry, which has no
  // CFI) read /proc/self/maps, and without the caches' key each frame took a full CFI step:
  // GnuTLS's constructor in each `cmake -E` made 1,294 reads, ~1 s.
  stackwalk_prepare();
  s.recording.Publish(s.options);
  s.timeline.Start(static_cast<uint32_t>(s.options.timeline_interval_ms));
  s.active.store(true, std::memory_order_release);
  s.configured.store(true, std::memory_order_release);
}
}  // namespace

State& ConfiguredState() {
  State& s = GlobalState();
  if (!s.configured.load(std::memory_order_acquire)) ConfigureFromEnvironment(s);
  return s;
}

namespace {

// Tells the registry a thread's final name when it exits, and records its stack, which glibc
// may keep for a later thread: its words are dead from now on (threads that allocated only).
pthread_key_t g_exit_key;
std::atomic<int> g_exit_key_state{0};  // 0 none, 1 creating, 2 ready

void ThreadExiting(void* serial) {
  ReentryGuard own;  // what pthread_getattr_np allocates is the checker's
  // Its statistics copy for a later thread; what it frees from now on (other keys' destructors)
  // takes the shared copy.
  const uint32_t copy = t_stats_copy;
  t_stats_copy = 0;
  GlobalState().stacks.ReleaseStatsCopy(copy);
  GlobalState().threads.MarkExited(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(serial)));
  RecordExitingThreadStack();
}

// True if ThreadExiting will run when the calling thread exits.
bool WatchThreadExit(uint32_t serial) {
  int expected = 0;
  if (g_exit_key_state.compare_exchange_strong(expected, 1)) {
    g_exit_key_state.store(pthread_key_create(&g_exit_key, ThreadExiting) == 0 ? 2 : 3);
  }
  return g_exit_key_state.load() == 2 &&
         pthread_setspecific(g_exit_key, reinterpret_cast<void*>(uintptr_t{serial})) == 0;
}

}  // namespace

namespace {
// A thread's first recorded allocation: out of line, so that the others' ThreadSerial inlines.
__attribute__((noinline)) void RegisterThread() {
  State& s = GlobalState();
  t_serial = s.threads.RegisterCurrent(static_cast<int32_t>(syscall(SYS_gettid)));
  if (t_serial == 0) return;
  // A copy of its own only if its exit will give it back (else the shared one: the key may still
  // be in the making by another thread, or could not be made).
  if (WatchThreadExit(t_serial)) t_stats_copy = s.stacks.ClaimStatsCopy(t_serial);
}
}  // namespace

uint32_t ThreadSerial() {
  if (__builtin_expect(t_serial == 0, false)) RegisterThread();
  return t_serial;
}

uint32_t KnownThreadSerial() { return t_serial; }

void SetForking(bool forking) {
  t_forking = forking;
  if (forking) RevokeUnsampled();  // the full hook skips its allocations
}

void SetWorldStopped(bool stopped) {
  t_world_stopped = stopped;
  if (stopped) RevokeUnsampled();  // the full hook counts its allocations
}
uint64_t HooksWhileWorldStopped() { return g_hooks_while_stopped.load(std::memory_order_relaxed); }

namespace {
// True (and counted) if this thread is a leak check's, with the world stopped.
bool WorldStoppedHere() {
  if (!t_world_stopped) return false;
  g_hooks_while_stopped.fetch_add(1, std::memory_order_relaxed);
  return true;
}
}  // namespace

void ForgetThreadAfterFork() {
  t_serial = 0;
  t_stats_copy = 0;
  GlobalState().stacks.ForgetStatsOwners();  // the parent's threads are not in the child
  t_sequence_next = t_sequence_end = 0;
  t_last_address_inverted = 0;
  ExitedStacksAfterForkChild();
  SamplerAfterForkChild();
}

namespace {
// Calls own(StackStats&) with the calling thread's own copy of a stack's statistics if it owns
// one (and it could be mapped), else shared(StackStats&) with the shared copy. While the owned
// copy is updated the thread owns none: a signal handler's hook that lands between a field's
// load and its store takes the shared copy instead of writing the same field.
template <class Own, class Shared>
[[gnu::always_inline]] inline void UpdateStats(State& s, uint32_t stack_id, Own&& own,
                                               Shared&& shared) {
  const uint32_t copy = t_stats_copy;
  if (copy != 0) {
    if (StackStats* stats = s.stacks.OwnedStats(stack_id, copy)) {
      t_stats_copy = 0;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      own(*stats);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      t_stats_copy = copy;
      return;
    }
  }
  if (StackStats* stats = s.stacks.SharedStats(stack_id)) shared(*stats);
}

// The live bytes and peaks: the process's, and the allocating thread's; exact, or when sampling
// the estimate of each recorded block (sampler.h); and the stack's statistics (in the same
// bytes; their counts are of recorded blocks), changed first so that a peak this makes comes
// after the stack's change. Returns whether the process's live bytes reached a new peak. Inlined
// into the hooks, as are CountFreed and Forget: the calls were a tenth of their cost.
[[gnu::always_inline]] inline bool CountAllocated(State& s, uint32_t serial, uint64_t size,
                                                  uint32_t stack_id, bool made) {
  size = EstimatedBytes(size, s.recording.sample_bytes.load(std::memory_order_relaxed));
  const uint64_t epoch = s.peak_epoch.load(std::memory_order_relaxed);
  UpdateStats(
      s, stack_id, [&](StackStats& own) { own.Allocated<StatsWriter::kOwned>(size, epoch, made); },
      [&](StackStats& shared) { shared.Allocated(size, epoch, made); });
  const bool new_peak = s.live_bytes.Add(size);
  if (new_peak) {
    s.peak_epoch.fetch_add(1, std::memory_order_relaxed);
    RecordPeak(s.live_bytes.peak.load(std::memory_order_relaxed));  // for a killed program's report
  }
  if (PeakCounter* thread = s.threads.LiveBytesOf(serial)) thread->Add(size);
  return new_peak;
}

// A timeline point if one is due (timeline.h): a coarse clock read, then one load.
void MaybeSampleTimeline(State& s, bool new_peak) {
  const uint64_t now = Timeline::CoarseNowNs();
  const bool at_peak = new_peak && s.timeline.Due(now, true);
  if (at_peak || s.timeline.Due(now, false)) {
    s.timeline.Sample(now, s.live_bytes.live.load(std::memory_order_relaxed), at_peak, s.threads);
  }
}
[[gnu::always_inline]] inline void CountFreed(State& s, const Allocation& a,
                                              bool temporary = false) {
  const uint64_t size = EstimatedBytes(a.size, s.recording.sample_bytes.load(std::memory_order_relaxed));
  const uint64_t epoch = s.peak_epoch.load(std::memory_order_relaxed);
  UpdateStats(
      s, a.stack_id, [&](StackStats& own) { own.Freed<StatsWriter::kOwned>(size, epoch, temporary); },
      [&](StackStats& shared) { shared.Freed(size, epoch, temporary); });
  s.live_bytes.Subtract(size);
  if (PeakCounter* thread = s.threads.LiveBytesOf(static_cast<uint32_t>(a.thread))) {
    thread->Subtract(size);
  }
}

uint64_t NextSequence(AllocationTable& table) {
  if (t_sequence_next == t_sequence_end ||
      t_sequence_next < GlobalState().sequence_floor.load(std::memory_order_relaxed)) {
    t_sequence_next = table.ReserveSequences(kSequenceBlock);
    t_sequence_end = t_sequence_next + kSequenceBlock;
  }
  return t_sequence_next++;
}
}  // namespace

__attribute__((noinline)) void Record(void* p, size_t size, const ::stackwalk::internal::CallSite& site) {
  if (WorldStoppedHere() || p == nullptr || t_inside_checker || t_forking) return;
  State& s = ConfiguredState();
  const uint64_t generation = SamplerGeneration();  // before the options it licenses
  if (!s.active.load(std::memory_order_acquire)) return;
  const uint64_t min_size = s.recording.min_size.load(std::memory_order_relaxed);
  if (size < min_size) return;
  const uint64_t mean = s.recording.sample_bytes.load(std::memory_order_relaxed);
  const uint64_t seed = s.recording.sample_seed.load(std::memory_order_relaxed);
  // With sampling and no min_size, only the countdown decides this thread's next allocations:
  // they may take the fast path (sampler.h), from when this one is done.
  const bool license = min_size == 0;
  if (!ShouldRecord(size, mean, seed)) {
    if (license) LicenseUnsampled(generation, mean, seed);
    return;
  }
  // What the recording itself allocates takes the full hook, as inside a guard (inside first:
  // see ReentryGuard).
  t_inside_checker = true;
  RevokeUnsampled();
  void* pcs[StackTable::kMaxFrames];
  const int max_frames = s.recording.max_frames.load(std::memory_order_relaxed);
  const int method = s.recording.method.load(std::memory_order_relaxed);
  // From the program's call of the hook: none of the checker's own frames is stepped.
  int n = STACKWALK_HAS_CALL_SITE_CAPTURE
              ? ::stackwalk::internal::CaptureFromCallSite(site, pcs, max_frames, method)
              : stackwalk::Capture(pcs, max_frames, static_cast<stackwalk::Method>(method));
  bool new_stack = false;
  uint32_t id = s.stacks.Intern(pcs, n > 0 ? n : 0, &new_stack);
  // A new stack may run through a library loaded since the record's module list was written.
  if (new_stack) RecordModulesCovering(pcs, n > 0 ? n : 0);
  const uint32_t serial = ThreadSerial();
  Allocation replaced;
  const uint64_t sequence = NextSequence(s.allocations);
  if (s.allocations.Insert(reinterpret_cast<uintptr_t>(p), size, id, static_cast<int32_t>(serial),
                           sequence, &replaced)) {
    if (replaced.address != 0) CountFreed(s, replaced);
    MaybeSampleTimeline(s, CountAllocated(s, serial, size, id, /*made=*/true));
    t_last_address_inverted = ~reinterpret_cast<uintptr_t>(p);
    t_last_sequence = sequence;
  } else {
    RecordUntracked(s.allocations.untracked());  // for a killed program's report
  }
  t_inside_checker = false;
  if (license) LicenseUnsampled(generation, mean, seed);
}

namespace {
// Takes `p`'s record out; `is_free`: by free() (which may end a temporary allocation), not realloc.
[[gnu::always_inline]] inline bool Forget(void* p, Allocation* removed, bool is_free) {
  if (WorldStoppedHere() || p == nullptr || t_forking) return false;
  State& s = GlobalState();
  // When sampling, most frees are of blocks never recorded: the filter says so without the table.
  if (s.recording.sample_bytes.load(std::memory_order_relaxed) != 0 &&
      !s.allocations.MayHold(reinterpret_cast<uintptr_t>(p))) {
    return false;
  }
  if (!s.allocations.Remove(reinterpret_cast<uintptr_t>(p), removed)) return false;
  const bool temporary = is_free && removed->address == ~t_last_address_inverted &&
                         SequenceNumber(*removed) == t_last_sequence;
  if (temporary) t_last_address_inverted = 0;
  CountFreed(s, *removed, temporary);
  return true;
}
}  // namespace

void Unrecord(void* p) {
  // Not skipped inside the checker: frees by __libc_freeres at exit must still count.
  Allocation removed;
  Forget(p, &removed, /*is_free=*/true);
}

bool TakeRecord(void* p, Allocation* removed) { return Forget(p, removed, /*is_free=*/false); }

void RestoreRecord(const Allocation& a) {
  if (WorldStoppedHere() || t_forking) return;
  State& s = GlobalState();
  Allocation replaced;
  if (s.allocations.Insert(a.address, a.size, a.stack_id, a.thread, a.sequence, &replaced)) {
    if (replaced.address != 0) CountFreed(s, replaced);
    CountAllocated(s, static_cast<uint32_t>(a.thread), a.size, a.stack_id, /*made=*/false);
  } else {
    RecordUntracked(s.allocations.untracked());
  }
}

}  // namespace stackwalk::leakcheck
