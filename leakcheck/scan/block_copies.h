// BlockCopies: the checker's heap copies of block addresses, wiped when freed. The scan is
// conservative: a stale copy of an address left in a freed chunk comes back as garbage in the
// uninitialized part of whatever the program allocates there next (a vector's spare capacity),
// and would keep a later block at that address "reachable". A std::vector growing by push_back
// frees each old buffer, so the wiping is the allocator's.
#ifndef STACKWALK_LEAKCHECK_SCAN_BLOCK_COPIES_H_
#define STACKWALK_LEAKCHECK_SCAN_BLOCK_COPIES_H_

#include <string.h>  // explicit_bzero

#include <cstddef>
#include <memory>
#include <vector>

#include "leakcheck/allocation_table.h"  // Allocation only

namespace stackwalk::leakcheck {

template <class T>
struct WipingAllocator {
  using value_type = T;
  WipingAllocator() = default;
  template <class U>
  WipingAllocator(const WipingAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator
  T* allocate(size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, size_t n) {
    explicit_bzero(p, n * sizeof(T));
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const WipingAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const WipingAllocator<U>&) const { return false; }
};

using BlockCopies = std::vector<Allocation, WipingAllocator<Allocation>>;

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_BLOCK_COPIES_H_
