// libstackwalk_leakcheck_inprocess.so: the leak checker without LD_PRELOAD. Start() points the
// GOT slots of the allocation functions in the chosen objects at AllocatorHooks forwarding to the
// process's own allocator, and hooks dlopen/dlclose everywhere so that libraries loaded later are
// patched too and unloaded ones are remembered. Stop() writes every slot back.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "leakcheck/allocator_hooks.h"
#include "leakcheck/checks.h"
#include "leakcheck/closed_modules.h"
#include "leakcheck/frame_namer.h"
#include "leakcheck/got_patch.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/session.h"
#include "leakcheck/snapshots.h"
#include "leakcheck/state.h"
#include "stackwalk/leakcheck.h"

#define EXPORT __attribute__((visibility("default")))

namespace stackwalk::leakcheck {
namespace {

RealAllocator g_real = {};  // resolved by Start(), per symbol, from the process's global scope
using Hooks = AllocatorHooks<g_real>;

std::mutex g_mutex;  // Start, Stop, Report and the dlopen/dlclose hooks
std::mutex g_listeners_mutex;  // the C++ listeners' list (g_cxx_listeners, below)
bool g_started = false;
GotPatcher* g_patcher = nullptr;  // created once, never freed

using DlopenFn = void* (*)(const char*, int);
using DlcloseFn = int (*)(void*);
DlopenFn g_real_dlopen = nullptr;
DlcloseFn g_real_dlclose = nullptr;

#if __SIZEOF_SIZE_T__ == 8
#define SIZE_MANGLING "m"
#else
#define SIZE_MANGLING "j"
#endif

// Each hooked symbol, its replacement and the RealAllocator entry it needs.
struct HookedSymbol {
  const char* symbol;
  void* replacement;
  void** real;  // the entry of g_real the replacement forwards to
};

template <class T>
void** Entry(T& field) {
  return reinterpret_cast<void**>(&field);
}

std::vector<HookedSymbol> HookedSymbols() {
  auto fn = [](auto f) { return reinterpret_cast<void*>(f); };
  return {
      {"malloc", fn(&Hooks::Malloc), Entry(g_real.malloc)},
      {"free", fn(&Hooks::Free), Entry(g_real.free)},
      {"cfree", fn(&Hooks::Free), Entry(g_real.free)},
      {"calloc", fn(&Hooks::Calloc), Entry(g_real.calloc)},
      {"realloc", fn(&Hooks::Realloc), Entry(g_real.realloc)},
      {"reallocarray", fn(&Hooks::Reallocarray), Entry(g_real.realloc)},
      {"memalign", fn(&Hooks::Memalign), Entry(g_real.memalign)},
      {"aligned_alloc", fn(&Hooks::AlignedAlloc), Entry(g_real.aligned_alloc)},
      {"posix_memalign", fn(&Hooks::PosixMemalign), Entry(g_real.posix_memalign)},
      {"valloc", fn(&Hooks::Valloc), Entry(g_real.valloc)},
      {"pvalloc", fn(&Hooks::Pvalloc), Entry(g_real.pvalloc)},
      {"_Znw" SIZE_MANGLING, fn(&Hooks::New), Entry(g_real.new_throwing)},
      {"_Zna" SIZE_MANGLING, fn(&Hooks::New), Entry(g_real.new_throwing)},
      {"_Znw" SIZE_MANGLING "RKSt9nothrow_t", fn(&Hooks::NewNothrow), Entry(g_real.new_nothrow)},
      {"_Zna" SIZE_MANGLING "RKSt9nothrow_t", fn(&Hooks::NewNothrow), Entry(g_real.new_nothrow)},
      {"_Znw" SIZE_MANGLING "St11align_val_t", fn(&Hooks::NewAligned), Entry(g_real.new_aligned)},
      {"_Zna" SIZE_MANGLING "St11align_val_t", fn(&Hooks::NewAligned), Entry(g_real.new_aligned)},
      {"_Znw" SIZE_MANGLING "St11align_val_tRKSt9nothrow_t", fn(&Hooks::NewAlignedNothrow),
       Entry(g_real.new_aligned_nothrow)},
      {"_Zna" SIZE_MANGLING "St11align_val_tRKSt9nothrow_t", fn(&Hooks::NewAlignedNothrow),
       Entry(g_real.new_aligned_nothrow)},
      {"_ZdlPv", fn(&Hooks::Delete), Entry(g_real.delete_plain)},
      {"_ZdaPv", fn(&Hooks::Delete), Entry(g_real.delete_plain)},
      {"_ZdlPv" SIZE_MANGLING, fn(&Hooks::DeleteSized), Entry(g_real.delete_plain)},
      {"_ZdaPv" SIZE_MANGLING, fn(&Hooks::DeleteSized), Entry(g_real.delete_plain)},
      {"_ZdlPvRKSt9nothrow_t", fn(&Hooks::DeleteNothrow), Entry(g_real.delete_plain)},
      {"_ZdaPvRKSt9nothrow_t", fn(&Hooks::DeleteNothrow), Entry(g_real.delete_plain)},
      {"_ZdlPvSt11align_val_t", fn(&Hooks::DeleteAligned), Entry(g_real.delete_aligned)},
      {"_ZdaPvSt11align_val_t", fn(&Hooks::DeleteAligned), Entry(g_real.delete_aligned)},
      {"_ZdlPv" SIZE_MANGLING "St11align_val_t", fn(&Hooks::DeleteSizedAligned),
       Entry(g_real.delete_aligned)},
      {"_ZdaPv" SIZE_MANGLING "St11align_val_t", fn(&Hooks::DeleteSizedAligned),
       Entry(g_real.delete_aligned)},
      {"_ZdlPvSt11align_val_tRKSt9nothrow_t", fn(&Hooks::DeleteAlignedNothrow),
       Entry(g_real.delete_aligned)},
      {"_ZdaPvSt11align_val_tRKSt9nothrow_t", fn(&Hooks::DeleteAlignedNothrow),
       Entry(g_real.delete_aligned)},
  };
}

// Objects whose slots are never rewritten: the C library and the loader (their calls are
// internal), the vDSO, and stackwalk's own libraries (the checker's memory is not the program's).
bool NeverHooked(const std::string& path) {
  return path.empty() ||
         MatchesAnyPattern("ld-linux*,ld-*.so*,libc.so*,libstackwalk*,linux-vdso*,linux-gate*",
                           path.c_str());
}

bool AllocationsHooked(const std::string& path) {
  const Options& o = GlobalState().options;
  if (NeverHooked(path)) return false;
  if (o.libraries[0] != '\0' && !MatchesAnyPattern(o.libraries, path.c_str())) return false;
  return !MatchesAnyPattern(o.ignore_libraries, path.c_str());
}

void* DlopenHook(const char* file, int mode);
int DlcloseHook(void* handle);

// Resolves the real functions not known yet (libstdc++ may come with a later dlopen). Called
// without g_mutex: dlsym takes the loader's lock, which code running under it (constructors,
// destructors, a dlopen from them) may hold while waiting for g_mutex in a hook.
void ResolveReals() {
  if (g_real_dlopen == nullptr) {
    g_real_dlopen = reinterpret_cast<DlopenFn>(dlsym(RTLD_DEFAULT, "dlopen"));
    g_real_dlclose = reinterpret_cast<DlcloseFn>(dlsym(RTLD_DEFAULT, "dlclose"));
  }
  for (const HookedSymbol& h : HookedSymbols()) {
    if (__atomic_load_n(h.real, __ATOMIC_ACQUIRE) == nullptr) {
      __atomic_store_n(h.real, dlsym(RTLD_DEFAULT, h.symbol), __ATOMIC_RELEASE);
    }
  }
}

// Rewrites the slots of every loaded object as the options say. Caller holds g_mutex.
int PatchLoaded() {
  std::vector<GotHook> allocation_hooks;
  for (const HookedSymbol& h : HookedSymbols()) {
    if (*h.real != nullptr) allocation_hooks.push_back({h.symbol, h.replacement});
  }
  int patched = g_patcher->Patch(allocation_hooks, AllocationsHooked);
  std::vector<GotHook> loader_hooks = {{"dlopen", reinterpret_cast<void*>(&DlopenHook)},
                                       {"dlclose", reinterpret_cast<void*>(&DlcloseHook)}};
  g_patcher->Patch(loader_hooks, [](const std::string& path) { return !NeverHooked(path); });
  return patched;
}

// The directory of an object's file, for $ORIGIN.
std::string Origin(const link_map* map) {
  std::string path = map->l_name != nullptr && map->l_name[0] != '\0' ? map->l_name : "";
  if (path.empty()) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) path.assign(exe, static_cast<size_t>(n));
  }
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// dlopen looks a bare name up along its caller's RPATH/RUNPATH, and the caller of the real
// dlopen is now this library: find the file along the original caller's paths first (in the
// loader's order: RPATH, LD_LIBRARY_PATH, RUNPATH). Empty if the real dlopen should search.
std::string FindAsCaller(const char* file, const void* caller) {
  if (file == nullptr || std::strchr(file, '/') != nullptr) return "";
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(caller, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr || map->l_ld == nullptr) {
    return "";
  }
  const char* strtab = nullptr;
  const char* rpath = nullptr;
  const char* runpath = nullptr;
  ElfW(Xword) rpath_offset = 0, runpath_offset = 0;
  bool has_rpath = false, has_runpath = false;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_STRTAB) {
      uintptr_t p = d->d_un.d_ptr;
      strtab = reinterpret_cast<const char*>(p < map->l_addr ? p + map->l_addr : p);
    } else if (d->d_tag == DT_RPATH) {
      rpath_offset = d->d_un.d_val;
      has_rpath = true;
    } else if (d->d_tag == DT_RUNPATH) {
      runpath_offset = d->d_un.d_val;
      has_runpath = true;
    }
  }
  if (strtab == nullptr) return "";
  if (has_rpath) rpath = strtab + rpath_offset;
  if (has_runpath) runpath = strtab + runpath_offset;
  std::vector<std::string> dirs;
  auto add = [&](const char* list) {
    if (list == nullptr) return;
    for (const char* p = list;;) {
      const char* end = std::strchr(p, ':');
      std::string dir(p, end != nullptr ? static_cast<size_t>(end - p) : std::strlen(p));
      for (const char* origin : {"${ORIGIN}", "$ORIGIN"}) {
        for (size_t at; (at = dir.find(origin)) != std::string::npos;) {
          dir.replace(at, std::strlen(origin), Origin(map));
        }
      }
      if (!dir.empty()) dirs.push_back(dir);
      if (end == nullptr) break;
      p = end + 1;
    }
  };
  if (!has_runpath) add(rpath);
  add(getenv("LD_LIBRARY_PATH"));
  add(runpath);
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/" + file;
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return "";
}

