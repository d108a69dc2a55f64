// The leak checker's recording tables as classes: the live-allocation table (insert, remove,
// replace, growth and rehash, shards, the consistent walk) and the stack table (interning, ids,
// frames, the frame cap, stacks whose hashes collide).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/stack_hash.h"
#include "leakcheck/stack_table.h"

namespace stackwalk::leakcheck {
namespace {

// Addresses as the allocator gives them: 16-byte aligned, spread over several 64 MiB regions
// (the table's shard groups).
uintptr_t AddressOf(uint64_t i) { return 0x7f0000000000ull + (i % 7) * (uint64_t{64} << 20) + i * 48; }

std::map<uintptr_t, Allocation> Walk(AllocationTable& table) {
  std::map<uintptr_t, Allocation> seen;
  EXPECT_TRUE(table.ForEach(UINT64_MAX, [&](const Allocation& a) {
    EXPECT_TRUE(seen.emplace(a.address, a).second) << "walked twice: " << a.address;
  }));
  return seen;
}

TEST(AllocationTable, ForEachHeldWalksWhatForEachWalks) {
  // With every shard lock taken by the caller (the leak check's snapshot), the same blocks, each
  // once, after inserts, removals and growth.
  auto table = std::make_unique<AllocationTable>();
  for (uint64_t i = 0; i < 20000; ++i) ASSERT_TRUE(table->Insert(AddressOf(i), i + 1, 1, 1, i));
  for (uint64_t i = 0; i < 20000; i += 3) ASSERT_TRUE(table->Remove(AddressOf(i)));
  const std::map<uintptr_t, Allocation> walked = Walk(*table);
  std::map<uintptr_t, Allocation> held;
  table->LockAll();
  table->ForEachHeld([&](const Allocation& a) {
    EXPECT_TRUE(held.emplace(a.address, a).second) << "walked twice: " << a.address;
  });
  table->UnlockAll();
  ASSERT_EQ(held.size(), walked.size());
  EXPECT_EQ(held.size(), 20000u - 6667u);
  for (const auto& [address, a] : walked) {
    ASSERT_EQ(held.count(address), 1u) << address;
    EXPECT_EQ(held.at(address).size, a.size);
    EXPECT_EQ(held.at(address).sequence, a.sequence);
  }
}

TEST(AllocationTable, InsertRemoveAndTheirCounts) {
  auto table = std::make_unique<AllocationTable>();
  EXPECT_EQ(table->live_count(), 0u);
  EXPECT_FALSE(table->Remove(0x1000));  // an empty table tracks nothing
  ASSERT_TRUE(table->Insert(0x1000, 24, 7, 3, 100));
  ASSERT_TRUE(table->Insert(0x2000, 40, 8, 4, 101));
  EXPECT_EQ(table->live_count(), 2u);
  EXPECT_EQ(table->live_bytes(), 64u);
  EXPECT_GT(table->table_bytes(), 0u);

  Allocation removed{};
  ASSERT_TRUE(table->Remove(0x1000, &removed));
  EXPECT_EQ(removed.address, 0x1000u);
  EXPECT_EQ(removed.size, 24u);
  EXPECT_EQ(removed.stack_id, 7u);
  EXPECT_EQ(removed.thread, 3);
  EXPECT_EQ(removed.sequence, 100u);
  EXPECT_FALSE(table->Remove(0x1000));  // gone: a second free passes unnoticed
  EXPECT_FALSE(table->Remove(0x3000));  // never tracked
  EXPECT_EQ(table->live_count(), 1u);
  EXPECT_EQ(table->live_bytes(), 40u);
}

TEST(AllocationTable, ABlockAtATrackedAddressReplacesTheOneWhoseFreeWasMissed) {
  auto table = std::make_unique<AllocationTable>();
  Allocation replaced{};
  ASSERT_TRUE(table->Insert(0x5000, 10, 1, 1, 1, &replaced));
  EXPECT_EQ(replaced.address, 0u);  // nothing replaced
  ASSERT_TRUE(table->Insert(0x5000, 30, 2, 2, 2, &replaced));
  EXPECT_EQ(replaced.address, 0x5000u);
  EXPECT_EQ(replaced.size, 10u);
  EXPECT_EQ(replaced.stack_id, 1u);
  EXPECT_EQ(table->live_count(), 1u);
  EXPECT_EQ(table->live_bytes(), 30u);
  const auto seen = Walk(*table);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.at(0x5000).stack_id, 2u);
}

TEST(AllocationTable, GrowsAndRehashesWithoutLosingABlock) {
  auto table = std::make_unique<AllocationTable>();
  constexpr uint64_t kBlocks = 50000;  // far past every shard's first 64 slots
  for (uint64_t i = 0; i < kBlocks; ++i) {
    ASSERT_TRUE(table->Insert(AddressOf(i), i + 1, static_cast<uint32_t>(i % 97), 1, i));
  }
  EXPECT_EQ(table->live_count(), kBlocks);
  // Every other one freed, then as many new ones: deleted slots are reused or rehashed away.
  for (uint64_t i = 0; i < kBlocks; i += 2) ASSERT_TRUE(table->Remove(AddressOf(i))) << i;
  const size_t after_frees = table->table_bytes();
  for (uint64_t i = kBlocks; i < kBlocks + kBlocks / 2; ++i) {
    ASSERT_TRUE(table->Insert(AddressOf(i), i + 1, 1, 2, i));
  }
  // The table follows the live count (the same number live again), not the allocations made.
  EXPECT_LE(table->table_bytes(), 2 * after_frees);
  const auto seen = Walk(*table);
  ASSERT_EQ(seen.size(), kBlocks);
  uint64_t bytes = 0;
  for (uint64_t i = 1; i < kBlocks; i += 2) {
    auto it = seen.find(AddressOf(i));
    ASSERT_NE(it, seen.end()) << i;
    EXPECT_EQ(it->second.size, i + 1);
    EXPECT_EQ(it->second.sequence, i);
    bytes += i + 1;
  }
  for (uint64_t i = kBlocks; i < kBlocks + kBlocks / 2; ++i) bytes += i + 1;
  EXPECT_EQ(table->live_bytes(), bytes);
  // Each still found by its address (lookups and rehashing agree on where a probe starts).
  for (uint64_t i = 1; i < kBlocks; i += 2) ASSERT_TRUE(table->Remove(AddressOf(i))) << i;
  EXPECT_EQ(table->live_count(), kBlocks / 2);
}

TEST(AllocationTable, TheWalkRefusesMoreThanItsRoomAndClearForgetsAll) {
  auto table = std::make_unique<AllocationTable>();
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(table->Insert(AddressOf(i), 8, 1, 1, i));
  int called = 0;
  EXPECT_FALSE(table->ForEach(99, [&](const Allocation&) { ++called; }));
  EXPECT_EQ(called, 0);  // all or nothing
  EXPECT_TRUE(table->ForEach(100, [&](const Allocation&) { ++called; }));
  EXPECT_EQ(called, 100);
  table->Clear();
  EXPECT_EQ(table->live_count(), 0u);
  EXPECT_EQ(table->live_bytes(), 0u);
  EXPECT_TRUE(Walk(*table).empty());
  EXPECT_FALSE(table->Remove(AddressOf(5)));
  ASSERT_TRUE(table->Insert(AddressOf(5), 8, 1, 1, 0));  // usable again
  EXPECT_EQ(table->live_count(), 1u);
}

TEST(AllocationTable, SequencesAreReservedInBlocks) {
  auto table = std::make_unique<AllocationTable>();
  const uint64_t first = table->ReserveSequences(64);
  const uint64_t second = table->ReserveSequences(64);
  EXPECT_EQ(second, first + 64);
  EXPECT_EQ(table->next_sequence(), second + 64);
}

TEST(AllocationTable, ThreadsOnEveryShardAtOnce) {
  auto table = std::make_unique<AllocationTable>();
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kEach; ++i) {
        const uint64_t n = t * kEach + i;
        table->Insert(AddressOf(n), 16, 1, t, n);
        if (i % 3 == 0) table->Remove(AddressOf(n));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const uint64_t expected = kThreads * (kEach - (kEach + 2) / 3);
  EXPECT_EQ(table->live_count(), expected);
  EXPECT_EQ(Walk(*table).size(), expected);
  EXPECT_EQ(table->live_bytes(), expected * 16);
}

TEST(StackTable, InternsEachDistinctStackOnce) {
  auto stacks = std::make_unique<StackTable>();
  void* a[] = {reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000),
               reinterpret_cast<void*>(0x3000)};
  void* b[] = {reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000),
               reinterpret_cast<void*>(0x3001)};
  const uint32_t id_a = stacks->Intern(a, 3);
  const uint32_t id_b = stacks->Intern(b, 3);
  const uint32_t id_prefix = stacks->Intern(a, 2);  // a prefix is a stack of its own
  EXPECT_NE(id_a, StackTable::kNoStack);
  EXPECT_NE(id_a, id_b);
  EXPECT_NE(id_a, id_prefix);
  EXPECT_EQ(stacks->Intern(a, 3), id_a);
  EXPECT_EQ(stacks->size(), 3u);
  EXPECT_GT(stacks->bytes(), 0u);

  void* pcs[StackTable::kMaxFrames];
  ASSERT_EQ(stacks->Frames(id_b, pcs), 3);
  EXPECT_EQ(pcs[2], b[2]);
  ASSERT_EQ(stacks->Frames(id_prefix, pcs), 2);
  EXPECT_EQ(pcs[1], a[1]);
  EXPECT_EQ(stacks->Frames(StackTable::kNoStack, pcs), 0);
  EXPECT_EQ(stacks->Frames(12345, pcs), 0);  // never handed out
}

