// The signal method, where ptrace is refused (Yama, containers, qemu-user): a real-time signal
// parks each thread in a handler that copies its registers into its slot and waits on a futex
// until Resume. The handler is installed once and kept (a real-time signal's default action
// kills); a generation word makes a late delivery return at once.
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>

#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/raw_syscall.h"
#include "leakcheck/scan/stop_world.h"
#include "leakcheck/scan/stop_world_internal.h"

namespace stackwalk::leakcheck {
namespace {

using stop_internal::MonotonicNs;

// Slot states while a signal stop runs (StoppedThread::state is a byte; these lie outside the
// public values and are replaced by them before Stop returns).
constexpr uint8_t kSignaled = 0x10;  // signal sent, handler not yet in
constexpr uint8_t kWriting = 0x11;   // the handler is copying its registers
constexpr uint8_t kParked = 0x12;    // registers copied, waiting on the generation
constexpr uint8_t kGiveUp = 0x13;    // the caller stopped waiting: the handler must not write
constexpr char kBlockedWhy[] = "signal blocked";
constexpr uint64_t kBlockedGraceNs = 10 * 1000 * 1000;  // for a new thread to unblock signals

std::atomic<int> g_requested_signal{0};
std::atomic<int> g_installed_signal{0};
std::atomic<uint32_t> g_generation{0};       // odd while a signal stop holds the threads
std::atomic<StoppedThread*> g_slots{nullptr};
std::atomic<size_t> g_slot_count{0};
std::atomic<int> g_in_flight{0};             // handlers between entry and parking
std::atomic<int32_t> g_parked{0};            // futex word: handlers parked this generation

long Futex(void* word, int op, int32_t value, const void* timeout = nullptr) {
  return raw::Syscall(SYS_futex, word, op, value, timeout);
}

uint8_t LoadState(const StoppedThread& thread) {
  return __atomic_load_n(reinterpret_cast<const uint8_t*>(&thread.state), __ATOMIC_ACQUIRE);
}
void StoreState(StoppedThread& thread, uint8_t state) {
  __atomic_store_n(reinterpret_cast<uint8_t*>(&thread.state), state, __ATOMIC_RELEASE);
}
bool SwapState(StoppedThread& thread, uint8_t from, uint8_t to) {
  return __atomic_compare_exchange_n(reinterpret_cast<uint8_t*>(&thread.state), &from, to, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

uint32_t Copy(StoppedThread& thread, uint32_t at, const void* from, size_t bytes) {
  if (at >= sizeof(thread.regs)) return at;
  if (bytes > sizeof(thread.regs) - at) bytes = sizeof(thread.regs) - at;
  const auto* in = static_cast<const uint8_t*>(from);
  for (size_t i = 0; i < bytes; ++i) thread.regs[at + i] = in[i];
  return static_cast<uint32_t>(at + bytes);
}

void SaveContext(StoppedThread& thread, const ucontext_t* uc) {
  uint32_t used = 0;
#if defined(__x86_64__)
  used = Copy(thread, used, uc->uc_mcontext.gregs, sizeof(uc->uc_mcontext.gregs));
  thread.sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  if (const auto* fp = reinterpret_cast<const uint8_t*>(uc->uc_mcontext.fpregs)) {
    // fxsave's 512 bytes (x87, xmm0-15: where compilers spill pointers), not the extended state
    // after it: the AVX upper halves and AVX-512's zmm16-31 hold what glibc's string functions
    // last copied (its evex memcpy works in ymm16-31), stale words that kept leaks "reachable".
    // As the ptrace method (NT_FPREGSET).
    used = Copy(thread, (used + 63) & ~63u, fp, 512);
  }
#elif defined(__aarch64__)
  // regs[31], sp, pc, pstate; then the FP/SIMD record of __reserved.
  used = Copy(thread, used, uc->uc_mcontext.regs, 34 * sizeof(uint64_t));
  thread.sp = static_cast<uintptr_t>(uc->uc_mcontext.sp);
  const auto* reserved = reinterpret_cast<const uint8_t*>(uc->uc_mcontext.__reserved);
  for (size_t at = 0; at + 8 <= sizeof(uc->uc_mcontext.__reserved);) {
    uint32_t magic = 0, size = 0;
    std::memcpy(&magic, reserved + at, 4);
    std::memcpy(&size, reserved + at + 4, 4);
    if (magic == 0 || size < 8 || at + size > sizeof(uc->uc_mcontext.__reserved)) break;
    if (magic == 0x46508001u) {  // FPSIMD_MAGIC
      used = Copy(thread, (used + 63) & ~63u, reserved + at, size);
      break;
    }
    at += size;
  }
#elif defined(__arm__)
  used = Copy(thread, used, &uc->uc_mcontext, sizeof(uc->uc_mcontext));
  thread.sp = static_cast<uintptr_t>(uc->uc_mcontext.arm_sp);
  used = Copy(thread, (used + 63) & ~63u, uc->uc_regspace, sizeof(uc->uc_regspace));
#endif
  thread.reg_bytes = used;
  thread.thread_pointer = reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
  thread.frame_lo = reinterpret_cast<uintptr_t>(uc);
}

void StopHandler(int, siginfo_t*, void* context) {
  const uint32_t generation = g_generation.load(std::memory_order_acquire);
  if ((generation & 1) == 0) return;  // late: no stop holds the threads now
  const int tid = raw::GetTid();
  StoppedThread* mine = nullptr;
  for (;;) {
    g_in_flight.fetch_add(1, std::memory_order_seq_cst);
    StoppedThread* slots = g_slots.load(std::memory_order_seq_cst);
    if (g_generation.load(std::memory_order_acquire) != generation) {
      g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
      return;
    }
    if (slots != nullptr) {
      const size_t count = g_slot_count.load(std::memory_order_acquire);
      for (size_t i = 0; i < count; ++i) {
        if (slots[i].tid == tid) {
          mine = &slots[i];
          break;
        }
      }
      break;
    }
    // The caller is growing the slots: let it, then look again.
    g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
    raw::Syscall(SYS_sched_yield);
  }
  if (mine == nullptr || !SwapState(*mine, kSignaled, kWriting)) {
    g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
  SaveContext(*mine, static_cast<const ucontext_t*>(context));
  StoreState(*mine, kParked);
  g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
  g_parked.fetch_add(1, std::memory_order_acq_rel);
  Futex(&g_parked, FUTEX_WAKE_PRIVATE, 1);
  while (g_generation.load(std::memory_order_acquire) == generation) {
    Futex(&g_generation, FUTEX_WAIT_PRIVATE, static_cast<int32_t>(generation));
  }
}

// Installs the handler once; the signal number, or 0 if none could be installed.
int InstallOnce() {
  if (const int installed = g_installed_signal.load(std::memory_order_acquire)) return installed;
  int first = g_requested_signal.load(std::memory_order_relaxed);
  if (first == 0) first = SIGRTMIN + 5;
  for (int sig = first; sig <= SIGRTMAX; ++sig) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0) continue;
    const bool ours = (old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction == &StopHandler;
    if (!ours && old.sa_handler != SIG_DFL) continue;  // the program's: try the next one
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_sigaction = &StopHandler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&action.sa_mask);
    if (sigaction(sig, &action, nullptr) != 0) continue;
    int expected = 0;
    if (g_installed_signal.compare_exchange_strong(expected, sig)) return sig;
    return expected;
  }
  return 0;
}

// True if /proc/self/task/<tid>/status's SigBlk has sig; *running: its State is R.
bool SignalBlocked(int tid, int sig, bool* running = nullptr) {
  if (running != nullptr) *running = false;
  char path[48] = "/proc/self/task/";
  stop_internal::AppendInt(path, sizeof(path), tid);
  stop_internal::Append(path, sizeof(path), "/status");
  const long fd = raw::Syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[2048];
  long got = 0;
  for (long n; got < static_cast<long>(sizeof(text)) - 1 &&
               (n = raw::Syscall(SYS_read, fd, text + got, sizeof(text) - 1 - got)) > 0;) {
    got += n;
  }
  raw::Syscall(SYS_close, fd);
  if (got <= 0) return false;
  text[got] = '\0';
  static const char kState[] = "\nState:\t";
  for (long i = 0; running != nullptr && i + 10 < got; ++i) {
    if (std::memcmp(text + i, kState, sizeof(kState) - 1) == 0) {
      *running = text[i + sizeof(kState) - 1] == 'R';
      break;
    }
  }
  static const char kKey[] = "\nSigBlk:";
  for (long i = 0; i + 8 < got; ++i) {
    if (std::memcmp(text + i, kKey, sizeof(kKey) - 1) != 0) continue;
    const char* c = text + i + sizeof(kKey) - 1;
    while (*c == ' ' || *c == '\t') ++c;
    uint64_t mask = 0;
    for (;; ++c) {
      int digit;
      if (*c >= '0' && *c <= '9') {
        digit = *c - '0';
      } else if (*c >= 'a' && *c <= 'f') {
        digit = *c - 'a' + 10;
      } else {
        break;
      }
      mask = mask << 4 | static_cast<uint64_t>(digit);
    }
    return (mask >> (sig - 1)) & 1;
  }
  return false;
}

bool Alive(int pid, int tid) { return raw::Syscall(SYS_tgkill, pid, tid, 0) != -ESRCH; }

}  // namespace

void SetStopSignal(int signo) { g_requested_signal.store(signo, std::memory_order_relaxed); }

int ParkingSignal() {
  if (const int installed = g_installed_signal.load(std::memory_order_relaxed)) return installed;
  if (const int requested = g_requested_signal.load(std::memory_order_relaxed)) return requested;
  return SIGRTMIN + 5;
}

namespace {

// One pass's listing, in an own mapping grown as needed (no malloc while threads are parked).
struct TidList {
  int32_t* tids = nullptr;
  size_t count = 0;
  size_t capacity = 0;
  bool short_of_memory = false;
  ~TidList() {
    if (tids != nullptr) OwnUnmap(tids, capacity * sizeof(int32_t));
  }
  static void Add(int tid, void* context) {
    auto* list = static_cast<TidList*>(context);
    if (list->count == list->capacity) {
      const size_t capacity = list->capacity == 0 ? 1024 : 2 * list->capacity;
      void* grown = list->tids == nullptr
                        ? OwnMap(capacity * sizeof(int32_t))
                        : OwnRemap(list->tids, list->capacity * sizeof(int32_t),
                                   capacity * sizeof(int32_t));
      if (grown == nullptr) {
        list->short_of_memory = true;
        return;
      }
      list->tids = static_cast<int32_t*>(grown);
      list->capacity = capacity;
    }
    list->tids[list->count++] = tid;
  }
};

}  // namespace

bool StoppedWorld::StopSignal(int timeout_ms, const int32_t* skip_tids, size_t skip_count) {
  using stop_internal::Append;
  const int sig = InstallOnce();
  if (sig == 0) {
    Append(reason_, sizeof(reason_), reason_[0] != '\0' ? "; " : "");
    Append(reason_, sizeof(reason_), "signal: no real-time signal free for the handler");
    return false;
  }
  // Odd: handlers park. One signal stop at a time in the process.
  uint32_t even = g_generation.load(std::memory_order_acquire);
  if ((even & 1) != 0 ||
      !g_generation.compare_exchange_strong(even, even + 1, std::memory_order_acq_rel)) {
    Append(reason_, sizeof(reason_), reason_[0] != '\0' ? "; " : "");
    Append(reason_, sizeof(reason_), "signal: another stop is running");
    return false;
  }
  const int pid = raw::GetPid();
  const int caller = raw::GetTid();
  count_ = 0;
  pause_start_ns_ = MonotonicNs();
  const uint64_t deadline = pause_start_ns_ + static_cast<uint64_t>(timeout_ms) * 1000000ull;
  g_parked.store(0, std::memory_order_relaxed);
  g_slot_count.store(0, std::memory_order_relaxed);
  g_slots.store(threads_, std::memory_order_seq_cst);  // a late handler found none until now
  int32_t signaled = 0;
  TidList list;
  // Passes until one finds no new thread (a thread not yet parked may create one); at most 30.
  for (int pass = 0; pass < 30; ++pass) {
    list.count = 0;
    const uint64_t pass_start = MonotonicNs();
    stop_internal::ForEachTask(0, &TidList::Add, &list);
    bool found_new = false;
    for (size_t t = 0; t < list.count; ++t) {
      const int tid = list.tids[t];
      if (tid == caller || stop_internal::Contains(skip_tids, skip_count, tid)) continue;
      bool known = false;
      for (size_t i = 0; i < count_ && !known; ++i) known = threads_[i].tid == tid;
      if (known) continue;
      found_new = true;
      if (count_ == capacity_) {
        // Grow with no handler looking at the slots: they retry once the slots are back.
        g_slots.store(nullptr, std::memory_order_seq_cst);
        while (g_in_flight.load(std::memory_order_seq_cst) != 0) raw::Syscall(SYS_sched_yield);
        const bool grown = Reserve(count_ + 1);
        g_slots.store(threads_, std::memory_order_seq_cst);
        if (!grown) break;
      }
      StoppedThread& thread = threads_[count_];
      thread.tid = tid;
      thread.why = "";
      thread.sp = thread.thread_pointer = thread.frame_lo = 0;
      thread.reg_bytes = 0;
      // Asleep with the signal blocked: it holds the signal off (sigwaitinfo, a blocking call
      // under a full mask; under qemu-user its own threads). Runnable with it blocked: most
      // likely a new thread that pthread_create started with every signal blocked and that has
      // not yet run to restore its mask: signaled all the same, named below if it still blocks
      // it after a grace period.
      bool running = false;
      const bool blocked = SignalBlocked(tid, sig, &running);
      if (blocked) thread.why = kBlockedWhy;
      StoreState(thread, blocked && !running
                             ? static_cast<uint8_t>(StoppedThread::State::kUnstopped)
                             : kSignaled);
      ++count_;
      g_slot_count.store(count_, std::memory_order_release);
      if (blocked && !running) continue;
      if (raw::Syscall(SYS_tgkill, pid, tid, sig) < 0) {
        StoreState(thread, static_cast<uint8_t>(StoppedThread::State::kGone));
        continue;
      }
      ++signaled;
    }
    // Wait for the signaled threads to park; one that exited never will.
    for (;;) {
      const int32_t parked = g_parked.load(std::memory_order_acquire);
      const bool grace_over = MonotonicNs() - pass_start >= kBlockedGraceNs;
      for (size_t i = 0; i < count_; ++i) {
        StoppedThread& thread = threads_[i];
        if (LoadState(thread) != kSignaled) continue;
        if (!Alive(pid, thread.tid)) {
          SwapState(thread, kSignaled, static_cast<uint8_t>(StoppedThread::State::kGone));
        } else if (thread.why == kBlockedWhy && grace_over) {
          // Blocked and asleep: it really holds the signal off. Blocked and runnable: most
          // likely a thread not yet scheduled since pthread_create; it may still come.
          bool running = false;
          if (!SignalBlocked(thread.tid, sig, &running)) {
            thread.why = "";  // unblocked: it takes the signal now
          } else if (!running && SwapState(thread, kSignaled, kGiveUp)) {
            StoreState(thread, static_cast<uint8_t>(StoppedThread::State::kUnstopped));
          }
        }
      }
      int32_t waiting = 0;
      for (size_t i = 0; i < count_; ++i) waiting += LoadState(threads_[i]) == kSignaled;
      if (waiting == 0) break;
      const uint64_t now = MonotonicNs();
      if (now >= deadline) break;
      uint64_t wait_ns = deadline - now;
      if (wait_ns > 1000000) wait_ns = 1000000;  // look for exited threads every millisecond
      struct {
        long sec;
        long nsec;
      } timeout = {0, static_cast<long>(wait_ns)};
      Futex(&g_parked, FUTEX_WAIT_PRIVATE, parked, &timeout);
    }
    if (!found_new) break;
  }
  // The threads that did not park in time are named, and their handlers, if they come, leave.
  for (size_t i = 0; i < count_; ++i) {
    StoppedThread& thread = threads_[i];
    for (;;) {
      const uint8_t state = LoadState(thread);
      if (state == kSignaled) {
        if (!SwapState(thread, kSignaled, kGiveUp)) continue;
        const bool alive = Alive(pid, thread.tid);
        thread.why = !alive ? "" : thread.why == kBlockedWhy ? kBlockedWhy : "timeout";
        StoreState(thread, static_cast<uint8_t>(alive ? StoppedThread::State::kUnstopped
                                                      : StoppedThread::State::kGone));
      } else if (state == kWriting) {
        raw::Syscall(SYS_sched_yield);
        continue;
      } else if (state == kParked) {
        StoreState(thread, static_cast<uint8_t>(StoppedThread::State::kStopped));
      }
      break;
    }
  }
  (void)signaled;
  if (list.short_of_memory) {
    // Not silent: the threads past the listing's end were neither stopped nor named.
    Append(reason_, sizeof(reason_), reason_[0] != '\0' ? "; " : "");
    Append(reason_, sizeof(reason_), "signal: no memory to list every thread");
  }
  return true;
}

void StoppedWorld::ResumeSignal() {
  g_slots.store(nullptr, std::memory_order_seq_cst);
  g_generation.fetch_add(1, std::memory_order_acq_rel);  // even: parked handlers return
  Futex(&g_generation, FUTEX_WAKE_PRIVATE, 0x7fffffff);
  // A handler between entry and parking may still look at the slots: let it leave first.
  while (g_in_flight.load(std::memory_order_seq_cst) != 0) raw::Syscall(SYS_sched_yield);
  g_slot_count.store(0, std::memory_order_release);
}

}  // namespace stackwalk::leakcheck
