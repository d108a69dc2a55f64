// The allocation hooks of libstackwalk_leakcheck.so, for LD_PRELOAD: every malloc-family entry
// point and every operator new/delete form, recorded with its stack, served by glibc's own
// __libc_* allocator (so the hooks never call themselves, and dlsym is never needed).
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

#include "leakcheck/state.h"
#include "stackwalk/capture.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
void __libc_free(void*);
}

namespace stackwalk::leakcheck {

// Initial-exec: the preloaded library's thread-locals live in static TLS (no allocation).
__attribute__((tls_model("initial-exec"))) static thread_local bool t_in_hook = false;
__attribute__((tls_model("initial-exec"))) static thread_local int t_thread_id = 0;

State& GlobalState() {
  static State state;  // constant-initialized
  return state;
}

namespace {

State& Configured() {
  State& s = GlobalState();
  if (!s.configured.load(std::memory_order_acquire)) {
    s.options = ParseOptions(getenv("STACKWALK_LEAKCHECK"));
    s.configured.store(true, std::memory_order_release);
  }
  return s;
}

int ThreadId() {
  if (t_thread_id == 0) t_thread_id = static_cast<int>(syscall(SYS_gettid));
  return t_thread_id;
}

__attribute__((noinline)) void Record(void* p, size_t size) {
  if (p == nullptr || t_in_hook) return;
  State& s = Configured();
  if (size < s.options.min_size) return;
  t_in_hook = true;
  void* pcs[StackTable::kMaxFrames];
  int n = stackwalk::Capture(pcs, s.options.max_frames, static_cast<stackwalk::Method>(s.options.method));
  uint32_t id = s.stacks.Intern(pcs, n > 0 ? n : 0);
  s.allocations.Insert(reinterpret_cast<uintptr_t>(p), size, id, ThreadId());
  t_in_hook = false;
}

void Unrecord(void* p) {
  if (p != nullptr) GlobalState().allocations.Remove(reinterpret_cast<uintptr_t>(p));
}

// Around fork(): no shard may stay locked in the child by a thread that does not exist there.
void BeforeFork() {
  GlobalState().stacks.LockAll();
  GlobalState().allocations.LockAll();
}
void AfterForkParent() {
  GlobalState().allocations.UnlockAll();
  GlobalState().stacks.UnlockAll();
}
void AfterForkChild() {
  AfterForkParent();
  t_thread_id = 0;  // the child's thread has its own id
}

__attribute__((constructor(101))) void InstallForkHandlers() {
  pthread_atfork(BeforeFork, AfterForkParent, AfterForkChild);
}

void* NewOrThrow(size_t size) {
  void* p = __libc_malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  Record(p, size);
  return p;
}

void* AlignedNewOrThrow(size_t size, std::align_val_t align) {
  void* p = __libc_memalign(static_cast<size_t>(align), size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  Record(p, size);
  return p;
}

void Delete(void* p) {
  Unrecord(p);
  __libc_free(p);
}

}  // namespace

// The report at exit: after every other destructor (this library was loaded first), with
// glibc's and libstdc++'s internal pools given back first, as valgrind does.
__attribute__((destructor)) static void ReportAtExit() {
  State& s = Configured();
  if (!s.options.report_at_exit) return;
  t_in_hook = true;
  using Freeres = void (*)();
  if (auto gnu = reinterpret_cast<Freeres>(dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv"))) gnu();
  if (auto libc = reinterpret_cast<Freeres>(dlsym(RTLD_DEFAULT, "__libc_freeres"))) libc();
  uint64_t leaks = WriteReport(s);  // still in the hook: the report's own memory is not tracked
  t_in_hook = false;
  if (leaks > 0 && s.options.exitcode != 0) _exit(s.options.exitcode);
}

}  // namespace stackwalk::leakcheck

using stackwalk::leakcheck::AlignedNewOrThrow;
using stackwalk::leakcheck::Delete;
using stackwalk::leakcheck::NewOrThrow;
using stackwalk::leakcheck::Record;
using stackwalk::leakcheck::Unrecord;

extern "C" {

void* malloc(size_t size) {
  void* p = __libc_malloc(size);
  Record(p, size);
  return p;
}

void free(void* p) { Delete(p); }

void* calloc(size_t n, size_t size) {
  void* p = __libc_calloc(n, size);
  Record(p, n * size);  // glibc refused an overflowing product: p is null then
  return p;
}

void* realloc(void* old, size_t size) {
  if (old == nullptr) return malloc(size);
  stackwalk::leakcheck::Allocation before{};
  bool tracked = stackwalk::leakcheck::GlobalState().allocations.Remove(
      reinterpret_cast<uintptr_t>(old), &before);
  void* p = __libc_realloc(old, size);
  if (p != nullptr) {
    Record(p, size);
  } else if (size != 0 && tracked) {
    // Failed: the old block lives on, as it was.
    stackwalk::leakcheck::GlobalState().allocations.Insert(before.address, before.size,
                                                            before.stack_id, before.thread);
  }
  return p;
}

void* reallocarray(void* old, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(old, bytes);
}

void* memalign(size_t align, size_t size) {
  void* p = __libc_memalign(align, size);
  Record(p, size);
  return p;
}

void* aligned_alloc(size_t align, size_t size) {
  void* p = __libc_memalign(align, size);
  Record(p, size);
  return p;
}

int posix_memalign(void** out, size_t align, size_t size) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(align, size);
  if (p == nullptr) return ENOMEM;
  Record(p, size);
  *out = p;
  return 0;
}

void* valloc(size_t size) {
  void* p = __libc_valloc(size);
  Record(p, size);
  return p;
}

void* pvalloc(size_t size) {
  void* p = __libc_pvalloc(size);
  Record(p, size);
  return p;
}

}  // extern "C"

void* operator new(size_t size) { return NewOrThrow(size); }
void* operator new[](size_t size) { return NewOrThrow(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  void* p = __libc_malloc(size == 0 ? 1 : size);
  Record(p, size);
  return p;
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(size_t size, std::align_val_t align) { return AlignedNewOrThrow(size, align); }
void* operator new[](size_t size, std::align_val_t align) { return AlignedNewOrThrow(size, align); }
void* operator new(size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  void* p = __libc_memalign(static_cast<size_t>(align), size == 0 ? 1 : size);
  Record(p, size);
  return p;
}
void* operator new[](size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return operator new(size, align, tag);
}
void operator delete(void* p) noexcept { Delete(p); }
void operator delete[](void* p) noexcept { Delete(p); }
void operator delete(void* p, size_t) noexcept { Delete(p); }
void operator delete[](void* p, size_t) noexcept { Delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { Delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Delete(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { Delete(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { Delete(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { Delete(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { Delete(p); }
