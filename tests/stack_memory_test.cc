#include "core/stack_memory.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "core/proc_maps.h"
#include "writable_words.h"

namespace stackwalk::internal {
namespace {

// The cached bounds lie in the thread's static TLS, a root of the leak checker's scan. A walk on a
// coroutine's stack (a block of the program's heap, or a mapping of its own) caches that
// mapping's bounds, which, once the program frees the stack, lie in whatever block comes there
// next (the heap's end is passed by the next blocks as the heap grows) and keep it reachable.
// (The walk's SP given by hand: no stack switch, which sanitizers do not follow.)
TEST(StackMemory, TheBoundsCachedForACoroutinesStackAreNotNamedInTheThreadsTls) {
  constexpr size_t kStackBytes = 64 << 10;
  std::unique_ptr<char[]> stack(new char[kStackBytes]);  // the heap's
  const uint64_t sp = reinterpret_cast<uintptr_t>(stack.get()) + kStackBytes - 256;
  StackMemory mem;
  ASSERT_TRUE(mem.InitForCurrentThread(sp));
  Mapping mapping;
  ASSERT_TRUE(FindMapping(sp, &mapping));
  const auto* code = reinterpret_cast<const void*>(&StackMemory::ResetThreadCacheForTesting);
  EXPECT_EQ(testing::ThreadTlsWordsEqualTo(code, mapping.range.lo), 0u) << "its start";
  EXPECT_EQ(testing::ThreadTlsWordsEqualTo(code, mapping.range.hi), 0u) << "its end";
  // The next walk there finds it from the bounds as cached.
  StackMemory again;
  EXPECT_TRUE(again.InitForCurrentThread(sp));
  ASSERT_EQ(again.region_count(), 1);
  EXPECT_EQ(again.region(0).lo, mapping.range.lo);
  EXPECT_EQ(again.region(0).hi, mapping.range.hi);
  StackMemory::ResetThreadCacheForTesting();
}

TEST(StackMemory, ReadsOwnStackOnly) {
  volatile uint64_t local = 0x1122334455667788ull;
  uint64_t sp = reinterpret_cast<uintptr_t>(&local);
  StackMemory mem;
  ASSERT_TRUE(mem.InitForCurrentThread(sp));
  ASSERT_EQ(mem.region_count(), 1);
  uint64_t v = 0;
  ASSERT_TRUE(mem.Read(sp, &v, 8));
  EXPECT_EQ(v, 0x1122334455667788ull);

  std::unique_ptr<uint64_t> heap(new uint64_t(7));
  EXPECT_FALSE(mem.Read(reinterpret_cast<uintptr_t>(heap.get()), &v, 8));
  EXPECT_FALSE(mem.Read(16, &v, 8));
  EXPECT_FALSE(mem.Read(mem.region(0).hi - 4, &v, 8));  // straddles the top
  EXPECT_FALSE(mem.Read(~uint64_t{0} - 3, &v, 8));       // wraps around
}

TEST(StackMemory, EveryThreadFindsItsOwnStack) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&ok, i] {
      int local = 0;
      StackMemory mem;
      uint64_t sp = reinterpret_cast<uintptr_t>(&local);
      ok[i] = mem.InitForCurrentThread(sp) && mem.region(0).Contains(sp) ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

TEST(StackMemory, SpOutsideAnyStackIsRefused) {
  StackMemory mem;
  EXPECT_FALSE(mem.InitForCurrentThread(8));  // unmapped
  // A page of its own: a const global may sit in a writable mapping (AddressSanitizer moves them).
  void* read_only = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(read_only, MAP_FAILED);
  EXPECT_FALSE(mem.InitForCurrentThread(reinterpret_cast<uintptr_t>(read_only)));  // not writable
  munmap(read_only, 4096);
}

// Tests of the initial stack growing below its cached bounds, with the one-call page check
// (parameter true) or without it (the maps).
class InitialStack : public ::testing::TestWithParam<bool> {
 protected:
  // Caches the bounds of the stack at `sp` afresh, into *cached: false (and the test skipped) off
  // the main thread, where the check is not trusted, or where the stack is 4 MiB deep already.
  bool CacheBoundsAt(uint64_t sp, AddressRange* cached) {
    if (syscall(SYS_gettid) != getpid()) {
      Skip("not on the main thread");
      return false;
    }
    StackMemory::UseRangeCheckForTesting(GetParam());
    if (GetParam() && !StackMemory::RangeCheckTrustedForTesting()) {
      Skip("madvise(MADV_POPULATE_READ) is not trusted here (before Linux 5.14, qemu)");
      return false;
    }
    StackMemory::ResetThreadCacheForTesting();
    StackMemory first;
    if (!first.InitForCurrentThread(sp)) {
      ADD_FAILURE() << "no stack at " << sp;
      return false;
    }
    *cached = first.region(0);
    if (sp - cached->lo > (4u << 20)) {
      Skip("the stack's mapping is 4 MiB deep already (a stack of a fixed size, as qemu-user "
               "gives)");
      return false;
    }
    return true;
  }
  void TearDown() override {
    StackMemory::UseRangeCheckForTesting(true);
    StackMemory::ResetThreadCacheForTesting();
  }

 private:
  static void Skip(const char* why) { GTEST_SKIP() << why; }
};

// The main thread's stack grows down as its frames go deeper: each walk from below the bounds
// found before finds the stack again, with one madvise call where the kernel has the one-call
// check (no read of /proc/self/maps, which a compiler's recursion made 41 times), else from the
// maps. Either way the region reaches from the walk's sp to the stack's top.
class MainStackGrowth : public InitialStack {};

struct GrowthSeen {
  int walks = 0;
  int below_bounds = 0;  // walks whose sp lay below the bounds the walk before found
  int found = 0;         // walks whose region held their sp and reached the stack's top
  uint64_t top = 0;
  uint64_t lowest = ~uint64_t{0};
};

// Recursion in frames of 64 KiB, each touched, so that the stack's mapping grows under it.
__attribute__((noinline)) void WalkDeeper(int levels, GrowthSeen* seen) {
  volatile char frame[64 << 10];
  for (size_t i = 0; i < sizeof(frame); i += 4096) frame[i] = static_cast<char>(i);
  const uint64_t sp = reinterpret_cast<uintptr_t>(&frame[0]);
  StackMemory mem;
  ++seen->walks;
  if (sp < seen->lowest) ++seen->below_bounds;
  if (mem.InitForCurrentThread(sp) && mem.region_count() == 1 && mem.region(0).Contains(sp) &&
      mem.region(0).hi == seen->top) {
    ++seen->found;
    if (mem.region(0).lo < seen->lowest) seen->lowest = mem.region(0).lo;
  }
  if (levels > 1) WalkDeeper(levels - 1, seen);
  frame[0] = 1;  // keeps the frame live across the call
}

TEST_P(MainStackGrowth, AWalkBelowTheBoundsFoundBeforeFindsTheStackAgain) {
  const bool range_check = GetParam();
  int local = 0;
  AddressRange cached;
  if (!CacheBoundsAt(reinterpret_cast<uintptr_t>(&local), &cached)) return;
  // Down to 1 MiB below the mapping as found (which an earlier test may have grown).
  const uint64_t depth = reinterpret_cast<uintptr_t>(&local) - cached.lo;
  const int levels = static_cast<int>(depth >> 16) + 16;
  GrowthSeen seen;
  seen.top = cached.hi;
  seen.lowest = cached.lo;
  const uint64_t lookups_before = StackMemory::StackLookupsForTesting();
  WalkDeeper(levels, &seen);
  EXPECT_EQ(seen.found, seen.walks);
  ASSERT_GT(seen.below_bounds, 0);
  const uint64_t lookups = StackMemory::StackLookupsForTesting() - lookups_before;
  if (range_check) {
    EXPECT_EQ(lookups, 0u);
  } else {
    EXPECT_GE(lookups, static_cast<uint64_t>(seen.below_bounds));
  }
}

INSTANTIATE_TEST_SUITE_P(Check, MainStackGrowth, ::testing::Bool(), [](const auto& info) {
  return std::string(info.param ? "OneMadviseCall" : "FromTheMaps");
});

// Only the initial stack is followed below its bounds: on another stack (a coroutine's mapping,
// here on the main thread) a walk from the readable mapping right below it looks that one up in
// the maps, which refuses it (not writable), and does not take it as the same stack grown.
TEST(StackMemory, AnotherStackIsNotFollowedIntoTheMappingBelowIt) {
  constexpr size_t kPageBytes = 4096;
  void* p = mmap(nullptr, 2 * kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  const uintptr_t lower = reinterpret_cast<uintptr_t>(p), upper = lower + kPageBytes;
  ASSERT_EQ(mprotect(p, kPageBytes, PROT_READ), 0);  // two mappings, side by side
  StackMemory::ResetThreadCacheForTesting();
  StackMemory on_stack;
  ASSERT_TRUE(on_stack.InitForCurrentThread(upper + 2048));
  EXPECT_EQ(on_stack.region(0).lo, upper);
  StackMemory below;
  EXPECT_FALSE(below.InitForCurrentThread(lower + 2048));
  StackMemory::ResetThreadCacheForTesting();
  munmap(p, 2 * kPageBytes);
}

struct AltResult {
  int regions = 0;
  bool altstack_first = false;
  bool reads_thread_stack = false;
};
AltResult g_alt;
uint64_t g_thread_stack_addr;
uintptr_t g_alt_lo, g_alt_hi;

bool g_alt_verify_pages = false;  // the handler's walk checks each page, as one from a context

void OnAltStack(int) {
  int local = 0;
  uint64_t sp = reinterpret_cast<uintptr_t>(&local);
  StackMemory mem;
  if (!mem.InitForCurrentThread(sp)) return;
  g_alt.altstack_first = mem.region(0).lo == g_alt_lo && mem.region(0).hi == g_alt_hi;
  if (g_alt_verify_pages) mem.VerifyPages(sp);
  uint64_t v;
  g_alt.reads_thread_stack = mem.Read(g_thread_stack_addr, &v, sizeof(v));
  g_alt.regions = mem.region_count();
}

// OnAltStack as SIGUSR1's handler, on a 64 KiB sigaltstack, for the object's life (both put
// back as they were, also when an assertion returns early).
class OnAltStackHandler {
 public:
  OnAltStackHandler() : alt_(64 * 1024) {
    g_alt_lo = reinterpret_cast<uintptr_t>(alt_.data());
    g_alt_hi = g_alt_lo + alt_.size();
    stack_t ss{};
    ss.ss_sp = alt_.data();
    ss.ss_size = alt_.size();
    if (sigaltstack(&ss, &old_stack_) != 0) return;
    struct sigaction sa {};
    sa.sa_handler = OnAltStack;
    sa.sa_flags = SA_ONSTACK;
    installed_ = sigaction(SIGUSR1, &sa, &old_action_) == 0;
    if (!installed_) sigaltstack(&old_stack_, nullptr);
  }
  ~OnAltStackHandler() {
    if (!installed_) return;
    sigaction(SIGUSR1, &old_action_, nullptr);
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  }
  OnAltStackHandler(const OnAltStackHandler&) = delete;
  OnAltStackHandler& operator=(const OnAltStackHandler&) = delete;
  bool installed() const { return installed_; }

 private:
  std::vector<char> alt_;
  stack_t old_stack_{};
  struct sigaction old_action_ {};
  bool installed_ = false;
};

class AltStack : public ::testing::TestWithParam<bool> {};

TEST_P(AltStack, HandlerOnAltStackReadsBothStacks) {
  const bool cold_cache = GetParam();
  OnAltStackHandler handler;
  ASSERT_TRUE(handler.installed());

  volatile uint64_t on_thread_stack = 1;
  g_thread_stack_addr = reinterpret_cast<uintptr_t>(&on_thread_stack);
  if (cold_cache) {
    StackMemory::ResetThreadCacheForTesting();
  } else {
    StackMemory warm;
    ASSERT_TRUE(warm.InitForCurrentThread(g_thread_stack_addr));
  }
  g_alt = AltResult();
  raise(SIGUSR1);

  EXPECT_TRUE(g_alt.altstack_first);
  EXPECT_TRUE(g_alt.reads_thread_stack);  // cold: found on the miss, once
  EXPECT_EQ(g_alt.regions, 2);
}

INSTANTIATE_TEST_SUITE_P(Cache, AltStack, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Cold" : "Warm"; });

// A handler on a sigaltstack that walks into the interrupted initial stack, which has grown below
// the bounds cached before: the walk follows it down (one madvise call, or the maps where that
// check is not trusted) instead of ending at the old bounds.
class AltStackBelowBounds : public InitialStack {};

// Recursion in frames of 64 KiB, each touched; at the bottom the signal, its handler on the
// altstack reading a word of the deepest frame.
__attribute__((noinline)) void RaiseFromDeeper(int levels) {
  volatile char frame[64 << 10];
  for (size_t i = 0; i < sizeof(frame); i += 4096) frame[i] = static_cast<char>(i);
  if (levels > 1) {
    RaiseFromDeeper(levels - 1);
  } else {
    g_thread_stack_addr = reinterpret_cast<uintptr_t>(&frame[0]);
    raise(SIGUSR1);
  }
  frame[0] = 1;  // keeps the frame live across the call
}

TEST_P(AltStackBelowBounds, AHandlerReadsTheInitialStackGrownSinceItWasCached) {
  const bool range_check = GetParam();
  int local = 0;
  AddressRange cached;
  if (!CacheBoundsAt(reinterpret_cast<uintptr_t>(&local), &cached)) return;
  const uint64_t depth = reinterpret_cast<uintptr_t>(&local) - cached.lo;
  OnAltStackHandler handler;
  ASSERT_TRUE(handler.installed());
  for (bool verify : {false, true}) {  // the regions as found, or their pages checked
    g_alt = AltResult();
    g_alt_verify_pages = verify;
    const uint64_t lookups_before = StackMemory::StackLookupsForTesting();
    RaiseFromDeeper(static_cast<int>(depth >> 16) + 4);  // 256 KiB below the cached bounds
    const uint64_t lookups = StackMemory::StackLookupsForTesting() - lookups_before;
    ASSERT_LT(g_thread_stack_addr, cached.lo);
    EXPECT_TRUE(g_alt.altstack_first) << "verify " << verify;
    EXPECT_TRUE(g_alt.reads_thread_stack) << "verify " << verify;
    EXPECT_EQ(g_alt.regions, 2) << "verify " << verify;
    EXPECT_EQ(lookups, range_check ? 0u : 1u) << "verify " << verify;
  }
  g_alt_verify_pages = false;
}

INSTANTIATE_TEST_SUITE_P(Check, AltStackBelowBounds, ::testing::Bool(), [](const auto& info) {
  return std::string(info.param ? "OneMadviseCall" : "FromTheMaps");
});

// ---- VerifyPages: a region holds only the pages checked readable ----

constexpr uint64_t kPage = 4096;
constexpr int kPages = 96;  // more than the first batch checked ahead, and its double

enum class Hole { kProtNone, kUnmapped };

// A stand-in stack of kPages pages with one page made inaccessible, checked both ways: with the
// one-call range check where the kernel has it, and page by page.
class VerifiedPages : public ::testing::TestWithParam<std::tuple<Hole, bool>> {
 protected:
  void SetUp() override {
    StackMemory::UseRangeCheckForTesting(std::get<1>(GetParam()));
    void* p = mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    base_ = reinterpret_cast<uintptr_t>(p);
    for (int i = 0; i < kPages; ++i) reinterpret_cast<volatile uint64_t*>(base_ + i * kPage)[0] = i;
  }
  void TearDown() override {
    munmap(reinterpret_cast<void*>(base_), kPages * kPage);
    StackMemory::UseRangeCheckForTesting(true);
  }
  void MakeHole(int page) {
    void* at = reinterpret_cast<void*>(base_ + page * kPage);
    if (std::get<0>(GetParam()) == Hole::kProtNone) {
      ASSERT_EQ(mprotect(at, kPage, PROT_NONE), 0);
    } else {
      ASSERT_EQ(munmap(at, kPage), 0);
    }
  }
  // A StackMemory over the whole mapping, verifying pages from `sp_page` on.
  void Start(StackMemory* mem, int sp_page) {
    ASSERT_TRUE(mem->AddRegion({base_, base_ + kPages * kPage}));
    mem->VerifyPages(base_ + sp_page * kPage + 8);
  }
  bool ReadPage(StackMemory& mem, int page, uint64_t* v) {
    return mem.Read(base_ + page * kPage, v, sizeof(*v));
  }
  uintptr_t base_ = 0;
};

TEST_P(VerifiedPages, EveryPageReadsWithoutAHole) {
  StackMemory mem;
  Start(&mem, 2);
  for (int i = 2; i < kPages; ++i) {
    uint64_t v = ~0ull;
    ASSERT_TRUE(ReadPage(mem, i, &v)) << "page " << i;
    EXPECT_EQ(v, static_cast<uint64_t>(i));
  }
  // Below the first read too (the gap is checked).
  uint64_t v;
  EXPECT_TRUE(ReadPage(mem, 0, &v));
  EXPECT_EQ(mem.region(0).lo, base_);
  EXPECT_EQ(mem.region(0).hi, base_ + kPages * kPage);
}

// The hole inside the pages the first read checks ahead of itself: the pages below it still read,
// the hole and everything past it (one range) do not, and nothing faults.
TEST_P(VerifiedPages, HoleJustAboveTheFirstRead) {
  MakeHole(5);
  StackMemory mem;
  Start(&mem, 2);
  uint64_t v;
  for (int i = 2; i < 5; ++i) EXPECT_TRUE(ReadPage(mem, i, &v)) << "page " << i;
  EXPECT_FALSE(ReadPage(mem, 5, &v));
  EXPECT_FALSE(ReadPage(mem, 6, &v));
  EXPECT_FALSE(ReadPage(mem, 60, &v));
  EXPECT_LE(mem.region(0).hi, base_ + 5 * kPage);
  EXPECT_EQ(mem.RegionOf(base_ + 5 * kPage + 16), -1);
}

// The hole far above: reached late, after the region grew over many pages in batches.
TEST_P(VerifiedPages, HoleJustBelowAFrameReachedLate) {
  MakeHole(70);
  StackMemory mem;
  Start(&mem, 0);
  uint64_t v;
  for (int i = 0; i < 70; ++i) {
    ASSERT_TRUE(ReadPage(mem, i, &v)) << "page " << i;
    EXPECT_EQ(v, static_cast<uint64_t>(i));
  }
  // A read spanning the last good page and the hole.
  EXPECT_FALSE(mem.Read(base_ + 70 * kPage - 4, &v, sizeof(v)));
  EXPECT_FALSE(ReadPage(mem, 71, &v));
  EXPECT_EQ(mem.region(0).hi, base_ + 70 * kPage);
}

// A read far above the checked pages (a frame pointer jumping up) checks the gap: a hole in it
// refuses the read, though the read's own page is fine.
TEST_P(VerifiedPages, JumpOverAHoleIsRefused) {
  MakeHole(30);
  StackMemory mem;
  Start(&mem, 0);
  uint64_t v;
  EXPECT_FALSE(ReadPage(mem, 50, &v));
  EXPECT_TRUE(ReadPage(mem, 29, &v));
  EXPECT_FALSE(ReadPage(mem, 30, &v));
}

// The hole below the first read: reads below the checked pages check their own pages.
TEST_P(VerifiedPages, HoleBelowTheFirstRead) {
  MakeHole(10);
  StackMemory mem;
  Start(&mem, 12);
  uint64_t v;
  EXPECT_TRUE(ReadPage(mem, 11, &v));
  EXPECT_FALSE(ReadPage(mem, 10, &v));
  EXPECT_FALSE(ReadPage(mem, 3, &v));
  EXPECT_TRUE(ReadPage(mem, 80, &v));
}

INSTANTIATE_TEST_SUITE_P(
    Holes, VerifiedPages,
    ::testing::Combine(::testing::Values(Hole::kProtNone, Hole::kUnmapped), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == Hole::kProtNone ? "ProtNone" : "Unmapped") +
             (std::get<1>(info.param) ? "RangeCheck" : "PageByPage");
    });

}  // namespace
}  // namespace stackwalk::internal
