// The --exitcode N decision (key exitcode): whether N replaces the program's exit status, made
// from the report at the program's exit. Leaks found: N. None found, but allocations went
// untracked (untracked.h): N too, since those may have leaked and a run that passed would have
// proved nothing about them; a one-line note says why, as the report may be in a file. Made by
// the program at its exit (session.cc) and by the launcher that names the program's report
// (tools/leakcheck_supervisor.cc). Not signal-safe: allocates.
#ifndef STACKWALK_LEAKCHECK_EXITCODE_H_
#define STACKWALK_LEAKCHECK_EXITCODE_H_

#include <cstdint>
#include <string>

#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck {

struct ExitcodeDecision {
  bool applies = false;  // exit with the exitcode, not the program's own status
  std::string note;      // for stderr ('\n'-terminated) when it applies for untracked blocks alone
};

// `exitcode` 0: none was asked for, never applies. `leaked_allocations`: the report's direct and
// indirect leaks, after suppressions and filters.
ExitcodeDecision DecideExitcode(int exitcode, uint64_t leaked_allocations,
                                const UntrackedCounts& untracked);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_EXITCODE_H_
