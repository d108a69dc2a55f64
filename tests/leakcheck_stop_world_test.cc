// StoppedWorld (leakcheck/scan/stop_world.h), both methods forced, on real threads: registers
// held by a hand-written loop, threads blocked in read(), pthread_cond_wait and nanosleep, a
// thread with every signal blocked, threads created and processes forked while the world stops.
// Nothing is asserted while the world is stopped (an assertion's failure allocates); the slots
// stay readable after Resume.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "leakcheck/scan/stop_world.h"
#include "leakcheck/scan/stop_world_internal.h"

extern "C" void register_hold(uintptr_t value, const volatile int* flag);

namespace stackwalk::leakcheck {
namespace {

constexpr int kTimeoutMs = 5000;

int Tid() { return static_cast<int>(syscall(SYS_gettid)); }

uintptr_t ThreadPointer() { return reinterpret_cast<uintptr_t>(__builtin_thread_pointer()); }

const char* Name(StopRequest request) {
  return request == StopRequest::kPtrace ? "ptrace" : "signal";
}

// What a thread knows of itself, read by itself before the world stops.
struct Self {
  std::atomic<int> tid{0};
  uintptr_t thread_pointer = 0;
  uintptr_t stack_lo = 0;
  uintptr_t stack_hi = 0;
  void Record() {
    pthread_attr_t attr;
    pthread_getattr_np(pthread_self(), &attr);
    void* lo = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &lo, &size);
    pthread_attr_destroy(&attr);
    stack_lo = reinterpret_cast<uintptr_t>(lo);
    stack_hi = stack_lo + size;
    thread_pointer = ThreadPointer();
#if defined(__x86_64__)
    EXPECT_EQ(thread_pointer, reinterpret_cast<uintptr_t>(pthread_self()));
#endif
    tid.store(Tid(), std::memory_order_release);
  }
  int WaitTid() const {
    while (tid.load(std::memory_order_acquire) == 0) sched_yield();
    return tid.load(std::memory_order_acquire);
  }
};

// Waits until the thread sleeps in the kernel (state S in /proc/self/task/TID/stat).
void WaitSleeping(int tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
  for (;;) {
    char text[512] = {};
    if (FILE* f = fopen(path.c_str(), "r")) {
      size_t n = fread(text, 1, sizeof(text) - 1, f);
      fclose(f);
      text[n] = '\0';
      const char* close = strrchr(text, ')');
      if (close != nullptr && close[1] == ' ' && close[2] == 'S') return;
    }
    usleep(1000);
  }
}

const StoppedThread* Find(const StoppedWorld& world, int tid) {
  for (size_t i = 0; i < world.size(); ++i) {
    if (world.thread(i).tid == tid) return &world.thread(i);
  }
  return nullptr;
}

class StopWorldTest : public ::testing::TestWithParam<StopRequest> {
 protected:
  // Stops the world with the method under test; false (and the test skipped) if ptrace is
  // refused here, saying why.
  bool StopOrSkip(StoppedWorld& world) {
    if (world.Stop(GetParam(), kTimeoutMs, nullptr, 0)) {
      EXPECT_EQ(world.method(),
                GetParam() == StopRequest::kPtrace ? StopMethod::kPtrace : StopMethod::kSignal);
      return true;
    }
    if (GetParam() == StopRequest::kPtrace) {
      skip_reason_ = world.fallback_reason();
      return false;
    }
    ADD_FAILURE() << "signal stop failed: " << world.fallback_reason();
    return false;
  }
  std::string skip_reason_;
};

#define STOP_OR_SKIP(world)                                            \
  if (!StopOrSkip(world)) {                                            \
    if (!skip_reason_.empty()) GTEST_SKIP() << "ptrace refused here: " << skip_reason_; \
    return;                                                            \
  }

TEST_P(StopWorldTest, CalleeSavedRegisterValueIsInRegs) {
  static constexpr uintptr_t kValue = sizeof(uintptr_t) == 8
                                          ? static_cast<uintptr_t>(0x5eed5eed12345eedull)
                                          : static_cast<uintptr_t>(0x5eed3eedul);
  volatile int flag = 0;
  Self self;
  std::thread holder([&] {
    self.Record();
    register_hold(kValue, &flag);
  });
  const int tid = self.WaitTid();
  usleep(20000);  // let it reach the loop (the value is in the registers only there)
  StoppedWorld world;
  bool stopped = StopOrSkip(world);
  if (stopped) world.Resume();
  flag = 1;
  holder.join();
  if (!stopped) {
    if (!skip_reason_.empty()) GTEST_SKIP() << "ptrace refused here: " << skip_reason_;
    return;
  }
  const StoppedThread* thread = Find(world, tid);
  ASSERT_NE(thread, nullptr);
  ASSERT_EQ(thread->state, StoppedThread::State::kStopped) << thread->why;
  int hits = 0;
  for (uint32_t at = 0; at + sizeof(uintptr_t) <= thread->reg_bytes; at += sizeof(uintptr_t)) {
    uintptr_t word;
    std::memcpy(&word, thread->regs + at, sizeof(word));
    hits += word == kValue;
  }
  // Every callee-saved register holds it: x86_64 5, aarch64 10, arm 8.
  EXPECT_GE(hits, 5) << Name(GetParam()) << " reg_bytes " << thread->reg_bytes;
  EXPECT_NE(thread->sp, 0u);
}

TEST_P(StopWorldTest, BlockedThreadsStopWithTheirStackAndThreadPointer) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  Self reader_self, cond_self, sleeper_self;
  std::atomic<long> read_result{-2};
  std::atomic<int> read_errno{0};
  std::thread reader([&] {
    reader_self.Record();
    char c = 0;
    const long got = read(pipe_fds[0], &c, 1);
    read_errno = got < 0 ? errno : 0;
    read_result = got;
  });
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  bool go = false;
  std::thread waiter([&] {
    cond_self.Record();
    pthread_mutex_lock(&mutex);
    while (!go) pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
  });
  std::atomic<bool> wake{false};
  std::thread sleeper([&] {
    sleeper_self.Record();
    while (!wake.load()) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, nullptr);  // EINTR from the signal method is allowed (signal(7))
    }
  });
  Self* selves[] = {&reader_self, &cond_self, &sleeper_self};
  for (Self* self : selves) WaitSleeping(self->WaitTid());

  StoppedWorld world;
  const bool stopped = StopOrSkip(world);
  world.Resume();
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  pthread_mutex_lock(&mutex);
  go = true;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&mutex);
  wake = true;
  reader.join();
  waiter.join();
  sleeper.join();
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  EXPECT_EQ(read_result.load(), 1) << "errno " << read_errno.load();
  if (!stopped) {
    if (!skip_reason_.empty()) GTEST_SKIP() << "ptrace refused here: " << skip_reason_;
    return;
  }
  for (Self* self : selves) {
    const StoppedThread* thread = Find(world, self->tid.load());
    ASSERT_NE(thread, nullptr) << self->tid.load();
    EXPECT_EQ(thread->state, StoppedThread::State::kStopped) << thread->why;
    EXPECT_GE(thread->sp, self->stack_lo);
    EXPECT_LT(thread->sp, self->stack_hi);
    EXPECT_EQ(thread->thread_pointer, self->thread_pointer);
    EXPECT_GT(thread->reg_bytes, 0u);
    if (GetParam() == StopRequest::kSignal) {
      EXPECT_GE(thread->frame_lo, self->stack_lo);
      EXPECT_LT(thread->frame_lo, thread->sp);
    } else {
      EXPECT_EQ(thread->frame_lo, 0u);
    }
  }
  EXPECT_EQ(Find(world, Tid()), nullptr) << "the caller is not stopped";
}

