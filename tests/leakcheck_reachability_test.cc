// The reachability scan on a synthetic heap: blocks that point at each other (chains, a cycle,
// interior pointers), roots given explicitly, and what the scan must not count as a reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/reachability.h"

namespace stackwalk::leakcheck {
namespace {

// A heap of `sizes.size()` blocks in one aligned arena, each block's words zero, with the
// records the scan takes (sorted by address, as it needs them).
class SyntheticHeap {
 public:
  explicit SyntheticHeap(const std::vector<uint64_t>& sizes) {
    uint64_t total = 0;
    for (uint64_t size : sizes) total += (size + 31) & ~uint64_t{15};
    arena_.assign(total / sizeof(uintptr_t) + 2, 0);
    uintptr_t at = reinterpret_cast<uintptr_t>(arena_.data());
    at = (at + 15) & ~uintptr_t{15};
    for (size_t i = 0; i < sizes.size(); ++i) {
      blocks_.push_back(Allocation{at, sizes[i], i, static_cast<uint32_t>(i + 1), 1});
      at += (sizes[i] + 31) & ~uint64_t{15};  // a gap between blocks, as chunk headers leave
    }
  }
  uintptr_t Address(size_t block, uint64_t offset = 0) const { return blocks_[block].address + offset; }
  // Stores `value` in the word at `offset` of `block`.
  void Store(size_t block, uint64_t offset, uintptr_t value) {
    *reinterpret_cast<uintptr_t*>(Address(block, offset)) = value;
  }
  const Allocation* blocks() const { return blocks_.data(); }
  size_t size() const { return blocks_.size(); }

 private:
  std::vector<uintptr_t> arena_;
  std::vector<Allocation> blocks_;
};

// The marks of a scan from `roots` (an array of words, scanned directly or copied).
std::vector<uint8_t> Scan(const SyntheticHeap& heap, const std::vector<uintptr_t>& roots,
                          bool copied = false) {
  auto marker = std::make_unique<ReachabilityMarker>(heap.blocks(), heap.size());
  const auto start = reinterpret_cast<uintptr_t>(roots.data());
  const uintptr_t end = start + roots.size() * sizeof(uintptr_t);
  if (copied) {
    marker->ScanCopied(start, end);
  } else {
    marker->ScanDirect(start, end);
  }
  marker->Propagate();
  return marker->Take();
}

TEST(Reachability, FollowsChainsFromTheRootsOnly) {
  // 0 -> 1 -> 2 reachable from the root; 3 -> 4 a dropped list; 5 alone.
  SyntheticHeap heap({64, 64, 64, 64, 64, 64});
  heap.Store(0, 8, heap.Address(1));
  heap.Store(1, 56, heap.Address(2));  // the last word of a block is read too
  heap.Store(3, 0, heap.Address(4));
  for (bool copied : {false, true}) {
    const std::vector<uint8_t> marks = Scan(heap, {0, heap.Address(0), 12345}, copied);
    EXPECT_EQ(marks, (std::vector<uint8_t>{1, 1, 1, 0, 0, 0})) << "copied " << copied;
  }
  // With no root, nothing is reachable.
  EXPECT_EQ(Scan(heap, {}), std::vector<uint8_t>(6, 0));
}

TEST(Reachability, InteriorPointersCountAndACycleEnds) {
  SyntheticHeap heap({128, 48, 48, 32});
  heap.Store(0, 0, heap.Address(1, 40));   // into the middle of block 1
  heap.Store(1, 0, heap.Address(2));
  heap.Store(2, 8, heap.Address(1, 8));    // 1 <-> 2: a cycle
  heap.Store(3, 0, heap.Address(0));       // 3 points at 0, nothing points at 3
  const std::vector<uint8_t> marks = Scan(heap, {heap.Address(0, 100)});
  EXPECT_EQ(marks, (std::vector<uint8_t>{1, 1, 1, 0}));
}

TEST(Reachability, WhatIsNotAReference) {
  // A 72-byte block fills its glibc chunk (80 bytes): the word at offset 64 is the next chunk's
  // header, which glibc's own state points at. Pointers one past a block's end, or into the
  // gap between blocks, point at no block.
  SyntheticHeap heap({72, 16, 16, 16});
  const std::vector<uint8_t> marks =
      Scan(heap, {heap.Address(0, 64), heap.Address(1, 16), heap.Address(2) - 8,
                  heap.Address(3) + 1 /* interior: counts */});
  EXPECT_EQ(marks, (std::vector<uint8_t>{0, 0, 0, 1}));
  // The same word inside the block is a reference when it is not at the chunk header.
  EXPECT_EQ(Scan(heap, {heap.Address(0, 56)})[0], 1);
}

TEST(Reachability, ALongListAndBlocksLargerThanTheCopyBuffer) {
  // A list of 5,000 nodes (more than one batch of copied blocks) and a 100 KB block (larger than
  // the scan's buffer) holding the head, found through the root.
  std::vector<uint64_t> sizes(5000, 32);
  sizes.push_back(100000);
  SyntheticHeap heap(sizes);
  for (size_t i = 0; i + 1 < 5000; ++i) heap.Store(i, 16, heap.Address(i + 1));
  heap.Store(5000, 99992 - 99992 % 8, heap.Address(0));  // in the big block's last word
  const std::vector<uint8_t> marks = Scan(heap, {heap.Address(5000, 4096)});
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 1), 5001);
  // Cut in the middle: the tail is unreachable.
  heap.Store(2499, 16, 0);
  const std::vector<uint8_t> cut = Scan(heap, {heap.Address(5000)});
  EXPECT_EQ(std::count(cut.begin(), cut.end(), 1), 2501);
  EXPECT_EQ(cut[2499], 1);
  EXPECT_EQ(cut[2500], 0);
}

