// The scan (mark.h): a page index over the sorted blocks, one word scanner, and three flood
// fills over it (from the roots; between leaked blocks for the split; from suppressed seeds).
#include "leakcheck/scan/mark.h"

#include <algorithm>
#include <cstdint>

#define STACKWALK_SCAN_READS __attribute__((no_sanitize("address", "thread")))

namespace stackwalk::leakcheck {
namespace {

// The index's page: 256 bytes, a few small blocks each (4 KiB pages made the 100k-block benchmark
// 2.3x slower: the binary search within a page touched more cache lines of the block array).
constexpr unsigned kPageShift = 8;
// Blocks further apart than this start a new cluster: the index spans clusters, not the gaps
// between them (a heap at 0x55.. and mmap'ed blocks at 0x7f..), so a gap costs at most
// kClusterGap >> kPageShift entries per block. A large block is a cluster of its own, with no
// page entries: the index stays within a few percent of the small blocks' span.
constexpr uint64_t kClusterGap = uint64_t{4} << 10;
constexpr uint64_t kLargeBlock = uint64_t{64} << 10;
constexpr size_t kReadChunk = size_t{64} << 10;  // bytes read through the MemoryReader at once
constexpr size_t kBatchBlocks = 256;  // blocks read with one ReadBatch (SafeReader's iovecs)

// Where glibc's header of the chunk after a block of `size` bytes starts, from the block's start
// (malloc.c's request2size; the user pointer is 2 * SIZE_SZ past its chunk): a block that uses
// its chunk to the end overlaps that header, and glibc's own state (the arena's top chunk, its
// bins) points there. Such a pointer is the allocator's, not a reference.
uint64_t NextChunkHeader(uint64_t size) {
  constexpr uint64_t kSizeSz = sizeof(size_t);
  constexpr uint64_t kAlign = std::max<uint64_t>(2 * kSizeSz, alignof(long double));
  constexpr uint64_t kMinSize = (4 * kSizeSz + kAlign - 1) & ~(kAlign - 1);
  const uint64_t chunk =
      std::max<uint64_t>(kMinSize, (size + kSizeSz + kAlign - 1) & ~(kAlign - 1));
  return chunk - 2 * kSizeSz;
}

uint64_t BlockEnd(const Allocation& block) {
  return uint64_t{block.address} + std::max<uint64_t>(block.size, 1);
}

// Which block a word points into, through a page index: per cluster of nearby blocks, for each
// 256-byte page the first block starting at or after it; the candidate is then found by a binary
// search among the blocks of one page, or is the block that began before it. When clusters are
// many, a word's cluster is found through a hash table of the 64 KiB granules they overlap: a
// binary search over all of them (thousands in clang's heap at exit, most of them one large
// block) was a chain of dependent loads for every word between the lowest and highest block,
// most of a scan's time there.
class BlockIndex {
 public:
  static constexpr size_t kNone = SIZE_MAX;

  bool Build(const Allocation* blocks, size_t n, ScratchArena* scratch) {
    blocks_ = blocks;
    n_ = n;
    if (n == 0) return true;
    if (n >= UINT32_MAX) return false;
    // Pass 1: count clusters and index entries.
    size_t clusters = 0, entries = 0;
    ForEachCluster([&](size_t first, size_t end, uint64_t lo, uint64_t hi) {
      ++clusters;
      entries += (end - first == 1 ? 1 : Pages(lo, hi)) + 1;
    });
    clusters_ = scratch->AllocateArray<Cluster>(clusters);
    uint32_t* pages = scratch->AllocateArray<uint32_t>(entries);
    if (clusters_ == nullptr || pages == nullptr) return false;
    size_t granules = 0;
    // Pass 2: fill them.
    cluster_count_ = 0;
    ForEachCluster([&](size_t first, size_t end, uint64_t lo, uint64_t hi) {
      Cluster& c = clusters_[cluster_count_++];
      c.lo = lo;
      c.hi = hi;
      c.first = static_cast<uint32_t>(first);
      c.page0 = lo >> kPageShift;
      c.pages = pages;
      c.single = end - first == 1;
      const size_t count = c.single ? 1 : Pages(lo, hi);
      size_t j = first;
      for (size_t k = 0; k < count; ++k) {
        const uint64_t page_start = (c.page0 + k) << kPageShift;
        while (j < end && blocks_[j].address < page_start) ++j;
        pages[k] = static_cast<uint32_t>(j);
      }
      pages[count] = static_cast<uint32_t>(end);
      pages += count + 1;
      granules += Granules(c);
    });
    low_ = clusters_[0].lo;
    high_ = clusters_[cluster_count_ - 1].hi;
    return BuildGranules(granules, scratch);
  }

