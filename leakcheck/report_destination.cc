#include "leakcheck/report_destination.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>

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

void DeliverReport(const char* output, bool first, const std::string& text) {
  const int stderr_fd = StderrForReports();
  int fd = stderr_fd;
  std::string path = output != nullptr ? output : "";
  for (size_t at; (at = path.find("%p")) != std::string::npos;) {
    path.replace(at, 2, std::to_string(getpid()));
  }
  if (!path.empty()) {
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (first ? O_TRUNC : O_APPEND), 0644);
    if (fd < 0) {
      const std::string complaint =
          "stackwalk-leakcheck: cannot write " + path + "; the report follows here\n";
      fd = stderr_fd;
      if (write(fd, complaint.data(), complaint.size()) < 0) {
        // Nowhere to say it; the report is tried all the same.
      }
    }
  }
  for (size_t done = 0; done < text.size();) {
    const ssize_t wrote = write(fd, text.data() + done, text.size() - done);
    if (wrote <= 0) break;
    done += static_cast<size_t>(wrote);
  }
  if (fd != stderr_fd) close(fd);
}

}  // namespace stackwalk::leakcheck
