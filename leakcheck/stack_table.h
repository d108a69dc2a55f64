// StackTable: allocation stacks, hash-consed: each distinct stack is stored once and named by a
// small id, so a live allocation costs an id, not its frames. A stack's frames are a path in a
// tree of frames from the outermost in (each node a frame and its caller's node), so stacks that
// share their outer frames share their nodes: a cmake configure's 33,841 stacks hold 951,716
// frames, 102,670 nodes (7.6 MB as arrays, 1.6 MB as nodes). Memory comes from mmap, never from
// the malloc being tracked, and is never given back (ids and frames stay valid for the process's
// life). Thread-safe: a stack already known is found without a lock (its hash's bucket, then its
// frames compared along its path from the innermost); a new one is added under one spin lock
// (new stacks are rare: a cmake configure's 398k allocations made 34k), which also doubles the
// buckets as the stacks come (so many buckets as stacks at most: 2 MiB from the start were most
// of a small program's cost).
#ifndef STACKWALK_LEAKCHECK_STACK_TABLE_H_
#define STACKWALK_LEAKCHECK_STACK_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "leakcheck/record_format.h"
#include "leakcheck/spin_lock.h"
#include "leakcheck/stack_stats.h"

namespace stackwalk::leakcheck {

class StackTable {
 public:
  static constexpr int kMaxFrames = 64;
  static constexpr uint32_t kNoStack = 0;

  // The id of this stack (1, 2, ...), adding it if new; kNoStack if out of memory. `*added`, if
  // given, says whether this call added it (the first time the process captured it).
  uint32_t Intern(void* const* pcs, int n, bool* added = nullptr);

  // The frames of a stack id, innermost first, into `pcs` (room for kMaxFrames). Returns the
  // count: 0 for kNoStack or an id not handed out.
  int Frames(uint32_t id, void** pcs) const;

  // Each stack's statistics (stack_stats.h) are kept in kStatsCopies copies, readers summing
  // them (Totals). Copy 0 is shared: updated by atomic read-modify-writes. Each other copy is
  // owned by one thread at a time (ClaimStatsCopy), which alone writes it, by plain loads and
  // stores: its allocations and frees then update their stack without a locked instruction
  // (they were a seventh of the time the checker adds to an allocation on the benchmark
  // workload, one thread or two). A stack's shared copy is mapped before its id is handed out;
  // a chunk of an owned copy when its owner first updates one of its stacks.
  static constexpr uint32_t kStatsCopies = 4;
  // A copy for the calling thread (serial `serial`) to own, or 0 if every copy is owned.
  uint32_t ClaimStatsCopy(uint32_t serial);
  // Gives `copy` up: its owner will not write it again (it takes copy 0 from now on).
  void ReleaseStatsCopy(uint32_t copy);
  // In a fork's child, whose one thread is the only writer left: every copy unowned.
  void ForgetStatsOwners();
  // The shared copy of stack `id`'s statistics; null for kNoStack or an unknown id. Lock-free:
  // every recorded allocation and free asks it, or OwnedStats.
  StackStats* SharedStats(uint32_t id) const {
    if (id == kNoStack || id / kIdChunk >= static_cast<uint32_t>(kIdChunks)) return nullptr;
    StackStats* chunk = stats_[0][id / kIdChunk].load(std::memory_order_acquire);
    return chunk != nullptr ? &chunk[id % kIdChunk] : nullptr;
  }
  // Owned copy `copy` (1 .. kStatsCopies - 1) of stack `id`'s statistics, mapping its chunk if
  // need be; null for kNoStack, an unknown id, or if the chunk could not be mapped.
  StackStats* OwnedStats(uint32_t id, uint32_t copy) {
    if (id == kNoStack || id / kIdChunk >= static_cast<uint32_t>(kIdChunks)) return nullptr;
    StackStats* chunk = stats_[copy][id / kIdChunk].load(std::memory_order_acquire);
    if (__builtin_expect(chunk == nullptr, false)) chunk = MapStatsChunk(id, copy);
    return chunk != nullptr ? &chunk[id % kIdChunk] : nullptr;
  }
  // Stack `id`'s statistics summed over its copies, as of peak epoch `final_epoch`; false for
  // kNoStack or an unknown id.
  bool Totals(uint32_t id, uint64_t final_epoch, StackStatsTotals* out) const;
  // Zeroes every stack's statistics (a new in-process session).
  void ResetStats();

  uint32_t size() const { return next_id_.load(std::memory_order_acquire) - 1; }
  // The frame nodes the stacks' paths are made of (shared outer frames counted once).
  uint32_t frame_nodes() const { return frame_count_.load(std::memory_order_relaxed); }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  void LockAll();    // around fork()
  void UnlockAll();

 private:
  // A frame in the tree of stacks: its PC and its caller's node (null for an outermost frame).
  // Written once, before any stack whose path runs through it is published.
  struct FrameNode {
    void* pc;
    const FrameNode* parent;
  };
  struct Stack {
    uint64_t hash;
    Stack* next;              // in its hash bucket
    const FrameNode* leaf;    // its innermost frame's node (null for an empty stack)
    uint32_t id;
    int n;                    // its frames: the leaf's depth
  };
  static constexpr int kIdChunk = 4096;
  static constexpr int kIdChunks = 4096;  // up to 16M distinct stacks