  const Allocation& block(size_t b) const { return blocks_[b]; }

  // The block `word` points into (kNone if none, or if it points at the next chunk's header).
  // Inlined into the scan loop: a call a word cost 15-25 % on a heap of small blocks.
  __attribute__((always_inline)) size_t Find(uintptr_t word) const {
    const uint64_t w = word;
    if (w < low_ || w >= high_) return kNone;
    // The clusters overlapping w's granule; of them, the last starting at or below w.
    size_t lo = 0, hi = cluster_count_;
    if (granules_ != nullptr) {
      const uint64_t key = (w >> kGranuleShift) + 1;
      size_t s = GranuleHash(key);
      while (granules_[s].key != key) {
        if (granules_[s].key == 0) return kNone;
        s = (s + 1) & granule_mask_;
      }
      lo = granules_[s].first;
      hi = granules_[s].end;
    }
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      if (clusters_[mid].lo <= w) lo = mid; else hi = mid;
    }
    const Cluster& c = clusters_[lo];
    if (w < c.lo || w >= c.hi) return kNone;
    const uint64_t k = c.single ? 0 : (w >> kPageShift) - c.page0;
    size_t first = c.pages[k], end = c.pages[k + 1];
    // The last block of this page starting at or below w, else the one before the page.
    while (first < end) {
      const size_t mid = (first + end) / 2;
      if (blocks_[mid].address <= w) first = mid + 1; else end = mid;
    }
    if (first == c.first) return kNone;
    const size_t b = first - 1;
    const Allocation& block = blocks_[b];
    if (w >= BlockEnd(block)) return kNone;
    if (w - block.address == NextChunkHeader(block.size)) return kNone;
    return b;
  }

 private:
  struct Cluster {
    uint64_t lo, hi;   // the first block's start, the largest end
    uint64_t page0;    // lo's page number
    uint32_t first;    // its first block
    bool single;       // one block (a large one): a single page entry
    uint32_t* pages;   // per page from page0: the first block starting at or after it; then the end
  };

  // A granule's slot: its number plus one (0: an empty slot) and the clusters overlapping it.
  struct Granule {
    uint64_t key;
    uint32_t first, end;
  };
  static constexpr unsigned kGranuleShift = 16;
  // Up to this many clusters a binary search over them all costs no more than the table's
  // probe (leak_mark_benchmark: 200 large blocks the same either way, 2,000 a quarter faster
  // through the table).
  static constexpr size_t kSearchedClusters = 128;

  static size_t Pages(uint64_t lo, uint64_t hi) {
    return static_cast<size_t>(((hi - 1) >> kPageShift) - (lo >> kPageShift) + 1);
  }
  static size_t Granules(const Cluster& c) {
    return static_cast<size_t>(((c.hi - 1) >> kGranuleShift) - (c.lo >> kGranuleShift) + 1);
  }
  size_t GranuleHash(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> granule_shift_);
  }

