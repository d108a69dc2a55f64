// StoppedWorld: the method choice, the slots, and the helpers both methods share (task listing
// with raw openat/getdents64 into a fixed buffer, the clock, the caller's signal mask).
#include "leakcheck/scan/stop_world.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include <initializer_list>

#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/raw_syscall.h"
#include "leakcheck/scan/stop_world_internal.h"

namespace stackwalk::leakcheck {
namespace stop_internal {

uint64_t MonotonicNs() {
  struct {
    long sec;
    long nsec;
  } ts = {0, 0};
  raw::Syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.sec) * 1000000000ull + static_cast<uint64_t>(ts.nsec);
}

void SleepNs(long ns) {
  struct {
    long sec;
    long nsec;
  } ts = {ns / 1000000000l, ns % 1000000000l};
  raw::Syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, 0);
}

char* Append(char* buf, size_t size, const char* text) {
  size_t n = 0;
  while (n < size && buf[n] != '\0') ++n;
  while (n + 1 < size && *text != '\0') buf[n++] = *text++;
  if (n < size) buf[n] = '\0';
  return buf;
}

char* AppendInt(char* buf, size_t size, long value) {
  char digits[24];
  int n = 0;
  unsigned long v = value < 0 ? 0ul - static_cast<unsigned long>(value) : value;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  char text[26];
  int t = 0;
  if (value < 0) text[t++] = '-';
  while (n > 0) text[t++] = digits[--n];
  text[t] = '\0';
  return Append(buf, size, text);
}

const char* ErrnoName(int err) {
  switch (err) {
    case EPERM: return "EPERM";
    case ESRCH: return "ESRCH";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case EACCES: return "EACCES";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EBUSY: return "EBUSY";
    case ECHILD: return "ECHILD";
    case EIO: return "EIO";
    default: return "error";
  }
}

bool ForEachTask(int pid, void (*visit)(int tid, void* context), void* context) {
  char path[40] = "/proc/";
  if (pid == 0) {
    Append(path, sizeof(path), "self");
  } else {
    AppendInt(path, sizeof(path), pid);
  }
  Append(path, sizeof(path), "/task");
  const long fd = raw::Syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  alignas(8) char buffer[4096];
  bool ok = true;
  for (;;) {
    const long got = raw::Syscall(SYS_getdents64, fd, buffer, sizeof(buffer));
    if (got == 0) break;
    if (got < 0) {
      ok = false;
      break;
    }
    for (long at = 0; at < got;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
      const char* record = buffer + at;
      const uint16_t reclen = static_cast<uint16_t>(static_cast<unsigned char>(record[16]) |
                                                    static_cast<unsigned char>(record[17]) << 8);
      if (reclen == 0) break;
      const char* name = record + 19;
      int tid = 0;
      bool digits = *name != '\0';
      for (const char* c = name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') {
          digits = false;
          break;
        }
        tid = tid * 10 + (*c - '0');
      }
      if (digits && tid > 0) visit(tid, context);
      at += reclen;
    }
  }
  raw::Syscall(SYS_close, fd);
  return ok;
}

void BlockAsyncSignals(uint64_t old[2]) {
  uint64_t mask = ~0ull;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) {
    mask &= ~(1ull << (sig - 1));
  }
  uint64_t block[2] = {mask, 0};
  old[0] = old[1] = 0;
  raw::Syscall(SYS_rt_sigprocmask, SIG_BLOCK, block, old, 8);
}

void RestoreSignals(const uint64_t old[2]) {
  raw::Syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, 0, 8);
}

}  // namespace stop_internal

StoppedWorld::~StoppedWorld() {
  Resume();
  if (threads_ != nullptr) OwnUnmap(threads_, capacity_ * sizeof(StoppedThread));
  threads_ = nullptr;
  capacity_ = 0;
}

bool StoppedWorld::Reserve(size_t threads) {
  if (threads <= capacity_) return true;
  size_t capacity = capacity_ == 0 ? 64 : capacity_ * 2;
  while (capacity < threads) capacity *= 2;
  void* grown = threads_ == nullptr
                    ? OwnMap(capacity * sizeof(StoppedThread))
                    : OwnRemap(threads_, capacity_ * sizeof(StoppedThread),
                               capacity * sizeof(StoppedThread));
  if (grown == nullptr) return false;
  threads_ = static_cast<StoppedThread*>(grown);
  capacity_ = capacity;
  return true;
}

bool StoppedWorld::Stop(StopRequest request, int timeout_ms, const int32_t* skip_tids,
                        size_t skip_count) {
  Resume();
  method_ = StopMethod::kNone;
  fallback_reason_ = "";
  reason_[0] = '\0';
  count_ = 0;
  pause_start_ns_ = 0;
  if (timeout_ms <= 0) timeout_ms = 1000;
  if (skip_tids == nullptr) skip_count = 0;
  // Room for the threads there are now and as many again (a Stop made while threads are being
  // created); the methods grow it when they must.
  struct Counter {
    static void Count(int, void* n) { ++*static_cast<size_t*>(n); }
  };
  size_t tasks = 0;
  stop_internal::ForEachTask(0, &Counter::Count, &tasks);
  if (!Reserve(2 * tasks + 64)) {
    fallback_reason_ = "no memory for the thread slots";
    return false;
  }
  stop_internal::BlockAsyncSignals(saved_mask_);
  mask_saved_ = true;
  if (request != StopRequest::kSignal) {
    if (StopPtrace(timeout_ms, skip_tids, skip_count)) {
      method_ = StopMethod::kPtrace;
      active_ = true;
      return true;
    }
    fallback_reason_ = reason_;
    if (request == StopRequest::kPtrace) {
      stop_internal::RestoreSignals(saved_mask_);
      mask_saved_ = false;
      return false;
    }
  }
  if (StopSignal(timeout_ms, skip_tids, skip_count)) {
    method_ = StopMethod::kSignal;
    active_ = true;
    if (reason_[0] != '\0') fallback_reason_ = reason_;
    return true;
  }
  if (request == StopRequest::kSignal) fallback_reason_ = reason_;
  stop_internal::RestoreSignals(saved_mask_);
  mask_saved_ = false;
  count_ = 0;
  return false;
}

void StoppedWorld::Resume() {
  if (active_) {
    if (method_ == StopMethod::kPtrace) ResumePtrace();
    if (method_ == StopMethod::kSignal) ResumeSignal();
    active_ = false;
  }
  if (mask_saved_) {
    stop_internal::RestoreSignals(saved_mask_);
    mask_saved_ = false;
  }
}

}  // namespace stackwalk::leakcheck