__attribute__((noinline)) void* DlopenHook(const char* file, int mode) {
  const void* caller = __builtin_return_address(0);
  // Already loaded (by any name or soname): that object, as the loader would give it.
  if (file != nullptr && (mode & RTLD_NOLOAD) == 0) {
    if (void* loaded = g_real_dlopen(file, mode | RTLD_NOLOAD)) return loaded;
  }
  std::string found;
  {
    ReentryGuard own;
    found = FindAsCaller(file, caller);
  }
  void* handle = g_real_dlopen(found.empty() ? file : found.c_str(), mode);
  if (handle != nullptr) {
    ReentryGuard own;
    ResolveReals();
    std::lock_guard<std::mutex> hold(g_mutex);
    if (g_started) PatchLoaded();
  }
  return handle;
}

int DlcloseHook(void* handle) {
  const int result = DlcloseRemembering(GlobalState(), g_real_dlclose, handle);
  ReentryGuard own;
  std::lock_guard<std::mutex> hold(g_mutex);
  if (g_patcher != nullptr) g_patcher->ForgetUnloaded();
  return result;
}

// A fork copies a lock another thread holds as held for ever (its holder is not copied) and what
// it guards half changed (GOT slots half patched, the listener list half grown): so a fork waits
// for both, as glibc's malloc does for its arenas, and both are free on either side of it.
// g_mutex comes first: its holders wait for the checker's other locks (Stop joins the reporter,
// which holds the report lock), never the reverse; registered after every other handler of the
// checker, so that this prepare runs before theirs, and all of them before StartWith takes
// g_mutex: pthread_atfork waits for a fork that is running its handlers, this one waiting for
// g_mutex.
void LocksBeforeFork() {
  g_mutex.lock();
  g_listeners_mutex.lock();
}
void LocksAfterFork() {
  g_listeners_mutex.unlock();
  g_mutex.unlock();
}
void InstallLockForkHandlers() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(LocksBeforeFork, LocksAfterFork, LocksAfterFork); });
}