// A stack's frames are a path of nodes from the outermost frame in: stacks that share their outer
// frames share those nodes (a stack that is another's outer part adds none), and each stack's
// frames read back whole and in order.
TEST(StackTable, StacksSharingTheirOuterFramesShareTheirNodes) {
  auto stacks = std::make_unique<StackTable>();
  constexpr int kDepth = 32;
  constexpr int kInner = 100;
  std::vector<void*> frames(kDepth);
  for (int i = 0; i < kDepth; ++i) {
    frames[i] = reinterpret_cast<void*>(uintptr_t{0x400000} + 16 * i);
  }
  std::vector<uint32_t> ids;
  for (int k = 0; k < kInner; ++k) {
    frames[0] = reinterpret_cast<void*>(uintptr_t{0x500000} + k);  // a different innermost frame
    ids.push_back(stacks->Intern(frames.data(), kDepth));
    ASSERT_NE(ids.back(), StackTable::kNoStack);
  }
  EXPECT_EQ(stacks->frame_nodes(), static_cast<uint32_t>(kDepth - 1 + kInner));
  const uint32_t outer = stacks->Intern(frames.data() + 1, kDepth - 1);  // their shared part
  ASSERT_NE(outer, StackTable::kNoStack);
  EXPECT_EQ(stacks->frame_nodes(), static_cast<uint32_t>(kDepth - 1 + kInner));
  EXPECT_EQ(stacks->size(), static_cast<uint32_t>(kInner + 1));

  void* pcs[StackTable::kMaxFrames];
  for (int k = 0; k < kInner; ++k) {
    frames[0] = reinterpret_cast<void*>(uintptr_t{0x500000} + k);
    ASSERT_EQ(stacks->Frames(ids[k], pcs), kDepth);
    EXPECT_TRUE(std::equal(pcs, pcs + kDepth, frames.begin())) << "stack " << k;
    EXPECT_EQ(stacks->Intern(frames.data(), kDepth), ids[k]);
  }
  ASSERT_EQ(stacks->Frames(outer, pcs), kDepth - 1);
  EXPECT_TRUE(std::equal(pcs, pcs + kDepth - 1, frames.begin() + 1));
  // A stack differing from a known one in its outermost frame only is another path.
  frames[kDepth - 1] = reinterpret_cast<void*>(uintptr_t{0x600000});
  const uint32_t other_root = stacks->Intern(frames.data(), kDepth);
  EXPECT_NE(other_root, ids.back());
  EXPECT_EQ(stacks->frame_nodes(), static_cast<uint32_t>(kDepth - 1 + kInner + kDepth));
}

