// The scan (scan/mark.h) on a heap of real malloc'ed blocks with hand-made roots: marking from
// the roots (interior pointers, the allocator's next-chunk-header pointer, ignored blocks, roots
// copied through a reader that refuses an unmapped range, blocks far apart and larger than a
// read), the direct / indirect split (a dropped list, cycles), the spread of a suppressed leak,
// and scratch exhaustion. A plain reference marker (binary search, no page index) is the oracle
// for a random graph.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "leakcheck/scan/mark.h"
#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/safe_reader.h"
#include "leakcheck/scan/sort_by_address.h"

namespace stackwalk::leakcheck {
namespace {

constexpr size_t kWord = sizeof(uintptr_t);

// Real blocks from malloc, zeroed, with the records the scan takes (sorted by address).
// Block i keeps its index as name; sequence numbers are given (default: i).
class Heap {
 public:
  explicit Heap(const std::vector<size_t>& sizes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      void* p = calloc(1, sizes[i]);
      if (p == nullptr) std::abort();
      memory_.push_back(p);
      by_name_.push_back(Allocation{reinterpret_cast<uintptr_t>(p), sizes[i], i,
                                    static_cast<uint32_t>(i + 1), 1});
    }
  }
  ~Heap() {
    for (void* p : memory_) free(p);
  }
  uintptr_t Address(size_t name, size_t offset = 0) const {
    return by_name_[name].address + offset;
  }
  void Store(size_t name, size_t offset, uintptr_t value) {
    *reinterpret_cast<uintptr_t*>(Address(name, offset)) = value;
  }
  void SetSequence(size_t name, uint64_t sequence) { by_name_[name].sequence = sequence; }
  void SetSize(size_t name, uint64_t size) { by_name_[name].size = size; }
  size_t size() const { return by_name_.size(); }

  // The sorted records; Position(name) is the name's index in them.
  const std::vector<Allocation>& Sorted() {
    sorted_ = by_name_;
    std::sort(sorted_.begin(), sorted_.end(),
              [](const Allocation& a, const Allocation& b) { return a.address < b.address; });
    return sorted_;
  }
  size_t Position(size_t name) const {
    for (size_t i = 0; i < sorted_.size(); ++i) {
      if (sorted_[i].address == by_name_[name].address) return i;
    }
    return SIZE_MAX;
  }
  // Per name, from a per-position vector.
  template <class T>
  std::vector<T> ByName(const std::vector<T>& by_position) const {
    std::vector<T> out(by_name_.size());
    for (size_t name = 0; name < by_name_.size(); ++name) out[name] = by_position[Position(name)];
    return out;
  }
  template <class T>
  std::vector<T> ByPosition(const std::vector<T>& by_name) const {
    std::vector<T> out(by_name.size());
    for (size_t name = 0; name < by_name.size(); ++name) out[Position(name)] = by_name[name];
    return out;
  }

 private:
  std::vector<void*> memory_;
  std::vector<Allocation> by_name_;
  std::vector<Allocation> sorted_;
};

// Reads directly except [lo, hi), which it refuses: what a SafeReader does for an unmapped range.
class RefusingReader final : public MemoryReader {
 public:
  RefusingReader(uintptr_t lo, uintptr_t hi) : lo_(lo), hi_(hi) {}
  bool Read(uintptr_t address, void* out, size_t size) override {
    ++reads;
    if (address < hi_ && address + size > lo_) {
      ++refused;
      return false;
    }
    std::memcpy(out, reinterpret_cast<const void*>(address), size);
    return true;
  }
  size_t reads = 0, refused = 0;

