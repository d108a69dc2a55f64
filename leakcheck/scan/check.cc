// RunCheck (check.h): the locks, the stopped world and the scan in one order, that of the fork
// handlers extended: ReportLock (the caller's) -> the loader lock (inside a dl_iterate_phdr
// callback) -> the stack table's locks -> the allocation table's -> Stop. Between Stop and
// Resume nothing here mallocs, frees or takes a libc lock: the snapshot, the marks and the
// scan's lists are in own memory (OwnMap), the roots and the maps too (RootSet, MapsSnapshot).
#include "leakcheck/scan/check.h"

#include <link.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "leakcheck/recording.h"
#include "leakcheck/scan/exited_stacks.h"
#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/mark.h"
#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/safe_reader.h"
#include "leakcheck/scan/scratch_arena.h"
#include "leakcheck/scan/sort_by_address.h"
#include "leakcheck/scan/tls_roots.h"
#include "leakcheck/state.h"
#include "stackwalk/stackwalk.h"

namespace stackwalk::leakcheck {
namespace {

// The checker's own threads (the signal reporter, a periodic checker): never stopped, their
// stacks never roots. A probe address on each one's stack finds its mapping at check time.
constexpr int kMaxCheckerThreads = 16;
struct CheckerSlot {
  std::atomic<int32_t> tid{0};
  std::atomic<uintptr_t> probe{0};
};
CheckerSlot g_checker_threads[kMaxCheckerThreads];

int32_t CurrentTid() { return static_cast<int32_t>(syscall(SYS_gettid)); }

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The loaded segments of one object.
struct ObjectRanges {
  static constexpr int kMax = 16;
  internal::AddressRange ranges[kMax];
  int count = 0;
  bool Contains(uintptr_t pc) const {
    for (int i = 0; i < count; ++i) {
      if (ranges[i].Contains(pc)) return true;
    }
    return false;
  }
};

// The PT_LOAD segments of the object loaded at `base` (by_base), or of the one containing `pc`.
ObjectRanges FindObject(uintptr_t base, uintptr_t pc) {
  struct Query {
    uintptr_t base, pc;
    ObjectRanges out;
  } query{base, pc, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        ObjectRanges found;
        bool has_pc = false;
        for (int i = 0; i < info->dlpi_phnum && found.count < ObjectRanges::kMax; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uint64_t lo = info->dlpi_addr + ph.p_vaddr;
          found.ranges[found.count++] = {lo, lo + ph.p_memsz};
          if (q->pc != 0 && q->pc >= lo && q->pc < lo + ph.p_memsz) has_pc = true;
        }
        if ((q->base != 0 && info->dlpi_addr == q->base) || has_pc) {
          q->out = found;
          return 1;
        }
        return 0;
      },
      &query);
  return query.out;
}

// Which stacks were allocated by the dynamic loader: their first frame outside the checker's own
// object (the hooks) is in ld.so. One flag per stack id, worked out once per id.
class LoaderStacks {
 public:
  LoaderStacks(const StackTable& stacks, const ObjectRanges& self, const ObjectRanges& loader,
               ScratchArena* scratch)
      : stacks_(stacks), self_(self), loader_(loader) {
    count_ = static_cast<size_t>(stacks.size()) + 1;
    known_ = scratch->AllocateArray<uint8_t>(count_);  // 0 unknown, 1 no, 2 yes
  }
  bool ok() const { return known_ != nullptr; }
  bool FromLoader(uint32_t id) {
    if (id == StackTable::kNoStack || id >= count_) return false;
    if (known_[id] == 0) {
      void* pcs[StackTable::kMaxFrames];
      const int n = stacks_.Frames(id, pcs);
      int first = 0;
      while (first < n && self_.Contains(reinterpret_cast<uintptr_t>(pcs[first]))) ++first;
      known_[id] = first < n && loader_.Contains(reinterpret_cast<uintptr_t>(pcs[first])) ? 2 : 1;
    }
    return known_[id] == 2;
  }