// Against an oracle: random stacks over few distinct frames (so that they share outer parts in
// every way: one the outer part of the next, the next the outer part of the last, none shared)
// each read back as interned, the same stack the same id, and as many nodes as distinct outer
// parts (suffixes) among them.
TEST(StackTable, RandomStacksReadBackAndTheirNodesAreTheirDistinctOuterParts) {
  auto stacks = std::make_unique<StackTable>();
  std::mt19937 random(41);
  std::map<std::vector<void*>, uint32_t> ids;
  std::set<std::vector<void*>> outer_parts;
  std::vector<void*> previous;
  for (int round = 0; round < 3000; ++round) {
    std::vector<void*> pcs;
    const int kind = static_cast<int>(random() % 4);
    if (kind == 0 && !previous.empty()) {  // the last one's outer part
      pcs.assign(previous.begin() + static_cast<long>(random() % previous.size()), previous.end());
    } else if (kind == 1 && !previous.empty() && previous.size() < StackTable::kMaxFrames) {
      pcs = previous;  // the last one called deeper
      pcs.insert(pcs.begin(), reinterpret_cast<void*>(uintptr_t{0x1000} + random() % 5));
    } else {
      const int n = 1 + static_cast<int>(random() % 12);
      for (int i = 0; i < n; ++i) {
        pcs.push_back(reinterpret_cast<void*>(uintptr_t{0x1000} + random() % 3));
      }
    }
    const uint32_t id = stacks->Intern(pcs.data(), static_cast<int>(pcs.size()));
    ASSERT_NE(id, StackTable::kNoStack);
    auto [known, added] = ids.emplace(pcs, id);
    ASSERT_EQ(known->second, id) << "round " << round;
    for (size_t i = 0; i < pcs.size(); ++i) {
      outer_parts.emplace(pcs.begin() + static_cast<long>(i), pcs.end());
    }
    previous = pcs;
  }
  EXPECT_EQ(stacks->size(), ids.size());
  EXPECT_EQ(stacks->frame_nodes(), outer_parts.size());
  void* pcs[StackTable::kMaxFrames];
  for (const auto& [want, id] : ids) {
    ASSERT_EQ(stacks->Frames(id, pcs), static_cast<int>(want.size()));
    EXPECT_TRUE(std::equal(want.begin(), want.end(), pcs)) << "stack " << id;
  }
}

