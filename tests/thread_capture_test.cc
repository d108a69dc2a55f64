// The other threads of a crash snapshot (issue 20), in this process: CaptureOtherThreads parks a
// thread in the capture handler and keeps its registers, gives up on one that blocks the signal
// (which, unblocked later, finds the capture over and runs on) and, after the wait, on one held
// from running by a tracer, and WriteCrashSnapshot writes
// them, each stack within its own bound and the total; the reader gives back tids, names, states,
// registers and stacks, and a snapshot cut at every byte of its thread sections is read without
// a crash. (Whole crashes and their unwinding: snapshot_threads_test.py.)
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/snapshot_format.h"
#include "crash/snapshot_writer.h"
#include "crash/thread_capture.h"
#include "gtest/gtest.h"
#include "remote/snapshot_reader.h"

namespace stackwalk::internal {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_ready{0};

struct Worker {
  const char* name;
  bool block_signals;
  pthread_t thread{};
  std::atomic<int> tid{0};
  uint64_t stack_lo = 0, stack_hi = 0;  // its stack, from pthread_getattr_np
};

void* Park(void* arg) {
  Worker& w = *static_cast<Worker*>(arg);
  pthread_setname_np(pthread_self(), w.name);
  pthread_attr_t attr;
  void* base;
  size_t size;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  w.stack_lo = reinterpret_cast<uintptr_t>(base);
  w.stack_hi = w.stack_lo + size;
  sigset_t all, old;
  sigfillset(&all);
  if (w.block_signals) pthread_sigmask(SIG_BLOCK, &all, &old);
  w.tid = static_cast<int>(syscall(SYS_gettid));
  g_ready.fetch_add(1);
  while (!g_stop.load()) usleep(1000);
  // The capture gave up on it: the signal pending since then is delivered now, and its
  // handler must return at once (the join below would hang otherwise).
  if (w.block_signals) pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return nullptr;
}

std::vector<unsigned char> Written(const SnapshotOtherThreads& others, SnapshotWritten* w) {
  int fd = memfd_create("thread_capture_test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  ucontext_t uc;
  getcontext(&uc);
  *w = WriteCrashSnapshot(fd, SIGSEGV, nullptr, &uc, 4096, others);
  std::vector<unsigned char> bytes(static_cast<size_t>(lseek(fd, 0, SEEK_END)));
  EXPECT_EQ(pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return bytes;
}

// Lets the parked threads go however the test ends.
struct ReleaseAtEnd {
  ~ReleaseAtEnd() { ReleaseThreads(); }
};

class ThreadCaptureSignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(InstallThreadCaptureHandler(SIGRTMIN + 6), 0);
    g_stop = false;
    g_ready = 0;
    for (Worker* w : {&parked_, &blocking_}) {
      ASSERT_EQ(pthread_create(&w->thread, nullptr, Park, w), 0);
    }
    while (g_ready.load() < 2) usleep(1000);
  }
  void TearDown() override {
    g_stop = true;
    for (Worker* w : {&parked_, &blocking_}) pthread_join(w->thread, nullptr);
    UninstallThreadCaptureHandler();
  }
  const CapturedThread* Find(const ThreadCaptureResult& r, int tid) {
    for (int i = 0; i < r.count; ++i) {
      if (r.threads[i].tid == tid) return &r.threads[i];
    }
    return nullptr;
  }

  Worker parked_{"tc-parked", false};
  Worker blocking_{"tc-blocking", true};
};

TEST_F(ThreadCaptureSignalTest, ParksAnsweringThreadsAndListsTheBlockingOne) {
  ThreadCaptureResult r = CaptureOtherThreads(5000);
  ReleaseAtEnd release;
  const CapturedThread* parked = Find(r, parked_.tid);
  const CapturedThread* blocking = Find(r, blocking_.tid);
  ASSERT_NE(parked, nullptr);
  ASSERT_NE(blocking, nullptr);
  EXPECT_EQ(parked->state, kSnapshotThreadCaptured);
  EXPECT_EQ(blocking->state, kSnapshotThreadBlocked);
  // Its registers are its own: the SP inside its stack, the PC somewhere.
  ASSERT_TRUE((parked->valid_mask >> NativeArch::kSp) & 1);
  const uint64_t sp = parked->values[NativeArch::kSp];
  EXPECT_GE(sp, parked_.stack_lo);
  EXPECT_LT(sp, parked_.stack_hi);
  EXPECT_NE(parked->values[NativeArch::kPc], 0u);

  SnapshotOtherThreads others{&r, 1000, 1u << 20};
  SnapshotWritten w;
  std::vector<unsigned char> bytes = Written(others, &w);
  ASSERT_EQ(w.error, 0);
  EXPECT_EQ(w.threads_captured, r.count - 1);  // all but the blocking one
  EXPECT_GE(w.threads_listed, r.count);
  Snapshot snap = ReadSnapshot(bytes.data(), bytes.size());
  ASSERT_TRUE(snap.complete) << snap.error;
  bool saw_parked = false, saw_blocking = false;
  for (const SnapshotOtherThread& t : snap.threads) {
    if (t.tid == parked_.tid) {
      saw_parked = true;
      EXPECT_EQ(t.name, "tc-parked");
      EXPECT_EQ(t.state, kSnapshotThreadCaptured);
      ASSERT_TRUE(t.has_registers && t.has_stack);
      EXPECT_EQ(t.registers[NativeArch::kSp], sp);
      EXPECT_EQ(t.stack_address, sp);
      EXPECT_EQ(t.stack.size(), 1000u);  // the per-thread bound
      // The bytes are the thread's stack: it is still parked, so they hold still.
      EXPECT_EQ(std::memcmp(t.stack.data() + 512,
                            reinterpret_cast<const void*>(static_cast<uintptr_t>(sp + 512)), 64),
                0);
      EXPECT_EQ(NotCapturedReason(t), "");
    } else if (t.tid == blocking_.tid) {
      saw_blocking = true;
      EXPECT_EQ(t.name, "tc-blocking");
      EXPECT_FALSE(t.has_registers || t.has_stack);
      EXPECT_EQ(NotCapturedReason(t).rfind("blocks the capture signal", 0), 0u)
          << NotCapturedReason(t);
    }
  }
  EXPECT_TRUE(saw_parked && saw_blocking);

  // Every cut inside the thread sections: read without a crash, an error, the threads before it.
  for (size_t n = bytes.size() - 1; n > 0 && n + 4096 > bytes.size(); --n) {
    std::vector<unsigned char> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    Snapshot s = ReadSnapshot(cut.data(), cut.size());
    ASSERT_FALSE(s.complete) << n;
    ASSERT_LE(s.threads.size(), snap.threads.size()) << n;
  }
}

TEST_F(ThreadCaptureSignalTest, TheTotalBoundCutsTheThreadsStacks) {
  ThreadCaptureResult r = CaptureOtherThreads(5000);
  ReleaseAtEnd release;
  SnapshotOtherThreads others{&r, 1000, 300};
  SnapshotWritten w;
  std::vector<unsigned char> bytes = Written(others, &w);
  ASSERT_EQ(w.error, 0);
  EXPECT_EQ(w.thread_stack_bytes, 300u);
  Snapshot snap = ReadSnapshot(bytes.data(), bytes.size());
  ASSERT_TRUE(snap.complete) << snap.error;
  uint64_t total = 0;
  for (const SnapshotOtherThread& t : snap.threads) total += t.stack.size();
  EXPECT_EQ(total, 300u);
}

// A thread that cannot run (stopped by a tracer, as one in an uninterruptible wait cannot) never
// answers: given up on after the wait, with its state letter; its signal, delivered once it runs
// again, finds the capture over and it runs on (the join in TearDown).
TEST_F(ThreadCaptureSignalTest, AThreadThatNeverRunsIsGivenUpAfterTheWait) {
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);  // Yama: a child may trace this process's threads
  int stopped[2], go[2];
  ASSERT_EQ(pipe(stopped), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t tracer = fork();
  ASSERT_GE(tracer, 0);
  if (tracer == 0) {
    const int tid = parked_.tid;
    char result = 0;
    int status;
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0 || ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 ||
        waitpid(tid, &status, __WALL) != tid) {
      result = 1;
    }
    if (write(stopped[1], &result, 1) != 1 || read(go[0], &result, 1) != 1) _exit(1);
    ptrace(PTRACE_DETACH, tid, 0, 0);
    _exit(0);
  }
  char result = 1;
  ASSERT_EQ(read(stopped[0], &result, 1), 1);
  if (result != 0) {
    kill(tracer, SIGKILL);
    waitpid(tracer, nullptr, 0);
    GTEST_SKIP() << "ptrace refused here: no thread can be held from running";
  }
  {
    ThreadCaptureResult r = CaptureOtherThreads(200);
    ReleaseAtEnd release;
    const CapturedThread* parked = Find(r, parked_.tid);
    ASSERT_NE(parked, nullptr);
    EXPECT_EQ(parked->state, kSnapshotThreadNoAnswer);
    EXPECT_EQ(parked->detail, 200);
    EXPECT_EQ(parked->proc_state, 't');  // tracing stop
    SnapshotOtherThread listed;
    listed.state = parked->state;
    listed.detail = parked->detail;
    listed.proc_state = parked->proc_state;
    EXPECT_EQ(NotCapturedReason(listed),
              "no answer to the capture signal within 200 ms (state t)");
  }
  ASSERT_EQ(write(go[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(tracer, &status, 0), tracer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int fd : {stopped[0], stopped[1], go[0], go[1]}) close(fd);
}

TEST(ThreadCaptureSignalInstall, AHandledSignalIsTheProgramsAndRefused) {
  struct sigaction action {}, old;
  action.sa_handler = [](int) {};
  const int sig = SIGRTMIN + 7;
  ASSERT_EQ(sigaction(sig, &action, &old), 0);
  EXPECT_EQ(CheckThreadCaptureSignal(sig), -EBUSY);
  EXPECT_EQ(InstallThreadCaptureHandler(sig), -EBUSY);
  sigaction(sig, &old, nullptr);
  EXPECT_EQ(InstallThreadCaptureHandler(sig), 0);
  UninstallThreadCaptureHandler();
  struct sigaction now;
  sigaction(sig, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);  // the previous action restored
}

TEST(SnapshotThreadReaderTest, SectionsOutOfPlaceAreClearErrors) {
  std::vector<unsigned char> bytes(sizeof(SnapshotFileHeader));
  SnapshotFileHeader h{};
  std::memcpy(h.magic, kSnapshotMagic, sizeof(h.magic));
  h.version = kSnapshotVersion;
  h.byte_order = kSnapshotByteOrder;
  h.machine = 62;
  h.word_size = 8;
  std::memcpy(bytes.data(), &h, sizeof(h));
  auto section = [&](uint32_t type, const void* payload, size_t size) {
    SnapshotSectionHeader s{type, 0, size};
    const auto* p = reinterpret_cast<const unsigned char*>(&s);
    bytes.insert(bytes.end(), p, p + sizeof(s));
    bytes.insert(bytes.end(), static_cast<const unsigned char*>(payload),
                 static_cast<const unsigned char*>(payload) + size);
  };
  const size_t header_end = bytes.size();
  // A thread's registers with no thread section before them.
  unsigned char regs[16 + 17 * 8] = {};
  SnapshotRegistersHeader rh{42, 17, 0};
  std::memcpy(regs, &rh, sizeof(rh));
  section(kSnapshotThreadRegisters, regs, sizeof(regs));
  section(kSnapshotEnd, nullptr, 0);
  Snapshot s = ReadSnapshot(bytes.data(), bytes.size());
  EXPECT_NE(s.error.find("thread 42's registers not after its captured thread section"),
            std::string::npos) << s.error;
  // A thread not captured, then its stack: refused too; its listing kept.
  bytes.resize(header_end);
  SnapshotThread t{};
  t.tid = 42;
  t.state = kSnapshotThreadNoAnswer;
  t.detail = 1000;
  t.proc_state = 'D';
  std::memcpy(t.name, "stuck", 5);
  section(kSnapshotThread, &t, sizeof(t));
  SnapshotThreadStackHeader sh{42, 0, 0x1000};
  section(kSnapshotThreadStack, &sh, sizeof(sh));
  section(kSnapshotEnd, nullptr, 0);
  s = ReadSnapshot(bytes.data(), bytes.size());
  EXPECT_NE(s.error.find("thread 42's stack not after"), std::string::npos) << s.error;
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.threads[0].name, "stuck");
  EXPECT_EQ(NotCapturedReason(s.threads[0]),
            "no answer to the capture signal within 1000 ms (state D)");
}

}  // namespace
}  // namespace stackwalk::internal
