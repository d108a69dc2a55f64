// RunCheck (leakcheck/scan/check.h) in a real process: this test binary hooks its own malloc,
// calloc, realloc and free (as the preloaded checker does: Record after the real call, Unrecord
// before the real free), so its own blocks are recorded while `g_hooked` is set. A dropped list is
// one direct and nine indirect leaks; blocks held in a global, an anonymous mapping or another
// running thread's stack are not leaks; a checker thread's stack is not a root; and while the
// world is stopped no hook runs on the checking thread (100 checks with 10k live blocks and 4
// threads allocating throughout).
#include <dlfcn.h>
#include <malloc.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "leakcheck/recording.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/scan/exited_stacks.h"
#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/state.h"
#include "core/arena.h"
#include "stackwalk/stackwalk.h"
#include "stack_neighbour.h"

namespace {
std::atomic<bool> g_hooked{false};
}  // namespace

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);

void* malloc(size_t size) {
  void* p = __libc_malloc(size);
  if (g_hooked.load(std::memory_order_relaxed)) stackwalk::leakcheck::Record(p, size, STACKWALK_CALL_SITE());
  return p;
}
void* calloc(size_t n, size_t size) {
  void* p = __libc_calloc(n, size);
  if (g_hooked.load(std::memory_order_relaxed)) stackwalk::leakcheck::Record(p, n * size, STACKWALK_CALL_SITE());
  return p;
}
void free(void* p) {
  if (g_hooked.load(std::memory_order_relaxed)) stackwalk::leakcheck::Unrecord(p);
  __libc_free(p);
}
void* realloc(void* old, size_t size) {
  stackwalk::leakcheck::Allocation before{};
  const bool tracked = g_hooked.load(std::memory_order_relaxed) &&
                       stackwalk::leakcheck::TakeRecord(old, &before);
  void* p = __libc_realloc(old, size);
  if (p != nullptr) {
    if (g_hooked.load(std::memory_order_relaxed)) stackwalk::leakcheck::Record(p, size, STACKWALK_CALL_SITE());
  } else if (tracked && size != 0) {
    stackwalk::leakcheck::RestoreRecord(before);
  }
  return p;
}
}  // extern "C"

