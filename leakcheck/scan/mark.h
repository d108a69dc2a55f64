// The reachability scan over a snapshot of live blocks (sorted by address): a conservative flood
// fill from the roots (every aligned word that points into a block marks it, interior pointers
// included, but not a pointer at the next glibc chunk header of a block that fills its chunk:
// the allocator's own), then, over the blocks not reached, the direct / indirect split, and the
// spread of a suppressed leak to the blocks it alone holds. No malloc: work lists and the page
// index live in a ScratchArena.
#ifndef STACKWALK_LEAKCHECK_SCAN_MARK_H_
#define STACKWALK_LEAKCHECK_SCAN_MARK_H_

#include <cstddef>
#include <cstdint>

#include "leakcheck/allocation_table.h"  // Allocation only
#include "leakcheck/scan/memory_reader.h"
#include "leakcheck/scan/roots.h"
#include "leakcheck/scan/scratch_arena.h"
#include "leakcheck/scan/verdict.h"

namespace stackwalk::leakcheck {

// marks[i] = 1 for each block a chain of pointers from `roots` reaches (marks[i] already 1 on
// entry, e.g. an ignored block, is a root too). Roots with RootRange::copy, and every block, are
// read through `reader`; the others directly. Returns false if scratch memory ran out (the
// marks are then a lower bound: the caller must not call the rest leaks).
bool MarkFromRoots(const Allocation* blocks, size_t n, const RootSet& roots, MemoryReader& reader,
                   uint8_t* marks, ScratchArena* scratch);

// After the world resumed, over the unmarked blocks only (nothing reachable points at them, so
// they cannot change): out[i] = kReachable for marked blocks; for the others kIndirect if another
// unmarked block points into them, else kDirect; a cycle of leaks with no direct head gets one
// head (its lowest sequence number) as kDirect, as valgrind's clique leaders. `ignored[i]` (may
// be nullptr) gives kIgnored. False if scratch memory ran out: the unmarked blocks are then left
// kLive (unsplit).
bool SplitLeaks(const Allocation* blocks, size_t n, const uint8_t* marks, const uint8_t* ignored,
                MemoryReader& reader, Verdict* out, ScratchArena* scratch);

// out[i] = 1 for each leaked block reachable from a block with seeds[i] = 1 (the suppressed
// direct leaks) through leaked blocks, seeds included: suppressed with them.
bool SpreadFrom(const Allocation* blocks, size_t n, const Verdict* verdicts, const uint8_t* seeds,
                MemoryReader& reader, uint8_t* out, ScratchArena* scratch);

// Calls edge(from, to, context) for each pointer in a leaked block `from` into another leaked
// block `to` (each pair once per pointer found; SpreadFrom follows exactly these): what a leak
// dump keeps so that suppressing a leak elsewhere, later, takes the blocks it holds with it.
// False if scratch memory ran out (no edge was given).
bool LeakEdges(const Allocation* blocks, size_t n, const Verdict* verdicts, MemoryReader& reader,
               void (*edge)(size_t from, size_t to, void* context), void* context,
               ScratchArena* scratch);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_MARK_H_
