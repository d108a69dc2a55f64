// Unwind tables (CFI, or EHABI on arm32) through code stackwalk did not compile: callbacks from libc (qsort, bsearch) and
// libstdc++ (std::sort, std::function, std::call_once, a std::thread entry), and signals that
// land anywhere in a function, prologue and leaf included. Built -O2 -fomit-frame-pointer.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "frame_names.h"
#include "stackwalk/stackwalk.h"

// The tables the test unwinds with: .eh_frame, or the EHABI index on 32-bit ARM.

using stackwalk::testing::ContainsInOrder;
using stackwalk::testing::FrameNames;
using stackwalk::testing::Join;
using stackwalk::testing::kTableMethod;
#if defined(__arm__)
using stackwalk::testing::OutsideEhabiBody;
#endif

namespace {
constexpr int kMax = 128;
void* g_pcs[kMax];
int g_n;
}  // namespace

extern "C" {

__attribute__((noinline)) void cb_capture() {
  g_n = stackwalk_backtrace(g_pcs, kMax, kTableMethod);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int cb_qsort_compare(const void* a, const void* b) {
  if (g_n == 0) cb_capture();
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

__attribute__((noinline)) int cb_qsort_caller() {
  int v[8] = {5, 3, 7, 1, 8, 2, 6, 4};
  qsort(v, 8, sizeof(int), cb_qsort_compare);
  __asm__ volatile("" ::: "memory");
  return v[0];
}

__attribute__((noinline)) int cb_bsearch_caller() {
  static const int v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int key = 6;
  const void* found = bsearch(&key, v, 8, sizeof(int), cb_qsort_compare);
  __asm__ volatile("" ::: "memory");
  return found != nullptr;
}

__attribute__((noinline)) bool cb_sort_less(int a, int b) {
  if (g_n == 0) cb_capture();
  return a < b;
}

__attribute__((noinline)) int cb_sort_caller() {
  std::vector<int> v = {9, 3, 7, 1, 8, 2, 6, 4, 5, 0, 11, 10, 13, 12, 15, 14, 17, 16};
  std::sort(v.begin(), v.end(), cb_sort_less);
  __asm__ volatile("" ::: "memory");
  return v[0];
}

__attribute__((noinline)) int cb_function_target(int x) {
  cb_capture();
  __asm__ volatile("" ::: "memory");
  return x + 1;
}

__attribute__((noinline)) int cb_function_caller(const std::function<int(int)>& f) {
  int r = f(1);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) void cb_once_target() {
  cb_capture();
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void cb_thread_entry() {
  cb_capture();
  __asm__ volatile("" ::: "memory");
}

// ---- signals landing anywhere: a leaf, and a callee with a real prologue ----

// Unsigned arithmetic: the generator wraps, which signed overflow may not (UBSan builds).
__attribute__((noinline)) unsigned long sig_leaf(unsigned long x) {
  for (int i = 0; i < 64; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

__attribute__((noinline)) unsigned long sig_callee(unsigned long x, unsigned long* sink) {
  unsigned long local[8];
  for (int i = 0; i < 8; ++i) local[i] = sig_leaf(x + i);
  __asm__ volatile("" : : "r"(local) : "memory");
  *sink += local[3];
  return local[7];
}

__attribute__((noinline)) unsigned long sig_loop(const std::atomic<bool>* stop) {
  unsigned long sink = 0, x = 1;
  while (!stop->load(std::memory_order_relaxed)) x = sig_callee(x, &sink);
  return x + sink;
}

}  // extern "C"

// The tests stay outside an anonymous namespace: dladdr names their exported TestBody frames.

static void ExpectPrefix(const std::vector<std::string>& names, const std::vector<std::string>& want) {
  EXPECT_TRUE(ContainsInOrder(names, want)) << Join(names);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], want[0]) << Join(names);
}

TEST(Callbacks, ThroughLibcQsort) {
  g_n = 0;
  cb_qsort_caller();
  ASSERT_GT(g_n, 0);
  auto names = FrameNames(g_pcs, g_n, false);
#if defined(STACKWALK_SANITIZE_BUILD)
  // The sanitizer runtime's qsort interceptor sorts by itself, one frame (gdb shows the same).
  ExpectPrefix(names, {"cb_capture", "cb_qsort_compare", "cb_qsort_caller"});
#else
  // glibc's qsort is qsort_r's entry with its merge-sort helpers (local symbols) below it.
  ExpectPrefix(names, {"cb_capture", "cb_qsort_compare", "qsort_r", "cb_qsort_caller"});
#endif
}

TEST(Callbacks, ThroughLibcBsearch) {
  g_n = 0;
  cb_bsearch_caller();
  ASSERT_GT(g_n, 0);
  auto names = FrameNames(g_pcs, g_n, false);
  // bsearch is inlined into the caller from glibc's header at -O2, or called: either way the
  // comparator's caller chain reaches cb_bsearch_caller.
  ExpectPrefix(names, {"cb_capture", "cb_qsort_compare", "cb_bsearch_caller"});
}

TEST(Callbacks, ThroughStdSort) {
  g_n = 0;
  cb_sort_caller();
  ASSERT_GT(g_n, 0);
  ExpectPrefix(FrameNames(g_pcs, g_n, false), {"cb_capture", "cb_sort_less", "cb_sort_caller"});
}

TEST(Callbacks, ThroughStdFunction) {
  g_n = 0;
  std::function<int(int)> f = [](int x) { return cb_function_target(x); };
  cb_function_caller(f);
  ASSERT_GT(g_n, 0);
  ExpectPrefix(FrameNames(g_pcs, g_n, false),
               {"cb_capture", "cb_function_target", "cb_function_caller"});
}

TEST(Callbacks, ThroughStdCallOnceAndPthreadOnce) {
  g_n = 0;
  static std::once_flag once;
  std::call_once(once, [] { cb_once_target(); });
  ASSERT_GT(g_n, 0);
  auto names = FrameNames(g_pcs, g_n, false);
  ExpectPrefix(names, {"cb_capture", "cb_once_target"});
  EXPECT_NE(Join(names).find("TestBody"), std::string::npos) << Join(names);
}

TEST(Callbacks, ThreadEntryReachesTheThreadStart) {
  g_n = 0;
  std::thread t([] { cb_thread_entry(); });
  t.join();
  ASSERT_GT(g_n, 0);
  auto names = FrameNames(g_pcs, g_n, false);
  ExpectPrefix(names, {"cb_capture", "cb_thread_entry"});
  // The walk ends at the thread's first frame (clone's undefined return address), not in garbage.
  EXPECT_LT(g_n, 20) << Join(names);
}

// Timer samples from the ucontext_t: every one must name the sampled function's real callers.
// ITIMER_PROF's signal goes to any thread, the stopper's (asleep in libc) included, so two handlers
// can run at once: each claims its own slot with fetch_add and publishes it only when complete.
static constexpr int kSamples = 400;
struct ProfileSample {
  std::atomic<bool> complete;
  int n;
  long tid;  // only sig_loop's thread runs the functions checked
  void* pcs[16];
};
static ProfileSample g_samples[kSamples];
static std::atomic<int> g_samples_claimed{0};

static void OnProfile(int, siginfo_t*, void* uc) {
  const int i = g_samples_claimed.fetch_add(1, std::memory_order_relaxed);
  if (i >= kSamples) return;
  ProfileSample& sample = g_samples[i];
  sample.n = stackwalk_backtrace_from_context(uc, sample.pcs, 16, kTableMethod);
  sample.tid = syscall(SYS_gettid);
  sample.complete.store(true, std::memory_order_release);
}

TEST(Signals, TimerSamplesAnywhereInLeafAndPrologue) {
  struct sigaction sa {}, old{};
  sa.sa_sigaction = OnProfile;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  ASSERT_EQ(sigaction(SIGPROF, &sa, &old), 0);
  itimerval timer{{0, 200}, {0, 200}};
  itimerval old_timer{};
  ASSERT_EQ(setitimer(ITIMER_PROF, &timer, &old_timer), 0);
  std::atomic<bool> stop{false};
  const long loop_tid = syscall(SYS_gettid);
  std::thread stopper([&] {
    for (int i = 0; i < 400 && g_samples_claimed.load() < kSamples; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop = true;
  });
  sig_loop(&stop);
  stopper.join();
  setitimer(ITIMER_PROF, &old_timer, nullptr);
  sigaction(SIGPROF, &old, nullptr);

  int checked = 0, wrong = 0, incomplete = 0;
  std::string first_wrong;
  for (ProfileSample& sample : g_samples) {
    if (!sample.complete.load(std::memory_order_acquire)) {
      ++incomplete;
      continue;
    }
    if (sample.n <= 0 || sample.tid != loop_tid) continue;
#if defined(__arm__)
    if (OutsideEhabiBody(sample.pcs[0])) continue;
#endif
    auto names = FrameNames(sample.pcs, sample.n, true);
    // Samples taken in our functions must show the whole chain above them.
    bool right = true;
    if (names[0] == "sig_leaf") {
      right = ContainsInOrder(names, {"sig_leaf", "sig_callee", "sig_loop"}) && names.size() > 1 &&
              names[1] == "sig_callee";
    } else if (names[0] == "sig_callee") {
      right = names.size() > 1 && names[1] == "sig_loop";
    } else if (names[0] == "sig_loop") {
      right = names.size() > 1 && names[1].find("TestBody") != std::string::npos;
    } else {
      continue;
    }
    ++checked;
    if (!right) {
      ++wrong;
      if (first_wrong.empty()) first_wrong = Join(names);
    }
  }
  EXPECT_EQ(wrong, 0) << wrong << " of " << checked << ", e.g. " << first_wrong;
  std::printf("%d samples in the fixture functions, %d with a wrong caller, %d slots unfilled\n",
              checked, wrong, incomplete);
  EXPECT_GT(checked, 20) << "too few samples landed in the fixture functions";
}
