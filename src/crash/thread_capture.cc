#include "crash/thread_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace stackwalk::internal {
namespace {

// A slot's phase while a capture runs. Only the thread itself moves kSignaled -> kWriting and
// kWriting -> kParked; only the capturing thread moves kSignaled -> kGaveUp: a handler that comes
// late (the thread unblocked the signal, or was scheduled at last) finds kGaveUp and returns.
constexpr uint32_t kSignaled = 1;
constexpr uint32_t kWriting = 2;
constexpr uint32_t kParked = 3;
constexpr uint32_t kGaveUp = 4;

// A thread just created may block every signal for a moment (glibc's pthread_create does): its
// mask is read once this long after the signals were sent, and a thread that still blocks the
// signal is given up on then rather than at the end of the wait.
constexpr int64_t kBlockedGraceNs = 10 * 1000 * 1000;
// How long a parked thread waits for ReleaseThreads() at most: the crash handler ends the
// process long before; this only keeps a wait from being endless if it does not.
constexpr int64_t kMaxParkedNs = int64_t{30} * 1000 * 1000 * 1000;

int g_signal = 0;
struct sigaction g_previous;
std::atomic<uint32_t> g_generation{0};  // odd while a capture holds the threads
std::atomic<int> g_count{0};
std::atomic<uint32_t> g_answered{0};  // futex word: bumped by each handler that parked
CapturedThread g_slots[kMaxSnapshotThreads];

// Threads waiting in the crash handler for another thread's report (NoteCrashedThread). A note
// is claimed by its tid (CAS from 0), then filled, then published by `ready`.
struct CrashedThreadNote {
  std::atomic<int> tid{0};
  std::atomic<bool> ready{false};
  int sig = 0;
  const ucontext_t* context = nullptr;
};
CrashedThreadNote g_crashed[kMaxCrashedThreadNotes];

// The note of thread `tid`, or nullptr.
const CrashedThreadNote* CrashedNote(int tid) {
  for (const CrashedThreadNote& n : g_crashed) {
    if (n.tid.load(std::memory_order_acquire) == tid && n.ready.load(std::memory_order_acquire)) {
      return &n;
    }
  }
  return nullptr;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// "/proc/self/task/TID/" + leaf, NUL-terminated, in `path`.
void TaskPath(int tid, const char* leaf, char (&path)[64]) {
  static const char kPrefix[] = "/proc/self/task/";
  size_t at = sizeof(kPrefix) - 1;
  std::memcpy(path, kPrefix, at);
  char digits[12];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(tid); n == 0 || v != 0; v /= 10) digits[n++] = '0' + v % 10;
  while (n > 0) path[at++] = digits[--n];
  path[at++] = '/';
  for (const char* c = leaf; *c != '\0' && at + 1 < sizeof(path); ++c) path[at++] = *c;
  path[at] = '\0';
}

// Up to size - 1 bytes of a small /proc file, NUL-terminated; the count read (0 if none).
long ReadSmallFile(const char* path, char* out, long size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  long got = 0;
  for (long n; got < size - 1 && (n = read(fd, out + got, size - 1 - got)) > 0;) got += n;
  close(fd);
  out[got] = '\0';
  return got;
}

// From /proc/self/task/TID/status: whether its SigBlk holds `sig`, and its State letter.
void ReadTaskStatus(int tid, int sig, bool* blocked, char* state) {
  *blocked = false;
  *state = 0;
  char path[64];
  TaskPath(tid, "status", path);
  static char text[2048];  // the capturing thread's alone
  const long got = ReadSmallFile(path, text, sizeof(text));
  static const char kState[] = "\nState:\t";
  static const char kSigBlk[] = "\nSigBlk:\t";
  for (long i = 0; i < got; ++i) {
    if (std::strncmp(text + i, kState, sizeof(kState) - 1) == 0) {
      *state = text[i + sizeof(kState) - 1];
    } else if (std::strncmp(text + i, kSigBlk, sizeof(kSigBlk) - 1) == 0) {
      uint64_t mask = 0;
      for (const char* c = text + i + sizeof(kSigBlk) - 1;; ++c) {
        const int digit = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
        if (digit < 0) break;
        mask = mask << 4 | static_cast<uint64_t>(digit);
      }
      *blocked = sig >= 1 && sig <= 64 && ((mask >> (sig - 1)) & 1) != 0;
    }
  }
}

void CaptureHandler(int, siginfo_t*, void* context) {
  const int saved_errno = errno;
  const uint32_t generation = g_generation.load(std::memory_order_acquire);
  if ((generation & 1) != 0) {
    const int tid = static_cast<int>(syscall(SYS_gettid));
    const int count = g_count.load(std::memory_order_acquire);
    CapturedThread* mine = nullptr;
    for (int i = 0; i < count && mine == nullptr; ++i) {
      if (g_slots[i].tid == tid) mine = &g_slots[i];
    }
    uint32_t expected = kSignaled;
    if (mine != nullptr && mine->phase.compare_exchange_strong(expected, kWriting)) {
      // A thread waiting in its own crash handler: its registers at the fault.
      const CrashedThreadNote* crashed = CrashedNote(tid);
      mine->crash_signal = crashed != nullptr ? crashed->sig : 0;
      NativeRegs regs;
      RegsFromUcontext(crashed != nullptr ? crashed->context
                                          : static_cast<const ucontext_t*>(context),
                       &regs);
      mine->valid_mask = regs.valid_mask();
      for (int i = 0; i < NativeArch::kNumRegs; ++i) mine->values[i] = regs.Has(i) ? regs.Get(i) : 0;
      mine->phase.store(kParked, std::memory_order_release);
      g_answered.fetch_add(1, std::memory_order_release);
      Futex(&g_answered, FUTEX_WAKE_PRIVATE, 1, nullptr);
      // Parked: the stack above the interrupted SP holds still while it is copied.
      const int64_t deadline = MonotonicNs() + kMaxParkedNs;
      const timespec slice{0, 100 * 1000 * 1000};
      while (g_generation.load(std::memory_order_acquire) == generation && MonotonicNs() < deadline) {
        Futex(&g_generation, FUTEX_WAIT_PRIVATE, generation, &slice);
      }
    }
    // else: late (given up on), or a thread started after the listing: it runs on.
  }
  // A signal outside a capture is one that came late: nothing to do.
  errno = saved_errno;
}

struct Listing {
  int count = 0;
  bool full = false;
};

void AddToSlots(int tid, void* context) {
  Listing& listing = *static_cast<Listing*>(context);
  if (listing.count == kMaxSnapshotThreads) {
    listing.full = true;
    return;
  }
  CapturedThread& t = g_slots[listing.count++];
  t.tid = tid;
  t.phase.store(kSignaled, std::memory_order_relaxed);
  t.state = kSnapshotThreadNoAnswer;
  t.detail = 0;
  t.proc_state = 0;
  t.crash_signal = 0;
  t.valid_mask = 0;
}

// Gives up on a thread still signaled: blocked, or no answer in `wait_ms`. False if it is
// already writing or parked (it answered).
bool GiveUp(CapturedThread& t, bool blocked, char proc_state, int wait_ms) {
  uint32_t expected = kSignaled;
  if (!t.phase.compare_exchange_strong(expected, kGaveUp)) return false;
  t.state = blocked ? kSnapshotThreadBlocked : kSnapshotThreadNoAnswer;
  t.detail = blocked ? 0 : wait_ms;
  t.proc_state = proc_state;
  return true;
}

}  // namespace

