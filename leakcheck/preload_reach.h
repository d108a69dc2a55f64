// Whether LD_PRELOAD can reach a program at all, decided before it runs, so that the launcher
// refuses what it could not check instead of letting it run unchecked with no word.
#ifndef STACKWALK_LEAKCHECK_PRELOAD_REACH_H_
#define STACKWALK_LEAKCHECK_PRELOAD_REACH_H_

#include <string>

namespace stackwalk::leakcheck {

// Why a preloaded library would not be loaded into `program` (a path, or a name looked up in
// PATH as execvp does), or "" if it would be (or if `program` cannot be found or read: exec then
// says why). Reasons: a statically linked executable (no program interpreter), a set-user-ID or
// set-group-ID file of another owner, or file capabilities (the loader's secure mode ignores
// LD_PRELOAD); a script is judged by its interpreter.
std::string WhyPreloadCannotReach(const std::string& program);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_PRELOAD_REACH_H_
