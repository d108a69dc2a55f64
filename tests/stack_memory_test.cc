#include "core/stack_memory.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

namespace stackwalk::internal {
namespace {

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

struct AltResult {
  int regions = 0;
  bool altstack_first = false;
  bool reads_thread_stack = false;
};
AltResult g_alt;
uint64_t g_thread_stack_addr;
uintptr_t g_alt_lo, g_alt_hi;

void OnAltStack(int) {
  int local = 0;
  uint64_t sp = reinterpret_cast<uintptr_t>(&local);
  StackMemory mem;
  if (!mem.InitForCurrentThread(sp)) return;
  g_alt.altstack_first = mem.region(0).lo == g_alt_lo && mem.region(0).hi == g_alt_hi;
  uint64_t v;
  g_alt.reads_thread_stack = mem.Read(g_thread_stack_addr, &v, sizeof(v));
  g_alt.regions = mem.region_count();
}

class AltStack : public ::testing::TestWithParam<bool> {};

TEST_P(AltStack, HandlerOnAltStackReadsBothStacks) {
  const bool cold_cache = GetParam();
  std::vector<char> alt(64 * 1024);
  g_alt_lo = reinterpret_cast<uintptr_t>(alt.data());
  g_alt_hi = g_alt_lo + alt.size();
  stack_t ss{}, old{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  ASSERT_EQ(sigaltstack(&ss, &old), 0);
  struct sigaction sa {}, old_sa{};
  sa.sa_handler = OnAltStack;
  sa.sa_flags = SA_ONSTACK;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old_sa), 0);

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
  sigaction(SIGUSR1, &old_sa, nullptr);
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, nullptr);

  EXPECT_TRUE(g_alt.altstack_first);
  EXPECT_TRUE(g_alt.reads_thread_stack);  // cold: found on the miss, once
  EXPECT_EQ(g_alt.regions, 2);
}

INSTANTIATE_TEST_SUITE_P(Cache, AltStack, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Cold" : "Warm"; });

}  // namespace
}  // namespace stackwalk::internal
