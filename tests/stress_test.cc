// Capture under load, on real code: 16 threads capturing with every method while a library is
// loaded and unloaded again and again (some captures go through it, by a callback); a 10 kHz
// profiling timer capturing from the ucontext while its thread mallocs, dlopens, recurses and
// sorts through libc; and fork while threads capture (the child captures and exits).
//
// STACKWALK_STRESS_SECONDS sets how long each timed part runs (10 by default; the cross builds,
// run under qemu, default to STRESS_DEFAULT_SECONDS). Built with frame pointers and unwind tables,
// so that every method can see every frame of this file and of the fixture library.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/chain_lib.h"
#include "frame_names.h"
#include "stackwalk/stackwalk.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif
#ifndef STRESS_DEFAULT_SECONDS
#define STRESS_DEFAULT_SECONDS 10
#endif

using stackwalk::testing::ContainsInOrder;
using stackwalk::testing::FrameNames;
using stackwalk::testing::Join;
using stackwalk::testing::kTableMethod;
#if defined(__arm__)
using stackwalk::testing::OutsideEhabiBody;
#endif

namespace {

constexpr stackwalk_method kMethods[] = {STACKWALK_FP, kTableMethod, STACKWALK_AUTO};
constexpr int kMax = 64;

double StressSeconds() {
  const char* text = std::getenv("STACKWALK_STRESS_SECONDS");
  double seconds = text != nullptr ? std::atof(text) : 0;
  return seconds > 0 ? seconds : STRESS_DEFAULT_SECONDS;
}

std::chrono::steady_clock::time_point Deadline(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::microseconds(static_cast<long long>(seconds * 1e6));
}

// The executable mappings outside loaded objects now (qemu-user's signal trampoline page).
std::vector<std::pair<uintptr_t, uintptr_t>> AnonymousCode() {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return ranges;
  char line[512];
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    unsigned long lo, hi;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) < 3) continue;
    if (perms[2] == 'x' && (line[path_at] == '\n' || line[path_at] == '\0')) ranges.push_back({lo, hi});
  }
  std::fclose(maps);
  return ranges;
}

// Every PC lies in a loaded object, or in one of `also` (ranges of objects loaded then, code
// outside objects), the first exactly, the others as return addresses (at pc - 1, or at pc for
// a signal trampoline at the start of its page).
bool AllKnown(void* const* pcs, int n, std::string* unknown,
              const std::vector<std::pair<uintptr_t, uintptr_t>>& also = {}) {
  for (int i = 0; i < n; ++i) {
    Dl_info info;
    const uintptr_t at = reinterpret_cast<uintptr_t>(pcs[i]);
    uintptr_t pc = at - (i > 0 ? 1 : 0);
    bool in_also = false;
    for (const auto& range : also) {
      in_also |= (pc >= range.first && pc < range.second) || (at >= range.first && at < range.second);
    }
    if (in_also) continue;
    // A return address may also be the first byte of an object (its headers open its code
    // segment): a frame-pointer walk on arm32 can take a stale word holding one for a frame.
    const bool known = (dladdr(reinterpret_cast<void*>(pc), &info) != 0 && info.dli_fname != nullptr) ||
                       (dladdr(reinterpret_cast<void*>(at), &info) != 0 && info.dli_fname != nullptr);
    if (!known) {
      char text[64];
      std::snprintf(text, sizeof(text), "frame %d at %p", i, pcs[i]);
      *unknown = text;
      return false;
    }
  }
  return true;
}

// The first failure of a multi-threaded part, and how many there were.
struct Failures {
  std::atomic<int> count{0};
  std::mutex mutex;
  std::string first;
  void Add(const std::string& what) {
    if (count.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      first = what;
    }
  }
};

const char* MethodName(stackwalk_method m) {
  switch (m) {
    case STACKWALK_FP: return "fp";
    case STACKWALK_EHFRAME: return "ehframe";
    case STACKWALK_EXIDX: return "exidx";
    default: return "auto";
  }
}