bool Preloaded() {
  // Resolves to the preloaded library's definition when it is there.
  return stackwalk_leakcheck_preloaded() != 0;
}

int StartWith(const Options& options) {
  if (Preloaded()) return STACKWALK_LEAKCHECK_PRELOADED;
  ReentryGuard own;
  ResolveReals();
  InstallForkHandlers();
  InstallPeriodicCheckForkHandlers();
  InstallSnapshotForkHandlers();
  InstallLockForkHandlers();  // last: see LocksBeforeFork
  std::lock_guard<std::mutex> hold(g_mutex);
  if (g_started) return STACKWALK_LEAKCHECK_ALREADY_STARTED;
  State& s = GlobalState();
  s.options = options;
  s.recording.Publish(options);
  s.timeline.Start(static_cast<uint32_t>(options.timeline_interval_ms));
  s.configured.store(true, std::memory_order_release);
  s.allocations.Clear();  // what an earlier session left is not this one's
  s.live_bytes.Reset();
  s.peak_epoch.store(0, std::memory_order_relaxed);
  s.stacks.ResetStats();
  s.threads.ResetLiveBytes();
  if (g_patcher == nullptr) g_patcher = new GotPatcher();
  s.active.store(true, std::memory_order_release);
  if (PatchLoaded() == 0) {
    g_patcher->RestoreAll();
    s.active.store(false, std::memory_order_release);
    return STACKWALK_LEAKCHECK_NOTHING_HOOKED;
  }
  KeepReportDestination();
  if (options.report_signal != 0) StartSignalReports(options.report_signal);
  if (options.check_interval != 0) StartPeriodicChecks(s, options.check_interval);
  StartSnapshotsAsked(s);
  g_started = true;
  return STACKWALK_LEAKCHECK_OK;
}

