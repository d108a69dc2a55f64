#include "remote/thread_stop.h"

#include <dirent.h>
#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace stackwalk::internal {
namespace {

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The value of a "Key:\tvalue" line of /proc/PID/status, or "".
std::string StatusField(pid_t pid, const char* key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  const std::string prefix = absl::StrCat(key, ":");
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, prefix.size(), prefix) == 0) {
      size_t at = line.find_first_not_of(" \t", prefix.size());
      return at == std::string::npos ? "" : line.substr(at);
    }
  }
  return "";
}

void SleepMicros(long us) {
  timespec ts{0, us * 1000};
  nanosleep(&ts, nullptr);
}

}  // namespace

absl::Status ListThreads(pid_t pid, std::vector<TargetThread>* out) {
  const std::string task = absl::StrCat("/proc/", pid, "/task");
  DIR* dir = opendir(task.c_str());
  if (dir == nullptr) return absl::NotFoundError(absl::StrCat("no process ", pid));
  std::vector<pid_t> tids;
  while (dirent* entry = readdir(dir)) {
    char* end;
    long tid = std::strtol(entry->d_name, &end, 10);
    if (*end == '\0' && tid > 0) tids.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end(), [pid](pid_t a, pid_t b) {
    return (a == pid) != (b == pid) ? a == pid : a < b;
  });
  out->clear();
  for (pid_t tid : tids) {
    out->push_back({tid, ReadLine(absl::StrCat(task, "/", tid, "/comm"))});
  }
  return absl::OkStatus();
}

std::string ProcessName(pid_t pid) { return ReadLine(absl::StrCat("/proc/", pid, "/comm")); }

std::string ExplainPtraceRefusal(pid_t pid) {
  std::string why = absl::StrCat("ptrace refused to attach to process ", pid);
  const std::string tracer = StatusField(pid, "TracerPid");
  if (!tracer.empty() && tracer != "0") {
    return absl::StrCat(why, ": it is already traced by process ", tracer,
                        " (a debugger?); only one tracer at a time");
  }
  const std::string scope = ReadLine("/proc/sys/kernel/yama/ptrace_scope");
  if (scope == "1") {
    absl::StrAppend(&why,
                    ": Yama's kernel.yama.ptrace_scope is 1, so only a process's ancestors may "
                    "trace it; run as root or with CAP_SYS_PTRACE, have the target call "
                    "prctl(PR_SET_PTRACER, ...), or set the sysctl to 0");
  } else if (scope == "2") {
    absl::StrAppend(&why,
                    ": Yama's kernel.yama.ptrace_scope is 2, so only a process with "
                    "CAP_SYS_PTRACE may trace; run as root");
  } else if (scope == "3") {
    absl::StrAppend(&why, ": Yama's kernel.yama.ptrace_scope is 3: no process may be traced "
                          "until reboot");
  } else {
    const std::string uid = StatusField(pid, "Uid");
    absl::StrAppend(&why, ": tracing needs the same user as the target (its uids: ",
                    uid.empty() ? "unknown" : uid, "; ours: ", getuid(),
                    ") and a dumpable process, or CAP_SYS_PTRACE (in a container: "
                    "--cap-add=SYS_PTRACE)");
  }
  return why;
}