 private:
  uintptr_t lo_, hi_;
};

// A root over an array of words (not copied unless asked).
void AddWords(RootSet* roots, const std::vector<uintptr_t>& words, bool copy = false) {
  const auto lo = reinterpret_cast<uintptr_t>(words.data());
  roots->Add({lo, lo + words.size() * kWord, RootKind::kGlobals, 0, copy});
}

// Marks per name, from `roots` (and `premarked` names).
std::vector<uint8_t> Mark(Heap& heap, const RootSet& roots,
                          const std::vector<size_t>& premarked = {}) {
  const std::vector<Allocation>& blocks = heap.Sorted();
  std::vector<uint8_t> marks(blocks.size(), 0);
  for (size_t name : premarked) marks[heap.Position(name)] = 1;
  DirectReader reader;
  ScratchArena scratch;
  EXPECT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  return heap.ByName(marks);
}

// Verdicts per name after marking from `roots` and splitting.
std::vector<Verdict> Classify(Heap& heap, const RootSet& roots,
                              const std::vector<size_t>& ignored_names = {}) {
  const std::vector<Allocation>& blocks = heap.Sorted();
  std::vector<uint8_t> marks(blocks.size(), 0), ignored(blocks.size(), 0);
  for (size_t name : ignored_names) marks[heap.Position(name)] = ignored[heap.Position(name)] = 1;
  DirectReader reader;
  ScratchArena scratch;
  EXPECT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  std::vector<Verdict> verdicts(blocks.size(), Verdict::kLive);
  EXPECT_TRUE(SplitLeaks(blocks.data(), blocks.size(), marks.data(), ignored.data(), reader,
                         verdicts.data(), &scratch));
  return heap.ByName(verdicts);
}

size_t Count(const std::vector<Verdict>& verdicts, Verdict v) {
  return static_cast<size_t>(std::count(verdicts.begin(), verdicts.end(), v));
}

// A list 0 -> 1 -> ... -> 9 in blocks of 48 bytes, the next pointer at offset 8.
void Link(Heap& heap, size_t first, size_t count) {
  for (size_t i = first; i + 1 < first + count; ++i) heap.Store(i, 8, heap.Address(i + 1));
}

TEST(Mark, ADroppedListIsOneDirectAndNineIndirect) {
  Heap heap(std::vector<size_t>(11, 48));
  Link(heap, 0, 10);
  // Block 10 is held by a root; the list's head by nothing. The head has the highest sequence
  // number: it is direct because nothing points to it, not for its number.
  heap.SetSequence(0, 100);
  std::vector<uintptr_t> words = {7, heap.Address(10), 0};
  RootSet roots;
  AddWords(&roots, words);
  const std::vector<Verdict> v = Classify(heap, roots);
  EXPECT_EQ(v[0], Verdict::kDirect);
  for (size_t i = 1; i < 10; ++i) EXPECT_EQ(v[i], Verdict::kIndirect) << i;
  EXPECT_EQ(v[10], Verdict::kReachable);
  // Rooted at its head, the whole list is reachable.
  words[2] = heap.Address(0);
  RootSet rooted;
  AddWords(&rooted, words);
  EXPECT_EQ(Count(Classify(heap, rooted), Verdict::kReachable), 11u);
}

TEST(Mark, ACycleGetsItsLowestSequenceAsHead) {
  // 0 -> 1 -> 2 -> 0, and 3 hanging off 1 with the lowest sequence of all: 3 is indirect, the
  // cycle's lowest sequence (block 2) is its direct head.
  Heap heap(std::vector<size_t>(4, 32));
  heap.Store(0, 0, heap.Address(1));
  heap.Store(1, 0, heap.Address(2, 16));  // interior
  heap.Store(2, 8, heap.Address(0));
  heap.Store(1, 8, heap.Address(3));
  heap.SetSequence(0, 20);
  heap.SetSequence(1, 30);
  heap.SetSequence(2, 10);
  heap.SetSequence(3, 1);
  RootSet none;
  const std::vector<Verdict> v = Classify(heap, none);
  EXPECT_EQ(v, (std::vector<Verdict>{Verdict::kIndirect, Verdict::kIndirect, Verdict::kDirect,
                                     Verdict::kIndirect}));
  // Bit 63 of a sequence is a flag (reported before), not part of the order.
  heap.SetSequence(0, (uint64_t{1} << 63) | 5);
  EXPECT_EQ(Classify(heap, none)[0], Verdict::kDirect);
  // A block pointing at itself only is a direct leak of its own.
  Heap self(std::vector<size_t>(1, 32));
  self.Store(0, 16, self.Address(0));
  EXPECT_EQ(Classify(self, none), std::vector<Verdict>{Verdict::kDirect});
}

TEST(Mark, AnInteriorRootMarksItsBlock) {
  Heap heap({256, 64, 64});
  heap.Store(0, 200, heap.Address(1));
  std::vector<uintptr_t> words = {heap.Address(0, 129)};  // not even word-aligned inside
  RootSet roots;
  AddWords(&roots, words);
  EXPECT_EQ(Mark(heap, roots), (std::vector<uint8_t>{1, 1, 0}));
  // One past the end marks nothing.
  words[0] = heap.Address(2, 64);
  RootSet past;
  AddWords(&past, words);
  EXPECT_EQ(Mark(heap, past)[2], 0);
}

TEST(Mark, TheNextChunkHeaderOfAFullBlockIsNotAReference) {
  // A block whose recorded size is its usable size fills its glibc chunk: the word at
  // usable - sizeof(size_t) is where the next chunk's header starts (glibc's top chunk and bins
  // point there). The word before it is a reference like any other.
  Heap heap({24, 24});
  const size_t usable = malloc_usable_size(reinterpret_cast<void*>(heap.Address(0)));
  ASSERT_GE(usable, 2 * sizeof(size_t));
  heap.SetSize(0, usable);
  heap.SetSize(1, usable);
  std::vector<uintptr_t> words = {heap.Address(0, usable - sizeof(size_t))};
  RootSet roots;
  AddWords(&roots, words);
  EXPECT_EQ(Mark(heap, roots)[0], 0);
  words[0] = heap.Address(0, usable - sizeof(size_t) - kWord);
  RootSet inside;
  AddWords(&inside, words);
  EXPECT_EQ(Mark(heap, inside)[0], 1);
}

TEST(Mark, TheNextChunkHeaderRightAfterAPointerIntoTheSameBlockIsNoEdge) {
  // The scan takes a word into the block of its last hit without the index: the next chunk's
  // header of that block must still be left out. Block 1 (leaked) holds a pointer into block 0
  // (leaked, filling its chunk), then block 0's next chunk header, then block 0's start: two
  // edges 1 -> 0, one per reference.
  Heap heap({24, 64});
  const size_t usable = malloc_usable_size(reinterpret_cast<void*>(heap.Address(0)));
  heap.SetSize(0, usable);
  heap.Store(1, 0, heap.Address(0, 8));
  heap.Store(1, 8, heap.Address(0, usable - sizeof(size_t)));
  heap.Store(1, 16, heap.Address(0));
  const std::vector<Allocation>& blocks = heap.Sorted();
  std::vector<Verdict> verdicts(blocks.size(), Verdict::kDirect);
  DirectReader reader;
  ScratchArena scratch;
  size_t edges = 0;
  ASSERT_TRUE(LeakEdges(
      blocks.data(), blocks.size(), verdicts.data(), reader,
      [](size_t, size_t, void* context) { ++*static_cast<size_t*>(context); }, &edges, &scratch));
  EXPECT_EQ(edges, 2u);
}

TEST(Mark, AnIgnoredBlockKeepsItsChildrenReachable) {
  Heap heap(std::vector<size_t>(4, 48));
  Link(heap, 0, 3);  // 0 -> 1 -> 2; 3 alone
  RootSet none;
  const std::vector<Verdict> v = Classify(heap, none, {0});
  EXPECT_EQ(v, (std::vector<Verdict>{Verdict::kIgnored, Verdict::kReachable, Verdict::kReachable,
                                     Verdict::kDirect}));
}

TEST(Mark, ASuppressedHeadSpreadsToItsNodesOnly) {
  // 0..9 a dropped list, 10 -> 11 an unrelated dropped pair, 12 reachable.
  Heap heap(std::vector<size_t>(13, 48));
  Link(heap, 0, 10);
  Link(heap, 10, 2);
  heap.Store(12, 0, heap.Address(3));  // reachable 12 points into the list: 3.. reachable
  std::vector<uintptr_t> words = {heap.Address(12)};
  RootSet roots;
  AddWords(&roots, words);
  const std::vector<Allocation>& blocks = heap.Sorted();
  std::vector<uint8_t> marks(blocks.size(), 0);
  DirectReader reader;
  ScratchArena scratch;
  ASSERT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  std::vector<Verdict> verdicts(blocks.size());
  ASSERT_TRUE(SplitLeaks(blocks.data(), blocks.size(), marks.data(), nullptr, reader,
                         verdicts.data(), &scratch));
  EXPECT_EQ(heap.ByName(verdicts),
            (std::vector<Verdict>{Verdict::kDirect, Verdict::kIndirect, Verdict::kIndirect,
                                  Verdict::kReachable, Verdict::kReachable, Verdict::kReachable,
                                  Verdict::kReachable, Verdict::kReachable, Verdict::kReachable,
                                  Verdict::kReachable, Verdict::kDirect, Verdict::kIndirect,
                                  Verdict::kReachable}));
  std::vector<uint8_t> seeds(13, 0);
  seeds[0] = 1;
  std::vector<uint8_t> spread(blocks.size(), 9);
  ASSERT_TRUE(SpreadFrom(blocks.data(), blocks.size(), verdicts.data(),
                         heap.ByPosition(seeds).data(), reader, spread.data(), &scratch));
  EXPECT_EQ(heap.ByName(spread), (std::vector<uint8_t>{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));

  // All ten dropped: the head spreads to its nine nodes and not to the unrelated pair.
  Heap dropped(std::vector<size_t>(12, 48));
  Link(dropped, 0, 10);
  Link(dropped, 10, 2);
  const std::vector<Allocation>& all = dropped.Sorted();
  std::vector<uint8_t> none(all.size(), 0), out(all.size(), 0);
  std::vector<Verdict> v(all.size());
  ASSERT_TRUE(SplitLeaks(all.data(), all.size(), none.data(), nullptr, reader, v.data(), &scratch));
  std::vector<uint8_t> head(12, 0);
  head[0] = 1;
  ASSERT_TRUE(SpreadFrom(all.data(), all.size(), v.data(), dropped.ByPosition(head).data(), reader,
                         out.data(), &scratch));
  EXPECT_EQ(dropped.ByName(out), (std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
}

// The leak edges a dump keeps are the pointers SpreadFrom follows: a dropped list's links, and
// none from or to a reachable block.
TEST(Mark, LeakEdgesAreTheLinksBetweenLeakedBlocks) {
  Heap heap(std::vector<size_t>(6, 48));
  Link(heap, 0, 4);                    // 0 -> 1 -> 2 -> 3, all dropped
  heap.Store(4, 16, heap.Address(5));  // 4 is rooted and holds 5
  heap.Store(3, 16, heap.Address(5));  // a leak pointing at a reachable block: no edge
  heap.Store(2, 24, heap.Address(2));  // a block pointing at itself: no edge
  std::vector<uintptr_t> words = {heap.Address(4)};
  RootSet roots;
  AddWords(&roots, words);
  const std::vector<Allocation>& blocks = heap.Sorted();
  std::vector<uint8_t> marks(blocks.size(), 0);
  DirectReader reader;
  ScratchArena scratch;
  ASSERT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  std::vector<Verdict> verdicts(blocks.size());
  ASSERT_TRUE(SplitLeaks(blocks.data(), blocks.size(), marks.data(), nullptr, reader,
                         verdicts.data(), &scratch));
  std::vector<std::pair<size_t, size_t>> edges;
  ASSERT_TRUE(LeakEdges(
      blocks.data(), blocks.size(), verdicts.data(), reader,
      [](size_t from, size_t to, void* context) {
        static_cast<std::vector<std::pair<size_t, size_t>>*>(context)->push_back({from, to});
      },
      &edges, &scratch));
  std::vector<std::pair<size_t, size_t>> by_name;
  for (const auto& [from, to] : edges) {
    for (size_t a = 0; a < 6; ++a) {
      for (size_t b = 0; b < 6; ++b) {
        if (heap.Position(a) == from && heap.Position(b) == to) by_name.push_back({a, b});
      }
    }
  }
  std::sort(by_name.begin(), by_name.end());
  EXPECT_EQ(by_name, (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}, {2, 3}}));
}

TEST(Mark, ACopiedRootOverAnUnmappedRangeFailsSoft) {
  // Three pages: the first and last hold pointers, the middle one is unmapped. Read through a
  // reader that refuses the hole (as SafeReader does), the other two pages still count, and
  // nothing reads the hole directly (it would fault).
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* base = static_cast<uint8_t*>(
      mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  Heap heap(std::vector<size_t>(3, 64));
  reinterpret_cast<uintptr_t*>(base)[5] = heap.Address(0);
  reinterpret_cast<uintptr_t*>(base + 2 * page)[7] = heap.Address(2);
  reinterpret_cast<uintptr_t*>(base + page)[0] = heap.Address(1);
  ASSERT_EQ(munmap(base + page, page), 0);
  const auto lo = reinterpret_cast<uintptr_t>(base);
  RootSet roots;
  roots.Add({lo, lo + 3 * page, RootKind::kStack, 1, true});
  RefusingReader reader(lo + page, lo + 2 * page);
  const std::vector<Allocation>& blocks = heap.Sorted();
  std::vector<uint8_t> marks(blocks.size(), 0);
  ScratchArena scratch;
  EXPECT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  EXPECT_EQ(heap.ByName(marks), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_GT(reader.refused, 0u);
  munmap(base, page);
  munmap(base + 2 * page, page);
}

TEST(Mark, BlocksFarApartAndLargerThanARead) {
  // A 1 MiB block (mmap'ed by glibc, far from the heap), larger than the scan's 64 KiB reads,
  // holds in its last word the head of a 5,000-node list in the heap; a second large block far
  // away is held by nothing.
  std::vector<size_t> sizes(5000, 32);
  sizes.push_back(size_t{1} << 20);
  sizes.push_back(size_t{3} << 20);
  Heap heap(sizes);
  Link(heap, 0, 5000);
  heap.Store(5000, (size_t{1} << 20) - kWord, heap.Address(0));
  heap.Store(5001, 0, heap.Address(5000));  // the unheld one points at the held: no matter
  std::vector<uintptr_t> words = {heap.Address(5000, 70000)};
  RootSet roots;
  AddWords(&roots, words);
  const std::vector<uint8_t> marks = Mark(heap, roots);
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 1), 5001);
  EXPECT_EQ(marks[5001], 0);
  // Cut in the middle: the tail is not reached.
  heap.Store(2499, 8, 0);
  const std::vector<uint8_t> cut = Mark(heap, roots);
  EXPECT_EQ(std::count(cut.begin(), cut.end(), 1), 2501);
  EXPECT_EQ(cut[2499], 1);
  EXPECT_EQ(cut[2500], 0);
}

// Reads every block through copies (never in place), refusing one range: the batched reads
// (ReadBatch) of the scan's blocks, with a failure in the middle of a batch.
class CopyingReader final : public MemoryReader {
 public:
  CopyingReader(uintptr_t refused_lo, uintptr_t refused_hi) : lo_(refused_lo), hi_(refused_hi) {}
  bool Read(uintptr_t address, void* out, size_t size) override {
    if (address < hi_ && address + size > lo_) {
      ++refused;
      return false;
    }
    std::memcpy(out, reinterpret_cast<const void*>(address), size);
    return true;
  }
  size_t ReadBatch(const ReadSpan* spans, size_t count) override {
    ++batches;
    largest_batch = std::max(largest_batch, count);
    return MemoryReader::ReadBatch(spans, count);
  }
  size_t refused = 0, batches = 0, largest_batch = 0;

 private:
  uintptr_t lo_, hi_;
};

// A table block holding 3,000 blocks of 16..320 bytes, each holding a child of its own: many
// blocks on the work list at once, so they are read in batches.
struct TableHeap {
  static constexpr size_t kKids = 3000;
  Heap heap;
  static std::vector<size_t> Sizes() {
    std::vector<size_t> sizes(1, kKids * kWord);
    for (size_t i = 0; i < 2 * kKids; ++i) sizes.push_back(16 + 16 * (i % 20));
    return sizes;
  }
  TableHeap() : heap(Sizes()) {
    for (size_t k = 0; k < kKids; ++k) {
      heap.Store(0, k * kWord, heap.Address(1 + k));
      heap.Store(1 + k, 8, heap.Address(1 + kKids + k));  // its child
    }
  }
};

TEST(Mark, BatchedReadsGoOnPastABlockThatCannotBeRead) {
  TableHeap t;
  std::vector<uintptr_t> words = {t.heap.Address(0)};
  RootSet roots;
  AddWords(&roots, words);
  const size_t refused = 1 + 1234;  // a first-level block: reached, but its child is not
  // The whole block refused: a failed read is retried in 256-byte pieces, so a refused first
  // byte alone would leave the child pointer at offset 8 readable wherever the block starts 8
  // bytes before a piece's end (arm32's 8-byte alignment: seen as a flaky failure).
  CopyingReader reader(t.heap.Address(refused),
                       t.heap.Address(refused) + TableHeap::Sizes()[refused]);
  const std::vector<Allocation>& blocks = t.heap.Sorted();
  std::vector<uint8_t> marks(blocks.size(), 0);
  ScratchArena scratch;
  ASSERT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  std::vector<uint8_t> expected(blocks.size(), 1);
  expected[refused + TableHeap::kKids] = 0;
  EXPECT_EQ(t.heap.ByName(marks), expected);
  EXPECT_GT(reader.refused, 0u);
  EXPECT_GT(reader.largest_batch, 100u);  // batched, not one read a block
  EXPECT_LT(reader.batches, 2 * TableHeap::kKids / 100);
}

TEST(Mark, ASafeReaderMarksAsTheDirectReaderDoes) {
  // In place (the maps snapshot of a stopped world) and through batched copies (no snapshot:
  // process_vm_readv where it works, else page-checked reads): the same marks.
  TableHeap t;
  t.heap.Store(1 + 77, 8, 0);  // one child dropped
  std::vector<uintptr_t> words = {t.heap.Address(0)};
  RootSet roots;
  AddWords(&roots, words);
  const std::vector<uint8_t> direct = Mark(t.heap, roots);
  EXPECT_EQ(std::count(direct.begin(), direct.end(), 0), 1);
  MapsSnapshot maps;
  ASSERT_TRUE(maps.Read());
  const MapsSnapshot* const snapshots[] = {&maps, nullptr};
  for (const MapsSnapshot* snapshot : snapshots) {
    SafeReader reader(snapshot);
    EXPECT_EQ(reader.InPlace(t.heap.Address(5), 32), snapshot != nullptr);
    const std::vector<Allocation>& blocks = t.heap.Sorted();
    std::vector<uint8_t> marks(blocks.size(), 0);
    ScratchArena scratch;
    ASSERT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
    EXPECT_EQ(t.heap.ByName(marks), direct) << (snapshot != nullptr);
  }
}

TEST(SafeReader, ABatchStopsAtTheFirstSpanItCannotRead) {
  // Three pages, the middle one unmapped; spans in the first, across the hole, in the last.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* base = static_cast<uint8_t*>(
      mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  memset(base, 0x5a, 3 * page);
  ASSERT_EQ(munmap(base + page, page), 0);
  const auto lo = reinterpret_cast<uintptr_t>(base);
  uint8_t out[4][64];
  memset(out, 0, sizeof out);
  ReadSpan spans[4] = {{lo + 8, 64, out[0]},
                       {lo + 128, 32, out[1]},
                       {lo + page - 16, 64, out[2]},  // runs into the hole
                       {lo + 2 * page, 64, out[3]}};
  for (SafeReader::Method method : {SafeReader::Method::kAuto, SafeReader::Method::kPages}) {
    SafeReader reader(nullptr, method);
    EXPECT_FALSE(reader.InPlace(lo, 8));  // no snapshot: never in place
    EXPECT_EQ(reader.ReadBatch(spans, 4), 2u) << static_cast<int>(reader.method());
    EXPECT_EQ(out[0][63], 0x5a);
    EXPECT_EQ(out[1][31], 0x5a);
    EXPECT_EQ(reader.ReadBatch(spans + 3, 1), 1u);
    EXPECT_EQ(out[3][0], 0x5a);
    EXPECT_EQ(reader.ReadBatch(spans, 0), 0u);
  }
  munmap(base, page);
  munmap(base + 2 * page, page);
}

// The oracle: a plain marker (binary search per word, a queue), no page index.
std::vector<uint8_t> ReferenceMark(const std::vector<Allocation>& blocks,
                                   const std::vector<uintptr_t>& roots) {
  std::vector<uint8_t> marks(blocks.size(), 0);
  std::vector<size_t> pending;
  auto visit = [&](uintptr_t w) {
    auto it = std::upper_bound(blocks.begin(), blocks.end(), w,
                               [](uintptr_t x, const Allocation& a) { return x < a.address; });
    if (it == blocks.begin()) return;
    const size_t b = static_cast<size_t>(it - blocks.begin()) - 1;
    if (w >= blocks[b].address + blocks[b].size || marks[b]) return;
    marks[b] = 1;
    pending.push_back(b);
  };
  for (uintptr_t w : roots) visit(w);
  while (!pending.empty()) {
    const Allocation a = blocks[pending.back()];
    pending.pop_back();
    for (size_t off = 0; off + kWord <= a.size; off += kWord) {
      visit(*reinterpret_cast<const uintptr_t*>(a.address + off));
    }
  }
  return marks;
}

TEST(Mark, AgreesWithAPlainMarkerOnARandomGraph) {
  std::mt19937 rng(16);
  std::vector<size_t> sizes(3000);
  // 16..320 bytes, multiples of 16: no word of a block is at its next chunk header.
  for (size_t& s : sizes) s = 16 + 16 * (rng() % 20);
  Heap heap(sizes);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t edges = rng() % 3;
    for (size_t e = 0; e < edges; ++e) {
      const size_t to = rng() % sizes.size();
      heap.Store(i, 8 * (rng() % (sizes[i] / 8)), heap.Address(to, 8 * (rng() % (sizes[to] / 8))));
    }
  }
  std::vector<uintptr_t> words;
  for (int r = 0; r < 40; ++r) words.push_back(heap.Address(rng() % sizes.size()));
  RootSet roots;
  AddWords(&roots, words);
  const std::vector<uint8_t> marks = Mark(heap, roots);
  const std::vector<uint8_t> expected = heap.ByName(ReferenceMark(heap.Sorted(), words));
  EXPECT_EQ(marks, expected);
  EXPECT_GT(std::count(marks.begin(), marks.end(), 1), 40);
  EXPECT_GT(std::count(marks.begin(), marks.end(), 0), 40);
}

TEST(Mark, AgreesWithAPlainMarkerOverManyClusters) {
  // Blocks carved from one mapping: runs of small blocks a few bytes to 4 KiB apart, gaps of 4 KiB
  // to 200 KiB between runs, and blocks of 64 KiB and more: each large block and each run is a
  // cluster of the scan's index (hundreds of them, past the count it searches without its granule
  // table), several of them in one 64 KiB granule. Words point into blocks, just past their ends
  // and into the gaps.
  std::mt19937_64 rng(18);
  struct Placed { size_t offset, size; };
  std::vector<Placed> placed;
  size_t at = 4096;
  for (int i = 0; i < 2000; ++i) {
    const unsigned kind = rng() % 10;
    if (kind < 3) at += 4096 + 16 * (1 + rng() % 12500);  // a new cluster
    else at += 16 * (rng() % 256);                    // the same run
    const size_t size =
        kind == 9 ? (size_t{64} << 10) + 16 * (rng() % 2048) : 16 + 16 * (rng() % 20);
    placed.push_back({at, size});
    at += size;
  }
  const size_t length = at + 4096;
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(base, MAP_FAILED);
  const auto lo = reinterpret_cast<uintptr_t>(base);
  std::vector<Allocation> blocks;
  for (size_t i = 0; i < placed.size(); ++i) {
    blocks.push_back(Allocation{lo + placed[i].offset, placed[i].size, i,
                                static_cast<uint32_t>(i + 1), 1});
  }
  auto any_word = [&]() -> uintptr_t {
    const Placed& p = placed[rng() % placed.size()];
    switch (rng() % 4) {
      case 0: return lo + p.offset + p.size;  // just past the block
      case 1: return lo + p.offset - 8 * (1 + rng() % 64);  // before it: a gap or another block
      default: return lo + p.offset + 8 * (rng() % (p.size / 8));
    }
  };
  for (const Placed& p : placed) {
    auto* words = reinterpret_cast<uintptr_t*>(lo + p.offset);
    const size_t edges = rng() % 4;
    for (size_t e = 0; e < edges; ++e) words[rng() % (p.size / 8)] = any_word();
  }
  std::vector<uintptr_t> root_words;
  for (int r = 0; r < 100; ++r) root_words.push_back(any_word());
  RootSet roots;
  AddWords(&roots, root_words);
  std::vector<uint8_t> marks(blocks.size(), 0);
  DirectReader reader;
  ScratchArena scratch;
  ASSERT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  EXPECT_EQ(marks, ReferenceMark(blocks, root_words));
  EXPECT_GT(std::count(marks.begin(), marks.end(), 1), 100);
  EXPECT_GT(std::count(marks.begin(), marks.end(), 0), 100);
  munmap(base, length);
}

TEST(Mark, AHugeSparseBlockDoesNotSizeTheIndex) {
  // 300 small blocks 8 KiB apart (300 clusters, past the count searched without the granule
  // table), a chain through them, and a record of a 1 TiB block far from them (a sparse calloc;
  // never read: nothing points at it). A table of its 16 million granules would need 512 MiB of
  // scratch; the scan must mark the chain within 64 MiB.
  if (sizeof(uintptr_t) < 8) GTEST_SKIP() << "a terabyte block needs a 64-bit address space";
  constexpr size_t kBlocks = 300, kApart = 8192, kSize = 64;
  const size_t length = kBlocks * kApart;
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(base, MAP_FAILED);
  const auto lo = reinterpret_cast<uintptr_t>(base);
  std::vector<Allocation> blocks;
  for (size_t i = 0; i < kBlocks; ++i) {
    const uintptr_t at = lo + i * kApart;
    if (i + 1 < kBlocks) *reinterpret_cast<uintptr_t*>(at) = at + kApart;
    blocks.push_back(Allocation{at, kSize, i, static_cast<uint32_t>(i + 1), 1});
  }
  const uintptr_t huge = static_cast<uintptr_t>(uint64_t{1} << 44);
  ASSERT_TRUE(huge > lo + length || uint64_t{huge} + (uint64_t{1} << 40) < lo);
  blocks.push_back(Allocation{huge, uint64_t{1} << 40, kBlocks, kBlocks + 1, 1});
  std::sort(blocks.begin(), blocks.end(),
            [](const Allocation& a, const Allocation& b) { return a.address < b.address; });
  std::vector<uintptr_t> words = {lo};
  RootSet roots;
  AddWords(&roots, words);
  std::vector<uint8_t> marks(blocks.size(), 0);
  DirectReader reader;
  ScratchArena scratch;
  scratch.set_limit(size_t{64} << 20);
  ASSERT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &scratch));
  size_t marked = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].address == huge) EXPECT_EQ(marks[i], 0);
    marked += marks[i];
  }
  EXPECT_EQ(marked, kBlocks);
  munmap(base, length);
}

