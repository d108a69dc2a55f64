// ReadWord(): one target word (4 or 8 bytes) through any Memory with Read(addr, out, size).
#ifndef STACKWALK_SRC_CORE_READ_WORD_H_
#define STACKWALK_SRC_CORE_READ_WORD_H_

#include <cstdint>

namespace stackwalk::internal {

template <class Arch, class Memory>
inline bool ReadWord(Memory& memory, uint64_t addr, uint64_t* out) {
  if constexpr (Arch::kWordSize == 8) {
    return memory.Read(addr, out, 8);
  } else {
    uint32_t w;
    if (!memory.Read(addr, &w, 4)) return false;
    *out = w;
    return true;
  }
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_READ_WORD_H_
