// SnapshotMemory: the Memory of the unwinders' steps (ehframe_step.h, fp_step.h) over a crash
// snapshot's captured stack bytes: a read succeeds only inside them; anything else (the heap,
// globals, a stack beyond what was captured) fails, as an unreadable page does in-process.
#ifndef STACKWALK_SRC_REMOTE_SNAPSHOT_MEMORY_H_
#define STACKWALK_SRC_REMOTE_SNAPSHOT_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace stackwalk::internal {

class SnapshotMemory {
 public:
  SnapshotMemory(uint64_t address, const std::vector<unsigned char>& bytes)
      : address_(address), bytes_(bytes) {}

  bool Read(uint64_t addr, void* out, size_t size) const {
    if (addr < address_ || size > bytes_.size() || addr - address_ > bytes_.size() - size) {
      return false;
    }
    std::memcpy(out, bytes_.data() + (addr - address_), size);
    return true;
  }
  // One region: the captured stack.
  int RegionOf(uint64_t addr) const {
    return addr >= address_ && addr - address_ < bytes_.size() ? 0 : -1;
  }

 private:
  uint64_t address_;
  const std::vector<unsigned char>& bytes_;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_SNAPSHOT_MEMORY_H_