  Stack* StackOf(uint32_t id) const {
    if (id == kNoStack || id / kIdChunk >= static_cast<uint32_t>(kIdChunks)) return nullptr;
    Stack** slots = ids_[id / kIdChunk].load(std::memory_order_acquire);
    return slots != nullptr ? __atomic_load_n(&slots[id % kIdChunk], __ATOMIC_ACQUIRE) : nullptr;
  }
  // The record region's reader reads the stacks as record::StackNode and their frames as
  // record::FrameNode (record_format.h).
  static_assert(kMaxFrames == record::kMaxStackFrames &&
                    static_cast<uint32_t>(kIdChunk) == record::kStackIdChunk &&
                    static_cast<uint32_t>(kIdChunks) == record::kStackIdChunks,
                "the record region's reader reads the stack table");
  void* Allocate(size_t size);  // from mmap'ed chunks; caller holds arena_lock_
  // The id of the stack in a bucket chain, or kNoStack. Nodes are published complete, and every
  // `next` leads to an older stack (chains grow at the head, a rehash links them in id order), so
  // a lookup needs no lock and ends even while the buckets are rehashed under it (it may then
  // miss: Add looks again under the lock).
  static uint32_t FindIn(const Stack* first, uint64_t hash, void* const* pcs, int n);
  // The path from pcs[n - 1] (outermost) in to pcs[0], its missing nodes added; its leaf, or null
  // if out of memory. Caller holds add_lock_.
  const FrameNode* AddPath(void* const* pcs, int n);
  // The node of `pc` called from `parent`'s frame, added if new; null if out of memory. Caller
  // holds add_lock_.
  const FrameNode* ChildOf(const FrameNode* parent, void* pc);
  FrameNode* FrameAt(uint32_t index) const {
    return &frame_chunks_[index / kFrameChunk][index % kFrameChunk];
  }
  // Room in the child index for one more node (doubled at three quarters full); false if out
  // of memory.
  bool ChildIndexRoom();
  // Intern for a stack not found without the lock: adds it under the lock unless another thread
  // just did. Out of line, so that finding a known stack saves no registers for it.
  __attribute__((noinline)) uint32_t Add(void* const* pcs, int n, uint64_t hash, bool* added);

  // The hash buckets: heads of chains of stacks, mask + 1 of them, in an anonymous mapping of
  // their own (not in the table, which is in the library's data, where a lookup's read of a
  // bucket made 64 KiB of the file resident around it).
  struct Buckets {
    uint64_t mask;
    Stack* heads[];
  };
  static size_t BucketsBytes(uint64_t count) {
    return (sizeof(Buckets) + sizeof(Stack*) * count + 4095) & ~size_t{4095};
  }
  // Twice the buckets (4,096 at first), every stack linked into them, then published; the old
  // ones' pages given back (a lookup still reading them reads zeros: a miss, looked up again
  // under the lock). False if out of memory. Caller holds add_lock_.
  bool GrowBuckets();

  SpinLock add_lock_;  // adding a stack: its nodes, its record, its bucket, the buckets' growth
  std::atomic<Buckets*> buckets_{nullptr};
  std::atomic<Stack**> ids_[kIdChunks] = {};  // id -> stack, in chunks
  // Maps the chunk of copy `copy` that holds stack `id`'s statistics, unless another thread just
  // did; null if out of memory.
  __attribute__((noinline)) StackStats* MapStatsChunk(uint32_t id, uint32_t copy);

  // id -> its statistics, each copy in chunks of kIdChunk beside the ids'. Not in the nodes: the
  // record region's reader reads a node's frames right after its header (record::StackNode).
  // Private memory (OwnMap): only the dump, written by the living process, reads them.
  std::atomic<StackStats*> stats_[kStatsCopies][kIdChunks] = {};
  std::atomic<uint32_t> stats_owners_[kStatsCopies] = {};  // a serial, or 0; [0] unused
  std::atomic<uint32_t> next_id_{1};

  // The tree of frames, under add_lock_: its nodes, by index (1, 2, ...; 0 is none), in chunks
  // of the record region (the reader follows the parent pointers after the program), and the
  // index that finds a node by (parent, pc) when a stack is added (open addressing, node indices;
  // the program's own memory: nothing reads it but an add).
  static constexpr uint32_t kFrameChunk = 65536;  // 1 MiB of nodes
  static constexpr uint32_t kFrameChunks = 1024;  // up to 64M nodes
  FrameNode* frame_chunks_[kFrameChunks] = {};
  std::atomic<uint32_t> frame_count_{0};  // nodes made, the last's index (written under the lock)
  uint32_t* child_slots_ = nullptr;
  uint32_t child_capacity_ = 0;  // 2^child_bits_
  uint32_t child_bits_ = 0;
  // The stack whose path was added last (AddPath): its frames and its leaf.
  void* last_pcs_[kMaxFrames] = {};
  int last_n_ = 0;
  const FrameNode* last_leaf_ = nullptr;

  SpinLock arena_lock_;
  char* arena_ = nullptr;
  size_t arena_left_ = 0;
  std::atomic<size_t> bytes_{0};
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_STACK_TABLE_H_