 private:
  const StackTable& stacks_;
  const ObjectRanges& self_;
  const ObjectRanges& loader_;
  uint8_t* known_ = nullptr;
  size_t count_ = 0;
};

// glibc keeps the stacks of exited threads for reuse (up to 40 MiB): anonymous mappings full of
// the dead threads' stale words, which as anonymous roots would hold what those threads leaked.
// On x86_64 a glibc thread stack ends with its struct pthread, whose header starts at the thread
// pointer with tcb == self == its own address (tcbhead_t); a mapping with one near its top that is
// no live thread's thread pointer, and holding no live thread's stack pointer, is a cached stack,
// excluded below that header. Only with glibc's guard right below it: a stack the program gave a
// thread (pthread_attr_setstack) ends with the same header, but glibc neither guards nor caches
// it, and once its thread exited it is the program's memory again (as in exited_stacks.cc).
// Elsewhere (the TCB lies at the thread pointer's other side) nothing is excluded.
constexpr size_t kMaxDeadStacks = 64;
constexpr size_t kTcbSearch = 8192;  // bytes below a mapping's top searched for the header

size_t FindDeadThreadStacks(const MapsSnapshot& maps, const StoppedWorld& world,
                            uintptr_t caller_sp, MemoryReader& reader, uintptr_t* buffer,
                            internal::AddressRange* out, size_t capacity) {
#if defined(__x86_64__)
  for (size_t t = 0; t < world.size(); ++t) {
    const StoppedThread& thread = world.thread(t);
    if (thread.state != StoppedThread::State::kGone && thread.thread_pointer == 0 &&
        thread.sp == 0) {
      return 0;  // a live thread we cannot place: any stack may be its
    }
  }
  const uintptr_t caller_tp = CurrentThreadPointer();
  size_t count = 0;
  for (size_t i = 1; i < maps.size() && count < capacity; ++i) {  // maps[0] has no guard below
    const MapsEntry& entry = maps[i];
    if (entry.kind != MapsEntry::Kind::kAnonymous || !entry.readable || !entry.writable ||
        entry.range.hi - entry.range.lo < 2 * kTcbSearch || entry.range.Contains(caller_sp)) {
      continue;
    }
    const MapsEntry& below = maps[i - 1];  // /proc/self/maps is in address order
    const bool guarded = below.range.hi == entry.range.lo &&
                         below.kind == MapsEntry::Kind::kAnonymous && !below.readable &&
                         !below.writable && !below.executable;
    if (!guarded) continue;
    const uintptr_t lo = static_cast<uintptr_t>(entry.range.hi) - kTcbSearch;
    if (!reader.Read(lo, buffer, kTcbSearch)) continue;
    uintptr_t tcb = 0;
    for (size_t w = 0; w + 2 < kTcbSearch / sizeof(uintptr_t); w += 8) {  // 64-byte aligned
      const uintptr_t at = lo + w * sizeof(uintptr_t);
      if (buffer[w] == at && buffer[w + 2] == at) tcb = at;
    }
    if (tcb == 0 || tcb == caller_tp) continue;
    bool live = false;
    for (size_t t = 0; t < world.size() && !live; ++t) {
      const StoppedThread& thread = world.thread(t);
      if (thread.state == StoppedThread::State::kGone) continue;
      live = thread.thread_pointer == tcb || entry.range.Contains(thread.sp);
    }
    // Only the dead stack and TLS below the header: the cached struct pthread still points to
    // the thread's DTV (glibc keeps it for the stack's next thread), which is no leak.
    if (!live) out[count++] = {entry.range.lo, tcb};
  }
  return count;
#else
  (void)maps, (void)world, (void)caller_sp, (void)reader, (void)buffer, (void)out, (void)capacity;
  return 0;
#endif
}

// libstackwalk's private mappings as [lo, hi) pairs in scratch memory, *count of them; nullptr
// if out of memory or if the list kept growing faster than it was read.
uintptr_t* ListPrivateMappings(ScratchArena* scratch, size_t* count) {
  constexpr size_t kRoomToGrow = 16;  // mappings another thread may add between count and copy
  size_t expected = stackwalk_private_mappings(nullptr, 0);
  for (int attempt = 0; attempt < 4; ++attempt) {
    const size_t capacity = expected + kRoomToGrow;
    auto* ranges = scratch->AllocateArray<uintptr_t>(2 * capacity);
    if (ranges == nullptr) return nullptr;
    const size_t listed = stackwalk_private_mappings(ranges, capacity);
    if (listed <= capacity) {
      *count = listed;
      return ranges;
    }
    expected = listed;
  }
  return nullptr;
}

// What the stopped section works on and leaves behind. Plain fields and own memory only.
struct Section {
  State* state;
  const CheckRequest* request;
  const ucontext_t* caller;
  const uintptr_t* caller_registers;  // kCallerRegisterWords, or nullptr
  uintptr_t caller_sp;
  ScratchArena* scratch;
  StoppedWorld* world;
  MapsSnapshot* maps;
  const ObjectRanges* self;
  const ObjectRanges* loader;
  // Results.
  bool ran = false;
  bool stopped = false;
  bool marked = false;
  const char* error = nullptr;  // static text
  Allocation* blocks = nullptr;  // own mapping of `blocks_bytes`
  size_t blocks_bytes = 0;
  size_t n = 0;
  uint8_t* marks = nullptr;
  uint64_t root_bytes[kRootKindCount] = {};
  uint64_t pause_ns = 0;
};

// Copies the live table (every shard lock held) into own memory, sorted by address.
bool TakeSnapshot(Section& s) {
  size_t live = 0;
  s.state->allocations.ForEachHeld([&live](const Allocation&) { ++live; });
  if (live == 0) return true;
  s.blocks_bytes = live * sizeof(Allocation);
  s.blocks = static_cast<Allocation*>(OwnMap(s.blocks_bytes));
  s.marks = s.scratch->AllocateArray<uint8_t>(live);
  if (s.blocks == nullptr || s.marks == nullptr) return false;
  size_t i = 0;
  s.state->allocations.ForEachHeld([&](const Allocation& a) {
    if (i < live) s.blocks[i++] = a;
  });
  s.n = i;
  SortByAddress(s.blocks, s.n, s.scratch);
  return true;
}

void StoppedSection(Section& s) {
  State& state = *s.state;
  // The loaded objects, listed under the loader lock this callback holds: no dlopen or dlclose
  // until the scan is over.
  LoadedModules modules;
  if (!modules.Collect()) s.error = "out of memory for the list of loaded objects";
  state.stacks.LockAll();
  state.allocations.LockAll();
  SetWorldStopped(true);

  // The checker's other threads: not stopped, their stacks not roots.
  const int32_t self = CurrentTid();
  int32_t skip[kMaxCheckerThreads];
  uintptr_t probes[kMaxCheckerThreads];
  size_t skip_count = 0;
  for (CheckerSlot& slot : g_checker_threads) {
    const int32_t tid = slot.tid.load(std::memory_order_acquire);
    if (tid == 0 || tid == self) continue;
    probes[skip_count] = slot.probe.load(std::memory_order_relaxed);
    skip[skip_count++] = tid;
  }
  s.stopped = s.world->Stop(s.request->stop, s.request->stop_timeout_ms, skip, skip_count);
  if (!s.stopped) s.error = "the world could not be stopped";
  if (!TakeSnapshot(s)) {
    s.error = "no memory for the snapshot of the live blocks";
  } else if (s.stopped && s.n > 0) {
    if (!s.maps->Read()) {
      s.error = "/proc/self/maps could not be read";
    } else {
      // libstackwalk's own caches (per-thread rule tables and frame logs, which hold copies of
      // stack words): never roots, however many there are. A mapping left out would be scanned
      // as the program's memory and hide what its stale copies point to, so the list is sized
      // from its count; the checker's threads, which run on, may add to it meanwhile.
      size_t private_count = 0;
      uintptr_t* private_ranges = ListPrivateMappings(s.scratch, &private_count);
      if (private_ranges == nullptr && s.error == nullptr) {
        s.error = "libstackwalk's own mappings could not be listed";
      }
      const size_t max_excluded =
          kMaxCheckerThreads + kMaxDeadStacks + private_count + kMaxExitedStacks;
      auto* excluded = private_ranges == nullptr
                           ? nullptr
                           : s.scratch->AllocateArray<internal::AddressRange>(max_excluded);
      if (excluded == nullptr && s.error == nullptr) {
        s.error = "out of scratch memory for the excluded ranges";
      }
      size_t excluded_count = 0;
      for (size_t i = 0; excluded != nullptr && i < private_count; ++i) {
        excluded[excluded_count++] = {private_ranges[2 * i], private_ranges[2 * i + 1]};
      }
      for (size_t i = 0; excluded != nullptr && i < skip_count; ++i) {
        if (const MapsEntry* entry = s.maps->Find(probes[i])) {
          excluded[excluded_count++] = entry->range;
        }
      }
      SafeReader tcb_reader(s.maps);
      // The stacks of exited threads the checker saw exit (every architecture, wherever their
      // mappings lie), then, on x86_64, cached stacks found by their TCB (threads that never
      // allocated, so never recorded their exit).
      if (excluded != nullptr) {
        excluded_count += FindExitedThreadStacks(s.world->threads(), s.world->size(), s.caller_sp,
                                                 *s.maps, tcb_reader, excluded + excluded_count,
                                                 kMaxExitedStacks);
      }
      auto* buffer = s.scratch->AllocateArray<uintptr_t>(kTcbSearch / sizeof(uintptr_t));
      if (excluded != nullptr && buffer != nullptr) {
        excluded_count += FindDeadThreadStacks(*s.maps, *s.world, s.caller_sp, tcb_reader, buffer,
                                               excluded + excluded_count, kMaxDeadStacks);
      }
      RootInputs inputs;
      inputs.threads = s.world->threads();
      inputs.thread_count = s.world->size();
      inputs.maps = s.maps;
      inputs.blocks = s.blocks;
      inputs.block_count = s.n;
      inputs.caller_sp = s.caller_sp;
      inputs.caller = s.caller;
      inputs.caller_registers = s.caller_registers;
      inputs.excluded = excluded;
      inputs.excluded_count = excluded_count;
      inputs.modules = &modules;
      RootSet roots;
      CollectRoots(inputs, s.request->roots, &roots);
      for (int k = 0; k < kRootKindCount; ++k) {
        s.root_bytes[k] = roots.bytes(static_cast<RootKind>(k));
      }
      // LeakSanitizer's rule where anonymous mappings are not roots (rtld's own memory among
      // them): blocks the loader allocated are.
      // Blocks the program marked as intended leaks (IgnoreObject) are roots.
      for (size_t i = 0; i < s.n; ++i) {
        if (IsIgnored(s.blocks[i])) s.marks[i] = 1;
      }
      bool ok = true;
      if (!s.request->roots.anonymous_mappings) {
        LoaderStacks loader(state.stacks, *s.self, *s.loader, s.scratch);
        ok = loader.ok();
        for (size_t i = 0; ok && i < s.n; ++i) {
          if (loader.FromLoader(s.blocks[i].stack_id)) {
            s.marks[i] = 1;
            s.root_bytes[static_cast<int>(RootKind::kLoaderBlocks)] += s.blocks[i].size;
          }
        }
      }
      SafeReader reader(s.maps);
      if (!ok || !MarkFromRoots(s.blocks, s.n, roots, reader, s.marks, s.scratch)) {
        s.error = "out of scratch memory for the scan";
      } else if (roots.overflowed()) {
        s.error = "out of memory for the list of roots";
      } else if (s.error == nullptr) {
        s.marked = true;
      }
    }
  } else if (s.stopped) {
    s.marked = true;  // nothing live: nothing to scan
  }
  s.world->Resume();
  const uint64_t start = s.world->pause_start_ns();
  if (start != 0) s.pause_ns = NowNs() - start;

  SetWorldStopped(false);
  state.allocations.UnlockAll();
  state.stacks.UnlockAll();
}

// Every signal but the synchronous ones (a fault in the check must still be reported).
sigset_t AsyncSignals() {
  sigset_t set;
  sigfillset(&set);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) sigdelset(&set, sig);
  return set;
}

