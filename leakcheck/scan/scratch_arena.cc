// ScratchArena (scratch_arena.h): chunks from OwnMap, each a header then bump-allocated bytes.
// Fresh anonymous pages are zero and nothing is reused, so what Allocate returns is zeroed.
#include "leakcheck/scan/scratch_arena.h"

#include <cstdint>

#include "leakcheck/scan/own_mappings.h"

namespace stackwalk::leakcheck {

struct ScratchArena::Chunk {  // at the start of each mapping, in kHeader bytes
  Chunk* next;
  size_t bytes;  // mapped, header included
  size_t used;   // header included
};

namespace {

constexpr size_t kAlign = 16;
constexpr size_t kPage = 4096;
constexpr size_t kMinChunk = size_t{1} << 20;  // 1 MiB: few mappings for a check's lists
constexpr size_t kHeader = 32;  // a Chunk (3 words), rounded up to kAlign

}  // namespace

ScratchArena::~ScratchArena() {
  while (head_ != nullptr) {
    Chunk* next = head_->next;
    OwnUnmap(head_, head_->bytes);
    head_ = next;
  }
}

void* ScratchArena::Allocate(size_t bytes) {
  static_assert(sizeof(Chunk) <= kHeader, "a chunk's header fits");
  if (bytes > SIZE_MAX / 2) return nullptr;
  const size_t rounded = (bytes + kAlign - 1) & ~(kAlign - 1);
  if (head_ == nullptr || head_->bytes - head_->used < rounded) {
    size_t size = kHeader + rounded;
    size = (size + kPage - 1) & ~(kPage - 1);
    if (size < kMinChunk) size = kMinChunk;
    if (limit_ != 0 && mapped_ + size > limit_) {
      // Within the limit, a chunk only as large as this request needs may still fit.
      size = (kHeader + rounded + kPage - 1) & ~(kPage - 1);
      if (mapped_ + size > limit_) return nullptr;
    }
    void* memory = OwnMap(size);
    if (memory == nullptr) return nullptr;
    Chunk* chunk = static_cast<Chunk*>(memory);
    chunk->next = head_;
    chunk->bytes = size;
    chunk->used = kHeader;
    head_ = chunk;
    mapped_ += size;
  }
  void* out = reinterpret_cast<char*>(head_) + head_->used;
  head_->used += rounded;
  return out;
}

}  // namespace stackwalk::leakcheck
