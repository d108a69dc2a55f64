// MapsSnapshot: /proc/self/maps read once into own memory (scan/own_mappings.h), without malloc
// or stdio, for a scan with the world stopped: which ranges are readable, which are anonymous
// writable mappings (roots), which hold a thread's stack.
#ifndef STACKWALK_LEAKCHECK_SCAN_MAPS_SNAPSHOT_H_
#define STACKWALK_LEAKCHECK_SCAN_MAPS_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>

#include "src/core/address_range.h"

namespace stackwalk::leakcheck {

struct MapsEntry {
  enum class Kind : uint8_t {
    kFile,       // a path
    kAnonymous,  // no path
    kHeap,       // [heap]
    kStack,      // [stack]
    kSpecial,    // [vvar], [vdso], [vsyscall], other bracketed names, deleted files ...
  };
  internal::AddressRange range;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool shared = false;
  Kind kind = Kind::kAnonymous;
};

class MapsSnapshot {
 public:
  MapsSnapshot() = default;
  ~MapsSnapshot();
  MapsSnapshot(const MapsSnapshot&) = delete;
  MapsSnapshot& operator=(const MapsSnapshot&) = delete;

  // Reads /proc/self/maps (replacing what was read before). False if it cannot be read.
  bool Read();
  size_t size() const { return count_; }
  const MapsEntry& operator[](size_t i) const { return entries_[i]; }
  // The entry containing address, or nullptr. Binary search: entries are in address order.
  const MapsEntry* Find(uintptr_t address) const;

 private:
  MapsEntry* entries_ = nullptr;  // own mapping
  size_t count_ = 0;
  size_t capacity_ = 0;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_MAPS_SNAPSHOT_H_
