// The checker's own memory: every mapping the leak checker makes goes through OwnMap, so the
// scan can tell them from the program's anonymous mappings (which are roots, scan/roots.h): the
// checker's tables and snapshots are full of block addresses and must never be. Async-signal-safe,
// lock-free, no malloc.
#ifndef STACKWALK_LEAKCHECK_SCAN_OWN_MAPPINGS_H_
#define STACKWALK_LEAKCHECK_SCAN_OWN_MAPPINGS_H_

#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck {

// mmap(PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS), registered (and named
// "stackwalk-leakcheck" where the kernel allows). nullptr on failure.
void* OwnMap(size_t bytes);
// mmap(PROT_READ|PROT_WRITE, MAP_SHARED) of `bytes` of file `fd` from `offset`, registered like
// OwnMap's (the record region, record_region.h). nullptr on failure.
void* OwnMapShared(size_t bytes, int fd, uint64_t offset);
// mremap of an own mapping, keeping it registered. nullptr on failure (the old one stays).
void* OwnRemap(void* old_address, size_t old_bytes, size_t new_bytes);
void OwnUnmap(void* address, size_t bytes);
// True if [lo, hi) overlaps a registered own mapping.
bool IsOwnMapping(uintptr_t lo, uintptr_t hi);
// The registered own mapping overlapping [lo, hi) that starts lowest, in *own_lo, *own_hi; false
// if none. (Where the kernel does not name them, the kernel merges an own mapping with an
// adjacent anonymous one of the program's: /proc/self/maps then shows one mapping.)
bool LowestOwnMapping(uintptr_t lo, uintptr_t hi, uintptr_t* own_lo, uintptr_t* own_hi);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_OWN_MAPPINGS_H_
