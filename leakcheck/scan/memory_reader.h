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

// One range of a batched read: [address, address + size) to out.
struct ReadSpan {
  uintptr_t address;
  size_t size;
  void* out;
};

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies [address, address + size) to out. False if any of it is unreadable (out is then
  // unspecified). Never faults; never mallocs.
  virtual bool Read(uintptr_t address, void* out, size_t size) = 0;
  // Reads spans[0..count) in order and returns how many leading spans were read whole; the span
  // after them (if any) failed or was not tried, and it and the rest are unspecified. For readers
  // where one call costs a system call (SafeReader): the scan reads many small blocks at once.
  // True if [address, address + size) may be read in place, without a copy: it cannot fault
  // (SafeReader: in a private anonymous mapping of its snapshot, with the world stopped).
  virtual bool InPlace(uintptr_t address, size_t size) {
    (void)address, (void)size;
    return false;
  }
  virtual size_t ReadBatch(const ReadSpan* spans, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      if (!Read(spans[i].address, spans[i].out, spans[i].size)) return i;
    }
    return count;
  }
};

class DirectReader final : public MemoryReader {
 public:
  bool Read(uintptr_t address, void* out, size_t size) override {
    std::memcpy(out, reinterpret_cast<const void*>(address), size);
    return true;
  }
  bool InPlace(uintptr_t, size_t) override { return true; }
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_MEMORY_READER_H_
