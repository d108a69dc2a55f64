// The time of one leak check in a running process (issue 16, item 7): N live blocks over 4 threads
// that stay alive (blocked) while the main thread checks, so a check stops 4 other threads.
//   leak_check_pause [BLOCKS (default 100000)] [CHECKS (default 5)]
// Each thread allocates BLOCKS/4 blocks of 16..144 bytes from 4 call sites and keeps them in a
// malloc'ed array reachable from a global; 1 block in 10,000 is dropped (a leak, so the checks
// have something to report). Prints one line per check and the median:
//   check 3: 412.1 ms (pause 55.0 ms), 100 leaked
// Two builds of this file:
// - with stackwalk's in-process checker (stackwalk::leakcheck::Start, report to /dev/null): a
//   check is CheckLeaks() (frames not named), its pause the summary's (how long the other
//   threads were stopped);
// - with -fsanitize=leak and -DLEAK_CHECK_PAUSE_LSAN: a check is LeakSanitizer's
//   __lsan_do_recoverable_leak_check() (its leak reports go to stderr).
// bench/leak_check_pause.sh builds and runs both side by side.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef LEAK_CHECK_PAUSE_LSAN
#include <sanitizer/lsan_interface.h>
#else
#include "stackwalk/leakcheck.h"
#endif

namespace {

constexpr int kThreads = 4;
constexpr long kLeakEvery = 10000;

struct Worker {
  pthread_t thread;
  long blocks = 0;
  void** kept = nullptr;  // malloc'ed: reachable through g_workers
};
Worker g_workers[kThreads];

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
int g_ready = 0;
bool g_done = false;

void* volatile g_sink;

template <int kSite>
__attribute__((noinline)) void* Allocate(long i) {
  void* p = std::malloc(16 + static_cast<size_t>((i * 2654435761u) % 129));
  std::memset(p, kSite, 16);
  return p;
}

void* Work(void* arg) {
  Worker& w = *static_cast<Worker*>(arg);
  w.kept = static_cast<void**>(std::calloc(static_cast<size_t>(w.blocks), sizeof(void*)));
  for (long i = 0; i < w.blocks; ++i) {
    void* p = nullptr;
    switch (i & 3) {
      case 0: p = Allocate<0>(i); break;
      case 1: p = Allocate<1>(i); break;
      case 2: p = Allocate<2>(i); break;
      default: p = Allocate<3>(i); break;
    }
    if (i % kLeakEvery == kLeakEvery - 1) {
      g_sink = p;  // dropped: overwritten by the next leak
    } else {
      w.kept[i] = p;
    }
  }
  pthread_mutex_lock(&g_mutex);
  ++g_ready;
  pthread_cond_broadcast(&g_cond);
  while (!g_done) pthread_cond_wait(&g_cond, &g_mutex);
  pthread_mutex_unlock(&g_mutex);
  return nullptr;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// One check; its whole time, stackwalk's pause (LeakSanitizer: -1), and the leaked blocks it
// found (stackwalk: the ones no earlier check returned; LeakSanitizer: 1 if it found leaks).
double Check(double* pause_ms, uint64_t* found) {
  *pause_ms = -1;
  auto start = std::chrono::steady_clock::now();
#ifdef LEAK_CHECK_PAUSE_LSAN
  *found = static_cast<uint64_t>(__lsan_do_recoverable_leak_check());
#else
  auto check = stackwalk::leakcheck::CheckLeaks();
  if (!check.ok()) {
    std::fprintf(stderr, "CheckLeaks: %s\n", check.status().ToString().c_str());
    std::exit(1);
  }
  if (check->summary.method == 0) {
    std::fprintf(stderr, "CheckLeaks: the world was not stopped\n");
    std::exit(1);
  }
  *pause_ms = static_cast<double>(check->summary.pause_ns) / 1e6;
  *found = check->summary.direct_allocations + check->summary.indirect_allocations;
#endif
  return Ms(std::chrono::steady_clock::now() - start);
}

}  // namespace

int main(int argc, char** argv) {
  const long blocks = argc > 1 ? std::atol(argv[1]) : 100000;
  const int checks = argc > 2 ? std::atoi(argv[2]) : 5;
  if (blocks < kThreads || checks < 1) {
    std::fprintf(stderr, "usage: leak_check_pause [BLOCKS >= 4] [CHECKS >= 1]\n");
    return 2;
  }
#ifndef LEAK_CHECK_PAUSE_LSAN
  stackwalk::leakcheck::LeakCheckOptions options;
  options.output = "/dev/null";
  options.report_at_exit = false;
  if (absl::Status s = stackwalk::leakcheck::Start(options); !s.ok()) {
    std::fprintf(stderr, "Start: %s\n", s.ToString().c_str());
    return 1;
  }
#endif
  for (Worker& w : g_workers) {
    w.blocks = blocks / kThreads;
    pthread_create(&w.thread, nullptr, Work, &w);
  }
  pthread_mutex_lock(&g_mutex);
  while (g_ready != kThreads) pthread_cond_wait(&g_cond, &g_mutex);
  pthread_mutex_unlock(&g_mutex);

  std::vector<double> times;
  for (int i = 1; i <= checks; ++i) {
    double pause_ms;
    uint64_t found = 0;
    times.push_back(Check(&pause_ms, &found));
    std::printf("check %d: %.1f ms", i, times.back());
    if (pause_ms >= 0) std::printf(" (pause %.1f ms)", pause_ms);
    std::printf(", %llu leaked\n", static_cast<unsigned long long>(found));
  }
  std::sort(times.begin(), times.end());
  std::printf("median: %.1f ms over %d checks, %ld live blocks, %d threads\n",
              times[times.size() / 2], checks, blocks, kThreads);

  pthread_mutex_lock(&g_mutex);
  g_done = true;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_mutex);
  for (Worker& w : g_workers) pthread_join(w.thread, nullptr);
#ifndef LEAK_CHECK_PAUSE_LSAN
  (void)stackwalk::leakcheck::Stop();
#endif
  return 0;
}
