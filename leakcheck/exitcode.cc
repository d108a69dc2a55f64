#include "leakcheck/exitcode.h"

#include <string>

#include "leakcheck/untracked_figures.h"

namespace stackwalk::leakcheck {

ExitcodeDecision DecideExitcode(int exitcode, uint64_t leaked_allocations,
                                const UntrackedCounts& untracked) {
  ExitcodeDecision decision;
  if (exitcode == 0) return decision;
  if (leaked_allocations > 0) {
    decision.applies = true;  // the report's SUMMARY line says why
  } else if (untracked.allocations() > 0) {
    decision.applies = true;
    decision.note = "stackwalk-leakcheck: exit status " + std::to_string(exitcode) +
                    " (--exitcode): no leaks found, but " + UntrackedFigures(untracked) +
                    " could not be tracked: whether they leaked is unknown\n";
  }
  return decision;
}

}  // namespace stackwalk::leakcheck