TEST(Mark, ScratchExhaustionIsReported) {
  Heap heap(std::vector<size_t>(10000, 32));
  Link(heap, 0, 10000);
  std::vector<uintptr_t> words = {heap.Address(0)};
  RootSet roots;
  AddWords(&roots, words);
  const std::vector<Allocation>& blocks = heap.Sorted();
  std::vector<uint8_t> marks(blocks.size(), 0);
  DirectReader reader;
  ScratchArena small;
  small.set_limit(16 << 10);  // less than the 64 KiB read buffer
  EXPECT_FALSE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &small));
  EXPECT_LE(small.mapped_bytes(), size_t{16} << 10);
  std::vector<Verdict> verdicts(blocks.size());
  EXPECT_FALSE(SplitLeaks(blocks.data(), blocks.size(), marks.data(), nullptr, reader,
                          verdicts.data(), &small));
  EXPECT_EQ(Count(verdicts, Verdict::kDirect) + Count(verdicts, Verdict::kIndirect), 0u);
  // With room, the same scan succeeds.
  ScratchArena room;
  EXPECT_TRUE(MarkFromRoots(blocks.data(), blocks.size(), roots, reader, marks.data(), &room));
  EXPECT_EQ(std::count(marks.begin(), marks.end(), 1), 10000);
}