// The buckets double as stacks come (4,096 at first), relinked while other threads look stacks
// up without the lock: a known stack keeps its one id throughout, a new one is added once.
TEST(StackTable, KnownStacksKeepTheirIdsWhileTheBucketsGrow) {
  auto stacks = std::make_unique<StackTable>();
  constexpr int kKnown = 64;
  constexpr int kNew = 40000;  // through four doublings
  std::vector<std::vector<void*>> known(kKnown);
  std::vector<uint32_t> known_ids(kKnown);
  for (int k = 0; k < kKnown; ++k) {
    known[k] = {reinterpret_cast<void*>(uintptr_t{0x7000} + k), reinterpret_cast<void*>(0x8000)};
    known_ids[k] = stacks->Intern(known[k].data(), 2);
    ASSERT_NE(known_ids[k], StackTable::kNoStack);
  }
  std::atomic<bool> adding{true};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    for (int round = 0; adding.load() || round < 10; ++round) {
      for (int k = 0; k < kKnown; ++k) {
        bool added = false;
        if (stacks->Intern(known[k].data(), 2, &added) != known_ids[k] || added) ++wrong;
      }
    }
  });
  std::vector<uint32_t> new_ids(kNew);
  for (int i = 0; i < kNew; ++i) {
    void* pcs[3] = {reinterpret_cast<void*>(uintptr_t{0x100000} + i),
                    reinterpret_cast<void*>(uintptr_t{0x200000} + i % 7),
                    reinterpret_cast<void*>(0x8000)};
    new_ids[i] = stacks->Intern(pcs, 3);
  }
  adding = false;
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(stacks->size(), static_cast<uint32_t>(kKnown + kNew));
  // Each node once, the child index grown past its first 16K slots meanwhile: the common outer
  // frame, the known stacks' 64 and the new ones' 7 under it, a leaf for each new stack.
  EXPECT_EQ(stacks->frame_nodes(), static_cast<uint32_t>(1 + kKnown + 7 + kNew));
  // Found again through the grown index: new leaves under the 7, alternately (so that the stack
  // added last never shares its middle frame), and nothing else made.
  for (int i = 0; i < 1000; ++i) {
    void* pcs[3] = {reinterpret_cast<void*>(uintptr_t{0x300000} + i),
                    reinterpret_cast<void*>(uintptr_t{0x200000} + i % 7),
                    reinterpret_cast<void*>(0x8000)};
    ASSERT_NE(stacks->Intern(pcs, 3), StackTable::kNoStack);
  }
  EXPECT_EQ(stacks->frame_nodes(), static_cast<uint32_t>(1 + kKnown + 7 + kNew + 1000));
  for (int i = 0; i < kNew; i += 97) {
    void* pcs[3] = {reinterpret_cast<void*>(uintptr_t{0x100000} + i),
                    reinterpret_cast<void*>(uintptr_t{0x200000} + i % 7),
                    reinterpret_cast<void*>(0x8000)};
    EXPECT_EQ(stacks->Intern(pcs, 3), new_ids[i]);
    void* back[StackTable::kMaxFrames];
    ASSERT_EQ(stacks->Frames(new_ids[i], back), 3);
    EXPECT_TRUE(std::equal(back, back + 3, pcs));
  }
}