// At exit, while still started: the report, as the preloaded checker gives.
__attribute__((destructor)) void ReportInProcessAtExit() {
  if (g_started) ReportAtExit();
}

absl::Status StatusOf(int code) {
  switch (code) {
    case STACKWALK_LEAKCHECK_OK: return absl::OkStatus();
    case STACKWALK_LEAKCHECK_BAD_OPTIONS: return absl::InvalidArgumentError("bad leak check options");
    case STACKWALK_LEAKCHECK_ALREADY_STARTED:
      return absl::FailedPreconditionError("the leak checker is already started");
    case STACKWALK_LEAKCHECK_NOT_STARTED:
      return absl::FailedPreconditionError(
          "no leak checker runs: the in-process one is not started (Start()) and the preloaded "
          "one (stackwalk-leakcheck, LD_PRELOAD) is not loaded");
    case STACKWALK_LEAKCHECK_PRELOADED:
      return absl::FailedPreconditionError(
          "the preloaded leak checker (LD_PRELOAD) already hooks every allocation in this process");
    case STACKWALK_LEAKCHECK_NOTHING_HOOKED:
      return absl::NotFoundError("no loaded object matches the libraries to check");
    case STACKWALK_LEAKCHECK_NO_DUMP:
      return absl::FailedPreconditionError(
          "no dump file to add a snapshot to: set the dump option (--dump FILE)");
    case STACKWALK_LEAKCHECK_NOT_A_BLOCK:
      return absl::InvalidArgumentError(
          "not the start of a live block the leak checker recorded");
    default: return absl::InternalError(absl::StrCat("leak checker error ", code));
  }
}