TEST(SortByAddress, AsStdSortForEverySizeAndSpread) {
  // Few blocks (std::sort), many in one heap (a couple of radix passes), many spread over the
  // address space (heap and mmap'ed blocks: every pass), odd alignments, and without scratch.
  std::mt19937_64 rng(16);
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{5000}, size_t{200000}}) {
    for (int spread = 0; spread < 3; ++spread) {
      std::vector<Allocation> blocks(n);
      std::vector<uintptr_t> used;
      for (size_t i = 0; i < n; ++i) {
        uintptr_t address = spread == 0   ? 0x555500000000 + 16 * (rng() % (n * 64))
                            : spread == 1 ? (rng() % 2 ? 0x7f0000000000 : 0x555500000000) +
                                                16 * (rng() % (uint64_t{1} << 30))
                                          : 0x1000 + rng() % (uint64_t{1} << 47);
        used.push_back(address);
        blocks[i] = Allocation{address, i, i, static_cast<uint32_t>(i), 1};
      }
      std::sort(used.begin(), used.end());
      if (std::adjacent_find(used.begin(), used.end()) != used.end()) {
        // A snapshot has each address once: drop the repeats.
        std::sort(blocks.begin(), blocks.end(), [](const Allocation& a, const Allocation& b) {
          return a.address < b.address;
        });
        blocks.erase(std::unique(blocks.begin(), blocks.end(),
                                 [](const Allocation& a, const Allocation& b) {
                                   return a.address == b.address;
                                 }),
                     blocks.end());
        std::shuffle(blocks.begin(), blocks.end(), rng);
      }
      std::vector<Allocation> expected = blocks;
      std::sort(expected.begin(), expected.end(), [](const Allocation& a, const Allocation& b) {
        return a.address < b.address;
      });
      for (bool room : {true, false}) {
        std::vector<Allocation> sorted = blocks;
        ScratchArena scratch;
        if (!room) scratch.set_limit(4096);  // no room for a copy: sorted in place
        SortByAddress(sorted.data(), sorted.size(), &scratch);
        ASSERT_EQ(sorted.size(), expected.size());
        for (size_t i = 0; i < sorted.size(); ++i) {
          ASSERT_EQ(sorted[i].address, expected[i].address) << n << " " << spread << " " << i;
          ASSERT_EQ(sorted[i].size, expected[i].size) << n << " " << spread << " " << i;
          ASSERT_EQ(sorted[i].stack_id, expected[i].stack_id);
        }
      }
    }
  }
}

TEST(ScratchArena, ZeroedAlignedAndOwn) {
  ScratchArena arena;
  auto* a = static_cast<uint8_t*>(arena.Allocate(3));
  auto* b = static_cast<uint8_t*>(arena.Allocate(5 << 20));  // larger than a chunk
  auto* c = static_cast<uint8_t*>(arena.Allocate(100));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  for (uint8_t* p : {a, b, c}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    EXPECT_TRUE(IsOwnMapping(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + 1));
  }
  EXPECT_EQ(std::count(b, b + (5 << 20), 0), 5 << 20);
  EXPECT_GE(arena.mapped_bytes(), size_t{5} << 20);
}

}  // namespace
}  // namespace stackwalk::leakcheck
