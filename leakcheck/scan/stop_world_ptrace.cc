// The ptrace method: a tracer task that shares our address space (raw clone with CLONE_VM, no
// CLONE_THREAD: ptrace within a thread group is refused) seizes and interrupts every task of
// /proc/<caller pid>/task until a pass finds no new one, reads their registers into the slots,
// tells the caller, waits to be released, detaches (re-injecting held signals) and exits. It
// uses no libc: it shares the caller's TLS (errno) and a stopped thread may hold any libc lock.
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/ptrace.h>
#endif

#include <atomic>
#include <cstring>
#include <new>

#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/raw_syscall.h"
#include "leakcheck/scan/stop_world.h"
#include "leakcheck/scan/stop_world_internal.h"

#ifndef PTRACE_SEIZE
#define PTRACE_SEIZE 0x4206
#endif
#ifndef PTRACE_INTERRUPT
#define PTRACE_INTERRUPT 0x4207
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401
#endif
#ifndef NT_ARM_VFP
#define NT_ARM_VFP 0x400
#endif

namespace stackwalk::leakcheck {

namespace raw {

#if defined(__x86_64__)
long Clone(int (*fn)(void*), void* arg, void* child_stack_top, unsigned long flags) {
  uintptr_t* sp = static_cast<uintptr_t*>(child_stack_top) - 2;
  sp[0] = reinterpret_cast<uintptr_t>(fn);
  sp[1] = reinterpret_cast<uintptr_t>(arg);
  long ret;
  register long r10 __asm__("r10") = 0;
  register long r8 __asm__("r8") = 0;
  __asm__ volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      // The child, on its own stack: fn(arg), then exit(result).
      "xor %%ebp, %%ebp\n\t"
      "pop %%rax\n\t"
      "pop %%rdi\n\t"
      "call *%%rax\n\t"
      "mov %%rax, %%rdi\n\t"
      "mov %[exit_nr], %%eax\n\t"
      "syscall\n\t"
      "hlt\n"
      "1:"
      : "=a"(ret)
      : "a"(SYS_clone), "D"(flags), "S"(sp), "d"(0), "r"(r10), "r"(r8),
        [exit_nr] "i"(SYS_exit)
      : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
long Clone(int (*fn)(void*), void* arg, void* child_stack_top, unsigned long flags) {
  uintptr_t* sp = static_cast<uintptr_t*>(child_stack_top) - 2;
  sp[0] = reinterpret_cast<uintptr_t>(fn);
  sp[1] = reinterpret_cast<uintptr_t>(arg);
  register long x8 __asm__("x8") = SYS_clone;
  register long x0 __asm__("x0") = static_cast<long>(flags);
  register long x1 __asm__("x1") = reinterpret_cast<long>(sp);
  register long x2 __asm__("x2") = 0;
  register long x3 __asm__("x3") = 0;
  register long x4 __asm__("x4") = 0;
  __asm__ volatile(
      "svc 0\n\t"
      "cbnz x0, 1f\n\t"
      "mov x29, xzr\n\t"
      "ldp x1, x0, [sp], #16\n\t"
      "blr x1\n\t"
      "mov x8, %[exit_nr]\n\t"
      "svc 0\n\t"
      "brk #0\n"
      "1:"
      : "+r"(x0)
      : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), [exit_nr] "i"(SYS_exit)
      : "memory");
  return x0;
}
#elif defined(__arm__)
long Clone(int (*fn)(void*), void* arg, void* child_stack_top, unsigned long flags) {
  uintptr_t* sp = static_cast<uintptr_t*>(child_stack_top) - 2;
  sp[0] = reinterpret_cast<uintptr_t>(fn);
  sp[1] = reinterpret_cast<uintptr_t>(arg);
  register long r0 __asm__("r0") = static_cast<long>(flags);
  register long r1 __asm__("r1") = reinterpret_cast<long>(sp);
  register long r2 __asm__("r2") = 0;
  register long r3 __asm__("r3") = 0;
  register long r4 __asm__("r4") = 0;
  register long r6 __asm__("r6") = SYS_clone;
  __asm__ volatile(
      "push {r7}\n\t"
      "mov r7, r6\n\t"
      "svc 0\n\t"
      "cmp r0, #0\n\t"
      "bne 1f\n\t"
      "ldr r1, [sp]\n\t"
      "ldr r0, [sp, #4]\n\t"
      "add sp, sp, #8\n\t"
      "blx r1\n\t"
      "mov r7, %[exit_nr]\n\t"
      "svc 0\n\t"
      "udf #0\n"
      "1:\n\t"
      "pop {r7}"
      : "+r"(r0)
      : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r6), [exit_nr] "i"(SYS_exit)
      : "memory");
  return r0;
}
#endif

}  // namespace raw