TEST_P(StopWorldTest, ThreadWithEverySignalBlocked) {
  std::atomic<bool> done{false};
  Self self;
  std::thread blocked([&] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, nullptr);
    self.Record();
    while (!done.load()) usleep(1000);
  });
  const int tid = self.WaitTid();
  StoppedWorld world;
  const bool stopped = StopOrSkip(world);
  world.Resume();
  done = true;
  blocked.join();
  if (!stopped) {
    if (!skip_reason_.empty()) GTEST_SKIP() << "ptrace refused here: " << skip_reason_;
    return;
  }
  const StoppedThread* thread = Find(world, tid);
  ASSERT_NE(thread, nullptr);
  if (GetParam() == StopRequest::kSignal) {
    EXPECT_EQ(thread->state, StoppedThread::State::kUnstopped);
    EXPECT_STREQ(thread->why, "signal blocked");
  } else {
    EXPECT_EQ(thread->state, StoppedThread::State::kStopped) << thread->why;
    EXPECT_EQ(thread->thread_pointer, self.thread_pointer);
  }
}

TEST_P(StopWorldTest, ThreadsCreatedDuringStopAreAllListed) {
  std::atomic<bool> done{false};
  std::vector<std::thread> made;
  made.reserve(4096);
  // The first 8 threads say they run (their tids kept); the creator goes on making more.
  std::atomic<int> started{0};
  std::atomic<int> first_tids[8] = {};
  std::atomic<int> creator_tid{0};
  std::thread creator([&] {
    creator_tid = Tid();
    while (!done.load() && made.size() < 4000) {
      made.emplace_back([&] {
        const int n = started.fetch_add(1);
        if (n < 8) first_tids[n] = Tid();
        while (!done.load()) usleep(500);
      });
    }
  });
  while (started.load() < 8) sched_yield();
  for (auto& tid : first_tids) {
    while (tid.load() == 0) sched_yield();
  }
  struct Tids {
    int32_t tids[8192];
    size_t count = 0;
    static void Add(int tid, void* context) {
      auto* list = static_cast<Tids*>(context);
      if (list->count < 8192) list->tids[list->count++] = tid;
    }
  };
  auto* live = new Tids;
  StoppedWorld world;
  const bool stopped = StopOrSkip(world);
  if (stopped) stop_internal::ForEachTask(0, &Tids::Add, live);  // while stopped: no malloc
  world.Resume();
  done = true;
  creator.join();
  for (auto& t : made) t.join();
  if (!stopped) {
    delete live;
    if (!skip_reason_.empty()) GTEST_SKIP() << "ptrace refused here: " << skip_reason_;
    return;
  }
  const int caller = Tid();
  // Under qemu-user the creator, caught inside qemu's clone (asleep, the host's mask all
  // blocked), is named unstopped ("signal blocked") and never signaled, as a thread that holds
  // the signal off must be: it goes on making threads after the stop. Only a stopped creator
  // makes every live thread one the stop listed.
  const StoppedThread* creator_seen = Find(world, creator_tid.load());
  ASSERT_NE(creator_seen, nullptr);
  const bool creator_stopped = creator_seen->state == StoppedThread::State::kStopped;
  if (!creator_stopped) {
    EXPECT_TRUE(std::string(creator_seen->why) == "timeout" ||
                std::string(creator_seen->why) == "signal blocked")
        << creator_seen->why;
  }
  size_t stopped_count = 0;
  for (size_t i = 0; i < live->count; ++i) {
    if (live->tids[i] == caller) continue;
    const StoppedThread* thread = Find(world, live->tids[i]);
    if (thread == nullptr && !creator_stopped) continue;  // made after the stop
    ASSERT_NE(thread, nullptr) << "tid " << live->tids[i] << " alive but not listed";
    stopped_count += thread->state == StoppedThread::State::kStopped;
    // One created an instant before and not yet scheduled (signals still blocked by
    // pthread_create; on a loaded machine for longer than the timeout) may stay running: named.
    if (thread->state == StoppedThread::State::kUnstopped) {
      EXPECT_TRUE(std::string(thread->why) == "timeout" ||
                  std::string(thread->why) == "signal blocked")
          << thread->why;
    }
  }
  // The threads that were running their loop before the Stop are stopped.
  for (auto& tid : first_tids) {
    const StoppedThread* thread = Find(world, tid.load());
    ASSERT_NE(thread, nullptr);
    EXPECT_EQ(thread->state, StoppedThread::State::kStopped) << thread->why;
  }
  EXPECT_GE(stopped_count, 8u);
  delete live;
}

