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

}  // namespace stackwalk::leakcheck