__attribute__((noinline)) bool RunCheckWithCaller(State& state, const CheckRequest& request,
                                                  const ucontext_t& caller,
                                                  const uintptr_t* caller_registers,
                                                  uintptr_t caller_sp, CheckOutcome* out) {
  const uint64_t check_start = NowNs();
  *out = CheckOutcome();  // the old block copies are wiped as they are freed (BlockCopies)
  const ObjectRanges self = FindObject(0, reinterpret_cast<uintptr_t>(&RunCheck));
  const ObjectRanges loader = FindObject(static_cast<uintptr_t>(getauxval(AT_BASE)), 0);

  ScratchArena scratch;
  StoppedWorld world;
  MapsSnapshot maps;
  Section section{&state,  &request, &caller, caller_registers, caller_sp,
                  &scratch, &world,   &maps,   &self,            &loader};
  dl_iterate_phdr(
      [](dl_phdr_info*, size_t, void* data) {
        auto* s = static_cast<Section*>(data);
        if (!s->ran) {
          s->ran = true;
          StoppedSection(*s);
        }
        return 1;
      },
      &section);

  // The world runs again: the split reads only leaked blocks, which nothing reachable points to
  // (a block freed meanwhile fails soft in the reader: no maps trusted now).
  out->complete = section.marked && section.error == nullptr;
  out->error = section.ran ? (section.error != nullptr ? section.error : "") : "no loaded object";
  Verdict* verdicts = scratch.AllocateArray<Verdict>(section.n == 0 ? 1 : section.n);
  uint8_t* ignored = scratch.AllocateArray<uint8_t>(section.n == 0 ? 1 : section.n);
  if (out->complete && section.n > 0) {
    SafeReader reader(nullptr);
    if (ignored != nullptr) {
      for (size_t i = 0; i < section.n; ++i) ignored[i] = IsIgnored(section.blocks[i]) ? 1 : 0;
    }
    if (verdicts == nullptr || ignored == nullptr ||
        !SplitLeaks(section.blocks, section.n, section.marks, ignored, reader, verdicts,
                    &scratch)) {
      out->complete = false;
      out->error = "out of scratch memory for the split";
    }
  }
  out->blocks.assign(section.blocks, section.blocks + section.n);
  if (out->complete) {
    out->verdicts.assign(verdicts, verdicts + section.n);
  } else {
    out->verdicts.assign(section.n, Verdict::kLive);
  }
  if (section.blocks != nullptr) OwnUnmap(section.blocks, section.blocks_bytes);

  out->method = world.method();
  out->fallback_reason = world.fallback_reason();
  for (size_t i = 0; i < world.size(); ++i) {
    const StoppedThread& t = world.thread(i);
    if (t.state == StoppedThread::State::kStopped) {
      ++out->stopped_threads;
    } else if (t.state == StoppedThread::State::kUnstopped) {
      out->unstopped.push_back({t.tid, t.why});
    }
  }
  std::copy(section.root_bytes, section.root_bytes + kRootKindCount, out->root_bytes);
  out->pause_ns = section.pause_ns;
  out->check_ns = NowNs() - check_start;
  return out->complete;
}

}  // namespace