TEST_P(StopWorldTest, ForkingThreadSurvivesRepeatedStops) {
  std::atomic<bool> done{false};
  std::atomic<int> forks{0};
  std::atomic<int> bad{0};
  std::thread forker([&] {
    while (!done.load()) {
      const pid_t child = fork();
      if (child == 0) _exit(0);
      if (child < 0) {
        bad.fetch_add(1);
        continue;
      }
      int status = 0;
      pid_t got;
      while ((got = waitpid(child, &status, 0)) < 0 && errno == EINTR) {
      }
      if (got != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) bad.fetch_add(1);
      forks.fetch_add(1);
    }
  });
  while (forks.load() == 0) sched_yield();
  int stops = 0;
  std::string refused;
  for (int i = 0; i < 200; ++i) {
    StoppedWorld world;
    if (!world.Stop(GetParam(), kTimeoutMs, nullptr, 0)) {
      refused = world.fallback_reason();
      break;
    }
    ++stops;
    world.Resume();
  }
  done = true;
  forker.join();
  if (!refused.empty() && GetParam() == StopRequest::kPtrace && stops == 0) {
    GTEST_SKIP() << "ptrace refused here: " << refused;
  }
  EXPECT_EQ(stops, 200) << refused;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(forks.load(), 0);
}