struct Capture {
  stackwalk_method method;
  void* pcs[kMax];
  int n = 0;
};

}  // namespace

// Exported, for dladdr: the chains the tests expect.
extern "C" {

__attribute__((noinline)) int stress_capture_callback(void* arg) {
  auto* c = static_cast<Capture*>(arg);
  c->n = stackwalk_backtrace(c->pcs, kMax, c->method);
  __asm__ volatile("" ::: "memory");
  return c->n;
}

__attribute__((noinline)) int stress_through_library(chain_lib_entry_fn entry, Capture* c) {
  int r = entry(stress_capture_callback, c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int stress_own_level2(Capture* c) {
  c->n = stackwalk_backtrace(c->pcs, kMax, c->method);
  __asm__ volatile("" ::: "memory");
  return c->n;
}

__attribute__((noinline)) int stress_own_level1(Capture* c) {
  int r = stress_own_level2(c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

}  // extern "C"

// The fixture library's users: capturing threads open it only while `closing` is false, and count
// themselves in `holders`, so that the loader can make sure it is really unloaded now and then.
struct LibraryGate {
  std::atomic<bool> closing{false};
  std::atomic<int> holders{0};
  bool Enter() {
    if (closing.load()) return false;
    holders.fetch_add(1);
    if (!closing.load()) return true;
    holders.fetch_sub(1);
    return false;
  }
  void Leave() { holders.fetch_sub(1); }
};

// One of the 16 capturing threads: its own chain, or (every fourth capture, when the gate is
// open) the chain through the fixture library, which it holds open for that capture only.
static void CaptureLoop(int thread, std::chrono::steady_clock::time_point deadline,
                        LibraryGate* gate, std::atomic<long>* captures,
                        std::atomic<long>* through_library, Failures* failures) {
  Capture c;
  for (long i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
    c.method = kMethods[(i + thread) % 3];
    c.n = 0;
    std::vector<std::string> want;
    void* lib = nullptr;
    if (i % 4 == 0 && gate->Enter()) {
      lib = dlopen(STRESS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) {
        failures->Add(std::string("dlopen: ") + dlerror());
        gate->Leave();
        return;
      }
      auto entry = reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry"));
      stress_through_library(entry, &c);
      want = {"stress_capture_callback", "chain_lib_middle", "chain_lib_entry",
              "stress_through_library"};
      through_library->fetch_add(1, std::memory_order_relaxed);
    } else {
      stress_own_level1(&c);
      want = {"stress_own_level2", "stress_own_level1"};
    }
    // Named while the library is still open.
    auto names = FrameNames(c.pcs, c.n, false);
    bool right = names.size() > want.size();
    for (size_t k = 0; right && k < want.size(); ++k) right = names[k] == want[k];
    std::string unknown;
    if (right && !AllKnown(c.pcs, c.n, &unknown)) right = false;
    if (lib != nullptr) {
      dlclose(lib);
      gate->Leave();
    }
    if (!right) {
      failures->Add(std::string(MethodName(c.method)) + " (returned " + std::to_string(c.n) +
                    (c.n < 0 ? std::string(", ") + stackwalk_strerror(c.n) : std::string()) +
                    "): " + Join(names) + " " + unknown);
    }
    captures->fetch_add(1, std::memory_order_relaxed);
  }
}

TEST(Stress, SixteenThreadsCaptureWhileALibraryIsLoadedAndUnloaded) {
  const auto deadline = Deadline(StressSeconds());
  std::atomic<long> captures{0}, through_library{0};
  Failures failures;
  LibraryGate gate;
  std::atomic<bool> stop{false};
  long cycles = 0, unloaded = 0, refreshes = 0;
  // The loader, each cycle: lets the capturing threads use the library for a millisecond, closes
  // the gate and waits for them to let go (the library is then unloaded), loads it afresh, calls
  // through it and unloads it again. stackwalk's module map is brought up to date now and then,
  // so captures meet both a library the map knows and one loaded since.
  std::thread loader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      gate.closing = false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      gate.closing = true;
      while (gate.holders.load() != 0) std::this_thread::yield();
      for (int pass = 0; pass < 2; ++pass) {
        void* still = dlopen(STRESS_LIB_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (still != nullptr) {
          dlclose(still);
        } else if (pass == 0) {
          ++unloaded;
        }
        if (pass == 1) break;
        void* lib = dlopen(STRESS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
          failures.Add(std::string("loader dlopen: ") + dlerror());
          return;
        }
        Capture c;
        c.method = kMethods[cycles % 3];
        stress_through_library(
            reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry")), &c);
        auto names = FrameNames(c.pcs, c.n, false);
        if (names.size() < 4 || names[1] != "chain_lib_middle" || names[2] != "chain_lib_entry") {
          failures.Add(std::string("loader, ") + MethodName(c.method) + ": " + Join(names));
        }
        dlclose(lib);
      }
      if (++cycles % 4 == 0 && stackwalk_refresh_modules() >= 0) ++refreshes;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back(CaptureLoop, t, deadline, &gate, &captures, &through_library, &failures);
  }
  for (auto& t : threads) t.join();
  stop = true;
  loader.join();
  std::printf("%ld captures (%ld through the library), %ld load/unload cycles (%ld found it "
              "unloaded), %ld module map refreshes\n",
              captures.load(), through_library.load(), cycles, unloaded, refreshes);
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
  EXPECT_GT(through_library.load(), 0);
  EXPECT_GT(unloaded, 0) << "the library was never unloaded: the test did not test that";
}

// ---- a 10 kHz profiling timer on a thread that mallocs, dlopens, recurses and sorts ----

namespace {

constexpr int kSampleFrames = 32;
constexpr int kMaxSamples = 200000;

struct Sample {
  std::atomic<bool> complete;
  stackwalk_method method;
  int n;
  void* pcs[kSampleFrames];
};

Sample* g_samples;  // kMaxSamples, allocated by the test before the timer starts
std::atomic<int> g_claimed{0};
std::atomic<long> g_deliveries{0};

void OnProfile(int, siginfo_t*, void* uc) {
  const int saved_errno = errno;
  const long delivery = g_deliveries.fetch_add(1, std::memory_order_relaxed);
  const stackwalk_method method = kMethods[delivery % 3];
  const int i = g_claimed.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) {
    Sample& s = g_samples[i];
    s.method = method;
    s.n = stackwalk_backtrace_from_context(uc, s.pcs, kSampleFrames, method);
    s.complete.store(true, std::memory_order_release);
  } else {
    void* pcs[kSampleFrames];  // the slots are full: still capture, for the stress
    stackwalk_backtrace_from_context(uc, pcs, kSampleFrames, method);
  }
  errno = saved_errno;
}

unsigned long g_sink;  // wraps: the values are hash-like

// Where the workload's dlopen found the library each time (its constructors run from there, and
// samples land in them): those frames are named by range after it is gone.
uintptr_t g_chain_lib_biases[4096];
int g_chain_lib_bias_count;

void NoteChainLibBias(void* lib) {
  link_map* map = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return;
  for (int i = 0; i < g_chain_lib_bias_count; ++i) {
    if (g_chain_lib_biases[i] == map->l_addr) return;
  }
  if (g_chain_lib_bias_count < 4096) g_chain_lib_biases[g_chain_lib_bias_count++] = map->l_addr;
}

// The extent of the library's PT_LOAD segments above its load bias.
uintptr_t ChainLibExtent() {
  void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 0;
  link_map* map = nullptr;
  dlinfo(lib, RTLD_DI_LINKMAP, &map);
  struct Query {
    uintptr_t bias;
    uintptr_t extent;
  } query{map != nullptr ? map->l_addr : 0, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        if (info->dlpi_addr != q->bias) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD) q->extent = std::max<uintptr_t>(q->extent, ph.p_vaddr + ph.p_memsz);
        }
        return 1;
      },
      &query);
  dlclose(lib);
  return query.extent;
}

}  // namespace

extern "C" {

// Unsigned arithmetic: the generator wraps, which signed overflow may not (UBSan builds).
__attribute__((noinline)) unsigned long prof_leaf(unsigned long x) {
  for (int i = 0; i < 32; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

__attribute__((noinline)) unsigned long prof_recurse(int depth, unsigned long x) {
  unsigned long r = depth == 0 ? prof_leaf(x) : prof_recurse(depth - 1, x + depth);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int prof_compare(const void* a, const void* b) {
  long x = prof_leaf(*static_cast<const long*>(a)) & 0xff;
  long y = prof_leaf(*static_cast<const long*>(b)) & 0xff;
  return (x > y) - (x < y);
}

__attribute__((noinline)) long prof_sort() {
  long v[64];
  for (int i = 0; i < 64; ++i) v[i] = (i * 7919) % 64;
  qsort(v, 64, sizeof(long), prof_compare);
  __asm__ volatile("" ::: "memory");
  return v[0];
}

__attribute__((noinline)) long prof_malloc() {
  long sum = 0;
  void* blocks[16];
  for (int i = 0; i < 16; ++i) {
    blocks[i] = std::malloc(16 + i * 97);
    sum += reinterpret_cast<uintptr_t>(blocks[i]) & 0xf;
  }
  for (void* b : blocks) std::free(b);
  __asm__ volatile("" ::: "memory");
  return sum;
}

__attribute__((noinline)) long prof_dlopen() {
  void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return -1;
  NoteChainLibBias(lib);
  long r = dlsym(lib, "chain_lib_entry") != nullptr;
  dlclose(lib);
  __asm__ volatile("" ::: "memory");
  return r;
}

// Called back from the fixture library: samples here must name chain_lib_middle as the caller.
__attribute__((noinline)) int prof_library_callback(void* arg) {
  long r = prof_recurse(4, reinterpret_cast<uintptr_t>(arg));
  __asm__ volatile("" ::: "memory");
  return static_cast<int>(r & 1);
}

__attribute__((noinline)) long prof_round(chain_lib_entry_fn entry, int round) {
  long r = 0;
  switch (round % 5) {
    case 0: r = prof_malloc(); break;
    case 1: r = prof_dlopen(); break;
    case 2: r = prof_recurse(16, round); break;
    case 3: r = prof_sort(); break;
    default: r = entry(prof_library_callback, reinterpret_cast<void*>(round)); break;
  }
  __asm__ volatile("" ::: "memory");
  return r;
}

}  // extern "C"

// The callers a sample in one of the fixture's functions must show next (table methods only: the
// frame-pointer method cannot see a caller from a prologue).
static bool RightCallers(const std::vector<std::string>& names) {
  const std::string& f = names[0];
  auto next = [&](size_t k) { return k < names.size() ? names[k] : std::string("<end>"); };
  if (f == "prof_leaf") {
    const std::string& caller = next(1);
    return caller == "prof_recurse" || caller == "prof_compare";
  }
  if (f == "prof_recurse") {
    size_t k = 1;
    while (next(k) == "prof_recurse") ++k;
    return next(k) == "prof_round" || next(k) == "prof_library_callback";
  }
  if (f == "prof_library_callback") {
    return next(1) == "chain_lib_middle" && next(2) == "chain_lib_entry" && next(3) == "prof_round";
  }
  if (f == "prof_compare") {
#if defined(STACKWALK_SANITIZE_BUILD)
    // Through the sanitizer runtime's qsort interceptor, which sorts by itself or calls qsort_r.
    return ContainsInOrder(names, {"prof_compare", "prof_sort", "prof_round"});
#else
    // Through glibc's qsort (msort's local helpers, then qsort_r) to prof_sort.
    return ContainsInOrder(names, {"prof_compare", "qsort_r", "prof_sort", "prof_round"});
#endif
  }
  if (f == "prof_sort" || f == "prof_malloc" || f == "prof_dlopen") return next(1) == "prof_round";
  if (f == "prof_round") return next(1).find("TestBody") != std::string::npos;
  return true;  // libc, the loader: only plausibility
}

TEST(Stress, ProfilingTimerSamplesWhileTheProgramMallocsLoadsRecursesAndSorts) {
  std::vector<Sample> samples(kMaxSamples);
  g_samples = samples.data();
  g_claimed = 0;
  g_deliveries = 0;
  void* lib = dlopen(STRESS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry"));
  ASSERT_NE(entry, nullptr);

  struct sigaction sa {}, old{};
  sa.sa_sigaction = OnProfile;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGPROF, &sa, &old), 0);
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGPROF;
  event.sigev_notify_thread_id = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t timer;
  ASSERT_EQ(timer_create(CLOCK_MONOTONIC, &event, &timer), 0);
  itimerspec every{{0, 100000}, {0, 100000}};  // 10 kHz
  ASSERT_EQ(timer_settime(timer, 0, &every, nullptr), 0);

  // The set time at least, then on until enough samples were taken for ~100 to land in the
  // fixture's functions (about one in 20 does): a loaded machine or qemu takes fewer a second.
  // Bounded, so that a machine too slow for that fails the count below instead of hanging.
  constexpr int kEnoughSamples = 4000;
  const auto deadline = Deadline(StressSeconds());
  const auto hard_deadline = Deadline(8 * StressSeconds());
  long rounds = 0;
  for (;; ++rounds) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= hard_deadline) break;
    if (now >= deadline && g_claimed.load(std::memory_order_relaxed) >= kEnoughSamples) break;
    g_sink += prof_round(entry, rounds);
  }

  timer_delete(timer);
  sigaction(SIGPROF, &old, nullptr);

  std::vector<std::pair<uintptr_t, uintptr_t>> chain_lib_ranges = AnonymousCode();
  const uintptr_t extent = ChainLibExtent();
  for (int i = 0; i < g_chain_lib_bias_count; ++i) {
    chain_lib_ranges.push_back({g_chain_lib_biases[i], g_chain_lib_biases[i] + extent});
  }
  int checked = 0, wrong = 0, unknown = 0, errors = 0, incomplete = 0;
  std::string first_wrong, first_unknown;
  const int stored = std::min(g_claimed.load(), kMaxSamples);
  for (int i = 0; i < stored; ++i) {
    Sample& s = samples[i];
    if (!s.complete.load(std::memory_order_acquire)) {
      ++incomplete;
      continue;
    }
    if (s.n <= 0) {
      ++errors;
      continue;
    }
    std::string where;
    if (!AllKnown(s.pcs, s.n, &where, chain_lib_ranges)) {
      if (++unknown == 1) {
        first_unknown = std::string(MethodName(s.method)) + ": " + where + " in " +
                        Join(FrameNames(s.pcs, s.n, true));
      }
      continue;
    }
    if (s.method == STACKWALK_FP) continue;
#if defined(__arm__)
    if (OutsideEhabiBody(s.pcs[0])) continue;
#endif
    auto names = FrameNames(s.pcs, s.n, true);
    if (names[0].rfind("prof_", 0) != 0) continue;
    // A full buffer ends the walk early: only complete chains are checked.
    ++checked;
    if (s.n < kSampleFrames && !RightCallers(names)) {
      if (++wrong == 1) first_wrong = std::string(MethodName(s.method)) + ": " + Join(names);
    }
  }
  dlclose(lib);
  ASSERT_GT(extent, 0u);
  std::printf("%ld rounds, %ld timer signals, %d samples kept: %d in the fixture's functions "
              "checked (%d wrong), %d with an unknown frame, %d errors, %d incomplete\n",
              rounds, g_deliveries.load(), stored, checked, wrong, unknown, errors, incomplete);
  EXPECT_EQ(incomplete, 0);
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(unknown, 0) << first_unknown;
  EXPECT_EQ(wrong, 0) << first_wrong;
  EXPECT_GT(checked, 100) << "too few samples landed in the fixture's functions";
}

// ---- fork while other threads capture ----

static volatile sig_atomic_t g_child_signal_frames;

extern "C" __attribute__((noinline)) int stress_child_capture(Capture* c) {
  c->n = stackwalk_backtrace(c->pcs, kMax, c->method);
  __asm__ volatile("" ::: "memory");
  return c->n;
}

// The range [start, end) of an exported function of this program, by its symbol's size.
static bool FunctionRange(void* fn, uintptr_t* start, uintptr_t* end) {
  Dl_info info;
  void* sym_entry = nullptr;
  if (dladdr1(fn, &info, &sym_entry, RTLD_DL_SYMENT) == 0 || sym_entry == nullptr) return false;
  const auto* sym = static_cast<const ElfW(Sym)*>(sym_entry);
  *start = reinterpret_cast<uintptr_t>(info.dli_saddr) & ~uintptr_t{1};
  *end = *start + sym->st_size;
  return sym->st_size > 0;
}

TEST(Stress, ForkWhileThreadsCaptureLeavesAWorkingChild) {
  uintptr_t lo = 0, hi = 0;
  ASSERT_TRUE(FunctionRange(reinterpret_cast<void*>(&stress_child_capture), &lo, &hi));
  const auto deadline = Deadline(StressSeconds() / 2);
  std::atomic<bool> stop{false};
  std::atomic<long> captures{0};
  Failures failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      // Each new thread finds its stack once (a /proc read): fork lands in those too.
      Capture c;
      for (long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        c.method = kMethods[(i + t) % 3];
        stress_own_level1(&c);
        captures.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // And a thread that keeps the module map changing.
  threads.emplace_back([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      void* lib = dlopen(STRESS_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) dlclose(lib);
      stackwalk_refresh_modules();
    }
  });
  int forks = 0, bad_children = 0;
  std::string first_bad;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t child = fork();
    if (child == 0) {
      // In the child only this thread exists, and only async-signal-safe calls are allowed
      // (glibc's loader lock may have been taken by the parent's dlopen at the fork, which
      // makes dl_iterate_phdr, hence stackwalk_refresh_modules and dladdr, hang there). Capture
      // with every method, from here and from a signal handler, and check the first PC without
      // the loader: it must lie in stress_child_capture.
      alarm(20);
      int code = 0;
      for (stackwalk_method m : kMethods) {
        Capture c;
        c.method = m;
        stress_child_capture(&c);
        const uintptr_t pc = c.n > 0 ? reinterpret_cast<uintptr_t>(c.pcs[0]) : 0;
        if (c.n < 3 || pc < lo || pc >= hi) code = 10 + static_cast<int>(m);
      }
      struct sigaction on_usr1 {};
      on_usr1.sa_sigaction = [](int, siginfo_t*, void* uc) {
        void* pcs[kMax];
        g_child_signal_frames = stackwalk_backtrace_from_context(uc, pcs, kMax, STACKWALK_AUTO);
      };
      on_usr1.sa_flags = SA_SIGINFO;
      sigaction(SIGUSR1, &on_usr1, nullptr);
      raise(SIGUSR1);
      if (g_child_signal_frames < 3) code = 20;
      _exit(code);
    }
    ASSERT_GT(child, 0);
    ++forks;
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (++bad_children == 1) {
        first_bad = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                        : "exit " + std::to_string(WEXITSTATUS(status));
      }
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  std::printf("%d forks while %ld captures ran, %d bad children\n", forks, captures.load(),
              bad_children);
  EXPECT_EQ(bad_children, 0) << first_bad << " (signal 14: the child hung)";
  EXPECT_GT(forks, 1);
}