  // The granule table at most half full, from the clusters in address order (clusters sharing a
  // granule are adjacent, so each granule's clusters are one range).
  bool BuildGranules(size_t upper_bound, ScratchArena* scratch) {
    if (cluster_count_ <= kSearchedClusters) return true;
    // The table follows the clusters' span, not their count: a huge block (a sparse terabyte
    // from calloc) would make it hundreds of megabytes. Past a few granules a cluster, the
    // binary search over the clusters serves instead.
    if (upper_bound > std::max<size_t>(32 * cluster_count_, size_t{1} << 16)) return true;
    unsigned bits = 4;
    while ((size_t{1} << bits) < 2 * upper_bound) ++bits;
    granules_ = scratch->AllocateArray<Granule>(size_t{1} << bits);
    if (granules_ == nullptr) return false;
    granule_mask_ = (size_t{1} << bits) - 1;
    granule_shift_ = 64 - bits;
    Granule* last = nullptr;
    for (size_t i = 0; i < cluster_count_; ++i) {
      const Cluster& c = clusters_[i];
      for (uint64_t g = c.lo >> kGranuleShift; g <= (c.hi - 1) >> kGranuleShift; ++g) {
        if (last != nullptr && last->key == g + 1) {
          last->end = static_cast<uint32_t>(i + 1);
          continue;
        }
        size_t s = GranuleHash(g + 1);
        while (granules_[s].key != 0) s = (s + 1) & granule_mask_;
        last = &granules_[s];
        *last = {g + 1, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1)};
      }
    }
    return true;
  }

  // fn(first, end, lo, hi) for each cluster of blocks [first, end): blocks closer than
  // kClusterGap, or one large block.
  template <class Fn>
  void ForEachCluster(Fn&& fn) const {
    size_t first = 0;
    uint64_t lo = blocks_[0].address, hi = BlockEnd(blocks_[0]);
    for (size_t i = 1; i <= n_; ++i) {
      const bool cut = i == n_ || blocks_[i - 1].size >= kLargeBlock ||
                       blocks_[i].size >= kLargeBlock ||
                       (blocks_[i].address > hi && blocks_[i].address - hi > kClusterGap);
      if (!cut) {
        hi = std::max(hi, BlockEnd(blocks_[i]));
        continue;
      }
      fn(first, i, lo, hi);
      if (i == n_) break;
      first = i;
      lo = blocks_[i].address;
      hi = BlockEnd(blocks_[i]);
    }
  }

  const Allocation* blocks_ = nullptr;
  size_t n_ = 0;
  Cluster* clusters_ = nullptr;
  size_t cluster_count_ = 0;
  uint64_t low_ = 0, high_ = 0;
  Granule* granules_ = nullptr;
  size_t granule_mask_ = 0;
  unsigned granule_shift_ = 64;
};

// Reads memory through the MemoryReader in bounded chunks (a chunk that fails is retried page by
// page, so a range partly unmapped still gives its readable pages) and hands each word to `hit`
// as the block it points into.
class Scanner {
 public:
  bool Init(const Allocation* blocks, size_t n, ScratchArena* scratch) {
    buffer_ = static_cast<uintptr_t*>(scratch->Allocate(kReadChunk));
    return buffer_ != nullptr && index_.Build(blocks, n, scratch);
  }
  const BlockIndex& index() const { return index_; }
  uintptr_t* buffer() const { return buffer_; }  // kReadChunk bytes
  uint64_t words_scanned() const { return words_; }

  // Reads any word of a root as it is (a global's redzone, a word another thread wrote before it
  // was stopped): a conservative scan, not a program's access, so the sanitizers are told to
  // leave these reads alone. A word into the block the last hit was in is that block's again
  // without the index (an arena's nodes point at their neighbours in it); the next chunk's
  // header stays excluded.
  template <class Hit>
  STACKWALK_SCAN_READS void ScanWords(const uintptr_t* words, size_t count, Hit&& hit) {
    words_ += count;
    size_t last = BlockIndex::kNone;
    uint64_t last_lo = 0, last_span = 0, last_header = 0;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t w = words[i];
      if (w - last_lo < last_span && w - last_lo != last_header) {
        hit(last);
        continue;
      }
      const size_t b = index_.Find(w);
      if (b == BlockIndex::kNone) continue;
      hit(b);
      const Allocation& block = index_.block(b);
      last = b;
      last_lo = block.address;
      last_span = BlockEnd(block) - block.address;
      last_header = NextChunkHeader(block.size);
    }
  }

  template <class Hit>
  STACKWALK_SCAN_READS void ScanDirect(uintptr_t lo, uintptr_t hi, Hit&& hit) {
    lo = AlignUp(lo);
    if (hi <= lo) return;
    ScanWords(reinterpret_cast<const uintptr_t*>(lo), (hi - lo) / sizeof(uintptr_t), hit);
  }

  template <class Hit>
  void ScanCopied(MemoryReader& reader, uintptr_t lo, uintptr_t hi, Hit&& hit) {
    lo = AlignUp(lo);
    while (hi > lo && hi - lo >= sizeof(uintptr_t)) {
      const size_t bytes = std::min<size_t>(kReadChunk, (hi - lo) & ~(sizeof(uintptr_t) - 1));
      if (reader.Read(lo, buffer_, bytes)) {
        ScanWords(buffer_, bytes / sizeof(uintptr_t), hit);
      } else {
        ScanPageByPage(reader, lo, lo + bytes, hit);
      }
      lo += bytes;
    }
  }

 private:
  static uintptr_t AlignUp(uintptr_t a) {
    return (a + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1);
  }

  template <class Hit>
  void ScanPageByPage(MemoryReader& reader, uintptr_t lo, uintptr_t hi, Hit&& hit) {
    constexpr uintptr_t kPage = uintptr_t{1} << kPageShift;
    while (lo < hi) {
      const uintptr_t next = std::min<uintptr_t>(hi, (lo | (kPage - 1)) + 1);
      const size_t bytes = (next - lo) & ~(sizeof(uintptr_t) - 1);
      if (bytes > 0 && reader.Read(lo, buffer_, bytes)) {
        ScanWords(buffer_, bytes / sizeof(uintptr_t), hit);
      }
      lo = next;
    }
  }

  BlockIndex index_;
  uintptr_t* buffer_ = nullptr;
  uint64_t words_ = 0;
};

