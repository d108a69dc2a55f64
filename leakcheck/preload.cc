// libstackwalk_leakcheck.so, for LD_PRELOAD: exports every malloc-family entry point and every
// operator new/delete form, recording around glibc's own __libc_* allocator (so the hooks never
// call themselves and the allocation hooks need no dlsym), and dlclose (found with
// dlsym(RTLD_NEXT)), to remember what it unloads; the exec family is in preload_exec.cc.
#include <dlfcn.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "leakcheck/allocator_hooks.h"
#include "leakcheck/checks.h"
#include "leakcheck/closed_modules.h"
#include "leakcheck/preload_exec.h"
#include "leakcheck/record_handover.h"
#include "leakcheck/record_region.h"
#include "leakcheck/recording.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/session.h"
#include "leakcheck/snapshots.h"
#include "leakcheck/state.h"
#include "stackwalk/leakcheck.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
void __libc_free(void*);
int __cxa_atexit(void (*)(void*), void*, void*);
}

#define EXPORT __attribute__((visibility("default")))

namespace stackwalk::leakcheck {
namespace {

void* LibcReallocarray(void* old, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_realloc(old, bytes);
}
void* LibcAlignedAlloc(size_t align, size_t size) { return __libc_memalign(align, size); }
int LibcPosixMemalign(void** out, size_t align, size_t size) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(align, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* LibcNew(size_t size) {
  void* p = __libc_malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* LibcNewNothrow(size_t size, const std::nothrow_t&) {
  return __libc_malloc(size == 0 ? 1 : size);
}
void* LibcNewAligned(size_t size, std::align_val_t align) {
  void* p = __libc_memalign(static_cast<size_t>(align), size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* LibcNewAlignedNothrow(size_t size, std::align_val_t align, const std::nothrow_t&) {
  return __libc_memalign(static_cast<size_t>(align), size == 0 ? 1 : size);
}
void LibcDelete(void* p) { __libc_free(p); }
void LibcDeleteAligned(void* p, std::align_val_t) { __libc_free(p); }

// Constant-initialized: the hooks work from the process's first allocation.
constexpr RealAllocator kLibc = {
    __libc_malloc,     __libc_calloc,    __libc_realloc,        LibcReallocarray,
    __libc_free,       __libc_memalign,  LibcAlignedAlloc,      LibcPosixMemalign,
    __libc_valloc,     __libc_pvalloc,   LibcNew,               LibcNewNothrow,
    LibcNewAligned,    LibcNewAlignedNothrow, LibcDelete,       LibcDeleteAligned};

using Hooks = AllocatorHooks<kLibc>;

// Takes this library out of LD_PRELOAD, in place (no allocation), so that what this process
// starts runs unchecked.
void LeaveOutOfChildren() {
  if (char* list = getenv("LD_PRELOAD")) WithoutThisLibrary(list, list);
}

__attribute__((constructor(101))) void StartPreloaded() {
  ResolveExecFunctions();  // every process execs through them, checked or not
  State& s = ConfiguredState();
  // Not checked if its first allocation found so (ConfigureFromEnvironment: nothing recorded
  // since), or if it finds so now (the environment was not readable then).
  if (!s.active.load() || !ChosenProcess(s.options)) {
    // The launcher's dump pipe (--name-in=launcher) is the checked program's, which keeps it
    // through its own execs (a wrapper script's exec of the real program); a program it starts
    // lets go of it, so that it does not keep the pipe open after the program ends (a process
    // forked from the program execs it with them set to close: preload_exec.cc).
    int fds[kLauncherDescriptors];
    for (int i = 0, n = LauncherDescriptors(fds); i < n; ++i) close(fds[i]);
    s.active.store(false);  // runs unchecked; and so does whatever it starts
    LeaveOutOfChildren();
    return;
  }
  s.preloaded = true;
  DecideQuietCleanExit();
  KeepReportDestination();
  InstallForkHandlers();
  {
    ReentryGuard own;  // the module map's memory is the checker's
    RecordModules();   // for the launcher, should the program be killed (record_region.h)
  }
  if (s.options.report_signal != 0 && !StartSignalReports(s.options.report_signal)) {
    std::fprintf(stderr, "stackwalk-leakcheck: cannot report on signal %d\n",
                 s.options.report_signal);
  }
  if (s.options.check_interval != 0 && !StartPeriodicChecks(s, s.options.check_interval)) {
    std::fprintf(stderr, "stackwalk-leakcheck: cannot start the periodic checks\n");
  }
  StartSnapshotsAsked(s);
}

// The report at exit. This destructor runs inside the loader's _dl_fini, before the destructors of
// libraries initialized ahead of this one (the program's own dependencies), which may still free;
// so it only registers the report as an exit handler, which glibc runs after _dl_fini returns,
// when every destructor has run. Registered for no object (a null DSO handle): this library's own
// __cxa_finalize, which runs right after this destructor, would otherwise run it at once. If the
// registration fails, the report is written now.
void ReportAfterEveryDestructor(void*) { ReportAtExit(); }
__attribute__((destructor)) void ReportPreloadedAtExit() {
  if (__cxa_atexit(ReportAfterEveryDestructor, nullptr, nullptr) != 0) ReportAtExit();
}

// _exit and _Exit end the process without exit handlers, as dash and many daemons and forked
// children do: the report is written first. Not in a vfork child, which shares this process's
// memory under another pid (exec failed): that exit is not the program's.
[[noreturn]] void ReportThenExit(int status) {
  if (getpid() == ReportingProcess()) ReportAtExit();
  for (;;) syscall(SYS_exit_group, status);
}

}  // namespace
}  // namespace stackwalk::leakcheck

using stackwalk::leakcheck::Hooks;

extern "C" {

EXPORT void* malloc(size_t size) { return Hooks::Malloc(size); }
EXPORT void free(void* p) { Hooks::Free(p); }
EXPORT void cfree(void* p) { Hooks::Free(p); }  // old binaries still call it
EXPORT void* calloc(size_t n, size_t size) { return Hooks::Calloc(n, size); }
EXPORT void* realloc(void* old, size_t size) { return Hooks::Realloc(old, size); }
EXPORT void* reallocarray(void* old, size_t n, size_t size) {
  return Hooks::Reallocarray(old, n, size);
}
EXPORT void* memalign(size_t align, size_t size) { return Hooks::Memalign(align, size); }
EXPORT void* aligned_alloc(size_t align, size_t size) { return Hooks::AlignedAlloc(align, size); }
EXPORT int posix_memalign(void** out, size_t align, size_t size) {
  return Hooks::PosixMemalign(out, align, size);
}
EXPORT void* valloc(size_t size) { return Hooks::Valloc(size); }
EXPORT void* pvalloc(size_t size) { return Hooks::Pvalloc(size); }

// dlclose: what it unloads is remembered, so leaks made in it are still named.
EXPORT int dlclose(void* handle) {
  using Dlclose = int (*)(void*);
  static Dlclose real = reinterpret_cast<Dlclose>(dlsym(RTLD_NEXT, "dlclose"));
  if (real == nullptr) return -1;
  // A process the launcher does not check keeps nothing of what it unloads.
  if (!stackwalk::leakcheck::GlobalState().active.load()) return real(handle);
  const int result =
      stackwalk::leakcheck::DlcloseRemembering(stackwalk::leakcheck::GlobalState(), real, handle);
  stackwalk::leakcheck::ReentryGuard own;
  stackwalk::leakcheck::RecordModules();  // the record region's list, without the object unloaded
  return result;
}

// The in-process API, for a program that runs preloaded: reports work, Start()/Stop() refuse
// (everything is hooked already, for the process's whole life).
EXPORT int stackwalk_leakcheck_start(const char*) { return STACKWALK_LEAKCHECK_PRELOADED; }
EXPORT int stackwalk_leakcheck_stop(void) { return STACKWALK_LEAKCHECK_PRELOADED; }
EXPORT int stackwalk_leakcheck_report(uint64_t* bytes, uint64_t* allocations) {
  using namespace stackwalk::leakcheck;
  CheckEntry entry;  // the check reads this thread's stack from here up: the program's frames
  ReentryGuard own;
  ReportTotals totals = WriteReport(GlobalState(), "request");
  if (bytes != nullptr) *bytes = totals.bytes;
  if (allocations != nullptr) *allocations = totals.allocations;
  return 0;
}
EXPORT int stackwalk_leakcheck_snapshot(void) {
  using namespace stackwalk::leakcheck;
  ReentryGuard own;
  return WriteSnapshot(GlobalState());
}
EXPORT int stackwalk_leakcheck_preloaded(void) { return 1; }
EXPORT int stackwalk_leakcheck_check(stackwalk_leak_record* out, size_t capacity, size_t* count,
                                     stackwalk_leak_summary* summary) {
  using namespace stackwalk::leakcheck;
  CheckEntry entry;  // the check reads this thread's stack from here up: the program's frames
  return CheckInto(GlobalState(), out, capacity, count, summary);
}
EXPORT int stackwalk_leakcheck_check_each(void (*each)(const stackwalk_leak_record*, void*),
                                          void* arg, stackwalk_leak_summary* summary) {
  using namespace stackwalk::leakcheck;
  CheckEntry entry;  // the check reads this thread's stack from here up: the program's frames
  return CheckEach(GlobalState(), each, arg, summary);
}
EXPORT int stackwalk_leakcheck_ignore_object(const void* block) {
  return stackwalk::leakcheck::IgnoreBlock(stackwalk::leakcheck::GlobalState(), block);
}
EXPORT int stackwalk_leakcheck_add_listener(stackwalk_leak_listener listener, void* arg) {
  return stackwalk::leakcheck::AddListener(listener, arg);
}
EXPORT int stackwalk_leakcheck_remove_listener(int id) {
  return stackwalk::leakcheck::RemoveListener(id);
}

EXPORT void _exit(int status) { stackwalk::leakcheck::ReportThenExit(status); }
EXPORT void _Exit(int status) { stackwalk::leakcheck::ReportThenExit(status); }

}  // extern "C"

void* operator new(size_t size) { return Hooks::New(size); }
void* operator new[](size_t size) { return Hooks::New(size); }
void* operator new(size_t size, const std::nothrow_t& tag) noexcept {
  return Hooks::NewNothrow(size, tag);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return Hooks::NewNothrow(size, tag);
}
void* operator new(size_t size, std::align_val_t align) { return Hooks::NewAligned(size, align); }
void* operator new[](size_t size, std::align_val_t align) {
  return Hooks::NewAligned(size, align);
}
void* operator new(size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return Hooks::NewAlignedNothrow(size, align, tag);
}
void* operator new[](size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return Hooks::NewAlignedNothrow(size, align, tag);
}
void operator delete(void* p) noexcept { Hooks::Delete(p); }
void operator delete[](void* p) noexcept { Hooks::Delete(p); }
void operator delete(void* p, size_t size) noexcept { Hooks::DeleteSized(p, size); }
void operator delete[](void* p, size_t size) noexcept { Hooks::DeleteSized(p, size); }
void operator delete(void* p, const std::nothrow_t& tag) noexcept { Hooks::DeleteNothrow(p, tag); }
void operator delete[](void* p, const std::nothrow_t& tag) noexcept {
  Hooks::DeleteNothrow(p, tag);
}
void operator delete(void* p, std::align_val_t align) noexcept { Hooks::DeleteAligned(p, align); }
void operator delete[](void* p, std::align_val_t align) noexcept {
  Hooks::DeleteAligned(p, align);
}
void operator delete(void* p, size_t size, std::align_val_t align) noexcept {
  Hooks::DeleteSizedAligned(p, size, align);
}
void operator delete[](void* p, size_t size, std::align_val_t align) noexcept {
  Hooks::DeleteSizedAligned(p, size, align);
}
void operator delete(void* p, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  Hooks::DeleteAlignedNothrow(p, align, tag);
}
void operator delete[](void* p, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  Hooks::DeleteAlignedNothrow(p, align, tag);
}