namespace stackwalk::leakcheck {
namespace {

// Hooks on for the test's lifetime; the table forgets what an earlier test recorded.
class Hooked {
 public:
  Hooked() {
    GlobalState().allocations.Clear();
    ConfiguredState();
    g_hooked.store(true);
  }
  ~Hooked() { g_hooked.store(false); }
};

// One check, as a report runs it (the test's frames above are the program's); false if it could
// not run.
__attribute__((noinline)) bool TryCheck(const CheckRequest& request, CheckOutcome* out) {
  CheckEntry entry;
  ReentryGuard own;
  FairLockHolder hold(ReportLock());
  return RunCheck(GlobalState(), request, out);
}

CheckOutcome Check(const CheckRequest& request = CheckRequest()) {
  CheckOutcome out;
  const bool complete = TryCheck(request, &out);
  EXPECT_EQ(complete, out.complete);
  EXPECT_TRUE(out.complete) << out.error;
  EXPECT_EQ(out.blocks.size(), out.verdicts.size());
  EXPECT_TRUE(std::is_sorted(
      out.blocks.begin(), out.blocks.end(),
      [](const Allocation& a, const Allocation& b) { return a.address < b.address; }));
  return out;
}

// The test keeps block addresses mangled (~address) wherever it keeps them: its own vectors and
// sets are recorded blocks too, and a plain copy there would hold the block it names.
uintptr_t Mangle(const void* block) { return ~reinterpret_cast<uintptr_t>(block); }
void* Unmangle(uintptr_t m) { return reinterpret_cast<void*>(~m); }
// Not inlined, so that the raw address is never worked out (and perhaps spilled) in the caller's
// frame ahead of time. The block is zeroed first: glibc's malloc overwrites only a freed chunk's
// first word or two (a list node's next pointer survives in a fastbin chunk), and a later block
// made from the chunk, not zeroed, would hold an old node's address, which a later repetition's
// list may have again.
__attribute__((noinline)) void FreeMangled(uintptr_t m) {
  void* block = Unmangle(m);
  std::memset(block, 0, malloc_usable_size(block));
  free(block);
}

// Not inlined: the raw address it compares with must not stay in a register of the caller's.
__attribute__((noinline)) Verdict VerdictOf(const CheckOutcome& out, uintptr_t mangled) {
  for (size_t i = 0; i < out.blocks.size(); ++i) {
    if (~out.blocks[i].address == mangled) return out.verdicts[i];
  }
  ADD_FAILURE() << "not a live recorded block: " << Unmangle(mangled);
  return Verdict::kLive;
}

// Every leaked block, mangled.
__attribute__((noinline)) std::set<uintptr_t> Leaks(const CheckOutcome& out) {
  std::set<uintptr_t> leaks;
  for (size_t i = 0; i < out.blocks.size(); ++i) {
    if (IsLeak(out.verdicts[i])) leaks.insert(~out.blocks[i].address);
  }
  return leaks;
}

// Overwrites the dead stack below the caller's frame, and with it the copies of block addresses
// the functions that made them left there (a conservative scan would read them as references).
__attribute__((noinline)) void ClobberStack() {
  volatile char junk[32 << 10];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = 0;
}

// A list of `count` 48-byte nodes (next at offset 8), dropped: only its nodes' addresses are
// returned, mangled (so the vector holding them is not a root for them).
__attribute__((noinline)) std::vector<uintptr_t> DropAList(size_t count) {
  std::vector<uintptr_t> mangled;
  void* next = nullptr;
  for (size_t i = 0; i < count; ++i) {
    auto** node = static_cast<void**>(malloc(48));
    std::memset(node, 0, 48);
    node[1] = next;
    next = node;
    mangled.push_back(Mangle(node));
  }
  return mangled;
}

// A block made in a callee and stored at `where` (no copy left in the caller's frame).
__attribute__((noinline)) uintptr_t StoreNew(void* volatile* where, size_t size) {
  *where = malloc(size);
  return Mangle(*where);
}

void* volatile g_held = nullptr;  // a global root

void* volatile g_dropped = nullptr;  // held, then dropped before the check

// Runs `body` on a thread whose stack is freshly mapped (zero pages) and unmapped after it: the
// blocks it makes leave no copy on a stack that outlives it. The main thread's stack would keep
// them in slots above the test's frame that later calls leave unwritten (a repetition's frame
// can lie higher than the next one's: under --gtest_repeat every second repetition found an
// earlier block held so).
template <class Body>
void OnFreshStack(Body body) {
  constexpr size_t kStackBytes = 1 << 20;
  void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  ASSERT_NE(stack, MAP_FAILED);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, kStackBytes);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    (*static_cast<Body*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run, &body), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  munmap(stack, kStackBytes);
}

TEST(RunCheck, ADroppedListIsOneDirectAndNineIndirectAndGlobalsHold) {
  OnFreshStack([] {
    Hooked hooked;
    const uintptr_t held = StoreNew(&g_held, 100);
    const uintptr_t dropped = StoreNew(&g_dropped, 100);
    g_dropped = nullptr;
    const std::vector<uintptr_t> list = DropAList(10);
    ClobberStack();
    const CheckOutcome out = Check();
    EXPECT_NE(out.method, StopMethod::kNone);
    EXPECT_EQ(VerdictOf(out, held), Verdict::kReachable);
    EXPECT_EQ(VerdictOf(out, dropped), Verdict::kDirect);
    EXPECT_EQ(VerdictOf(out, list.back()), Verdict::kDirect);  // the head: made last
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      EXPECT_EQ(VerdictOf(out, list[i]), Verdict::kIndirect) << i;
    }
    std::set<uintptr_t> leaks(list.begin(), list.end());
    leaks.insert(dropped);
    EXPECT_EQ(Leaks(out), leaks);
    EXPECT_GT(out.root_bytes[static_cast<int>(RootKind::kGlobals)], 0u);
    EXPECT_GT(out.check_ns, 0u);
    for (uintptr_t m : list) FreeMangled(m);
    g_held = nullptr;  // else a later test's block made where this one was is held from here
    FreeMangled(held);
    FreeMangled(dropped);
  });
}