// The public options' defaults are the text form's (Options' initializers): written once.
constexpr bool SameDefaults() {
  const LeakCheckOptions api;
  const Options text;
  return api.min_size == text.min_size && api.max_frames == text.max_frames &&
         static_cast<int>(api.method) == text.method && api.json == text.json &&
         api.report_at_exit == text.report_at_exit && api.report_signal == text.report_signal &&
         api.unreachable_only == text.unreachable_only &&
         api.check_interval == text.check_interval &&
         api.snapshot_signal == text.snapshot_signal &&
         api.snapshot_interval == text.snapshot_interval;
}
static_assert(SameDefaults(), "LeakCheckOptions' defaults differ from Options'");

}  // namespace

absl::Status Start(const LeakCheckOptions& options) {
  // Each field in the text form, then through the one table (leakcheck/options.cc) that the text
  // form and the launcher use too.
  for (const auto* list : {&options.libraries, &options.ignore_libraries}) {
    for (const std::string& pattern : *list) {
      // The text form separates globs with ',': a list of one-glob items must not hold one.
      if (pattern.empty() || pattern.find(',') != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("bad library pattern \"", pattern, "\""));
      }
    }
  }
  const char* method = options.method == Method::kAuto         ? "auto"
                       : options.method == Method::kFramePointer ? "fp"
                       : options.method == Method::kEhFrame      ? "ehframe"
                                                                 : "";
  const std::pair<const char*, std::string> items[] = {
      {"libraries", absl::StrJoin(options.libraries, ",")},
      {"ignore_libraries", absl::StrJoin(options.ignore_libraries, ",")},
      {"output", options.output},
      {"min_size", std::to_string(options.min_size)},
      {"max_frames", std::to_string(options.max_frames)},
      {"method", method},
      {"format", options.json ? "json" : "text"},
      {"report_at_exit", options.report_at_exit ? "1" : "0"},
      {"report_signal", std::to_string(options.report_signal)},
      {"unreachable_only", options.unreachable_only ? "1" : "0"},
      {"check_interval", std::to_string(options.check_interval)},
      {"dump", options.dump},
      {"snapshot_signal", std::to_string(options.snapshot_signal)},
      {"snapshot_interval", std::to_string(options.snapshot_interval)}};
  Options o;
  for (const auto& [key, value] : items) {
    const OptionSpec* spec = FindOption(key, std::strlen(key));
    if (spec == nullptr || !spec->set(&o, value.data(), value.size())) {
      return absl::InvalidArgumentError(absl::StrCat("bad value \"", value, "\" for option ", key,
                                                     spec != nullptr ? absl::StrCat(" (", spec->help, ")") : ""));
    }
  }
  return StatusOf(StartWith(o));
}

absl::StatusOr<LeakTotals> Report() {
  LeakTotals totals;
  int code = stackwalk_leakcheck_report(&totals.bytes, &totals.allocations);
  if (code != STACKWALK_LEAKCHECK_OK) return StatusOf(code);
  return totals;
}

absl::Status Stop() { return StatusOf(stackwalk_leakcheck_stop()); }

absl::StatusOr<int> Snapshot() {
  const int number = stackwalk_leakcheck_snapshot();
  if (number < 0) return StatusOf(number);
  return number;
}

namespace {

LeakRecord ToRecord(const stackwalk_leak_record& r) {
  LeakRecord out;
  out.kind = r.kind == STACKWALK_LEAK_INDIRECT    ? LeakKind::kIndirect
             : r.kind == STACKWALK_LEAK_REACHABLE ? LeakKind::kReachable
                                                  : LeakKind::kDirect;
  out.bytes = r.bytes;
  out.allocations = r.allocations;
  out.pcs.assign(r.pcs, r.pcs + std::min<uint32_t>(r.pc_count, STACKWALK_LEAK_MAX_PCS));
  out.tid = r.tid;
  out.thread.assign(r.thread, strnlen(r.thread, sizeof(r.thread)));
  out.first_seen_check = r.first_seen_check;
  out.first_seen = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(r.first_seen_unix_ns)));
  return out;
}