void RegisterCheckerThread() {
  const int32_t tid = CurrentTid();
  const int probe = 0;
  for (CheckerSlot& slot : g_checker_threads) {
    int32_t expected = 0;
    if (slot.tid.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) {
      // A check that reads the slot before this store excludes no stack for it (probe 0).
      slot.probe.store(reinterpret_cast<uintptr_t>(&probe), std::memory_order_relaxed);
      return;
    }
  }
}

void UnregisterCheckerThread() {
  const int32_t tid = CurrentTid();
  for (CheckerSlot& slot : g_checker_threads) {
    int32_t expected = tid;
    if (slot.tid.load(std::memory_order_relaxed) != tid) continue;
    slot.probe.store(0, std::memory_order_relaxed);
    slot.tid.compare_exchange_strong(expected, 0, std::memory_order_release);
  }
}

void ForgetCheckerThreads() {
  for (CheckerSlot& slot : g_checker_threads) {
    slot.probe.store(0, std::memory_order_relaxed);
    slot.tid.store(0, std::memory_order_release);
  }
}

bool RunCheck(State& state, const CheckRequest& request, CheckOutcome* out) {
  // The caller's registers, and its stack from here up (or from the program's call of its
  // CheckEntry's entry point), are roots (kCallerStack): the frames below, the checker's own,
  // hold copies of block addresses.
  ucontext_t caller;
  memset(&caller, 0, sizeof caller);  // as CheckEntry's
  getcontext(&caller);
  const ucontext_t* context = &caller;
  const uintptr_t* program_registers = nullptr;
  uintptr_t limit = reinterpret_cast<uintptr_t>(&caller);
  const CheckEntry* entry = CheckEntry::Outermost();
  if (entry != nullptr && entry->stack_limit() > limit) {
    context = &entry->context();
    program_registers = entry->program_registers();
    limit = entry->stack_limit();
  }
  const sigset_t async = AsyncSignals();
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &async, &previous);
  const bool complete =
      RunCheckWithCaller(state, request, *context, program_registers, limit, out);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return complete;
}

}  // namespace stackwalk::leakcheck
