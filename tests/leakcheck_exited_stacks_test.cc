// The stacks of exited threads (leakcheck/scan/exited_stacks.h) over real threads: a thread keeps
// an address in a stack slot, records its stack as the checker's exit hook does and exits; glibc
// keeps its stack mapped for the next thread. That slot must be left out of the roots while the
// stack is cached, also once the kernel merged the stack's mapping with a neighbour (a mapping
// the TCB search of x86_64 did not recognise), and the thread's descriptor must stay a root; a
// thread reusing the stack makes it live again.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "collect_modules.h"
#include "gtest/gtest.h"
#include "leakcheck/scan/exited_stacks.h"
#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/roots.h"
#include "leakcheck/scan/safe_reader.h"
#include "leakcheck/scan/tls_roots.h"
#include "stack_neighbour.h"
#include "writable_words.h"

namespace stackwalk::leakcheck {
namespace {

int g_target;  // what the dead slot points to (a global: the scan's roots are what is tested)
void* g_neighbour_target;

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

constexpr size_t kStackBytes = 256 * 1024;

// A thread on a glibc-allocated stack of `stack_bytes` that runs `body`.
void RunThread(void* (*body)(void*), void* arg, size_t stack_bytes = kStackBytes) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, body, arg), 0);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
}

struct Exited {
  uintptr_t slot = 0;  // the stack slot holding &g_target
  uintptr_t tp = 0;
};

// Keeps &g_target in a slot 16 KiB deep (below what the thread's exit path overwrites).
__attribute__((noinline)) void KeepDeep(Exited* out) {
  void* volatile frame[2048];
  frame[0] = &g_target;
  out->slot = Address(const_cast<void**>(&frame[0]));
}

// Leaves &g_target in a dead slot, records its stack (the checker's exit hook does) and exits.
void* ExitingBody(void* arg) {
  auto* out = static_cast<Exited*>(arg);
  KeepDeep(out);
  out->tp = CurrentThreadPointer();
  RecordExitingThreadStack();
  return nullptr;
}

const RootRange* Covering(const RootSet& roots, uintptr_t address) {
  for (size_t i = 0; i < roots.size(); ++i) {
    if (roots[i].lo <= address && address + sizeof(void*) <= roots[i].hi) return &roots[i];
  }
  return nullptr;
}

bool InAny(const internal::AddressRange* ranges, size_t n, uintptr_t address) {
  for (size_t i = 0; i < n; ++i) {
    if (ranges[i].Contains(address)) return true;
  }
  return false;
}

class ExitedStacksTest : public ::testing::Test {
 protected:
  void SetUp() override { ForgetExitedThreadStacksForTesting(); }
  void TearDown() override { ForgetExitedThreadStacksForTesting(); }

  // The exited stacks left out now (the test thread the checking one, no other thread), and the
  // roots an anonymous scan would read with them left out.
  size_t Find(const StoppedThread* threads, size_t n) {
    EXPECT_TRUE(maps_.Read());
    volatile char here = 0;
    SafeReader reader(&maps_);
    return FindExitedThreadStacks(threads, n, Address(const_cast<char*>(&here)), maps_, reader,
                                  found_, kMaxExitedStacks);
  }
  void Collect(size_t excluded, RootSet* roots) {
    ASSERT_TRUE(CollectModules(&modules_));
    volatile char here = 0;
    RootInputs inputs;
    inputs.maps = &maps_;
    inputs.caller_sp = Address(const_cast<char*>(&here));
    inputs.excluded = found_;
    inputs.excluded_count = excluded;
    inputs.modules = &modules_;
    CollectRoots(inputs, RootOptions{}, roots);
  }

  MapsSnapshot maps_;
  LoadedModules modules_;
  internal::AddressRange found_[kMaxExitedStacks];
};

TEST_F(ExitedStacksTest, ACachedStackIsLeftOutWhereverItsMappingLies) {
  Exited exited;
  RunThread(ExitingBody, &exited);
  ASSERT_NE(exited.slot, 0u);
  ASSERT_TRUE(maps_.Read());
  const MapsEntry* stack = maps_.Find(exited.slot);
  ASSERT_NE(stack, nullptr) << "glibc did not keep the exited thread's stack";
  ASSERT_EQ(stack->kind, MapsEntry::Kind::kAnonymous);
  // The dead word is there: without the exited stacks an anonymous root would hold &g_target.
  SafeReader reader(&maps_);
  uintptr_t word = 0;
  ASSERT_TRUE(reader.Read(exited.slot, &word, sizeof word));
  ASSERT_EQ(word, Address(&g_target));
  {
    RootSet without;
    Collect(0, &without);
    EXPECT_NE(Covering(without, exited.slot), nullptr) << "the cached stack is a root by itself";
  }

  size_t n = Find(nullptr, 0);
  EXPECT_TRUE(InAny(found_, n, exited.slot)) << n << " ranges";
  EXPECT_FALSE(InAny(found_, n, exited.tp)) << "the descriptor (the DTV's pointer) stays a root";
  {
    RootSet roots;
    Collect(n, &roots);
    EXPECT_EQ(Covering(roots, exited.slot), nullptr);
    EXPECT_NE(Covering(roots, exited.tp), nullptr);
  }

  // A stack mapped right below an anonymous mapping of the program's: the kernel merges the two
  // (one line of /proc/self/maps), as it did with ld.so's and the program's mappings.
  static size_t round = 0;  // each stack larger than any before: glibc maps it, reuses none
  const size_t neighbour_bytes = 64 * 1024;
  bool merged = false;
  for (int attempt = 0; attempt < 4 && !merged; ++attempt) {
    const size_t bytes = kStackBytes + neighbour_bytes * ++round;
    void* neighbour = MapAboveTheNextStack(bytes, neighbour_bytes);
    ASSERT_NE(neighbour, MAP_FAILED);
    static_cast<void**>(neighbour)[16] = &g_neighbour_target;
    Exited other;
    RunThread(ExitingBody, &other, bytes);
    ASSERT_TRUE(maps_.Read());
    const MapsEntry* other_stack = maps_.Find(other.slot);
    ASSERT_NE(other_stack, nullptr);
    merged = other_stack->range.Contains(Address(neighbour));
    if (merged) {
      n = Find(nullptr, 0);
      EXPECT_TRUE(InAny(found_, n, other.slot)) << "merged: " << n << " ranges";
      RootSet roots;
      Collect(n, &roots);
      EXPECT_EQ(Covering(roots, other.slot), nullptr) << "merged";
      EXPECT_NE(Covering(roots, Address(neighbour) + 16 * sizeof(void*)), nullptr)
          << "the neighbour is the program's: a root";
    }
    munmap(neighbour, neighbour_bytes);
  }
  // qemu-user places mappings itself: there the merge may not happen.
  if (!merged) std::printf("note: no stack was mapped next to its neighbour here\n");
}