// The C++ listeners: each one's std::function, called through one C trampoline. A listener
// removed from inside a listener call is not freed (that call may be its own).
thread_local int t_in_cxx_listener = 0;
using CxxListener = std::function<void(const LeakCheck&)>;

void CallCxxListener(const stackwalk_leak_record* records, size_t count,
                     const stackwalk_leak_summary* summary, void* arg) {
  LeakCheck check;
  check.leaks.reserve(count);
  for (size_t i = 0; i < count; ++i) check.leaks.push_back(ToRecord(records[i]));
  check.summary = *summary;
  ++t_in_cxx_listener;
  (*static_cast<CxxListener*>(arg))(check);
  --t_in_cxx_listener;
}

std::vector<std::pair<int, CxxListener*>>* g_cxx_listeners = nullptr;  // never freed

}  // namespace

absl::StatusOr<LeakCheck> CheckLeaks(const CheckOptions& options) {
  CheckEntry entry;  // the check reads this thread's stack from here up: the program's frames
  LeakCheck check;
  auto each = [](const stackwalk_leak_record* r, void* arg) {
    static_cast<LeakCheck*>(arg)->leaks.push_back(ToRecord(*r));
  };
  const int code = stackwalk_leakcheck_check_each(each, &check, &check.summary);
  if (code != STACKWALK_LEAKCHECK_OK) return StatusOf(code);
  if (options.name_frames && !check.leaks.empty()) {
    // In-process, what naming allocates through a hooked object (libstdc++'s demangler) is
    // freed by an unhooked one (libstackwalk): not the program's, so not recorded.
    ReentryGuard own;
    FrameNamer namer;  // per check, as a report's namer
    for (LeakRecord& leak : check.leaks) {
      std::vector<void*> pcs(leak.pcs.size());
      for (size_t i = 0; i < pcs.size(); ++i) pcs[i] = reinterpret_cast<void*>(leak.pcs[i]);
      leak.frames = namer.SymbolizeTrace(pcs.data(), static_cast<int>(pcs.size()));
    }
  }
  return check;
}

absl::Status IgnoreObject(const void* block) {
  return StatusOf(stackwalk_leakcheck_ignore_object(block));
}

int AddLeakListener(std::function<void(const LeakCheck&)> listener) {
  if (!listener) return STACKWALK_LEAKCHECK_NO_SUCH_LISTENER;
  auto* held = new CxxListener(std::move(listener));
  const int id = stackwalk_leakcheck_add_listener(CallCxxListener, held);
  if (id <= 0) {
    delete held;
    return id;
  }
  std::lock_guard<std::mutex> hold(g_listeners_mutex);
  if (g_cxx_listeners == nullptr) g_cxx_listeners = new std::vector<std::pair<int, CxxListener*>>();
  g_cxx_listeners->emplace_back(id, held);
  return id;
}

void RemoveLeakListener(int id) {
  if (stackwalk_leakcheck_remove_listener(id) != STACKWALK_LEAKCHECK_OK) return;
  CxxListener* held = nullptr;
  {
    std::lock_guard<std::mutex> hold(g_listeners_mutex);
    if (g_cxx_listeners == nullptr) return;
    for (auto it = g_cxx_listeners->begin(); it != g_cxx_listeners->end(); ++it) {
      if (it->first == id) {
        held = it->second;
        g_cxx_listeners->erase(it);
        break;
      }
    }
  }
  if (t_in_cxx_listener == 0) delete held;
}

}  // namespace stackwalk::leakcheck

