// The suppress stage of a leak report (report_model.h), after naming: each leaked block (kDirect
// or kIndirect) whose stack matches a suppression (suppressions.h) is taken out of the leaks with
// the blocks it alone holds (the leaked blocks reachable from it through leaked blocks: a spread,
// scan/mark.h's SpreadFrom), and counted in that rule. Suppressed blocks become kIgnored (never
// listed); report->suppressions and summary.suppressed_* get the tallies. Not signal-safe.
#ifndef STACKWALK_LEAKCHECK_REPORT_SUPPRESS_H_
#define STACKWALK_LEAKCHECK_REPORT_SUPPRESS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/report_model.h"
#include "leakcheck/suppressions.h"

namespace stackwalk::leakcheck {

// out[i] = 1 for each leaked block reachable from a block with seeds[i] = 1 through leaked
// blocks, seeds included (SpreadFrom's contract over the same blocks and verdicts). False if it
// could not finish (the seeds alone are then suppressed).
using LeakSpread = std::function<bool(const Allocation* blocks, size_t n, const Verdict* verdicts,
                                      const uint8_t* seeds, uint8_t* out)>;

// Over `blocks` (verdicts[i] is blocks[i]'s) and their named `stacks` (by stack id): suppresses
// as the header says, the first matching rule of `suppressions` counting each block (its own
// stack's rule when it has one, else the rule of the leak that holds it). `spread` may be empty:
// only blocks whose own stack matches are suppressed then. Rules' counts in `suppressions` grow.
void SuppressLeaks(const Allocation* blocks, size_t n, const std::vector<NamedStack>& stacks,
                   const LeakSpread& spread, Suppressions* suppressions,
                   std::vector<Verdict>* verdicts, LeakReport* report);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_SUPPRESS_H_
