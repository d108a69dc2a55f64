#include "leakcheck/report_destination.h"

#include <fcntl.h>
#include <sys/file.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace stackwalk::leakcheck {
namespace {

// Programs number their own descriptors from 3 upwards; a high one is rarely in their way.
constexpr int kLowestKeptDescriptor = 500;

std::atomic<int> g_stderr_copy{-1};
std::atomic<pid_t> g_reporting_pid{0};

}  // namespace

void KeepReportDestination() {
  g_reporting_pid.store(getpid(), std::memory_order_relaxed);
  if (g_stderr_copy.load(std::memory_order_relaxed) >= 0) return;  // inherited over fork
  const int copy = fcntl(2, F_DUPFD_CLOEXEC, kLowestKeptDescriptor);
  if (copy >= 0) g_stderr_copy.store(copy, std::memory_order_relaxed);
}

int StderrForReports() {
  const int copy = g_stderr_copy.load(std::memory_order_relaxed);
  return copy >= 0 ? copy : 2;
}

pid_t ReportingProcess() { return g_reporting_pid.load(std::memory_order_relaxed); }

std::string ExpandProcessId(const char* path) {
  std::string out = path != nullptr ? path : "";
  for (size_t at = 0; (at = out.find("%p", at)) != std::string::npos;) {
    const std::string pid = std::to_string(getpid());
    out.replace(at, 2, pid);
    at += pid.size();
  }
  return out;
}

namespace {

// With SIGPIPE blocked: a pipe whose reader is gone (the launcher killed) gives EPIPE, not the
// program's death; a SIGPIPE the write raised is taken back, one pending before is left.
// Returns false if a write failed (the rest of a dump written in pieces is then dropped).
bool WriteAll(int fd, const char* data, size_t size) {
  sigset_t pipe_signal, before, pending;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &before);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  bool broken = false;
  size_t done = 0;
  while (done < size) {
    const ssize_t wrote = write(fd, data + done, size - done);
    if (wrote < 0 && errno == EINTR) continue;
    broken = wrote < 0 && errno == EPIPE;
    if (wrote <= 0) break;
    done += static_cast<size_t>(wrote);
  }
  if (broken && !was_pending) {
    const struct timespec now = {0, 0};
    sigtimedwait(&pipe_signal, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return done == size;
}
bool WriteAll(int fd, const std::string& bytes) { return WriteAll(fd, bytes.data(), bytes.size()); }

int OpenReportFile(const std::string& path, bool first) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (first ? O_TRUNC : O_APPEND), 0644);
}

}  // namespace

void DeliverDump(const char* path_pattern, bool first, const std::string& bytes) {
  DeliverDump(path_pattern, first, [&bytes](const DumpWriter& write) {
    write(bytes.data(), bytes.size());
  });
}

void DeliverDump(const char* path_pattern, bool first,
                 const std::function<void(const DumpWriter&)>& encode) {
  const std::string path = ExpandProcessId(path_pattern);
  if (path.empty()) return;
  const int fd = OpenReportFile(path, first);
  if (fd < 0) {
    WriteToStderr("stackwalk-leakcheck: cannot write the dump " + path + "\n");
    return;
  }
  // Whole dumps, one process at a time: the launcher's pipe (--name-in=launcher, each process's
  // own open description of it) takes writes of more than PIPE_BUF in pieces that another
  // process's could come between. Released by the close (or the process's end).
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  bool ok = true;  // after a failed write the rest is dropped: a dump cut short says so itself
  encode([fd, &ok](const char* data, size_t size) {
    if (ok) ok = WriteAll(fd, data, size);
  });
  close(fd);
}

void WriteToStderr(const std::string& text) { WriteAll(StderrForReports(), text); }

void DeliverReport(const char* output, bool first, const std::string& text) {
  const int stderr_fd = StderrForReports();
  int fd = stderr_fd;
  const std::string path = ExpandProcessId(output);
  if (!path.empty()) {
    fd = OpenReportFile(path, first);
    if (fd < 0) {
      const std::string complaint =
          "stackwalk-leakcheck: cannot write " + path + "; the report follows here\n";
      fd = stderr_fd;
      if (write(fd, complaint.data(), complaint.size()) < 0) {
        // Nowhere to say it; the report is tried all the same.
      }
    }
  }
  WriteAll(fd, text);
  if (fd != stderr_fd) close(fd);
}

}  // namespace stackwalk::leakcheck