int CheckThreadCaptureSignal(int sig) {
  if (g_signal == sig) return 0;
  struct sigaction previous;
  if (sigaction(sig, nullptr, &previous) != 0) return -errno;
  // The signal is the program's (or the leak checker's): not taken from it.
  if ((previous.sa_flags & SA_SIGINFO) ? previous.sa_sigaction != nullptr
                                       : previous.sa_handler != SIG_DFL) {
    return -EBUSY;
  }
  return 0;
}

int InstallThreadCaptureHandler(int sig) {
  if (g_signal == sig) return 0;
  if (int err = CheckThreadCaptureSignal(sig); err != 0) return err;
  struct sigaction previous;
  if (sigaction(sig, nullptr, &previous) != 0) return -errno;
  struct sigaction action {};
  action.sa_sigaction = CaptureHandler;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&action.sa_mask);  // nothing else runs on this thread while it is parked
  if (sigaction(sig, &action, nullptr) != 0) return -errno;
  UninstallThreadCaptureHandler();
  g_previous = previous;
  g_signal = sig;
  return 0;
}

void UninstallThreadCaptureHandler() {
  if (g_signal == 0) return;
  sigaction(g_signal, &g_previous, nullptr);
  g_signal = 0;
}

ThreadCaptureResult CaptureOtherThreads(int wait_ms) {
  ThreadCaptureResult result;
  const int sig = g_signal;
  Listing listing;
  ForEachOtherThread(AddToSlots, &listing);
  const int count = listing.count;
  result.listing_full = listing.full;
  result.threads = g_slots;
  result.count = count;
  g_count.store(count, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_acq_rel);  // odd: handlers store and park
  const pid_t pid = getpid();
  for (int i = 0; i < count; ++i) {
    CapturedThread& t = g_slots[i];
    if (sig == 0 || syscall(SYS_tgkill, pid, t.tid, sig) != 0) {
      const int err = sig == 0 ? EINVAL : errno;
      t.phase.store(kGaveUp, std::memory_order_release);
      t.state = kSnapshotThreadNotSignaled;
      t.detail = err;  // ESRCH: it exited since the listing
    }
  }
  const int64_t start = MonotonicNs();
  const int64_t wait_ns = int64_t{wait_ms} * 1000 * 1000;
  bool masks_read = false;
  for (;;) {
    const uint32_t answered = g_answered.load(std::memory_order_acquire);
    int pending = 0;
    for (int i = 0; i < count; ++i) {
      const uint32_t phase = g_slots[i].phase.load(std::memory_order_acquire);
      pending += phase == kSignaled || phase == kWriting;
    }
    const int64_t elapsed = MonotonicNs() - start;
    if (pending == 0 || elapsed >= wait_ns) break;
    if (!masks_read && elapsed >= kBlockedGraceNs) {
      masks_read = true;
      for (int i = 0; i < count; ++i) {
        if (g_slots[i].phase.load(std::memory_order_acquire) != kSignaled) continue;
        bool blocked;
        char proc_state;
        ReadTaskStatus(g_slots[i].tid, sig, &blocked, &proc_state);
        if (blocked) GiveUp(g_slots[i], true, proc_state, wait_ms);
      }
    }
    // Woken by the next handler that parks (no answer lost: `answered` was read before the
    // count), else in 1 ms to look at the clock and the masks.
    const timespec slice{0, 1000 * 1000};
    Futex(&g_answered, FUTEX_WAIT_PRIVATE, answered, &slice);
  }
  for (int i = 0; i < count; ++i) {
    CapturedThread& t = g_slots[i];
    if (t.phase.load(std::memory_order_acquire) == kSignaled) {
      bool blocked;
      char proc_state;
      ReadTaskStatus(t.tid, sig, &blocked, &proc_state);
      if (GiveUp(t, blocked, proc_state, wait_ms)) continue;
    }
    // Answered: a handler in its copy finishes in a moment (it is running); bounded all the same.
    for (int spins = 0; spins < 10000 && t.phase.load(std::memory_order_acquire) == kWriting;
         ++spins) {
      const timespec pause{0, 100 * 1000};
      nanosleep(&pause, nullptr);
    }
    if (t.phase.load(std::memory_order_acquire) == kParked) {
      t.state = kSnapshotThreadCaptured;
      t.detail = 0;
    }
  }
  return result;
}

