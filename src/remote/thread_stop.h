// The target's threads (/proc/PID/task) and ThreadStop, which holds one of them stopped by ptrace
// (PTRACE_SEIZE + PTRACE_INTERRUPT, no signal sent) for as long as it lives and detaches from
// it, resuming it, on every path: the destructor, an error, a failed read. A signal the thread
// had pending when it stopped is passed back on detach, never lost.
#ifndef STACKWALK_SRC_REMOTE_THREAD_STOP_H_
#define STACKWALK_SRC_REMOTE_THREAD_STOP_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/context.h"

namespace stackwalk::internal {

struct TargetThread {
  pid_t tid = 0;
  std::string name;  // /proc/PID/task/TID/comm, without its newline
};

// Every task of `pid`, the main thread first, then by tid. NotFound if the process is gone.
absl::Status ListThreads(pid_t pid, std::vector<TargetThread>* out);

// The process's name (comm), or "".
std::string ProcessName(pid_t pid);

class ThreadStop {
 public:
  // Stops `tid` (a thread of process `pid`); status() says whether it is stopped. Waits at
  // most `timeout_ms` for the stop (a thread in uninterruptible sleep stops only when it leaves
  // it; the kernel then detaches it when this process exits).
  ThreadStop(pid_t pid, pid_t tid, int timeout_ms = 2000);
  ~ThreadStop() { Resume(); }
  ThreadStop(const ThreadStop&) = delete;
  ThreadStop& operator=(const ThreadStop&) = delete;

  const absl::Status& status() const { return status_; }
  // The thread's registers (PTRACE_GETREGSET NT_PRSTATUS), in DWARF numbering.
  absl::Status ReadRegisters(NativeRegs* regs) const;
  // Detaches now (the destructor does otherwise). Idempotent.
  void Resume();

 private:
  pid_t pid_;
  pid_t tid_;
  bool seized_ = false;
  bool stopped_ = false;
  int pending_signal_ = 0;  // a signal-delivery-stop's signal, delivered on detach
  absl::Status status_;
};

// Why ptrace refused `pid` (EPERM), with what would allow it: Yama's ptrace_scope, another
// tracer, another user, a missing CAP_SYS_PTRACE.
std::string ExplainPtraceRefusal(pid_t pid);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_THREAD_STOP_H_