ThreadStop::ThreadStop(pid_t pid, pid_t tid, int timeout_ms) : pid_(pid), tid_(tid) {
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    const int err = errno;
    if (err == EPERM) {
      status_ = absl::PermissionDeniedError(ExplainPtraceRefusal(pid));
    } else if (err == ESRCH) {
      status_ = absl::NotFoundError(absl::StrCat("thread ", tid, " exited"));
    } else {
      status_ = absl::InternalError(absl::StrCat("PTRACE_SEIZE ", tid, ": ", std::strerror(err)));
    }
    return;
  }
  seized_ = true;
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    status_ = absl::InternalError(
        absl::StrCat("PTRACE_INTERRUPT ", tid, ": ", std::strerror(errno)));
    Resume();
    return;
  }
  int wait_status = 0;
  for (int waited_us = 0;;) {
    pid_t got = waitpid(tid, &wait_status, __WALL | WNOHANG);
    if (got == tid) break;
    if (got < 0 && errno != EINTR) {
      status_ = absl::NotFoundError(absl::StrCat("thread ", tid, " exited"));
      seized_ = false;  // gone: nothing to detach
      return;
    }
    if (waited_us >= timeout_ms * 1000) {
      status_ = absl::DeadlineExceededError(
          absl::StrCat("thread ", tid, " did not stop within ", timeout_ms, " ms"));
      return;  // still seized: detached when it stops or when this process exits
    }
    const long step = waited_us < 1000 ? 20 : 1000;  // most stops take microseconds
    SleepMicros(step);
    waited_us += static_cast<int>(step);
  }
  if (!WIFSTOPPED(wait_status)) {
    status_ = absl::NotFoundError(absl::StrCat("thread ", tid, " exited"));
    seized_ = false;
    return;
  }
  stopped_ = true;
  // A stop of ours (PTRACE_EVENT_STOP) or a signal about to be delivered, which goes back.
  if ((wait_status >> 16) != PTRACE_EVENT_STOP) pending_signal_ = WSTOPSIG(wait_status);
}

void ThreadStop::Resume() {
  if (!seized_) return;
  if (stopped_ || !status_.ok()) {
    // PTRACE_DETACH needs the tracee stopped; one that never stopped stays seized until it
    // stops or this process exits, when the kernel detaches it.
    ptrace(PTRACE_DETACH, tid_, nullptr, reinterpret_cast<void*>(static_cast<long>(pending_signal_)));
  }
  seized_ = false;
  stopped_ = false;
}

absl::Status ThreadStop::ReadRegisters(NativeRegs* regs) const {
  if (!stopped_) return absl::FailedPreconditionError("the thread is not stopped");
#if defined(__x86_64__)
  user_regs_struct r;
  iovec io{&r, sizeof(r)};
  if (ptrace(PTRACE_GETREGSET, tid_, reinterpret_cast<void*>(NT_PRSTATUS), &io) != 0) {
    return absl::InternalError(absl::StrCat("PTRACE_GETREGSET ", tid_, ": ", std::strerror(errno)));
  }
  // A 32-bit (compat) task's register set is smaller: not walked as a 64-bit one.
  if (io.iov_len != sizeof(r)) {
    return absl::UnimplementedError("a 32-bit thread: only 64-bit processes are walked so far");
  }
  // DWARF numbering (psABI §3.6.2): rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, rip.
  const unsigned long long dwarf[17] = {r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi,
                                        r.rbp, r.rsp, r.r8,  r.r9,  r.r10, r.r11,
                                        r.r12, r.r13, r.r14, r.r15, r.rip};
  regs->ForgetAll();
  for (int i = 0; i < 17; ++i) regs->Set(i, dwarf[i]);
  return absl::OkStatus();
#elif defined(__aarch64__)
  user_regs_struct r;  // x0..x30, sp, pc, pstate
  iovec io{&r, sizeof(r)};
  if (ptrace(PTRACE_GETREGSET, tid_, reinterpret_cast<void*>(NT_PRSTATUS), &io) != 0) {
    return absl::InternalError(absl::StrCat("PTRACE_GETREGSET ", tid_, ": ", std::strerror(errno)));
  }
  if (io.iov_len != sizeof(r)) {
    return absl::UnimplementedError("a 32-bit thread: only 64-bit processes are walked so far");
  }
  regs->ForgetAll();
  for (int i = 0; i < 31; ++i) regs->Set(i, r.regs[i]);
  regs->set_sp(r.sp);
  regs->set_pc(r.pc);
  return absl::OkStatus();
#else
  (void)regs;
  return absl::UnimplementedError("reading another process's registers: x86_64 and aarch64 only");
#endif
}

}  // namespace stackwalk::internal
