#include "core/arena.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace stackwalk::internal {
namespace {

TEST(Arena, AlignedZeroedAndDistinct) {
  Arena arena;
  std::vector<std::pair<uintptr_t, size_t>> blocks;
  for (size_t i = 1; i < 2000; ++i) {
    size_t size = (i * 37) % 700 + 1;
    size_t align = size_t{1} << (i % 7);
    auto* p = static_cast<unsigned char*>(arena.Allocate(size, align));
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
    ASSERT_TRUE(std::all_of(p, p + size, [](unsigned char c) { return c == 0; }));
    std::memset(p, 0xab, size);
    blocks.push_back({reinterpret_cast<uintptr_t>(p), size});
  }
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); ++i) {
    ASSERT_LE(blocks[i - 1].first + blocks[i - 1].second, blocks[i].first) << "overlap";
  }
  EXPECT_GE(arena.mapped_bytes(), Arena::kChunkSize);
}

TEST(Arena, LargeRequestsAndBadAlignment) {
  Arena arena;
  auto* big = static_cast<char*>(arena.Allocate(3 * Arena::kChunkSize, 64));
  ASSERT_NE(big, nullptr);
  big[3 * Arena::kChunkSize - 1] = 1;  // the whole block is mapped
  EXPECT_EQ(arena.Allocate(16, 3), nullptr);
  EXPECT_EQ(arena.Allocate(16, 8192), nullptr);
  EXPECT_EQ(arena.Allocate(~size_t{0} - 100, 8), nullptr);
}

TEST(Arena, ManyThreadsNeverShareBytes) {
  Arena arena;
  constexpr int kThreads = 4, kEach = 20000;
  std::vector<std::vector<uintptr_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto* p = static_cast<uint32_t*>(arena.Allocate(24, 8));
        if (p == nullptr) return;
        *p = static_cast<uint32_t>(t);
        got[t].push_back(reinterpret_cast<uintptr_t>(p));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uintptr_t> all;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[t].size(), static_cast<size_t>(kEach));
    for (uintptr_t p : got[t]) ASSERT_EQ(*reinterpret_cast<uint32_t*>(p), static_cast<uint32_t>(t));
    all.insert(all.end(), got[t].begin(), got[t].end());
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) ASSERT_GE(all[i] - all[i - 1], 24u);
}

// Every mapping the arena keeps is listed (what the leak checker leaves out of its roots), the
// chunk a racing thread gave back is not, and each allocation lies in a listed mapping.
TEST(Arena, ListsEveryMappingItKeeps) {
  static Arena arena;
  std::vector<uintptr_t> got;
  for (int i = 0; i < 3000; ++i) {  // several 1 MiB chunks
    got.push_back(reinterpret_cast<uintptr_t>(arena.Allocate(1024, 16)));
  }
  got.push_back(reinterpret_cast<uintptr_t>(arena.Allocate(Arena::kChunkSize, 64)));  // its own
  std::vector<std::pair<uintptr_t, uintptr_t>> mappings;
  arena.ForEachMapping([&](uintptr_t lo, uintptr_t hi) { mappings.emplace_back(lo, hi); });
  size_t bytes = 0;
  for (const auto& m : mappings) bytes += m.second - m.first;
  EXPECT_EQ(bytes, arena.mapped_bytes());
  EXPECT_GE(mappings.size(), 4u);
  for (uintptr_t p : got) {
    ASSERT_NE(p, 0u);
    EXPECT_TRUE(std::any_of(mappings.begin(), mappings.end(),
                            [p](const auto& m) { return p >= m.first && p < m.second; }))
        << std::hex << p;
  }
}

void* g_from_handler;
void OnSignal(int) { g_from_handler = Arena::Global().Allocate(128, 16); }

TEST(Arena, UsableInsideASignalHandler) {
  struct sigaction sa {}, old{};
  sa.sa_handler = OnSignal;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_NE(g_from_handler, nullptr);
}

}  // namespace
}  // namespace stackwalk::internal