TEST(StackTable, KeepsAtMostMaxFramesAndTakesAnEmptyStack) {
  auto stacks = std::make_unique<StackTable>();
  std::vector<void*> deep(StackTable::kMaxFrames + 10);
  for (size_t i = 0; i < deep.size(); ++i) deep[i] = reinterpret_cast<void*>(0x400000 + i * 4);
  const uint32_t id = stacks->Intern(deep.data(), static_cast<int>(deep.size()));
  void* pcs[StackTable::kMaxFrames];
  ASSERT_EQ(stacks->Frames(id, pcs), StackTable::kMaxFrames);
  // The same first kMaxFrames frames are the same stack.
  EXPECT_EQ(stacks->Intern(deep.data(), StackTable::kMaxFrames), id);
  const uint32_t empty = stacks->Intern(nullptr, 0);
  EXPECT_NE(empty, StackTable::kNoStack);
  EXPECT_EQ(stacks->Intern(deep.data(), -3), empty);
  EXPECT_EQ(stacks->Frames(empty, pcs), 0);
}

// Two different stacks with the same 64-bit hash (made by solving the hash's first step: frame 1
// is added to the product of frame 0, so a changed frame 0 is undone by frame 1) are two stacks:
// the table compares the frames, not only the hash.
TEST(StackTable, StacksWhoseHashesCollideAreKeptApart) {
  if (sizeof(uintptr_t) < sizeof(uint64_t)) {
    GTEST_SKIP() << "a 32-bit frame cannot cancel the high half of a 64-bit lane";
  }
  auto stacks = std::make_unique<StackTable>();
  void* x[] = {reinterpret_cast<void*>(0x401000), reinterpret_cast<void*>(0x402000),
               reinterpret_cast<void*>(0x403000), reinterpret_cast<void*>(0x404000),
               reinterpret_cast<void*>(0x405000)};
  void* y[5];
  std::copy(std::begin(x), std::end(x), std::begin(y));
  y[0] = reinterpret_cast<void*>(0x401008);
  const uint64_t start = stack_hash::kStart[0] ^ 5;
  y[1] = reinterpret_cast<void*>(static_cast<uintptr_t>(
      stack_hash::Step2(start, x[0], x[1]) - stack_hash::Step(start, y[0])));
  ASSERT_EQ(StackHash(x, 5), StackHash(y, 5)) << "the collision must be solved for this hash";
  const uint32_t id_x = stacks->Intern(x, 5);
  const uint32_t id_y = stacks->Intern(y, 5);
  EXPECT_NE(id_x, id_y);
  EXPECT_EQ(stacks->Intern(x, 5), id_x);
  EXPECT_EQ(stacks->Intern(y, 5), id_y);
  EXPECT_EQ(stacks->size(), 2u);
  void* pcs[StackTable::kMaxFrames];
  ASSERT_EQ(stacks->Frames(id_y, pcs), 5);
  EXPECT_TRUE(std::equal(pcs, pcs + 5, y));
  ASSERT_EQ(stacks->Frames(id_x, pcs), 5);
  EXPECT_TRUE(std::equal(pcs, pcs + 5, x));
}