// The program's own signals survive the stops: a thread taking a flood of queued real-time
// signals while the world is stopped and resumed over and over gets every one (ptrace: a
// signal held in a signal-delivery-stop is re-injected at detach).
std::atomic<int> g_program_signals{0};
void CountSignal(int) { g_program_signals.fetch_add(1); }

TEST_P(StopWorldTest, ProgramSignalsAreNotLost) {
  const int sig = SIGRTMIN + 1;
  struct sigaction action = {}, old = {};
  action.sa_handler = &CountSignal;
  action.sa_flags = SA_RESTART;
  ASSERT_EQ(sigaction(sig, &action, &old), 0);
  g_program_signals = 0;
  std::atomic<bool> done{false};
  Self self;
  std::thread target([&] {
    self.Record();
    while (!done.load()) usleep(100);
  });
  const int tid = self.WaitTid();
  // The sender sends until 200 stops were made.
  std::atomic<bool> enough{false};
  std::atomic<int> sent{0};
  std::thread sender([&] {
    while (!enough.load()) {
      if (syscall(SYS_tgkill, getpid(), tid, sig) == 0) {
        sent.fetch_add(1);
      } else {
        sched_yield();  // the queue is full: let the target take some
      }
    }
  });
  while (sent.load() == 0) sched_yield();
  std::string refused;
  int stops = 0;
  for (; stops < 200; ++stops) {
    StoppedWorld world;
    if (!world.Stop(GetParam(), kTimeoutMs, nullptr, 0)) {
      refused = world.fallback_reason();
      break;
    }
    world.Resume();
  }
  enough = true;
  sender.join();
  const int kSignals = sent.load();
  // Every signal sent is taken, unless one was lost (then this waits out its bound and fails).
  for (int i = 0; i < 30000 && g_program_signals.load() < kSignals; ++i) usleep(1000);
  done = true;
  target.join();
  sigaction(sig, &old, nullptr);
  if (stops == 0 && GetParam() == StopRequest::kPtrace && !refused.empty()) {
    GTEST_SKIP() << "ptrace refused here: " << refused;
  }
  EXPECT_TRUE(refused.empty()) << refused;
  EXPECT_GT(stops, 0);
  EXPECT_EQ(g_program_signals.load(), kSignals) << "after " << stops << " stops";
}

INSTANTIATE_TEST_SUITE_P(Methods, StopWorldTest,
                         ::testing::Values(StopRequest::kPtrace, StopRequest::kSignal),
                         [](const ::testing::TestParamInfo<StopRequest>& info) {
                           return std::string(Name(info.param));
                         });

