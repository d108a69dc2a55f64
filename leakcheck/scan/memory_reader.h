// MemoryReader: how the scan reads memory it does not own. The roots and the blocks are read
// through one (scan/safe_reader.h's SafeReader in a real check, which fails instead of faulting
// on a page unmapped meanwhile); DirectReader reads memory the caller knows to be mapped (tests,
// the checker's own copies).
#ifndef STACKWALK_LEAKCHECK_SCAN_MEMORY_READER_H_
#define STACKWALK_LEAKCHECK_SCAN_MEMORY_READER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace stackwalk::leakcheck {

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies [address, address + size) to out. False if any of it is unreadable (out is then
  // unspecified). Never faults; never mallocs.
  virtual bool Read(uintptr_t address, void* out, size_t size) = 0;
};

class DirectReader final : public MemoryReader {
 public:
  bool Read(uintptr_t address, void* out, size_t size) override {
    std::memcpy(out, reinterpret_cast<const void*>(address), size);
    return true;
  }
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_MEMORY_READER_H_
