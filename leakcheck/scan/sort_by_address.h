// SortByAddress: a snapshot of the live table in address order, for the scan's page index, with
// the world stopped (no malloc). A least-significant-digit radix sort over the bits in which the
// addresses differ: 1M blocks in two or three passes over 32 MB, where std::sort's comparisons
// took twice the mark's time in the pause (docs/leakcheck-benchmarks.md).
#ifndef STACKWALK_LEAKCHECK_SCAN_SORT_BY_ADDRESS_H_
#define STACKWALK_LEAKCHECK_SCAN_SORT_BY_ADDRESS_H_

#include <cstddef>

#include "leakcheck/allocation_table.h"  // Allocation only
#include "leakcheck/scan/scratch_arena.h"

namespace stackwalk::leakcheck {

// Sorts blocks[0..n) by address (each address once in a snapshot). Takes n records of scratch memory; without it (or for a
// few blocks) it sorts in place with std::sort.
void SortByAddress(Allocation* blocks, size_t n, ScratchArena* scratch);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_SORT_BY_ADDRESS_H_