void ReleaseThreads() {
  g_generation.fetch_add(1, std::memory_order_acq_rel);  // even: parked handlers return
  Futex(&g_generation, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
}

int NoteCrashedThread(int tid, int sig, void* ucontext) {
  for (int i = 0; i < kMaxCrashedThreadNotes; ++i) {
    int expected = 0;
    if (g_crashed[i].tid.compare_exchange_strong(expected, tid)) {
      g_crashed[i].sig = sig;
      g_crashed[i].context = static_cast<const ucontext_t*>(ucontext);
      g_crashed[i].ready.store(true, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void ForgetCrashedThread(int note) {
  if (note < 0 || note >= kMaxCrashedThreadNotes) return;
  g_crashed[note].ready.store(false, std::memory_order_release);
  g_crashed[note].tid.store(0, std::memory_order_release);
}

void ForEachOtherThread(void (*fn)(int tid, void* context), void* context) {
  const int self = static_cast<int>(syscall(SYS_gettid));
  const int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  static char buf[4096];  // linux_dirent64 records; one caller at a time (the reporter)
  for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0;) {
    for (long at = 0; at < n;) {
      unsigned short reclen;
      std::memcpy(&reclen, buf + at + 16, sizeof(reclen));
      const char* name = buf + at + 19;  // after d_ino (8), d_off (8), d_reclen (2), d_type (1)
      at += reclen;
      int tid = 0;
      for (const char* c = name; *c >= '0' && *c <= '9'; ++c) tid = tid * 10 + (*c - '0');
      if (tid > 0 && tid != self) fn(tid, context);
    }
  }
  close(fd);
}

void ReadThreadName(int tid, char (&name)[16]) {
  std::memset(name, 0, sizeof(name));
  char path[64];
  TaskPath(tid, "comm", path);
  char text[32];
  const long got = ReadSmallFile(path, text, sizeof(text));
  for (long i = 0; i < got && i < 15 && text[i] != '\n'; ++i) name[i] = text[i];
}

}  // namespace stackwalk::internal
