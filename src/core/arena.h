// Arena: memory for tables built lazily on the capture path (e.g. per-thread rule caches), taken
// from mmap in chunks and handed out by a lock-free bump pointer. Never freed: what it holds
// lives as long as the process, and its size is bounded by what the callers build.
#ifndef STACKWALK_SRC_CORE_ARENA_H_
#define STACKWALK_SRC_CORE_ARENA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace stackwalk::internal {

class Arena {
 public:
  static constexpr size_t kChunkSize = size_t{1} << 20;

  constexpr Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // The process-wide arena. Signal safety: async-signal-safe.
  static Arena& Global();

  // Returns `size` zeroed bytes aligned to `align` (a power of two, at most 4096), or nullptr
  // if mmap fails (or `align` is not one). Requests larger than a quarter of a chunk get a
  // mapping of their own, so that one does not waste most of a chunk.
  // Signal safety: async-signal-safe (atomics and mmap; no lock, no malloc).
  void* Allocate(size_t size, size_t align);

  // Bytes obtained from mmap so far.
  size_t mapped_bytes() const { return mapped_.load(std::memory_order_relaxed); }

  // Calls fn(lo, hi) for each mapping the arena holds, newest first: what a conservative
  // scanner (the leak checker) must not take for the program's memory, as the frame logs in it
  // hold copies of stack words. Signal safety: async-signal-safe (reads a list that only grows).
  template <class Fn>
  void ForEachMapping(Fn&& fn) const {
    for (const Chunk* c = all_.load(std::memory_order_acquire); c != nullptr; c = ChunkLink(c)) {
      fn(reinterpret_cast<uintptr_t>(c), ChunkEnd(c));
    }
  }

 private:
  struct Chunk;
  static Chunk* MapChunk(size_t bytes);
  static const Chunk* ChunkLink(const Chunk* chunk);
  static uintptr_t ChunkEnd(const Chunk* chunk);
  void Remember(Chunk* chunk);  // onto all_

  std::atomic<Chunk*> current_{nullptr};
  std::atomic<Chunk*> all_{nullptr};  // every chunk kept, through Chunk::link
  std::atomic<size_t> mapped_{0};
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_ARENA_H_
