// The group and filter stages of a leak report (report_model.h): blocks grouped by allocating
// stack and verdict and tallied per thread; then the entries the report shows, filtered and
// ordered, with their totals. Plain data in, plain data out: no process state is read.
#ifndef STACKWALK_LEAKCHECK_REPORT_GROUP_H_
#define STACKWALK_LEAKCHECK_REPORT_GROUP_H_

#include <cstddef>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/report_model.h"

namespace stackwalk::leakcheck {

// Groups `blocks` (verdicts[i] is blocks[i]'s; empty: all kLive) into report->entries, one per
// stack and verdict (its stack id indexing `stacks`; its frames come with FilterEntries), and
// tallies each thread's blocks into report->threads (largest first). At exit (`at_exit`), the
// blocks exit() itself frees after the report (glibc's list of exit handlers) are left out of
// both.
void GroupBlocks(const Allocation* blocks, size_t n, const std::vector<Verdict>& verdicts,
                 const std::vector<NamedStack>& stacks, bool at_exit, LeakReport* report);

// The entries a report shows: kIgnored ones (intended or suppressed leaks) never; those the
// library filters let through, of which the reachable ones are counted (summary.reachable_*) and
// listed only with `show_reachable`. The filters are comma-separated globs (options.h's
// MatchesAnyPattern): a stack passes with a frame in a `libraries` object when that is not
// empty, and none in an `ignore_libraries` one. Leaks
// first, then reachable entries, each largest first, earliest first among equals.
// summary.bytes and .allocations total the leaks shown (direct + indirect, or kLive blocks when
// no scan ran), summary.direct_* and .indirect_* each kind. Each entry kept gets its stack's
// pcs and frames from `stacks` (GroupBlocks' by stack id), which the filters read.
void FilterEntries(const char* libraries, const char* ignore_libraries, bool show_reachable,
                   const std::vector<NamedStack>& stacks, LeakReport* report);

// Whether the filters let a stack's frames through (FilterEntries' test).
bool PassesLibraryFilters(const char* libraries, const char* ignore_libraries,
                          const std::vector<SymbolizedFrame>& frames);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_GROUP_H_