// kAuto takes ptrace where it may run, else signals and says why. Under qemu-user ptrace cannot
// run (its clone refuses CLONE_VM without the thread flags, its ptrace is ENOSYS).
TEST(StopWorldAuto, PtraceWhereAllowedElseSignalWithReason) {
  std::atomic<bool> done{false};
  std::thread other([&] {
    while (!done.load()) usleep(1000);
  });
  StoppedWorld forced;
  const bool ptrace_ok = forced.Stop(StopRequest::kPtrace, kTimeoutMs, nullptr, 0);
  const std::string forced_reason = forced.fallback_reason();
  forced.Resume();
  StoppedWorld world;
  const bool stopped = world.Stop(StopRequest::kAuto, kTimeoutMs, nullptr, 0);
  world.Resume();
  done = true;
  other.join();
  ASSERT_TRUE(stopped) << world.fallback_reason();
  if (ptrace_ok) {
    EXPECT_EQ(forced.method(), StopMethod::kPtrace);
    EXPECT_EQ(world.method(), StopMethod::kPtrace);
    EXPECT_STREQ(world.fallback_reason(), "");
  } else {
    EXPECT_EQ(forced.method(), StopMethod::kNone);
    EXPECT_NE(forced_reason, "");
    EXPECT_EQ(world.method(), StopMethod::kSignal);
    EXPECT_NE(std::string(world.fallback_reason()), "");
    std::printf("ptrace refused: %s (auto fell back: %s)\n", forced_reason.c_str(),
                world.fallback_reason());
  }
#if defined(__x86_64__)
  // The native build runs on the host: ptrace must work here unless the host refuses it.
  if (!ptrace_ok) GTEST_SKIP() << "ptrace refused on this host: " << forced_reason;
#endif
}

// The skip list: a named thread is left running.
TEST(StopWorldSkip, SkippedThreadIsNotStopped) {
  std::atomic<bool> done{false};
  Self self;
  std::thread other([&] {
    self.Record();
    while (!done.load()) usleep(1000);
  });
  const int32_t skip = self.WaitTid();
  StoppedWorld world;
  ASSERT_TRUE(world.Stop(StopRequest::kSignal, kTimeoutMs, &skip, 1)) << world.fallback_reason();
  world.Resume();
  done = true;
  other.join();
  EXPECT_EQ(Find(world, skip), nullptr);
}

// The pause: Stop+Resume wall time with 1, 8 and 64 other threads blocked in a condition
// variable, each method, median and minimum of 21 (printed; the figures are not asserted).
TEST(StopWorldPause, StopResumeFigures) {
  for (StopRequest request : {StopRequest::kPtrace, StopRequest::kSignal}) {
    for (int threads : {1, 8, 64}) {
      pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
      pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
      bool go = false;
      int waiting = 0;
      std::vector<std::thread> others;
      for (int i = 0; i < threads; ++i) {
        others.emplace_back([&] {
          pthread_mutex_lock(&mutex);
          ++waiting;
          while (!go) pthread_cond_wait(&cond, &mutex);
          pthread_mutex_unlock(&mutex);
        });
      }
      // Every thread waiting (it released the mutex inside pthread_cond_wait) before the first
      // stop: a thread still starting runs with every signal blocked (under qemu, long enough to
      // be named unstopped).
      for (bool all = false; !all;) {
        pthread_mutex_lock(&mutex);
        all = waiting == threads;
        pthread_mutex_unlock(&mutex);
        if (!all) sched_yield();
      }
      std::vector<double> micros;
      std::string refused;
      for (int rep = 0; rep < 21; ++rep) {
        StoppedWorld world;
        const uint64_t start = stop_internal::MonotonicNs();
        if (!world.Stop(request, kTimeoutMs, nullptr, 0)) {
          refused = world.fallback_reason();
          break;
        }
        world.Resume();
        micros.push_back((stop_internal::MonotonicNs() - start) / 1000.0);
        size_t stopped = 0;
        for (size_t i = 0; i < world.size(); ++i) {
          stopped += world.thread(i).state == StoppedThread::State::kStopped;
        }
        EXPECT_GE(stopped, static_cast<size_t>(threads));
      }
      pthread_mutex_lock(&mutex);
      go = true;
      pthread_cond_broadcast(&cond);
      pthread_mutex_unlock(&mutex);
      for (auto& t : others) t.join();
      if (!refused.empty()) {
        std::printf("pause %s: refused (%s)\n", Name(request), refused.c_str());
        break;
      }
      std::sort(micros.begin(), micros.end());
      std::printf("pause %-6s %2d threads: median %8.1f us, min %8.1f us\n", Name(request),
                  threads, micros[micros.size() / 2], micros[0]);
    }
  }
}

}  // namespace
}  // namespace stackwalk::leakcheck
