// StoppedWorld: every other thread of the process stopped and its registers read, for a
// reachability scan (scan/roots.h) that must see each thread's registers and a stack that does
// not change under it. Two methods, as LeakSanitizer and libmemunreachable stop the world:
//   ptrace  a tracer task that shares our address space (clone with CLONE_VM, not a pthread:
//           ptrace within one thread group is refused) seizes each task of /proc/<pid>/task,
//           repeating until a pass finds no new thread, and reads registers with GETREGSET;
//   signal  where ptrace is refused (Yama, a container without CAP_SYS_PTRACE, qemu-user), a
//           real-time signal parks each thread in a handler that saves its registers and waits
//           on a futex.
// Nothing here mallocs or takes a libc lock while threads are stopped (a stopped thread may hold
// the allocator's or stdio's): slots live in memory from scan/own_mappings.h.
#ifndef STACKWALK_LEAKCHECK_SCAN_STOP_WORLD_H_
#define STACKWALK_LEAKCHECK_SCAN_STOP_WORLD_H_

#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck {

enum class StopMethod : uint8_t { kNone, kPtrace, kSignal };
// The option stop_method=auto|ptrace|signal.
enum class StopRequest : uint8_t { kAuto, kPtrace, kSignal };

struct StoppedThread {
  enum class State : uint8_t {
    kStopped,    // stopped; sp, thread_pointer and regs are its own
    kUnstopped,  // still running (why says so): its whole stack must be read through a SafeReader
    kGone,       // exited while the world was being stopped
  };
  int32_t tid = 0;
  State state = State::kGone;
  const char* why = "";          // static text for kUnstopped: "signal blocked", "timeout", ...
  uintptr_t sp = 0;              // 0 = unknown
  uintptr_t thread_pointer = 0;  // x86_64 fs_base, aarch64 tpidr_el0, arm TPIDRURO; 0 = unknown
  uintptr_t frame_lo = 0;        // signal method: the handler's ucontext (the signal frame lies
                                 // between it and sp; roots read the stack from sp). 0: none
  uint32_t reg_bytes = 0;        // bytes of regs used: general registers, then FP/vector state, raw
  alignas(64) uint8_t regs[4096];
};

class StoppedWorld {
 public:
  StoppedWorld() = default;
  ~StoppedWorld();  // Resume()s and frees the slots
  StoppedWorld(const StoppedWorld&) = delete;
  StoppedWorld& operator=(const StoppedWorld&) = delete;

  // Stops every thread of the process but the caller and the tids in skip_tids (the checker's
  // own threads). kAuto tries ptrace, then signals if ptrace is refused; fallback_reason() then
  // says why ("ptrace: clone EINVAL", "ptrace: EPERM, yama ptrace_scope=2"). A thread that cannot
  // be stopped within timeout_ms is listed as kUnstopped. False only if neither method could run
  // (the forced one refused, or no signal could be installed); method() is then kNone.
  bool Stop(StopRequest request, int timeout_ms, const int32_t* skip_tids, size_t skip_count);
  // Lets every thread go on (ptrace: detaches, re-injecting the signals it held back). Idempotent.
  void Resume();

  StopMethod method() const { return method_; }
  const char* fallback_reason() const { return fallback_reason_; }  // "" if none
  size_t size() const { return count_; }
  const StoppedThread& thread(size_t i) const { return threads_[i]; }
  const StoppedThread* threads() const { return threads_; }
  uint64_t pause_start_ns() const { return pause_start_ns_; }  // CLOCK_MONOTONIC; 0 if none

 private:
  // The implementation may add members; the public surface above is the contract.
  StopMethod method_ = StopMethod::kNone;
  const char* fallback_reason_ = "";
  StoppedThread* threads_ = nullptr;  // own mapping (scan/own_mappings.h)
  size_t count_ = 0;
  size_t capacity_ = 0;
  uint64_t pause_start_ns_ = 0;

  // Implementation (stop_world.cc, stop_world_ptrace.cc, stop_world_signal.cc).
  bool Reserve(size_t threads);  // capacity for at least `threads` slots (OwnRemap)
  bool StopPtrace(int timeout_ms, const int32_t* skip_tids, size_t skip_count);
  bool StopSignal(int timeout_ms, const int32_t* skip_tids, size_t skip_count);
  void ResumePtrace();
  void ResumeSignal();
  void* tracer_ = nullptr;        // ptrace: the tracer's control block and stack (own mapping)
  int tracer_pid_ = 0;
  int saved_dumpable_ = -1;       // ptrace: PR_GET_DUMPABLE before Stop, restored by Resume
  bool mask_saved_ = false;       // the caller's signal mask before Stop, restored by Resume
  uint64_t saved_mask_[2] = {0, 0};
  char reason_[96] = {};          // fallback_reason_'s text when it is built
  bool active_ = false;           // stopped and not yet resumed
  friend struct StopWorldAccess;
};

// The signal method's signal (option stop_signal; default SIGRTMIN+5). If the program handles
// it, the next real-time signal left at SIG_DFL is used. Takes effect at the next Stop that
// installs the handler (it is installed once and kept).
void SetStopSignal(int signo);

// The signal the signal method parks threads with: the installed one, else the one asked for,
// else SIGRTMIN+5. A thread that blocks signals while it waits (FairLock) leaves this one open,
// so that a check can still park it. Async-signal-safe.
int ParkingSignal();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_STOP_WORLD_H_