// Every frame goes into the hash, whatever the stack's depth (the hash takes two frames a step,
// and the last one to seven of a stack by steps of their own): a stack that differs from another
// in one frame only hashes differently.
TEST(StackHash, EveryFrameOfEveryDepthChangesTheHash) {
  std::vector<void*> frames(StackTable::kMaxFrames);
  for (size_t i = 0; i < frames.size(); ++i) {
    frames[i] = reinterpret_cast<void*>(uintptr_t{0x401000} + 0x130 * i);
  }
  for (int n = 1; n <= StackTable::kMaxFrames; ++n) {
    const uint64_t hash = StackHash(frames.data(), n);
    for (int i = 0; i < n; ++i) {
      std::vector<void*> changed(frames.begin(), frames.begin() + n);
      changed[i] = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(changed[i]) + 1);
      EXPECT_NE(StackHash(changed.data(), n), hash) << "frame " << i << " of " << n;
    }
    EXPECT_NE(StackHash(frames.data(), n - 1), hash) << "the depth " << n;
  }
}

TEST(StackTable, ManyStacksFromManyThreadsGetDistinctIds) {
  auto stacks = std::make_unique<StackTable>();
  constexpr int kThreads = 4;
  constexpr int kStacks = 20000;  // past one id chunk (4,096)
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStacks));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Every thread interns the same stacks, in its own order.
      for (int k = 0; k < kStacks; ++k) {
        const int s = (t % 2 == 0) ? k : kStacks - 1 - k;
        void* pcs[2] = {reinterpret_cast<void*>(uintptr_t{0x1000} + s),
                        reinterpret_cast<void*>(uintptr_t{0x9000})};
        ids[t][s] = stacks->Intern(pcs, 2);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(stacks->size(), static_cast<uint32_t>(kStacks));
  std::set<uint32_t> distinct;
  for (int s = 0; s < kStacks; ++s) {
    for (int t = 1; t < kThreads; ++t) ASSERT_EQ(ids[t][s], ids[0][s]) << s;
    distinct.insert(ids[0][s]);
    void* pcs[StackTable::kMaxFrames];
    ASSERT_EQ(stacks->Frames(ids[0][s], pcs), 2);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pcs[0]), uintptr_t{0x1000} + s);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kStacks));
}

}  // namespace
}  // namespace stackwalk::leakcheck