namespace {

using stop_internal::MonotonicNs;

constexpr size_t kTracerStack = 128 * 1024;
constexpr size_t kMaxHeld = 65536;  // threads whose held signal the tracer can remember
constexpr uint8_t kNotStopped = 0xff;

long Futex(std::atomic<int32_t>* word, int op, int32_t value, const void* timeout = nullptr) {
  return raw::Syscall(SYS_futex, reinterpret_cast<int32_t*>(word), op, value, timeout);
}

void WakeAll(std::atomic<int32_t>* word) { Futex(word, FUTEX_WAKE, 0x7fffffff); }

void WaitWhile(std::atomic<int32_t>* word, int32_t value) {
  while (word->load(std::memory_order_acquire) == value) Futex(word, FUTEX_WAIT, value);
}

enum : int32_t { kRunning = 0, kStoppedAll = 1, kFailed = 2 };

}  // namespace

// The control block the caller and the tracer share (top of the tracer's mapping).
struct StopWorldAccess {
  std::atomic<int32_t> go{0};       // caller → tracer: 1 start, 2 give up
  std::atomic<int32_t> state{0};    // tracer → caller: kRunning, kStoppedAll, kFailed
  std::atomic<int32_t> release{0};  // caller → tracer: 1 detach and exit
  int pid = 0;
  int caller_tid = 0;
  int failed_errno = 0;             // kFailed: why (positive errno)
  const char* failed_step = "";     // kFailed: "seize", "list"
  const int32_t* skip = nullptr;
  size_t skip_count = 0;
  uint64_t deadline_ns = 0;
  StoppedWorld* world = nullptr;
  bool new_in_pass = false;
  uint8_t held[kMaxHeld];            // per slot: signal to re-inject at detach, or kNotStopped

  static int TracerMain(void* arg);
  static void Visit(int tid, void* context);
  void Attach(int tid);
  void Wait(size_t first, size_t end);
  void ReadRegisters(StoppedThread& thread);
  void DetachAll();
};

void StopWorldAccess::Visit(int tid, void* context) {
  auto* self = static_cast<StopWorldAccess*>(context);
  if (self->go.load(std::memory_order_relaxed) != 1 || self->failed_errno != 0) return;
  if (tid == self->caller_tid || stop_internal::Contains(self->skip, self->skip_count, tid)) return;
  StoppedWorld& world = *self->world;
  for (size_t i = 0; i < world.count_; ++i) {
    if (world.threads_[i].tid == tid) return;
  }
  self->Attach(tid);
}

void StopWorldAccess::Attach(int tid) {
  StoppedWorld& world = *this->world;
  if (world.count_ >= kMaxHeld) return;
  // The caller waits on the futex meanwhile: growing the slots here cannot race its reads.
  if (world.count_ == world.capacity_ && !world.Reserve(world.count_ + 1)) return;
  const long seized = raw::Syscall(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0);
  if (seized == -ESRCH) return;  // exited since the listing
  if (seized == -EPERM || seized == -ENOSYS || seized == -EACCES) {
    // Refused (Yama, no CAP_SYS_PTRACE, already traced, qemu-user): the method cannot run.
    failed_errno = static_cast<int>(-seized);
    failed_step = "seize";
    return;
  }
  StoppedThread& thread = world.threads_[world.count_];
  thread.tid = tid;
  thread.state = StoppedThread::State::kUnstopped;
  thread.why = "attach failed";
  thread.sp = thread.thread_pointer = thread.frame_lo = 0;
  thread.reg_bytes = 0;
  held[world.count_] = kNotStopped;
  ++world.count_;
  new_in_pass = true;
  if (seized < 0) return;
  if (raw::Syscall(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0) < 0) {
    thread.state = StoppedThread::State::kGone;
    thread.why = "";
    return;
  }
  thread.why = "timeout";  // until it reports its stop
}