struct Reusing {
  std::atomic<int> stage{0};  // 1: published, 2: may exit
  uintptr_t sp = 0, tp = 0;
};

void* ReusingBody(void* arg) {
  auto* r = static_cast<Reusing*>(arg);
  volatile char here = 0;
  r->sp = Address(const_cast<char*>(&here));
  r->tp = CurrentThreadPointer();
  r->stage.store(1);
  while (r->stage.load() != 2) sched_yield();
  return nullptr;
}

TEST_F(ExitedStacksTest, AStackALiveThreadRunsOnIsNotLeftOut) {
  Exited exited;
  RunThread(ExitingBody, &exited);
  ASSERT_GT(Find(nullptr, 0), 0u);
  // A new thread of the same stack size: glibc hands it the cached stack.
  Reusing reusing;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, ReusingBody, &reusing), 0);
  pthread_attr_destroy(&attr);
  while (reusing.stage.load() != 1) sched_yield();
  StoppedThread live;
  live.state = StoppedThread::State::kStopped;
  live.sp = reusing.sp;
  live.thread_pointer = reusing.tp;
  const size_t n = Find(&live, 1);
  EXPECT_FALSE(InAny(found_, n, reusing.sp)) << "a live thread's stack";
  // One whose SP and thread pointer are unknown might be on any: nothing is left out.
  StoppedThread unknown;
  unknown.state = StoppedThread::State::kUnstopped;
  EXPECT_EQ(Find(&unknown, 1), 0u);
  reusing.stage.store(2);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
}

// The words at an exiting thread's pointer that the table checks a cached descriptor by include
// its DTV (x86_64's tcbhead_t {tcb, dtv}; aarch64's and arm's {dtv, private}), a heap block glibc
// frees when it unmaps the stack. The table lies in the checker's globals, a root: kept as it was,
// that word made a block malloc later placed there reachable (a kept block of the stress test, a
// leak lost ~3 % of runs). No writable word of the object holding the table may equal it.
// Nor its thread pointer or stack bottom: glibc unmaps a stack past its cache's 40 MiB, and a
// large block mapped there next would be reached through them.
struct Descriptor {
  uintptr_t dtv = 0;
  uintptr_t tp = 0;
  uintptr_t stack_lo = 0;
};

void* RecordingBody(void* arg) {
  auto* out = static_cast<Descriptor*>(arg);
  out->tp = CurrentThreadPointer();
  const auto* words = reinterpret_cast<const uintptr_t*>(out->tp);
#if defined(__x86_64__) || defined(__i386__)
  out->dtv = words[1];
#else
  out->dtv = words[0];
#endif
  pthread_attr_t attr;
  void* stack = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &stack, &size);
    pthread_attr_destroy(&attr);
  }
  out->stack_lo = Address(stack);
  RecordExitingThreadStack();
  return nullptr;
}

TEST_F(ExitedStacksTest, TheTableKeepsNoWordOfADescriptorThatPointsIntoTheHeap) {
  Descriptor descriptor;
  RunThread(RecordingBody, &descriptor);
  ASSERT_NE(descriptor.dtv, 0u);
  ASSERT_GT(Find(nullptr, 0), 0u) << "the stack was recorded (and its descriptor still matches)";
  const auto* table_code = reinterpret_cast<const void*>(&RecordExitingThreadStack);
  EXPECT_EQ(testing::WritableWordsEqualTo(table_code, descriptor.dtv), 0u) << "the DTV";
  EXPECT_EQ(testing::WritableWordsEqualTo(table_code, descriptor.tp), 0u) << "the thread pointer";
  ASSERT_NE(descriptor.stack_lo, 0u);
  EXPECT_EQ(testing::WritableWordsEqualTo(table_code, descriptor.stack_lo), 0u) << "the stack";
}

}  // namespace
}  // namespace stackwalk::leakcheck
