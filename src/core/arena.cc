#include "core/arena.h"

#include <errno.h>
#include <sys/mman.h>

namespace stackwalk::internal {

// A chunk's header sits at its start; `next` bumps through the rest.
struct Arena::Chunk {
  std::atomic<uintptr_t> next;
  uintptr_t end;
  Chunk* link;  // the chunk kept before this one (Remember)
};

const Arena::Chunk* Arena::ChunkLink(const Chunk* chunk) { return chunk->link; }
uintptr_t Arena::ChunkEnd(const Chunk* chunk) { return chunk->end; }

void Arena::Remember(Chunk* chunk) {
  Chunk* head = all_.load(std::memory_order_relaxed);
  do {
    chunk->link = head;
  } while (!all_.compare_exchange_weak(head, chunk, std::memory_order_release,
                                       std::memory_order_relaxed));
}

Arena& Arena::Global() {
  static Arena arena;  // constant-initialized: no guard
  return arena;
}

Arena::Chunk* Arena::MapChunk(size_t bytes) {
  int saved_errno = errno;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved_errno;
  if (mem == MAP_FAILED) return nullptr;
  auto* chunk = static_cast<Chunk*>(mem);
  chunk->next.store(reinterpret_cast<uintptr_t>(chunk + 1), std::memory_order_relaxed);
  chunk->end = reinterpret_cast<uintptr_t>(mem) + bytes;
  return chunk;
}

void* Arena::Allocate(size_t size, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0 || align > 4096) return nullptr;
  if (size == 0) size = 1;
  if (size > kChunkSize / 4) {
    // Large: a mapping of its own, page-aligned after the header page.
    size_t bytes = ((size + 4096 + 4095) / 4096) * 4096;
    if (bytes < size) return nullptr;
    Chunk* own = MapChunk(bytes);
    if (own == nullptr) return nullptr;
    Remember(own);
    mapped_.fetch_add(bytes, std::memory_order_relaxed);
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(own) + 4096);
  }
  for (;;) {
    Chunk* chunk = current_.load(std::memory_order_acquire);
    if (chunk != nullptr) {
      uintptr_t at = chunk->next.load(std::memory_order_relaxed);
      for (;;) {
        uintptr_t start = (at + align - 1) & ~(uintptr_t{align} - 1);
        if (start + size > chunk->end) break;  // full: get a new chunk
        if (chunk->next.compare_exchange_weak(at, start + size, std::memory_order_relaxed)) {
          return reinterpret_cast<void*>(start);  // fresh mmap memory is zero
        }
      }
    }
    Chunk* fresh = MapChunk(kChunkSize);
    if (fresh == nullptr) return nullptr;
    mapped_.fetch_add(kChunkSize, std::memory_order_relaxed);
    if (current_.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
      Remember(fresh);
    } else {
      // Another thread installed a chunk first: use it, give ours back.
      int saved_errno = errno;
      munmap(fresh, kChunkSize);
      errno = saved_errno;
      mapped_.fetch_sub(kChunkSize, std::memory_order_relaxed);
    }
  }
}

}  // namespace stackwalk::internal
