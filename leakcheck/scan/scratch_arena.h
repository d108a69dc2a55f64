// ScratchArena: a bump arena in own memory (scan/own_mappings.h) for the scan's work lists and
// indexes: nothing in a check may malloc while threads are stopped (one may hold the allocator's
// lock). Freed all at once.
#ifndef STACKWALK_LEAKCHECK_SCAN_SCRATCH_ARENA_H_
#define STACKWALK_LEAKCHECK_SCAN_SCRATCH_ARENA_H_

#include <cstddef>

namespace stackwalk::leakcheck {

class ScratchArena {
 public:
  ScratchArena() = default;
  ~ScratchArena();  // unmaps every chunk
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

  // `bytes` zeroed, aligned to 16; nullptr if out of memory.
  void* Allocate(size_t bytes);
  template <class T>
  T* AllocateArray(size_t n) {
    return static_cast<T*>(Allocate(n * sizeof(T)));
  }
  size_t mapped_bytes() const { return mapped_; }
  // At most `bytes` mapped from now on (0: no limit): Allocate fails beyond it (tests, and a
  // check's bound on its own memory).
  void set_limit(size_t bytes) { limit_ = bytes; }

 private:
  struct Chunk;
  Chunk* head_ = nullptr;
  size_t mapped_ = 0;
  size_t limit_ = 0;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_SCRATCH_ARENA_H_