// A stack of block indexes in scratch; each block goes on it at most once.
struct WorkList {
  uint32_t* items = nullptr;
  size_t size = 0;
  bool Init(size_t n, ScratchArena* scratch) {
    items = scratch->AllocateArray<uint32_t>(n == 0 ? 1 : n);
    return items != nullptr;
  }
  void Push(size_t b) { items[size++] = static_cast<uint32_t>(b); }
  bool empty() const { return size == 0; }
  size_t Pop() { return items[--size]; }
};

template <class Hit>
void ScanBlock(Scanner& scanner, MemoryReader& reader, const Allocation& block, Hit&& hit) {
  const uint64_t size = std::min<uint64_t>(block.size, UINTPTR_MAX - block.address);
  scanner.ScanCopied(reader, block.address, block.address + static_cast<uintptr_t>(size), hit);
}

// Scans the blocks on `work` until it is empty (`hit` may push more). A block the reader lets us
// read in place is scanned there. Other small aligned blocks are taken off in batches that fit
// the read buffer and read with one ReadBatch (SafeReader: one process_vm_readv for up to 256
// blocks, where one a block cost ~2 us, 10x the scan of a 64-byte block); a span that fails is
// scanned alone (page by page), and the batch goes on after it.
template <class Hit>
void ScanWork(Scanner& scanner, MemoryReader& reader, const Allocation* blocks, WorkList& work,
              Hit&& hit) {
  constexpr size_t kWord = sizeof(uintptr_t);
  ReadSpan spans[kBatchBlocks];
  while (!work.empty()) {
    size_t count = 0, bytes = 0;
    while (!work.empty() && count < kBatchBlocks) {
      const Allocation& block = blocks[work.items[work.size - 1]];
      const uint64_t size = std::min<uint64_t>(block.size, UINTPTR_MAX - block.address);
      if (reader.InPlace(block.address, static_cast<size_t>(size))) {
        if (count > 0) break;  // the batch first
        work.Pop();
        scanner.ScanDirect(block.address, block.address + static_cast<uintptr_t>(size), hit);
        continue;
      }
      if (size > kReadChunk || block.address % kWord != 0) {
        if (count == 0) ScanBlock(scanner, reader, blocks[work.Pop()], hit);
        break;  // large or odd: alone, after the batch
      }
      const size_t word_bytes = static_cast<size_t>(size) & ~(kWord - 1);
      if (bytes + word_bytes > kReadChunk) break;
      work.Pop();
      spans[count++] = {block.address, word_bytes, scanner.buffer() + bytes / kWord};
      bytes += word_bytes;
    }
    size_t next = 0;
    while (next < count) {
      const size_t read = reader.ReadBatch(spans + next, count - next);
      for (size_t i = next; i < next + read; ++i) {
        scanner.ScanWords(static_cast<const uintptr_t*>(spans[i].out), spans[i].size / kWord, hit);
      }
      next += read;
      if (next < count) {
        // Alone (it reuses the buffer: the spans after it are read again by the next batch).
        const ReadSpan& failed = spans[next++];
        scanner.ScanCopied(reader, failed.address, failed.address + failed.size, hit);
      }
    }
  }
}

}  // namespace

bool MarkFromRoots(const Allocation* blocks, size_t n, const RootSet& roots, MemoryReader& reader,
                   uint8_t* marks, ScratchArena* scratch) {
  if (n == 0) return true;
  Scanner scanner;
  WorkList work;
  if (!scanner.Init(blocks, n, scratch) || !work.Init(n, scratch)) return false;
  for (size_t i = 0; i < n; ++i) {
    if (marks[i]) work.Push(i);
  }
  auto hit = [&](size_t b) {
    if (marks[b]) return;
    marks[b] = 1;
    work.Push(b);
  };
  for (size_t r = 0; r < roots.size(); ++r) {
    const RootRange& root = roots[r];
    if (root.copy) {
      scanner.ScanCopied(reader, root.lo, root.hi, hit);
    } else {
      scanner.ScanDirect(root.lo, root.hi, hit);
    }
  }
  ScanWork(scanner, reader, blocks, work, hit);
  return true;
}

