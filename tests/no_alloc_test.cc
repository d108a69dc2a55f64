// The capture path never allocates: this binary replaces malloc and friends with counting
// wrappers around glibc's __libc_* entry points and captures in every way a user can.
#include <gtest/gtest.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cstddef>
#include <thread>

#include "stackwalk/capture.h"
#include "stackwalk/cursor.h"
#include "stackwalk/stackwalk.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
void Count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
}
}  // namespace

extern "C" {
void* malloc(size_t n) {
  Count();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  Count();
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  Count();
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  Count();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  Count();
  *out = __libc_memalign(a, n);
  return *out ? 0 : 12;
}
void* aligned_alloc(size_t a, size_t n) {
  Count();
  return __libc_memalign(a, n);
}
void free(void* p) { __libc_free(p); }
}

namespace {

constexpr int kMax = 128;

struct Counting {
  Counting() {
    g_allocations = 0;
    g_counting = true;
  }
  ~Counting() { g_counting = false; }
};

int CaptureAllWays() {
  void* pcs[kMax];
  int total = 0;
  for (int i = 0; i < 50; ++i) {
    total += stackwalk_backtrace(pcs, kMax, STACKWALK_FP);
    total += stackwalk_backtrace(pcs, kMax, STACKWALK_AUTO);
    total += stackwalk::Capture(pcs, kMax);
    auto trace = stackwalk::StackTrace<32>::Current();
    total += trace.size();
    stackwalk::Cursor c = stackwalk::Cursor::Here();
    while (c.Step()) ++total;
  }
  return total;
}

TEST(NoAllocation, CaptureOnAWarmThread) {
  CaptureAllWays();  // warm-up outside the counted region is not needed, but keep it honest
  Counting counting;
  EXPECT_GT(CaptureAllWays(), 0);
  EXPECT_EQ(g_allocations.load(), 0);
}

TEST(NoAllocation, FirstCaptureOnANewThread) {
  // The thread's stack bounds are looked up on its first capture: still no allocation.
  long seen = -1;
  int frames = 0;
  std::thread t([&] {
    Counting counting;
    frames = CaptureAllWays();
    seen = g_allocations.load();
  });
  t.join();
  EXPECT_GT(frames, 0);
  EXPECT_EQ(seen, 0);
}

int g_handler_frames;
void OnSignal(int, siginfo_t*, void* uc) {
  void* pcs[kMax];
  g_handler_frames = stackwalk_backtrace_from_context(uc, pcs, kMax, STACKWALK_FP);
  g_handler_frames += stackwalk_backtrace(pcs, kMax, STACKWALK_FP);
  stackwalk::Cursor c = stackwalk::Cursor::FromContext(uc);
  while (c.Step()) ++g_handler_frames;
}

TEST(NoAllocation, CaptureInsideASignalHandler) {
  struct sigaction sa {}, old{};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO;
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  {
    Counting counting;
    raise(SIGUSR2);
    EXPECT_EQ(g_allocations.load(), 0);
  }
  sigaction(SIGUSR2, &old, nullptr);
  EXPECT_GT(g_handler_frames, 0);
}

TEST(NoAllocation, TheCounterWorks) {
  // The check above is only worth something if an allocation would be seen.
  Counting counting;
  void* volatile p = malloc(32);
  free(p);
  EXPECT_EQ(g_allocations.load(), 1);
}

}  // namespace
