// The exited threads' stacks (exited_stacks.h): a table each exiting thread writes its own
// entry into, read by a check with the world stopped.
#include "leakcheck/scan/exited_stacks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "leakcheck/scan/tls_roots.h"  // CurrentThreadPointer

namespace stackwalk::leakcheck {
namespace {

// The words at the thread pointer that tell the same cached descriptor again: x86_64's tcbhead_t
// {tcb (= itself), dtv}, aarch64's and arm's {dtv, private}. A stack glibc unmapped (and the
// address reused) does not hold them; one reused for a new thread is live anyway.
constexpr int kSignatureWords = 2;

struct Entry {
  // Every word inverted (~word): this table lies in the checker's own globals, a root, and what
  // it names is freed or unmapped by glibc later (the DTV is a heap block freed with the stack;
  // an unmapped stack's range is where the next large block is mapped). As they were, the words
  // would keep whatever block comes there next reachable (the stress test's lost kept blocks).
  std::atomic<uint32_t> state{0};     // kEmpty, kWriting or kValid
  uintptr_t inverted_lo = 0;          // the stack's bottom (above its guard)
  uintptr_t inverted_tp = 0;          // the exited thread's thread pointer
  uintptr_t inverted_dead_hi = 0;     // the dead part is [lo, dead_hi)
  uintptr_t inverted_signature[kSignatureWords] = {};
};
constexpr uint32_t kEmpty = 0, kWriting = 1, kValid = 2;

Entry g_entries[kMaxExitedStacks];
std::atomic_flag g_writing = ATOMIC_FLAG_INIT;  // between writers only: a check never waits
size_t g_next = 0;                              // the slot the next new stack takes (a ring)

// Where the thread's descriptor starts, from its thread pointer; 0 if unknown. TLS_DTV_AT_TP
// (aarch64, arm): struct pthread lies just below the thread pointer (glibc's THREAD_SELF is
// tp - sizeof(struct pthread)), the stack below it; its size is what libc tells libthread_db.
uintptr_t DescriptorStart(uintptr_t tp) {
#if defined(__x86_64__) || defined(__i386__)
  return tp;  // TLS_TCB_AT_TP: the descriptor starts at tp, the static TLS and stack below
#else
  static std::atomic<uint32_t> size{0};  // 0: not looked up; UINT32_MAX: not found
  uint32_t known = size.load(std::memory_order_relaxed);
  if (known == 0) {
    const auto* symbol =
        static_cast<const uint32_t*>(dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread"));
    known = symbol != nullptr && *symbol != 0 ? *symbol : UINT32_MAX;
    size.store(known, std::memory_order_relaxed);
  }
  return known == UINT32_MAX || tp < known ? 0 : tp - known;
#endif
}

class WriterLock {
 public:
  WriterLock() {
    while (g_writing.test_and_set(std::memory_order_acquire)) sched_yield();
  }
  ~WriterLock() { g_writing.clear(std::memory_order_release); }
};

}  // namespace

void RecordExitingThreadStack() {
  if (syscall(SYS_gettid) == getpid()) return;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* stack = nullptr;
  size_t size = 0;
  size_t guard = 0;
  const bool known = pthread_attr_getstack(&attr, &stack, &size) == 0 &&
                     pthread_attr_getguardsize(&attr, &guard) == 0;
  pthread_attr_destroy(&attr);
  // Only a stack glibc made can be cached for reuse: one the program gave (pthread_attr_setstack,
  // for which glibc reports no guard) is the program's memory again after the thread, and what it
  // keeps there a root. A glibc stack made without a guard is left a root too (the safe side).
  if (!known || stack == nullptr || guard == 0) return;
  const auto lo = reinterpret_cast<uintptr_t>(stack);
  const uintptr_t tp = CurrentThreadPointer();
  const uintptr_t dead_hi = DescriptorStart(tp);
  // glibc places the descriptor at the top of every stack it gives a thread (a user's too).
  if (tp <= lo || tp - lo >= size || dead_hi <= lo) return;

  WriterLock lock;
  Entry* slot = nullptr;
  for (Entry& e : g_entries) {  // the same stack exited before (a reused one): its entry
    if (e.state.load(std::memory_order_relaxed) == kValid && ~e.inverted_lo == lo) slot = &e;
  }
  if (slot == nullptr) slot = &g_entries[g_next++ % kMaxExitedStacks];
  slot->state.store(kWriting, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  slot->inverted_lo = ~lo;
  slot->inverted_tp = ~tp;
  slot->inverted_dead_hi = ~dead_hi;
  for (int i = 0; i < kSignatureWords; ++i) {
    slot->inverted_signature[i] = ~reinterpret_cast<const uintptr_t*>(tp)[i];
  }
  slot->state.store(kValid, std::memory_order_release);
}

size_t FindExitedThreadStacks(const StoppedThread* threads, size_t thread_count,
                              uintptr_t caller_sp, const MapsSnapshot& maps, MemoryReader& reader,
                              internal::AddressRange* out, size_t capacity) {
  for (size_t t = 0; t < thread_count; ++t) {
    const StoppedThread& thread = threads[t];
    if (thread.state != StoppedThread::State::kGone && thread.thread_pointer == 0 &&
        thread.sp == 0) {
      return 0;  // a live thread we cannot place: any stack may be its
    }
  }
  const uintptr_t caller_tp = CurrentThreadPointer();
  size_t count = 0;
  for (const Entry& e : g_entries) {
    if (count == capacity) break;
    // A writer stopped mid-entry left it kWriting: skipped (its stack is a root this time).
    if (e.state.load(std::memory_order_acquire) != kValid) continue;
    const uintptr_t lo = ~e.inverted_lo, tp = ~e.inverted_tp, dead_hi = ~e.inverted_dead_hi;
    const MapsEntry* mapping = maps.Find(tp);
    if (mapping == nullptr || mapping->kind != MapsEntry::Kind::kAnonymous ||
        !mapping->readable || !mapping->writable || mapping->shared ||
        !mapping->range.Contains(lo)) {
      continue;  // unmapped since, or mapped again as something else
    }
    uintptr_t signature[kSignatureWords];
    if (!reader.Read(tp, signature, sizeof signature)) continue;
    bool same = true;
    for (int i = 0; i < kSignatureWords; ++i) same &= ~signature[i] == e.inverted_signature[i];
    if (!same) continue;
    const internal::AddressRange stack{lo, tp};
    bool live = tp == caller_tp || stack.Contains(caller_sp);
    for (size_t t = 0; t < thread_count && !live; ++t) {
      const StoppedThread& thread = threads[t];
      if (thread.state == StoppedThread::State::kGone) continue;
      live = thread.thread_pointer == tp || stack.Contains(thread.sp) ||
             stack.Contains(thread.frame_lo);
    }
    if (!live) out[count++] = {lo, dead_hi};
  }
  return count;
}

void ExitedStacksAfterForkChild() { g_writing.clear(std::memory_order_release); }

void ForgetExitedThreadStacksForTesting() {
  WriterLock lock;
  for (Entry& e : g_entries) e.state.store(kEmpty, std::memory_order_relaxed);
  g_next = 0;
}

}  // namespace stackwalk::leakcheck