TEST(Reachability, AFanOutIsCopiedInBatches) {
  // One block pointing at 3,000 others: they are pending at once and copied 1,024 at a time;
  // every second one points at one more block.
  std::vector<uint64_t> sizes(6001, 32);
  sizes[0] = 3000 * sizeof(uintptr_t);
  SyntheticHeap heap(sizes);
  for (size_t i = 0; i < 3000; ++i) {
    heap.Store(0, i * sizeof(uintptr_t), heap.Address(1 + i));
    if (i % 2 == 0) heap.Store(1 + i, 24, heap.Address(3001 + i));
  }
  const std::vector<uint8_t> marks = Scan(heap, {heap.Address(0)});
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 1), 1 + 3000 + 1500);
  EXPECT_EQ(marks[3001], 1);
  EXPECT_EQ(marks[3002], 0);
}

TEST(Reachability, MarkReachableScansGlobals) {
  // The whole scan with its own roots: a block held in a global is reachable; one whose address
  // is nowhere is not.
#if defined(STACKWALK_SANITIZE_BUILD)
  GTEST_SKIP() << "the scan reads every word of this stack and of the writable segments, "
                  "sanitizer redzones included, which AddressSanitizer reports by design";
#endif
  static volatile uintptr_t global_root = 0;  // volatile: the stores are what is tested
  SyntheticHeap heap({64, 64, 64});
  global_root = heap.Address(1);
  const int here = 0;
  ThreadRegistry threads;
  const std::vector<uint8_t> marks = MarkReachable(heap.blocks(), heap.size(), threads, 0,
                                                   reinterpret_cast<uintptr_t>(&here));
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks[1], 1);
  EXPECT_EQ(marks[2], 0);
  global_root = 0;
  EXPECT_EQ(MarkReachable(heap.blocks(), heap.size(), threads, 0,
                          reinterpret_cast<uintptr_t>(&here))[1], 0);
}

}  // namespace
}  // namespace stackwalk::leakcheck