bool SplitLeaks(const Allocation* blocks, size_t n, const uint8_t* marks, const uint8_t* ignored,
                MemoryReader& reader, Verdict* out, ScratchArena* scratch) {
  // The leaked blocks, in sequence order: the first of a group nothing outside it points to
  // becomes its head. Each head floods the leaked blocks it reaches, claiming them as indirect;
  // a block that was a head and is reached from a later head's flood is not a head after all (it
  // was processed first only for its lower sequence number). What stays a head is a block no
  // other leaked block reaches, or the lowest-sequence member of a cycle nothing else reaches.
  size_t leaked = 0;
  for (size_t i = 0; i < n; ++i) {
    if (ignored != nullptr && ignored[i]) {
      out[i] = Verdict::kIgnored;
    } else if (marks[i]) {
      out[i] = Verdict::kReachable;
    } else {
      out[i] = Verdict::kDirect;
      ++leaked;
    }
  }
  if (leaked == 0) return true;
  Scanner scanner;
  WorkList work;
  uint32_t* order = scratch->AllocateArray<uint32_t>(leaked);
  uint8_t* state = scratch->AllocateArray<uint8_t>(n);  // 0 unclaimed, 1 head, 2 claimed
  if (order == nullptr || state == nullptr || !scanner.Init(blocks, n, scratch) ||
      !work.Init(n, scratch)) {
    for (size_t i = 0; i < n; ++i) {
      if (IsLeak(out[i])) out[i] = Verdict::kLive;  // unsplit: not called a leak of either kind
    }
    return false;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (out[i] == Verdict::kDirect) order[m++] = static_cast<uint32_t>(i);
  }
  std::sort(order, order + m, [blocks](uint32_t a, uint32_t b) {
    const uint64_t sa = SequenceNumber(blocks[a]), sb = SequenceNumber(blocks[b]);
    return sa != sb ? sa < sb : blocks[a].address < blocks[b].address;
  });
  for (size_t o = 0; o < m; ++o) {
    const uint32_t head = order[o];
    if (state[head] != 0) continue;
    state[head] = 1;
    work.Push(head);
    ScanWork(scanner, reader, blocks, work, [&](size_t t) {
      if (out[t] != Verdict::kDirect || t == head) return;  // not leaked, or the head itself
      if (state[t] == 0) {
        state[t] = 2;
        work.Push(t);
      } else if (state[t] == 1) {
        state[t] = 2;  // an earlier head: what it reaches is claimed already
      }
    });
  }
  for (size_t i = 0; i < n; ++i) {
    if (out[i] == Verdict::kDirect && state[i] == 2) out[i] = Verdict::kIndirect;
  }
  return true;
}

bool SpreadFrom(const Allocation* blocks, size_t n, const Verdict* verdicts, const uint8_t* seeds,
                MemoryReader& reader, uint8_t* out, ScratchArena* scratch) {
  for (size_t i = 0; i < n; ++i) out[i] = 0;
  if (n == 0) return true;
  Scanner scanner;
  WorkList work;
  if (!scanner.Init(blocks, n, scratch) || !work.Init(n, scratch)) return false;
  for (size_t i = 0; i < n; ++i) {
    if (seeds[i] && IsLeak(verdicts[i])) {
      out[i] = 1;
      work.Push(i);
    }
  }
  ScanWork(scanner, reader, blocks, work, [&](size_t t) {
    if (out[t] || !IsLeak(verdicts[t])) return;
    out[t] = 1;
    work.Push(t);
  });
  return true;
}

bool LeakEdges(const Allocation* blocks, size_t n, const Verdict* verdicts, MemoryReader& reader,
               void (*edge)(size_t from, size_t to, void* context), void* context,
               ScratchArena* scratch) {
  if (n == 0) return true;
  Scanner scanner;
  if (!scanner.Init(blocks, n, scratch)) return false;
  for (size_t from = 0; from < n; ++from) {
    if (!IsLeak(verdicts[from])) continue;
    ScanBlock(scanner, reader, blocks[from], [&](size_t to) {
      if (to != from && IsLeak(verdicts[to])) edge(from, to, context);
    });
  }
  return true;
}

}  // namespace stackwalk::leakcheck
