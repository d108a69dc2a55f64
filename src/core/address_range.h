// AddressRange: a half-open range [lo, hi) of addresses.
#ifndef STACKWALK_SRC_CORE_ADDRESS_RANGE_H_
#define STACKWALK_SRC_CORE_ADDRESS_RANGE_H_

#include <cstdint>

namespace stackwalk::internal {

struct AddressRange {
  uint64_t lo = 0;
  uint64_t hi = 0;

  bool empty() const { return hi <= lo; }
  bool Contains(uint64_t addr) const { return addr >= lo && addr < hi; }
  // True if all of [addr, addr + size) lies inside, without overflow.
  bool ContainsSpan(uint64_t addr, uint64_t size) const {
    return addr >= lo && addr <= hi && size <= hi - addr;
  }
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_ADDRESS_RANGE_H_