extern "C" {

EXPORT int stackwalk_leakcheck_start(const char* text) {
  int problems = 0;
  stackwalk::leakcheck::Options options = stackwalk::leakcheck::ParseOptions(text, &problems);
  if (problems != 0) return STACKWALK_LEAKCHECK_BAD_OPTIONS;
  return stackwalk::leakcheck::StartWith(options);
}

EXPORT int stackwalk_leakcheck_report(uint64_t* bytes, uint64_t* allocations) {
  using namespace stackwalk::leakcheck;
  CheckEntry entry;  // the check reads this thread's stack from here up: the program's frames
  ReentryGuard own;
  {
    std::lock_guard<std::mutex> hold(g_mutex);
    if (!g_started) return STACKWALK_LEAKCHECK_NOT_STARTED;
  }
  ReportTotals totals = WriteReport(GlobalState(), "request");
  if (bytes != nullptr) *bytes = totals.bytes;
  if (allocations != nullptr) *allocations = totals.allocations;
  return STACKWALK_LEAKCHECK_OK;
}

EXPORT int stackwalk_leakcheck_snapshot(void) {
  using namespace stackwalk::leakcheck;
  ReentryGuard own;
  {
    std::lock_guard<std::mutex> hold(g_mutex);
    if (!g_started) return STACKWALK_LEAKCHECK_NOT_STARTED;
  }
  return WriteSnapshot(GlobalState());
}

EXPORT int stackwalk_leakcheck_stop(void) {
  using namespace stackwalk::leakcheck;
  ReentryGuard own;
  {
    std::lock_guard<std::mutex> hold(g_mutex);
    if (!g_started) return STACKWALK_LEAKCHECK_NOT_STARTED;
    g_patcher->RestoreAll();
    GlobalState().active.store(false, std::memory_order_release);
    StopSignalReports();
    StopSnapshots();
    g_started = false;
  }
  // Outside g_mutex: a listener the periodic check is calling may call back (CheckLeaks).
  StopPeriodicChecks();
  return STACKWALK_LEAKCHECK_OK;
}

EXPORT int stackwalk_leakcheck_preloaded(void) { return 0; }

namespace {
bool Started() {
  std::lock_guard<std::mutex> hold(stackwalk::leakcheck::g_mutex);
  return stackwalk::leakcheck::g_started;
}
}  // namespace

EXPORT int stackwalk_leakcheck_check(stackwalk_leak_record* out, size_t capacity, size_t* count,
                                     stackwalk_leak_summary* summary) {
  using namespace stackwalk::leakcheck;
  CheckEntry entry;  // the check reads this thread's stack from here up: the program's frames
  if (!Started()) return STACKWALK_LEAKCHECK_NOT_STARTED;
  return CheckInto(GlobalState(), out, capacity, count, summary);
}
EXPORT int stackwalk_leakcheck_check_each(void (*each)(const stackwalk_leak_record*, void*),
                                          void* arg, stackwalk_leak_summary* summary) {
  using namespace stackwalk::leakcheck;
  CheckEntry entry;  // the check reads this thread's stack from here up: the program's frames
  if (!Started()) return STACKWALK_LEAKCHECK_NOT_STARTED;
  return CheckEach(GlobalState(), each, arg, summary);
}
EXPORT int stackwalk_leakcheck_ignore_object(const void* block) {
  using namespace stackwalk::leakcheck;
  if (!Started()) return STACKWALK_LEAKCHECK_NOT_STARTED;
  return IgnoreBlock(GlobalState(), block);
}
EXPORT int stackwalk_leakcheck_add_listener(stackwalk_leak_listener listener, void* arg) {
  return stackwalk::leakcheck::AddListener(listener, arg);
}
EXPORT int stackwalk_leakcheck_remove_listener(int id) {
  return stackwalk::leakcheck::RemoveListener(id);
}

// For tests (tests/fixtures/leak_checks.cc, fork_locked): holds one of the in-process checker's
// locks (0: g_mutex, 1: the C++ listeners') for `milliseconds`, as a thread inside Stop() or
// AddLeakListener() would, setting *held to 1 once it has it.
EXPORT void stackwalk_leakcheck_inprocess_hold_for_tests(int which, int milliseconds, int* held) {
  std::mutex& lock = which == 0 ? stackwalk::leakcheck::g_mutex : stackwalk::leakcheck::g_listeners_mutex;
  std::lock_guard<std::mutex> hold(lock);
  __atomic_store_n(held, 1, __ATOMIC_RELEASE);
  usleep(static_cast<useconds_t>(milliseconds) * 1000);
}

}  // extern "C"
