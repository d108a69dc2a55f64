// What a crash snapshot's other threads cost the crashing thread (issue 20): the capture of N
// threads parked in usleep (signal each, wait for each handler to park), and the capture with
// the snapshot written (each thread's section, registers and 16 KiB of stack) to a memfd, then
// the threads let go. Manual time: only the capture (and the write) is measured, not the
// release nor the threads' return to usleep. The module map is not refreshed: nearly no modules.
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "benchmark/benchmark.h"
#include "crash/snapshot_writer.h"
#include "crash/thread_capture.h"

namespace stackwalk::internal {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_ready{0};

void* Park(void*) {
  g_ready.fetch_add(1);
  while (!g_stop.load()) usleep(1000);
  return nullptr;
}

double Seconds(const timespec& a, const timespec& b) {
  return static_cast<double>(b.tv_sec - a.tv_sec) + static_cast<double>(b.tv_nsec - a.tv_nsec) * 1e-9;
}

// N parked threads for the benchmark's run; the capture handler installed meanwhile.
class ParkedThreads {
 public:
  explicit ParkedThreads(int n) : threads_(static_cast<size_t>(n)) {
    InstallThreadCaptureHandler(SIGRTMIN + 6);
    g_stop = false;
    g_ready = 0;
    for (pthread_t& t : threads_) pthread_create(&t, nullptr, Park, nullptr);
    while (g_ready.load() < n) usleep(1000);
  }
  ~ParkedThreads() {
    g_stop = true;
    for (pthread_t& t : threads_) pthread_join(t, nullptr);
    UninstallThreadCaptureHandler();
  }

 private:
  std::vector<pthread_t> threads_;
};

void Run(benchmark::State& state, bool write) {
  const int n = static_cast<int>(state.range(0));
  ParkedThreads parked(n);
  const int fd = memfd_create("snapshot_threads_benchmark", MFD_CLOEXEC);
  ucontext_t uc;
  getcontext(&uc);
  int captured = 0;
  for (auto _ : state) {
    lseek(fd, 0, SEEK_SET);
    timespec begin, end;
    clock_gettime(CLOCK_MONOTONIC, &begin);
    ThreadCaptureResult r = CaptureOtherThreads(1000);
    if (write) {
      SnapshotOtherThreads others{&r, 16 << 10, 4 << 20};
      WriteCrashSnapshot(fd, SIGSEGV, nullptr, &uc, 4096, others);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    ReleaseThreads();
    state.SetIterationTime(Seconds(begin, end));
    captured = 0;
    for (int i = 0; i < r.count; ++i) captured += r.threads[i].state == kSnapshotThreadCaptured;
  }
  close(fd);
  state.counters["captured"] = captured;  // of n: every one, or the figure means nothing
}

void BM_CaptureOtherThreads(benchmark::State& state) { Run(state, false); }
void BM_CaptureAndWriteSnapshot(benchmark::State& state) { Run(state, true); }

BENCHMARK(BM_CaptureOtherThreads)->Arg(1)->Arg(10)->Arg(100)->Arg(250)->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CaptureAndWriteSnapshot)->Arg(1)->Arg(10)->Arg(100)->Arg(250)->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stackwalk::internal

BENCHMARK_MAIN();