void StopWorldAccess::Wait(size_t first, size_t end) {
  StoppedWorld& world = *this->world;
  size_t pending = 0;
  for (size_t i = first; i < end; ++i) {
    StoppedThread& thread = world.threads_[i];
    if (thread.state == StoppedThread::State::kUnstopped && thread.why[0] == 't') ++pending;
  }
  for (int round = 0; pending > 0; ++round) {
    for (size_t i = first; i < end; ++i) {
      StoppedThread& thread = world.threads_[i];
      if (thread.state != StoppedThread::State::kUnstopped || thread.why[0] != 't') continue;
      int status = 0;
      const long got = raw::Syscall(SYS_wait4, thread.tid, &status, __WALL | WNOHANG, 0);
      if (got == 0) continue;
      --pending;
      if (got < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
        thread.state = StoppedThread::State::kGone;
        thread.why = "";
        continue;
      }
      if (WIFSTOPPED(status)) {
        const int event = status >> 16;
        // A signal-delivery-stop holds the signal back: re-injected at detach.
        held[i] = event == 0 ? static_cast<uint8_t>(WSTOPSIG(status)) : 0;
        ReadRegisters(thread);
      }
    }
    if (pending == 0) break;
    if (MonotonicNs() >= deadline_ns) break;
    if (round < 50) {
      raw::Syscall(SYS_sched_yield);
    } else {
      stop_internal::SleepNs(20000);
    }
  }
}

void StopWorldAccess::ReadRegisters(StoppedThread& thread) {
  struct iovec iov = {thread.regs, sizeof(thread.regs)};
  if (raw::Syscall(SYS_ptrace, PTRACE_GETREGSET, thread.tid, NT_PRSTATUS, &iov) < 0) {
    thread.state = StoppedThread::State::kGone;  // killed while stopped
    thread.why = "";
    return;
  }
  size_t used = iov.iov_len;
#if defined(__x86_64__)
  user_regs_struct gpr;
  std::memcpy(&gpr, thread.regs, sizeof(gpr));
  thread.sp = gpr.rsp;
  thread.thread_pointer = gpr.fs_base;
#elif defined(__aarch64__)
  user_pt_regs gpr;
  std::memcpy(&gpr, thread.regs, sizeof(gpr));
  thread.sp = gpr.sp;
  uint64_t tls = 0;
  struct iovec tls_iov = {&tls, sizeof(tls)};
  if (raw::Syscall(SYS_ptrace, PTRACE_GETREGSET, thread.tid, NT_ARM_TLS, &tls_iov) >= 0) {
    thread.thread_pointer = tls;
  }
#elif defined(__arm__)
  uint32_t uregs[18];
  std::memcpy(uregs, thread.regs, sizeof(uregs));
  thread.sp = uregs[13];
  uint32_t tls = 0;
  if (raw::Syscall(SYS_ptrace, 22 /* PTRACE_GET_THREAD_AREA */, thread.tid, 0, &tls) >= 0) {
    thread.thread_pointer = tls;
  }
#endif
  used = (used + 63) & ~size_t{63};
  if (used < sizeof(thread.regs)) {
    struct iovec fp = {thread.regs + used, sizeof(thread.regs) - used};
#if defined(__x86_64__)
    // fxsave's 512 bytes (x87, xmm0-15), not NT_X86_XSTATE: see stop_world_signal.cc.
    long got = raw::Syscall(SYS_ptrace, PTRACE_GETREGSET, thread.tid, NT_FPREGSET, &fp);
#elif defined(__aarch64__)
    long got = raw::Syscall(SYS_ptrace, PTRACE_GETREGSET, thread.tid, NT_PRFPREG, &fp);
#else
    long got = raw::Syscall(SYS_ptrace, PTRACE_GETREGSET, thread.tid, NT_ARM_VFP, &fp);
#endif
    if (got >= 0) used += fp.iov_len;
  }
  thread.reg_bytes = static_cast<uint32_t>(used < sizeof(thread.regs) ? used : sizeof(thread.regs));
  thread.state = StoppedThread::State::kStopped;
  thread.why = "";
}