TEST(RunCheck, AnonymousMappingsAreRootsUnlessAskedNotToBe) {
  OnFreshStack([] {
    Hooked hooked;
    auto* arena = static_cast<void**>(
        mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(arena, MAP_FAILED);
    const uintptr_t mangled = StoreNew(&arena[100], 64);
    ClobberStack();
    const CheckOutcome with = Check();
    EXPECT_EQ(VerdictOf(with, mangled), Verdict::kReachable);
    EXPECT_GT(with.root_bytes[static_cast<int>(RootKind::kAnonymous)], 0u);
    CheckRequest lsan_rule;
    lsan_rule.roots.anonymous_mappings = false;
    const CheckOutcome without = Check(lsan_rule);
    EXPECT_EQ(VerdictOf(without, mangled), Verdict::kDirect);
    EXPECT_EQ(without.root_bytes[static_cast<int>(RootKind::kAnonymous)], 0u);
    FreeMangled(mangled);
    munmap(arena, 1 << 16);
  });
}

TEST(RunCheck, WithoutAnonymousRootsTheLoadersBlocksAreRoots) {
  // LeakSanitizer's rule: the loader's own memory (its minimal malloc's) is anonymous, so what it
  // malloc'ed for a library kept loaded is held only from there: those blocks are roots. A
  // dlopen with the hooks on records them with ld.so's frames first.
  Hooked hooked;
  void* library = dlopen(ROOTS_TLS_LIB_PATH, RTLD_NOW);
  ASSERT_NE(library, nullptr) << dlerror();
  CheckRequest lsan_rule;
  lsan_rule.roots.anonymous_mappings = false;
  {
    const CheckOutcome out = Check(lsan_rule);
    EXPECT_GT(out.root_bytes[static_cast<int>(RootKind::kLoaderBlocks)], 0u);
    EXPECT_EQ(Leaks(out).size(), 0u);
  }
  g_hooked.store(false);  // dlclose frees what was recorded; the table is cleared next test
  dlclose(library);
}

thread_local void* volatile t_kept = nullptr;

TEST(RunCheck, AnExitedThreadsCachedStackIsNotARoot) {
  // glibc keeps a joined thread's stack, its static TLS at the top, mapped for the next thread:
  // the block the thread held only in a thread-local is a leak once it exited, though its
  // address is still in that mapping.
  Hooked hooked;
  std::atomic<uintptr_t> mangled{0};
  std::thread thread([&mangled] {
    t_kept = malloc(90);
    mangled.store(Mangle(t_kept));
  });
  thread.join();
  ClobberStack();
  {
    const CheckOutcome out = Check();
    EXPECT_EQ(VerdictOf(out, mangled.load()), Verdict::kDirect);
  }
  FreeMangled(mangled.load());
}

// Keeps a new block only in a slot of its frame (the block's address mangled to the test, the
// slot's plain) and exits.
struct StackSlot {
  uintptr_t mangled = 0;
  uintptr_t slot = 0;
};
// The slot lies 16 KiB deep, below what the thread's exit path (its key destructors) overwrites.
__attribute__((noinline)) void HoldDeepOnStack(StackSlot* out) {
  void* volatile frame[2048];
  frame[0] = malloc(70);
  out->mangled = Mangle(frame[0]);
  out->slot = reinterpret_cast<uintptr_t>(&frame[0]);
}
void* HoldOnStackAndExit(void* out) {
  HoldDeepOnStack(static_cast<StackSlot*>(out));
  return nullptr;
}

// Not inlined: the raw address it reads must not stay in the caller's frame or registers.
__attribute__((noinline)) bool SlotHolds(uintptr_t slot, uintptr_t mangled) {
  return ~*reinterpret_cast<const volatile uintptr_t*>(slot) == mangled;
}

// Runs HoldOnStackAndExit on a stack of `bytes`, which glibc keeps cached after the join.
StackSlot HoldOnAnExitedThreadsStack(size_t bytes) {
  StackSlot held;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t thread;
  EXPECT_EQ(pthread_create(&thread, &attr, HoldOnStackAndExit, &held), 0);
  pthread_attr_destroy(&attr);
  EXPECT_EQ(pthread_join(thread, nullptr), 0);
  return held;
}

TEST(RunCheck, AnExitedThreadsStackSlotIsALeakWhileItsStackIsCached) {
  // glibc keeps the stack; the slot still holds the block's address. Then the same on a stack
  // mapped right below an anonymous mapping, which the kernel merges with it (the TCB search
  // did not recognise that one): the stack is known by its range.
  Hooked hooked;
  {
    const StackSlot held = HoldOnAnExitedThreadsStack(size_t{256} << 10);
    ASSERT_TRUE(SlotHolds(held.slot, held.mangled));  // a root, but for the exited stacks
    ClobberStack();
    EXPECT_EQ(VerdictOf(Check(), held.mangled), Verdict::kDirect);
    FreeMangled(held.mangled);
  }
  static size_t round = 0;  // each stack larger than any before: glibc maps it, reuses none
  const size_t neighbour_bytes = 64 * 1024;
  bool merged = false;
  for (int attempt = 0; attempt < 4 && !merged; ++attempt) {
    const size_t bytes = (size_t{384} + 64 * round++) << 10;
    void* neighbour = MapAboveTheNextStack(bytes, neighbour_bytes);
    ASSERT_NE(neighbour, MAP_FAILED);
    const StackSlot held = HoldOnAnExitedThreadsStack(bytes);
    MapsSnapshot maps;
    ASSERT_TRUE(maps.Read());
    const MapsEntry* stack = maps.Find(held.slot);
    ASSERT_NE(stack, nullptr) << "glibc did not keep the stack";
    merged = stack->range.Contains(reinterpret_cast<uintptr_t>(neighbour));
    if (merged) {
      ASSERT_TRUE(SlotHolds(held.slot, held.mangled));
      ClobberStack();
      EXPECT_EQ(VerdictOf(Check(), held.mangled), Verdict::kDirect) << "merged with a neighbour";
    }
    FreeMangled(held.mangled);
    munmap(neighbour, neighbour_bytes);
  }
  EXPECT_TRUE(merged) << "no stack was mapped next to its neighbour in 4 attempts";
}

TEST(RunCheck, ACachedStackIsFoundByItsTcbAndGuardAlone) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the search by TCB is x86_64's";
#else
  // A thread whose exit the checker did not record (one that never allocated, here its record
  // forgotten): the stack glibc keeps is still left out, known by its descriptor at the top and
  // glibc's guard below.
  Hooked hooked;
  const StackSlot held = HoldOnAnExitedThreadsStack(size_t{256} << 10);
  ForgetExitedThreadStacksForTesting();
  ASSERT_TRUE(SlotHolds(held.slot, held.mangled));
  ClobberStack();
  EXPECT_EQ(VerdictOf(Check(), held.mangled), Verdict::kDirect);
  FreeMangled(held.mangled);
#endif
}