void StopWorldAccess::DetachAll() {
  StoppedWorld& world = *this->world;
  for (size_t i = 0; i < world.count_; ++i) {
    const StoppedThread& thread = world.threads_[i];
    if (thread.state != StoppedThread::State::kStopped) continue;  // exit detaches the rest
    const uint8_t sig = held[i] == kNotStopped ? 0 : held[i];
    raw::Syscall(SYS_ptrace, PTRACE_DETACH, thread.tid, 0, sig);
  }
}

int StopWorldAccess::TracerMain(void* arg) {
  auto* self = static_cast<StopWorldAccess*>(arg);
  raw::Syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  WaitWhile(&self->go, 0);
  if (self->go.load(std::memory_order_acquire) != 1) return 1;
  StoppedWorld& world = *self->world;
  // Passes over the task list until one finds no new thread (a thread not yet stopped may
  // create one); at most 30, as LeakSanitizer.
  for (int pass = 0; pass < 30; ++pass) {
    self->new_in_pass = false;
    const size_t first = world.count_;
    if (!stop_internal::ForEachTask(self->pid, &Visit, self) && pass == 0) {
      self->failed_errno = EIO;
      self->failed_step = "list";
    }
    if (self->failed_errno != 0) break;
    self->Wait(first, world.count_);
    if (!self->new_in_pass) break;
  }
  if (self->failed_errno != 0) {
    for (size_t i = 0; i < world.count_; ++i) {
      if (world.threads_[i].state == StoppedThread::State::kStopped) {
        raw::Syscall(SYS_ptrace, PTRACE_DETACH, world.threads_[i].tid, 0,
                     self->held[i] == kNotStopped ? 0 : self->held[i]);
      }
    }
    world.count_ = 0;
    self->state.store(kFailed, std::memory_order_release);
    WakeAll(&self->state);
    return 1;
  }
  self->state.store(kStoppedAll, std::memory_order_release);
  WakeAll(&self->state);
  WaitWhile(&self->release, 0);
  self->DetachAll();
  return 0;
}

namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

size_t TracerBytes() {
  const size_t page = PageSize();
  const size_t control = (sizeof(StopWorldAccess) + page - 1) / page * page;
  return page + kTracerStack + control;
}

// /proc/sys/kernel/yama/ptrace_scope's digit, or -1.
int YamaScope() {
  const long fd = raw::Syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope",
                               O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char c = 0;
  const long got = raw::Syscall(SYS_read, fd, &c, 1);
  raw::Syscall(SYS_close, fd);
  return got == 1 && c >= '0' && c <= '9' ? c - '0' : -1;
}

void ReapTracer(int pid) {
  int status = 0;
  while (raw::Syscall(SYS_wait4, pid, &status, __WALL, 0) == -EINTR) {
  }
}

}  // namespace