// A thread that holds a block only on its stack until told to go.
struct Holder {
  std::atomic<int> stage{0};  // 1: holding, 2: let go
  std::atomic<uintptr_t> mangled{0};
  bool checker = false;
  void Run() {
    if (checker) RegisterCheckerThread();
    void* volatile held = malloc(80);
    mangled.store(Mangle(held));
    stage.store(1);
    while (stage.load() != 2) sched_yield();
    free(held);
    if (checker) UnregisterCheckerThread();
  }
};

// A stack the program gave a thread (pthread_attr_setstack) is the program's memory again once
// the thread exited: glibc never caches it, so what the program keeps there after is a root. The
// stack ends with the exited thread's descriptor as a cached glibc stack does (which x86_64's
// search by TCB took it for), but has no guard below. Made on a fresh stack, and checked again
// once dropped: no stale copy elsewhere may hold the block in the stack's place.
TEST(RunCheck, AUserStackIsTheProgramsMemoryAgainOnceItsThreadExited) {
  OnFreshStack([] {
    Hooked hooked;
    constexpr size_t kStackBytes = 1 << 20;
    // MAP_NORESERVE: the kernel merges anonymous mappings of the same flags that touch, and one
    // merged with the running thread's stack (OnFreshStack's, the same flags as this) would be
    // taken for that stack, whose dead part below its SP is no root.
    void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
    ASSERT_NE(stack, MAP_FAILED);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, kStackBytes);
    pthread_t thread;
    auto allocate = [](void*) -> void* {
      free(malloc(16));  // a thread the checker saw allocate: its exit is recorded
      return nullptr;
    };
    ASSERT_EQ(pthread_create(&thread, &attr, allocate, nullptr), 0);
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
    auto* words = static_cast<void* volatile*>(stack);
    const uintptr_t held = StoreNew(&words[64], 100);  // near the old stack's bottom
    {
      MapsSnapshot maps;
      ASSERT_TRUE(maps.Read());
      const MapsEntry* mapping = maps.Find(reinterpret_cast<uintptr_t>(stack));
      ASSERT_NE(mapping, nullptr);
      ASSERT_EQ(mapping->range.hi - mapping->range.lo, kStackBytes) << "merged with a neighbour";
    }
    ClobberStack();
    EXPECT_EQ(VerdictOf(Check(), held), Verdict::kReachable);
    words[64] = nullptr;
    EXPECT_EQ(VerdictOf(Check(), held), Verdict::kDirect) << "held from elsewhere";
    FreeMangled(held);
    munmap(stack, kStackBytes);
  });
}

TEST(RunCheck, AnotherThreadsStackHoldsButACheckerThreadsDoesNot) {
  Hooked hooked;
  for (bool checker : {false, true}) {
    Holder holder;
    holder.checker = checker;
    std::thread thread([&holder] { holder.Run(); });
    while (holder.stage.load() != 1) sched_yield();
    const CheckOutcome out = Check();
    EXPECT_EQ(VerdictOf(out, holder.mangled.load()),
              checker ? Verdict::kDirect : Verdict::kReachable)
        << "checker thread: " << checker;
    EXPECT_GE(out.stopped_threads + out.unstopped.size(), checker ? 0u : 1u);
    holder.stage.store(2);
    thread.join();
  }
}

TEST(RunCheck, ABlockHeldOnlyFromLibstackwalksOldestMappingIsALeakAmongMany) {
  // libstackwalk's mappings (rule tables, frame logs with copies of stack words) are never roots,
  // however many a program with hundreds of walking threads makes: here 100 more than there were,
  // the block's address in the oldest of them (a list cut at 64 mappings left it a root).
  OnFreshStack([] {
    Hooked hooked;
    constexpr size_t kOwnMappingBytes = internal::Arena::kChunkSize / 4 + 4096;  // one each
    auto** oldest = static_cast<void**>(internal::Arena::Global().Allocate(kOwnMappingBytes, 64));
    ASSERT_NE(oldest, nullptr);
    for (int i = 0; i < 100; ++i) {
      ASSERT_NE(internal::Arena::Global().Allocate(kOwnMappingBytes, 64), nullptr);
    }
    ASSERT_GT(stackwalk_private_mappings(nullptr, 0), 100u);
    const uintptr_t mangled = StoreNew(&oldest[7], 64);
    ClobberStack();
    const CheckOutcome out = Check();
    EXPECT_EQ(VerdictOf(out, mangled), Verdict::kDirect);
    oldest[7] = nullptr;
    FreeMangled(mangled);
  });
}