bool StoppedWorld::StopPtrace(int timeout_ms, const int32_t* skip_tids, size_t skip_count) {
  using stop_internal::Append;
  const size_t bytes = TracerBytes();
  char* block = static_cast<char*>(OwnMap(bytes));
  if (block == nullptr) {
    Append(reason_, sizeof(reason_), "ptrace: no memory for the tracer");
    return false;
  }
  const size_t page = PageSize();
  raw::Syscall(SYS_mprotect, block, page, PROT_NONE);  // guard page under the stack
  auto* control = new (block + page + kTracerStack) StopWorldAccess;
  control->pid = raw::GetPid();
  control->caller_tid = raw::GetTid();
  control->skip = skip_tids;
  control->skip_count = skip_count;
  control->world = this;
  count_ = 0;

  saved_dumpable_ = static_cast<int>(raw::Syscall(SYS_prctl, PR_GET_DUMPABLE));
  if (saved_dumpable_ != 1) raw::Syscall(SYS_prctl, PR_SET_DUMPABLE, 1);
  const long pid = raw::Clone(&StopWorldAccess::TracerMain, control, block + page + kTracerStack,
                              CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED);
  auto undo = [&] {
    if (saved_dumpable_ >= 0 && saved_dumpable_ != 1) {
      raw::Syscall(SYS_prctl, PR_SET_DUMPABLE, saved_dumpable_);
    }
    saved_dumpable_ = -1;
    control->~StopWorldAccess();
    OwnUnmap(block, bytes);
  };
  if (pid < 0) {
    Append(reason_, sizeof(reason_), "ptrace: clone ");
    Append(reason_, sizeof(reason_), stop_internal::ErrnoName(static_cast<int>(-pid)));
    undo();
    return false;
  }
  // Yama (ptrace_scope 1) lets only an ancestor or a named tracer attach; ours is our child.
  raw::Syscall(SYS_prctl, PR_SET_PTRACER, pid);
  pause_start_ns_ = MonotonicNs();
  control->deadline_ns = pause_start_ns_ + static_cast<uint64_t>(timeout_ms) * 1000000ull;
  control->go.store(1, std::memory_order_release);
  WakeAll(&control->go);
  // The tracer bounds its own waits by the deadline; that it dies (a fault, a SIGKILL) is
  // looked for every 10 ms.
  bool died = false;
  while (control->state.load(std::memory_order_acquire) == kRunning) {
    struct {
      long sec;
      long nsec;
    } ten_ms = {0, 10 * 1000 * 1000};
    Futex(&control->state, FUTEX_WAIT, kRunning, &ten_ms);
    int status = 0;
    if (control->state.load(std::memory_order_acquire) == kRunning &&
        raw::Syscall(SYS_wait4, pid, &status, __WALL | WNOHANG, 0) == pid) {
      died = true;
      break;
    }
  }
  if (died) {
    Append(reason_, sizeof(reason_), "ptrace: the tracer died");
    raw::Syscall(SYS_prctl, PR_SET_PTRACER, 0);
    pause_start_ns_ = 0;
    count_ = 0;
    undo();
    return false;
  }
  if (control->state.load(std::memory_order_acquire) == kFailed) {
    ReapTracer(static_cast<int>(pid));
    raw::Syscall(SYS_prctl, PR_SET_PTRACER, 0);
    Append(reason_, sizeof(reason_), "ptrace: ");
    Append(reason_, sizeof(reason_), control->failed_step);
    Append(reason_, sizeof(reason_), " ");
    Append(reason_, sizeof(reason_), stop_internal::ErrnoName(control->failed_errno));
    const int scope = YamaScope();
    if (scope >= 0) {
      Append(reason_, sizeof(reason_), ", yama ptrace_scope=");
      stop_internal::AppendInt(reason_, sizeof(reason_), scope);
    }
    pause_start_ns_ = 0;
    count_ = 0;
    undo();
    return false;
  }
  tracer_pid_ = static_cast<int>(pid);
  tracer_ = block;
  return true;
}

void StoppedWorld::ResumePtrace() {
  if (tracer_ == nullptr) return;
  const size_t page = PageSize();
  auto* control = reinterpret_cast<StopWorldAccess*>(static_cast<char*>(tracer_) + page +
                                                     kTracerStack);
  control->release.store(1, std::memory_order_release);
  WakeAll(&control->release);
  ReapTracer(tracer_pid_);
  raw::Syscall(SYS_prctl, PR_SET_PTRACER, 0);
  if (saved_dumpable_ >= 0 && saved_dumpable_ != 1) {
    raw::Syscall(SYS_prctl, PR_SET_DUMPABLE, saved_dumpable_);
  }
  saved_dumpable_ = -1;
  control->~StopWorldAccess();
  OwnUnmap(tracer_, TracerBytes());
  tracer_ = nullptr;
  tracer_pid_ = 0;
}

}  // namespace stackwalk::leakcheck