TEST(RunCheck, TheCountOfHooksWhileStoppedCounts) {
  // What the next test asserts stays 0 does count a hook on a thread marked stopped (and records
  // nothing for it).
  Hooked hooked;
  const uint64_t before = HooksWhileWorldStopped();
  SetWorldStopped(true);
  void* p = malloc(16);
  free(p);
  SetWorldStopped(false);
  EXPECT_EQ(HooksWhileWorldStopped(), before + 2);
}

TEST(RunCheck, NoHookRunsOnTheCheckingThreadWhileTheWorldIsStopped) {
  Hooked hooked;
  // Zeroed blocks: a chunk an earlier repetition freed may hold the address its list node had,
  // which a node of this one may have again (--gtest_repeat failed 8 runs in 20 so).
  std::vector<void*> live(10000);
  for (size_t i = 0; i < live.size(); ++i) live[i] = calloc(1, 16 + i % 200);
  const std::vector<uintptr_t> list = DropAList(10);
  const std::set<uintptr_t> dropped(list.begin(), list.end());
  ClobberStack();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stop, t] {
      void* ring[64] = {};
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        void*& slot = ring[i % 64];
        free(slot);
        slot = calloc(1, 8 + (i * 7 + t) % 300);
      }
      for (void* p : ring) free(p);
    });
  }
  const uint64_t before = HooksWhileWorldStopped();
  size_t spurious = 0;
  for (StopRequest method : {StopRequest::kSignal, StopRequest::kPtrace}) {
    CheckRequest request;
    request.stop = method;
    uint64_t pause_ns = 0, check_ns = 0;
    int checks = 0;
    for (; checks < 100; ++checks) {
      CheckOutcome out;
      if (!TryCheck(request, &out)) {
        // ptrace refused here (Yama, a container, a tracer already attached): said, not failed.
        EXPECT_EQ(method, StopRequest::kPtrace) << out.error;
        std::printf("ptrace: no check (%s; %s)\n", out.error.c_str(), out.fallback_reason.c_str());
        break;
      }
      EXPECT_EQ(out.method,
                method == StopRequest::kSignal ? StopMethod::kSignal : StopMethod::kPtrace);
      EXPECT_GE(out.stopped_threads, 4u);
      EXPECT_GE(out.blocks.size(), live.size());
      const std::set<uintptr_t> leaks = Leaks(out);
      // The dropped list always; a held block never (nor a block in a running thread's ring).
      EXPECT_TRUE(std::includes(leaks.begin(), leaks.end(), dropped.begin(), dropped.end()));
      spurious += leaks.size() - std::min(leaks.size(), dropped.size());
      pause_ns += out.pause_ns;
      check_ns += out.check_ns;
    }
    if (checks > 0) {
      std::printf("%s: %d checks of %zu+ blocks, pause %.2f ms, check %.2f ms on average\n",
                  method == StopRequest::kSignal ? "signal" : "ptrace", checks, live.size(),
                  pause_ns / 1e6 / checks, check_ns / 1e6 / checks);
    }
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(HooksWhileWorldStopped(), before);
  EXPECT_EQ(spurious, 0u);
  for (void* p : live) free(p);
  explicit_bzero(live.data(), live.size() * sizeof(void*));  // no stale copies for the next test
  for (uintptr_t m : list) FreeMangled(m);
}

}  // namespace
}  // namespace stackwalk::leakcheck
